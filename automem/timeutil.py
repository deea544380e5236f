"""Timestamps: parsed leniently from ISO 8601, stored as uniform UTC strings.

Every stored time has the same shape (`2025-01-31T09:30:00.000000+00:00`), so the graph can
compare and sort them as strings and Qdrant's datetime index parses them.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def now_iso() -> str:
    return format_utc(utc_now())


def parse_iso(value: str) -> datetime:
    """Parse ISO 8601 (a trailing Z, a date alone, or no offset = UTC); raises ValueError."""
    text = value.strip()
    if not text:
        raise ValueError("empty timestamp")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:  # 0001-01-01T00:00+04:00 is before the year 1 in UTC
        raise ValueError(f"{value!r} is out of range in UTC") from exc


def normalize_iso(value: str) -> str:
    return format_utc(parse_iso(value))
