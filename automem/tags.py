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


# Metadata keys that name a conversation or session explicitly; they define the sequence scope.
SESSION_KEYS = ("session_id", "conversation_id", "thread_id")
ENTITY_TAG_PREFIX = "entity:"
# The kinds of entity enrichment extracts; tags are `entity:<kind>:<slug>`.
ENTITY_KINDS = ("person", "tool", "project", "organization", "place")


def sequence_scope(tags: Iterable[str], metadata: dict[str, object]) -> str:
    """The stream a memory belongs to, in which PRECEDED_BY links it to its predecessor.

    An explicit session/conversation/thread id in the metadata wins; otherwise the most specific
    client tag (most segments, the first of equals), since hierarchical tags name the narrowest
    context a client filed the memory under. Entity tags are derived, so they never define a
    scope. Untagged memories share one stream (""), which is no sequence: they get no
    PRECEDED_BY (GraphStore._sequence_neighbours)."""
    for key in SESSION_KEYS:
        value = metadata.get(key)
        if isinstance(value, str | int) and str(value).strip():
            return f"{key}:{str(value).strip()}"
    own = [t for t in tags if not t.startswith(ENTITY_TAG_PREFIX)]
    if not own:
        return ""
    return canonical_prefix(max(own, key=lambda t: len(tag_segments(t))))
