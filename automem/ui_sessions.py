"""Dashboard sessions: who signed in, kept server-side in Redis, never the key itself.

Signing in with an API key (and optionally the admin token) stores a session record under a
random id: the key's digest (so a revoked or expired key ends the session at its next request),
whether the admin token was given (as its digest, so rotating the token ends admin sessions),
and a CSRF token for the forms. The browser holds only the session id, in an HttpOnly,
SameSite=Strict cookie scoped to /ui. A session lasts until sign-out or AUTOMEM_UI_IDLE_MINUTES
without a request.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass

import redis

PREFIX = "automem:ui:session:"


@dataclass(frozen=True)
class UiSession:
    key_digest: str  # SHA-256 of the API key the user signed in with ("" : none was needed)
    admin_digest: str  # SHA-256 of the admin token given at sign-in, or ""
    csrf: str
    legacy: bool  # signed in with AUTOMEM_API_TOKEN (or without a token on a tokenless stack)


class UiSessions:
    def __init__(self, connection: redis.Redis, idle_seconds: int) -> None:
        self.redis = connection
        self.idle_seconds = idle_seconds

    def open(self, key_digest: str, admin_digest: str, legacy: bool) -> tuple[str, UiSession]:
        session_id = secrets.token_urlsafe(32)
        session = UiSession(key_digest, admin_digest, secrets.token_urlsafe(24), legacy)
        self.redis.set(PREFIX + session_id, json.dumps(asdict(session)), ex=self.idle_seconds)
        return session_id, session

    def load(self, session_id: str) -> UiSession | None:
        """The session, its idle time restarted; None when unknown or expired."""
        if not session_id or len(session_id) > 100:
            return None
        raw = self.redis.getex(PREFIX + session_id, ex=self.idle_seconds)
        if raw is None:
            return None
        return UiSession(**json.loads(raw))

    def close(self, session_id: str) -> None:
        self.redis.delete(PREFIX + session_id)
