"""The MCP tools without a server: the rendering helpers and the SDK calls each tool makes
(a recording stand-in client), and the schema enums against the registries."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

from pydantic import TypeAdapter

from automem.classify import MEMORY_TYPES
from automem.client import AsyncAutomemClient
from automem.mcp import render, tools
from automem.mcp.schemas import (
    AssociationInput,
    MemoryTypeName,
    NewContent,
    RecalledMemory,
    RecallOutput,
    RelationName,
    RelationOutput,
    ReplacementContent,
    Tags,
    with_limits,
)
from automem.mcp.tools import ToolContext
from automem.relations import AUTHORABLE
from automem.schemas import AssociateBatchResult, RecallResponse, StoreResult
from tests.served import base_url  # noqa: F401  (fixture)


def test_the_literal_enums_are_the_registries() -> None:
    assert set(MemoryTypeName.__args__) == set(MEMORY_TYPES)  # type: ignore[attr-defined]
    assert set(RelationName.__args__) == set(AUTHORABLE)  # type: ignore[attr-defined]


# --- without a server: the rendering helpers and the tools' SDK calls ----------------------------
def sample() -> RecallOutput:
    linked = RelationOutput(type="PREFERS_OVER", direction="outgoing", memory_id="m2", content="MongoDB")
    return RecallOutput(
        count=2,
        results=[
            RecalledMemory(
                memory_id="m1",
                content="Chose PostgreSQL",
                type="Decision",
                tags=["db", "alpha"],
                importance=0.9,
                timestamp="2025-01-31T14:00:00Z",
                score=0.8765,
                match_type="vector",
                relations=[linked],
            ),
            RecalledMemory(memory_id="m2", content="MongoDB was considered", type="Context"),
        ],
    )


def test_render_is_the_compact_text() -> None:
    assert render.render(sample().results, "Memories for 'db'") == (
        "Memories for 'db': 2\n"
        "1. [0.88] Chose PostgreSQL\n"
        "   id m1 | Decision | importance 0.9 | 2025-01-31 | tags: db, alpha\n"
        "   -> PREFERS_OVER m2: MongoDB\n"
        "2. MongoDB was considered\n"
        "   id m2 | Context | importance None |  | tags: -"
    )
    assert render.render([], "Memories") == "Memories: nothing found."


def test_recall_texts_in_automem_formats() -> None:
    out = sample()
    assert render.recall_texts(out, "Memories") == [render.render(out.results, "Memories")]
    items = render.recall_texts(out, "Memories", "items")
    assert len(items) == 2 and items[0].startswith("1. [0.88] Chose PostgreSQL\n   id m1")
    first, second = render.recall_texts(out, "Memories", "detailed")
    assert first.splitlines() == [
        "1. Chose PostgreSQL",
        "ID: m1",
        "Type: Decision",
        "Timestamp: 2025-01-31T14:00:00Z",
        "Importance: 0.9",
        "Tags: db, alpha",
        "Score: 0.8765",
        "Match: vector",
        "Relation: -> PREFERS_OVER m2: MongoDB",
    ]
    assert second.splitlines() == ["2. MongoDB was considered", "ID: m2", "Type: Context"]
    (raw,) = render.recall_texts(out, "Memories", "json")
    assert json.loads(raw) == out.model_dump()
    empty = RecallOutput(count=0, results=[])
    assert render.recall_texts(empty, "Memories", "items") == ["Memories: nothing found."]


def test_store_messages() -> None:
    fresh = StoreResult(memory_id="m1", type="Decision", confidence=0.9)
    assert render.stored(fresh, 200, 500).message == "Stored: memory m1 (Decision, confidence 0.9)."
    long = render.stored(fresh, 600, 500)
    assert long.size_warning and "600 characters is over the 500-character soft limit" in long.message
    summary = StoreResult(
        memory_id="m1", deduplicated=True, summarized=True, original_length=900, summarized_length=300
    )
    assert render.stored(summary, 900, 500).message == (
        "Already stored (identical content): memory m1 (None, confidence None). "
        "Summarised 900 -> 300 characters."
    )


def test_the_content_limits_reach_the_schema() -> None:
    schema = TypeAdapter(with_limits(NewContent, 900, 300)).json_schema()
    assert (schema["maxLength"], schema["minLength"]) == (900, 1)
    assert "over 300 the service may summarise it; over 900 it is rejected" in schema["description"]
    assert TypeAdapter(with_limits(ReplacementContent, 900, 300)).json_schema()["maxLength"] == 900
    assert with_limits(Tags, 900, 300) is Tags and with_limits(int, 900, 300) is int


class RecordingClient:
    """Stands in for the SDK client: records each call and answers with an empty success."""

    base_url = "http://recording"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    async def recall(self, query: str | None, **params: Any) -> RecallResponse:
        self.calls.append(("recall", query, params))
        return RecallResponse(results=[], count=0)

    async def store(self, content: str, **fields: Any) -> StoreResult:
        self.calls.append(("store", content, fields))
        return StoreResult(memory_id="m1")

    async def associate_many(self, associations: list[dict[str, Any]]) -> AssociateBatchResult:
        self.calls.append(("associate_many", associations, None))
        return AssociateBatchResult(created_count=len(associations), failed_count=0, succeeded=[], failed=[])


def recording() -> tuple[ToolContext, RecordingClient]:
    client = RecordingClient()
    return ToolContext(cast(AsyncAutomemClient, client), hard_limit=2000, soft_limit=500), client


def test_automem_recall_arguments_become_sdk_parameters() -> None:
    ctx, client = recording()
    asyncio.run(
        tools.recall_memory(
            ctx,
            query="q",
            state_mode="current",
            current_only=False,
            embedding=[0.5],
            relation_limit=0,
            expansion_limit=3,
            expand_min_importance=0.4,
            expand_min_strength=0.6,
        )
    )
    ((_, query, params),) = client.calls
    assert query == "q" and params["state_mode"] == "history"  # the legacy flag wins, as in AutoMem
    assert params["embedding"] == [0.5] and params["relation_limit"] == 0 and params["expansion_limit"] == 3
    assert (params["expand_min_importance"], params["expand_min_strength"]) == (0.4, 0.6)
    assert None not in params.values()


def test_automem_store_and_batch_arguments_become_sdk_fields() -> None:
    ctx, client = recording()
    at = "2025-01-02T00:00:00Z"
    asyncio.run(tools.store_memory(ctx, " A fact ", id="u1", updated_at=at, last_accessed=at))
    links = [
        AssociationInput(memory1_id="a", memory2_id="b", type="PREFERS_OVER", reason="why", role="dropped"),
        AssociationInput(memory1_id="b", memory2_id="c"),
    ]
    asyncio.run(tools.associate_memories(ctx, associations=links))
    asyncio.run(tools.store_memory(ctx, "x" * 2001))  # refused before any request
    (_, content, fields), (_, edges, _) = client.calls
    assert content == "A fact" and fields == {"id": "u1", "updated_at": at, "last_accessed": at}
    assert edges == [
        {"memory1_id": "a", "memory2_id": "b", "type": "PREFERS_OVER", "strength": 0.5, "reason": "why"},
        {"memory1_id": "b", "memory2_id": "c", "type": "RELATES_TO", "strength": 0.5},
    ]
