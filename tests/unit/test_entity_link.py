"""Query-side entity linking: which runs of a query are looked up, how specific an entity is,
how linked entities enter the pool and the final score."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from automem.recall.entity_link import (
    LINK_WEIGHT,
    LinkedEntity,
    admit_linked,
    fold,
    named_tags,
    query_slugs,
    specificity,
)
from automem.recall.fusion import (
    IMPORTANCE_WEIGHT,
    RELEVANCE_SHARE,
    TAG_WEIGHT,
    Candidate,
    CandidatePool,
    final_scores,
    reachable_floor,
)
from tests.unit.recall_doubles import assert_below_the_floor_stays_out, flagged_rows, limits, memory


def test_a_query_is_looked_up_as_every_run_that_could_be_a_name() -> None:
    slugs = query_slugs("Which Next.js version did José Ruiz pick for project Apollo?")
    assert {"next-js", "jose", "jose-ruiz", "apollo", "project-apollo"} <= set(slugs)
    # No run starts or ends with a common word, so no "did-jose" and no lone "which".
    assert not [s for s in slugs if s.startswith(("which", "did", "for-")) or s.endswith("-for")]
    assert "university-of-oxford" in query_slugs("a degree from the University of Oxford")


def test_a_possessive_names_its_owner() -> None:
    assert {"melanie", "kids", "melanie-kids"} <= set(query_slugs("What do Melanie's kids like?"))
    assert {"john", "mom"} <= set(query_slugs("What did John\u2019s mom say?"))
    assert "james" in query_slugs("Where is James' office?")
    assert not [s for s in query_slugs("What do Melanie's kids like?") if s.endswith("-s")]


def test_folding_matches_the_slugs_enrichment_writes() -> None:
    assert fold("José Ruiz") == "jose-ruiz"
    assert fold("Next.js") == "next-js"
    assert fold("  Acme   Corp ") == "acme-corp"


@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_an_entity_is_less_specific_the_more_memories_mention_it(a: int, b: int) -> None:
    assert specificity(1) == 1.0
    assert 0 < specificity(max(a, b)) <= specificity(min(a, b)) <= 1.0


def _linked(mentions: int, memories: list[str], slug: str = "kafka") -> LinkedEntity:
    return LinkedEntity(f"t:tool:{slug}", "tool", slug, slug.title(), mentions, memories)


def test_a_rare_entitys_memories_join_the_pool_with_inherited_relevance() -> None:
    pool = CandidatePool()
    pool.add("vector", [("strong", 0.9)])
    pool.by_id["strong"].components["relevance"] = 0.9
    tags = admit_linked(pool, [_linked(2, ["strong", "new"])])
    assert tags == {"entity:tool:kafka": specificity(2)}
    assert pool.by_id["new"].components["relevance"] == LINK_WEIGHT * specificity(2)
    assert pool.by_id["strong"].components["relevance"] == 0.9  # the better evidence stays


def test_the_entity_prior_goes_to_memories_that_mention_a_named_entity() -> None:
    pool = CandidatePool()
    for memory_id, tags in (("names", ["entity:tool:kafka"]), ("other", [])):
        candidate = Candidate(memory_id, components={"relevance": 0.5}, doc=memory(memory_id, tags=tags))
        pool.by_id[memory_id] = candidate
    final_scores(pool, (), listing=False, entities={"entity:tool:kafka": 0.5})
    assert pool.by_id["names"].score > pool.by_id["other"].score
    assert pool.by_id["names"].components["entity"] == 0.5


@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.booleans()), min_size=1, max_size=20),
    st.integers(1, 10),
    st.floats(0.01, 1),
)
def test_the_reachable_floor_holds_with_the_entity_prior(
    rows: list[tuple[float, float, bool]], limit: int, named: float
) -> None:
    """A candidate below the floor cannot enter the top even if it names the query's entity."""
    entities = {"entity:tool:kafka": named}
    pool = CandidatePool()
    for n, (rel, importance, mentions) in enumerate(rows):
        tags = ["entity:tool:kafka"] if mentions else []
        doc = memory(f"m{n}", importance=importance, tags=tags)
        pool.by_id[f"m{n}"] = Candidate(f"m{n}", components={"relevance": rel}, doc=doc)
    floor = reachable_floor(pool, limit, context_tags=False, entities=entities)
    final_scores(pool, (), listing=False, entities=entities)
    assert_below_the_floor_stays_out(pool, floor, limit)


def _tagged_pool(rows: dict[str, list[str]], relevance: float = 0.5) -> CandidatePool:
    pool = CandidatePool()
    for memory_id, tags in rows.items():
        doc = memory(memory_id, tags=tags, importance=0.5)
        pool.by_id[memory_id] = Candidate(memory_id, components={"relevance": relevance}, doc=doc)
    return pool


def test_a_tag_is_named_by_its_last_part() -> None:
    """Folded as entity slugs are; a tag's other parts, and entity tags (entity linking's, weighed
    by specificity), name nothing here."""
    pool = _tagged_pool(
        {
            "ann": ["speaker:Ann", "conv:7"],
            "bob": ["speaker:bob", "entity:person:ann"],
            "apollo": ["project:Next.js", "speaker"],
            "unread": [],
        }
    )
    pool.by_id["unread"].doc = None
    slugs = frozenset(query_slugs("What does Ann's team think of Next.js and the speaker?"))
    assert named_tags(pool, slugs) == {"speaker:Ann", "project:Next.js", "speaker"}
    assert named_tags(pool, frozenset(query_slugs("What did conv think?"))) == frozenset()
    assert named_tags(pool, frozenset()) == frozenset()


def test_a_memory_carrying_a_named_tag_gets_the_tag_prior() -> None:
    """+TAG_WEIGHT to the memories carrying one, taken from relevance's share only when the query
    names a tag."""
    pool = _tagged_pool({"ann": ["speaker:ann"], "bob": ["speaker:bob"]})
    final_scores(pool, (), listing=False, tags=frozenset({"speaker:ann"}))
    ann, bob = pool.by_id["ann"], pool.by_id["bob"]
    assert bob.score == pytest.approx((RELEVANCE_SHARE - TAG_WEIGHT) * 0.5 + IMPORTANCE_WEIGHT * 0.5)
    assert ann.score == pytest.approx(bob.score + TAG_WEIGHT)
    assert (ann.components["tag"], bob.components["tag"]) == (1.0, 0.0)
    plain = _tagged_pool({"ann": ["speaker:ann"]})
    final_scores(plain, (), listing=False)
    assert plain.by_id["ann"].score == pytest.approx(RELEVANCE_SHARE * 0.5 + IMPORTANCE_WEIGHT * 0.5)
    assert "tag" not in plain.by_id["ann"].components


@given(flagged_rows, limits)
def test_nothing_below_the_reachable_floor_can_enter_the_top_with_a_named_tag(
    rows: list[tuple[float, float, bool]], limit: int
) -> None:
    tags = frozenset({"speaker:ann"})
    pool = CandidatePool()
    for n, (rel, importance, carries) in enumerate(rows):
        doc = memory(f"m{n}", importance=importance, tags=["speaker:ann"] if carries else [])
        pool.by_id[f"m{n}"] = Candidate(f"m{n}", components={"relevance": rel}, doc=doc)
    floor = reachable_floor(pool, limit, context_tags=False, tags=tags)
    final_scores(pool, (), listing=False, tags=tags)
    assert_below_the_floor_stays_out(pool, floor, limit)
