"""Enrichment: what it derives from a memory (entities and their tags, a short summary, run
info) and the job that writes it.

`derive` is a pure function over a stored memory; the job `enrich_memories` reads the memory,
derives an `Enrichment` and writes it back only if the client has not changed the memory since
(version guard in the graph store), then places it in its sequence and links similar memories.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from automem.backlog import ENRICHMENT_VERSION
from automem.counters import ENRICHMENT_STATS_KEY
from automem.entities import EntityName, resolve_aliases
from automem.foreground import Pacer
from automem.history import JOB_ENRICH, diff
from automem.jobnames import JobName
from automem.recall.reldates import relative_dates
from automem.record import MemoryRecord
from automem.services import Services
from automem.tags import sequence_scope, tag_prefixes
from automem.timeutil import now_iso
from enrichment.categories import WordNet, category_words
from enrichment.categories import load as load_wordnet
from enrichment.context import current_services
from enrichment.embedding import contexts_of
from enrichment.entities import Entity, extract_entities
from enrichment.isolation import ItemFailed, clear_failures, isolated
from enrichment.jobevents import enrichment_events, error_text
from enrichment.links import SequenceLocks, link_sequence, link_similar
from enrichment.registry import job

# Reads and guarded writes per memory before giving up: a client editing the memory meanwhile
# queued its own enrichment of the newer version.
_ATTEMPTS = 3

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

# Entity keys -> the entity each now lives on, for keys of merged entities (POST /entity/<slug>/merge).
Resolver = Callable[[Sequence[str]], Mapping[str, EntityName]]


@dataclass(frozen=True)
class Enrichment:
    props: dict[str, Any]  # node properties to set
    entities: list[dict[str, Any]]  # {key, tenant, kind, slug, name} for :Entity nodes
    tags_added: list[str]


def derive(
    doc: MemoryRecord,
    *,
    now: str,
    max_entities: int,
    max_tags: int,
    summary_length: int,
    summary: str | None = None,
    resolve: Resolver | None = None,
    wordnet: WordNet | None = None,
) -> Enrichment:
    """The enrichment of `doc`; `summary` is an LLM summary when one was made, else rules;
    `resolve` maps the names of merged entities to the entities they were merged into;
    `wordnet`: category words for the keyword index (none without it)."""
    metadata = dict(doc.metadata)
    previous = metadata.get("enrichment") if isinstance(metadata.get("enrichment"), dict) else {}
    auto_before = set(previous.get("tags") or []) if previous else set()
    client_tags = [t for t in doc.tags if t not in auto_before]
    found = extract_entities(doc.content, limit=max_entities)
    if resolve is not None:
        found = canonical_entities(found, doc.tenant, resolve)
    room = max(0, max_tags - len(client_tags))
    added = [e.tag for e in found if e.tag not in client_tags][:room]
    tags = [*client_tags, *added]
    summary_text = summary or first_sentence(doc.content, summary_length)
    metadata["entities"] = _entities_by_kind(found)
    metadata["enrichment"] = {
        "version": ENRICHMENT_VERSION,
        "at": now,
        "tags": added,
        "entities": len(found),
        "summary": "llm" if summary else "rules",
    }
    dates = [d.as_metadata() for d in relative_dates(doc.content, doc.timestamp)]
    if dates:
        metadata["enrichment"]["dates"] = dates
    categories = category_words(doc.content, wordnet) if wordnet is not None else []
    if categories:
        metadata["enrichment"]["categories"] = categories
    props = {
        "tags": tags,
        "tag_prefixes": tag_prefixes(tags),
        "metadata": json.dumps(metadata, ensure_ascii=False),
        "summary": summary_text,
        "seq_scope": sequence_scope(tags, metadata),
        "enriched": True,
        "enriched_at": now,
        "enrichment_version": ENRICHMENT_VERSION,
    }
    tenant = doc.tenant
    entities = [
        {
            "key": f"{tenant}:{e.kind}:{e.slug}",
            "tenant": tenant,
            "kind": e.kind,
            "slug": e.slug,
            "name": e.name,
        }
        for e in found
    ]
    return Enrichment(props, entities, added)


def canonical_entities(found: list[Entity], tenant: str, resolve: Resolver) -> list[Entity]:
    """`found` with every merged entity replaced by the one it was merged into (its kind, slug
    and name), each entity once, in the order found."""
    aliases = resolve([f"{tenant}:{e.kind}:{e.slug}" for e in found])
    out: dict[tuple[str, str], Entity] = {}
    for entity in found:
        target = aliases.get(f"{tenant}:{entity.kind}:{entity.slug}")
        if target is not None:
            entity = Entity(target.kind, target.name, target.slug)
        out.setdefault((entity.kind, entity.slug), entity)
    return list(out.values())


def first_sentence(content: str, limit: int) -> str:
    """The first sentence, cut at a word boundary to at most `limit` characters."""
    text = " ".join(content.split())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _entities_by_kind(found: list[Entity]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for entity in found:
        out.setdefault(entity.kind, []).append(entity.name)
    return {kind: sorted(set(names)) for kind, names in sorted(out.items())}


@job(JobName.ENRICH)
def enrich_memories(memory_ids: list[str], force: bool = False) -> dict[str, Any]:
    """Enrich each memory: entities and their tags, MENTIONS edges, a summary, its place in its
    sequence (PRECEDED_BY) and, once it has a vector, SIMILAR_TO links. Announced as live
    events: enrichment.start, then enrichment.complete or enrichment.failed.

    Idempotent: a memory already enriched at the current version is skipped unless `force`.
    A memory that raises an error of its own is recorded and skipped (enrichment.isolation);
    the rest of the batch is enriched.
    The write is guarded by the memory's version, so a client change made while the job ran is
    never reverted; the job re-reads and tries again, and the change also queued its own job.

    Each memory is enriched, linked and handed to the vector store before the next, so a crash
    leaves at most one memory half done; a sequence's lock is kept from one memory to the next
    of the same sequence (taking and freeing it for each was a seventh of an enrichment's time)."""
    svc = current_services()
    enriched: list[str] = []
    failed = 0
    pacer = Pacer(svc.queue_redis, svc.settings.enrichment_read_yield)
    with (
        _recording(svc, pacer) as record,
        enrichment_events(svc, memory_ids) as announced,
        SequenceLocks(svc.queue_redis) as locks,
    ):
        for memory_id in memory_ids:
            work = partial(_enrich_one, svc, memory_id, force, locks)
            started = time.monotonic()
            outcome = isolated(svc, JobName.ENRICH, memory_id, work)
            pacer.pace(time.monotonic() - started)
            if isinstance(outcome, ItemFailed):
                failed += 1
            elif outcome:
                enriched.append(memory_id)
                record(memory_id)
                announced.add(memory_id)
        clear_failures(svc, JobName.ENRICH, enriched)
    return {"enriched": len(enriched), "skipped": len(memory_ids) - len(enriched) - failed, "failed": failed}


def _refresh_retrieval_contexts(svc: Services, predecessors: dict[str, str], current: MemoryRecord) -> None:
    """Embed again the memories whose vector was made with another predecessor's words than
    the one they now follow (a memory arrived late and was spliced in before them). Memories
    not embedded yet are left to their pending embedding job, client vectors to the client.
    The memory being enriched is taken as it was at its guarded write (`current`), not read
    again: a change since then queued an enrichment of its own, which checks again. The other
    memories and the predecessors are read in one query: in an import, nearly every memory
    enriched has a next one (written with it, placed after it), and reading that one, then the
    predecessors, was two round trips a memory."""
    if svc.settings.retrieval_context_chars <= 0:
        return
    others = [i for i in predecessors if i != current.id]
    current_too = current.id in predecessors and _embedded_by_service(current)
    wanted = {*others, *(predecessors[i] for i in others)} | (
        {predecessors[current.id]} if current_too else set()
    )
    wanted -= {current.id, ""}
    if not others and not current_too:
        return
    read = {d.id: d for d in svc.graph.get_memories(sorted(wanted))} if wanted else {}
    read[current.id] = current
    docs = {i: read[i] for i in predecessors if i in read and _embedded_by_service(read[i])}
    if not docs:
        return
    contexts = contexts_of(svc, docs, {i: predecessors[i] or None for i in docs}, read)
    for doc in docs.values():
        follows = contexts[doc.id].id if doc.id in contexts else ""
        if doc.content_hash and (doc.embedding_context or "") != follows:
            svc.jobs.enqueue_embed([doc.id], [doc.content_hash], tenant=doc.tenant, context=follows)


def _embedded_by_service(doc: MemoryRecord) -> bool:
    """Whether the memory has a vector the service made (so one with a retrieval context)."""
    return doc.embedded and doc.embedding_model != "client"


def _enrich_one(svc: Services, memory_id: str, force: bool, locks: SequenceLocks) -> bool:
    """Names of merged entities are mapped to their survivors (POST /entity/<slug>/merge) from
    the second attempt on: the graph store refuses a write that names a merged entity, so the
    first attempt saves the lookup (a round trip, ~4 % of a memory's enrichment) in the common
    case where no name it found was merged, and a write that does name one is redone resolved."""
    s = svc.settings
    for attempt in range(_ATTEMPTS):
        doc = svc.graph.get_memory(memory_id)
        if doc is None or doc.state != "active":
            return False
        if not force and doc.enriched and doc.enrichment_version >= ENRICHMENT_VERSION:
            return False
        now = now_iso()
        plan = derive(
            doc,
            now=now,
            max_entities=s.enrichment_max_entities,
            max_tags=s.max_tags,
            summary_length=s.enrichment_summary_length,
            resolve=_resolver(svc, doc.tenant) if attempt else None,
            wordnet=load_wordnet(s.wordnet_dir),
        )
        event = JOB_ENRICH.event("enriched", now, diff(doc, plan.props))
        if svc.graph.apply_enrichment(memory_id, doc.version, plan.props, plan.entities, event):
            _after_enrichment(svc, doc, plan, now, locks, force)
            return True
    return False


def _after_enrichment(
    svc: Services, doc: MemoryRecord, plan: Enrichment, now: str, locks: SequenceLocks, force: bool
) -> None:
    """What follows a memory's enrichment write: the LLM classification when the rules were
    unsure, its place in its sequence (and new retrieval contexts for the memories it moved),
    its similarity links when no embedding job made them, and its vector store payload."""
    s = svc.settings
    _classify_if_unsure(svc, doc)
    current = doc.with_props(plan.props)
    with locks.hold(current):
        moved = link_sequence(svc.graph, current, now)
    if moved:
        _refresh_retrieval_contexts(svc, moved, current)
    if _links_similar(doc, force):
        link_similar(
            svc.graph,
            svc.similar,
            doc.id,
            s.enrichment_similarity_limit,
            s.enrichment_similarity_threshold,
            now,
        )
    # Tags, rev and the keyword document (resolved dates, category words); the vector is as it was.
    svc.sync.request([doc.id], payload_only=True)


def _links_similar(doc: MemoryRecord, force: bool) -> bool:
    """Whether enrichment links the memory to its similar ones. The embedding job links every
    memory it embeds right after writing its vector, so enrichment links only a vector that came
    with the memory (the client's), or any vector when asked to enrich again (`force`); linking
    a job's vectors a second time was a seventh of each memory's enrichment."""
    return doc.embedded and (force or doc.embedding_model == "client")


def _resolver(svc: Services, tenant: str) -> Resolver:
    """Merged entities' names mapped to their survivors, from the graph (one indexed read)."""

    def resolve(keys: Sequence[str]) -> Mapping[str, EntityName]:
        return resolve_aliases(svc.graph, tenant, keys)

    return resolve


def _classify_if_unsure(svc: Services, doc: MemoryRecord) -> None:
    """Hand a memory the rules classified with low confidence to the LLM classification job."""
    if svc.llm is None or doc.classification in ("explicit", "llm"):
        return
    if float(doc.confidence or 0.0) >= svc.settings.llm_classify_below:
        return
    svc.jobs.enqueue_classify(doc.id, doc.version)


@contextmanager
def _recording(svc: Services, pacer: Pacer) -> Iterator[Any]:
    """Count successes and failures, and the time spent waiting for clients' reads, in Redis
    for GET /enrichment/status (no content logged)."""
    last: list[str] = []
    try:
        yield last.append
    except Exception as exc:
        svc.queue_redis.hset(
            ENRICHMENT_STATS_KEY,
            mapping={"last_error": error_text(exc), "last_error_at": now_iso()},
        )
        svc.queue_redis.hincrby(ENRICHMENT_STATS_KEY, "failures", 1)
        raise
    finally:
        if pacer.paused:
            svc.queue_redis.hincrbyfloat(ENRICHMENT_STATS_KEY, "yielded_seconds", pacer.paused)
        if last:
            svc.queue_redis.hincrby(ENRICHMENT_STATS_KEY, "enriched", len(last))
            svc.queue_redis.hset(
                ENRICHMENT_STATS_KEY,
                mapping={
                    "last_success_id": last[-1],
                    "last_success_at": now_iso(),
                    "last_success_epoch": str(time.time()),
                },
            )
