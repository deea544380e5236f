"""The API's gunicorn worker class: gthread, except that a thread which has just answered on a
kept-alive connection waits a moment for that client's next request and serves it itself.

gthread hands every kept-alive connection back to its main thread after each response, and the
next request travels from the main thread's poller to a pool thread again: two thread wake-ups,
a pipe write and two poller registrations per request, in the process whose GIL every request
shares. Clients of a memory service mostly send requests back to back on pooled connections (an
agent's recall, then its store), so the next request usually arrives within a millisecond.

A thread lingers only while every open connection can have a thread of its own (open
connections no more than `--threads`), so it never keeps another client waiting. After
AUTOMEM_API_LINGER_MS without a request, or once the process is stopping, the connection goes
back to the main thread's poller as in gthread."""

from __future__ import annotations

import select
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

from automem.settings import load_settings


class LingeringThreadWorker(ThreadWorker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.linger_ms = load_settings().api_linger_ms  # `automem serve` passes it with --env

    def handle(self, conn: Any) -> Any:
        keepalive = super().handle(conn)
        while keepalive is True and self._may_linger() and self._next_request_came(conn):
            keepalive = super().handle(conn)
        return keepalive

    def _may_linger(self) -> bool:
        return self.linger_ms > 0 and bool(self.alive) and self.nr_conns <= self.cfg.threads

    def _next_request_came(self, conn: Any) -> bool:
        if conn.parser.unreader.buf.getvalue():
            return True  # read ahead with the last request (sent before its answer came)
        poller = select.poll()
        poller.register(conn.sock, select.POLLIN)
        return bool(poller.poll(self.linger_ms))
