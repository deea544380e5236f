"""Half-precision vectors in the Qdrant Edge shard (AUTOMEM_EDGE_VECTOR_DATATYPE): a new shard
takes the configured type, a shard on disk keeps its own until a restore remakes it, and a search
over float16 vectors ranks as the exact cosine does but for near-ties."""

from __future__ import annotations

import itertools
import math
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automem.settings import Settings
from automem.stores.vectors import VectorPoint, open_vector_store
from automem.stores.vectors.qdrant_edge import HALF_PRECISION, EdgeVectorStore

DIM = 16
STORED = HALF_PRECISION
TIE = 2 * STORED  # two memories whose true scores differ by less may swap places


def _point(i: int, vector: list[float]) -> VectorPoint:
    return VectorPoint(id=str(uuid.UUID(int=i + 1)), vector=vector, payload={"rev": 1})


def test_a_new_shard_takes_the_configured_type(tmp_path: Path) -> None:
    half = EdgeVectorStore(str(tmp_path / "half"))
    half.ensure_collection(DIM)
    full = EdgeVectorStore(str(tmp_path / "full"), "float32")
    full.ensure_collection(DIM)
    assert half.stored_datatype() == "float16"
    assert full.stored_datatype() == "float32"
    for store in (half, full):
        store.close()


def test_the_setting_reaches_the_shard(tmp_path: Path) -> None:
    for datatype in ("float16", "float32"):
        store = open_vector_store(
            Settings(data_dir=str(tmp_path / datatype), vector_backend="edge", edge_vector_datatype=datatype)
        )
        store.ensure_collection(DIM)
        assert isinstance(store, EdgeVectorStore) and store.stored_datatype() == datatype
        store.close()


def test_a_shard_on_disk_keeps_its_type_until_it_is_remade(tmp_path: Path) -> None:
    path = str(tmp_path / "shard")
    old = EdgeVectorStore(path, "float32")
    old.ensure_collection(DIM)
    old.upsert([_point(0, [1.0] + [0.0] * (DIM - 1))])
    old.close()
    reopened = EdgeVectorStore(path, "float16")
    reopened.ensure_collection(DIM)
    assert reopened.stored_datatype() == "float32"
    assert [h.score for h in reopened.search([1.0] + [0.0] * (DIM - 1), 1)] == pytest.approx([1.0])
    reopened.drop()  # what a restore does before it refills the vectors
    reopened.ensure_collection(DIM)
    assert reopened.stored_datatype() == "float16" and reopened.count() == 0
    reopened.close()


unit_vectors = st.lists(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIM, max_size=DIM).filter(
        lambda v: math.hypot(*v) > 0.1
    ),
    min_size=2,
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(vectors=unit_vectors, query=unit_vectors.map(lambda vs: vs[0]))
def test_a_half_precision_search_ranks_as_the_exact_cosine_but_for_near_ties(
    vectors: list[list[float]], query: list[float]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = EdgeVectorStore(str(Path(tmp) / "shard"))
        store.ensure_collection(DIM)
        store.upsert([_point(i, v) for i, v in enumerate(vectors)])
        hits = store.search(query, len(vectors))
        store.close()
    matrix = np.array(vectors) / np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = matrix @ (np.array(query) / np.linalg.norm(query))
    index = {str(uuid.UUID(int=i + 1)): i for i in range(len(vectors))}
    assert len(hits) == len(vectors)
    for hit in hits:
        assert abs(hit.score - exact[index[hit.id]]) <= STORED
    order = [exact[index[h.id]] for h in hits]
    for above, below in itertools.pairwise(order):
        assert above >= below - TIE
