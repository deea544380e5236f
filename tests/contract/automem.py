"""What the contract tier shares: AutoMem's field lists, as its reference describes each route
(../shared/reference/automem-behaviour.md §1-§2), and a check that a body carries them."""

from __future__ import annotations

from typing import Any

from tests.conftest import ADMIN_TOKEN

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}

# Fields AutoMem's answers carry (ours may carry more; none of these may be missing or renamed).
STORE = {
    "status", "memory_id", "stored_at", "type", "confidence", "qdrant", "embedding_status",
    "enrichment", "metadata", "timestamp", "updated_at", "last_accessed", "query_time_ms",
}  # fmt: skip
BATCH = {"status", "stored", "memory_ids", "qdrant", "enrichment", "query_time_ms"}
MEMORY = {"id", "content", "type", "confidence", "tags", "importance", "metadata", "timestamp", "updated_at"}
BY_TAG = {"status", "tags", "count", "limit", "offset", "has_more", "memories"}
RECALL = {
    "status", "query", "results", "count", "dedup_removed", "sort", "state_mode", "vector_search",
    "tag_mode", "tag_match", "query_time_ms",
}  # fmt: skip
RECALL_ITEM = {"id", "score", "final_score", "original_score", "match_type", "source", "memory", "relations"}
RELATED = {"status", "memory_id", "count", "related_memories", "relationship_types", "max_depth", "limit"}
ASSOCIATE = {"status", "message", "relation_type", "strength"}
ASSOCIATE_BATCH = {"status", "created_count", "failed_count", "succeeded", "failed", "summary"}
HEALTH = {
    "status", "falkordb", "qdrant", "memory_count", "vector_count", "sync_status",
    "vector_dimensions", "enrichment", "timestamp", "graph",
}  # fmt: skip
ENRICHMENT_STATUS = {"status", "queue_size", "pending", "inflight", "max_attempts", "stats", "classification"}
ERROR = {"status", "code", "message"}


def assert_fields(body: Any, required: set[str]) -> None:
    assert isinstance(body, dict), body
    missing = required - set(body)
    assert not missing, f"AutoMem's fields missing: {sorted(missing)} in {sorted(body)}"


def assert_error(response: Any, status: int) -> dict[str, Any]:
    """AutoMem's error envelope: {status: "error", code: <HTTP status>, message}."""
    assert response.status_code == status, response.get_json()
    body: dict[str, Any] = response.get_json()
    assert_fields(body, ERROR)
    assert body["status"] == "error" and body["code"] == status and body["message"]
    return body
