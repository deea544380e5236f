"""AutoMem's stored values mapped to what our API accepts (`automem import-automem`): each change
is counted, and every mapped item is a valid POST /memory/batch item."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from automem.automem_mapping import (
    ID_NAMESPACE,
    Changes,
    Refused,
    association,
    map_memory,
    relation_kind,
    usable_vector,
)
from automem.models import MemoryCreate, parse
from automem.settings import Settings

ID = "6f1c2a4e-0000-4000-8000-000000000001"


def mapped(**node: Any) -> tuple[dict[str, Any], Changes]:
    changes = Changes()
    item = map_memory({"id": ID, "content": "Chose PostgreSQL", **node}, changes).item
    parse(MemoryCreate, item, Settings())  # the API accepts what the mapping produced
    return item, changes


@pytest.mark.parametrize(
    ("given", "expected", "kept"),
    [
        ("Decision", "Decision", False),
        ("preference", "Preference", False),
        ("  HABIT ", "Habit", False),
        ("Memory", "Context", True),  # AutoMem's classifier fallback
        ("observation", "Insight", True),  # AutoMem's TYPE_ALIASES
        ("template", "Pattern", True),
        ("Meeting-Notes", "Context", True),  # unknown
    ],
)
def test_types_map_to_the_seven(given: str, expected: str, kept: bool) -> None:
    item, changes = mapped(type=given, confidence=0.7)
    assert item["type"] == expected and item["confidence"] == 0.7
    assert ("automem_type" in item["metadata"]) is kept
    assert sum(changes.types.values()) == int(kept)


def test_no_type_is_left_to_our_classifier() -> None:
    item, changes = mapped(type=None, confidence=0.9)
    assert "type" not in item and "confidence" not in item
    assert changes.counts["types_missing"] == 1


def test_numbers_are_clamped_or_left_out() -> None:
    item, changes = mapped(type="Decision", importance=1.7, confidence=-0.1)
    assert (item["importance"], item["confidence"]) == (1.0, 0.0)
    assert changes.counts["importance_clamped"] == changes.counts["confidence_clamped"] == 1
    item, changes = mapped(importance="high", confidence=float("nan"), type="Decision")
    assert "importance" not in item and "confidence" not in item
    assert changes.counts["importance_dropped"] == changes.counts["confidence_dropped"] == 1
    item, _ = mapped(importance="0.25")
    assert item["importance"] == 0.25


def test_tags_are_sent_as_given_and_changes_counted() -> None:
    item, changes = mapped(tags=["Project/AutoMem", "slack", "SLACK"])
    assert item["tags"] == ["Project/AutoMem", "slack", "SLACK"]  # our API normalises them
    assert changes.counts["tags_changed"] == 1
    item, changes = mapped(tags=["a", "b"])
    assert changes.counts["tags_changed"] == 0
    item, changes = mapped(tags=["ok", 3, None])
    assert item["tags"] == ["ok"] and changes.counts["tags_dropped"] == 2
    item, changes = mapped(tags="one, tag")  # AutoMem's POST keeps a string as one tag ...
    assert item["tags"] == ["one", " tag"]  # ... that no lookup finds: ours splits it
    assert changes.counts["tags_split"] == 1


def test_metadata_json_string_becomes_an_object() -> None:
    item, _ = mapped(metadata=json.dumps({"source": "slack", "nested": {"a": [1, 2]}}))
    assert item["metadata"] == {"source": "slack", "nested": {"a": [1, 2]}}
    item, changes = mapped(metadata="{broken")
    assert item["metadata"] == {"automem_metadata_raw": "{broken"}
    assert changes.counts["metadata_unparsed"] == 1
    item, changes = mapped(metadata="[1, 2]")
    assert item["metadata"] == {"automem_metadata": [1, 2]}
    item, _ = mapped(metadata=None)
    assert item["metadata"] == {}


def test_timestamps_are_normalised_to_utc() -> None:
    item, changes = mapped(
        timestamp="2024-03-01T10:00:00Z",
        updated_at="2024-03-01T12:00:00+02:00",
        last_accessed=1_709_287_200_000,  # milliseconds
        t_valid=1_709_287_200,
        t_invalid="not a date",
    )
    assert item["timestamp"] == item["updated_at"] == "2024-03-01T10:00:00.000000+00:00"
    assert item["last_accessed"] == item["t_valid"] == "2024-03-01T10:00:00.000000+00:00"
    assert "t_invalid" not in item and changes.counts["t_invalid_dropped"] == 1


def test_ids_are_kept_or_replaced_stably() -> None:
    changes = Changes()
    upper = map_memory({"id": ID.upper(), "content": "x"}, changes)
    assert upper.id == ID and upper.source_id == ID.upper()
    legacy = map_memory({"id": "mem-42", "content": "x"}, changes)
    assert legacy.id == str(uuid.uuid5(ID_NAMESPACE, "mem-42"))
    assert legacy.item["metadata"]["automem_id"] == "mem-42" and changes.counts["ids_replaced"] == 1
    with pytest.raises(Refused, match="no content"):
        map_memory({"id": ID, "content": "   "}, changes)
    with pytest.raises(Refused, match="no id"):
        map_memory({"content": "x"}, changes)


def test_archived_and_protected_flags_go_to_metadata() -> None:
    item, changes = mapped(archived=True, protected="true", protected_reason="core rule")
    assert item["metadata"] == {
        "automem_archived": True,
        "pinned": True,
        "automem_protected_reason": "core rule",
    }
    assert changes.counts["archived"] == changes.counts["protected_pinned"] == 1
    item, _ = mapped(archived=False, protected=None)
    assert item["metadata"] == {}


def test_relation_kinds_and_association_items() -> None:
    assert relation_kind("relates_to") == "authorable"
    assert {relation_kind(t) for t in ("SIMILAR_TO", "PRECEDED_BY", "DISCOVERED", "EXPLAINS")} == {"system"}
    assert relation_kind("FOO") == "unknown"
    item = association(
        "prefers_over", "a", "b", {"strength": 3, "context": "db", "reason": "ACID", "updated_at": "x"}
    )
    assert item == {
        "memory1_id": "a",
        "memory2_id": "b",
        "type": "PREFERS_OVER",
        "strength": 1.0,
        "context": "db",
        "reason": "ACID",
    }
    assert association("RELATES_TO", "a", "b", {})["strength"] == 0.5
    assert "reason" not in association("CONTRADICTS", "a", "b", {"reason": ["not", "plain"]})


def test_usable_vector() -> None:
    assert usable_vector([0.1, 0.2], 2)
    assert not usable_vector([0.1], 2) and not usable_vector(None, 2)
    assert not usable_vector([0.1, float("inf")], 2)
