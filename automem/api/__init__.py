"""HTTP API: one blueprint per feature, sharing the helpers below."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import Response, current_app, g, jsonify, request
from werkzeug.exceptions import BadRequest

from automem.auth import current_tenant, presented_token, principal
from automem.errors import InvalidInput
from automem.history import Change, api_key_actor, checked_reason
from automem.idempotency import fingerprint
from automem.services import Services
from automem.validation import storable_problem, text_problem

F = TypeVar("F", bound=Callable[..., Any])


def services() -> Services:
    svc: Services = current_app.extensions["automem"]
    return svc


def serving_read() -> None:
    """This request is a client's read: background enrichment yields while reads go on."""
    reads = services().reads
    if reads is not None:
        reads.mark()


# JSON escapes that can decode to text the graph store cannot take: NUL, or half a surrogate pair.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def json_body() -> Any:
    """The parsed JSON body; 400 with a clear message when it is missing or malformed."""
    raw = request.get_data(cache=True)
    if not raw:
        raise InvalidInput("a JSON body is required", field="body")
    try:
        body = request.get_json(force=True)
    except BadRequest as exc:
        raise InvalidInput("the request body is not valid JSON", field="body") from exc
    if _SUSPECT_ESCAPE.search(raw):  # rare: walk the body only then
        check_storable(body, "")
    return body


def check_storable(value: Any, field: str) -> None:
    """400 for text the stores cannot hold (`automem.validation`: a NUL, a lone surrogate), keys
    included; `field` names the place."""
    # Text only: a number out of range may sit in a field the route ignores, and must not hide
    # a NUL further on (the fields that keep numbers check them themselves).
    found = storable_problem(value, field, numbers=False)
    if found:
        where = _printable(found[0] or "body")
        raise InvalidInput(f"{where} {found[1]}", field=where)


def check_query_text() -> None:
    """The query string's share of `check_storable` (it decodes to no surrogates, but %00 is NUL)."""
    for key, values in request.args.lists():
        for value in (key, *values):
            problem = text_problem(value)
            if problem:
                name = _printable(key)
                raise InvalidInput(f"{name} {problem}", field=name)


def _printable(field: str) -> str:
    """The field path as it can be echoed back (itself free of NULs and lone surrogates)."""
    return field.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")


def change(admin: bool = False, reason_arg: str | None = None) -> Change:
    """Who makes this request's change, for the history (a digest of the key, never the key),
    and why: `?<reason_arg>=` when the route takes one, else the X-Change-Reason header."""
    settings = services().settings
    key_id = principal().key_id
    if admin:
        actor = "admin"
    elif key_id:
        actor = f"key:{key_id}"
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


def elapsed_ms() -> float:
    """Milliseconds since this request began: AutoMem's `query_time_ms`."""
    started = g.get("started")
    return round((time.perf_counter() - started) * 1000, 3) if started is not None else 0.0


def idempotent(view: F) -> F:
    """Replay the first response for a repeated Idempotency-Key (write routes only)."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = request.headers.get("Idempotency-Key")
        if not key:
            return view(*args, **kwargs)
        store = services().idempotency
        scope = current_tenant()  # one tenant's key never replays another's response
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
