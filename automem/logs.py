"""Logging: JSON lines (AUTOMEM_LOG_FORMAT=json, the default) or plain text, every record with
the request id of the request it was logged in (`X-Request-ID`, honoured and returned)."""

from __future__ import annotations

import logging
from typing import Any

from flask import g, has_request_context
from pythonjsonlogger.json import JsonFormatter

_TEXT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"
_JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s %(request_id)s"


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = g.get("request_id", None) if has_request_context() else None
        return True


def formatter(style: str = "json") -> logging.Formatter:
    """The formatter of every handler (also named in gunicorn's logging config)."""
    if style == "text":
        return logging.Formatter(_TEXT)
    return JsonFormatter(
        _JSON_FIELDS,
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger", "process": "pid"},
    )


def configure(level: str = "INFO", style: str = "json") -> None:
    """Send every logger's records to stderr in the chosen style."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(formatter(style))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # httpx logs every request at INFO: a progress-polling benchmark or an LLM job would drown
    # the service's own lines.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, root.level))


def gunicorn_config(level: str, style: str) -> dict[str, Any]:
    """gunicorn's `logconfig_dict`: its own loggers and the app's through one JSON handler."""
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "automem",
        "filters": ["request_id"],
        "stream": "ext://sys.stderr",
    }
    own = {"level": level.upper(), "handlers": ["automem"], "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"automem": {"()": "automem.logs.formatter", "style": style}},
        "filters": {"request_id": {"()": "automem.logs.RequestIdFilter"}},
        "handlers": {"automem": handler},
        "root": {"level": level.upper(), "handlers": ["automem"]},
        "loggers": {"gunicorn.error": own, "gunicorn.access": own},
    }
