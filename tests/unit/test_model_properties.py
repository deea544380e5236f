"""Properties of the request models (hypothesis): any JSON either validates into a value that
keeps the documented limits, or is an InvalidInput (a 400) naming a field the client sent or
`body`. Never another exception, which would be a 500."""

from __future__ import annotations

import math
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import MultiDict

from automem.classify import MEMORY_TYPES
from automem.errors import InvalidInput
from automem.models import MemoryCreate, MemoryUpdate, parse
from automem.recall.query import RecallQuery, body_args, query_args
from automem.settings import Settings
from automem.timeutil import parse_iso
from tests.conftest import make_settings

SETTINGS: Settings = make_settings("redis://127.0.0.1:1", Path("/nonexistent"))
PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
day = timedelta(hours=23, minutes=59)
zones = st.none() | st.timedeltas(min_value=-day, max_value=day).map(timezone)
dates = st.datetimes(timezones=zones).map(lambda d: d.isoformat()) | st.sampled_from(
    ["2024-02-30", "2024-13-01T00:00:00Z", "yesterday", "", "2024-01-01T25:00", "+99999-01-01", "0000-00-00"]
)
plausible = {
    "content": st.text(max_size=50) | st.text(min_size=1990, max_size=2100) | json_values,
    "type": st.sampled_from([*MEMORY_TYPES, "decision", "DECISION", "nope", ""]) | json_values,
    "confidence": st.floats() | json_values,
    "importance": st.floats() | st.integers() | json_values,
    "tags": st.lists(st.text(max_size=110), max_size=55) | st.text(max_size=200) | json_values,
    "metadata": st.dictionaries(st.text(max_size=8), json_values, max_size=5) | json_values,
    "timestamp": dates | json_values,
    "t_valid": dates,
    "t_invalid": dates,
    "updated_at": dates,
    "last_accessed": dates,
    "embedding": st.lists(st.floats(), max_size=8) | st.text(max_size=20) | json_values,
    "id": st.uuids().map(str) | st.text(max_size=40) | json_values,
    "if_version": st.integers() | json_values,
}
memory_bodies = st.fixed_dictionaries({}, optional=plausible) | json_values


def _validated_or_400(model: Any, data: Any) -> Any:
    try:
        return parse(model, data, SETTINGS)
    except InvalidInput as exc:
        assert exc.status == 400 and exc.field, exc.message
        known = (set(data) if isinstance(data, dict) else set()) | set(model.model_fields)
        assert exc.field == "body" or exc.field in known, (exc.field, exc.message)
        return None


def _check_memory_fields(value: MemoryCreate | MemoryUpdate) -> None:
    for unit in (value.confidence, value.importance):
        assert unit is None or (0.0 <= unit <= 1.0 and not math.isnan(unit))
    if value.tags is not None:
        assert len(value.tags) <= SETTINGS.max_tags
        assert all(t == t.strip().lower() and 0 < len(t) <= SETTINGS.max_tag_length for t in value.tags)
    if value.type is not None:
        assert value.type in MEMORY_TYPES
    for moment in (value.timestamp, value.t_valid, value.t_invalid, value.updated_at, value.last_accessed):
        assert moment is None or parse_iso(moment).utcoffset() is not None
    if value.embedding is not None:
        assert value.embedding and all(math.isfinite(v) for v in value.embedding)


@PROPERTIES
@given(memory_bodies)
def test_memory_create_validates_or_is_a_400(data: Any) -> None:
    value = _validated_or_400(MemoryCreate, data)
    if value is not None:
        assert isinstance(value.content, str) and value.content == value.content.strip()
        assert 0 < len(value.content) <= SETTINGS.content_hard_limit
        _check_memory_fields(value)


@PROPERTIES
@given(memory_bodies)
def test_memory_update_validates_or_is_a_400(data: Any) -> None:
    value = _validated_or_400(MemoryUpdate, data)
    if value is not None:
        assert value.content is None or 0 < len(value.content) <= SETTINGS.content_hard_limit
        assert value.if_version is None or isinstance(value.if_version, int)
        _check_memory_fields(value)


recall_names = st.sampled_from(
    [
        "query", "limit", "tags", "exclude_tags", "context_tags", "types", "type", "tag_mode", "tag_match",
        "time_query", "time", "start", "end", "sort", "order_by", "state_mode", "min_score", "embedding",
        "expand_relations", "expand", "expand_entities", "relation_limit", "expansion_limit",
        "expand_min_importance", "expand_min_strength", "unknown",
    ]
)  # fmt: skip
recall_values = (
    st.text(max_size=20)
    | st.integers().map(str)
    | st.floats().map(str)
    | st.sampled_from(
        ["true", "false", "0", "1", "-1", "101", "nan", "inf", "score", "time_desc", "any", "all", "history"]
    )
)


def _check_recall(value: RecallQuery) -> None:
    assert 1 <= value.limit <= SETTINGS.recall_max_limit
    assert 0.0 <= value.min_score <= 1.0
    assert all(t in MEMORY_TYPES for t in value.types)
    for tags in (value.tags, value.exclude_tags, value.context_tags):
        assert len(tags) <= SETTINGS.max_tags


@PROPERTIES
@given(st.lists(st.tuples(recall_names, recall_values), max_size=8))
def test_recall_query_string_validates_or_is_a_400(pairs: list[tuple[str, str]]) -> None:
    data = query_args(MultiDict(pairs))
    value = _validated_or_400(RecallQuery, data)
    if value is not None:
        _check_recall(value)


@PROPERTIES
@given(st.dictionaries(recall_names, json_values | recall_values, max_size=8) | json_values)
def test_recall_body_validates_or_is_a_400(body: Any) -> None:
    data = body_args(body) if isinstance(body, dict) else body
    value = _validated_or_400(RecallQuery, data)
    if value is not None:
        _check_recall(value)
