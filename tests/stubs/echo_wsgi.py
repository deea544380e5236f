"""A WSGI app that answers each request with its own path and body, so a test can tell which
request an answer belongs to (the API's gunicorn worker class is tested with it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    answer = environ["PATH_INFO"].encode() + b"|" + body
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(answer)))])
    return [answer]
