"""AutoMem's viewer paths, /viewer/ and /viewer/<path> (no key, as in AutoMem).

AutoMem redirects them to an external graph viewer. This service will serve a dashboard of its
own at /ui/; until it is built, these paths answer 503 `dashboard_not_built` in the error
envelope, so a bookmark or a client probing for the viewer gets a clear answer, not a 404.
"""

from __future__ import annotations

from typing import NoReturn

from flask import Blueprint

from automem.errors import ServiceUnavailable

bp = Blueprint("viewer", __name__)

MESSAGE = (
    "the built-in dashboard is not built yet; it will be served at /ui/. Meanwhile live events "
    "are at GET /stream (API key) and the API is described at GET /openapi.json"
)


@bp.get("/viewer/", defaults={"subpath": ""})
@bp.get("/viewer/<path:subpath>")
def viewer(subpath: str) -> NoReturn:
    raise ServiceUnavailable(MESSAGE, reason="dashboard_not_built")
