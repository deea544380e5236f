"""The built-in dashboard, served at /ui/ from the package: server-rendered pages (Jinja, every
value escaped), plain HTML forms, one stylesheet and no script at all, so the
Content-Security-Policy forbids every script. docs/dashboard.md describes the choices.

Who is signed in comes from a server-side session (`automem.ui_sessions`); each request acts as
that session's principal, exactly as an API request with the same key would (its tenant, its
scope), through the same services. Forms carry the session's CSRF token.
"""

from __future__ import annotations

import hmac
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, current_app, g, redirect, render_template, request

from automem.auth import is_admin_token, principal
from automem.errors import AutomemError, Forbidden, InvalidInput
from automem.history import Change
from automem.services import Services
from automem.tenants import LEGACY, Principal, Scope
from automem.ui_sessions import UiSession, UiSessions

bp = Blueprint("ui", __name__, url_prefix="/ui", template_folder="templates", static_folder="static")

COOKIE = "automem_ui"
PUBLIC_ENDPOINTS = {"ui.sign_in", "ui.sign_in_post", "ui.static"}
CSP = (
    "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
# The one page with a script (the operations page's live feed): files of this dashboard only,
# no inline script, no eval, and its connections back to this origin only.
CSP_WITH_SCRIPT = CSP.replace("script-src 'none'", "script-src 'self'; connect-src 'self'")


def services() -> Services:
    svc: Services = current_app.extensions["automem"]
    return svc


def sessions() -> UiSessions:
    found: UiSessions = current_app.extensions["automem.ui"]
    return found


@bp.before_request
def _signed_in() -> Response | None:
    g.ui_session = None
    if request.endpoint in PUBLIC_ENDPOINTS:
        return None
    session_id = request.cookies.get(COOKIE, "")
    session = sessions().load(session_id)
    principal = _principal(session) if session is not None else None
    if session is None or principal is None:
        if session is not None:
            sessions().close(session_id)
        target = request.full_path if request.method == "GET" else "/ui/"
        return redirect("/ui/sign-in?next=" + quote(target.rstrip("?"), safe="/"))  # type: ignore[return-value]
    g.principal, g.ui_session = principal, session
    if request.method == "POST" and not hmac.compare_digest(request.form.get("csrf", ""), session.csrf):
        raise InvalidInput("the form is stale or not from this dashboard; reload the page", field="csrf")
    return None


def _principal(session: UiSession) -> Principal | None:
    """The session's principal now: None once its key is revoked or expired."""
    svc = services()
    if session.legacy:
        principal: Principal | None = LEGACY
    elif svc.keys is not None:
        principal = svc.keys.resolve_digest(session.key_digest)
    else:
        principal = None
    if principal is not None and session.admin_digest and is_admin_token(svc.settings, session.admin_digest):
        principal = replace(principal, admin=True)
    return principal


@bp.after_request
def _headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CSP_WITH_SCRIPT if g.get("ui_script") else CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    if request.endpoint != "ui.static":
        response.headers["Cache-Control"] = "no-store"
    return response


@bp.errorhandler(AutomemError)
def _error(exc: AutomemError) -> tuple[str, int]:
    return page("error.html", title=f"Error {exc.status}", error=exc), exc.status


def require(scope: Scope) -> None:
    """403 unless the signed-in key's scope (or the admin token) allows `scope`."""
    found = principal()
    if not found.allows(scope):
        message = f"your key's scope is {found.scope}; this needs {scope} (or the admin token)"
        raise Forbidden(message, reason="insufficient_scope")


def who() -> Change:
    """Whom the history records for a change made in the dashboard (the key's id, never the key)."""
    found: Principal | None = g.get("principal")
    return Change(f"key:{found.key_id}" if found and found.key_id else "dashboard", None)


def page(template: str, script: str | None = None, **values: Any) -> str:
    """A page with what every page shows: who is signed in, and the form token; `script` names
    a file of static/ that the page loads (and the CSP then allows)."""
    g.ui_script = script
    principal: Principal | None = g.get("principal")
    session: UiSession | None = g.get("ui_session")
    return render_template(
        template,
        principal=principal,
        csrf=session.csrf if session else "",
        can_write=bool(principal and principal.allows(Scope.WRITE)),
        can_admin=bool(principal and principal.allows(Scope.TENANT_ADMIN)),
        is_admin=bool(principal and principal.admin),
        script=script,
        **values,
    )


def register(app: Any, connection: Any, idle_minutes: int) -> None:
    """Mount the dashboard on `app` with its session store."""
    from automem.ui import explore, pages  # noqa: F401  (their routes join `bp`)

    app.extensions["automem.ui"] = UiSessions(connection, idle_minutes * 60)
    app.register_blueprint(bp)
