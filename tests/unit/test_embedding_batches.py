"""How the local model's texts are grouped into runs: by length, within a token budget."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from automem.embedding.fastembed import plan_batches


def test_paragraphs_run_in_small_groups_and_short_lines_in_large_ones() -> None:
    lengths = [200] * 10 + [30] * 40
    batches = plan_batches(lengths, 1024)
    assert [len(b) for b in batches] == [34, 6, 5, 5]  # 34 x 30 = 1,020; then 5 x 200 = 1,000
    assert batches[0] == list(range(10, 44))


def test_a_text_longer_than_the_budget_runs_alone() -> None:
    assert plan_batches([300, 5, 300], 256) == [[1], [0], [2]]


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=512), max_size=300),
    budget=st.integers(min_value=1, max_value=4096),
)
def test_every_text_runs_once_shortest_first_and_within_the_budget(lengths: list[int], budget: int) -> None:
    batches = plan_batches(lengths, budget)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert len(batch) == 1 or padded <= budget
    for batch, following in pairwise(batches):
        # Greedy: the next run's first text did not fit in this one.
        assert (len(batch) + 1) * lengths[following[0]] > budget
