"""How an AutoMem memory and edge become a request to this service (`automem import-automem`).

Pure functions, no I/O. AutoMem stores what clients sent with little validation (reference
§2.2, §3.1, §4.3 to §4.5): `type` as given (legacy names, any case, its classifier's fallback
"Memory"), tags in their original case, `metadata` as a JSON string, timestamps that are usually
but not always ISO 8601. Each value is mapped to what our API accepts, and every change is
counted, so the import report says what was changed. What the API would still refuse (content
over the hard limit, too many tags, oversized metadata) is not repaired here: the service's 400
decides, and the importer reports the memory as refused.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from automem.classify import canonical_type
from automem.relations import AUTHORABLE, SYSTEM
from automem.tags import normalize_tags
from automem.timeutil import format_utc, normalize_iso

# AutoMem's TYPE_ALIASES (reference §3.4) for names that are not one of the seven types.
TYPE_ALIASES = {
    "memory": "Context",
    "milestone": "Context",
    "document": "Context",
    "project": "Context",
    "person": "Context",
    "analysis": "Insight",
    "observation": "Insight",
    "issue": "Insight",
    "template": "Pattern",
    "interests": "Preference",
    "communication": "Preference",
    "health_habits": "Habit",
}
FALLBACK_TYPE = "Context"
TIME_FIELDS = ("timestamp", "updated_at", "last_accessed", "t_valid", "t_invalid")
# Written by AutoMem's enrichment and consolidation; ours writes its own (SIMILAR_TO, PRECEDED_BY,
# DISCOVERED, MENTIONS). EXPLAINS/SHARES_THEME/PARALLEL_CONTEXT are AutoMem's legacy DISCOVERED labels.
SYSTEM_RELATIONS = frozenset({*SYSTEM, "EXPLAINS", "SHARES_THEME", "PARALLEL_CONTEXT", "REFERENCED_IN"})
# Ids of AutoMem memories that are not UUIDs become stable UUIDs (the same on every run).
ID_NAMESPACE = uuid.UUID("6f0b7c0e-8a55-4c1e-9a61-2d3f6c1b7a10")
_PRIMITIVE = (str, int, float, bool)


@dataclass
class MappedMemory:
    """One AutoMem memory as a POST /memory/batch item (`item["id"]` is our id)."""

    source_id: str
    item: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.item["id"])


@dataclass
class Changes:
    """What mapping changed, counted over an import (the report's `mapping` section)."""

    counts: Counter[str] = field(default_factory=Counter)
    types: Counter[str] = field(default_factory=Counter)


class Refused(ValueError):
    """A memory that cannot be sent at all (no id, no content)."""


def map_memory(node: dict[str, Any], changes: Changes) -> MappedMemory:
    """The batch item for an AutoMem `:Memory` node's properties; raises Refused."""
    source_id = node.get("id")
    if not isinstance(source_id, str) or not source_id.strip():
        raise Refused("the memory has no id")
    content = node.get("content")
    if not isinstance(content, str) or not content.strip():
        raise Refused("the memory has no content")
    metadata = _metadata(node.get("metadata"), changes)
    item: dict[str, Any] = {"id": _our_id(source_id, metadata, changes), "content": content}
    _map_type(node.get("type"), node.get("confidence"), item, metadata, changes)
    _map_unit(node.get("importance"), "importance", item, changes)
    item["tags"] = _tags(node.get("tags"), changes)
    for name in TIME_FIELDS:
        value = _time(node.get(name), name, changes)
        if value is not None:
            item[name] = value
    _flags(node, metadata, changes)
    item["metadata"] = metadata
    return MappedMemory(source_id, item)


def _our_id(source_id: str, metadata: dict[str, Any], changes: Changes) -> str:
    try:
        return str(uuid.UUID(source_id))
    except ValueError:
        changes.counts["ids_replaced"] += 1
        metadata["automem_id"] = source_id
        return str(uuid.uuid5(ID_NAMESPACE, source_id))


def _map_type(
    value: Any, confidence: Any, item: dict[str, Any], metadata: dict[str, Any], changes: Changes
) -> None:
    """One of the seven types, case-insensitively; AutoMem's aliases; else Context. A name that
    is not one of the seven is kept in `metadata.automem_type`. No type: ours classifies."""
    if not isinstance(value, str) or not value.strip():
        changes.counts["types_missing"] += 1
        return
    mapped = canonical_type(value)
    if mapped is None:
        mapped = TYPE_ALIASES.get(value.strip().lower(), FALLBACK_TYPE)
        metadata.setdefault("automem_type", value)
        changes.types[f"{value} -> {mapped}"] += 1
    item["type"] = mapped
    _map_unit(confidence, "confidence", item, changes)


def _map_unit(value: Any, name: str, item: dict[str, Any], changes: Changes) -> None:
    """A number in [0, 1] (clamped); anything that is not a number is left out (default)."""
    if value is None:
        return
    number = _number(value)
    if number is None:
        changes.counts[f"{name}_dropped"] += 1
        return
    clamped = min(1.0, max(0.0, number))
    if clamped != number:
        changes.counts[f"{name}_clamped"] += 1
    item[name] = clamped


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _tags(value: Any, changes: Changes) -> list[str]:
    """AutoMem's tags as sent: a list of strings (a lone string is one tag, as AutoMem's POST
    keeps it). Ours lower-cases, trims and de-duplicates them; a change is counted. A tag holding
    commas (which no AutoMem lookup could find: queries split on commas) becomes its parts."""
    if value is None:
        return []
    if not isinstance(value, str | list):
        changes.counts["tags_dropped"] += 1
        return []
    raw = [value] if isinstance(value, str) else value
    tags = [t for t in raw if isinstance(t, str)]
    if len(tags) != len(raw):
        changes.counts["tags_dropped"] += len(raw) - len(tags)
    if any("," in t for t in tags):
        changes.counts["tags_split"] += 1
        tags = [part for t in tags for part in t.split(",") if part.strip()]
    if normalize_tags(tags) != tags:
        changes.counts["tags_changed"] += 1
    return tags


def _metadata(value: Any, changes: Changes) -> dict[str, Any]:
    """AutoMem stores metadata as a JSON string; anything that is not an object is kept under
    `automem_metadata` (parsed) or `automem_metadata_raw` (not JSON)."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return dict(value)
    if not isinstance(value, str):
        changes.counts["metadata_wrapped"] += 1
        return {"automem_metadata": value}
    try:
        parsed = json.loads(value)
    except ValueError:
        changes.counts["metadata_unparsed"] += 1
        return {"automem_metadata_raw": value}
    if isinstance(parsed, dict):
        return parsed
    changes.counts["metadata_wrapped"] += 1
    return {"automem_metadata": parsed}


def _time(value: Any, name: str, changes: Changes) -> str | None:
    """ISO 8601 normalised to UTC; unix seconds (or milliseconds) converted; else left out (a
    missing `timestamp` becomes the import time, as on any write)."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return format_utc(datetime.fromtimestamp(seconds, UTC))
        except (OverflowError, OSError, ValueError):
            pass
    elif isinstance(value, str):
        try:
            return normalize_iso(value)
        except ValueError:
            pass
    changes.counts[f"{name}_dropped"] += 1
    return None


def _flags(node: dict[str, Any], metadata: dict[str, Any], changes: Changes) -> None:
    """AutoMem's archive and protection flags have no field here: an archived memory is imported
    active with `metadata.automem_archived`; a protected one is pinned (`metadata.pinned`, which
    our consolidation never decays below its score nor archives)."""
    if _truthy(node.get("archived")):
        metadata["automem_archived"] = True
        changes.counts["archived"] += 1
    if _truthy(node.get("protected")):
        metadata.setdefault("pinned", True)
        if node.get("protected_reason"):
            metadata["automem_protected_reason"] = node["protected_reason"]
        changes.counts["protected_pinned"] += 1


def _truthy(value: Any) -> bool:
    """AutoMem's flags: booleans, or (set by hand, `protected` is documented as either) strings."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return value is True


# --- edges ----------------------------------------------------------------------------------------
def relation_kind(rel_type: str) -> str:
    """'authorable' (recreated through POST /associate), 'system' (recomputed by our
    enrichment and consolidation) or 'unknown' (not in AutoMem's registry either)."""
    name = rel_type.strip().upper()
    if name in AUTHORABLE:
        return "authorable"
    if name in SYSTEM_RELATIONS:
        return "system"
    return "unknown"


def association(rel_type: str, a: str, b: str, props: dict[str, Any]) -> dict[str, Any]:
    """A POST /associate item: strength (AutoMem's, clamped; default 0.5) and the properties the
    type carries (reference §3.3) when they are plain values."""
    name = rel_type.strip().upper()
    strength = _number(props.get("strength"))
    item: dict[str, Any] = {
        "memory1_id": a,
        "memory2_id": b,
        "type": name,
        "strength": 0.5 if strength is None else min(1.0, max(0.0, strength)),
    }
    for key in AUTHORABLE[name]:
        value = props.get(key)
        if isinstance(value, _PRIMITIVE) and not (isinstance(value, float) and not math.isfinite(value)):
            item[key] = value
    return item


def usable_vector(vector: list[float] | None, dimension: int) -> bool:
    """A vector our API accepts: the service's dimension, finite values."""
    return vector is not None and len(vector) == dimension and all(math.isfinite(x) for x in vector)
