"""`automem mcp`: an MCP server on stdio that gives an assistant (Claude Desktop, Claude Code,
Cursor, ...) the memory tools, talking to the service over HTTP with the SDK.

Tools mirror AutoMem's MCP bridge: store_memory, recall_memory, update_memory, delete_memory,
associate_memories, memories_by_tag and check_health, with annotations (read-only, destructive,
idempotent hints) and schema constraints (importance and strength 0-1, the 7 memory types, the
11 authorable relationship types, limits). Content over the hard limit (2000 characters by
default) is refused by the tool with a message that says how to fix it, before any request.
Every result is a short text for the model plus structured content typed by an output schema.
"""

# No `from __future__ import annotations`: the tools' signatures are read at runtime, and some
# of their annotations use the configured content limits.
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from automem import __version__
from automem.client import AsyncAutomemClient, RetryPolicy
from automem.client.errors import ApiError, AutomemClientError, NotFoundError
from automem.relations import AUTHORABLE
from automem.schemas import Memory, RecallResult
from automem.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

INSTRUCTIONS = (
    "automem is your long-term memory. Call recall_memory at the start of a task and before "
    "decisions to retrieve what was learned before; call store_memory after decisions, fixed bugs "
    "(with the root cause), discovered patterns and user preferences or corrections. Keep each "
    "memory to one idea of 150-300 characters with its context and why. Link related memories "
    "with associate_memories (a correction: old INVALIDATED_BY new; an evolution: EVOLVED_INTO)."
)

MemoryTypeName = Literal["Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context"]
RelationName = Literal[
    "RELATES_TO",
    "LEADS_TO",
    "OCCURRED_BEFORE",
    "PREFERS_OVER",
    "EXEMPLIFIES",
    "CONTRADICTS",
    "REINFORCES",
    "INVALIDATED_BY",
    "EVOLVED_INTO",
    "DERIVED_FROM",
    "PART_OF",
]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
IsoTime = Annotated[str, Field(description="ISO 8601 date-time, e.g. 2025-01-31T14:00:00Z")]
Tags = Annotated[list[str], Field(description="tags; hierarchical with : or / (e.g. project:alpha)")]


# --- structured outputs ---------------------------------------------------------------------------
class StoreOutput(BaseModel):
    memory_id: str
    message: str
    deduplicated: bool
    type: str | None = None
    confidence: float | None = None
    summarized: bool | None = None
    original_length: int | None = None
    summarized_length: int | None = None
    size_warning: bool = False


class RelationOutput(BaseModel):
    type: str
    direction: str
    memory_id: str
    content: str | None = None


class RecalledMemory(BaseModel):
    memory_id: str
    content: str | None
    type: str | None = None
    tags: list[str] = []
    importance: float | None = None
    timestamp: str | None = None
    score: float | None = None
    match_type: str | None = None
    relations: list[RelationOutput] = []


class RecallOutput(BaseModel):
    count: int
    results: list[RecalledMemory]
    has_more: bool | None = None


class UpdateOutput(BaseModel):
    memory_id: str
    version: int | None
    message: str


class DeleteOutput(BaseModel):
    memory_id: str
    deleted: bool
    message: str


class AssociateOutput(BaseModel):
    memory1_id: str
    memory2_id: str
    relation_type: str
    strength: float
    message: str


class HealthOutput(BaseModel):
    status: str
    endpoint: str
    falkordb: str | None = None
    qdrant: str | None = None
    memory_count: int | None = None
    vector_count: int | None = None
    drift: dict[str, int] | None = None
    embedding: dict[str, Any] | None = None
    warnings: list[str] = []
    error: str | None = None


def _result(text: str, data: BaseModel) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data.model_dump())


def _error(text: str, data: dict[str, Any] | None = None) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data, is_error=True
    )


def too_long(length: int, limit: int) -> CallToolResult:
    return _error(
        f"Memory rejected: the content is {length} characters, over the hard limit of {limit}. "
        "Split it into smaller, focused memories (150-300 characters each is ideal) or summarise it, "
        "then store again.",
        {"error": "content_too_large", "content_length": length, "hard_limit": limit},
    )


async def _call(action: Callable[[], Awaitable[T]]) -> T | CallToolResult:
    """Run one SDK call; an API or network error becomes a tool error the model can read."""
    try:
        return await action()
    except ApiError as exc:
        where = f" (field {exc.field})" if exc.field else ""
        return _error(
            f"automem refused: {exc.message}{where} [{exc.status} {exc.code}]",
            {"status": exc.status, "code": exc.code, "field": exc.field, "error": exc.message},
        )
    except AutomemClientError as exc:
        return _error(f"automem is unreachable: {exc}", {"error": str(exc)})


def _recalled(item: RecallResult) -> RecalledMemory:
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


def _listed(memory: Memory) -> RecalledMemory:
    return RecalledMemory(
        memory_id=memory.id,
        content=memory.content,
        type=memory.type,
        tags=memory.tags,
        importance=memory.importance,
        timestamp=memory.timestamp,
    )


def _render(items: list[RecalledMemory], heading: str) -> str:
    if not items:
        return f"{heading}: nothing found."
    lines = [f"{heading}: {len(items)}"]
    for n, item in enumerate(items, 1):
        score = f"[{item.score:.2f}] " if item.score is not None else ""
        when = (item.timestamp or "")[:10]
        lines.append(f"{n}. {score}{item.content}")
        lines.append(
            f"   id {item.memory_id} | {item.type} | importance {item.importance} | {when} | "
            f"tags: {', '.join(item.tags) or '-'}"
        )
        for rel in item.relations:
            arrow = "->" if rel.direction == "outgoing" else "<-"
            lines.append(f"   {arrow} {rel.type} {rel.memory_id}: {(rel.content or '')[:80]}")
    return "\n".join(lines)


# --- the server -----------------------------------------------------------------------------------
def build_server(settings: Settings, client: AsyncAutomemClient | None = None) -> MCPServer[Any]:
    """The MCP server; its tools call the service at AUTOMEM_ENDPOINT with the SDK."""
    mem = client or AsyncAutomemClient(
        settings.client_endpoint,
        settings.client_key,
        timeout=settings.client_timeout_seconds,
        retry=RetryPolicy(retries=settings.client_retries),
    )
    hard, soft = settings.content_hard_limit, settings.content_soft_limit

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await mem.aclose()

    server: MCPServer[Any] = MCPServer(
        name="automem", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan
    )

    Content = Annotated[
        str,
        Field(
            description=f"The memory: one idea with its context and why. Target 150-300 characters; "
            f"over {soft} the service may summarise it; over {hard} it is rejected.",
            json_schema_extra={"maxLength": hard, "minLength": 1},
        ),
    ]

    @server.tool(
        annotations=ToolAnnotations(
            title="Store memory",
            read_only_hint=False,
            destructive_hint=False,
            # Identical content is deduplicated by the service: storing it again changes nothing.
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def store_memory(
        content: Content,
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
    ) -> Annotated[CallToolResult, StoreOutput]:
        """Store a memory: a decision with its rationale, a bug's root cause and fix, a pattern, a
        user preference or correction. Not for trivial edits, secrets or temporary output."""
        text = content.strip()
        if len(text) > hard:
            return too_long(len(text), hard)
        fields: dict[str, Any] = {
            k: v
            for k, v in {
                "tags": tags,
                "importance": importance,
                "type": type,
                "confidence": confidence,
                "metadata": metadata,
                "timestamp": timestamp,
                "t_valid": t_valid,
                "t_invalid": t_invalid,
                "embedding": embedding,
            }.items()
            if v is not None
        }
        stored = await _call(lambda: mem.store(text, **fields))
        if isinstance(stored, CallToolResult):
            return stored
        verb = "Already stored (identical content)" if stored.deduplicated else "Stored"
        message = f"{verb}: memory {stored.memory_id} ({stored.type}, confidence {stored.confidence})."
        if stored.summarized:
            message += f" Summarised {stored.original_length} -> {stored.summarized_length} characters."
        elif len(text) > soft:
            message += (
                f" Note: {len(text)} characters is over the {soft}-character soft limit; "
                "shorter memories recall better."
            )
        return _result(
            message,
            StoreOutput(
                memory_id=stored.memory_id,
                message=message,
                deduplicated=stored.deduplicated,
                type=stored.type,
                confidence=stored.confidence,
                summarized=stored.summarized,
                original_length=stored.original_length,
                summarized_length=stored.summarized_length,
                size_warning=len(text) > soft,
            ),
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Recall memories",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def recall_memory(
        query: Annotated[str | None, Field(description="what to look for, in natural language")] = None,
        memory_id: Annotated[
            str | None, Field(description="fetch this one memory (other parameters are ignored)")
        ] = None,
        tags: Annotated[Tags | None, Field(description="only memories under these tags")] = None,
        tag_mode: Literal["any", "all"] = "any",
        tag_match: Literal["prefix", "exact"] = "prefix",
        exclude_tags: Annotated[
            list[str] | None, Field(description="leave out memories under these tags")
        ] = None,
        context_tags: Annotated[
            list[str] | None, Field(description="prefer memories under these tags")
        ] = None,
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
    ) -> Annotated[CallToolResult, RecallOutput]:
        """Recall memories by meaning, keywords, tags, time and graph links. Use it at the start of a
        task, before decisions and when debugging; without a query it lists memories under the tags."""
        if memory_id:
            found = await _call(lambda: mem.get(memory_id))
            if isinstance(found, CallToolResult):
                return found
            items = [_listed(found)]
            return _result(_render(items, "Memory"), RecallOutput(count=1, results=items))
        params: dict[str, Any] = {
            k: v
            for k, v in {
                "tags": tags,
                "tag_mode": tag_mode,
                "tag_match": tag_match,
                "exclude_tags": exclude_tags,
                "context_tags": context_tags,
                "types": types,
                "time_query": time_query,
                "start": start,
                "end": end,
                "sort": sort,
                "limit": limit,
                "min_score": min_score,
                "state_mode": state_mode,
                "expand_relations": expand_relations,
                "expand_entities": expand_entities,
            }.items()
            if v is not None
        }
        response = await _call(lambda: mem.recall(query, **params))
        if isinstance(response, CallToolResult):
            return response
        items = [_recalled(r) for r in response.results]
        heading = f"Memories for {query!r}" if query else "Memories"
        return _result(_render(items, heading), RecallOutput(count=len(items), results=items))

    @server.tool(
        annotations=ToolAnnotations(
            title="Update memory",
            read_only_hint=False,
            # Content and tags are replaced: the old values are gone.
            destructive_hint=True,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def update_memory(
        memory_id: Annotated[str, Field(description="the memory to change")],
        content: Annotated[
            str | None,
            Field(description="new content (replaces the old)", json_schema_extra={"maxLength": hard}),
        ] = None,
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
    ) -> Annotated[CallToolResult, UpdateOutput]:
        """Correct or extend a memory instead of storing a near-duplicate: fix its content, add tags,
        change its importance, add metadata."""
        if content is not None and len(content.strip()) > hard:
            return too_long(len(content.strip()), hard)
        fields: dict[str, Any] = {
            k: v
            for k, v in {
                "content": content,
                "tags": tags,
                "importance": importance,
                "metadata": metadata,
                "type": type,
                "confidence": confidence,
                "timestamp": timestamp,
                "updated_at": updated_at,
                "last_accessed": last_accessed,
                "t_valid": t_valid,
                "t_invalid": t_invalid,
            }.items()
            if v is not None
        }
        if not fields:
            return _error("Nothing to update: give at least one field to change.")
        updated = await _call(lambda: mem.update(memory_id, **fields))
        if isinstance(updated, CallToolResult):
            return updated
        message = f"Updated memory {memory_id} (version {updated.version}): {', '.join(sorted(fields))}."
        return _result(message, UpdateOutput(memory_id=memory_id, version=updated.version, message=message))

    @server.tool(
        annotations=ToolAnnotations(
            title="Delete memory",
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def delete_memory(
        memory_id: Annotated[str, Field(description="the memory to delete")],
    ) -> Annotated[CallToolResult, DeleteOutput]:
        """Delete a memory that is wrong or a duplicate (prefer update_memory to correct one). It is
        recoverable by an operator for the retention period. Deleting it again is harmless."""
        try:
            deleted = await mem.delete(memory_id)
        except NotFoundError:
            message = f"Memory {memory_id} does not exist or is already deleted; nothing to do."
            return _result(message, DeleteOutput(memory_id=memory_id, deleted=False, message=message))
        except ApiError as exc:
            return _error(f"automem refused: {exc.message} [{exc.status} {exc.code}]")
        except AutomemClientError as exc:
            return _error(f"automem is unreachable: {exc}")
        days = f"; recoverable for {deleted.recoverable_days} days" if deleted.recoverable_days else ""
        message = f"Deleted memory {memory_id}{days}."
        return _result(message, DeleteOutput(memory_id=memory_id, deleted=True, message=message))

    @server.tool(
        annotations=ToolAnnotations(
            title="Associate memories",
            read_only_hint=False,
            destructive_hint=False,
            # One edge per (pair, type): associating again updates its strength.
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def associate_memories(
        memory1_id: Annotated[str, Field(description="the source memory")],
        memory2_id: Annotated[str, Field(description="the target memory")],
        type: Annotated[RelationName, Field(description="the relationship, from memory1 to memory2")] = (
            "RELATES_TO"
        ),
        strength: Annotated[Unit, Field(description="0.9+ direct, 0.7-0.9 strong, 0.5-0.7 moderate")] = 0.5,
        reason: Annotated[
            str | None, Field(description="why (PREFERS_OVER, CONTRADICTS, INVALIDATED_BY, EVOLVED_INTO)")
        ] = None,
        context: Annotated[str | None, Field(description="where it applies (PREFERS_OVER, PART_OF)")] = None,
        confidence: Annotated[
            Unit | None, Field(description="EXEMPLIFIES, EVOLVED_INTO, DERIVED_FROM")
        ] = None,
        pattern_type: Annotated[str | None, Field(description="EXEMPLIFIES")] = None,
        resolution: Annotated[str | None, Field(description="CONTRADICTS")] = None,
        observations: Annotated[str | None, Field(description="REINFORCES")] = None,
        transformation: Annotated[str | None, Field(description="DERIVED_FROM")] = None,
        role: Annotated[str | None, Field(description="PART_OF")] = None,
        timestamp: Annotated[IsoTime | None, Field(description="INVALIDATED_BY: when")] = None,
    ) -> Annotated[CallToolResult, AssociateOutput]:
        """Link two memories so recall brings one with the other: a correction (old INVALIDATED_BY
        new), an evolution (old EVOLVED_INTO new), a fix DERIVED_FROM its bug, a decision
        PREFERS_OVER its alternative, or RELATES_TO."""
        props: dict[str, Any] = {
            k: v
            for k, v in {
                "reason": reason,
                "context": context,
                "confidence": confidence,
                "pattern_type": pattern_type,
                "resolution": resolution,
                "observations": observations,
                "transformation": transformation,
                "role": role,
                "timestamp": timestamp,
            }.items()
            if v is not None and k in AUTHORABLE[type]
        }
        edge = await _call(lambda: mem.associate(memory1_id, memory2_id, type, strength, **props))
        if isinstance(edge, CallToolResult):
            return edge
        message = f"Linked {memory1_id} -{edge.relation_type}-> {memory2_id} (strength {edge.strength})."
        return _result(
            message,
            AssociateOutput(
                memory1_id=memory1_id,
                memory2_id=memory2_id,
                relation_type=edge.relation_type,
                strength=edge.strength,
                message=message,
            ),
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Memories by tag",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def memories_by_tag(
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
        page = await _call(
            lambda: mem.by_tag(tags, limit=limit, offset=offset, tag_mode=tag_mode, tag_match=tag_match)
        )
        if isinstance(page, CallToolResult):
            return page
        items = [_listed(item.memory) for item in page.memories]
        more = f" (more after offset {offset + len(items)})" if page.has_more else ""
        return _result(
            _render(items, f"Memories under {', '.join(tags)}{more}"),
            RecallOutput(count=len(items), results=items, has_more=page.has_more),
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Check health",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def check_health() -> Annotated[CallToolResult, HealthOutput]:
        """Check that the memory service and its stores (FalkorDB graph, Qdrant vectors, queues) are
        up, with memory counts and graph-vector drift."""
        try:
            health = await mem.health()
        except AutomemClientError as exc:
            out = HealthOutput(status="unreachable", endpoint=mem.base_url, error=str(exc))
            return _result(f"automem at {mem.base_url} is unreachable: {exc}", out)
        out = HealthOutput(
            status=health.status,
            endpoint=mem.base_url,
            falkordb=health.falkordb,
            qdrant=health.qdrant,
            memory_count=health.memory_count,
            vector_count=health.vector_count,
            drift=health.drift,
            embedding=health.embedding.model_dump(),
            warnings=health.warnings,
        )
        text = (
            f"automem {health.status}: graph {health.falkordb}, vectors {health.qdrant}, "
            f"{health.memory_count} memories, {health.vector_count} vectors, "
            f"embeddings {health.embedding.provider} ({health.embedding.dimension} dims)"
        )
        return _result(text + "".join(f"\nwarning: {w}" for w in health.warnings), out)

    return server


def run(settings: Settings) -> int:
    """Serve the tools on stdin/stdout until the client closes the stream."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    log.info("automem MCP server for %s", settings.client_endpoint)
    build_server(settings).run("stdio")
    return 0
