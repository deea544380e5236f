"""Tag normalisation and hierarchical prefixes.

Tags are trimmed, lowercased and de-duplicated in order. `slack:channel:general` and
`slack/channel/general` both yield the prefixes `slack`, `slack:channel`, `slack:channel:general`:
segments split on `:` or `/`, empty segments dropped, joined with `:`. Prefix filters are
normalised the same way, so a filter matches whole segments only (`proj` never matches `project`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SEPARATORS = re.compile(r"[:/]")


def split_tag_input(value: str | Iterable[str]) -> list[str]:
    """A comma string or a list of strings, as a list of raw tags (list items are not split)."""
    if isinstance(value, str):
        return value.split(",")
    return list(value)


def normalize_tags(raw: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for tag in raw:
        cleaned = tag.strip().lower()
        if cleaned:
            seen.setdefault(cleaned, None)
    return list(seen)


def tag_segments(tag: str) -> list[str]:
    return [seg.strip() for seg in _SEPARATORS.split(tag.lower()) if seg.strip()]


def canonical_prefix(tag: str) -> str:
    """The form a tag takes in `tag_prefixes` (segments joined with `:`)."""
    return ":".join(tag_segments(tag))


def tag_prefixes(tags: Iterable[str]) -> list[str]:
    prefixes: dict[str, None] = {}
    for tag in tags:
        segments = tag_segments(tag)
        for end in range(1, len(segments) + 1):
            prefixes.setdefault(":".join(segments[:end]), None)
    return list(prefixes)
