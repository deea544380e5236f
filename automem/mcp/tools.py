"""The memory tools: module-level async functions over a ToolContext (the SDK client and the
content limits). Each takes the context first and the tool's arguments after it; the server
binds the context and publishes the rest of the signature as the tool's input schema, and the
return annotation's model as its output schema. The docstrings are the descriptions the model
reads.

Argument names are AutoMem's (its REST fields and its MCP bridges'), so a client or prompt
written for AutoMem works here; a few AutoMem options have a name of their own here too
(`current_only` is the legacy form of `state_mode`; `exhaustive` lists by tag like
memories_by_tag).
"""

# No `from __future__ import annotations`: the server reads these signatures at runtime.
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, cast

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from automem.client import AsyncAutomemClient
from automem.client._calls import Association
from automem.client.errors import ApiError, AutomemClientError, NotFoundError
from automem.mcp import render
from automem.mcp.schemas import (
    AssociateOutput,
    AssociationInput,
    DeleteOutput,
    HealthOutput,
    IsoTime,
    MemoryTypeName,
    NewContent,
    RecallFormat,
    RecallOutput,
    RelationName,
    ReplacementContent,
    StoreOutput,
    Tags,
    Unit,
    UpdateOutput,
)
from automem.relations import AUTHORABLE

T = TypeVar("T")


@dataclass(frozen=True)
class ToolContext:
    """What the tools share, built once per server: they hold no other state, so a tool is a
    plain function of (context, arguments) and can be called without a server."""

    client: AsyncAutomemClient
    hard_limit: int
    soft_limit: int


# --- results --------------------------------------------------------------------------------------
def result(data: BaseModel, *texts: str) -> CallToolResult:
    """A successful answer: text blocks for the model, `data` as the structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=t) for t in texts], structured_content=data.model_dump()
    )


def error(text: str, data: dict[str, Any] | None = None) -> CallToolResult:
    """A tool error: the model reads the text and can act on it (the call itself succeeded)."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data, is_error=True
    )


def too_long(length: int, limit: int) -> CallToolResult:
    """Refused before any request: the service would refuse it too, with a less helpful message."""
    return error(
        render.too_long_message(length, limit),
        {"error": "content_too_large", "content_length": length, "hard_limit": limit},
    )


async def _call(action: Callable[[], Awaitable[T]]) -> T | CallToolResult:
    """Run one SDK call; an API or network error becomes a tool error the model can read."""
    try:
        return await action()
    except ApiError as exc:
        return error(
            render.refused_message(exc),
            {"status": exc.status, "reason": exc.reason, "field": exc.field, "message": exc.message},
        )
    except AutomemClientError as exc:
        return error(f"automem is unreachable: {exc}", {"error": str(exc)})


def given(**fields: Any) -> dict[str, Any]:
    """The fields the caller set: None means "not given", so the service applies its default."""
    return {name: value for name, value in fields.items() if value is not None}


# --- store ----------------------------------------------------------------------------------------
async def store_memory(
    ctx: ToolContext,
    content: NewContent,
    tags: Tags | None = None,
    importance: Annotated[
        Unit | None, Field(description="0.9+ critical, 0.7-0.9 important, 0.5-0.7 standard (default 0.5)")
    ] = None,
    type: Annotated[
        MemoryTypeName | None, Field(description="classified from the content when left out")
    ] = None,
    confidence: Annotated[Unit | None, Field(description="confidence in the type")] = None,
    metadata: Annotated[
        dict[str, Any] | None,
        Field(description="structured details, e.g. files_modified, error_signature"),
    ] = None,
    timestamp: Annotated[IsoTime | None, Field(description="when it happened (default: now)")] = None,
    t_valid: Annotated[IsoTime | None, Field(description="valid from")] = None,
    t_invalid: Annotated[IsoTime | None, Field(description="valid until")] = None,
    embedding: Annotated[
        list[float] | None, Field(description="a precomputed vector of the service's dimension")
    ] = None,
    id: Annotated[str | None, Field(description="a UUID for the new memory (default: generated)")] = None,
    updated_at: Annotated[IsoTime | None, Field(description="last updated (default: the timestamp)")] = None,
    last_accessed: Annotated[
        IsoTime | None, Field(description="last recalled (default: the timestamp)")
    ] = None,
) -> Annotated[CallToolResult, StoreOutput]:
    """Store a memory: a decision with its rationale, a bug's root cause and fix, a pattern, a
    user preference or correction. Not for trivial edits, secrets or temporary output."""
    text = content.strip()
    if len(text) > ctx.hard_limit:
        return too_long(len(text), ctx.hard_limit)
    fields = given(
        tags=tags,
        importance=importance,
        type=type,
        confidence=confidence,
        metadata=metadata,
        timestamp=timestamp,
        t_valid=t_valid,
        t_invalid=t_invalid,
        embedding=embedding,
        id=id,
        updated_at=updated_at,
        last_accessed=last_accessed,
    )
    stored = await _call(lambda: ctx.client.store(text, **fields))
    if isinstance(stored, CallToolResult):
        return stored
    out = render.stored(stored, len(text), ctx.soft_limit)
    return result(out, out.message)


# --- recall ---------------------------------------------------------------------------------------
async def recall_memory(
    ctx: ToolContext,
    query: Annotated[str | None, Field(description="what to look for, in natural language")] = None,
    memory_id: Annotated[
        str | None, Field(description="fetch this one memory (other parameters but format are ignored)")
    ] = None,
    tags: Annotated[Tags | None, Field(description="only memories under these tags")] = None,
    tag_mode: Literal["any", "all"] = "any",
    tag_match: Literal["prefix", "exact"] = "prefix",
    exclude_tags: Annotated[
        list[str] | None, Field(description="leave out memories under these tags")
    ] = None,
    context_tags: Annotated[list[str] | None, Field(description="prefer memories under these tags")] = None,
    types: Annotated[list[MemoryTypeName] | None, Field(description="only these types")] = None,
    time_query: Annotated[
        str | None, Field(description="e.g. today, yesterday, last 2 weeks, this month, since 2025-01-01")
    ] = None,
    start: Annotated[IsoTime | None, Field(description="from (inclusive)")] = None,
    end: Annotated[IsoTime | None, Field(description="until")] = None,
    sort: Literal["score", "time_desc", "time_asc"] | None = None,
    limit: Annotated[int, Field(ge=1, le=100, description="results (default 5)")] = 5,
    min_score: Annotated[Unit | None, Field(description="drop results scoring below this")] = None,
    state_mode: Annotated[
        Literal["current", "history"],
        Field(description="current: hide superseded, expired and archived memories; history: show them"),
    ] = "current",
    expand_relations: Annotated[bool, Field(description="add memories linked in the graph")] = True,
    expand_entities: Annotated[
        bool, Field(description="add memories about the same people, tools, projects")
    ] = True,
    current_only: Annotated[
        bool | None, Field(description="AutoMem's older form of state_mode: true is current, false history")
    ] = None,
    embedding: Annotated[
        list[float] | None, Field(description="search by this vector instead of embedding the query")
    ] = None,
    relation_limit: Annotated[
        int | None, Field(ge=0, le=200, description="graph links followed and shown per result (default 5)")
    ] = None,
    expansion_limit: Annotated[
        int | None, Field(ge=0, le=500, description="memories added by expansion at most (default 25)")
    ] = None,
    expand_min_importance: Annotated[
        Unit | None, Field(description="expansion adds only memories at least this important")
    ] = None,
    expand_min_strength: Annotated[
        Unit | None, Field(description="expansion follows only links at least this strong")
    ] = None,
    exhaustive: Annotated[
        bool, Field(description="list every memory under tags page by page (as memories_by_tag), unranked")
    ] = False,
    offset: Annotated[int, Field(ge=0, description="with exhaustive: the page's offset")] = 0,
    format: Annotated[
        RecallFormat,
        Field(
            description="text: one block; items: a block per memory; detailed: a block per memory "
            "with every field; json: the structured result as JSON"
        ),
    ] = "text",
) -> Annotated[CallToolResult, RecallOutput]:
    """Recall memories by meaning, keywords, tags, time and graph links. Use it at the start of a
    task, before decisions and when debugging; without a query it lists memories under the tags."""
    if memory_id:
        return await _fetch(ctx, memory_id, format)
    if exhaustive:
        if not tags:
            return error("exhaustive lists the memories under tags: give at least one tag.")
        return await _by_tag(ctx, tags, tag_mode, tag_match, limit, offset, format)
    params = given(
        tags=tags,
        tag_mode=tag_mode,
        tag_match=tag_match,
        exclude_tags=exclude_tags,
        context_tags=context_tags,
        types=types,
        time_query=time_query,
        start=start,
        end=end,
        sort=sort,
        limit=limit,
        min_score=min_score,
        state_mode=state_mode,
        expand_relations=expand_relations,
        expand_entities=expand_entities,
        embedding=embedding,
        relation_limit=relation_limit,
        expansion_limit=expansion_limit,
        expand_min_importance=expand_min_importance,
        expand_min_strength=expand_min_strength,
    )
    if current_only is not None:  # as in AutoMem, the legacy flag wins over state_mode
        params["state_mode"] = "current" if current_only else "history"
    response = await _call(lambda: ctx.client.recall(query, **params))
    if isinstance(response, CallToolResult):
        return response
    items = [render.recalled(r) for r in response.results]
    heading = f"Memories for {query!r}" if query else "Memories"
    return _recall_result(RecallOutput(count=len(items), results=items), heading, format)


def _recall_result(out: RecallOutput, heading: str, format: RecallFormat) -> CallToolResult:
    """Every recall answer goes through here, so `format` applies to each mode alike."""
    return result(out, *render.recall_texts(out, heading, format))


async def _fetch(ctx: ToolContext, memory_id: str, format: RecallFormat) -> CallToolResult:
    """recall_memory by id: GET /memory/<id>."""
    found = await _call(lambda: ctx.client.get(memory_id))
    if isinstance(found, CallToolResult):
        return found
    items = [render.listed(found)]
    return _recall_result(RecallOutput(count=1, results=items), "Memory", format)


async def _by_tag(
    ctx: ToolContext,
    tags: list[str],
    tag_mode: Literal["any", "all"],
    tag_match: Literal["prefix", "exact"],
    limit: int,
    offset: int,
    format: RecallFormat,
) -> CallToolResult:
    """One page of GET /memory/by-tag, for memories_by_tag and recall_memory's exhaustive mode."""
    page = await _call(
        lambda: ctx.client.by_tag(tags, limit=limit, offset=offset, tag_mode=tag_mode, tag_match=tag_match)
    )
    if isinstance(page, CallToolResult):
        return page
    items = [render.listed(item) for item in page.memories]
    more = f" (more after offset {offset + len(items)})" if page.has_more else ""
    out = RecallOutput(count=len(items), results=items, has_more=page.has_more)
    return _recall_result(out, f"Memories under {', '.join(tags)}{more}", format)


async def memories_by_tag(
    ctx: ToolContext,
    tags: Annotated[
        list[str],
        Field(
            min_length=1,
            description="tags; a tag matches its whole-segment children (slack matches slack:general)",
        ),
    ],
    tag_mode: Literal["any", "all"] = "any",
    tag_match: Literal["prefix", "exact"] = "prefix",
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
    offset: Annotated[int, Field(ge=0)] = 0,
) -> Annotated[CallToolResult, RecallOutput]:
    """List every memory under tags, most important first, page by page: for audits and
    counting, where recall_memory would rank and cut."""
    return await _by_tag(ctx, tags, tag_mode, tag_match, limit, offset, "text")


# --- update and delete ----------------------------------------------------------------------------
async def update_memory(
    ctx: ToolContext,
    memory_id: Annotated[str, Field(description="the memory to change")],
    content: ReplacementContent = None,
    tags: Annotated[Tags | None, Field(description="new tags (replace the old)")] = None,
    importance: Unit | None = None,
    metadata: Annotated[
        dict[str, Any] | None,
        Field(description="merged into the existing metadata; a null value removes a key"),
    ] = None,
    type: MemoryTypeName | None = None,
    confidence: Unit | None = None,
    timestamp: Annotated[IsoTime | None, Field(description="when it happened")] = None,
    updated_at: IsoTime | None = None,
    last_accessed: IsoTime | None = None,
    t_valid: IsoTime | None = None,
    t_invalid: IsoTime | None = None,
    embedding: Annotated[
        list[float] | None, Field(description="a precomputed vector replacing the memory's")
    ] = None,
) -> Annotated[CallToolResult, UpdateOutput]:
    """Correct or extend a memory instead of storing a near-duplicate: fix its content, add tags,
    change its importance, add metadata."""
    if content is not None and len(content.strip()) > ctx.hard_limit:
        return too_long(len(content.strip()), ctx.hard_limit)
    fields = given(
        content=content,
        tags=tags,
        importance=importance,
        metadata=metadata,
        type=type,
        confidence=confidence,
        timestamp=timestamp,
        updated_at=updated_at,
        last_accessed=last_accessed,
        t_valid=t_valid,
        t_invalid=t_invalid,
        embedding=embedding,
    )
    if not fields:
        return error("Nothing to update: give at least one field to change.")
    updated = await _call(lambda: ctx.client.update(memory_id, **fields))
    if isinstance(updated, CallToolResult):
        return updated
    message = f"Updated memory {memory_id} (version {updated.version}): {', '.join(sorted(fields))}."
    return result(UpdateOutput(memory_id=memory_id, version=updated.version, message=message), message)


async def delete_memory(
    ctx: ToolContext,
    memory_id: Annotated[str, Field(description="the memory to delete")],
) -> Annotated[CallToolResult, DeleteOutput]:
    """Delete a memory that is wrong or a duplicate (prefer update_memory to correct one). It is
    recoverable by an operator for the retention period. Deleting it again is harmless."""
    try:
        deleted = await ctx.client.delete(memory_id)
    except NotFoundError:
        message = f"Memory {memory_id} does not exist or is already deleted; nothing to do."
        return result(DeleteOutput(memory_id=memory_id, deleted=False, message=message), message)
    except ApiError as exc:
        return error(render.refused_message(exc))
    except AutomemClientError as exc:
        return error(f"automem is unreachable: {exc}")
    days = f"; recoverable for {deleted.recoverable_days} days" if deleted.recoverable_days else ""
    message = f"Deleted memory {memory_id}{days}."
    return result(DeleteOutput(memory_id=memory_id, deleted=True, message=message), message)


# --- associate ------------------------------------------------------------------------------------
async def associate_memories(
    ctx: ToolContext,
    memory1_id: Annotated[str | None, Field(description="the source memory")] = None,
    memory2_id: Annotated[str | None, Field(description="the target memory")] = None,
    type: Annotated[RelationName, Field(description="the relationship, from memory1 to memory2")] = (
        "RELATES_TO"
    ),
    strength: Annotated[Unit, Field(description="0.9+ direct, 0.7-0.9 strong, 0.5-0.7 moderate")] = 0.5,
    reason: Annotated[
        str | None, Field(description="why (PREFERS_OVER, CONTRADICTS, INVALIDATED_BY, EVOLVED_INTO)")
    ] = None,
    context: Annotated[str | None, Field(description="where it applies (PREFERS_OVER, PART_OF)")] = None,
    confidence: Annotated[Unit | None, Field(description="EXEMPLIFIES, EVOLVED_INTO, DERIVED_FROM")] = None,
    pattern_type: Annotated[str | None, Field(description="EXEMPLIFIES")] = None,
    resolution: Annotated[str | None, Field(description="CONTRADICTS")] = None,
    observations: Annotated[str | None, Field(description="REINFORCES")] = None,
    transformation: Annotated[str | None, Field(description="DERIVED_FROM")] = None,
    role: Annotated[str | None, Field(description="PART_OF")] = None,
    timestamp: Annotated[IsoTime | None, Field(description="INVALIDATED_BY: when")] = None,
    associations: Annotated[
        list[AssociationInput] | None,
        Field(
            min_length=1,
            max_length=500,
            description="batch mode: up to 500 links, each with its own memory1_id, memory2_id, type, "
            "strength and properties (instead of the arguments above)",
        ),
    ] = None,
) -> Annotated[CallToolResult, AssociateOutput]:
    """Link two memories so recall brings one with the other: a correction (old INVALIDATED_BY
    new), an evolution (old EVOLVED_INTO new), a fix DERIVED_FROM its bug, a decision
    PREFERS_OVER its alternative, or RELATES_TO. Give `associations` to make many links at once."""
    if associations is not None:
        if memory1_id or memory2_id:
            return error("Give either memory1_id and memory2_id, or associations, not both.")
        return await _associate_batch(ctx, associations)
    if not (memory1_id and memory2_id):
        return error("Give memory1_id and memory2_id (or associations, up to 500).")
    props = _props(
        type,
        reason=reason,
        context=context,
        confidence=confidence,
        pattern_type=pattern_type,
        resolution=resolution,
        observations=observations,
        transformation=transformation,
        role=role,
        timestamp=timestamp,
    )
    edge = await _call(lambda: ctx.client.associate(memory1_id, memory2_id, type, strength, **props))
    if isinstance(edge, CallToolResult):
        return edge
    out = render.linked(memory1_id, memory2_id, edge.relation_type, edge.strength)
    return result(out, out.message)


def _props(rel_type: str, **candidates: Any) -> dict[str, Any]:
    """The given properties the relationship type carries; the others would be dropped anyway."""
    return {k: v for k, v in given(**candidates).items() if k in AUTHORABLE[rel_type]}


def _edge(item: AssociationInput) -> Association:
    """One batch item as the SDK's Association, with only the properties its type carries."""
    keep = {"memory1_id", "memory2_id", "type", "strength", *AUTHORABLE[item.type]}
    return cast(Association, item.model_dump(include=keep, exclude_none=True))


async def _associate_batch(ctx: ToolContext, associations: list[AssociationInput]) -> CallToolResult:
    """POST /associate with `associations`: the valid links are made, the others are reported."""
    outcome = await _call(lambda: ctx.client.associate_many([_edge(item) for item in associations]))
    if isinstance(outcome, CallToolResult):
        return outcome
    out = render.linked_batch(outcome, len(associations))
    if not outcome.created_count:
        return error(out.message, out.model_dump())
    return result(out, out.message)


# --- health ---------------------------------------------------------------------------------------
async def check_health(ctx: ToolContext) -> Annotated[CallToolResult, HealthOutput]:
    """Check that the memory service and its stores (FalkorDB graph, Qdrant vectors, queues) are
    up, with memory counts and graph-vector drift."""
    endpoint = ctx.client.base_url
    try:
        report = await ctx.client.health()
    except AutomemClientError as exc:
        out = HealthOutput(status="unreachable", endpoint=endpoint, error=str(exc))
        return result(out, f"automem at {endpoint} is unreachable: {exc}")
    text, out = render.health(report, endpoint)
    return result(out, text)
