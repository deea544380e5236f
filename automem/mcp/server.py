"""The MCP server: the tool table, how a tool function is bound to its context, and `run`."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from automem import __version__
from automem.client import AsyncAutomemClient, RetryPolicy
from automem.mcp import tools
from automem.mcp.schemas import with_limits
from automem.mcp.tools import ToolContext
from automem.settings import Settings

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "automem is your long-term memory. Call recall_memory at the start of a task and before "
    "decisions to retrieve what was learned before; call store_memory after decisions, fixed bugs "
    "(with the root cause), discovered patterns and user preferences or corrections. Keep each "
    "memory to one idea of 150-300 characters with its context and why. Link related memories "
    "with associate_memories (a correction: old INVALIDATED_BY new; an evolution: EVOLVED_INTO)."
)

ToolFunction = Callable[..., Awaitable[CallToolResult]]


@dataclass(frozen=True)
class ToolSpec:
    """One published tool: its name, the function behind it and what clients are told about it
    (no tool reaches outside the memory service, so none is open-world)."""

    name: str
    fn: ToolFunction
    title: str
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = True

    def annotations(self) -> ToolAnnotations:
        """The hints clients use to decide what to confirm with the user before a call."""
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )


TOOLS: tuple[ToolSpec, ...] = (
    # Identical content is deduplicated by the service: storing it again changes nothing.
    ToolSpec("store_memory", tools.store_memory, "Store memory"),
    ToolSpec("recall_memory", tools.recall_memory, "Recall memories", read_only=True),
    # Content and tags are replaced: the old values are gone.
    ToolSpec("update_memory", tools.update_memory, "Update memory", destructive=True),
    ToolSpec("delete_memory", tools.delete_memory, "Delete memory", destructive=True),
    # One edge per (pair, type): associating again updates its strength.
    ToolSpec("associate_memories", tools.associate_memories, "Associate memories"),
    ToolSpec("memories_by_tag", tools.memories_by_tag, "Memories by tag", read_only=True),
    ToolSpec("check_health", tools.check_health, "Check health", read_only=True),
    # AutoMem's name for check_health, so clients and prompts written for AutoMem find it.
    ToolSpec("check_database_health", tools.check_health, "Check database health", read_only=True),
)


class BoundTool:
    """A tool function with its context bound, as the MCP server registers it: the server reads
    the published signature (the function's, without the context and with the configured
    content limits in the schema) and calls this with the validated arguments."""

    def __init__(self, spec: ToolSpec, ctx: ToolContext) -> None:
        self.fn = spec.fn
        self.ctx = ctx
        self.__name__ = spec.name
        self.__doc__ = spec.fn.__doc__
        signature = inspect.signature(spec.fn, eval_str=True)
        _, *params = signature.parameters.values()  # the first is the context
        self.__signature__ = signature.replace(
            parameters=[
                p.replace(annotation=with_limits(p.annotation, ctx.hard_limit, ctx.soft_limit))
                for p in params
            ]
        )

    async def __call__(self, **arguments: Any) -> CallToolResult:
        return await self.fn(self.ctx, **arguments)


def register(server: MCPServer[Any], spec: ToolSpec, ctx: ToolContext) -> None:
    """Publish one tool; its description is the function's docstring without the indentation."""
    server.add_tool(
        BoundTool(spec, ctx),
        name=spec.name,
        title=spec.title,
        description=inspect.cleandoc(spec.fn.__doc__ or ""),
        annotations=spec.annotations(),
    )


def client_for(settings: Settings) -> AsyncAutomemClient:
    """The SDK client for AUTOMEM_ENDPOINT, with the timeout and retries that keep every tool
    call inside Claude Desktop's 30 s."""
    return AsyncAutomemClient(
        settings.client_endpoint,
        settings.client_key,
        timeout=settings.client_timeout_seconds,
        retry=RetryPolicy(retries=settings.client_retries),
    )


def build_server(settings: Settings, client: AsyncAutomemClient | None = None) -> MCPServer[Any]:
    """The MCP server; its tools call the service at AUTOMEM_ENDPOINT with the SDK."""
    ctx = ToolContext(
        client=client or client_for(settings),
        hard_limit=settings.content_hard_limit,
        soft_limit=settings.content_soft_limit,
    )

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await ctx.client.aclose()

    server: MCPServer[Any] = MCPServer(
        name="automem", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan
    )
    for spec in TOOLS:
        register(server, spec, ctx)
    return server


def run(settings: Settings) -> int:
    """Serve the tools on stdin/stdout until the client closes the stream."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    log.info("automem MCP server for %s", settings.client_endpoint)
    build_server(settings).run("stdio")
    return 0
