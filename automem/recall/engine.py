"""Recall: gather candidates from every channel, fuse them once, resolve state, answer.

Stages (each timed into `timings_ms`): embed the query → vector and keyword channels in
parallel (or the listing channel when there is no query) → fusion → hydrate (candidates rank on
their vector payloads; others are read from the graph) and filter → graph expansion (ranked with
the seeds) → current-state resolution → final scores, and the cut, which reads only the final
candidates from the graph and filters them again → relations. A channel that fails or exceeds
its time budget is left out and named in `degraded`; the request still answers.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache, partial
from typing import Any, TypeVar, cast

from automem.embedding.rerank import open_reranker
from automem.listing import ORDERS, Order
from automem.models import check_dimension
from automem.recall.entity_link import (
    PER_ENTITY,
    RARE_MENTIONS,
    LinkedEntity,
    admit_linked,
    named_tags,
    query_slugs,
)
from automem.recall.expansion import expand
from automem.recall.fusion import (
    Candidate,
    CandidatePool,
    Days,
    drop_unread,
    final_scores,
    priors_headroom,
    ranked,
    read_reachable,
    relevance,
    relevance_share,
    scored,
)
from automem.recall.query import RecallQuery
from automem.recall.reldates import query_time
from automem.recall.report import Tally, Timer, merged, response
from automem.recall.split import question_parts
from automem.recall.state import resolve_current
from automem.recall.timeparse import resolve_window
from automem.record import DEFAULT_TENANT, MemoryRecord
from automem.relations import MEMORY_LINKS
from automem.services import Services
from automem.stores.graph import ListOrder
from automem.stores.recall_filter import RecallFilter
from automem.stores.vectors.base import Filter
from automem.tags import canonical_prefix
from automem.timeutil import now_iso, parse_iso

log = logging.getLogger(__name__)
T = TypeVar("T")

Hit = tuple[str, float]  # (memory id, channel score)
ANN_OVERFETCH = 2  # the graph's HNSW search returns this many times the candidates, before filters
POINT_COUNT_TTL = 30.0
SCOPE_COUNTS_KEPT = 256  # filters whose point estimate is kept (time windows make new ones)


class RecallEngine:
    def __init__(self, svc: Services) -> None:
        self.svc = svc
        # Each recall runs up to three reads at once (vector, keyword, entities; then edges, entity
        # and episode offers): room for four concurrent recalls without a queue behind the threads.
        self.pool = ThreadPoolExecutor(max_workers=12, thread_name_prefix="recall")
        self._embed_cached = lru_cache(maxsize=svc.settings.query_embedding_cache_size)(
            svc.embedder.embed_one
        )
        self._points, self._points_read_at = 0, -POINT_COUNT_TTL
        self._scope_counts: dict[Filter, tuple[int, float]] = {}
        self._in_flight, self._in_flight_lock = 0, threading.Lock()
        self.reranker = open_reranker(svc.settings)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    # --- the pipeline -------------------------------------------------------------------------
    def recall(self, q: RecallQuery, tenant: str = DEFAULT_TENANT) -> dict[str, Any]:
        """One recall; with AutoMem's `queries`, one per query, merged by each memory's best score."""
        with self._counted():
            return self._recall_all(q, tenant)

    @contextmanager
    def _counted(self) -> Iterator[None]:
        """Counts this process's recalls in flight (`_index_candidates` weighs the exact search
        by them)."""
        with self._in_flight_lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1

    def _recall_all(self, q: RecallQuery, tenant: str) -> dict[str, Any]:
        if not q.queries:
            return self._recall_one(q, tenant)
        size = (q.per_query_limit or q.limit) + q.offset
        answers = [
            self._recall_one(
                q.model_copy(update={"query": text, "queries": [], "limit": size, "offset": 0}), tenant
            )
            for text in q.queries
        ]
        return merged(q, answers)

    def _recall_one(self, q: RecallQuery, tenant: str) -> dict[str, Any]:
        timer, tally = Timer(), Tally()
        check_dimension(q.embedding, self.svc.embedder.dimension)
        flt = RecallFilter.build(
            tenant=tenant,
            now=now_iso(),
            tags=q.tags,
            tag_mode=q.tag_mode,
            tag_match=q.tag_match,
            exclude_tags=q.exclude_tags,
            types=q.types,
            window=resolve_window(q.time_query, q.start, q.end, reference_moment(q)),
            state_mode=q.state_mode,
            min_importance=q.min_importance,
        )
        degraded: list[str] = []
        pool = CandidatePool()
        listing = not q.query and q.embedding is None
        fetch = max(q.limit + q.offset, self.svc.settings.recall_candidates)
        linking = None
        if listing:
            with timer.stage("listing"):
                self._listing(pool, flt, q, fetch)
        else:
            query_vector = self._embed_query(q.query, q.embedding, timer, degraded)
            linking = self._start_linking(q.query, flt, timer)
            self._channels(pool, flt, q.query, query_vector, fetch, timer, degraded)
        with timer.stage("fusion"):
            relevance(pool)
        if not listing:
            self._search_parts(pool, flt, q, fetch, timer, degraded)
            tally.vector_matched = sum(1 for c in pool.values() if "vector" in c.raw)
        linked = self._collect("entities", linking, degraded) if linking is not None else []
        entities = admit_linked(pool, linked)
        tally.linked = [{"name": e.name, "kind": e.kind, "mentions": e.mentions} for e in linked]
        when = None if listing else self._named_time(q, tally)
        slugs = self._tag_slugs(q, listing)
        with timer.stage("hydrate"):
            tags = self._hydrate(pool, flt, None if listing else q, entities, when, slugs)
        tally.named_tags = sorted(tags)
        edges: dict[str, list[dict[str, Any]]] = {}
        if not listing:
            with timer.stage("expand"):
                tally.expanded = expand(
                    self.svc.graph,
                    pool,
                    flt,
                    q,
                    partial(self._hydrate_ids, within=flt),
                    edges,
                    self.pool,
                    entities,
                    self.svc.settings.recall_episode_hops,
                    when,
                    tags,
                )
        if q.state_mode == "current":
            with timer.stage("state"):
                tally.replaced, tally.suppressed = resolve_current(
                    self.svc.graph, pool, flt, self._hydrate_ids
                )
        with timer.stage("rank"):
            final_scores(pool, tuple(context_prefixes(q)), listing, entities, when, tags)
            order = ranked(pool.values(), q.sort)
        if self.reranker is not None and q.query and q.sort == "score" and not listing:
            with timer.stage("rerank"):
                order = self._reranked(order, q, flt, entities, when, tags, degraded)
        with timer.stage("rank"):
            results = self._cut(order, q, flt, tally)
        with timer.stage("relations"):
            relations = self._relations([c.id for c in results], q.relation_limit, edges)
        with timer.stage("access"):
            self._record_access([c.id for c in results], [c.doc.version if c.doc else None for c in results])
        searched = not listing and self.svc.vectors is not None
        return response(q, flt, results, relations, timer, degraded, listing, tally, searched)

    def _tag_slugs(self, q: RecallQuery, listing: bool) -> frozenset[str]:
        """What the query could name a tag by (RECALL_NAMED_TAGS; recall.entity_link.named_tags)."""
        if listing or not q.query or q.sort != "score" or not self.svc.settings.recall_named_tags:
            return frozenset()
        return frozenset(query_slugs(q.query))

    def _named_time(self, q: RecallQuery, tally: Tally) -> Days | None:
        """The days of a time the query names (RECALL_NAMED_TIME), unless the request gives a
        window of its own, which filters instead; noted in the answer's `named_time`."""
        if not q.query or q.gives_window or q.sort != "score" or not self.svc.settings.recall_named_time:
            return None
        named = query_time(q.query, q.reference_time or now_iso())
        if named is None:
            return None
        tally.named_time = named.as_metadata()
        return named.start, named.end

    def _search(
        self,
        pool: CandidatePool,
        flt: RecallFilter,
        text: str,
        embedding: list[float] | None,
        fetch: int,
        timer: Timer,
        degraded: list[str],
    ) -> None:
        query_vector = self._embed_query(text, embedding, timer, degraded)
        self._channels(pool, flt, text, query_vector, fetch, timer, degraded)

    def _embed_query(
        self, text: str, embedding: list[float] | None, timer: Timer, degraded: list[str]
    ) -> list[float] | None:
        """The query vector, before any channel starts: on a small machine the ONNX model wants
        every core, and a search run alongside only slows both down (measured: embed 2.5 -> 4.1
        ms with the keyword search beside it, 2.2 -> 2.9 ms with the entity lookup)."""
        if self.svc.vectors is None:
            return None
        with timer.stage("embed"):
            return self._query_vector(text, embedding, degraded)

    def _channels(
        self,
        pool: CandidatePool,
        flt: RecallFilter,
        text: str,
        query_vector: list[float] | None,
        fetch: int,
        timer: Timer,
        degraded: list[str],
    ) -> None:
        """The vector and keyword channels, in parallel; their hits into `pool`."""
        vector: Future[list[Hit]] | None = None
        keyword: Future[list[Hit]] | None = None
        if query_vector is not None:
            vector = self.pool.submit(self._timed, timer, "vector", self._vector, query_vector, flt, fetch)
        if text and self.svc.vectors is not None:
            keyword = self.pool.submit(self._timed, timer, "keyword", self._keyword, text, flt, fetch)
        for name, future in (("vector", vector), ("keyword", keyword)):
            if future is not None:
                hits = self._collect(name, future, degraded)
                pool.add(name, hits)

    def _start_linking(self, text: str, flt: RecallFilter, timer: Timer) -> Future[list[LinkedEntity]] | None:
        """Look up the entities the query names while the channels search (entity_link)."""
        if not text or not self.svc.settings.recall_entity_linking:
            return None
        slugs = query_slugs(text)
        return self.pool.submit(self._timed, timer, "entities", self._linked_entities, slugs, flt)

    def _linked_entities(self, slugs: list[str], flt: RecallFilter) -> list[LinkedEntity]:
        rows = self.svc.graph.linked_entities(slugs, flt, RARE_MENTIONS, PER_ENTITY)
        return [LinkedEntity(**row) for row in rows]

    def _search_parts(
        self,
        pool: CandidatePool,
        flt: RecallFilter,
        q: RecallQuery,
        fetch: int,
        timer: Timer,
        degraded: list[str],
    ) -> None:
        """Search each part of a two-part question too (recall.split); a memory keeps its best
        relevance over the whole question and the parts. Not with a client's query vector,
        which only the client can make for a part."""
        if q.embedding is not None or not self.svc.settings.recall_question_parts:
            return
        for text in question_parts(q.query):
            part = CandidatePool()
            self._search(part, flt, text, None, fetch, timer, degraded)
            relevance(part)
            pool.absorb(part)

    def _query_vector(
        self, text: str, embedding: list[float] | None, degraded: list[str]
    ) -> list[float] | None:
        if embedding is not None:
            return embedding
        try:
            return list(self._embed_cached(text))
        except Exception:
            log.exception("query embedding failed; answering without the vector channel")
            degraded.append("embedding")
            return None

    def _vector(self, query_vector: list[float], flt: RecallFilter, fetch: int) -> list[Hit]:
        """The graph's HNSW index when it is the cheaper search (`_index_candidates`), else the
        exact search of the Edge shard over the points the filter selects."""
        assert self.svc.vectors is not None
        vector_filter = flt.vector_filter()
        candidates = self._index_candidates(vector_filter, fetch)
        if candidates:
            nearest = self.svc.graph.nearest(query_vector, candidates, flt, fetch)
            if len(nearest) >= fetch:
                return nearest
            # Fewer passed the filter than asked: the exact search finds them all.
        hits = self.svc.vectors.search(query_vector, fetch, vector_filter, with_payload=False)
        return [(h.id, h.score) for h in hits]

    def _index_candidates(self, vector_filter: Filter, fetch: int) -> int:
        """How many nearest candidates to ask the graph's HNSW index for, so that about
        ANN_OVERFETCH x `fetch` of them pass the filter: the over-fetch grows as the filter's
        share of the store shrinks (half the store: twice the candidates). 0 (the exact search)
        up to RECALL_EXACT_SEARCH_LIMIT points in the store or in the filter, and when that
        many candidates, at RECALL_INDEX_CANDIDATE_COST points each, cost more than the exact
        search of the filter's points, each weighed by what the shard still checks on it
        (`exact_point_weight`): a narrow share of a large store (a time window of two months in
        a year of 100k memories) was asked of the index for twice the candidates, most failed
        the filter, and the exact search ran after it anyway.

        The exact search's cost is counted once for each recall in flight in this process: it
        runs here holding the GIL and the shard's lock, so every concurrent recall waits it
        out, where the index searches in FalkorDB beside them (at 1M and concurrency 4 a tag
        scope of a twentieth of the store answered 58.5 QPS through the index, 43.5 exactly,
        though one recall alone is faster exactly)."""
        if not self._beyond_exact_search():
            return 0
        assert self.svc.vectors is not None
        selected = self._scope_points(vector_filter)
        if selected <= self.svc.settings.recall_exact_search_limit:
            return 0
        candidates = math.ceil(fetch * ANN_OVERFETCH * max(self._points, selected) / selected)
        cost = self.svc.settings.recall_index_candidate_cost
        weight = self.svc.vectors.exact_point_weight(vector_filter)
        exact_cost = selected * weight * max(1, self._in_flight)
        return candidates if candidates * cost <= exact_cost else 0

    def _scope_points(self, vector_filter: Filter) -> int:
        """How many points the filter selects, estimated for its `must` conditions alone (an
        upper bound: the exclusions, among them "valid now", only remove points) and kept
        POINT_COUNT_TTL per filter, so a recall repeating a scope skips Edge's estimate (~0.1 ms
        holding the GIL). A stale answer only picks another path: the exact search is exact,
        and the graph's search falls back to it when too few of its hits pass the filter."""
        assert self.svc.vectors is not None
        scope = Filter(must=vector_filter.must)
        now = time.monotonic()
        known = self._scope_counts.get(scope)
        if known is None or now - known[1] > POINT_COUNT_TTL:
            if len(self._scope_counts) >= SCOPE_COUNTS_KEPT:
                self._scope_counts.clear()
            known = (self.svc.vectors.count(scope, exact=False), now)
            self._scope_counts[scope] = known
        return known[0]

    def _beyond_exact_search(self) -> bool:
        """Whether the Edge shard holds too many vectors to search exhaustively on each recall
        (RECALL_EXACT_SEARCH_LIMIT; a Qdrant server indexes itself). The count is re-read every
        half minute."""
        limit = self.svc.settings.recall_exact_search_limit
        if limit <= 0 or self.svc.vectors is None or self.svc.vectors.backend != "edge":
            return False
        now = time.monotonic()
        if now - self._points_read_at > POINT_COUNT_TTL:
            self._points, self._points_read_at = self.svc.vectors.count(), now
        return self._points > limit

    def _keyword(self, text: str, flt: RecallFilter, fetch: int) -> list[Hit]:
        assert self.svc.vectors is not None
        hits = self.svc.vectors.keyword_search(
            text, fetch, flt.vector_filter(), flt.idf_scope(), with_payload=False
        )
        return [(h.id, h.score) for h in hits]

    @staticmethod
    def _timed(timer: Timer, name: str, fn: Callable[..., T], *args: Any) -> T:
        with timer.stage(name):
            return fn(*args)

    def _collect(self, name: str, future: Future[list[T]], degraded: list[str]) -> list[T]:
        try:
            return future.result(timeout=self.svc.settings.recall_channel_timeout_seconds)
        except FutureTimeout:
            log.warning("recall channel %s timed out", name)
        except Exception:
            log.exception("recall channel %s failed", name)
        degraded.append(name)
        return []

    def _listing(self, pool: CandidatePool, flt: RecallFilter, q: RecallQuery, fetch: int) -> None:
        order: ListOrder = "importance" if q.sort == "score" else q.sort
        docs = None
        if order in ORDERS:  # an order the vector store's payload indexes can walk
            docs = self.svc.sync.listed(flt.vector_filter(), cast(Order, order), fetch)
        if docs is None:
            docs = self.svc.graph.list_memories(flt, order, fetch)
        for doc in docs:
            pool.get(doc.id).doc = doc

    def _hydrate(
        self,
        pool: CandidatePool,
        flt: RecallFilter,
        q: RecallQuery | None,
        entities: dict[str, float] | None = None,
        when: Days | None = None,
        slugs: frozenset[str] = frozenset(),
    ) -> frozenset[str]:
        """Read the candidates that can still make the top `limit` from the graph and filter them;
        returns the tags the query names among them (`slugs`: what it could name one by).

        Channels return ids and scores only (payloads cost more to fetch than the graph read of the
        few that matter). A search ranked by score reads only the candidates that can still make
        it (`_read_reachable`); a time-sorted one reads them all (listings, already read from the
        graph, pass `q=None`)."""
        if q is not None and q.sort == "score":
            return self._read_reachable(pool, flt, q, entities, when, slugs)
        self._read_into(pool, flt, [c.id for c in pool.values() if c.doc is None])
        for candidate in pool.values():  # a listing's memories were read by the listing
            if candidate.doc is None or not flt.matches(candidate.doc):
                del pool.by_id[candidate.id]
        return frozenset()  # listings and time-sorted recalls have no tag prior (`_tag_slugs`)

    def _read_reachable(
        self,
        pool: CandidatePool,
        flt: RecallFilter,
        q: RecallQuery,
        entities: dict[str, float] | None,
        when: Days | None,
        slugs: frozenset[str],
    ) -> frozenset[str]:
        """Only the memories of the candidates that can still make the answer (`read_reachable`),
        and the tags the query names among them. Which tags those are is known once memories are
        read, so the read runs again with the tag prior when some are named: it reads what the
        prior makes reachable, and nothing more when no tag is named."""

        def read(tags: frozenset[str], drop: bool) -> None:
            read_reachable(
                pool,
                lambda ids: self._importances(pool, ids),
                lambda ids: self._read_into(pool, flt, ids),
                need=q.limit + q.offset,
                share=relevance_share(entities, when, tags),
                headroom=priors_headroom(bool(q.context_tags), entities, when, tags),
                drop=drop,
            )

        read(frozenset(), drop=not slugs)
        if not slugs:
            return frozenset()
        if not (tags := named_tags(pool, slugs)):
            drop_unread(pool)
            return tags
        read(tags, drop=True)
        return named_tags(pool, slugs)  # the second read may bring more of them

    def _importances(self, pool: CandidatePool, ids: list[str]) -> dict[str, float]:
        """Each candidate's importance: from its memory where it was read already (a second read
        pass asks again), from the graph for the others."""
        known = {
            i: float(c.doc.importance or 0.0)
            for i in ids
            if (c := pool.by_id.get(i)) is not None and c.doc is not None
        }
        unread = [i for i in ids if i not in known]
        return {**known, **(self.svc.graph.importance_of(unread) if unread else {})}

    def _read_into(self, pool: CandidatePool, flt: RecallFilter, ids: list[str]) -> None:
        """Read these candidates' memories; those gone or not matching the filter leave the pool."""
        docs = self._hydrate_ids(ids)
        for memory_id in ids:
            doc = docs.get(memory_id)
            if doc is None or not flt.matches(doc):
                pool.by_id.pop(memory_id, None)
            else:
                pool.by_id[memory_id].doc = doc

    def _hydrate_ids(self, ids: list[str], within: RecallFilter | None = None) -> dict[str, MemoryRecord]:
        """Memories as the graph has them now (what recall shows and filters on); with `within`,
        only those the filter accepts."""
        if not ids:
            return {}
        return {d.id: d for d in self.svc.graph.recall_memories(ids, within)}

    def _reranked(
        self,
        order: list[Candidate],
        q: RecallQuery,
        flt: RecallFilter,
        entities: dict[str, float],
        when: Days | None,
        tags: frozenset[str],
        degraded: list[str],
    ) -> list[Candidate]:
        """The best RECALL_RERANK_CANDIDATES (at least limit + offset) re-scored with the
        cross-encoder's probability as their relevance (the priors still apply) and put in that
        order; the rest follow as they were. A failing model leaves the order alone."""
        assert self.reranker is not None
        size = max(self.svc.settings.recall_rerank_candidates, q.limit + q.offset)
        top = [(c, c.doc) for c in order if c.doc is not None and flt.matches(c.doc)][:size]
        try:
            probabilities = self.reranker.scores(q.query, [doc.content for _, doc in top])
        except Exception:
            log.exception("re-ranking failed; answering in the fused order")
            degraded.append("rerank")
            return order
        share, prefixes = relevance_share(entities, when, tags), tuple(context_prefixes(q))
        for (candidate, _), probability in zip(top, probabilities, strict=True):
            candidate.components["rerank"] = round(probability, 4)
            candidate.score = scored(candidate, probability, share, prefixes, entities, when, tags)
        chosen = [c for c, _ in top]
        ids = {c.id for c in chosen}
        return ranked(chosen, q.sort) + [c for c in order if c.id not in ids]

    def _cut(
        self, order: list[Candidate], q: RecallQuery, flt: RecallFilter, tally: Tally
    ) -> list[Candidate]:
        """The best `limit` distinct memories at or above `min_score` after the first `offset`,
        from candidates in answer order (every candidate's memory was read from the graph and
        filtered by then; identical contents count once)."""
        out: list[Candidate] = []
        seen_content: set[str] = set()
        for candidate in order:
            if len(out) >= q.limit + q.offset:
                break
            if candidate.doc is None or not flt.matches(candidate.doc):
                continue
            if candidate.score < q.min_score:
                tally.below_min_score += 1
                continue
            key = candidate.content_key()
            if key in seen_content:
                tally.dedup_removed += 1
                continue
            seen_content.add(key)
            out.append(candidate)
        return out[q.offset :]

    def _relations(
        self, ids: list[str], limit: int, known: dict[str, list[dict[str, Any]]]
    ) -> dict[str, list[dict[str, Any]]]:
        """Edges of the results, each with a summary of the other memory (edges_of reads it
        along). The seeds' edges were already read by the graph channel; only the rest are read."""
        missing = [i for i in ids if i not in known]
        fetched = self.svc.graph.edges_of(missing, MEMORY_LINKS, limit, with_degree=False) if missing else {}
        return {i: (known.get(i) or fetched.get(i, []))[:limit] for i in ids}

    def _record_access(self, ids: list[str], versions: list[int | None]) -> None:
        """Access bookkeeping happens in a job, off the request path; losing it loses nothing."""
        if not ids:
            return
        try:
            self.svc.jobs.enqueue_access(ids, now_iso(), versions)
        except Exception:
            log.warning("could not queue access bookkeeping for %d memories", len(ids))


def reference_moment(q: RecallQuery) -> datetime | None:
    """The moment relative times are resolved against: the request's `reference_time`, or now."""
    return parse_iso(q.reference_time) if q.reference_time else None


def context_prefixes(q: RecallQuery) -> list[str]:
    return [canonical_prefix(t) for t in q.context_tags]
