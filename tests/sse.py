"""A Server-Sent Events client for tests: GET /stream over real HTTP (httpx, streaming), read in a
thread, events handed over in arrival order with the `id:` line that came with each."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from typing import Any

import httpx

# One CA bundle for every reader: httpx.Client() would load certifi's again each time (~50 ms of
# CPU with the GIL held), which many readers opened at once in threads would queue behind.
_TLS = httpx.create_ssl_context()


class SseReader:
    """One open stream. `status` and `headers` are the response's; `next()` returns events in the
    order the server wrote them; `comments` collects `:` lines (keepalives); `seconds` is how
    long the server took to answer the request."""

    def __init__(self, base_url: str, headers: dict[str, str], read_timeout: float = 60.0) -> None:
        timeout = httpx.Timeout(10, read=read_timeout)
        self.client = httpx.Client(base_url=base_url, headers=headers, timeout=timeout, verify=_TLS)
        self._context = self.client.stream("GET", "/stream")
        started = time.monotonic()
        self.response = self._context.__enter__()
        self.seconds = time.monotonic() - started
        self.status = self.response.status_code
        self.headers = self.response.headers
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.comments: list[str] = []
        self.connected = threading.Event()
        self.ended = threading.Event()
        if self.status == 200:
            threading.Thread(target=self._read, name="sse-reader", daemon=True).start()
        else:
            self.body = json.loads(self.response.read())
            self.ended.set()

    def _read(self) -> None:
        event_id: str | None = None
        try:
            for line in self.response.iter_lines():
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: "):
                    self.events.put({**json.loads(line[6:]), "sse_id": event_id})
                    event_id = None
                elif line.startswith(":"):
                    self.comments.append(line)
                    if line.startswith(": connected"):
                        self.connected.set()
        except (httpx.HTTPError, RuntimeError):
            pass  # closed by the test, or by the server
        finally:
            self.ended.set()

    def next(self, timeout: float = 15.0) -> dict[str, Any]:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no event within {timeout} s") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._context.__exit__(None, None, None)
        self.client.close()
