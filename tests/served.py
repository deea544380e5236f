"""The test app served over real HTTP (werkzeug's threaded server in a thread), for clients that
must talk to it through sockets: the SDK, the MCP server and event streams."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest
from flask import Flask
from werkzeug.serving import make_server


@contextlib.contextmanager
def serve(app: Flask) -> Iterator[str]:
    """`app` on a free loopback port for the duration; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="served-app", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture
def base_url(app: Flask) -> Iterator[str]:
    with serve(app) as url:
        yield url
