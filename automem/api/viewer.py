"""AutoMem's viewer paths, /viewer/ and /viewer/<path> (no key, as in AutoMem).

AutoMem redirects them to an external graph viewer; here they redirect to the built-in
dashboard at /ui/ (automem.ui), which asks for a key when no session is open.
"""

from __future__ import annotations

from flask import Blueprint, Response, redirect

bp = Blueprint("viewer", __name__)


@bp.get("/viewer/", defaults={"subpath": ""})
@bp.get("/viewer/<path:subpath>")
def viewer(subpath: str) -> Response:
    return redirect("/ui/", code=302)  # type: ignore[return-value]
