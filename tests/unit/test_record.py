"""The memory record and its one serializer: reads, patches, and the wire shape against the
OpenAPI schema of every route that returns memories."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from automem.docsgen import openapi_document
from automem.record import MEMORY_FIELDS, MemoryRecord, memory_wire, metadata_object

FULL_ROW = {
    "id": "6f1c2a4e-0000-4000-8000-000000000001",
    "tenant": "default",
    "content": "Chose PostgreSQL over MongoDB",
    "content_hash": "abc",
    "type": "Decision",
    "confidence": 0.9,
    "tags": ["slack:channel:general", "db"],
    "importance": 0.7,
    "metadata": json.dumps({"files": ["db.py"], "n": 3}),
    "timestamp": "2025-01-02T03:04:05.000000+00:00",
    "created_at": "2025-01-02T03:04:06.000000+00:00",
    "updated_at": "2025-01-02T03:04:06.000000+00:00",
    "last_accessed": "2025-01-02T03:04:06.000000+00:00",
    "t_valid": "2025-01-02T03:04:05.000000+00:00",
    "t_invalid": None,
    "state": "active",
    "deleted_at": None,
    "version": 3,
    "rev": 5,
    "embedding_hash": "abc",
    "embedding_model": "client",
    "embedding_context": "",
    "enriched": True,
    "enriched_at": "2025-01-02T03:05:00.000000+00:00",
    "enrichment_version": 1,
    "summary": "Chose PostgreSQL",
    "classification": "explicit",
    "seq_scope": "slack:channel:general",
}


def full_record() -> MemoryRecord:
    return MemoryRecord.from_values(MEMORY_FIELDS, [FULL_ROW[f] for f in MEMORY_FIELDS])


def test_a_read_parses_metadata_and_derives_prefixes_and_embedded() -> None:
    record = full_record()
    assert record.metadata == {"files": ["db.py"], "n": 3}
    assert record.tag_prefixes == ["slack", "slack:channel", "slack:channel:general", "db"]
    assert record.embedded and record.version == 3 and record.t_invalid is None


def test_null_properties_read_as_defaults() -> None:
    record = MemoryRecord.from_values(("id", "tags", "metadata", "state"), ("x", None, None, None))
    assert (record.tags, record.tag_prefixes, record.metadata, record.state) == ([], [], {}, "active")
    assert not record.embedded


def test_a_patch_applies_as_the_graph_applies_it() -> None:
    record = full_record()
    patched = record.with_props(
        {"tags": ["a:b"], "metadata": json.dumps({"k": 1}), "summary": None, "version": 4, "other": 1}
    )
    assert patched.tags == ["a:b"] and patched.tag_prefixes == ["a", "a:b"]
    assert patched.metadata == {"k": 1} and patched.summary is None and patched.version == 4
    assert record.tags == ["slack:channel:general", "db"]  # the original is untouched


# --- the wire shape against the OpenAPI document -------------------------------------------------
MEMORY_SCHEMAS = ("Memory", "RelatedMemory", "ListedMemory")
# What a route adds to the serializer's memory, per component.
ADDED = {"Memory": {}, "RelatedMemory": {"hops": 1}, "ListedMemory": {"score": 0.5, "match_type": "tag"}}
# Routes that return memories; the walk below must find each of them (and may find more).
EXPECTED_ROUTES = {
    ("get", "/memory/{memory_id}"),
    ("patch", "/memory/{memory_id}"),
    ("post", "/memory"),
    ("post", "/memory/{memory_id}/recover"),
    ("get", "/memory/by-tag"),
    ("get", "/recall"),
    ("post", "/recall"),
    ("get", "/memories/{memory_id}/related"),
}


def _referenced(node: Any, components: dict[str, Any], seen: set[str]) -> set[str]:
    """Names of every component `node` reaches through $ref."""
    for name in re.findall(r"#/components/schemas/(\w+)", json.dumps(node)):
        if name not in seen:
            seen.add(name)
            _referenced(components[name], components, seen)
    return seen


def _memory_routes() -> dict[tuple[str, str], set[str]]:
    doc = openapi_document()
    components = doc["components"]["schemas"]
    found: dict[tuple[str, str], set[str]] = {}
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            for status, response in operation.get("responses", {}).items():
                names = _referenced(response, components, set()) & set(MEMORY_SCHEMAS)
                if status.startswith("2") and names:
                    found.setdefault((method, path), set()).update(names)
    return found


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The component with every documented property required: the serializer must produce each."""
    return {**schema, "required": sorted(schema["properties"])}


def _wire_variants() -> list[dict[str, Any]]:
    full = full_record()
    minimal = MemoryRecord.from_values(("id", "content"), ("m", "text"))
    deleted = full.with_props({"state": "deleted", "t_invalid": "2025-02-01T00:00:00.000000+00:00"})
    return [memory_wire(r) for r in (full, minimal, deleted)]


def test_every_memory_route_is_found() -> None:
    assert set(_memory_routes()) >= EXPECTED_ROUTES


@pytest.mark.parametrize("schema_name", MEMORY_SCHEMAS)
def test_the_serializer_produces_exactly_the_documented_memory(schema_name: str) -> None:
    components = openapi_document()["components"]["schemas"]
    schema = _strict(components[schema_name])
    for wire in _wire_variants():
        shaped = {**wire, **ADDED[schema_name]}
        jsonschema.validate(shaped, schema)
        assert set(shaped) <= set(schema["properties"]), "a field the schema does not document"


def test_every_memory_route_documents_the_serializers_shape() -> None:
    components = openapi_document()["components"]["schemas"]
    for route, names in _memory_routes().items():
        for name in names:
            documented = set(components[name]["properties"])
            assert set(memory_wire(full_record())) <= documented, (route, name)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too: orjson would read them as floats
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=15,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5) | json_values)
@example({"": -9223372036854775809})  # one past int64: orjson reads it as a float (a CI run drew it)
@example({"n": 18446744073709551616, "m": [2**70]})
def test_stored_metadata_reads_as_the_json_it_was(value: Any) -> None:
    """The graph's metadata text reads back as the standard library reads it (only objects are
    metadata; anything else, or text that is not JSON, reads as {})."""
    text = json.dumps(value)
    expected = value if isinstance(value, dict) else {}
    assert metadata_object(text) == expected
    assert metadata_object(text + "}") == {}
