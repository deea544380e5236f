"""The Python SDK against the real app served over HTTP, sync and async: every route, typed
results validated against `automem.schemas` (a contract test of the responses), and the error
tree. Retries are tested against a scripted server in tests/test_sdk_retry.py."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from automem.client import (
    ApiError,
    AsyncAutomemClient,
    AuthenticationError,
    AutomemClient,
    BadRequestError,
    ConflictError,
    NotFoundError,
)
from automem.client._calls import Association, NewMemory, RecallParams, UpdateFields, keys_of
from automem.models import MemoryCreate, MemoryUpdate
from automem.recall.query import RecallQuery
from automem.relations import AUTHORABLE
from automem.schemas import (
    HealthResponse,
    Memory,
    RecallResponse,
    RestoreResult,
    StoreResult,
)
from tests.conftest import ADMIN_TOKEN, API_TOKEN
from tests.served import base_url  # noqa: F401  (fixture)

PG = "Chose PostgreSQL over MongoDB: we need ACID transactions"
TABS = "Alice prefers tabs over spaces in Python code"


# --- the SDK's request fields are the service's request models ------------------------------------
def test_sdk_fields_are_the_request_models_fields() -> None:
    assert keys_of(NewMemory) == set(MemoryCreate.model_fields)
    assert keys_of(UpdateFields) == set(MemoryUpdate.model_fields)
    assert keys_of(RecallParams) | {"query"} == set(RecallQuery.model_fields)
    props = {p for extra in AUTHORABLE.values() for p in extra}
    assert keys_of(Association) == {"memory1_id", "memory2_id", "type", "strength"} | props


def test_sync_and_async_clients_offer_the_same_calls() -> None:
    def public(cls: type) -> dict[str, inspect.Signature]:
        return {
            name: inspect.signature(fn)
            for name, fn in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_") and name not in ("close", "aclose")
        }

    sync, aio = public(AutomemClient), public(AsyncAutomemClient)
    assert sync == aio
    assert all(inspect.iscoroutinefunction(getattr(AsyncAutomemClient, n)) for n in aio if n != "from_env")


def test_a_misspelt_field_is_refused_before_sending() -> None:
    with AutomemClient("http://127.0.0.1:9") as mem, pytest.raises(TypeError, match="importnce"):
        mem.store("x", importnce=0.9)  # type: ignore[call-arg]


def test_from_env_reads_the_settings_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMEM_URL", "http://memory.example:8001/")
    monkeypatch.setenv("AUTOMEM_API_TOKEN", "server-token")
    monkeypatch.setenv("AUTOMEM_CLIENT_RETRIES", "1")
    with AutomemClient.from_env() as mem:
        assert (mem.base_url, mem.api_key, mem.retry.retries, mem.timeout) == (
            "http://memory.example:8001",
            "server-token",
            1,
            25.0,
        )
    monkeypatch.setenv("AUTOMEM_API_KEY", "client-key")
    with AutomemClient.from_env(timeout=5.0) as mem:
        assert (mem.api_key, mem.timeout) == ("client-key", 5.0)


# --- sync, every route ----------------------------------------------------------------------------
def test_sync_client_memories_and_recall(base_url: str, jobs: Any) -> None:  # noqa: F811
    with AutomemClient(base_url, API_TOKEN, admin_token=ADMIN_TOKEN) as mem:
        when = datetime(2025, 1, 10, 9, 30, tzinfo=UTC)
        stored = mem.store(
            PG,
            tags=["project:alpha", "db"],
            importance=0.9,
            type="decision",
            metadata={"files": ["db.py"]},
            timestamp=when,
        )
        assert isinstance(stored, StoreResult)
        assert (stored.deduplicated, stored.type, stored.embedding) == (False, "Decision", "queued")
        again = mem.store(PG)
        assert again.deduplicated and again.memory_id == stored.memory_id
        assert again.memory is not None and again.memory.content == PG
        other = mem.store(TABS, tags=["people:alice"]).memory_id
        batch = mem.store_batch([{"content": "Deploys run every Friday", "tags": ["ci"]}, {"content": PG}])
        assert [item.status for item in batch.results] == ["created", "duplicate"]
        jobs()

        memory = mem.get(stored.memory_id)
        assert isinstance(memory, Memory)
        # Enrichment has added entity tags and metadata by now.
        assert (memory.content, memory.tags[:2], memory.metadata["files"]) == (
            PG,
            ["project:alpha", "db"],
            ["db.py"],
        )
        assert "entity:tool:postgresql" in memory.tags and memory.enriched
        assert memory.timestamp is not None and memory.timestamp.startswith("2025-01-10T09:30:00")
        assert memory.embedding_status == "stored"
        updated = mem.update(
            stored.memory_id, importance=0.95, metadata={"reviewed": True}, if_version=memory.version
        )
        assert updated.importance == 0.95 and updated.version == (memory.version or 0) + 1
        assert updated.metadata == {**memory.metadata, "reviewed": True}
        with pytest.raises(ConflictError) as conflict:
            mem.update(stored.memory_id, importance=0.1, if_version=memory.version)
        assert (conflict.value.reason, conflict.value.field) == ("version_conflict", "if_version")

        found = mem.recall("database ACID transactions", tags=["project"], limit=5)
        assert isinstance(found, RecallResponse)
        assert [r.id for r in found.results] == [stored.memory_id]
        assert isinstance(found.results[0].memory, Memory) and found.results[0].score > 0
        listed = mem.by_tag("project")
        assert (listed.count, listed.has_more, listed.memories[0].id) == (1, False, stored.memory_id)
        tree = mem.tags(prefix="project")
        assert {t.tag: t.count for t in tree.flat} == {"project": 1, "project:alpha": 1}

        edge = mem.associate(stored.memory_id, other, "RELATES_TO", 0.7)
        assert (edge.relation_type, edge.strength) == ("RELATES_TO", 0.7)
        many = mem.associate_many(
            [
                {
                    "memory1_id": stored.memory_id,
                    "memory2_id": other,
                    "type": "PREFERS_OVER",
                    "strength": 0.8,
                    "context": "storage",
                },
                {"memory1_id": stored.memory_id, "memory2_id": str(uuid.uuid4())},
            ]
        )
        assert (many.status, many.created_count, many.failed_count) == ("partial_success", 1, 1)
        assert many.failed[0].index == 1
        related = mem.related(stored.memory_id, relationship_types=["RELATES_TO", "PREFERS_OVER"])
        assert [m.id for m in related.related_memories] == [other]

        gone = mem.delete(other)
        assert gone.deleted == "soft"
        with pytest.raises(NotFoundError) as missing:
            mem.get(other)
        assert missing.value.status == 404 and missing.value.reason == "not_found"
        assert mem.recover(other).recovered is True
        preview = mem.delete_by_tag(["ci"], preview=True)
        assert preview.preview and preview.count == 1
        done = mem.delete_by_tag(["ci"])
        assert (done.preview, done.deleted_count, done.deleted) == (False, 1, "soft")


def test_sync_client_operations_and_statistics(base_url: str, jobs: Any) -> None:  # noqa: F811
    with AutomemClient(base_url, API_TOKEN, admin_token=ADMIN_TOKEN) as mem:
        lesson = mem.store("Never deploy on Fridays", tags=["lesson"], importance=0.95).memory_id
        jobs()
        startup = mem.startup_recall()
        assert [lesson_.id for lesson_ in startup.critical_lessons] == [lesson] and startup.has_critical
        assert mem.analyze().analytics.total_memories == 1

        health = mem.health()
        assert isinstance(health, HealthResponse)
        assert (health.status, health.falkordb, health.embedding.provider) == ("healthy", "connected", "hash")
        status = mem.enrichment_status()
        assert status.enabled and set(status.queues) == {"embed", "enrich", "maintenance"}
        assert mem.reprocess([lesson, str(uuid.uuid4())]).queued == 1
        assert mem.jobs().failed_jobs == []
        assert mem.sync_vectors().difference == 0
        assert mem.reembed().job_status in ("queued", "already_queued")
        assert mem.reembed_progress().memories == 1
        dry = mem.consolidate("decay")
        assert dry.consolidation is not None and dry.consolidation["dry_run"] is True
        assert mem.consolidation_status().enabled is True
        assert "/recall" in mem.openapi()["paths"]


def test_sync_client_errors(base_url: str) -> None:  # noqa: F811
    with AutomemClient(base_url, API_TOKEN) as mem:
        with pytest.raises(BadRequestError) as empty:
            mem.store("   ")
        refused = (empty.value.status, empty.value.reason, empty.value.field)
        assert refused == (400, "invalid_input", "content")
        with pytest.raises(BadRequestError, match="the limit is 2000") as long:
            mem.store("x" * 2001)
        assert long.value.field == "content"
        with pytest.raises(BadRequestError) as bad_id:
            mem.get("not-a-uuid")
        assert bad_id.value.field == "id"
        with pytest.raises(NotFoundError):
            mem.update(str(uuid.uuid4()), importance=0.5)
        with pytest.raises(AuthenticationError) as admin:
            mem.jobs()
        assert admin.value.reason == "admin_required"
        assert admin.value.request_id
    with AutomemClient(base_url) as anonymous:
        with pytest.raises(AuthenticationError) as unauthorized:
            anonymous.recall("x")
        assert unauthorized.value.reason == "unauthorized"
        assert anonymous.health().status == "healthy"


def test_sync_client_history_backup_and_restore(base_url: str, tmp_path: Path) -> None:  # noqa: F811
    with AutomemClient(base_url, API_TOKEN, admin_token=ADMIN_TOKEN) as mem:
        memory_id = mem.store("A memory with a history", tags=["h"]).memory_id
        mem.update(memory_id, tags=["h", "edited"], reason="tidy the tags")
        mem.delete(memory_id, reason="obsolete")
        mem.recover(memory_id, reason="needed after all")
        newest = mem.history(memory_id, limit=2)
        assert [(e.event, e.reason) for e in newest.events] == [
            ("recovered", "needed after all"),
            ("deleted", "obsolete"),
        ]
        older = mem.history(memory_id, before=newest.model_extra["next_before"])
        assert [e.event for e in older.events] == ["modified", "created"]
        assert older.events[0].reason == "tidy the tags"

        archive = tmp_path / "backup.jsonl.gz"
        assert mem.backup(archive) > 0
        with pytest.raises(ApiError) as refused:
            mem.restore(archive)  # the store is not empty
        assert (refused.value.status, refused.value.reason) == (409, "store_not_empty")
        restored = mem.restore(archive, mode="replace")
        assert isinstance(restored, RestoreResult)
        assert restored.model_extra["restored"]["memories"] == 1
        assert mem.get(memory_id).tags == ["h", "edited"]
        assert [e.event for e in mem.history(memory_id).events][:2] == ["recovered", "deleted"]
        assert "# TYPE automem_http_request_duration_seconds histogram" in mem.metrics()


# --- async ----------------------------------------------------------------------------------------
def test_async_client_against_the_real_app(base_url: str, jobs: Any) -> None:  # noqa: F811
    async def scenario() -> dict[str, Any]:
        async with AsyncAutomemClient(base_url, API_TOKEN, admin_token=ADMIN_TOKEN) as mem:
            first, second = await asyncio.gather(
                mem.store(PG, tags=["project:alpha"], importance=0.9),
                mem.store(TABS, tags=["people:alice"], importance=0.6),
            )
            jobs()
            out: dict[str, Any] = {"ids": (first.memory_id, second.memory_id)}
            out["get"] = await mem.get(first.memory_id)
            out["update"] = await mem.update(first.memory_id, tags=["project:beta"], metadata={"k": 1})
            out["recall"] = await mem.recall("ACID transactions database", limit=2)
            out["by_tag"] = await mem.by_tag(["project:beta"], tag_match="exact")
            out["edge"] = await mem.associate(first.memory_id, second.memory_id, "LEADS_TO")
            out["related"] = await mem.related(first.memory_id, relationship_types=["LEADS_TO"])
            out["health"] = await mem.health()
            out["startup"] = await mem.startup_recall()
            out["delete"] = await mem.delete(second.memory_id)
            for call in (mem.get(second.memory_id), mem.store(""), mem.get("nope")):
                try:
                    await call
                except ApiError as exc:
                    out.setdefault("errors", []).append((type(exc), exc.status, exc.field))
            out["history"] = await mem.history(first.memory_id)
            return out

    out = asyncio.run(scenario())
    first, second = out["ids"]
    assert out["get"].content == PG
    assert out["update"].tags == ["project:beta"] and out["update"].metadata["k"] == 1
    assert out["recall"].results[0].id == first
    assert [m.id for m in out["by_tag"].memories] == [first]
    assert out["edge"].relation_type == "LEADS_TO"
    assert [m.id for m in out["related"].related_memories] == [second]
    assert out["health"].status == "healthy"
    assert out["startup"].critical_lessons == []
    assert out["delete"].memory_id == second
    assert out["errors"] == [
        (NotFoundError, 404, "id"),
        (BadRequestError, 400, "content"),
        (BadRequestError, 400, "id"),
    ]
    assert [e.event for e in out["history"].events] == ["modified", "enriched", "created"]
