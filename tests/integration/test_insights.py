"""GET /startup-recall and GET /analyze against the real embedded stack."""

from __future__ import annotations

from collections import Counter
from typing import Any

from flask.testing import FlaskClient

from automem.schemas import AnalyzeResponse, StartupRecallResponse
from tests.conftest import Api
from tests.integration.test_recall_api import store


def startup(api: Api, **params: Any) -> dict[str, Any]:
    response = api.get("/startup-recall", query_string=params)
    assert response.status_code == 200, response.get_json()
    body: dict[str, Any] = response.get_json()
    StartupRecallResponse.model_validate(body)
    return body


def test_startup_recall_finds_lessons_by_tag_segment_in_importance_order(api: Api) -> None:
    top = store(api, "Never force-push to main", tags=["lesson"], importance=0.95)
    nested = store(api, "Pin numpy below 3 for fastembed", tags=["Lesson:Python"], importance=0.7)
    critical = store(api, "Backups must be tested monthly", tags=["critical"], importance=0.8)
    assistant = store(api, "Answer in British English", tags=["ai-assistant/style"], importance=0.6)
    store(api, "A retrospective full of lessons-learned", tags=["lessons-learned"], importance=1.0)
    store(api, "Unrelated note about lunch", tags=["food"], importance=1.0)
    rule = store(api, "Recall project memories before answering", tags=["system"], importance=0.5)
    rule2 = store(api, "Store decisions with their rationale", tags=["memory-recall"], importance=0.9)

    body = startup(api)
    assert [lesson["id"] for lesson in body["critical_lessons"]] == [top, critical, nested, assistant]
    assert body["critical_lessons"][2]["tags"] == ["lesson:python"]
    assert {r["id"] for r in body["system_rules"]} == {rule, rule2}
    assert body["lesson_count"] == 4 and body["rule_count"] == 2
    assert body["has_critical"] is True
    assert body["summary"] == "4 lessons (1 critical) and 2 system rules"
    assert set(body["critical_lessons"][0]) >= {"id", "content", "tags", "importance", "type", "metadata"}
    assert set(body["system_rules"][0]) == {"id", "content", "tags"}

    limited = startup(api, limit=2, rules_limit=0)
    assert [lesson["id"] for lesson in limited["critical_lessons"]] == [top, critical]
    assert limited["system_rules"] == []


def test_startup_recall_shows_only_current_lessons(api: Api) -> None:
    old = store(api, "Use Python 3.10 for the CLI", tags=["lesson"], importance=0.9)
    new = store(api, "Use Python 3.11 for the CLI", tags=["lesson"], importance=0.8)
    expired = store(api, "The VPN needs the old client", tags=["lesson"], t_invalid="2020-01-01T00:00:00Z")
    future = store(api, "Q3 freeze starts soon", tags=["lesson"], t_valid="2999-01-01T00:00:00Z")
    deleted = store(api, "Deleted lesson", tags=["lesson"])
    assert api.delete(f"/memory/{deleted}").status_code == 200
    association = {"memory1_id": old, "memory2_id": new, "type": "INVALIDATED_BY"}
    assert api.post("/associate", json=association).status_code == 201

    ids = [lesson["id"] for lesson in startup(api)["critical_lessons"]]
    assert ids == [new]
    assert not {old, expired, future, deleted} & set(ids)


def test_startup_recall_without_lessons_and_bad_parameters(api: Api, client: FlaskClient) -> None:
    store(api, "Nothing to learn here", tags=["misc"])
    body = startup(api)
    assert body["critical_lessons"] == [] and body["system_rules"] == []
    assert body["has_critical"] is False
    bad = (({"limit": 0}, "limit"), ({"limit": "x"}, "limit"), ({"rules_limit": 99}, "rules_limit"))
    for params, field in bad:
        response = api.get("/startup-recall", query_string=params)
        assert response.status_code == 400
        assert response.get_json()["field"] == field
    assert client.get("/startup-recall").status_code == 401
    assert client.get("/analyze").status_code == 401


def _analyze(api: Api) -> dict[str, Any]:
    response = api.get("/analyze")
    assert response.status_code == 200, response.get_json()
    body: dict[str, Any] = response.get_json()
    AnalyzeResponse.model_validate(body)
    analytics: dict[str, Any] = body["analytics"]
    return analytics


def test_analyze_counts_every_active_memory(api: Api) -> None:
    rows = [
        ("Chose PostgreSQL for ACID", "Decision", 0.9, "2025-01-06T09:15:00Z", ["db", "project:a"]),
        ("Chose Redis for queues", "Decision", 0.5, "2025-01-06T09:45:00Z", ["db"]),
        ("Early returns keep handlers flat", "Pattern", 0.8, "2025-01-07T14:00:00Z", ["style"]),
        ("Loose pattern guess", "Pattern", 0.3, "2025-02-01T14:30:00Z", ["style"]),
        ("Tabs in Makefiles only", "Preference", 0.65, "2025-02-02T23:00:00Z", ["style", "db"]),
    ]
    ids = [
        store(api, c, type=t, confidence=conf, timestamp=ts, tags=tags, importance=0.5 + n / 10)
        for n, (c, t, conf, ts, tags) in enumerate(rows)
    ]
    gone = store(api, "Deleted decision", type="Decision", confidence=0.1, tags=["db"])
    api.delete(f"/memory/{gone}")
    prefers = {
        "memory1_id": ids[0],
        "memory2_id": ids[1],
        "type": "PREFERS_OVER",
        "strength": 0.8,
        "context": "storage",
        "reason": "transactions",
    }
    assert api.post("/associate", json=prefers).status_code == 201
    relates = {"memory1_id": ids[2], "memory2_id": ids[4], "type": "RELATES_TO"}
    assert api.post("/associate", json=relates).status_code == 201

    analytics = _analyze(api)
    assert analytics["total_memories"] == 5
    types = analytics["memory_types"]
    assert {t: s["count"] for t, s in types.items()} == {"Decision": 2, "Pattern": 2, "Preference": 1}
    assert types["Decision"]["average_confidence"] == 0.7
    assert types["Pattern"]["average_importance"] == 0.75
    assert analytics["confidence_distribution"] == {"low": 1, "medium": 2, "high": 2}
    assert [p["id"] for p in analytics["patterns"]] == [ids[2]]
    assert analytics["preferences"] == [
        {
            "preferred": {"id": ids[0], "content": rows[0][0]},
            "over": {"id": ids[1], "content": rows[1][0]},
            "strength": 0.8,
            "context": "storage",
            "reason": "transactions",
        }
    ]
    assert analytics["relationships"] == {"PREFERS_OVER": 1, "RELATES_TO": 1}
    assert analytics["top_tags"][:2] == [{"tag": "db", "count": 3}, {"tag": "style", "count": 3}]
    temporal = analytics["temporal_insights"]
    assert {h["hour"]: h["count"] for h in temporal["by_hour"]} == {9: 2, 14: 2, 23: 1}
    assert temporal["busiest_hour"] == 9
    # 2025-01-06 was a Monday, 2025-01-07 a Tuesday, 2025-02-01 a Saturday, 2025-02-02 a Sunday.
    assert {d["weekday"]: d["count"] for d in temporal["by_weekday"]} == {
        "Monday": 2,
        "Tuesday": 1,
        "Saturday": 1,
        "Sunday": 1,
    }
    assert temporal["by_month"] == [{"month": "2025-01", "count": 3}, {"month": "2025-02", "count": 2}]
    assert (temporal["first_day"], temporal["last_day"]) == ("2025-01-06", "2025-02-02")


def test_analyze_entity_frequency_matches_the_enrichment_tags(api: Api, jobs: Any) -> None:
    for text in (
        "Alice Johnson moved the billing service to PostgreSQL",
        "Alice Johnson reviewed the PostgreSQL migration plan",
        "Bob Smith set up Redis for the job queue",
    ):
        store(api, text)
    jobs()
    expected: Counter[str] = Counter()
    body = api.get("/memory/by-tag", query_string={"tags": "entity", "limit": 100}).get_json()
    for item in body["memories"]:
        expected.update(t for t in item["tags"] if t.startswith("entity:"))
    assert expected, "enrichment found no entities"
    found = {e["tag"]: e["count"] for e in _analyze(api)["entity_frequency"]}
    assert found == dict(expected)


def test_analyze_on_an_empty_store(api: Api) -> None:
    analytics = _analyze(api)
    assert analytics["total_memories"] == 0
    assert analytics["memory_types"] == {} and analytics["entity_frequency"] == []
    assert analytics["temporal_insights"]["busiest_hour"] is None
