"""gunicorn settings `automem serve` passes with `--config python:automem.gunicorn_conf`: JSON logs
for gunicorn's loggers and the app's, prometheus_client's multiprocess cleanup, and a worker
process that stops its background threads and releases its stores when it exits."""

from __future__ import annotations

import os
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


def worker_exit(server: Any, worker: Any) -> None:
    """The API process stops (SIGTERM from `automem serve`, a restart): stop the vector drain
    thread and flush and release the Qdrant Edge shard before the process exits."""
    app = getattr(worker, "wsgi", None)  # None in the master and in a worker that failed to boot
    if app is not None and "automem" in getattr(app, "extensions", {}):
        from automem.app import stop_app

        stop_app(app)
