"""`automem mcp` tested by a real MCP client session over stdio: the test spawns
`python -m automem mcp`, which talks to the real app served over HTTP (the tools without a server
are tested in tests/unit/test_mcp_tools.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from automem.classify import MEMORY_TYPES
from automem.client import AutomemClient
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
    "check_database_health",
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


# --- AutoMem's names ------------------------------------------------------------------------------
def test_check_database_health_is_check_health(base_url: str) -> None:  # noqa: F811
    async def scenario(session: ClientSession) -> tuple[Any, CallToolResult, CallToolResult]:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        return (
            listed,
            await session.call_tool("check_health", {}),
            await session.call_tool("check_database_health", {}),
        )

    listed, health, alias = with_session(base_url, scenario)
    assert not alias.is_error and alias.structured_content["status"] == "healthy"
    assert alias.structured_content == health.structured_content and text(alias) == text(health)
    old, new = listed["check_health"], listed["check_database_health"]
    assert (new.description, new.output_schema) == (old.description, old.output_schema)
    assert new.annotations and old.annotations
    hints = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
    assert [getattr(new.annotations, h) for h in hints] == [getattr(old.annotations, h) for h in hints]


def vector(dimension: int, hot: int) -> list[float]:
    """A unit vector along one axis: recalled by itself with similarity 1, by others with 0."""
    return [1.0 if n == hot else 0.0 for n in range(dimension)]


def test_automem_argument_names_reach_the_service(base_url: str, jobs: Any) -> None:  # noqa: F811
    chosen_id = str(uuid.uuid4())

    async def scenario(session: ClientSession) -> dict[str, Any]:
        async def call(name: str, **arguments: Any) -> CallToolResult:
            return await session.call_tool(name, arguments)

        health = await call("check_database_health")
        dim = health.structured_content["embedding"]["dimension"]
        out: dict[str, Any] = {"dim": dim}
        out["store"] = await call(
            "store_memory",
            content="Insight: the flaky login test was a clock skew between CI runners",
            tags=["compat", "ci"],
            importance=0.8,
            type="Insight",
            confidence=0.7,
            metadata={"error_signature": "TokenExpired"},
            timestamp="2025-01-01T09:00:00Z",
            id=chosen_id,
            updated_at="2025-01-02T10:00:00Z",
            last_accessed="2025-01-03T11:00:00Z",
            embedding=vector(dim, 0),
        )
        with AutomemClient(base_url, API_TOKEN) as mem:  # as stored, before any recall touches it
            out["held"] = mem.get(chosen_id)
        other = await call(
            "store_memory", content="Redis backs the job queue in every environment", tags=["compat"]
        )
        expired = await call(
            "store_memory",
            content="Staging ran on the db-old host",
            tags=["compat"],
            t_invalid="2020-01-01T00:00:00Z",
        )
        other_id, expired_id = other.structured_content["memory_id"], expired.structured_content["memory_id"]
        out["ids"] = (other_id, expired_id)
        out["update"] = await call("update_memory", memory_id=other_id, embedding=vector(dim, 1))
        out["batch"] = await call(
            "associate_memories",
            associations=[
                {"memory1_id": chosen_id, "memory2_id": other_id, "type": "RELATES_TO", "strength": 0.9},
                {
                    "memory1_id": chosen_id,
                    "memory2_id": str(uuid.uuid4()),
                    "type": "LEADS_TO",
                    "strength": 0.5,
                },
            ],
        )
        out["batch_all_failed"] = await call(
            "associate_memories", associations=[{"memory1_id": chosen_id, "memory2_id": chosen_id}]
        )
        one = [{"memory1_id": chosen_id, "memory2_id": other_id}]
        out["both_modes"] = await call(
            "associate_memories", memory1_id=chosen_id, memory2_id=other_id, associations=one
        )
        out["no_mode"] = await call("associate_memories", type="RELATES_TO")
        jobs()
        by_vector = {
            "embedding": vector(dim, 0),
            "limit": 1,
            "expand_relations": False,
            "expand_entities": False,
        }
        out["by_embedding"] = await call("recall_memory", **by_vector)
        out["updated_vector"] = await call("recall_memory", **{**by_vector, "embedding": vector(dim, 1)})
        out["with_relations"] = await call("recall_memory", embedding=vector(dim, 0), limit=1)
        out["no_relations"] = await call("recall_memory", embedding=vector(dim, 0), limit=1, relation_limit=0)
        out["expansion_knobs"] = await call(
            "recall_memory",
            query="login test",
            expansion_limit=0,
            expand_min_importance=0.9,
            expand_min_strength=0.9,
        )
        # Options of AutoMem's bridges that the service lacks are ignored, not refused.
        out["unknown"] = await call("recall_memory", query="login", queries=["a", "b"], recency_bias="auto")
        listing = {"query": "staging db-old host", "tags": ["compat"], "limit": 10}
        out["current"] = await call("recall_memory", **listing, current_only=True)
        out["history"] = await call("recall_memory", **listing, state_mode="current", current_only=False)
        for fmt in ("text", "items", "detailed", "json"):
            out[fmt] = await call("recall_memory", tags=["compat"], limit=3, format=fmt)
        out["fetch_detailed"] = await call("recall_memory", memory_id=chosen_id, format="detailed")
        page = {"tags": ["compat"], "limit": 1, "offset": 1}
        out["exhaustive"] = await call("recall_memory", **page, exhaustive=True)
        out["by_tag"] = await call("memories_by_tag", **page)
        out["exhaustive_no_tags"] = await call("recall_memory", exhaustive=True)
        return out

    out = with_session(base_url, scenario)
    other_id, expired_id = out["ids"]
    stored = out["store"]
    assert not stored.is_error and stored.structured_content["memory_id"] == chosen_id
    assert stored.structured_content["type"] == "Insight"
    assert not out["update"].is_error and "embedding" in text(out["update"])

    batch = out["batch"]
    assert not batch.is_error
    assert (batch.structured_content["created_count"], batch.structured_content["failed_count"]) == (1, 1)
    assert batch.structured_content["failed"][0]["index"] == 1 and "association 1 failed" in text(batch)
    assert (
        out["batch_all_failed"].is_error and out["batch_all_failed"].structured_content["created_count"] == 0
    )
    assert out["both_modes"].is_error and "not both" in text(out["both_modes"])
    assert out["no_mode"].is_error and "Give memory1_id and memory2_id" in text(out["no_mode"])

    def ids(name: str) -> list[str]:
        return [r["memory_id"] for r in out[name].structured_content["results"]]

    assert ids("by_embedding") == [chosen_id]
    assert ids("updated_vector") == [other_id]
    relations = out["with_relations"].structured_content["results"][0]["relations"]
    assert ("RELATES_TO", other_id) in {(r["type"], r["memory_id"]) for r in relations}
    assert out["no_relations"].structured_content["results"][0]["relations"] == []
    assert not out["expansion_knobs"].is_error
    assert not out["unknown"].is_error and ids("unknown")[0] == chosen_id
    assert expired_id not in ids("current") and expired_id in ids("history")

    # format changes the text blocks, never the structured content.
    assert (
        len({json.dumps(out[f].structured_content, sort_keys=True) for f in ("text", "items", "detailed")})
        == 1
    )
    count = out["text"].structured_content["count"]
    assert len(out["text"].content) == 1 and len(out["items"].content) == count == 2  # the expired is hidden
    assert json.loads(text(out["json"])) == out["json"].structured_content
    detailed = text(out["fetch_detailed"])
    assert f"ID: {chosen_id}" in detailed and "Type: Insight" in detailed and "Importance: 0.8" in detailed

    assert out["exhaustive"].structured_content == out["by_tag"].structured_content
    assert out["exhaustive"].structured_content["count"] == 1
    assert out["exhaustive_no_tags"].is_error

    # What the AutoMem-named arguments set is what the service holds.
    memory = out["held"]
    assert (memory.type, memory.confidence, memory.importance) == ("Insight", 0.7, 0.8)
    assert memory.metadata["error_signature"] == "TokenExpired"
    assert (memory.timestamp or "").startswith("2025-01-01T09:00:00")
    assert (memory.updated_at or "").startswith("2025-01-02T10:00:00")
    assert (memory.last_accessed or "").startswith("2025-01-03T11:00:00")
