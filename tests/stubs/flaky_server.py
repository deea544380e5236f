"""A tiny HTTP server that plays a script of answers: a stand-in for a flaky network, to test
the SDK's retry policy (the real service is tested through `tests/served.py`).

    with FlakyServer([503, 503, (201, {"status": "success", ...})]) as server:
        client = AutomemClient(server.base_url)
        ...
        server.requests                  # what arrived: method, path, headers, arrival time

Each script entry answers one request: an int (that status with an error envelope), a
(status, body[, headers]) tuple, "drop" (close the connection without an answer) or
("hang", seconds). When the script is spent, the last entry repeats.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


class FlakyServer:
    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FlakyServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, seen: Seen) -> Any:
        with self._lock:
            self.requests.append(seen)
            index = min(len(self.requests), len(self.script)) - 1
            return self.script[index]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen = Seen(self.command, self.path, dict(self.headers), body, time.monotonic())
                step = server._next(seen)
                if step == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if isinstance(step, tuple) and step[0] == "hang":
                    time.sleep(step[1])
                    step = (200, {"status": "success"})
                if isinstance(step, int):
                    message = f"scripted {step}"
                    body = {"status": "error", "code": step, "message": message, "error": message}
                    step = (step, {**body, "reason": f"http_{step}"})
                status, payload, *rest = step
                headers = rest[0] if rest else {}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _answer

        return Handler
