"""The derived time key of a memory, and its conversion from the ISO timestamp."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from automem.timeutil import parse_iso

# A memory's timestamp again, as integer microseconds since 1970 (derived, written by the store
# with every timestamp): FalkorDB's range index scans numbers right, while on strings it drops a
# `<`/`<=` bound (FalkorDB #2239), so a time window over the ISO `timestamp` scanned from its
# start to the newest memory. Sequence neighbours are looked up in windows of `ts_us`.
TIME_KEY = "ts_us"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us(timestamp: str) -> int:
    """An ISO timestamp as microseconds since 1970 (exact: integers, not float seconds)."""
    delta = parse_iso(timestamp) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def with_time_key(props: dict[str, Any]) -> dict[str, Any]:
    """`props`, with TIME_KEY set from `timestamp` when they set it (a null timestamp clears it);
    an incoming TIME_KEY (an archive's) is never trusted."""
    if "timestamp" not in props:
        return {k: v for k, v in props.items() if k != TIME_KEY}
    timestamp = props["timestamp"]
    return {**props, TIME_KEY: epoch_us(str(timestamp)) if timestamp else None}
