"""One contract for every vector store: the Qdrant Edge shard and qdrant-client's local mode.

Each test runs against both adapters through the `backend` fixture, so a behaviour that differs
between the engines fails here. The adapters are built through their public constructors only;
no Qdrant package is imported by the tests.
"""

from __future__ import annotations

import itertools
import math
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from automem.errors import ConfigurationError, DimensionMismatch
from automem.listing import rank_of
from automem.settings import Settings
from automem.stores.vectors import (
    Filter,
    HasId,
    IsNull,
    Match,
    Range,
    VectorPoint,
    VectorStore,
    open_vector_store,
)
from automem.stores.vectors.base import payload_matches
from automem.stores.vectors.qdrant_edge import HALF_PRECISION, EdgeVectorStore
from automem.stores.vectors.qdrant_server import QdrantVectorStore
from automem.validation import as_unit_float

DIM = 4
NOW = "2025-06-01T00:00:00+00:00"
# Edge shards keep half-precision vectors by default (AUTOMEM_EDGE_VECTOR_DATATYPE).
STORED = HALF_PRECISION


@dataclass
class Backend:
    """Opens stores on one location, so a test can reopen what it wrote; closes them all after."""

    name: str
    path: Path
    opened: list[VectorStore] = field(default_factory=list)

    def open(self) -> VectorStore:
        store: VectorStore
        if self.name == "edge":
            store = EdgeVectorStore(str(self.path / "shard"))
        else:
            store = QdrantVectorStore.from_settings(None, None, str(self.path / "local"), "memories", 5.0)
        self.opened.append(store)
        return store

    def reopen(self, store: VectorStore) -> VectorStore:
        store.close()
        return self.open()


@pytest.fixture(params=["edge", "qdrant"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    backend = Backend(request.param, tmp_path)
    yield backend
    for store in backend.opened:
        store.close()


@pytest.fixture
def store(backend: Backend) -> VectorStore:
    store = backend.open()
    store.ensure_collection(DIM)
    return store


def uid(n: int) -> str:
    return str(uuid.UUID(int=n))


def point(n: int, vector: list[float], rev: int = 1, **payload: object) -> VectorPoint:
    return VectorPoint(id=uid(n), vector=vector, payload={"rev": rev, **payload})


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def ids_of(records: list) -> set[str]:
    return {r.id for r in records}


# --- collection lifecycle -------------------------------------------------------------------------
def test_ensure_collection_creates_and_is_idempotent(backend: Backend) -> None:
    store = backend.open()
    assert store.dimension() is None
    store.ensure_collection(DIM)
    assert store.dimension() == DIM
    store.upsert([point(1, [1, 0, 0, 0])])
    store.ensure_collection(DIM)
    assert store.dimension() == DIM
    assert store.count() == 1


def test_dimension_mismatch_raises_also_after_reopen(backend: Backend) -> None:
    store = backend.open()
    store.ensure_collection(DIM)
    with pytest.raises(DimensionMismatch):
        store.ensure_collection(DIM + 1)
    store = backend.reopen(store)
    assert store.dimension() == DIM
    with pytest.raises(DimensionMismatch):
        store.ensure_collection(DIM + 1)
    store.ensure_collection(DIM)


def test_vector_of_wrong_dimension_is_refused(store: VectorStore) -> None:
    with pytest.raises(DimensionMismatch):
        store.upsert([point(1, [1.0, 0.0])])
    with pytest.raises(DimensionMismatch):
        store.search([1.0, 0.0], limit=3)
    assert store.count() == 0


def test_reopen_keeps_data(backend: Backend) -> None:
    store = backend.open()
    store.ensure_collection(DIM)
    store.upsert([point(n, [1, n, 0, 0], tags=["t"]) for n in range(1, 6)])
    store = backend.reopen(store)
    assert store.dimension() == DIM
    assert store.count() == 5
    assert store.count(Filter(must=(Match("tags", ("t",)),))) == 5
    assert ids_of(store.retrieve([uid(3)])) == {uid(3)}


def test_drop_removes_collection(backend: Backend, store: VectorStore) -> None:
    store.upsert([point(1, [1, 0, 0, 0])])
    store.drop()
    assert store.dimension() is None
    assert store.count() == 0
    assert store.retrieve([uid(1)]) == []
    assert store.search([1, 0, 0, 0], limit=5) == []
    assert store.scroll() == ([], None)
    store.delete([uid(1)])  # nothing to delete: a no-op
    with pytest.raises(ConfigurationError):
        store.upsert([point(1, [1, 0, 0, 0])])
    store.ensure_collection(DIM + 2)  # a rebuild may change the dimension
    assert store.dimension() == DIM + 2
    assert store.count() == 0
    assert backend.reopen(store).dimension() == DIM + 2


# --- points ---------------------------------------------------------------------------------------
def test_upsert_retrieve_round_trip(store: VectorStore) -> None:
    payload = {
        "rev": 3,
        "content": "héllo ✓",
        "tags": ["a", "b"],
        "metadata": {"nested": {"list": [1, 2.5, "x", None, {"deep": True}], "none": None}, "empty": {}},
        "t_invalid": None,
        "importance": 0.25,
        "flag": False,
        "empty_list": [],
    }
    vector = [3.0, 4.0, 0.0, 0.0]
    store.upsert([VectorPoint(id=uid(7), vector=vector, payload=payload)])

    [record] = store.retrieve([uid(7), uid(8)], with_vectors=True)
    assert record.id == uid(7) and isinstance(record.id, str)
    assert record.payload == payload
    assert record.vector == pytest.approx(unit(vector), abs=STORED)  # cosine collections store unit vectors
    [bare] = store.retrieve([uid(7)])
    assert bare.vector is None and bare.payload == payload
    assert store.retrieve([]) == []
    [some] = store.retrieve([uid(7)], fields=("rev", "importance", "absent"))
    assert some.payload == {"rev": 3, "importance": 0.25}


def test_ids_come_back_canonical(store: VectorStore) -> None:
    upper = str(uuid.uuid4()).upper()
    store.upsert([VectorPoint(id=upper, vector=[1, 0, 0, 0], payload={"rev": 1})])
    assert ids_of(store.retrieve([upper])) == {upper.lower()}
    with pytest.raises(ValueError):
        store.upsert([VectorPoint(id="not-a-uuid", vector=[1, 0, 0, 0])])


@pytest.mark.parametrize(
    ("new_rev", "replaced"),
    [(4, False), (5, False), (6, True)],
    ids=["lower-kept", "equal-kept", "higher-replaces"],
)
def test_rev_guard(store: VectorStore, new_rev: int, replaced: bool) -> None:
    store.upsert([point(1, [1, 0, 0, 0], rev=5, v="stored")])
    # The stale or fresh write travels with a brand-new id, which is inserted either way.
    store.upsert([point(1, [0, 1, 0, 0], rev=new_rev, v="new"), point(2, [0, 0, 1, 0], rev=1, v="other")])

    records = {r.id: r for r in store.retrieve([uid(1), uid(2)], with_vectors=True)}
    expected = {"rev": new_rev, "v": "new"} if replaced else {"rev": 5, "v": "stored"}
    assert records[uid(1)].payload == expected
    assert records[uid(1)].vector == pytest.approx([0, 1, 0, 0] if replaced else [1, 0, 0, 0], abs=STORED)
    assert records[uid(2)].payload == {"rev": 1, "v": "other"}


@pytest.mark.parametrize(("new_rev", "replaced"), [(4, False), (5, True), (6, True)])
def test_a_rewrite_replaces_the_same_rev_but_never_a_newer_one(
    store: VectorStore, new_rev: int, replaced: bool
) -> None:
    """A forced repair writes each point again in the current shape: the graph's rev may be
    the stored one, never behind it."""
    store.upsert([point(1, [1, 0, 0, 0], rev=5, v="stored")])
    store.upsert([point(1, [0, 1, 0, 0], rev=new_rev, v="rewritten")], rewrite=True)
    [record] = store.retrieve([uid(1)])
    assert record.payload == ({"rev": new_rev, "v": "rewritten"} if replaced else {"rev": 5, "v": "stored"})


def test_payload_values_are_added_only_where_the_rev_is_still_the_same(store: VectorStore) -> None:
    store.upsert([point(1, [1, 0, 0, 0], rev=5, v="one"), point(2, [0, 1, 0, 0], rev=7, v="two")])
    store.set_payload_values([(uid(1), 5, {"rank": 0.5}), (uid(2), 6, {"rank": 0.25})])
    payloads = {r.id: r.payload for r in store.retrieve([uid(1), uid(2)])}
    assert payloads == {uid(1): {"rev": 5, "v": "one", "rank": 0.5}, uid(2): {"rev": 7, "v": "two"}}


def test_rev_guard_within_one_batch(store: VectorStore) -> None:
    store.upsert(
        [
            point(1, [1, 0, 0, 0], rev=2, v="two"),
            point(1, [1, 0, 0, 0], rev=3, v="three"),
            point(1, [1, 0, 0, 0], rev=3, v="three-again"),
            point(1, [1, 0, 0, 0], rev=1, v="one"),
            point(2, [0, 1, 0, 0], rev=7, v="seven"),
        ]
    )
    payloads = {r.id: r.payload["v"] for r in store.retrieve([uid(1), uid(2)])}
    assert payloads == {uid(1): "three", uid(2): "seven"}


def test_missing_rev_counts_as_zero(store: VectorStore) -> None:
    store.upsert([VectorPoint(id=uid(1), vector=[1, 0, 0, 0], payload={"v": "norev"})])
    store.upsert([VectorPoint(id=uid(1), vector=[1, 0, 0, 0], payload={"v": "also-norev"})])
    assert store.retrieve([uid(1)])[0].payload == {"v": "norev"}
    store.upsert([point(1, [1, 0, 0, 0], rev=1, v="one")])
    assert store.retrieve([uid(1)])[0].payload == {"rev": 1, "v": "one"}


def test_delete(store: VectorStore) -> None:
    store.upsert([point(n, [1, n, 0, 0]) for n in range(1, 5)])
    store.delete([uid(2), uid(3), uid(99)])
    assert store.count() == 2
    assert ids_of(store.retrieve([uid(n) for n in range(1, 5)])) == {uid(1), uid(4)}
    store.delete([])
    # A purge is unconditional, and the id can be written again afterwards at any rev.
    store.upsert([point(2, [1, 0, 0, 0], rev=0, v="back")])
    assert store.retrieve([uid(2)])[0].payload == {"rev": 0, "v": "back"}


# --- search ---------------------------------------------------------------------------------------
def test_search_orders_by_cosine_and_applies_threshold(store: VectorStore) -> None:
    store.upsert(
        [
            point(1, [0, 1, 0, 0]),  # cos 0
            point(2, [1, 1, 0, 0]),  # cos 0.707
            point(3, [5, 0, 0, 0]),  # cos 1 (length does not matter)
            point(4, [-1, 0, 0, 0]),  # cos -1
            point(5, [1, 0.2, 0, 0]),  # cos 0.981
        ]
    )
    hits = store.search([1, 0, 0, 0], limit=10)
    assert [h.id for h in hits] == [uid(3), uid(5), uid(2), uid(1), uid(4)]
    assert [h.score for h in hits] == pytest.approx(
        [1.0, 1 / math.sqrt(1.04), 1 / math.sqrt(2), 0.0, -1.0], abs=STORED
    )
    assert hits[0].payload == {"rev": 1}

    assert [h.id for h in store.search([1, 0, 0, 0], limit=2)] == [uid(3), uid(5)]
    above = store.search([1, 0, 0, 0], limit=10, score_threshold=0.5)
    assert [h.id for h in above] == [uid(3), uid(5), uid(2)]
    assert store.search([1, 0, 0, 0], limit=0) == []


# --- filters --------------------------------------------------------------------------------------
CORPUS = {
    "a": dict(
        tags=["alpha", "beta"],
        type="Decision",
        importance=0.9,
        timestamp="2025-01-01T00:00:00+00:00",
        t_invalid=None,
    ),
    "b": dict(
        tags=["beta"],
        type="Pattern",
        importance=0.5,
        timestamp="2025-03-01T12:00:00+02:00",
        t_invalid="2026-01-01T00:00:00+00:00",
    ),
    # 23:30 at -01:00 is 00:30 UTC: after "a" although its text sorts before it.
    "c": dict(
        tags=["gamma"],
        type="Decision",
        importance=0.1,
        timestamp="2024-12-31T23:30:00-01:00",
        t_invalid="2025-01-01T00:00:00Z",
    ),
    "d": dict(tags=[], type="Insight", importance=0.7, timestamp="2025-05-01T00:00:00Z"),
    "e": dict(
        tags=["alpha"],
        type="Preference",
        importance=0.3,
        timestamp="2025-02-01T00:00:00+00:00",
        t_invalid=None,
    ),
}
NAMES = {name: uid(100 + i) for i, name in enumerate(CORPUS)}

FILTER_CASES: dict[str, tuple[Filter, str]] = {
    "empty-filter": (Filter(), "abcde"),
    "match-list-field": (Filter(must=(Match("tags", ("alpha",)),)), "ae"),
    "match-scalar-field": (Filter(must=(Match("type", ("Decision",)),)), "ac"),
    "match-any-list": (Filter(must=(Match("tags", ("gamma", "beta")),)), "abc"),
    "match-any-scalar": (Filter(must=(Match("type", ("Pattern", "Insight")),)), "bd"),
    "match-mixed-types": (Filter(must=(Match("type", ("Decision", 5)),)), "ac"),
    "match-none-of-nothing": (Filter(must=(Match("type", ()),)), ""),
    "all-of-tags": (Filter(must=(Match("tags", ("alpha",)), Match("tags", ("beta",)))), "a"),
    "must-not": (Filter(must_not=(Match("type", ("Decision",)),)), "bde"),
    "is-null": (Filter(must=(IsNull("t_invalid"),)), "ade"),
    "still-valid": (
        Filter(must=(Filter(should=(IsNull("t_invalid"), Range("t_invalid", gt=NOW, kind="datetime"))),)),
        "abde",
    ),
    "should-top-level": (Filter(should=(Match("type", ("Pattern",)), Range("importance", lt=0.2))), "bc"),
    "float-gte": (Filter(must=(Range("importance", gte=0.5),)), "abd"),
    "float-between": (Filter(must=(Range("importance", gt=0.3, lte=0.7),)), "bd"),
    "datetime-gt-offset": (
        Filter(must=(Range("timestamp", gt="2025-01-01T00:00:00+00:00", kind="datetime"),)),
        "bcde",
    ),
    "datetime-lt": (Filter(must=(Range("timestamp", lt="2025-01-01T00:15:00+00:00", kind="datetime"),)), "a"),
    "datetime-window": (
        Filter(
            must=(
                Range(
                    "timestamp", gte="2025-01-01T01:00:00+01:00", lte="2025-02-01T00:00:00Z", kind="datetime"
                ),
            )
        ),
        "ace",
    ),
    "has-id": (Filter(must=(HasId((NAMES["a"], NAMES["c"], uid(999))),)), "ac"),
    "combined": (Filter(must=(Match("type", ("Decision",)),), must_not=(HasId((NAMES["a"],)),)), "c"),
}


@pytest.fixture(scope="module", params=["edge", "qdrant"])
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VectorStore]:
    """A read-only corpus shared by the filter tests (creating a shard per case is the slow part)."""
    backend = Backend(request.param, tmp_path_factory.mktemp(f"corpus-{request.param}"))
    store = backend.open()
    store.ensure_collection(DIM)
    store.upsert(
        [
            VectorPoint(id=NAMES[name], vector=[1.0, 0.1 * i, 0.0, 0.0], payload={"rev": 1, **fields})
            for i, (name, fields) in enumerate(CORPUS.items())
        ]
    )
    yield store
    store.close()


@pytest.mark.parametrize("case", list(FILTER_CASES))
def test_filters(corpus: VectorStore, case: str) -> None:
    flt, expected_names = FILTER_CASES[case]
    expected = {NAMES[n] for n in expected_names}
    assert ids_of(corpus.scroll(flt, limit=100)[0]) == expected
    assert corpus.count(flt) == len(expected)
    assert ids_of(corpus.search([1, 0, 0, 0], limit=100, flt=flt)) == expected


def test_match_on_booleans_is_refused(corpus: VectorStore) -> None:
    with pytest.raises(ValueError):
        corpus.count(Filter(must=(Match("flag", (True,)),)))


def test_count(corpus: VectorStore) -> None:
    assert corpus.count() == len(CORPUS)
    assert corpus.count(None) == len(CORPUS)
    assert corpus.count(Filter(must=(Match("tags", ("beta",)),))) == 2
    # The estimate from the payload index: exact for one indexed condition on a small store.
    assert corpus.count(Filter(must=(Match("tags", ("beta",)),)), exact=False) == 2
    assert corpus.count(exact=False) == len(CORPUS)


# --- scroll ---------------------------------------------------------------------------------------
def test_scroll_pages_cover_every_id_once_in_id_order(store: VectorStore) -> None:
    ids = [str(uuid.uuid4()) for _ in range(23)]
    store.upsert(
        [VectorPoint(id=i, vector=[1, n, 0, 0], payload={"rev": 1, "odd": n % 2}) for n, i in enumerate(ids)]
    )
    seen: list[str] = []
    offset: str | None = None
    pages = 0
    while True:
        records, offset = store.scroll(limit=5, offset=offset, with_vectors=True)
        pages += 1
        assert all(r.vector is not None and len(r.vector) == DIM for r in records)
        seen += [r.id for r in records]
        if offset is None:
            break
    assert pages == 5
    assert seen == sorted(ids, key=lambda i: uuid.UUID(i).int)

    odd = [r.id for r in store.iter_records(Filter(must=(Match("odd", (1,)),)), page=4)]
    assert sorted(odd) == sorted(i for n, i in enumerate(ids) if n % 2)
    assert len(odd) == len(set(odd))
    assert all(r.vector is None for r in store.iter_records(page=7))


def test_ordered_follows_a_float_or_datetime_index_and_the_filter(store: VectorStore) -> None:
    rows = [(0.9, "2025-01-03"), (0.2, "2025-01-05"), (0.5, "2025-01-01"), (0.7, "2025-01-04"), (0.5, None)]
    points = []
    for n, (importance, day) in enumerate(rows, start=1):
        payload: dict[str, object] = {"importance": importance, "tags": ["a" if n % 2 else "b"]}
        if day:
            payload["timestamp"] = f"{day}T00:00:00.000000+00:00"
        points.append(point(n, [1, n, 0, 0], **payload))
    store.upsert(points)
    assert [p.value for p in store.ordered(None, "importance", True, 10)] == [0.9, 0.7, 0.5, 0.5, 0.2]
    assert [p.value for p in store.ordered(None, "importance", False, 2)] == [0.2, 0.5]
    # A point without the field is left out; a datetime's order value is epoch microseconds.
    newest = store.ordered(None, "timestamp", True, 10)
    assert [p.id for p in newest] == [uid(2), uid(4), uid(1), uid(3)]
    assert newest[0].value == datetime(2025, 1, 5, tzinfo=UTC).timestamp() * 1_000_000
    only_a = store.ordered(Filter(must=(Match("tags", ("a",)),)), "timestamp", False, 10)
    assert [p.id for p in only_a] == [uid(3), uid(1)]
    assert store.ordered(None, "importance", True, 0) == []
    # Each point carries its payload's rev (-1 without one), read along the walk.
    store.upsert([point(1, [1, 1, 0, 0], importance=0.9, rev=7)])
    store.upsert([VectorPoint(id=uid(6), vector=[1, 6, 0, 0], payload={"importance": 0.95})])
    top = store.ordered(None, "importance", True, 3)
    assert [(p.id, p.rev) for p in top] == [(uid(6), -1), (uid(1), 7), (uid(4), 1)]
    assert [p.importance for p in top] == [0.95, 0.9, 0.7]  # read along too, for the ranked walk


def test_overwrite_payloads_keeps_vectors_and_respects_the_rev_guard(store: VectorStore) -> None:
    store.upsert(
        [
            VectorPoint(
                id=uid(1), vector=unit([1, 0, 0, 0]), payload={"rev": 2, "tags": ["a"]}, text="alpha"
            ),
            point(2, unit([0, 1, 0, 0]), rev=5, tags=["b"]),
        ]
    )
    store.overwrite_payloads(
        [
            VectorPoint(id=uid(1), vector=None, payload={"rev": 3, "tags": ["a", "new"]}),
            VectorPoint(id=uid(2), vector=None, payload={"rev": 4, "tags": ["stale"]}),  # older: kept out
            VectorPoint(id=uid(9), vector=None, payload={"rev": 1, "tags": ["ghost"]}),  # no point: none made
        ]
    )
    records = {r.id: r for r in store.retrieve([uid(1), uid(2), uid(9)], with_vectors=True)}
    assert set(records) == {uid(1), uid(2)}
    assert records[uid(1)].payload == {"rev": 3, "tags": ["a", "new"]}
    assert records[uid(1)].vector == pytest.approx(unit([1, 0, 0, 0]), abs=STORED)
    assert records[uid(2)].payload["tags"] == ["b"]
    assert [h.id for h in store.keyword_search("alpha", 5)] == [uid(1)]  # the text index stayed


def test_overwrite_payloads_replaces_the_keyword_vector_of_points_that_carry_text(store: VectorStore) -> None:
    store.upsert(
        [
            VectorPoint(id=uid(1), vector=unit([1, 0, 0, 0]), payload={"rev": 2}, text="playing my violin"),
            VectorPoint(id=uid(2), vector=unit([0, 1, 0, 0]), payload={"rev": 5}, text="reading a book"),
        ]
    )
    store.overwrite_payloads(
        [
            VectorPoint(
                id=uid(1),
                vector=None,
                payload={"rev": 3},
                text="playing my violin",
                context="stringed instrument",
            ),
            VectorPoint(id=uid(2), vector=None, payload={"rev": 4}, text="reading a stringed book"),  # older
            VectorPoint(id=uid(9), vector=None, payload={"rev": 1}, text="a stringed ghost"),  # no point
        ]
    )
    assert [h.id for h in store.keyword_search("stringed instrument", 5)] == [uid(1)]
    assert [h.id for h in store.keyword_search("violin", 5)] == [uid(1)]  # its own words stayed
    records = {r.id: r for r in store.retrieve([uid(1), uid(2), uid(9)], with_vectors=True)}
    assert set(records) == {uid(1), uid(2)}
    assert records[uid(1)].vector == pytest.approx(unit([1, 0, 0, 0]), abs=STORED)  # the dense vector kept
    assert records[uid(1)].payload["rev"] == 3
    assert records[uid(2)].payload["rev"] == 5


# --- concurrency and process ownership ------------------------------------------------------------
def test_concurrent_writes_and_reads(store: VectorStore) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(30):
                store.upsert([point(1000 * worker + n, [1, worker, n, 0], rev=n)])
                store.search([1, 0, 0, 0], limit=5)
                store.count()
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.count() == 120


def test_edge_shard_cannot_be_opened_twice(tmp_path: Path) -> None:
    # Edge locks the WAL per open shard, not per process, so a second store in the same process
    # is refused just like another process would be.
    path = str(tmp_path / "shard")
    first = EdgeVectorStore(path)
    first.ensure_collection(DIM)
    with pytest.raises(ConfigurationError, match="open in another process"):
        EdgeVectorStore(path)
    first.close()
    second = EdgeVectorStore(path)
    assert second.dimension() == DIM
    second.close()


def test_edge_drop_does_not_delete_a_shard_held_elsewhere(tmp_path: Path) -> None:
    path = str(tmp_path / "shard")
    early = EdgeVectorStore(path)  # opened before the shard exists, so it holds nothing yet
    owner = EdgeVectorStore(path)
    owner.ensure_collection(DIM)
    owner.upsert([point(1, [1, 0, 0, 0])])
    with pytest.raises(ConfigurationError):
        early.drop()
    assert owner.count() == 1
    owner.close()


# --- factory --------------------------------------------------------------------------------------
def test_factory_picks_the_backend(tmp_path: Path) -> None:
    edge = open_vector_store(Settings(data_dir=str(tmp_path), vector_backend="edge", qdrant_collection="c1"))
    assert isinstance(edge, EdgeVectorStore) and edge.backend == "edge"
    edge.ensure_collection(DIM)
    assert (tmp_path / "qdrant-edge" / "c1").is_dir()
    edge.close()

    local = open_vector_store(
        Settings(data_dir=str(tmp_path), vector_backend="auto", qdrant_path=str(tmp_path / "local"))
    )
    assert isinstance(local, QdrantVectorStore) and local.backend == "qdrant"
    local.close()


# --- keyword (BM25 sparse) channel ----------------------------------------------------------
def text_point(
    n: int, text: str, vector: list[float] | None = None, rev: int = 1, **payload: object
) -> VectorPoint:
    return VectorPoint(id=uid(n), vector=vector, payload={"rev": rev, **payload}, text=text)


def test_keyword_search_ranks_by_bm25_and_filters(store: VectorStore) -> None:
    store.upsert(
        [
            text_point(1, "the deploy pipeline failed on friday", tags=["ops"]),
            text_point(2, "postgres replication lag during the deploy", tags=["db"]),
            text_point(3, "lunch plans for friday", tags=["ops"]),
            text_point(4, "postgres postgres vacuum settings", tags=["db"]),
        ]
    )
    hits = store.keyword_search("postgres deploy", 10)
    assert [h.id for h in hits][:1] == [uid(2)]  # the only memory with both words
    assert {h.id for h in hits} == {uid(1), uid(2), uid(4)}
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    scoped = store.keyword_search("postgres deploy", 10, Filter(must=(Match("tags", ("ops",)),)))
    assert [h.id for h in scoped] == [uid(1)]
    assert store.keyword_search("the of and", 10) == []  # only stopwords: nothing to match


def test_idf_scope_changes_word_weights(store: VectorStore) -> None:
    # "alpha" is common in scope A and rare in scope B; scoped IDF must reflect that.
    points = [text_point(n, "alpha beta" if n < 4 else "alpha", tags=["a"]) for n in range(1, 5)]
    points += [text_point(n, "alpha gamma" if n == 10 else "gamma", tags=["b"]) for n in range(10, 14)]
    store.upsert(points)
    scope_b = Filter(must=(Match("tags", ("b",)),))
    scoped = store.keyword_search("alpha gamma", 10, scope_b, idf_scope=scope_b)
    assert scoped[0].id == uid(10)
    assert scoped[0].score > store.keyword_search("alpha gamma", 10, scope_b)[0].score


def test_one_tenants_word_weights_ignore_another_tenants_words(store: VectorStore) -> None:
    """A tenant's IDF scope: scores are the same whether or not another tenant's memories use
    the same words, and the same as an unscoped search while the tenant is alone in a store
    that has seen no delete (so an engine may leave the scope out then, but never once a second
    tenant is there: tests/integration/test_edge_tenant_mix.py)."""
    tenant_a = Filter(must=(Match("tenant", ("a",)),))
    store.upsert([text_point(n, ["alpha beta", "alpha", "gamma"][n % 3], tenant="a") for n in range(1, 7)])

    def scores(idf_scope: Filter | None) -> list[tuple[str, float]]:
        hits = store.keyword_search("alpha gamma", 10, tenant_a, idf_scope)
        return [(h.id, round(h.score, 5)) for h in hits]

    alone = scores(tenant_a)
    assert alone == scores(None)
    store.upsert([text_point(n, "alpha alpha", tenant="b") for n in range(20, 40)])
    assert scores(tenant_a) == alone
    assert scores(None) != alone  # the other tenant's "alpha" would have weighed in


def test_points_without_dense_vector(store: VectorStore) -> None:
    store.upsert(
        [text_point(1, "only words so far"), text_point(2, "words and a vector", vector=[1, 0, 0, 0])]
    )
    assert store.count() == 2
    assert [h.id for h in store.search([1, 0, 0, 0], 10)] == [uid(2)]  # dense search skips vectorless points
    assert {h.id for h in store.keyword_search("words", 10)} == {uid(1), uid(2)}
    store.upsert([text_point(1, "only words so far", vector=[0, 1, 0, 0], rev=2)])
    [record] = store.retrieve([uid(1)], with_vectors=True)
    assert record.vector is not None and abs(record.vector[1] - 1) < 1e-6
    assert {h.id for h in store.keyword_search("words", 10)} == {uid(1), uid(2)}


# --- payload_matches: the engines' filtering, decided in process ------------------------------
_TAGS = ["a", "a:b", "a:c", "d"]
_TIMES = ["2025-01-01T00:00:00+00:00", "2025-03-01T12:00:00+00:00", "2025-06-01T00:00:00Z", None]


def _filter_payload(n: int) -> dict[str, object]:
    """A payload of the shape recall filters on, varied by `n` (absent and null fields too)."""
    tags = [t for i, t in enumerate(_TAGS) if (n >> i) & 1]
    payload: dict[str, object] = {
        "tenant": ["t1", "t2"][n % 2],
        "state": ["active", "active", "deleted"][n % 3],
        "tags": tags,
        "tag_prefixes": sorted({t.split(":")[0] for t in tags} | set(tags)),
        "importance": [0.0, 0.25, 0.5, 1.0][n % 4],
        "rev": n,
    }
    if (stamp := _TIMES[n % 4]) is not None:
        payload["timestamp"] = stamp
    if n % 5 == 0:
        payload["t_valid"] = None
    elif n % 5 == 1:
        payload["t_valid"] = _TIMES[(n // 5) % 3]
    return payload


_fields = st.sampled_from(["tenant", "state", "tags", "tag_prefixes"])
_values = st.sampled_from(["t1", "t2", "active", "deleted", *_TAGS, "zz"])
_moments = st.sampled_from([t for t in _TIMES if t] + ["2025-03-01T12:00:00.000000+00:00"])
_conditions = st.one_of(
    st.builds(Match, _fields, st.lists(_values, min_size=1, max_size=3, unique=True).map(tuple)),
    st.builds(
        Range,
        st.just("importance"),
        gte=st.sampled_from([None, 0.25, 0.5]),
        lt=st.sampled_from([None, 0.5, 1.0]),
    ),
    st.builds(
        Range,
        st.sampled_from(["timestamp", "t_valid"]),
        gt=st.one_of(st.none(), _moments),
        lte=st.one_of(st.none(), _moments),
        kind=st.just("datetime"),
    ),
    st.builds(IsNull, st.sampled_from(["tags", "t_valid", "timestamp"])),
    st.builds(HasId, st.lists(st.integers(0, 39).map(uid), max_size=4).map(tuple)),
)
_filters = st.recursive(
    st.builds(
        Filter,
        must=st.lists(_conditions, max_size=3).map(tuple),
        should=st.lists(_conditions, max_size=2).map(tuple),
        must_not=st.lists(_conditions, max_size=2).map(tuple),
    ),
    lambda inner: st.builds(
        Filter,
        must=st.lists(st.one_of(_conditions, inner), max_size=2).map(tuple),
        must_not=st.lists(inner, max_size=1).map(tuple),
    ),
    max_leaves=6,
)


@hypothesis_settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(flt=_filters)
def test_payload_matches_decides_as_the_engine_filters(store: VectorStore, flt: Filter) -> None:
    """A listing places memories the store does not hold yet with `payload_matches`; over any
    filter it must keep exactly the points the engine's own filtering keeps."""
    payloads = {uid(n): _filter_payload(n) for n in range(40)}
    if store.count() == 0:
        store.upsert([VectorPoint(i, [1.0, 0.0, 0.0, 0.0], p) for i, p in payloads.items()])
    kept, _ = store.scroll(flt, limit=100)
    assert {r.id for r in kept} == {i for i, p in payloads.items() if payload_matches(flt, i, p)}


# Any importance a client may send, and any time in the rank's span and beyond its ends.
_importances = st.floats(min_value=0.0, max_value=1.0)
_moments = st.datetimes(
    min_value=datetime(1000, 1, 1), max_value=datetime(9000, 12, 31), timezones=st.just(UTC)
)


@hypothesis_settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(st.tuples(_importances, _moments), min_size=1, max_size=30))
def test_importances_and_ranks_read_back_as_written(
    store: VectorStore, values: list[tuple[float, datetime]]
) -> None:
    """A payload number comes back as it went in, so a point written from a client's request, one
    rebuilt from the graph and one restored from an archive of either hold the same payload
    (Qdrant Edge misreads about one double in five with 17 digits or below 1e-20 by one unit in
    the last place; what validation and `rank_of` make is never such a number)."""
    written = {}
    for n, (importance, moment) in enumerate(values):
        kept = as_unit_float(importance)
        written[uid(n)] = {"rev": 1, "importance": kept, "rank": rank_of(kept, moment.isoformat())}
    store.upsert([VectorPoint(i, [1.0, 0.0, 0.0, 0.0], p) for i, p in written.items()], rewrite=True)
    read = {r.id: r.payload for r in store.retrieve(list(written))}
    assert read == written
    for payload in written.values():  # the graph returns 15 significant digits
        assert float(f"{payload['importance']:.15g}") == payload["importance"]
        assert payload["rank"] >= payload["importance"]
