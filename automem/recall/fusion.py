"""One fusion over every channel's candidates.

Each channel reports raw scores; `fuse` normalises them per channel (cosine is kept as it is,
keyword scores are divided by the best keyword score of this query, so both live in 0..1) and
combines them with weights into a relevance in 0..1. Graph-expanded memories arrive with a
relevance derived from their seed, so they are ranked together with the seeds, not appended.
The final score mixes relevance with small priors (importance, context-tag boost); it stays in
0..1, which is what `min_score` is compared against. Ties go to the newest memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from automem.memories import content_hash
from automem.recall.reldates import content_spans
from automem.record import MemoryRecord
from automem.timeutil import parse_iso

# Candidates read beyond `limit`, so duplicates and filtered ones leave enough for the cut.
FINAL_SPARE = 3
# The expansion's seeds: the best candidates by relevance (automem.recall.expansion reads these).
SEEDS = 10
# Relevance weights of the retrieval channels, and the share of the priors in the final score.
CHANNEL_WEIGHTS = {"vector": 0.5, "keyword": 0.5}
IMPORTANCE_WEIGHT = 0.05
CONTEXT_WEIGHT = 0.05
# A memory that mentions an entity the query names (recall.entity_link), times the entity's
# specificity; its share is taken from relevance only when the query names one.
ENTITY_WEIGHT = 0.05
# A memory of the time the query names ("last weekend", recall.reldates.query_time): its
# timestamp, or a date enrichment resolved in its words, falls in that time. Twice a single
# prior: the time is the user's own constraint, stated in the question (stronger than a stored
# importance), yet a tenth of the score, so a memory far less relevant than the rest cannot
# climb over them by its date alone. Its share is taken from relevance only when a time is named.
TIME_WEIGHT = 0.1
# A memory carrying a tag the query names by its last part ("What does Melanie like?" and
# `speaker:melanie`; "the apollo launch" and `project:apollo`): the user's own constraint
# stated in the question, like a named time, so the same weight on the same principle.
# Its share is taken from relevance only when the query names a tag a candidate carries.
TAG_WEIGHT = 0.1
Days = tuple[date, date]  # [first day, day after the last) of the time a query names


@dataclass
class Candidate:
    id: str
    raw: dict[str, float] = field(default_factory=dict)  # channel -> raw score
    rank: dict[str, int] = field(default_factory=dict)  # channel -> 1-based rank
    expanded: float = 0.0  # relevance inherited through graph expansion
    expanded_from: list[dict[str, Any]] = field(default_factory=list)
    doc: MemoryRecord | None = None  # read from the graph once the candidate may make the cut
    components: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    replaces: str | None = None

    def content_key(self) -> str:
        """What identical contents share: the stored `content_hash` the recall read brings
        (normalising and hashing a long memory here cost ~12 us a kilobyte, ~8 % of the API
        process's time on LongMemEval's recalls), computed only for a memory stored without one."""
        assert self.doc is not None
        return self.doc.content_hash or content_hash(self.doc.content)

    @property
    def channels(self) -> list[str]:
        names = list(self.raw)
        if self.expanded > 0:
            names.append("graph")
        return names


class CandidatePool:
    """Candidates by id, as channels report them."""

    def __init__(self) -> None:
        self.by_id: dict[str, Candidate] = {}

    def add(self, channel: str, hits: list[tuple[str, float]]) -> None:
        """Hits as (id, score), best first."""
        for rank, (memory_id, score) in enumerate(hits, start=1):
            candidate = self.by_id.setdefault(memory_id, Candidate(memory_id))
            if score > candidate.raw.get(channel, float("-inf")):
                candidate.raw[channel] = score
                candidate.rank[channel] = rank

    def absorb(self, other: CandidatePool) -> None:
        """Take in another search's candidates (fused on their own): each channel's best raw
        score and rank, and each component's best value, relevance included."""
        for found in other.values():
            mine = self.by_id.get(found.id)
            if mine is None:
                self.by_id[found.id] = found
                continue
            for channel, score in found.raw.items():
                if score > mine.raw.get(channel, float("-inf")):
                    mine.raw[channel], mine.rank[channel] = score, found.rank[channel]
            for name, value in found.components.items():
                mine.components[name] = max(mine.components.get(name, 0.0), value)

    def get(self, memory_id: str) -> Candidate:
        return self.by_id.setdefault(memory_id, Candidate(memory_id))

    def __len__(self) -> int:
        return len(self.by_id)

    def values(self) -> list[Candidate]:
        return list(self.by_id.values())


def relevance(pool: CandidatePool) -> None:
    """Set each candidate's channel components and its fused relevance (0..1)."""
    best = {ch: max((c.raw[ch] for c in pool.values() if ch in c.raw), default=0.0) for ch in CHANNEL_WEIGHTS}
    active = [ch for ch in CHANNEL_WEIGHTS if best[ch] > 0]
    total_weight = sum(CHANNEL_WEIGHTS[ch] for ch in active) or 1.0
    for candidate in pool.values():
        fused = 0.0
        for channel in active:
            value = _normalised(channel, candidate.raw.get(channel, 0.0), best[channel])
            candidate.components[channel] = round(value, 4)
            fused += CHANNEL_WEIGHTS[channel] * value
        candidate.components["relevance"] = fused / total_weight


RELEVANCE_SHARE = 1.0 - IMPORTANCE_WEIGHT - CONTEXT_WEIGHT


def relevance_share(
    entities: Mapping[str, float] | None, when: Days | None = None, tags: frozenset[str] = frozenset()
) -> float:
    """The share of relevance in the final score: less the entity, time and tag priors' when
    they apply."""
    named = (ENTITY_WEIGHT if entities else 0.0) + (TIME_WEIGHT if when else 0.0)
    return RELEVANCE_SHARE - named - (TAG_WEIGHT if tags else 0.0)


def reachable_floor(
    pool: CandidatePool,
    limit: int,
    context_tags: bool,
    sort: str = "score",
    entities: Mapping[str, float] | None = None,
    when: Days | None = None,
    tags: frozenset[str] = frozenset(),
) -> float:
    """The least relevance with which a memory could still make the top `limit` (0 when the
    answer is sorted by time: then any candidate may make it).

    Final scores are the relevance share x relevance plus the priors (importance, the context
    boost when context tags were given, the entity prior when the query names an entity), so a
    memory whose relevance trails the limit-th candidate's by more than the largest possible
    prior difference / the relevance share can never pass it, whatever its importance or tags."""
    ranked = sorted((c.components.get("relevance", 0.0) for c in pool.values()), reverse=True)
    if sort != "score" or len(ranked) < limit:
        return 0.0
    return _relevance_floor(
        ranked[limit - 1],
        relevance_share(entities, when, tags),
        priors_headroom(context_tags, entities, when, tags),
    )


def _relevance_floor(nth_relevance: float, share: float, headroom: float) -> float:
    """The least relevance that can still pass a candidate of `nth_relevance`: by the most the
    priors (importance, and `headroom` from the others) can make up, in relevance units."""
    return nth_relevance - (IMPORTANCE_WEIGHT + headroom) / share


def priors_headroom(
    context_tags: bool,
    entities: Mapping[str, float] | None,
    when: Days | None = None,
    tags: frozenset[str] = frozenset(),
) -> float:
    """The most the priors other than importance can add to a final score: the context boost
    when context tags were given, the entity prior when the query names an entity, the time
    prior when it names a time, the tag prior when it names a tag."""
    named = (ENTITY_WEIGHT if entities else 0.0) + (TIME_WEIGHT if when else 0.0)
    return (CONTEXT_WEIGHT if context_tags else 0.0) + named + (TAG_WEIGHT if tags else 0.0)


def read_reachable(
    pool: CandidatePool,
    importance_of: Callable[[list[str]], Mapping[str, float]],
    read: Callable[[list[str]], None],
    need: int,
    share: float,
    headroom: float,
    drop: bool = True,
) -> None:
    """Read (`read`: memories into the pool; those gone or not matching the filter leave it)
    only the candidates that can still make the best `need` of a search ranked by score; the
    others leave the pool unread (expansion brings any of them back on graph evidence), unless
    `drop` is false: a second call with other priors then reads what those make reachable
    (`read` is given only candidates not read yet).

    Before graph evidence, a candidate's final score is `share` x relevance + importance x
    IMPORTANCE_WEIGHT, plus at most `headroom` from the other priors. The first read: those
    within the priors' reach of the `need`-th by relevance, at least `need` + FINAL_SPARE; when
    that is more than twice a narrower read, their importances are read (`importance_of`, one
    narrow query) and only the expansion's seeds (the best SEEDS by relevance) and the best
    `need` + FINAL_SPARE by score are. Then every candidate whose best possible score still
    reaches the `need`-th least score of those read and matching (identical contents counted
    once, as the cut counts them): usually none, unless the filter dropped some of the first.
    At 10k a plain search reads ~15 memories whole instead of ~60."""
    relevance_of = {i: c.components.get("relevance", 0.0) for i, c in pool.by_id.items()}
    by_relevance = sorted(relevance_of, key=lambda i: -relevance_of[i])
    # What each candidate scores at least (importance 0) and at most (importance 1, every prior).
    lower = {i: share * r for i, r in relevance_of.items()}
    upper = {i: share * r + IMPORTANCE_WEIGHT + headroom for i, r in relevance_of.items()}
    first = by_relevance
    if len(by_relevance) >= need:
        cutoff = _relevance_floor(relevance_of[by_relevance[need - 1]], share, headroom)
        above = sum(1 for i in by_relevance if relevance_of[i] >= cutoff)
        first = by_relevance[: max(need + FINAL_SPARE, above)]
    if len(first) > 2 * (need + FINAL_SPARE + SEEDS):  # enough to spare to pay the importance query
        importance = importance_of(first)
        for i in (i for i in first if i in importance):
            lower[i] = share * relevance_of[i] + IMPORTANCE_WEIGHT * importance[i]
            upper[i] = lower[i] + headroom
        by_lower = sorted((i for i in first if i in importance), key=lambda i: -lower[i])
        seeds = [i for i in first if i in importance][:SEEDS]
        first = list(dict.fromkeys([*seeds, *by_lower[: need + FINAL_SPARE]]))
    _read_unread(pool, first, read)
    # The floor comes from the candidates that were read and matched: when some of the best by
    # relevance fail the filter, candidates beyond the first cut can still make the answer.
    floor = _nth_best_distinct(pool, first, lower, need)
    done = set(first)
    rest = [i for i in by_relevance if i not in done and upper[i] >= floor]
    _read_unread(pool, rest, read)
    if drop:
        drop_unread(pool)


def _read_unread(pool: CandidatePool, ids: list[str], read: Callable[[list[str]], None]) -> None:
    unread = [i for i in ids if i in pool.by_id and pool.by_id[i].doc is None]
    if unread:
        read(unread)


def drop_unread(pool: CandidatePool) -> None:
    """The candidates left unread leave the pool."""
    for unread in [i for i, c in pool.by_id.items() if c.doc is None]:
        del pool.by_id[unread]


def _nth_best_distinct(pool: CandidatePool, ids: list[str], base: Mapping[str, float], n: int) -> float:
    """The n-th best of `base` among these ids still in the pool with their memory read,
    identical contents counted once; -inf when there are fewer than n."""
    best: dict[str, float] = {}
    for memory_id in ids:
        candidate = pool.by_id.get(memory_id)
        if candidate is not None and candidate.doc is not None:
            key = candidate.content_key()
            best[key] = max(best.get(key, float("-inf")), base[memory_id])
    scores = sorted(best.values(), reverse=True)
    return scores[n - 1] if len(scores) >= n else float("-inf")


def _normalised(channel: str, raw: float, best: float) -> float:
    if channel == "vector":
        return max(0.0, min(1.0, raw))
    return raw / best if best > 0 else 0.0


def final_scores(
    pool: CandidatePool,
    context_tags: tuple[str, ...],
    listing: bool,
    entities: Mapping[str, float] | None = None,
    when: Days | None = None,
    tags: frozenset[str] = frozenset(),
) -> None:
    """Combine relevance (or, for listings, importance) with the priors into `score`.
    `entities`: the entity tags the query names (`entity:<kind>:<slug>`), each with its
    specificity; a memory carrying one gets the entity prior (the best of them). `when`: the
    days of a time the query names; a memory of that time gets the time prior. `tags`: the
    tags the query names (`named_tags`); a memory carrying one gets the tag prior."""
    share = relevance_share(entities, when, tags)
    for candidate in pool.values():
        if candidate.expanded:
            candidate.components["graph"] = round(candidate.expanded, 4)
        if listing:
            importance, _ = _priors(candidate, context_tags)
            candidate.score = round(min(1.0, max(0.0, importance)), 6)
        else:
            base = max(candidate.components.get("relevance", 0.0), candidate.expanded)
            candidate.score = scored(candidate, base, share, context_tags, entities, when, tags)


def scored(
    candidate: Candidate,
    base: float,
    share: float,
    context_tags: tuple[str, ...],
    entities: Mapping[str, float] | None = None,
    when: Days | None = None,
    tags: frozenset[str] = frozenset(),
) -> float:
    """A searched candidate's final score: `share` x its relevance evidence `base` plus the
    priors (importance, context tags, named entities, a named time, named tags), each noted in
    its components."""
    importance, boost = _priors(candidate, context_tags)
    score = share * base + IMPORTANCE_WEIGHT * importance + CONTEXT_WEIGHT * boost
    if entities:
        named = _entity_prior(candidate.doc, entities)
        candidate.components["entity"] = round(named, 4)
        score += ENTITY_WEIGHT * named
    if when:
        then = 1.0 if of_time(candidate.doc, when) else 0.0
        candidate.components["time"] = then
        score += TIME_WEIGHT * then
    if tags:
        carried = 1.0 if candidate.doc is not None and not tags.isdisjoint(candidate.doc.tags) else 0.0
        candidate.components["tag"] = carried
        score += TAG_WEIGHT * carried
    return round(min(1.0, max(0.0, score)), 6)


def of_time(doc: MemoryRecord | None, when: Days) -> bool:
    """Whether the memory is of these days: its timestamp's (UTC) day is one of them, or a date
    enrichment resolved in its words overlaps them ("last weekend" written on Monday)."""
    if doc is None:
        return False
    first, after = when
    try:
        if first <= parse_iso(str(doc.timestamp)).date() < after:
            return True
    except ValueError:
        pass  # no usable timestamp: only the dates in its words can place it
    return any(start < after and first < end for start, end in content_spans(doc.metadata))


def _priors(candidate: Candidate, context_tags: tuple[str, ...]) -> tuple[float, float]:
    """The candidate's importance and context boost, noted in its components."""
    importance = float(candidate.doc.importance or 0.0) if candidate.doc else 0.0
    boost = _context_boost(candidate.doc, context_tags)
    candidate.components.update({"importance": importance, "context": boost})
    return importance, boost


def _entity_prior(doc: MemoryRecord | None, entities: Mapping[str, float]) -> float:
    if doc is None:
        return 0.0
    return max((entities[t] for t in doc.tags if t in entities), default=0.0)


def _context_boost(doc: MemoryRecord | None, context_tags: tuple[str, ...]) -> float:
    if not context_tags or doc is None:
        return 0.0
    present = set(doc.tag_prefixes)
    return 1.0 if present & set(context_tags) else 0.0


def ranked(candidates: list[Candidate], sort: str) -> list[Candidate]:
    if sort in ("time_desc", "updated_desc"):
        field = "timestamp" if sort == "time_desc" else "updated_at"
        return sorted(candidates, key=lambda c: (_ts(c, field), c.id), reverse=True)
    if sort in ("time_asc", "updated_asc"):
        field = "timestamp" if sort == "time_asc" else "updated_at"
        return sorted(candidates, key=lambda c: (_ts(c, field), c.id))
    return sorted(candidates, key=lambda c: (-c.score, _neg_ts(c), c.id))


def _ts(candidate: Candidate, field: str = "timestamp") -> str:
    return str(getattr(candidate.doc, field) or "") if candidate.doc else ""


def _neg_ts(candidate: Candidate) -> tuple[int, ...]:
    # Newest first among equal scores: invert the timestamp's characters for an ascending sort.
    return tuple(-ord(ch) for ch in _ts(candidate))


def match_type(candidate: Candidate) -> str:
    if candidate.replaces:
        return "state_replacement"
    if len(candidate.raw) > 1:
        return "hybrid"
    if candidate.raw:
        return next(iter(candidate.raw))
    return "graph" if candidate.expanded else "listing"
