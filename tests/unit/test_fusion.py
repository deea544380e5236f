"""One fusion over every channel: normalisation, weights, priors, the reachable floor, order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from automem.memories import content_hash
from automem.recall.fusion import (
    CONTEXT_WEIGHT,
    IMPORTANCE_WEIGHT,
    RELEVANCE_SHARE,
    TAG_WEIGHT,
    TIME_WEIGHT,
    Candidate,
    CandidatePool,
    final_scores,
    match_type,
    ranked,
    reachable_floor,
    read_reachable,
    relevance,
)
from tests.unit.recall_doubles import assert_below_the_floor_stays_out, flagged_rows, limits, memory


def pool_of(vector: list[tuple[str, float]], keyword: list[tuple[str, float]]) -> CandidatePool:
    pool = CandidatePool()
    pool.add("vector", vector)
    pool.add("keyword", keyword)
    return pool


def test_a_channel_keeps_each_candidates_best_score_and_rank() -> None:
    pool = CandidatePool()
    pool.add("vector", [("a", 0.9), ("b", 0.5), ("a", 0.2)])
    assert pool.by_id["a"].raw == {"vector": 0.9} and pool.by_id["a"].rank == {"vector": 1}
    assert pool.by_id["b"].rank == {"vector": 2} and len(pool) == 2


def test_cosine_is_kept_and_keyword_is_divided_by_the_best_keyword_score() -> None:
    pool = pool_of([("a", 0.8), ("b", 0.4)], [("b", 12.0), ("c", 3.0)])
    relevance(pool)
    a, b, c = (pool.by_id[i].components for i in "abc")
    assert a == {"vector": 0.8, "keyword": 0.0, "relevance": pytest.approx(0.4)}
    assert b["keyword"] == 1.0 and b["relevance"] == pytest.approx(0.5 * 0.4 + 0.5 * 1.0)
    assert c["keyword"] == 0.25 and c["relevance"] == pytest.approx(0.125)


def test_a_channel_with_no_hits_does_not_dilute_the_other() -> None:
    pool = pool_of([("a", 0.6)], [])
    relevance(pool)
    assert pool.by_id["a"].components == {"vector": 0.6, "relevance": pytest.approx(0.6)}


def test_negative_cosine_counts_as_zero() -> None:
    pool = pool_of([("a", -0.3), ("b", 0.5)], [])
    relevance(pool)
    assert pool.by_id["a"].components["relevance"] == 0.0


@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(-1, 1)), max_size=8),
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(0, 50)), max_size=8),
)
def test_relevance_always_lies_in_0_1(
    vector: list[tuple[str, float]], keyword: list[tuple[str, float]]
) -> None:
    pool = pool_of(vector, keyword)
    relevance(pool)
    for candidate in pool.values():
        assert 0.0 <= candidate.components["relevance"] <= 1.0


def scored(relevance_value: float, importance: float, tags: list[str] | None = None) -> Candidate:
    candidate = Candidate(f"m{relevance_value}-{importance}-{','.join(tags or [])}")
    candidate.components["relevance"] = relevance_value
    candidate.doc = memory(candidate.id, importance=importance, tags=tags or [])
    return candidate


def test_the_final_score_mixes_relevance_with_importance_and_context() -> None:
    pool = CandidatePool()
    plain, tagged = scored(0.8, 0.5), scored(0.8, 0.5, ["proj:x"])
    pool.by_id = {plain.id: plain, tagged.id: tagged}
    final_scores(pool, ("proj",), listing=False)
    assert plain.score == pytest.approx(RELEVANCE_SHARE * 0.8 + IMPORTANCE_WEIGHT * 0.5)
    assert tagged.score == pytest.approx(plain.score + CONTEXT_WEIGHT)
    assert tagged.components["context"] == 1.0 and plain.components["context"] == 0.0


WEEKEND = (date(2023, 3, 18), date(2023, 3, 20))


def test_a_memory_of_the_named_time_gets_the_time_prior() -> None:
    """By its timestamp, or by a date enrichment resolved in its words; the others get none, and
    relevance gives up the prior's share only when a time is named."""
    that_day, told_later, other = scored(0.8, 0.5), scored(0.8, 0.5, ["a"]), scored(0.8, 0.5, ["b"])
    that_day.doc = memory("d", importance=0.5, timestamp="2023-03-19T07:00:00Z")
    told_later.doc = memory(
        "t",
        importance=0.5,
        timestamp="2023-03-20T09:00:00Z",
        metadata={"enrichment": {"dates": [{"start": "2023-03-18", "end": "2023-03-20", "label": "w"}]}},
    )
    other.doc = memory("o", importance=0.5, timestamp="2023-03-20T00:00:00Z")  # the Monday after
    pool = CandidatePool()
    pool.by_id = {c.id: c for c in (that_day, told_later, other)}
    final_scores(pool, (), listing=False, when=WEEKEND)
    share = RELEVANCE_SHARE - TIME_WEIGHT
    assert other.score == pytest.approx(share * 0.8 + IMPORTANCE_WEIGHT * 0.5)
    assert that_day.score == told_later.score == pytest.approx(other.score + TIME_WEIGHT)
    assert [c.components["time"] for c in (that_day, told_later, other)] == [1.0, 1.0, 0.0]


@given(flagged_rows, limits)
def test_nothing_below_the_reachable_floor_can_enter_the_top_with_a_named_time(
    rows: list[tuple[float, float, bool]], limit: int
) -> None:
    pool = CandidatePool()
    for n, (rel, importance, of_time) in enumerate(rows):
        candidate = scored(rel, importance)
        candidate.id = f"m{n}"
        stamp = "2023-03-19T07:00:00Z" if of_time else "2023-01-01T00:00:00Z"
        candidate.doc = memory(candidate.id, importance=importance, timestamp=stamp)
        pool.by_id[candidate.id] = candidate
    floor = reachable_floor(pool, limit, context_tags=False, when=WEEKEND)
    final_scores(pool, (), listing=False, when=WEEKEND)
    assert_below_the_floor_stays_out(pool, floor, limit)


def test_graph_evidence_counts_when_it_beats_the_channels() -> None:
    candidate = scored(0.2, 0.0)
    candidate.expanded = 0.6
    pool = CandidatePool()
    pool.by_id = {candidate.id: candidate}
    final_scores(pool, (), listing=False)
    assert candidate.score == pytest.approx(RELEVANCE_SHARE * 0.6)
    assert candidate.components["graph"] == 0.6 and candidate.channels == ["graph"]


def test_a_listing_ranks_by_importance() -> None:
    low, high = scored(0.0, 0.2), scored(0.0, 0.9)
    pool = CandidatePool()
    pool.by_id = {low.id: low, high.id: high}
    final_scores(pool, (), listing=True)
    assert (low.score, high.score) == (0.2, 0.9)


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=20), st.integers(1, 10))
def test_nothing_below_the_reachable_floor_can_enter_the_top(
    pairs: list[tuple[float, float]], limit: int
) -> None:
    """The floor's promise: a candidate whose relevance is below it scores below the limit-th
    best, whatever its priors (the hydration stage drops such candidates unread)."""
    pool = CandidatePool()
    for n, (rel, importance) in enumerate(pairs):
        candidate = scored(rel, importance, ["ctx"] if n % 2 else [])
        candidate.id = f"m{n}"
        pool.by_id[candidate.id] = candidate
    floor = reachable_floor(pool, limit, context_tags=True)
    final_scores(pool, ("ctx",), listing=False)
    assert_below_the_floor_stays_out(pool, floor, limit)


def test_no_floor_when_sorting_by_time_or_with_few_candidates() -> None:
    pool = CandidatePool()
    pool.by_id = {c.id: c for c in (scored(0.9, 0.5), scored(0.1, 0.5))}
    assert reachable_floor(pool, 1, False, sort="time_desc") == 0.0
    assert reachable_floor(pool, 5, False) == 0.0


def test_ties_go_to_the_newest_and_time_sorts_by_timestamp() -> None:
    old, new = Candidate("a", score=0.5), Candidate("b", score=0.5)
    old.doc = memory("a", timestamp="2024-01-01T00:00:00.000000+00:00")
    new.doc = memory("b", timestamp="2025-01-01T00:00:00.000000+00:00")
    assert [c.id for c in ranked([old, new], "score")] == ["b", "a"]
    assert [c.id for c in ranked([new, old], "time_asc")] == ["a", "b"]
    assert [c.id for c in ranked([old, new], "time_desc")] == ["b", "a"]


def test_match_type_names_how_a_candidate_was_found() -> None:
    both = Candidate("a", raw={"vector": 0.5, "keyword": 1.0})
    graph_only = Candidate("b", expanded=0.3)
    replaced = Candidate("c", raw={"vector": 0.5}, replaces="old")
    assert [match_type(c) for c in (both, graph_only, replaced)] == ["hybrid", "graph", "state_replacement"]
    assert match_type(Candidate("d", raw={"keyword": 2.0})) == "keyword"
    assert match_type(Candidate("e")) == "listing"


def _top_scores(pool: CandidatePool, bonus: dict[str, float], share: float, need: int) -> list[float]:
    """The best `need` final scores (before graph evidence) of the read candidates, identical
    contents counted once, as the cut counts them."""
    scored = sorted(
        (
            share * c.components["relevance"]
            + IMPORTANCE_WEIGHT * float(c.doc.importance or 0.0)
            + bonus[c.id],
            c.doc.content,
        )
        for c in pool.values()
        if c.doc is not None
    )
    seen: set[str] = set()
    out: list[float] = []
    for score, content in reversed(scored):
        if content not in seen:
            seen.add(content)
            out.append(round(score, 9))
    return out[:need]


# Hand-made: the winner lies beyond the first read (ten seeds and need + 3 by score have more
# relevance), within the priors' reach of the floor: by its importance, and by the context boost.
_BEYOND = [(0.6, 0.0, 1, 1, 1), *[(0.59 - n * 0.001, 0.0, 1, 2 + n % 5, 1) for n in range(39)]]


@settings(max_examples=300)
@example([*_BEYOND, (0.52, 1.0, 1, 0, 0)], 1, 2 * CONTEXT_WEIGHT, False)
@example([*_BEYOND, (0.495, 0.0, 1, 0, 0)], 1, 2 * CONTEXT_WEIGHT, False)
@example([*_BEYOND, (0.52, 1.0, 1, 0, 0)], 1, 2 * CONTEXT_WEIGHT, True)
# Found by hypothesis: the best by relevance fail the filter, the one that matches lies beyond
# the first cut.
@example([*[(0.5, 0.0, 0, 0, 0)] * 5, (0.5, 0.0, 1, 0, 0), (0.5625, 0.0, 0, 0, 0)], 1, 0.0, False)
@given(
    st.lists(
        # Relevances bunched as a search's are: many within the priors' reach of each other.
        st.tuples(
            st.floats(0.5, 0.6), st.floats(0, 1), st.integers(0, 9), st.integers(0, 6), st.integers(0, 4)
        ),
        min_size=1,
        max_size=90,
    ),
    st.integers(1, 12),
    st.sampled_from([0.0, CONTEXT_WEIGHT, 2 * CONTEXT_WEIGHT]),
    st.booleans(),
)
def test_reading_only_the_reachable_candidates_keeps_the_answer(
    rows: list[tuple[float, float, int, int, int]], need: int, headroom: float, named: bool
) -> None:
    """Whatever the relevances, importances, filter and duplicates: the candidates left unread
    could not have made the best `need` (the other priors add at most `headroom`). Also when a
    tag is named (`named`): recall learns that from the memories it read, then reads again with
    the tag prior's share and headroom, which the final scores apply (a third carry the tag)."""
    share = RELEVANCE_SHARE - TAG_WEIGHT if named else RELEVANCE_SHARE
    docs = {
        f"m{i}": memory(f"m{i}", importance=imp, content=f"content {dup}")
        for i, (_, imp, _, dup, _) in enumerate(rows)
    }
    eligible = {f"m{i}" for i, row in enumerate(rows) if row[2]}  # a tenth fail the filter
    bonus = {f"m{i}": headroom if row[4] == 0 else 0.0 for i, row in enumerate(rows)}  # a fifth have it
    if named:
        bonus = {i: b + (TAG_WEIGHT if int(i[1:]) % 3 == 0 else 0.0) for i, b in bonus.items()}

    def fresh_pool() -> CandidatePool:
        pool = CandidatePool()
        for i, (rel, *_rest) in enumerate(rows):
            pool.get(f"m{i}").components["relevance"] = rel
        return pool

    def read_into(pool: CandidatePool) -> Callable[[list[str]], None]:
        def read(ids: list[str]) -> None:
            for memory_id in ids:
                if memory_id in eligible:
                    pool.by_id[memory_id].doc = docs[memory_id]
                else:
                    del pool.by_id[memory_id]

        return read

    everything = fresh_pool()
    read_into(everything)(list(everything.by_id))
    reachable = fresh_pool()
    importance = {i: float(d.importance or 0.0) for i, d in docs.items()}
    if named:  # first as if none were named, keeping the unread
        plain = RELEVANCE_SHARE
        read_reachable(reachable, lambda ids: importance, read_into(reachable), need, plain, headroom, False)
        headroom += TAG_WEIGHT
    read_reachable(reachable, lambda ids: importance, read_into(reachable), need, share, headroom)
    assert all(c.doc is not None for c in reachable.values())
    assert _top_scores(reachable, bonus, share, need) == _top_scores(everything, bonus, share, need)


@given(st.text(alphabet=" \n\tab\u00e9e\u0301", max_size=12))
def test_identical_contents_share_the_stored_hash_or_the_computed_one(content: str) -> None:
    """Recall reads each memory's stored content_hash and counts contents with the same one
    once; a memory stored without one is hashed the way every write hashes."""
    stored, unhashed = Candidate("a"), Candidate("b")
    stored.doc = memory("a", content=content, content_hash=content_hash(content))
    unhashed.doc = memory("b", content=" " + content + "\n")
    assert stored.content_key() == unhashed.content_key() == content_hash(content)
