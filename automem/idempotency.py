"""Idempotency-Key support: a retried write returns the first response instead of writing again.

The first request claims the key with SET NX (a short "pending" marker), stores its response
when done, and a retry with the same key and body replays it. The same key with another body is
a client bug and answers 409; a retry while the first is still running answers 409 too.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import redis

from automem.errors import Conflict, InvalidInput

_PENDING = "pending"
_PENDING_TTL = 120


@dataclass(frozen=True)
class Replay:
    status: int
    body: dict[str, Any]


class IdempotencyStore:
    def __init__(self, connection: redis.Redis, ttl_seconds: int) -> None:
        self.redis = connection
        self.ttl = ttl_seconds

    @staticmethod
    def _key(scope: str, key: str) -> str:
        if not key or len(key) > 255:
            raise InvalidInput("Idempotency-Key must be 1 to 255 characters", field="Idempotency-Key")
        return f"automem:idem:{scope}:{hashlib.sha256(key.encode()).hexdigest()}"

    def begin(self, scope: str, key: str, fingerprint: str) -> Replay | None:
        """Claim the key; returns the stored response if this is a replay."""
        redis_key = self._key(scope, key)
        claim = json.dumps({"state": _PENDING, "fingerprint": fingerprint})
        if self.redis.set(redis_key, claim, nx=True, ex=_PENDING_TTL):
            return None
        raw = self.redis.get(redis_key)
        if raw is None:  # expired between the two calls: claim again
            return self.begin(scope, key, fingerprint)
        stored = json.loads(raw)
        if stored.get("fingerprint") != fingerprint:
            raise Conflict(
                "this Idempotency-Key was used with a different request body",
                field="Idempotency-Key",
                reason="idempotency_key_reused",
            )
        if stored.get("state") == _PENDING:
            raise Conflict(
                "a request with this Idempotency-Key is still in progress",
                field="Idempotency-Key",
                reason="idempotency_in_progress",
            )
        return Replay(int(stored["status"]), stored["body"])

    def finish(self, scope: str, key: str, fingerprint: str, status: int, body: dict[str, Any]) -> None:
        record = json.dumps({"state": "done", "fingerprint": fingerprint, "status": status, "body": body})
        self.redis.set(self._key(scope, key), record, ex=self.ttl)

    def clear(self, scope: str | None = None) -> int:
        """Forget every stored response (a restore replaced the memories they describe), or
        those of one scope (a tenant)."""
        pattern = "automem:idem:*" if scope is None else f"automem:idem:{scope}:*"
        keys = list(self.redis.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), 1000):
            self.redis.delete(*keys[start : start + 1000])
        return len(keys)

    def abandon(self, scope: str, key: str) -> None:
        """Release the claim after a failed request, so the client's retry runs for real."""
        self.redis.delete(self._key(scope, key))


def fingerprint(method: str, path: str, body: bytes) -> str:
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).hexdigest()
