"""JSON for the HTTP API through orjson: a recall or by-tag answer of 50 memories took the
standard library ~1.5 ms to encode (orjson: ~0.2 ms), and request bodies carrying 384-float
embeddings decode several times faster.

Differences from the standard library that clients can notice, all towards strict JSON: NaN and
Infinity are refused in requests (they are not JSON) and written as null in answers.

orjson reads an integer beyond 64 bits as a float, silently changing it; a body holding a run
of 19 or more digits is read by the standard library instead (`jsontext.loads_exact`), so the
integer reaches validation as sent (and is refused there: the stores keep 64-bit integers). An
answer holding such an integer (a query's limit, echoed) is written by the standard library.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from flask import Flask, Response
from flask.json.provider import JSONProvider

from automem.jsontext import loads_exact

_OPTIONS = orjson.OPT_NON_STR_KEYS


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def loads(data: str | bytes) -> Any:
    return loads_exact(data, parse_constant=_not_json)


def _default(value: Any) -> Any:
    """Types orjson does not know: sets and tuples-like iterables become lists, the rest text."""
    if isinstance(value, set | frozenset):
        return list(value)
    return str(value)


def dumps(obj: Any) -> bytes:
    """`obj` as JSON. orjson refuses integers beyond 64 bits (a client's limit of 2**100, echoed
    back): those answers are written by the standard library, which writes any integer."""
    try:
        return orjson.dumps(obj, default=_default, option=_OPTIONS)
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
        text = json.dumps(obj, default=_default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode()


class OrjsonProvider(JSONProvider):
    def dumps(self, obj: Any, **kwargs: Any) -> str:
        return dumps(obj).decode()

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return loads(s)

    def response(self, *args: Any, **kwargs: Any) -> Response:
        obj = self._prepare_response_obj(args, kwargs)
        return Response(dumps(obj), mimetype="application/json")


def init_app(app: Flask) -> None:
    app.json = OrjsonProvider(app)
