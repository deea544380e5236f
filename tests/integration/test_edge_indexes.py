"""The Qdrant Edge shard's payload indexes: every field recall filters on and listings order by,
and none that only costs memory (RETIRED_INDEXES: a shard written by an earlier version loses
them when it opens, and keeps its points and the rev guard)."""

from __future__ import annotations

import uuid
from pathlib import Path

import qdrant_edge as qe

from automem.stores.vectors import PAYLOAD_INDEXES, RETIRED_INDEXES, VectorPoint
from automem.stores.vectors.qdrant_edge import EdgeVectorStore

DIM = 4


def _point(i: int, rev: int) -> VectorPoint:
    vector = [1.0, float(i), 0.0, 0.5]
    return VectorPoint(id=str(uuid.UUID(int=i + 1)), vector=vector, payload={"rev": rev, "tags": [f"t{i}"]})


def test_a_new_shard_indexes_the_fields_recall_and_listings_use_and_no_retired_one(tmp_path: Path) -> None:
    store = EdgeVectorStore(str(tmp_path / "shard"))
    store.ensure_collection(DIM)
    assert store.payload_indexes() == set(PAYLOAD_INDEXES)
    assert "rev" in RETIRED_INDEXES
    store.close()


def test_a_retired_index_is_dropped_when_an_older_shard_opens(tmp_path: Path) -> None:
    path = str(tmp_path / "shard")
    store = EdgeVectorStore(path)
    store.ensure_collection(DIM)
    store.upsert([_point(i, rev=2) for i in range(3)])
    store.close()
    # What earlier versions built: an integer index on `rev`, added to the shard on disk.
    shard = qe.EdgeShard.load(path)
    shard.update(qe.UpdateOperation.create_field_index("rev", qe.PayloadSchemaType.Integer))
    shard.flush()
    shard.close()

    store = EdgeVectorStore(path)
    assert "rev" in store.payload_indexes()
    store.ensure_collection(DIM)
    assert store.payload_indexes() == set(PAYLOAD_INDEXES)
    assert store.count() == 3
    # The rev guard reads each point's rev without the index: an older write is refused, a
    # newer one replaces.
    store.upsert([VectorPoint(id=_point(0, 1).id, vector=[0.0, 0.0, 1.0, 0.0], payload={"rev": 1})])
    store.upsert([VectorPoint(id=_point(1, 3).id, vector=[0.0, 0.0, 1.0, 0.0], payload={"rev": 3})])
    revs = {r.id: r.payload["rev"] for r in store.retrieve([_point(i, 0).id for i in range(3)])}
    assert revs == {_point(0, 0).id: 2, _point(1, 0).id: 3, _point(2, 0).id: 2}
    store.close()
