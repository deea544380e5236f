"""The sequence scopes' time ranges (automem.stores.scope_bounds): after any sequence of writes,
moves, deletes and restores, every memory's time lies inside its scope's range, so a lookup that
stops at the range's end never misses a neighbour; the lookup's answers stay exactly the
event-time order; and the newest memory of a scope is placed with one query instead of a scan of
the scope."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.record import MemoryRecord
from automem.services import Services
from automem.stores.graph import GraphStore
from automem.stores.scope_bounds import SCOPE_LABEL, scope_key
from automem.stores.time_key import TIME_KEY, epoch_us
from tests.archives import post_restore, take_backup
from tests.conftest import Api
from tests.graph_reads import recorded_reads

BASE = datetime(2025, 1, 1, tzinfo=UTC)
# Offsets (seconds) at the edges of the lookup's hour and day windows, and far beyond them.
OFFSETS = st.sampled_from([0, 1, 3599, 3600, 3601, 86_399, 86_400, 86_401, 864_000, -3601, -86_401])
SCOPES = st.integers(0, 2)
OPS = st.one_of(
    st.tuples(st.just("create"), SCOPES, OFFSETS),
    st.tuples(st.just("batch"), st.lists(st.tuples(SCOPES, OFFSETS), min_size=1, max_size=4)),
    st.tuples(st.just("retime"), st.integers(0, 20), OFFSETS),
    st.tuples(st.just("rescope"), st.integers(0, 20), SCOPES),
    st.tuples(st.just("delete"), st.integers(0, 20)),
)


def _stamp(offset: int) -> str:
    return (BASE + timedelta(seconds=offset)).isoformat()


def assert_ranges_cover(graph: GraphStore) -> None:
    """Every memory with a time key lies inside the one range node of its (tenant, scope)."""
    rows = graph._ro(f"""
        MATCH (m:Memory) WHERE m.{TIME_KEY} IS NOT NULL
        OPTIONAL MATCH (s:{SCOPE_LABEL} {{tenant: m.tenant, scope: '~' + coalesce(m.seq_scope, '')}})
        RETURN m.id, m.{TIME_KEY}, collect([s.lo, s.hi])
    """)
    for memory_id, at, ranges in rows:
        assert len(ranges) == 1, (memory_id, ranges)
        lo, hi = ranges[0]
        assert lo is not None and lo <= at <= hi, (memory_id, at, lo, hi)


def _expected_places(docs: list[MemoryRecord]) -> dict[str, tuple[str | None, str | None]]:
    """(previous, next) of each active memory in its scope, sorted by event time."""
    scopes: dict[str, list[MemoryRecord]] = defaultdict(list)
    for doc in docs:
        if doc.state == "active":
            scopes[doc.seq_scope or ""].append(doc)
    places = {}
    for members in scopes.values():
        order = sorted(members, key=lambda d: (epoch_us(d.timestamp), d.created_at or "", d.id))
        ids: list[str | None] = [None, *(d.id for d in order), None]
        for n, doc in enumerate(order):
            places[doc.id] = (ids[n], ids[n + 2])
    return places


def _apply(api: Api, tag: str, ids: list[str], op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "create":
        body = {"content": f"{tag} {len(ids)}", "tags": [f"{tag}:s{op[1]}"], "timestamp": _stamp(op[2])}
        response = api.post("/memory", json=body)
        assert response.status_code == 201, response.get_json()
        ids.append(response.get_json()["memory_id"])
    elif kind == "batch":
        items = [
            {"content": f"{tag} {len(ids)} {n}", "tags": [f"{tag}:s{s}"], "timestamp": _stamp(o)}
            for n, (s, o) in enumerate(op[1])
        ]
        response = api.post("/memory/batch", json={"memories": items})
        assert response.status_code == 201, response.get_json()
        ids.extend(r["id"] for r in response.get_json()["results"])
    elif ids:
        memory_id = ids[op[1] % len(ids)]
        if kind == "retime":
            api.patch(f"/memory/{memory_id}", json={"timestamp": _stamp(op[2])})
        elif kind == "rescope":
            api.patch(f"/memory/{memory_id}", json={"tags": [f"{tag}:s{op[2]}"]})
        else:
            api.delete(f"/memory/{memory_id}")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=1, max_size=10))
def test_ranges_cover_every_memory_and_the_lookup_stays_exact(
    api: Api, services: Services, ops: list[tuple[Any, ...]]
) -> None:
    """Creates (one or a batch), moves in time and between scopes (PATCH timestamp / tags) and
    deletes, in any order: each scope's range still covers all its memories, and each active
    memory's neighbours are those of its scope sorted by (timestamp, created_at, id)."""
    tag = f"rng{uuid.uuid4().hex[:10]}"  # examples share the store
    ids: list[str] = []
    for op in ops:
        _apply(api, tag, ids, op)
    assert_ranges_cover(services.graph)
    docs = services.graph.get_memories(ids)
    for memory_id, expected in _expected_places(docs).items():
        doc = next(d for d in docs if d.id == memory_id)
        assert services.graph.sequence_place(doc)[:2] == expected, (memory_id, ops)
        assert services.graph.previous_in_sequence(doc) == expected[0]
    _assert_batched_lookup_agrees(services.graph, docs)


def _assert_batched_lookup_agrees(graph: GraphStore, docs: list[MemoryRecord]) -> None:
    """`previous_in_sequence_many` answers what `previous_in_sequence` answers one at a time,
    deleted memories and ties included, with the scopes' ranges trusted and without them."""
    one_at_a_time = {d.id: graph.previous_in_sequence(d) for d in docs}
    assert graph.previous_in_sequence_many(docs) == one_at_a_time
    trusted, graph.scope_ranges_complete = graph.scope_ranges_complete, False
    try:
        assert graph.previous_in_sequence_many(docs) == one_at_a_time
    finally:
        graph.scope_ranges_complete = trusted


def _queries_of(graph: GraphStore, doc: MemoryRecord) -> tuple[Any, int]:
    """The lookup's answer and how many queries it took."""
    with recorded_reads(graph) as sent:
        return graph.sequence_place(doc), len(sent)


def test_the_newest_memory_is_placed_with_one_query(api: Api, services: Services) -> None:
    """Nothing after it in its scope: the range ends within the first window (an hour), so
    neither the day window nor the whole-scope scan is asked (three queries without the range).
    The same for the oldest, on its other side."""
    tag = f"newest{uuid.uuid4().hex[:10]}"
    items = [{"content": f"{tag} {n}", "tags": [tag], "timestamp": _stamp(n * 1800)} for n in range(5)]
    response = api.post("/memory/batch", json={"memories": items})
    ids = [r["id"] for r in response.get_json()["results"]]
    newest, oldest = services.graph.get_memories([ids[-1], ids[0]])
    place, queries = _queries_of(services.graph, newest)
    assert (place.prev, place.next, queries) == (ids[-2], None, 1)
    place, queries = _queries_of(services.graph, oldest)
    assert (place.prev, place.next, queries) == (None, ids[1], 1)
    services.graph.scope_ranges_complete = False  # as in a process that has not seen the marker
    try:
        place, queries = _queries_of(services.graph, newest)
    finally:
        services.graph.scope_ranges_complete = True
    assert (place.prev, place.next, queries) == (ids[-2], None, 3)


def test_an_embedding_jobs_predecessors_are_one_query(api: Api, services: Services) -> None:
    """Two conversations of turns half an hour apart, as an import writes them: every
    predecessor lies in the first window, and each first turn's scope range says nothing came
    before it, so the whole batch costs one query (one a memory, and more for the first turns,
    when asked one at a time)."""
    tag = f"many{uuid.uuid4().hex[:10]}"
    items = [
        {"content": f"{tag} {n}", "tags": [f"{tag}:s{n % 2}"], "timestamp": _stamp(n * 900)}
        for n in range(12)
    ]
    response = api.post("/memory/batch", json={"memories": items})
    docs = services.graph.get_memories([r["id"] for r in response.get_json()["results"]])
    with recorded_reads(services.graph) as sent:
        previous = services.graph.previous_in_sequence_many(docs)
    assert len(sent) == 1
    by_index = {d.id: int(d.content.split()[-1]) for d in docs}
    index_to_id = {n: i for i, n in by_index.items()}
    assert previous == {i: index_to_id.get(n - 2) for i, n in by_index.items()}


def test_the_batched_lookup_orders_ties_like_the_single_one(api: Api, services: Services) -> None:
    """Memories of one instant, some of one creation time too (as a restore or an import can
    write them: the id decides), others a moment apart (the creation time decides): the batch's
    answers are the single lookup's."""
    tag = f"ties{uuid.uuid4().hex[:10]}"
    items = [{"content": f"{tag} {n}", "tags": [tag], "timestamp": _stamp(60)} for n in range(5)]
    response = api.post("/memory/batch", json={"memories": items})
    ids = [r["id"] for r in response.get_json()["results"]]
    for n in range(3):
        body = {"content": f"{tag} single {n}", "tags": [tag], "timestamp": _stamp(60 if n else 0)}
        ids.append(api.post("/memory", json=body).get_json()["memory_id"])
    services.graph._query(
        "MATCH (m:Memory) WHERE m.id IN $ids SET m.created_at = $at", {"ids": ids[:5], "at": "x"}
    )
    docs = services.graph.get_memories(ids)
    _assert_batched_lookup_agrees(services.graph, docs)


def test_an_older_store_gets_its_ranges_and_a_restore_makes_them_again(api: Api, services: Services) -> None:
    tag = f"old{uuid.uuid4().hex[:10]}"
    for n, offset in enumerate([0, 7200, -90_000, 900_000]):
        body = {"content": f"{tag} {n}", "tags": [f"{tag}:s{n % 2}"], "timestamp": _stamp(offset)}
        assert api.post("/memory", json=body).status_code == 201
    archive = take_backup(api)
    services.graph._query(f"MATCH (s:{SCOPE_LABEL}) DELETE s")  # as written before the ranges
    fresh = GraphStore(services.graph.db, services.graph.graph_name)
    assert not fresh.scope_ranges_complete
    fresh.ensure_schema(services.embedder.dimension)
    assert fresh.scope_ranges_complete
    assert_ranges_cover(fresh)
    services.graph._query(f"MATCH (s:{SCOPE_LABEL}) WHERE s.marker IS NULL DELETE s")
    restored = post_restore(api, archive, "?mode=replace")
    assert restored.status_code == 200, restored.get_json()
    assert_ranges_cover(services.graph)
    counts = services.graph.graph_counts()
    assert SCOPE_LABEL not in counts and counts["Memory"] == 4


def _as_if_written_under(graph: GraphStore, memory_id: str, scope: str, legacy: str) -> None:
    """The memory stored under `legacy` (a scope an older rule derived), its real scope's range
    gone: every range still covers its memories, but the real scope's does not exist yet."""
    graph._query(f"MATCH (s:{SCOPE_LABEL} {{scope: $scope}}) DELETE s", {"scope": scope_key(scope)})
    graph._query(
        f"""MATCH (m:Memory {{id: $id}}) SET m.seq_scope = $legacy
        MERGE (s:{SCOPE_LABEL} {{tenant: m.tenant, scope: '~' + $legacy}})
        SET s.lo = m.{TIME_KEY}, s.hi = m.{TIME_KEY}""",
        {"id": memory_id, "legacy": legacy},
    )
    assert_ranges_cover(graph)


def test_a_scope_derived_again_widens_its_range(api: Api, services: Services, jobs: Any) -> None:
    """Enrichment and an entity merge write `seq_scope` again as they derive it; where that
    moves the memory (its scope was derived by an older rule), the new scope's range covers it."""
    tag = f"moved{uuid.uuid4().hex[:10]}"
    response = api.post("/memory", json={"content": f"{tag} note", "tags": [tag], "timestamp": _stamp(0)})
    memory_id = response.get_json()["memory_id"]
    _as_if_written_under(services.graph, memory_id, tag, f"legacy-{tag}")
    jobs()  # enrichment derives the scope again
    assert services.graph.get_memories([memory_id])[0].seq_scope == tag
    assert_ranges_cover(services.graph)
    _as_if_written_under(services.graph, memory_id, tag, f"legacy-{tag}")
    services.graph._query("MERGE (:Entity {key: 'default:person:ranges', tenant: 'default'})")
    doc = services.graph.get_memories([memory_id])[0]
    row = {"id": memory_id, "version": doc.version, "props": {"seq_scope": tag}, "event": {"event": "x"}}
    moved = services.graph.apply_entity_merge(
        [row], "default:person:gone", "default:person:ranges", _stamp(9)
    )
    assert [i for i, _ in moved] == [memory_id]
    assert_ranges_cover(services.graph)


def test_the_untagged_stream_has_one_range_and_no_sequence(api: Api, services: Services, jobs: Any) -> None:
    """Untagged memories share the scope ''. FalkorDB's range index does not find '': a range
    keyed by it was made again by every write (one node each), so keys carry a mark. The
    look-up by `seq_scope = ''` never found a memory either, so untagged memories were never
    linked; that is kept, and stated: they are asked nothing and get no PRECEDED_BY."""
    stamps = ["2031-01-01T00:00:00Z", "2031-01-01T00:10:00Z", "2031-01-01T00:20:00Z"]
    ids = [
        api.post("/memory", json={"content": f"untagged {s}", "timestamp": s}).get_json()["memory_id"]
        for s in stamps
    ]
    rows = services.graph._ro(
        f"MATCH (s:{SCOPE_LABEL} {{scope: $key}}) RETURN count(s)", {"key": scope_key("")}
    )
    assert rows[0][0] == 1
    assert_ranges_cover(services.graph)
    newest = services.graph.get_memories([ids[-1]])[0]
    place, queries = _queries_of(services.graph, newest)
    assert (place.prev, place.next, queries) == (None, None, 0)
    jobs()
    assert [services.graph.sequence_links(i) for i in ids] == [([], [])] * 3
