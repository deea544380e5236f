"""What enrichment derives from a memory: entities and their tags, a short summary, run info.

Pure functions over a stored memory document; the job in `enrichment.jobs` reads the memory,
derives an `Enrichment` here and writes it back only if the client has not changed the memory
since (version guard in the graph store).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from automem.tags import sequence_scope, tag_prefixes
from enrichment.entities import Entity, extract_entities

# Bump when what enrichment derives changes: reconcile then re-enriches older memories.
ENRICHMENT_VERSION = 1

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Enrichment:
    props: dict[str, Any]  # node properties to set
    entities: list[dict[str, Any]]  # {key, tenant, kind, slug, name} for :Entity nodes
    tags_added: list[str]


def derive(
    doc: dict[str, Any],
    *,
    now: str,
    max_entities: int,
    max_tags: int,
    summary_length: int,
    summary: str | None = None,
) -> Enrichment:
    """The enrichment of `doc`; `summary` is an LLM summary when one was made, else rules."""
    metadata = _metadata(doc)
    previous = metadata.get("enrichment") if isinstance(metadata.get("enrichment"), dict) else {}
    auto_before = set(previous.get("tags") or []) if previous else set()
    client_tags = [t for t in (doc.get("tags") or []) if t not in auto_before]
    found = extract_entities(str(doc.get("content") or ""), limit=max_entities)
    room = max(0, max_tags - len(client_tags))
    added = [e.tag for e in found if e.tag not in client_tags][:room]
    tags = [*client_tags, *added]
    summary_text = summary or first_sentence(str(doc.get("content") or ""), summary_length)
    metadata["entities"] = _entities_by_kind(found)
    metadata["enrichment"] = {
        "version": ENRICHMENT_VERSION,
        "at": now,
        "tags": added,
        "entities": len(found),
        "summary": "llm" if summary else "rules",
    }
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
    tenant = str(doc.get("tenant") or "default")
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


def first_sentence(content: str, limit: int) -> str:
    """The first sentence, cut at a word boundary to at most `limit` characters."""
    text = " ".join(content.split())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def _metadata(doc: dict[str, Any]) -> dict[str, Any]:
    raw = doc.get("metadata")
    if isinstance(raw, dict):
        return dict(raw)
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _entities_by_kind(found: list[Entity]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for entity in found:
        out.setdefault(entity.kind, []).append(entity.name)
    return {kind: sorted(set(names)) for kind, names in sorted(out.items())}
