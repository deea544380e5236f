"""Query-side entity linking: which runs of a query are looked up, how specific an entity is,
how linked entities enter the pool and the final score."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from automem.recall.entity_link import (
    LINK_WEIGHT,
    LinkedEntity,
    admit_linked,
    fold,
    query_slugs,
    specificity,
)
from automem.recall.fusion import Candidate, CandidatePool, final_scores, reachable_floor
from tests.unit.recall_doubles import assert_below_the_floor_stays_out, memory


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
