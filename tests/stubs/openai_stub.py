"""A tiny OpenAI-compatible HTTP server for tests: embeddings and chat completions.

    with OpenAIStub() as stub:
        client = OpenAI(api_key="k", base_url=stub.base_url)
        stub.fail_next(429, 2)           # the next two requests get HTTP 429
        stub.fail_next(429, body={"message": "no credit", "code": "insufficient_quota"},
                       headers={"Retry-After": "30"})  # a custom error body and headers
        stub.delay = 2.0                 # every answer waits two seconds (client timeouts)
        stub.chat_reply = {"tags": []}   # dicts and lists are sent as JSON text
        stub.requests[-1].body           # what the client sent

Embedding vectors are deterministic per (text, dimension): `OpenAIStub.vector_for` computes the
vector the stub answers, so tests can compare without a model.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MODEL_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


@dataclass
class ScheduledFailure:
    status: int
    body: dict[str, Any] | None = None  # the `error` object; None: a generic one for the status
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: Any = None  # parsed JSON, or the raw text when it was not JSON
    status: int = 0  # the status the stub answered with
    at: float = field(default_factory=time.time)


class OpenAIStub:
    """Serves /v1/embeddings and /v1/chat/completions on 127.0.0.1 from a background thread."""

    def __init__(self, *, dimension: int = 32, chat_reply: Any = "ok", api_key: str | None = None) -> None:
        #: dimension for models not in MODEL_DIMENSIONS when the request names no `dimensions`
        self.dimension = dimension
        #: content of every chat completion; non-strings are sent as JSON text
        self.chat_reply: Any = chat_reply
        #: when set, requests without `Authorization: Bearer <api_key>` get 401
        self.api_key = api_key
        #: seconds every request waits before it is answered (to test client timeouts)
        self.delay = 0.0
        self.requests: list[RecordedRequest] = []
        self._failures: list[ScheduledFailure] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> OpenAIStub:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.stub = self  # type: ignore[attr-defined]
        self._server = server
        # A short poll interval makes stop() quick; the default 0.5 s adds up over many tests.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stub is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # --- behaviour ------------------------------------------------------------------------------
    def fail_next(
        self,
        status: int,
        count: int = 1,
        *,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next `count` requests (any route) with HTTP `status` and an OpenAI error body.

        `body` replaces the generic `error` object (e.g. `{"code": "insufficient_quota", ...}`);
        `headers` are added to the answer (e.g. `Retry-After`)."""
        failure = ScheduledFailure(status, body, dict(headers or {}))
        with self._lock:
            self._failures += [failure] * count

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._failures.clear()

    def requests_to(self, path_suffix: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith(path_suffix)]

    @staticmethod
    def vector_for(text: str, dimension: int) -> list[float]:
        """The unit vector the stub returns for `text`: blake2b in counter mode, so no model needed."""
        raw: list[float] = []
        counter = 0
        while len(raw) < dimension:
            digest = hashlib.blake2b(f"{counter}:{text}".encode(), digest_size=64).digest()
            raw += [b / 127.5 - 1.0 for b in digest]
            counter += 1
        raw = raw[:dimension]
        norm = math.sqrt(sum(v * v for v in raw)) or 1.0
        return [v / norm for v in raw]

    # --- used by the handler --------------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> ScheduledFailure | None:
        """Store the request; return the scheduled failure, if one is due."""
        with self._lock:
            self.requests.append(request)
            return self._failures.pop(0) if self._failures else None

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(item) for item in inputs]
        model = str(body.get("model", ""))
        dimension = int(body.get("dimensions") or MODEL_DIMENSIONS.get(model, self.dimension))
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = self.vector_for(text, dimension)
            embedding: Any = vector
            if as_base64:
                embedding = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(t.split()) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.chat_reply
        content = reply if isinstance(reply, str) else json.dumps(reply)
        return {
            "id": f"chatcmpl-stub-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "stub")),
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}
    return {"error": {"message": message, "type": kind.get(status, "server_error"), "code": str(status)}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects

    @property
    def stub(self) -> OpenAIStub:
        return self.server.stub  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._handle(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        self._handle(body)

    def _handle(self, body: Any) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body)
        failure = self.stub._record(request)
        if self.stub.delay > 0:
            time.sleep(self.stub.delay)
        status, payload = self._route(body, failure)
        request.status = status
        # A client that gave up waiting (a timeout test) has closed the socket: nothing to report.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(status, payload, failure.headers if failure else {})

    def _route(self, body: Any, failure: ScheduledFailure | None) -> tuple[int, dict[str, Any]]:
        if failure is not None:
            if failure.body is not None:
                return failure.status, {"error": failure.body}
            return failure.status, _error_body(failure.status, f"stub failure {failure.status}")
        key = self.stub.api_key
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            return 401, _error_body(401, "Incorrect API key provided")
        path = self.path.split("?", 1)[0].rstrip("/")
        if self.command == "POST" and path == "/v1/embeddings" and isinstance(body, dict):
            return 200, self.stub._embeddings(body)
        if self.command == "POST" and path == "/v1/chat/completions" and isinstance(body, dict):
            return 200, self.stub._chat(body)
        return 404, _error_body(404, f"no route {self.command} {self.path}")

    def _send(self, status: int, payload: dict[str, Any], extra_headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status >= 400 and "retry-after-ms" not in {name.lower() for name in extra_headers}:
            # The openai client honours this header, so its retries of stub failures take 1 ms.
            self.send_header("retry-after-ms", "1")
        for name, value in extra_headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
