"""Consolidation: decay, creative associations, clustering and forgetting.

`run_consolidation(mode, dry_run)` is the RQ entry point (the API runs dry runs in-process through
`Consolidator`). Every pass pages through the graph by id, 1000 memories at a time, and every
write is idempotent: scores are recomputed from scratch, edges and patterns are MERGEd, and a
memory the client changed since it was read (its `version` moved) is left for the next run.

Relevance score (decay), for an active memory, with `age` = days since its event `timestamp`,
`seen` = days since `last_accessed` and `uses` = `access_count`:

    recency   = exp(-CONSOLIDATION_BASE_DECAY_RATE * age)              # 0.01/day: ~69-day half-life
    access    = 0.6 * exp(-0.05 * seen) + 0.4 * min(1, ln(1 + uses) / ln(21))
    links     = 1 + 0.3 * ln(1 + distinct other memories it has an edge with)
    raw       = recency * (0.5 + 0.5 * access) * links * (0.5 + importance) * (0.7 + 0.3 * confidence)
    relevance = min(1, max(raw, 0.3 * importance))                    # important memories keep a floor

Each factor is non-decreasing in what it rewards (younger, more recently and more often used,
better connected, more important, more confident), so the score is too. The memory's own
`confidence` is used (AutoMem's queries never read it, so it was always 0.5 there). A pinned
memory — `metadata.pinned` true, or tagged `pinned` or `critical` — never decays: its score is at
least its previous score. The score is stored as `relevance_score` (+ `relevance_at`) without
bumping `version` or `rev` (the vector payload does not carry it), and only where it changed.

Forgetting (off on the schedule by default) archives — never deletes — active memories whose
relevance is below CONSOLIDATION_ARCHIVE_THRESHOLD (0.2, which a memory actually reaches: an
unused importance-0.5 memory falls below it after about four months), except memories that are
pinned, have importance >= CONSOLIDATION_IMPORTANCE_PROTECTION_THRESHOLD, are younger than
CONSOLIDATION_GRACE_PERIOD_DAYS (the later of event time and storage time: an import of old
memories is not archived on day one) or are of a protected type (Decision, Insight). Archiving
sets `state = 'archived'`, `archived_at`, bumps `rev` and syncs the vector payload, so the memory
leaves current-state recall and by-tag at once and stays readable by id.

Creative associations take a sample of up to 200 active memories with embeddings (a contiguous
block of ids after a random UUID: a uniform sample, since ids are random) and write DISCOVERED
edges (kind, confidence, similarity, origin='consolidation') for pairs not linked yet:
`explains` (an Insight or Pattern and a memory of another type, cosine >= 0.5), `shares_theme`
(different types, cosine >= 0.7) and `parallel_context` (a shared tag, event times within 7
days, cosine >= 0.3). At most 50 edges per run, strongest first.

Clustering links memories of the same tenant whose cosine similarity reaches
CONSOLIDATION_CLUSTER_SIMILARITY_THRESHOLD and makes every connected component of at least
CONSOLIDATION_MIN_CLUSTER_SIZE members a `:Pattern` node (a separate label: never a memory in
recall or by-tag) with EXEMPLIFIES edges from its members. Up to 2,000 memories are compared
exactly; above that, random-hyperplane LSH blocks the comparison (12 tables; each bucket compared
exactly), so the cost grows with n, not n². Vectors are held as float16 within a 256 MB budget.
A re-run updates the pattern sharing most members with a new cluster (Jaccard >= 0.5) instead of
creating another; a new pattern's id is a UUID5 of its tenant and member ids.
"""

from __future__ import annotations

import logging
import math
import re
import secrets
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from automem.events import EventType
from automem.history import JOB_CONSOLIDATE, Change
from automem.jobnames import JobName
from automem.record import MemoryRecord
from automem.services import Services
from automem.settings import Settings
from automem.stores.queue import CONSOLIDATION_TIMEOUT
from automem.timeutil import format_utc, parse_iso, utc_now
from enrichment.context import current_services
from enrichment.registry import job

log = logging.getLogger(__name__)

TASKS = ("decay", "creative", "cluster", "forget")
# AutoMem's modes this service does not run: accepted, answered as skipped, never an error.
SKIPPED_MODES = {"identity": "AutoMem's experimental identity consolidation is not part of this service"}
MODES = (*TASKS, "full", *SKIPPED_MODES)
DESTRUCTIVE_MODES = ("forget", "full")
PAGE = 1000
PROTECTED_TYPES = ("Decision", "Insight")
PIN_TAGS = ("pinned", "critical")
IMPORTANCE_FLOOR = 0.3
ACCESS_DECAY = 0.05
ACCESS_SATURATION = 20
SCORE_EPSILON = 5e-4  # smaller changes are not written
CREATIVE_SAMPLE = 200
CREATIVE_MAX_EDGES = 50
CLUSTER_EXACT_LIMIT = 2000
CLUSTER_VECTOR_BUDGET = 256 * 1024 * 1024
CLUSTER_LSH_TABLES = 12
CLUSTER_MAX_BUCKET = 256
MAX_PATTERNS_PER_RUN = 200
RUN_LOCK = "automem:consolidation:running"
_NAMESPACE = uuid.UUID("6f1c1d52-6d8e-4a3c-9d0a-6b1f0c0e5a11")


# --- scoring (pure) -------------------------------------------------------------------------------
def _days_between(later: datetime, earlier: str | None) -> float | None:
    if not earlier:
        return None
    try:
        return max(0.0, (later - parse_iso(str(earlier))).total_seconds() / 86400.0)
    except ValueError:
        return None


def relevance(
    *,
    age_days: float,
    days_since_access: float | None,
    access_count: int,
    links: int,
    importance: float,
    confidence: float,
    decay_rate: float,
) -> float:
    """The relevance formula of the module docstring (without the pinned rule)."""
    recency = math.exp(-decay_rate * max(0.0, age_days))
    freshness = 0.0 if days_since_access is None else math.exp(-ACCESS_DECAY * max(0.0, days_since_access))
    frequency = min(1.0, math.log1p(max(0, access_count)) / math.log1p(ACCESS_SATURATION))
    access = 0.6 * freshness + 0.4 * frequency
    link_factor = 1.0 + 0.3 * math.log1p(max(0, links))
    importance = min(1.0, max(0.0, importance))
    confidence = min(1.0, max(0.0, confidence))
    raw = recency * (0.5 + 0.5 * access) * link_factor * (0.5 + importance) * (0.7 + 0.3 * confidence)
    return min(1.0, max(raw, IMPORTANCE_FLOOR * importance))


def is_pinned(doc: MemoryRecord) -> bool:
    tags = {str(t).lower() for t in doc.tags}
    return bool(doc.metadata.get("pinned") is True or tags & set(PIN_TAGS))


def _num(value: Any, default: float) -> float:
    try:
        return float(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def score_memory(doc: MemoryRecord, now: datetime, decay_rate: float, links: int = 0) -> float:
    """A memory's relevance now (`links`: the other memories it shares an edge with); a pinned
    memory never scores below its previous score."""
    age = _days_between(now, doc.timestamp or doc.created_at) or 0.0
    score = relevance(
        age_days=age,
        days_since_access=_days_between(now, doc.last_accessed),
        access_count=int(_num(doc.access_count, 0)),
        links=links,
        importance=_num(doc.importance, 0.5),
        confidence=_num(doc.confidence, 0.5),
        decay_rate=decay_rate,
    )
    previous = doc.relevance_score
    if previous is not None and is_pinned(doc):
        score = max(score, _num(previous, 0.0))
    return round(score, 6)


def protection(doc: MemoryRecord, now: datetime, settings: Settings) -> str | None:
    """Why this memory may never be archived, or None."""
    if is_pinned(doc):
        return "pinned"
    if _num(doc.importance, 0.5) >= settings.consolidation_protect_importance:
        return "importance"
    if doc.type in PROTECTED_TYPES:
        return "type"
    ages = [
        a for a in (_days_between(now, doc.timestamp), _days_between(now, doc.created_at)) if a is not None
    ]
    if not ages or min(ages) < settings.consolidation_grace_period_days:
        return "grace_period"
    return None


def _bucket(score: float) -> str:
    if score > 0.7:
        return "high"
    if score >= 0.3:
        return "medium"
    if score >= 0.1:
        return "low"
    return "very_low"


# --- similarity (pure) ----------------------------------------------------------------------------
def unit_rows(vectors: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        return matrix.reshape(0, 0)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def classify_pair(a: MemoryRecord, b: MemoryRecord, similarity: float) -> tuple[str, float, bool] | None:
    """(kind, confidence, a_is_source) of a creative association between a and b, or None."""
    ta, tb = a.type, b.type
    explainers = ("Insight", "Pattern")
    if ta != tb and (ta in explainers or tb in explainers) and similarity >= 0.5:
        return "explains", 0.7, ta in explainers
    if ta != tb and similarity >= 0.7:
        return "shares_theme", round(similarity, 4), True
    shared = set(a.tags) & set(b.tags)
    if shared and similarity >= 0.3:
        gap = _gap_days(a.timestamp, b.timestamp)
        if gap is not None and gap <= 7:
            return "parallel_context", 0.5, True
    return None


def _gap_days(x: Any, y: Any) -> float | None:
    try:
        return abs((parse_iso(str(x)) - parse_iso(str(y))).total_seconds()) / 86400.0
    except (TypeError, ValueError):
        return None


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return list(out.values())


def _link_block(
    uf: _UnionFind, idx: np.ndarray, unit: np.ndarray, groups: np.ndarray, threshold: float
) -> None:
    block = unit[idx].astype(np.float32)
    sims = block @ block.T
    same = groups[idx][:, None] == groups[idx][None, :]
    rows, cols = np.nonzero(np.triu((sims >= threshold) & same, k=1))
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        uf.union(int(idx[r]), int(idx[c]))


def cluster_indices(
    unit: np.ndarray,
    groups: Sequence[int] | np.ndarray,
    threshold: float,
    min_size: int,
    exact_limit: int = CLUSTER_EXACT_LIMIT,
    tables: int = CLUSTER_LSH_TABLES,
    seed: int = 0x5EED,
) -> list[list[int]]:
    """Connected components (>= min_size, largest first) of the graph linking rows of `unit`
    (unit vectors) in the same group with cosine >= threshold. Exact up to `exact_limit` rows,
    else blocked by random-hyperplane LSH (deterministic for a seed)."""
    n = int(unit.shape[0])
    if n < max(2, min_size):
        return []
    group_ids = np.asarray(groups, dtype=np.int64)
    uf = _UnionFind(n)
    if n <= exact_limit:
        _link_block(uf, np.arange(n), unit, group_ids, threshold)
    else:
        bits = min(16, max(4, math.ceil(math.log2(n / 16))))
        rng = np.random.default_rng(seed)
        weights = 1 << np.arange(bits, dtype=np.int64)
        for _ in range(tables):
            planes = rng.standard_normal((bits, unit.shape[1])).astype(np.float32)
            codes = ((unit.astype(np.float32) @ planes.T) > 0).astype(np.int64) @ weights
            keys = group_ids * (1 << bits) + codes
            order = np.argsort(keys, kind="stable")
            sorted_keys = keys[order]
            bounds = np.flatnonzero(np.diff(sorted_keys)) + 1
            for bucket in np.split(order, bounds):
                for start in range(0, len(bucket), CLUSTER_MAX_BUCKET):
                    chunk = bucket[start : start + CLUSTER_MAX_BUCKET]
                    if len(chunk) >= 2:
                        _link_block(uf, chunk, unit, group_ids, threshold)
    clusters = [g for g in uf.groups() if len(g) >= min_size]
    return sorted(clusters, key=lambda g: (-len(g), g[0]))


_STOPWORDS = frozenset(
    """a about after again all also an and any are as at be because been before being but by can could
    did do does doing for from had has have having he her here hers him his how i if in into is it its
    just me more most my no nor not now of off on once only or other our out over own same she should
    so some such than that the their them then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your yours via per
    use used using uses""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[a-z][a-z0-9_+#.-]{2,}")


def key_terms(contents: Sequence[str], n: int = 5) -> list[str]:
    """The terms most members mention (document frequency, then total count, then alphabetical)."""
    docs: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for text in contents:
        words = [w.strip(".-") for w in _WORD.findall(text.lower())]
        words = [w for w in words if len(w) >= 3 and w not in _STOPWORDS]
        total.update(words)
        docs.update(set(words))
    ranked = sorted(docs, key=lambda w: (-docs[w], -total[w], w))
    return ranked[:n]


def pattern_content(
    size: int, dominant_type: str, first: str | None, last: str | None, terms: Sequence[str]
) -> str:
    span = _gap_days(first, last)
    when = ""
    if first and last and span is not None:
        when = f" from {str(first)[:10]} to {str(last)[:10]} ({round(span)} days)"
    about = f" about {', '.join(terms)}" if terms else ""
    return f"Pattern: {size} {dominant_type} memories{when}{about}."


def new_pattern_id(tenant: str, members: Sequence[str]) -> str:
    return str(uuid.uuid5(_NAMESPACE, tenant + "|" + ",".join(sorted(members))))


def match_patterns(clusters: Sequence[Sequence[str]], existing: dict[str, list[str]]) -> list[str | None]:
    """For each cluster, the existing pattern to update (Jaccard >= 0.5, each used once), or None."""
    used: set[str] = set()
    out: list[str | None] = []
    for members in clusters:
        mine = set(members)
        best, best_score = None, 0.5
        for pid, theirs in existing.items():
            if pid in used:
                continue
            other = set(theirs)
            score = len(mine & other) / len(mine | other) if mine | other else 0.0
            if score >= best_score:
                best, best_score = pid, score
        if best is not None:
            used.add(best)
        out.append(best)
    return out


# --- the passes -----------------------------------------------------------------------------------
@dataclass
class _Pass:
    dry_run: bool
    now: datetime

    @property
    def at(self) -> str:
        return format_utc(self.now)


class Consolidator:
    def __init__(self, svc: Services) -> None:
        self.svc = svc
        self.settings = svc.settings
        self.graph = svc.graph

    def steps_for(self, mode: str) -> tuple[str, ...]:
        if mode == "full":
            forget = ("forget",) if self.settings.consolidation_forget_interval_seconds > 0 else ()
            return ("decay", "creative", "cluster", *forget)
        if mode in SKIPPED_MODES:
            return ()
        if mode not in TASKS:
            raise ValueError(f"unknown consolidation mode {mode!r}")
        return (mode,)

    def run(
        self, mode: str, dry_run: bool = True, trigger: str = "api", run_id: str | None = None
    ) -> dict[str, Any]:
        """Run the mode's steps; a real run is recorded as a :ConsolidationRun."""
        steps = self.steps_for(mode)
        started = utc_now()
        ctx = _Pass(dry_run=dry_run, now=started)
        run: dict[str, Any] = {
            "id": run_id or uuid.uuid4().hex,
            "mode": mode,
            "dry_run": dry_run,
            "trigger": trigger,
            "started_at": format_utc(started),
        }
        results: dict[str, Any] = {}
        error: str | None = None
        if not dry_run:
            self.graph.ensure_consolidation_schema()
        try:
            for step in steps:
                results[step] = getattr(self, step)(ctx)
            if mode == "full" and "forget" not in steps:
                results["forget"] = {"skipped": "forgetting is off (CONSOLIDATION_FORGET_INTERVAL_SECONDS=0)"}
            if mode in SKIPPED_MODES:
                results[mode] = {"skipped": SKIPPED_MODES[mode]}
        except Exception as exc:
            error = f"{exc.__class__.__name__}: {exc}"
            log.exception("consolidation %s failed", mode)
        run.update(finished_at=format_utc(utc_now()), success=error is None, steps=results)
        if error:
            run["error"] = error
        if not dry_run:
            record = {k: v for k, v in run.items() if k != "steps"}
            record["result"] = results
            try:
                self.graph.record_consolidation_run(record, self.settings.consolidation_history_limit, steps)
            finally:
                self.svc.events.publish(EventType.CONSOLIDATION_RUN, run_event(run, self.settings), None)
        if error:
            raise RuntimeError(f"consolidation {mode} failed: {error}")
        return run

    # --- decay and forget: one scoring pass over every active memory -----------------------------
    def _pages(self) -> Iterator[list[tuple[MemoryRecord, int]]]:
        return self.graph.scoring_pages(PAGE)

    def decay(self, ctx: _Pass) -> dict[str, Any]:
        rate = self.settings.consolidation_base_decay_rate
        processed = changed = written = 0
        before: list[float] = []
        after: list[float] = []
        distribution = dict.fromkeys(("high", "medium", "low", "very_low"), 0)
        for page in self._pages():
            rows = []
            for doc, links in page:
                score = score_memory(doc, ctx.now, rate, links)
                previous = doc.relevance_score
                processed += 1
                after.append(score)
                distribution[_bucket(score)] += 1
                if previous is not None:
                    before.append(float(previous))
                if previous is None or abs(float(previous) - score) >= SCORE_EPSILON:
                    rows.append({"id": doc.id, "version": doc.version, "score": score})
            changed += len(rows)
            if not ctx.dry_run:
                written += len(self.graph.write_relevance(rows, ctx.at))
        return {
            "processed": processed,
            "changed": changed,
            "written": written,
            "conflicts": 0 if ctx.dry_run else changed - written,
            "avg_relevance_before": round(sum(before) / len(before), 4) if before else None,
            "avg_relevance_after": round(sum(after) / len(after), 4) if after else None,
            "distribution": distribution,
        }

    def forget(self, ctx: _Pass) -> dict[str, Any]:
        rate = self.settings.consolidation_base_decay_rate
        threshold = self.settings.consolidation_archive_threshold
        examined = 0
        protected: Counter[str] = Counter()
        candidates: list[dict[str, Any]] = []
        archived: list[str] = []
        for page in self._pages():
            rows = []
            for doc, links in page:
                examined += 1
                score = score_memory(doc, ctx.now, rate, links)
                if score >= threshold:
                    continue
                reason = protection(doc, ctx.now, self.settings)
                if reason:
                    protected[reason] += 1
                    continue
                reason = f"relevance {score:.3f} below the archive threshold {threshold}"
                changes = {"state": {"old": "active", "new": "archived"}}
                event = Change(JOB_CONSOLIDATE.actor, reason).event("archived", ctx.at, changes)
                rows.append({"id": doc.id, "version": doc.version, "score": score, "event": event})
            candidates += rows
            if not ctx.dry_run and rows:
                done = self.graph.archive_memories(rows, ctx.at)
                if done:
                    self.svc.sync.request(done, payload_only=True)  # the state changed, not the vector
                archived += done
        ids = [r["id"] for r in candidates] if ctx.dry_run else archived
        return {
            "examined": examined,
            "threshold": threshold,
            "archived": 0 if ctx.dry_run else len(archived),
            "would_archive": len(candidates),
            "archived_ids": ids[:100],
            "protected": dict(protected),
            "conflicts": 0 if ctx.dry_run else len(candidates) - len(archived),
        }

    # --- creative associations --------------------------------------------------------------------
    def _sample(self, size: int) -> list[MemoryRecord]:
        floor = self.settings.consolidation_archive_threshold
        start = str(uuid.UUID(bytes=secrets.token_bytes(16)))
        first = self.graph.vector_page(start, size, floor)
        rest = self.graph.vector_page("", size - len(first), floor) if len(first) < size else []
        seen = {d.id for d in first}
        return first + [d for d in rest if d.id not in seen]

    def creative(self, ctx: _Pass) -> dict[str, Any]:
        sample = [d for d in self._sample(CREATIVE_SAMPLE) if d.embedding]
        if len(sample) < 2:
            return {"sampled": len(sample), "candidates": 0, "created": 0, "updated": 0, "associations": []}
        unit = unit_rows([d.embedding for d in sample if d.embedding])
        sims = unit @ unit.T
        ids = [d.id for d in sample]
        other_links: set[frozenset[str]] = set()
        ours: dict[frozenset[str], tuple[str, str]] = {}
        for start, end, rel, origin in self.graph.links_among(ids):
            if rel == "DISCOVERED" and origin == "consolidation":
                ours[frozenset((start, end))] = (start, end)
            else:
                other_links.add(frozenset((start, end)))
        found: list[dict[str, Any]] = []
        for i in range(len(sample)):
            for j in range(i + 1, len(sample)):
                a, b = sample[i], sample[j]
                pair = frozenset((a.id, b.id))
                if a.tenant != b.tenant or pair in other_links:
                    continue
                sim = float(sims[i, j])
                verdict = classify_pair(a, b, sim)
                if verdict is None:
                    continue
                kind, confidence, a_first = verdict
                src, dst = (a.id, b.id) if a_first else (b.id, a.id)
                if pair in ours:  # keep the direction a previous run chose
                    src, dst = ours[pair]
                found.append(
                    {
                        "a": src,
                        "b": dst,
                        "props": {"kind": kind, "confidence": confidence, "similarity": round(sim, 4)},
                    }
                )
        found.sort(key=lambda r: (-r["props"]["confidence"], -r["props"]["similarity"], r["a"], r["b"]))
        chosen = found[:CREATIVE_MAX_EDGES]
        created = 0 if ctx.dry_run else self.graph.merge_discovered(chosen, ctx.at)
        return {
            "sampled": len(sample),
            "candidates": len(found),
            "created": created,
            "updated": 0 if ctx.dry_run else len(chosen) - created,
            "would_write": len(chosen),
            "associations": [{"from": r["a"], "to": r["b"], **r["props"]} for r in chosen[:10]],
        }

    # --- clustering -------------------------------------------------------------------------------
    def _cluster_pool(self) -> tuple[list[MemoryRecord], np.ndarray, bool]:
        """The memories to cluster and their unit vectors (float16): every active memory, or,
        beyond CLUSTER_VECTOR_BUDGET, a uniform sample of them read in one pass (the bool)."""
        floor = self.settings.consolidation_archive_threshold
        first = next(iter(self.graph.vector_pages(1, floor)), [])
        if not first or not first[0].embedding:
            return [], np.zeros((0, 0), dtype=np.float16), False
        budget = self._cluster_budget(len(first[0].embedding))
        active = self.graph.active_memory_count()
        keep = min(1.0, budget / active) if active else 1.0
        docs: list[MemoryRecord] = []
        blocks: list[np.ndarray] = []
        truncated = keep < 1.0
        for page in self.graph.vector_pages(PAGE, floor, keep):
            block = unit_rows([d.embedding for d in page if d.embedding]).astype(np.float16)
            for d in page:
                d.embedding = None  # the float16 block holds it now
            # The block's own width: vectors of an older model may still be stored.
            room = self._cluster_budget(block.shape[1]) - len(docs)
            docs += page[: max(0, room)]
            blocks.append(block[: max(0, room)])
            if len(page) > room:
                truncated = True
                break
        unit = np.concatenate(blocks) if blocks else np.zeros((0, 0), dtype=np.float16)
        return docs, unit, truncated

    @staticmethod
    def _cluster_budget(dimension: int) -> int:
        return max(CLUSTER_EXACT_LIMIT, CLUSTER_VECTOR_BUDGET // (2 * max(1, dimension)))

    def cluster(self, ctx: _Pass) -> dict[str, Any]:
        docs, unit, truncated = self._cluster_pool()
        tenants = {t: n for n, t in enumerate(sorted({d.tenant for d in docs}))}
        groups = [tenants[d.tenant] for d in docs]
        found = cluster_indices(
            unit,
            groups,
            self.settings.consolidation_cluster_threshold,
            max(2, self.settings.consolidation_min_cluster_size),
        )[:MAX_PATTERNS_PER_RUN]
        clusters = [[docs[i].id for i in members] for members in found]
        existing = self.graph.patterns_of([i for c in clusters for i in c])
        reuse = match_patterns(clusters, existing)
        patterns, created = [], 0
        for members_idx, members, reused in zip(found, clusters, reuse, strict=True):
            props = self._pattern_props([docs[i] for i in members_idx], unit[members_idx], reused)
            patterns.append({**props, "members": members, "action": "update" if reused else "create"})
            if not ctx.dry_run and self.graph.upsert_pattern(props, members, ctx.at):
                created += 1
        return {
            "compared": len(docs),
            "sampled": truncated,
            "clusters": len(clusters),
            "created": created,
            "updated": 0 if ctx.dry_run else len(clusters) - created,
            "patterns": [
                {k: p[k] for k in ("id", "content", "size", "dominant_type", "action")}
                | {"members": p["members"][:20]}
                for p in patterns[:20]
            ],
        }

    def _pattern_props(
        self, members: list[MemoryRecord], unit: np.ndarray, reuse: str | None
    ) -> dict[str, Any]:
        ids = [m.id for m in members]
        tenant = members[0].tenant
        types = Counter(str(m.type) for m in members)
        dominant = sorted(types, key=lambda t: (-types[t], t))[0]
        times = sorted(m.timestamp for m in members if m.timestamp)
        sample_ids = ids[:50]
        contents = [d.content for d in self.graph.get_memories(sample_ids)]
        terms = key_terms(contents)
        tags: Counter[str] = Counter(t for m in members for t in m.tags)
        centroid = unit.astype(np.float32).mean(axis=0)
        norm = float(np.linalg.norm(centroid)) or 1.0
        cohesion = float((unit.astype(np.float32) @ (centroid / norm)).mean())
        first, last = (times[0], times[-1]) if times else (None, None)
        return {
            "id": reuse or new_pattern_id(tenant, ids),
            "tenant": tenant,
            "content": pattern_content(len(ids), dominant, first, last, terms),
            "size": len(ids),
            "dominant_type": dominant,
            "type_counts": ",".join(f"{t}:{types[t]}" for t in sorted(types)),
            "first_at": first,
            "last_at": last,
            "span_days": round(_gap_days(first, last) or 0.0, 2),
            "key_terms": terms,
            "top_tags": [t for t, _ in tags.most_common(5)],
            "cohesion": round(cohesion, 4),
            "threshold": self.settings.consolidation_cluster_threshold,
            "origin": "consolidation",
        }


# --- RQ entry point -------------------------------------------------------------------------------
def task_interval(settings: Settings, task: str) -> int:
    return int(getattr(settings, f"consolidation_{task}_interval_seconds"))


# What a step changed, for the event's `affected_count` (AutoMem's field).
_AFFECTED = {
    "decay": ("written",),
    "creative": ("created", "updated"),
    "cluster": ("created", "updated"),
    "forget": ("archived",),
}


def run_event(run: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """The `consolidation.run` live event of a real run: AutoMem's fields (task_type,
    affected_count, elapsed_ms, success, next_scheduled, steps) with each step's counts only —
    no ids, pattern texts or key terms. A service-wide event: a run spans every tenant."""
    steps = {
        name: {k: v for k, v in result.items() if isinstance(v, int | float | bool) or v is None}
        for name, result in run.get("steps", {}).items()
    }
    affected = sum(int(steps.get(name, {}).get(key) or 0) for name, keys in _AFFECTED.items() for key in keys)
    started, finished = parse_iso(run["started_at"]), parse_iso(run["finished_at"])
    mode = run["mode"]
    interval = task_interval(settings, mode) if mode in TASKS else 0
    scheduled = run["trigger"] == "schedule" and interval > 0 and settings.consolidation_enabled
    event = {
        "run_id": run["id"],
        "task_type": mode,
        "trigger": run["trigger"],
        "success": run["success"],
        "affected_count": affected,
        "elapsed_ms": round((finished - started).total_seconds() * 1000, 1),
        "next_scheduled": format_utc(finished + timedelta(seconds=interval)) if scheduled else None,
        "steps": steps,
    }
    if "error" in run:
        event["error"] = str(run["error"])[:200]
    return event


@job(JobName.CONSOLIDATE)
def run_consolidation(mode: str, dry_run: bool = False, scheduled: bool = False) -> dict[str, Any]:
    """Run one consolidation mode (an RQ job on the `maintenance` queue).

    Real runs hold a Redis lock, so two never overlap (a second one is skipped). A scheduled run
    whose task already ran within half its interval is skipped: several schedulers, or a retried
    enqueue, cannot make a task run twice."""
    svc = current_services()
    if mode not in MODES:
        raise ValueError(f"unknown consolidation mode {mode!r}")
    if scheduled and not dry_run:
        last = svc.graph.consolidation_last_runs().get(mode)
        interval = task_interval(svc.settings, mode) if mode in TASKS else 0
        if last and interval and (utc_now() - parse_iso(last)).total_seconds() < interval / 2:
            return {"mode": mode, "skipped": f"ran at {last}"}
    if dry_run:
        return Consolidator(svc).run(mode, dry_run=True, trigger="job")
    token = secrets.token_hex(8)
    if not svc.queue_redis.set(RUN_LOCK, token, nx=True, ex=CONSOLIDATION_TIMEOUT):
        return {"mode": mode, "skipped": "another consolidation run is in progress"}
    try:
        return Consolidator(svc).run(mode, dry_run=False, trigger="schedule" if scheduled else "job")
    finally:
        # Release only our own lock (compare-and-delete).
        svc.queue_redis.eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
            1,
            RUN_LOCK,
            token,
        )


def consolidation_running(svc: Services) -> bool:
    return bool(svc.queue_redis.exists(RUN_LOCK))
