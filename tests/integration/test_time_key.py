"""The numeric time key (TIME_KEY, microseconds since 1970) follows every memory's timestamp on
every write path, an older store is migrated to it, and sequence neighbours found through its
windows are exactly the event-time order."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.services import Services
from automem.stores.time_key import TIME_KEY, epoch_us
from automem.timeutil import now_iso
from tests.archives import archive_records, gzip_records, post_restore, take_backup
from tests.conftest import Api

BASE = datetime(2025, 1, 1, tzinfo=UTC)


def _time_keys(services: Services) -> dict[str, tuple[str, int | None]]:
    rows = services.graph._ro(f"MATCH (m:Memory) RETURN m.id, m.timestamp, m.{TIME_KEY}")
    return {i: (ts, key) for i, ts, key in rows}


def _consistent(services: Services) -> None:
    for memory_id, (timestamp, key) in _time_keys(services).items():
        assert key == epoch_us(timestamp), memory_id


def test_every_write_path_keeps_the_key_with_the_timestamp(api: Api, services: Services) -> None:
    assert epoch_us("1970-01-01T00:00:01.000001Z") == 1_000_001
    assert epoch_us("1969-12-31T23:59:59Z") == -1_000_000
    one = api.post("/memory", json={"content": "single", "timestamp": "2024-02-29T12:00:00.123456Z"})
    batch = api.post("/memory/batch", json={"memories": [{"content": "batched"}, {"content": "too"}]})
    assert one.status_code == 201 and batch.status_code == 201
    memory_id = one.get_json()["memory_id"]
    assert api.patch(f"/memory/{memory_id}", json={"timestamp": "2020-05-05T05:05:05Z"}).status_code == 200
    assert api.patch(f"/memory/{memory_id}", json={"importance": 0.9}).status_code == 200
    _consistent(services)
    assert _time_keys(services)[memory_id][1] == epoch_us("2020-05-05T05:05:05Z")


def test_a_restore_computes_the_key_again_and_an_old_store_is_migrated(api: Api, services: Services) -> None:
    for n in range(5):
        stamp = (BASE + timedelta(days=n)).isoformat()
        assert api.post("/memory", json={"content": f"note {n}", "timestamp": stamp}).status_code == 201
    records = archive_records(take_backup(api))
    for record in records:  # an archive may carry a wrong key (edited) or none (older)
        if record["kind"] == "memory":
            record["props"][TIME_KEY] = 42 if record["props"]["content"] == "note 1" else None
            record["props"] = {k: v for k, v in record["props"].items() if v is not None}
    restored = post_restore(api, gzip_records(records), "?mode=replace")
    assert restored.status_code == 200, restored.get_json()
    _consistent(services)
    services.graph._query(f"MATCH (m:Memory) SET m.{TIME_KEY} = null")
    services.graph.ensure_schema(services.embedder.dimension)
    _consistent(services)
    assert all(key is not None for _, key in _time_keys(services).values())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offsets=st.lists(st.integers(0, 3 * 86_400 * 400), min_size=2, max_size=9, unique=True))
def test_the_chain_follows_event_time_however_far_apart(
    api: Api, services: Services, jobs: Any, offsets: list[int]
) -> None:
    """Offsets up to 400 x three days apart in seconds: some neighbours within the hour window,
    some within the day window, some only found by the whole-scope search."""
    # A scope of its own: examples share the store, and an earlier example's identical content
    # would be deduplicated into this one's chain.
    scope = f"chain:{uuid.uuid4().hex[:12]}"
    items = [
        {
            "content": f"{scope} turn {o}",
            "tags": [scope],
            "timestamp": (BASE + timedelta(seconds=o)).isoformat(),
        }
        for o in offsets
    ]
    response = api.post("/memory/batch", json={"memories": items})
    assert response.status_code == 201, response.get_json()
    ids = [r["id"] for r in response.get_json()["results"]]
    jobs()
    by_time = [memory_id for _, memory_id in sorted(zip(offsets, ids, strict=True))]
    for earlier, later in itertools.pairwise(by_time):
        assert services.graph.sequence_links(later)[0] == [earlier]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    offsets=st.lists(
        st.sampled_from([0, 1, 1800, 3599, 3601, 86_399, 86_401, 864_000, 8_640_000]), min_size=1, max_size=8
    )
)
def test_both_neighbours_are_the_nearest_in_event_order(
    api: Api, services: Services, offsets: list[int]
) -> None:
    """Each memory's previous and next in its scope, asked together (one query per window for
    both sides), are those of the scope sorted by (timestamp, created_at, id): ties included,
    neighbours inside the hour, the day, or only in the whole scope, on either side."""
    scope = f"pos:{uuid.uuid4().hex[:12]}"
    items = [
        {"content": f"{scope} {n}", "tags": [scope], "timestamp": (BASE + timedelta(seconds=o)).isoformat()}
        for n, o in enumerate(offsets)
    ]
    response = api.post("/memory/batch", json={"memories": items})
    assert response.status_code == 201, response.get_json()
    docs = services.graph.get_memories([r["id"] for r in response.get_json()["results"]])
    assert {d.seq_scope for d in docs} == {docs[0].seq_scope} and docs[0].seq_scope
    order = sorted(docs, key=lambda d: (epoch_us(d.timestamp), d.created_at or "", d.id))
    ids = [None, *(d.id for d in order), None]
    neighbours = list(zip(ids[:-2], ids[2:], strict=True))  # (previous, next) of each in order
    for n, doc in enumerate(order):
        expected = neighbours[n]
        assert services.graph.sequence_place(doc)[:2] == expected
        assert services.graph.previous_in_sequence(doc) == expected[0]
        if n % 2 == 0:  # some memories linked into place, so some have edges to read along
            services.graph.relink_sequence(doc.id, expected[0], expected[1], None, now_iso())
    for n, doc in enumerate(order):  # the edges read along: the same as read alone
        place = services.graph.sequence_place(doc)
        assert place[:2] == neighbours[n]
        assert place[2:] == services.graph.sequence_links(doc.id)
