"""AutoMem §2.11-2.12: GET /startup-recall and GET /analyze."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api
from tests.contract.automem import assert_fields


def test_startup_recall(api: Api, jobs: Any) -> None:
    api.post(
        "/memory", json={"content": "Never force-push to main", "tags": ["critical"], "importance": 0.95}
    )
    api.post("/memory", json={"content": "Recall memories at session start", "tags": ["system"]})
    jobs()
    body = api.get("/startup-recall").get_json()
    assert_fields(
        body, {"status", "critical_lessons", "system_rules", "lesson_count", "has_critical", "summary"}
    )
    assert body["has_critical"] is True and body["lesson_count"] == 1
    assert_fields(body["critical_lessons"][0], {"id", "content", "tags", "importance", "type", "metadata"})
    assert_fields(body["system_rules"][0], {"id", "content", "tags"})


def test_analyze(api: Api, jobs: Any) -> None:
    api.post("/memory", json={"content": "I prefer tabs over spaces", "type": "Preference"})
    jobs()
    body = api.get("/analyze").get_json()
    assert_fields(body, {"status", "analytics", "elapsed_ms"})
    assert_fields(
        body["analytics"],
        {
            "memory_types",
            "patterns",
            "preferences",
            "temporal_insights",
            "entity_frequency",
            "confidence_distribution",
        },
    )
