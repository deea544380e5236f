"""Pure parts of the vector-index growth benchmark (scripts/bench/vector_index_growth.py): what
counts as a spike of the server's memory, and how the report groups them by quarter."""

from __future__ import annotations

import numpy as np

from scripts.bench.vector_index_growth import quarters, recall_at_10, spikes


def _samples(levels: list[float]) -> list[tuple[float, float]]:
    return [(i * 0.02, level) for i, level in enumerate(levels)]


def test_a_spike_is_memory_taken_and_given_back_and_steady_growth_is_not() -> None:
    # Growth of 1 MB a sample (a store filling up), with one excursion of 100 MB over 3 samples.
    levels = [100.0 + i for i in range(40)]
    for i in (20, 21, 22):
        levels[i] += 100.0
    marks = [(i * 0.02, (i + 1) * 10) for i in range(40)]
    found = spikes(_samples(levels), marks, gap=5, threshold=20.0)
    assert len(found) == 1  # the run of three high samples is one spike, its largest excess
    assert found[0]["rss_mb"] == levels[20]  # the first of the three: each is 95 MB above
    assert found[0]["excess_mb"] == 95.0  # the neighbours 5 samples away (grown 5 MB since)
    assert found[0]["written"] == 220  # the first batch written after the spike's sample
    assert spikes(_samples([100.0 + 3 * i for i in range(40)]), marks, gap=5, threshold=20.0) == []


def test_quarters_report_rate_spike_size_per_vector_and_spacing() -> None:
    size = 4000
    marks = [(n / 1000, n) for n in range(100, size + 1, 100)]  # 1,000 writes a second
    found = [
        {"t": 0.0, "rss_mb": 0.0, "excess_mb": 1.0, "written": 2100},
        {"t": 0.0, "rss_mb": 0.0, "excess_mb": 2.0, "written": 2600},
        {"t": 0.0, "rss_mb": 0.0, "excess_mb": 3.0, "written": 2900},
    ]
    rows = quarters(size, marks, found)
    assert [r["spikes"] for r in rows] == [0, 0, 3, 0]
    assert all(abs(r["writes_per_s"] - 1000.0) < 1e-6 for r in rows)
    third = rows[2]
    assert third["spike_mb_median"] == 2.0 and third["spike_mb_max"] == 3.0
    assert third["vectors_between_spikes"] == 400  # median of 500 and 300
    assert third["bytes_per_vector_stored"] == round(2.0 * 2**20 / 2600)
    assert rows[0]["spike_mb_median"] is None


def test_recall_at_10_counts_the_exact_nearest_among_the_best_ten_answered() -> None:
    rng = np.random.default_rng(3)
    stored = rng.standard_normal((200, 8)).astype(np.float32)
    query = stored[17] + 0.01  # its nearest is 17, then the next nine by cosine
    unit = stored / np.linalg.norm(stored, axis=1, keepdims=True)
    order = np.argsort(-(unit @ (query / np.linalg.norm(query)))).tolist()
    exact, others = order[:10], order[10:]
    # Rows from two indexes, (id, cosine distance): the best 10 by distance are what counts.
    perfect = [(i, 0.1 + k / 100) for k, i in enumerate(exact)] + [(i, 0.9) for i in others[:30]]
    half = [(i, 0.1) for i in exact[:5]] + [(i, 0.2) for i in others[:5]] + [(i, 0.3) for i in exact[5:]]
    assert recall_at_10([perfect], stored, np.array([query])) == 1.0
    assert recall_at_10([half], stored, np.array([query])) == 0.5
    assert recall_at_10([perfect, half], stored, np.array([query, query])) == 0.75
