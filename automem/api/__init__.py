"""HTTP API: one blueprint per feature, sharing the helpers below."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import Response, current_app, jsonify, request
from werkzeug.exceptions import BadRequest

from automem.auth import presented_token
from automem.errors import InvalidInput
from automem.history import Change, api_key_actor, checked_reason
from automem.idempotency import fingerprint
from automem.services import Services

F = TypeVar("F", bound=Callable[..., Any])


def services() -> Services:
    svc: Services = current_app.extensions["automem"]
    return svc


def json_body() -> Any:
    """The parsed JSON body; 400 with a clear message when it is missing or malformed."""
    if not request.get_data(cache=True):
        raise InvalidInput("a JSON body is required", field="body")
    try:
        return request.get_json(force=True)
    except BadRequest as exc:
        raise InvalidInput("the request body is not valid JSON", field="body") from exc


def change(admin: bool = False, reason_arg: str | None = None) -> Change:
    """Who makes this request's change, for the history (a digest of the key, never the key),
    and why: `?<reason_arg>=` when the route takes one, else the X-Change-Reason header."""
    settings = services().settings
    if admin:
        actor = "admin"
    elif settings.api_token:
        actor = api_key_actor(presented_token(settings) or "")
    else:
        actor = "anonymous"
    if reason_arg and reason_arg in request.args:
        reason = checked_reason(request.args[reason_arg], settings.max_reason_length, reason_arg)
    else:
        header = request.headers.get("X-Change-Reason")
        reason = checked_reason(header, settings.max_reason_length, "X-Change-Reason")
    return Change(actor, reason)


def respond(body: dict[str, Any], status: int = 200) -> tuple[Response, int]:
    return jsonify(body), status


def idempotent(view: F) -> F:
    """Replay the first response for a repeated Idempotency-Key (write routes only)."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = request.headers.get("Idempotency-Key")
        if not key:
            return view(*args, **kwargs)
        store = services().idempotency
        scope = "default"
        printed = fingerprint(request.method, request.path, request.get_data(cache=True))
        replay = store.begin(scope, key, printed)
        if replay is not None:
            response = jsonify(replay.body)
            response.headers["Idempotent-Replayed"] = "true"
            return response, replay.status
        try:
            response, status = view(*args, **kwargs)
        except Exception:
            # A rejected or failed request wrote nothing: release the key so a retry runs for real.
            store.abandon(scope, key)
            raise
        store.finish(scope, key, printed, status, response.get_json())
        return response, status

    return wrapper  # type: ignore[return-value]
