"""Redis replies as text: the client returns bytes unless told otherwise, and several of our
connections are shared with RQ, which needs bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def as_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def decoded(raw: Mapping[Any, Any]) -> dict[str, str]:
    """A hash reply (HGETALL) with text keys and values."""
    return {as_text(k): as_text(v) for k, v in raw.items()}
