"""gunicorn settings `automem serve` passes with `--config python:automem.gunicorn_conf`: JSON logs
for gunicorn's loggers and the app's, and prometheus_client's multiprocess cleanup."""

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
