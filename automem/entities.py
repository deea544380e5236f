"""Entities as the API shows them (GET /entities, /entity/<slug>, /entities/merge-candidates,
/entities/audit) and the entity merge (POST /entity/<slug>/merge), in AutoMem's wire shapes.

Enrichment writes `:Entity {key: "<tenant>:<kind>:<slug>", kind, slug, name}` nodes, MENTIONS
edges from memories, an `entity:<kind>:<slug>` tag and `metadata.entities`. AutoMem names the
kind `category` and an entity's id is its tag; both names are served.

A merge (admin) folds one entity into another on every memory of the tenant: the MENTIONS edge
moves (marked `merged_from`), the tag is rewritten in `tags` and in `metadata.enrichment.tags`,
the name in `metadata.entities`; each memory gets `version` and `rev` bumped, an
`entity_merged` history event (old and new tags) and its vector payload resynced. The merged
entity stays, marked `merged_into`, and the survivor lists it in `aliases`: enrichment maps the
old name to the survivor from then on (`resolve_aliases`). Merging the survivor back into the
merged entity reverses the roles (the merged one becomes whole again and takes every mention).
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator, model_validator

from automem.errors import Conflict, InvalidInput, NotFound, StoreUnavailable
from automem.history import Change, diff
from automem.record import MemoryRecord, memory_wire
from automem.stores.graph import GraphStore
from automem.tags import ENTITY_KINDS, ENTITY_TAG_PREFIX, sequence_scope, tag_prefixes
from automem.timeutil import now_iso

if TYPE_CHECKING:
    from automem.services import Services

log = logging.getLogger(__name__)

MAX_LIMIT = 500  # entities, candidates and audit entries per answer (AutoMem's maximum)
MERGE_PAGE = 200  # memories a merge rewrites per graph statement
_MERGE_ATTEMPTS = 3  # re-reads of a memory a client changed while the merge wrote it
_MAX_HOPS = 5  # merged_into links followed when resolving a name (merges keep them at one)
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# Words a name may carry or drop without naming something else ("Dr Rachel Green", "Acme Inc").
_FILLER = frozenset({"the", "dr", "mr", "mrs", "ms", "prof", "inc", "corp", "llc", "ltd", "co", "gmbh"})


# --- request models ---------------------------------------------------------------------------
def _clamped_limit(value: int) -> int:
    """AutoMem's rule: below 1 is an error, above MAX_LIMIT means MAX_LIMIT."""
    if value < 1:
        raise ValueError("limit must be at least 1")
    return min(value, MAX_LIMIT)


class _Query(BaseModel):
    model_config = ConfigDict(extra="ignore")

    category: str | None = Field(None, max_length=100, description="entity kind (AutoMem's name)")
    kind: str | None = Field(None, max_length=100, description="the same as `category`")

    @model_validator(mode="after")
    def _one_kind(self) -> _Query:
        chosen = self.category or self.kind
        self.category = self.kind = chosen.strip().lower() if chosen else None
        return self


class _LimitedQuery(_Query):
    limit: int = Field(100, description="1 to 500 (larger values mean 500, as AutoMem)")

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int) -> int:
        return _clamped_limit(value)


class EntitiesQuery(_LimitedQuery):
    pass


class EntityQuery(_Query):
    memory_limit: int = Field(20, ge=0, le=100, description="memories mentioning it to include")


class MergeCandidatesQuery(_LimitedQuery):
    pass


class EntityAuditQuery(_LimitedQuery):
    summary: bool = Field(False, description="counts only, no entries")
    include_merge_candidates: bool = False
    reason: str | None = Field(
        None, max_length=50, description="only entries rejected for it ('accepted': only accepted ones)"
    )
    offset: int = Field(0, ge=0, le=1_000_000_000)


class EntityMergeBody(BaseModel):
    """POST /entity/<slug>/merge: fold this entity into `merge_into`."""

    model_config = ConfigDict(extra="ignore")

    merge_into: StrictStr = Field(description="slug of the entity that survives")
    category: StrictStr | None = Field(
        None, description="kind of the merged entity, when its slug has several"
    )
    merge_into_category: StrictStr | None = Field(
        None, description="kind of the survivor (default: the same)"
    )
    reason: StrictStr | None = Field(None, description="why: recorded in each changed memory's history")

    @field_validator("merge_into")
    @classmethod
    def _target(cls, value: str) -> str:
        slug = value.strip().lower()
        if not _is_slug(slug):
            raise ValueError("must be an entity slug like 'rachel-green'")
        return slug

    @field_validator("category", "merge_into_category")
    @classmethod
    def _kind(cls, value: str | None) -> str | None:
        return value.strip().lower() if value else None


def _is_slug(text: str) -> bool:
    """Lowercase letters and digits joined by single hyphens, as enrichment writes slugs."""
    return len(text) <= 200 and _SLUG.match(text) is not None


def check_slug(value: str, field: str) -> str:
    """The slug of a path or body (case folded), else 400 naming `field`."""
    slug = value.strip().lower()
    if not _is_slug(slug):
        raise InvalidInput(f"{field} must be an entity slug like 'rachel-green'", field=field)
    return slug


# --- names --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EntityName:
    kind: str
    slug: str
    name: str

    @property
    def tag(self) -> str:
        return f"{ENTITY_TAG_PREFIX}{self.kind}:{self.slug}"

    @classmethod
    def of(cls, entity: dict[str, Any]) -> EntityName:
        return cls(str(entity["kind"]), str(entity["slug"]), str(entity.get("name") or entity["slug"]))


def entity_id(key: str | None) -> str | None:
    """AutoMem's id of an entity (its tag) from our key `<tenant>:<kind>:<slug>`."""
    if not key:
        return None
    _, kind, slug = key.rsplit(":", 2)
    return f"{ENTITY_TAG_PREFIX}{kind}:{slug}"


def entity_wire(entity: dict[str, Any]) -> dict[str, Any]:
    tag = entity_id(entity["key"])
    return {
        "id": tag,
        "tag": tag,
        "key": entity["key"],
        "slug": entity["slug"],
        "name": entity["name"],
        "category": entity["kind"],
        "kind": entity["kind"],
        "aliases": entity["aliases"],
        "alias_names": entity["alias_names"],
        "reference_count": entity["references"],
        "created_at": entity["created_at"],
        "merged_into": entity_id(entity["merged_into"]),
        "merged_at": entity["merged_at"],
    }


def _fold(text: str) -> str:
    """A name or slug without case, accents and separators ("José Ruiz" -> "jose-ruiz")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _NON_ALNUM.sub("-", ascii_text.lower()).strip("-")


# --- reads --------------------------------------------------------------------------------------
def list_entities(graph: GraphStore, tenant: str, query: EntitiesQuery) -> dict[str, Any]:
    found = graph.list_entities(tenant, query.category, query.limit)
    active = graph.entity_stats([e["key"] for e in found])
    entities = [{**entity_wire(e), "memory_count": active.get(e["key"], 0)} for e in found]
    return {
        "status": "success",
        "entities": entities,
        "count": len(entities),
        "category": query.category,
        "limit": query.limit,
    }


def get_entity(graph: GraphStore, tenant: str, slug: str, query: EntityQuery) -> dict[str, Any]:
    slug = check_slug(slug, "slug")
    matches = [e for e in graph.find_entities(tenant, slug, query.category) if not e["merged_into"]]
    if not matches:
        raise NotFound(f"entity '{slug}' not found", field="slug")
    matches.sort(key=lambda e: (e["slug"] != slug, -e["references"], e["kind"]))
    entity = matches[0]
    count, ids = graph.entity_memories(tenant, entity["key"], query.memory_limit)
    docs = {d.id: d for d in graph.get_memories(ids)}
    return {
        "status": "success",
        "entity": {**entity_wire(entity), "memory_count": count},
        "matched_by": "slug" if entity["slug"] == slug else "alias",
        "other_matches": [entity_id(e["key"]) for e in matches[1:]],
        "memories": [memory_wire(docs[i]) for i in ids if i in docs],
        "memory_count": count,
        "memory_limit": query.memory_limit,
    }


def resolve_aliases(graph: GraphStore, tenant: str, keys: Sequence[str]) -> dict[str, EntityName]:
    """For each key naming a merged entity, the entity it lives on as now (merged_into followed).
    Enrichment asks this before it writes entities, so a merged name maps to its survivor."""
    out: dict[str, EntityName] = {}
    pending = {k: k for k in dict.fromkeys(keys)}  # original key -> key to look up next
    for _ in range(_MAX_HOPS):
        redirects = graph.entity_redirects(tenant, list(set(pending.values())))
        if not redirects:
            break
        moved = {}
        for original, current in pending.items():
            if current in redirects:
                target = redirects[current]
                out[original] = EntityName.of(target)
                moved[original] = str(target["key"])
        pending = moved
    return out


# --- merge candidates ---------------------------------------------------------------------------
CANDIDATE_RULES = {
    "same_name": 0.9,  # same kind, slugs equal once fillers and separators go ("open-ai", "openai")
    "name_prefix": 0.75,  # same kind, a name and a longer name ("rachel", "rachel-green")
    "short_form": 0.6,  # same kind, a slug that starts the other, at least half as long ("rach", "rachel")
    "same_slug_other_kind": 0.5,  # one slug under two kinds ("stripe" tool and organization)
}


def _folded(slug: str) -> str:
    return "".join(t for t in slug.split("-") if t not in _FILLER) or slug.replace("-", "")


def _pair_reason(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """Why two entities may be one (the strongest rule that applies), or None."""
    if a["kind"] != b["kind"]:
        return "same_slug_other_kind" if a["slug"] == b["slug"] else None
    short, long = sorted((a["slug"], b["slug"]), key=len)
    if _folded(short) == _folded(long):
        return "same_name"
    if long.startswith(short + "-"):
        return "name_prefix"
    if long.startswith(short) and len(short) >= 3 and 2 * len(short) >= len(long):
        return "short_form"
    return None


def _candidate_pairs(
    entities: Sequence[dict[str, Any]],
) -> Iterable[tuple[dict[str, Any], dict[str, Any], str]]:
    """Pairs meeting a rule, found without comparing every pair: equal folded names share a
    bucket, and a slug's prefix-extensions follow it in sorted order."""
    buckets: dict[tuple[str, str], list[dict[str, Any]]] = {}
    by_slug: dict[str, list[dict[str, Any]]] = {}
    for e in entities:
        buckets.setdefault((e["kind"], _folded(e["slug"])), []).append(e)
        by_slug.setdefault(e["slug"], []).append(e)
    for group in [*buckets.values(), *by_slug.values()]:
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if (reason := _pair_reason(a, b)) is not None:
                    yield a, b, reason
    ordered = sorted(entities, key=lambda e: (e["kind"], e["slug"]))
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 : i + 51]:  # a slug has few extensions worth reviewing
            if b["kind"] != a["kind"] or not b["slug"].startswith(a["slug"]):
                break
            if (reason := _pair_reason(a, b)) in ("name_prefix", "short_form"):
                yield a, b, reason


def merge_candidates(entities: Sequence[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Pairs of entities likely to be one (CANDIDATE_RULES), the likeliest first; the canonical
    one is the more mentioned (then the longer slug, the fuller name)."""
    best: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any], str]] = {}
    for a, b, reason in _candidate_pairs(entities):
        first, second = sorted((str(a["key"]), str(b["key"])))
        pair = (first, second)
        kept = best.get(pair)
        if kept is None or CANDIDATE_RULES[reason] > CANDIDATE_RULES[kept[2]]:
            best[pair] = (a, b, reason)
    ranked = sorted(
        best.values(),
        key=lambda p: (
            -CANDIDATE_RULES[p[2]],
            -(p[0]["references"] + p[1]["references"]),
            p[0]["key"],
            p[1]["key"],
        ),
    )
    return [_candidate(a, b, reason) for a, b, reason in ranked[:limit]]


def _candidate(a: dict[str, Any], b: dict[str, Any], reason: str) -> dict[str, Any]:
    canonical, alias = sorted((a, b), key=lambda e: (-e["references"], -len(e["slug"]), e["slug"]))
    return {
        "entity_a": entity_id(a["key"]),
        "entity_b": entity_id(b["key"]),
        "canonical": entity_id(canonical["key"]),
        "alias": entity_id(alias["key"]),
        "confidence": CANDIDATE_RULES[reason],
        "reason": reason,
        "auto_merge": False,  # merges are always an admin's decision here
        "names": [a["name"], b["name"]],
        "reference_counts": [a["references"], b["references"]],
        "merge": {
            "path": f"/entity/{alias['slug']}/merge",
            "body": {
                "merge_into": canonical["slug"],
                "category": alias["kind"],
                "merge_into_category": canonical["kind"],
            },
        },
    }


def candidates(graph: GraphStore, tenant: str, scan: int, query: MergeCandidatesQuery) -> dict[str, Any]:
    entities = graph.list_entities(tenant, query.category, scan)
    found = merge_candidates(entities, query.limit)
    return {
        "status": "success",
        "candidates": found,
        "count": len(found),
        "scanned": len(entities),
        "scan_limit": scan,
        "rules": CANDIDATE_RULES,
    }


# --- audit --------------------------------------------------------------------------------------
AUDIT_REASONS = (
    "malformed",
    "unknown_category",
    "bad_slug",
    "too_short",
    "too_long",
    "numeric",
    "no_entity",
    "merged",
)


def tag_problems(tag: str, entity: dict[str, Any] | None) -> list[str]:
    """What is wrong with an entity tag (AUDIT_REASONS); empty when it passes."""
    parts = tag.split(":")
    if len(parts) != 3:
        return ["malformed"]
    _, kind, slug = parts
    problems = [] if kind in ENTITY_KINDS else ["unknown_category"]
    if not _SLUG.match(slug):
        problems.append("bad_slug")
    if len(slug) < 2:
        problems.append("too_short")
    if len(slug) > 64:
        problems.append("too_long")
    if slug.replace("-", "").isdigit():
        problems.append("numeric")
    if entity is None:
        problems.append("no_entity")
    elif entity["merged_into"]:
        problems.append("merged")
    return problems


def audit(graph: GraphStore, tenant: str, scan: int, query: EntityAuditQuery) -> dict[str, Any]:
    """A dry run over every entity tag on the tenant's active memories: nothing is written."""
    counts = graph.entity_tag_counts(tenant)
    keys = [f"{tenant}:{t.split(':', 2)[1]}:{t.split(':', 2)[2]}" for t, _ in counts if t.count(":") == 2]
    entities = graph.entities_by_keys(tenant, keys)
    entries = [_audit_entry(tag, n, tenant, entities) for tag, n in counts]
    chosen = [e for e in entries if _wanted(e, query)]
    page = chosen[query.offset : query.offset + query.limit]
    out: dict[str, Any] = {
        "status": "success",
        "dry_run": True,
        "summary": _audit_summary(entries),
        "entries": [] if query.summary else page,
        "count": 0 if query.summary else len(page),
        "total": len(chosen),
        "has_more": not query.summary and query.offset + len(page) < len(chosen),
        "reasons": list(AUDIT_REASONS),
    }
    if query.include_merge_candidates:
        out["merge_candidates"] = merge_candidates(
            graph.list_entities(tenant, query.category, scan), query.limit
        )
    return out


def _audit_entry(tag: str, count: int, tenant: str, entities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    parts = tag.split(":", 2)
    kind, slug = (parts[1], parts[2]) if len(parts) == 3 else (None, None)
    entity = entities.get(f"{tenant}:{kind}:{slug}") if kind is not None else None
    problems = tag_problems(tag, entity)
    return {
        "tag": tag,
        "category": kind,
        "slug": slug,
        "memory_count": count,
        "accepted": not problems,
        "reasons": problems,
        "merged_into": entity_id(entity["merged_into"]) if entity else None,
    }


def _wanted(entry: dict[str, Any], query: EntityAuditQuery) -> bool:
    if query.category and entry["category"] != query.category:
        return False
    if query.reason == "accepted":
        return bool(entry["accepted"])
    return query.reason is None or query.reason in entry["reasons"]


def _audit_summary(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_reason: dict[str, int] = {}
    by_category: dict[str, dict[str, int]] = {}
    for entry in entries:
        for reason in entry["reasons"]:
            by_reason[reason] = by_reason.get(reason, 0) + 1
        bucket = by_category.setdefault(str(entry["category"]), {"accepted": 0, "rejected": 0})
        bucket["accepted" if entry["accepted"] else "rejected"] += 1
    accepted = sum(1 for e in entries if e["accepted"])
    return {
        "tags": len(entries),
        "accepted": accepted,
        "rejected": len(entries) - accepted,
        "by_reason": by_reason,
        "by_category": by_category,
    }


# --- the merge ----------------------------------------------------------------------------------
def rewrite_for_merge(doc: MemoryRecord, source: EntityName, target: EntityName, now: str) -> dict[str, Any]:
    """The property patch that moves a memory's mention of `source` to `target`: the tag in
    `tags` and `metadata.enrichment.tags`, the name in `metadata.entities`."""
    tags = _swapped(doc.tags, source.tag, target.tag)
    metadata = json.loads(json.dumps(doc.metadata))  # a deep copy: the record stays as read
    run = metadata.get("enrichment")
    if isinstance(run, dict) and isinstance(run.get("tags"), list):
        run["tags"] = _swapped(run["tags"], source.tag, target.tag)
    names = metadata.get("entities")
    if isinstance(names, dict):
        metadata["entities"] = _renamed(names, source, target)
    props: dict[str, Any] = {"updated_at": now}
    if tags != doc.tags:
        props.update(tags=tags, tag_prefixes=tag_prefixes(tags), seq_scope=sequence_scope(tags, metadata))
    if metadata != doc.metadata:
        props["metadata"] = json.dumps(metadata, ensure_ascii=False)
    return props


def _swapped(tags: Sequence[Any], old: str, new: str) -> list[Any]:
    return list(dict.fromkeys(new if t == old else t for t in tags))


def _renamed(names: dict[str, Any], source: EntityName, target: EntityName) -> dict[str, Any]:
    """metadata.entities ({kind: [names]}) with the source's name replaced by the target's."""
    out = dict(names)
    listed = [n for n in out.get(source.kind) or [] if isinstance(n, str)]
    kept = [n for n in listed if _fold(n) != source.slug and n != source.name]
    if len(kept) == len(listed):
        return out
    out[source.kind] = kept
    out[target.kind] = sorted({*(out.get(target.kind) or []), target.name})
    return {k: v for k, v in sorted(out.items()) if v}


def merge(svc: Services, tenant: str, slug: str, body: EntityMergeBody, change: Change) -> dict[str, Any]:
    graph = svc.graph
    source, target = _merge_pair(graph, tenant, check_slug(slug, "slug"), body)
    already = source["merged_into"] == target["key"]
    reversed_merge = target["merged_into"] == source["key"]
    if not already:
        aliases = _alias_lists(target, source)
        marked = graph.mark_entity_merged(
            tenant, source["key"], target["key"], target["merged_into"], aliases, now_iso(), change.actor
        )
        if not marked:
            raise Conflict("the entities changed while merging them; retry", reason="entity_changed")
    totals, skipped = _move_memories(svc, tenant, source, target, change)
    after = graph.entities_by_keys(tenant, [source["key"], target["key"]])
    return {
        "status": "success",
        "merge": {
            "canonical": entity_id(target["key"]),
            "alias": entity_id(source["key"]),
            "alias_slug": source["slug"],
            **totals,
            "skipped": skipped,
            "already_merged": already,
            "reversed": reversed_merge,
        },
        "entity": entity_wire(after[target["key"]]),
        "merged": entity_wire(after[source["key"]]),
    }


def _merge_pair(
    graph: GraphStore, tenant: str, slug: str, body: EntityMergeBody
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(entity to merge, entity it goes into): 404 when either is absent or merged elsewhere,
    400 when they are one entity or a slug is ambiguous without its category."""
    source = _exactly_one(graph, tenant, slug, body.category, ("slug", "category"))
    kind = body.merge_into_category
    if kind is None and any(
        e["kind"] == source["kind"] for e in _by_slug(graph, tenant, body.merge_into, None)
    ):
        kind = source["kind"]
    target = _exactly_one(graph, tenant, body.merge_into, kind, ("merge_into", "merge_into_category"))
    if source["key"] == target["key"]:
        raise InvalidInput("an entity cannot be merged into itself", field="merge_into")
    if source["merged_into"] not in (None, target["key"]):
        raise _merged_elsewhere(source)
    if target["merged_into"] not in (None, source["key"]):
        raise _merged_elsewhere(target)
    return source, target


def _by_slug(graph: GraphStore, tenant: str, slug: str, kind: str | None) -> list[dict[str, Any]]:
    return [e for e in graph.find_entities(tenant, slug, kind) if e["slug"] == slug]


def _exactly_one(
    graph: GraphStore, tenant: str, slug: str, kind: str | None, fields: tuple[str, str]
) -> dict[str, Any]:
    """The one entity with this slug (and kind); `fields` name the slug and kind inputs."""
    found = _by_slug(graph, tenant, slug, kind)
    if not found:
        raise NotFound(f"entity '{slug}' not found", field=fields[0])
    if len(found) > 1:
        kinds = ", ".join(sorted(e["kind"] for e in found))
        raise InvalidInput(
            f"'{slug}' names entities of several kinds ({kinds}): give {fields[1]}", field=fields[1]
        )
    return found[0]


def _merged_elsewhere(entity: dict[str, Any]) -> NotFound:
    into = entity_id(entity["merged_into"])
    return NotFound(
        f"entity '{entity['slug']}' was merged into {into}; use that entity",
        reason="entity_merged",
        extra={"merged_into": into},
    )


def _alias_lists(target: dict[str, Any], source: dict[str, Any]) -> dict[str, list[str]]:
    """The survivor's aliases after the merge: its own, the merged entity and that one's aliases
    (never itself, which a reversed merge would otherwise bring back)."""
    keys = [
        k
        for k in dict.fromkeys([*target["alias_keys"], source["key"], *source["alias_keys"]])
        if k != target["key"]
    ]
    names = [
        n
        for n in dict.fromkeys([*target["alias_names"], source["name"], *source["alias_names"]])
        if n and n != target["name"]
    ]
    return {"aliases": [k.rsplit(":", 1)[1] for k in keys], "alias_keys": keys, "alias_names": names}


def _move_memories(
    svc: Services, tenant: str, source: dict[str, Any], target: dict[str, Any], change: Change
) -> tuple[dict[str, int], list[str]]:
    """Rewrite every memory still linked to the source, a page at a time, until none is left
    (memories a client kept changing through every attempt are skipped and reported)."""
    names = (EntityName.of(source), EntityName.of(target))
    totals = {"memories_updated": 0, "edges_moved": 0, "tags_rewritten": 0}
    seen: list[str] = []
    skipped: list[str] = []
    while ids := svc.graph.entity_merge_page(tenant, source["key"], names[0].tag, seen, MERGE_PAGE):
        written, failed, tags, edges = _move_page(svc, ids, (source["key"], target["key"]), names, change)
        totals["memories_updated"] += len(written)
        totals["edges_moved"] += edges
        totals["tags_rewritten"] += tags
        seen += ids  # written ones are no longer linked; the rest must not come round again
        skipped += failed
        _sync(svc, written)
    return totals, skipped


def _move_page(
    svc: Services,
    ids: list[str],
    keys: tuple[str, str],
    names: tuple[EntityName, EntityName],
    change: Change,
) -> tuple[list[str], list[str], int, int]:
    """(ids written, ids still failing, how many had the tag rewritten, edges moved); guarded by
    each memory's version, re-read and retried when a client changed it in between."""
    written: list[str] = []
    tags = edges = 0
    pending = ids
    for _ in range(_MERGE_ATTEMPTS):
        now = now_iso()
        docs = svc.graph.get_memories(pending)
        rows = [_merge_row(doc, names, now, change) for doc in docs]
        done = dict(svc.graph.apply_entity_merge(rows, keys[0], keys[1], now))
        written += list(done)
        edges += sum(done.values())
        tags += sum(1 for d in docs if d.id in done and names[0].tag in d.tags)
        pending = [d.id for d in docs if d.id not in done]  # a purged memory just drops out
        if not pending:
            break
    return written, pending, tags, edges


def _merge_row(
    doc: MemoryRecord, names: tuple[EntityName, EntityName], now: str, change: Change
) -> dict[str, Any]:
    source, target = names
    props = rewrite_for_merge(doc, source, target, now)
    changes = diff(doc, props)
    changes.pop("updated_at", None)  # the event's own time says it
    changes["entity"] = {"old": source.tag, "new": target.tag}
    return {
        "id": doc.id,
        "version": doc.version,
        "props": props,
        "event": change.event("entity_merged", now, changes),
    }


def _sync(svc: Services, ids: list[str]) -> None:
    """Resync the changed memories' vector payloads (they carry the tags); the graph write is
    committed, so a failure here is repaired by the owner's repair pass, never a 5xx."""
    if not ids:
        return
    try:
        svc.sync.request(ids, payload_only=True)
    except StoreUnavailable:
        raise
    except Exception:
        log.exception("vector sync of %d merged memories failed; the repair pass will redo it", len(ids))
