"""Routes of the SPEC that are not built yet: they answer 501 with the error envelope.

Listing them keeps clients from mistaking a missing feature for a wrong URL (404), and the docs
name the same routes. Each entry disappears from here when its feature lands.
"""

from __future__ import annotations

from flask import Blueprint, Response

from automem.errors import NotImplementedFeature

bp = Blueprint("pending", __name__)

NOT_IMPLEMENTED: tuple[tuple[str, str], ...] = (("GET", "/metrics"),)


def _not_implemented(**_: str) -> Response:
    raise NotImplementedFeature(
        "this route is part of the API contract but not implemented yet; see docs/api.md"
    )


for _n, (_method, _path) in enumerate(NOT_IMPLEMENTED):
    bp.add_url_rule(_path, f"pending_{_n}", _not_implemented, methods=[_method])
