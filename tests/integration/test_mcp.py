"""`automem mcp` tested by a real MCP client session over stdio: the test spawns
`python -m automem mcp`, which talks to the real app served over HTTP."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from automem.classify import MEMORY_TYPES
from automem.client import AutomemClient
from automem.mcp_server import MemoryTypeName, RelationName
from automem.relations import AUTHORABLE
from tests.conftest import API_TOKEN
from tests.served import base_url  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "store_memory",
    "recall_memory",
    "update_memory",
    "delete_memory",
    "associate_memories",
    "memories_by_tag",
    "check_health",
}


def with_session(base: str, scenario: Callable[[ClientSession], Awaitable[Any]], **extra: str) -> Any:
    env = {
        **extra,
        "AUTOMEM_ENDPOINT": base,
        "AUTOMEM_API_KEY": API_TOKEN,
        "AUTOMEM_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
        **{k: os.environ[k] for k in ("HOME", "PATH") if k in os.environ},
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "automem", "mcp"], env=env, cwd=ROOT)

    async def run() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await scenario(session)

    return asyncio.run(run())


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def test_the_literal_enums_are_the_registries() -> None:
    assert set(MemoryTypeName.__args__) == set(MEMORY_TYPES)  # type: ignore[attr-defined]
    assert set(RelationName.__args__) == set(AUTHORABLE)  # type: ignore[attr-defined]


def test_tools_schemas_and_hints(base_url: str) -> None:  # noqa: F811
    async def scenario(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in with_session(base_url, scenario)}
    assert set(tools) == TOOLS
    hints = {
        name: (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.idempotent_hint)
        for name, t in tools.items()
        if t.annotations
    }
    assert hints["delete_memory"] == (False, True, True)
    assert hints["recall_memory"][0] and hints["memories_by_tag"][0] and hints["check_health"][0]
    assert hints["store_memory"][:2] == (False, False) and hints["associate_memories"][:2] == (False, False)
    assert all(t.description and t.output_schema for t in tools.values())

    store = tools["store_memory"].input_schema
    assert store["required"] == ["content"]
    content = store["properties"]["content"]
    assert (content["maxLength"], content["minLength"]) == (2000, 1)
    importance = store["properties"]["importance"]["anyOf"][0]
    assert (importance["minimum"], importance["maximum"]) == (0.0, 1.0)
    assert set(store["properties"]["type"]["anyOf"][0]["enum"]) == set(MEMORY_TYPES)
    associate = tools["associate_memories"].input_schema["properties"]
    assert set(associate["type"]["enum"]) == set(AUTHORABLE)
    assert (associate["strength"]["minimum"], associate["strength"]["maximum"]) == (0.0, 1.0)
    assert tools["recall_memory"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["memories_by_tag"].input_schema["properties"]["tags"]["minItems"] == 1
    assert tools["delete_memory"].input_schema["required"] == ["memory_id"]


def test_every_tool_against_the_real_service(base_url: str, jobs: Any) -> None:  # noqa: F811
    async def scenario(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}

        async def call(name: str, **arguments: Any) -> CallToolResult:
            result = await session.call_tool(name, arguments)
            out.setdefault("calls", []).append((name, result.is_error))
            return result

        pg = await call(
            "store_memory",
            content="Chose PostgreSQL over MongoDB: ACID transactions matter",
            tags=["project:alpha", "decision"],
            importance=0.9,
            type="Decision",
            metadata={"files_modified": ["db.py"]},
        )
        tabs = await call(
            "store_memory",
            content="Alice prefers tabs over spaces in Makefiles",
            tags=["project:alpha", "style"],
            importance=0.6,
        )
        out["stored"] = (pg, tabs)
        out["again"] = await call(
            "store_memory", content="Chose PostgreSQL over MongoDB: ACID transactions matter"
        )
        out["too_long"] = await call("store_memory", content="x" * 2001)
        out["bad_importance"] = await call("store_memory", content="out of range", importance=1.5)
        jobs()
        pg_id = pg.structured_content["memory_id"]
        tabs_id = tabs.structured_content["memory_id"]
        out["recall"] = await call("recall_memory", query="database ACID decision", tags=["project"], limit=3)
        out["by_id"] = await call("recall_memory", memory_id=pg_id)
        out["bad_time"] = await call("recall_memory", query="x", time_query="when pigs fly")
        out["update"] = await call(
            "update_memory", memory_id=pg_id, importance=0.95, tags=["project:alpha", "db"]
        )
        out["empty_update"] = await call("update_memory", memory_id=pg_id)
        out["associate"] = await call(
            "associate_memories",
            memory1_id=pg_id,
            memory2_id=tabs_id,
            type="PREFERS_OVER",
            strength=0.8,
            reason="transactions",
            role="ignored",
        )
        out["system_type"] = await call(
            "associate_memories", memory1_id=pg_id, memory2_id=tabs_id, type="SIMILAR_TO"
        )
        out["by_tag"] = await call("memories_by_tag", tags=["project"], limit=1)
        out["delete"] = await call("delete_memory", memory_id=tabs_id)
        out["delete_again"] = await call("delete_memory", memory_id=tabs_id)
        out["health"] = await call("check_health")
        return out

    out = with_session(base_url, scenario)
    pg, _ = out["stored"]
    pg_id = pg.structured_content["memory_id"]
    assert not pg.is_error and text(pg).startswith(f"Stored: memory {pg_id} (Decision")
    assert out["again"].structured_content["deduplicated"] is True
    assert out["again"].structured_content["memory_id"] == pg_id

    too_long = out["too_long"]
    assert too_long.is_error
    assert "2001 characters, over the hard limit of 2000" in text(too_long)
    assert too_long.structured_content == {
        "error": "content_too_large",
        "content_length": 2001,
        "hard_limit": 2000,
    }
    assert out["bad_importance"].is_error and "importance" in text(out["bad_importance"])

    recall = out["recall"].structured_content
    assert recall["results"][0]["memory_id"] == pg_id and recall["count"] <= 3
    assert "Chose PostgreSQL" in text(out["recall"])
    assert out["by_id"].structured_content["results"][0]["content"].startswith("Chose PostgreSQL")
    assert out["bad_time"].is_error and "time_query" in text(out["bad_time"])
    assert out["update"].structured_content["version"] == 2
    assert out["empty_update"].is_error
    assert out["associate"].structured_content["relation_type"] == "PREFERS_OVER"
    assert out["system_type"].is_error
    by_tag = out["by_tag"].structured_content
    assert by_tag["count"] == 1 and by_tag["has_more"] is True
    assert by_tag["results"][0]["memory_id"] == pg_id  # the more important one first
    assert out["delete"].structured_content["deleted"] is True
    again = out["delete_again"]
    assert not again.is_error and again.structured_content["deleted"] is False
    health = out["health"].structured_content
    assert (health["status"], health["falkordb"], health["endpoint"]) == ("healthy", "connected", base_url)

    # What the tools did is what the service holds.
    with AutomemClient(base_url, API_TOKEN) as mem:
        stored = mem.get(pg_id)
        assert (stored.importance, stored.tags[:2]) == (0.95, ["project:alpha", "db"])
        assert mem.related(pg_id, relationship_types=["PREFERS_OVER"]).count == 0  # the other end is deleted
        assert mem.by_tag("project").count == 1
        # The refused stores wrote nothing: PostgreSQL is the only active memory left.
        assert mem.health().memory_count == 1


def test_an_unreachable_service_is_reported_not_crashed() -> None:
    async def scenario(session: ClientSession) -> tuple[CallToolResult, CallToolResult]:
        health = await session.call_tool("check_health", {})
        stored = await session.call_tool("store_memory", {"content": "nobody listens"})
        return health, stored

    health, stored = with_session("http://127.0.0.1:9", scenario, AUTOMEM_CLIENT_RETRIES="0")
    assert health.structured_content["status"] == "unreachable"
    assert stored.is_error and "unreachable" in text(stored)
