"""gunicorn settings `automem serve` passes with `--config python:automem.gunicorn_conf`: JSON logs
for gunicorn's loggers and the app's, prometheus_client's multiprocess cleanup, live streams that
end as soon as the worker process is asked to stop, start-up objects frozen out of the garbage
collector's full passes, and a worker process that stops its background threads and releases its
stores when it exits."""

from __future__ import annotations

import gc
import os
import signal
from typing import Any

from automem.logs import gunicorn_config

logconfig_dict = gunicorn_config(
    os.environ.get("AUTOMEM_LOG_LEVEL", "INFO"), os.environ.get("AUTOMEM_LOG_FORMAT", "json")
)


def child_exit(server: Any, worker: Any) -> None:
    """A dead worker's live gauges must not be summed any more (multiprocess mode)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def post_worker_init(worker: Any) -> None:
    """On SIGTERM gunicorn lets in-flight requests finish (up to its graceful timeout) before the
    process exits; an open event stream would never finish by itself. So SIGTERM first ends the
    streams (their threads return at once), then does what gunicorn does."""
    app = getattr(worker, "wsgi", None)
    if app is None or "automem" not in getattr(app, "extensions", {}):
        return
    freeze_startup_objects()
    previous = signal.getsignal(signal.SIGTERM)

    def end_streams_then_exit(signum: int, frame: Any) -> None:
        from automem.app import end_streams

        end_streams(app, wait=False)
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, end_streams_then_exit)
    signal.siginterrupt(signal.SIGTERM, False)  # as gunicorn: do not break system calls of requests


def freeze_startup_objects() -> None:
    """Keep what the app made at start-up out of every later garbage collection. A full
    collection walked those objects each time with the GIL held: up to 78 ms in a 10k store's
    API process, the recall p99 at concurrency 4 (docs/performance.md). They live as long as the
    process, so they are collected once and frozen."""
    gc.collect()
    gc.freeze()


def worker_exit(server: Any, worker: Any) -> None:
    """The API process stops (SIGTERM from `automem serve`, a restart): stop the vector drain
    thread and flush and release the Qdrant Edge shard before the process exits."""
    app = getattr(worker, "wsgi", None)  # None in the master and in a worker that failed to boot
    if app is not None and "automem" in getattr(app, "extensions", {}):
        from automem.app import stop_app

        stop_app(app)
