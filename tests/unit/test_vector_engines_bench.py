"""Pure parts of the vector-engines benchmark (scripts/bench/vector_engines.py): the true answers
it scores every engine against, streamed chunk by chunk, must be the whole store's top k."""

from __future__ import annotations

import numpy as np

from scripts.bench.vector_engines import (
    CHUNK,
    K_FILTERED,
    K_PLAIN,
    KINDS,
    QUERIES,
    chunks,
    exact_answers,
    queries,
    score,
)


def _whole_store(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts = list(chunks(size))
    return (
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        np.concatenate([p[3] for p in parts]),
    )


def test_the_streamed_answers_are_the_whole_stores_top_k() -> None:
    size = 2 * CHUNK + 500  # three chunks, the last one short: the merge across chunks is exercised
    vectors, projects, sources = _whole_store(size)
    assert len(vectors) == size
    truth = exact_answers(size)
    qv, qp, qs = queries()
    for q in range(QUERIES):
        scores = vectors @ qv[q]
        masks = {
            "plain": (K_PLAIN, np.ones(size, dtype=bool)),
            "project": (K_FILTERED, projects == qp[q]),
            "project+source": (K_FILTERED, (projects == qp[q]) & (sources == qs[q])),
        }
        for kind, (k, mask) in masks.items():
            idx = np.nonzero(mask)[0]
            expected = set(idx[np.argsort(-scores[idx])[:k]].tolist())
            assert truth[kind][q] == expected, (kind, q)


def test_the_data_is_the_same_every_time() -> None:
    first, second = list(chunks(1500)), list(chunks(1500))
    assert [c[0] for c in first] == [0, CHUNK]
    for a, b in zip(first, second, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a[1:], b[1:], strict=True))
    norms = np.linalg.norm(first[0][1], axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)


def test_recall_counts_the_true_ids_found() -> None:
    truth = {kind: [{1, 2, 3, 4}] * QUERIES for kind in KINDS}
    searches = {kind: {"p50_ms": 1.0, "ids": [[1, 2, 9]] * QUERIES} for kind in KINDS}
    score(searches, truth)
    for kind in KINDS:
        assert searches[kind]["recall"] == 0.5
        assert searches[kind]["returned"] == 3
        assert "ids" not in searches[kind]
