"""What the tools say: the SDK's answers turned into structured outputs and short texts for the
model. Pure functions (no client, no server), so the wording is tested without a service."""

from __future__ import annotations

from automem.client.errors import ApiError
from automem.mcp.schemas import (
    AssociateOutput,
    AssociationFailure,
    HealthOutput,
    RecalledMemory,
    RecallFormat,
    RecallOutput,
    RelationOutput,
    StoreOutput,
)
from automem.schemas import AssociateBatchResult, HealthResponse, Memory, RecallResult, StoreResult


# --- memories -------------------------------------------------------------------------------------
def recalled(item: RecallResult) -> RecalledMemory:
    """A recall hit as the tool shows it: the memory, its score and its graph links."""
    memory = item.memory
    return RecalledMemory(
        memory_id=item.id,
        content=memory.content,
        type=memory.type,
        tags=memory.tags,
        importance=memory.importance,
        timestamp=memory.timestamp,
        score=round(item.score, 4),
        match_type=item.match_type,
        relations=[
            RelationOutput(
                type=r.type, direction=r.direction, memory_id=r.memory.id, content=r.memory.content
            )
            for r in item.relations
        ],
    )


def listed(memory: Memory) -> RecalledMemory:
    """A memory fetched by id or listed by tag: no score, no relations."""
    return RecalledMemory(
        memory_id=memory.id,
        content=memory.content,
        type=memory.type,
        tags=memory.tags,
        importance=memory.importance,
        timestamp=memory.timestamp,
    )


def _lines(n: int, item: RecalledMemory) -> list[str]:
    """One memory in the compact form: content, then id, type, importance, date and tags."""
    score = f"[{item.score:.2f}] " if item.score is not None else ""
    when = (item.timestamp or "")[:10]
    lines = [
        f"{n}. {score}{item.content}",
        f"   id {item.memory_id} | {item.type} | importance {item.importance} | {when} | "
        f"tags: {', '.join(item.tags) or '-'}",
    ]
    for rel in item.relations:
        arrow = "->" if rel.direction == "outgoing" else "<-"
        lines.append(f"   {arrow} {rel.type} {rel.memory_id}: {(rel.content or '')[:80]}")
    return lines


def render(items: list[RecalledMemory], heading: str) -> str:
    """The default answer: one text block, a heading with the count, then each memory."""
    if not items:
        return f"{heading}: nothing found."
    lines = [f"{heading}: {len(items)}"]
    for n, item in enumerate(items, 1):
        lines.extend(_lines(n, item))
    return "\n".join(lines)


def _detailed(n: int, item: RecalledMemory) -> str:
    """One memory with every field on its own line and its relations in full (format=detailed)."""
    fields = [
        ("ID", item.memory_id),
        ("Type", item.type),
        ("Timestamp", item.timestamp),
        ("Importance", item.importance),
        ("Tags", ", ".join(item.tags) or None),
        ("Score", item.score),
        ("Match", item.match_type),
    ]
    lines = [f"{n}. {item.content}", *(f"{name}: {value}" for name, value in fields if value is not None)]
    for rel in item.relations:
        arrow = "->" if rel.direction == "outgoing" else "<-"
        lines.append(f"Relation: {arrow} {rel.type} {rel.memory_id}: {rel.content or ''}")
    return "\n".join(lines)


def recall_texts(out: RecallOutput, heading: str, format: RecallFormat = "text") -> list[str]:
    """The text blocks of a recall answer in AutoMem's formats: `text` one block, `items` a block
    per memory, `detailed` a block per memory with every field, `json` the structured result."""
    if format == "json":
        return [out.model_dump_json(indent=2)]
    if format == "text" or not out.results:
        return [render(out.results, heading)]
    if format == "items":
        return ["\n".join(_lines(n, item)) for n, item in enumerate(out.results, 1)]
    return [_detailed(n, item) for n, item in enumerate(out.results, 1)]


# --- writes ---------------------------------------------------------------------------------------
def too_long_message(length: int, limit: int) -> str:
    """Says how to fix it, since the model can: split or summarise, then store again."""
    return (
        f"Memory rejected: the content is {length} characters, over the hard limit of {limit}. "
        "Split it into smaller, focused memories (150-300 characters each is ideal) or summarise it, "
        "then store again."
    )


def refused_message(exc: ApiError) -> str:
    """The service's own words, with the field at fault and the reason the model can act on."""
    where = f" (field {exc.field})" if exc.field else ""
    return f"automem refused: {exc.message}{where} [{exc.status} {exc.reason}]"


def stored(result: StoreResult, length: int, soft: int) -> StoreOutput:
    """The store answer; says when the service summarised the content, or else when it is over
    the soft limit, because shorter memories recall better."""
    verb = "Already stored (identical content)" if result.deduplicated else "Stored"
    message = f"{verb}: memory {result.memory_id} ({result.type}, confidence {result.confidence})."
    if result.summarized:
        message += f" Summarised {result.original_length} -> {result.summarized_length} characters."
    elif length > soft:
        message += (
            f" Note: {length} characters is over the {soft}-character soft limit; "
            "shorter memories recall better."
        )
    return StoreOutput(
        memory_id=result.memory_id,
        message=message,
        deduplicated=result.deduplicated,
        type=result.type,
        confidence=result.confidence,
        summarized=result.summarized,
        original_length=result.original_length,
        summarized_length=result.summarized_length,
        size_warning=length > soft,
    )


def linked(memory1_id: str, memory2_id: str, relation_type: str, strength: float) -> AssociateOutput:
    """One link as the service made it (its canonical type and the strength it stored)."""
    message = f"Linked {memory1_id} -{relation_type}-> {memory2_id} (strength {strength})."
    return AssociateOutput(
        memory1_id=memory1_id,
        memory2_id=memory2_id,
        relation_type=relation_type,
        strength=strength,
        message=message,
    )


def linked_batch(outcome: AssociateBatchResult, total: int) -> AssociateOutput:
    """A batch answer: how many links were made, and each one that was not with the reason."""
    failed = [AssociationFailure(index=f.index, reason=f.reason, field=f.field) for f in outcome.failed]
    message = f"Linked {outcome.created_count} of {total} associations." + "".join(
        f"\nassociation {f.index} failed: {f.reason}" for f in failed
    )
    return AssociateOutput(
        message=message,
        created_count=outcome.created_count,
        failed_count=outcome.failed_count,
        failed=failed,
    )


# --- health ---------------------------------------------------------------------------------------
def health(report: HealthResponse, endpoint: str) -> tuple[str, HealthOutput]:
    """The health answer: one line with the stores and counts, then each warning."""
    out = HealthOutput(
        status=report.status,
        endpoint=endpoint,
        falkordb=report.falkordb,
        qdrant=report.qdrant,
        memory_count=report.memory_count,
        vector_count=report.vector_count,
        drift=report.drift,
        embedding=report.embedding.model_dump(),
        warnings=report.warnings,
    )
    text = (
        f"automem {report.status}: graph {report.falkordb}, vectors {report.qdrant}, "
        f"{report.memory_count} memories, {report.vector_count} vectors, "
        f"embeddings {report.embedding.provider} ({report.embedding.dimension} dims)"
    )
    return text + "".join(f"\nwarning: {w}" for w in report.warnings), out
