"""Session start-up memories (GET /startup-recall) and statistics over the store (GET /analyze).

Both are AutoMem-compatible in shape. Where AutoMem is weak they do better: start-up lessons
are found by whole-segment tag prefix (`lesson:python` is a lesson; AutoMem matches the exact,
case-sensitive tag only), follow current-state semantics (no deleted, archived, expired or
superseded lessons: a corrected lesson shows its correction), and /analyze counts every active
memory instead of a sample.
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from automem.recall.engine import RecallEngine
from automem.recall.query import RecallQuery
from automem.settings import Settings
from automem.stores.graph import GraphStore

LESSON_TAGS = ("critical", "lesson", "ai-assistant")
RULE_TAGS = ("system", "memory-recall")
CRITICAL_IMPORTANCE = 0.9
# AutoMem's confidence bands: low < 0.4 <= medium < 0.7 <= high.
CONFIDENCE_BANDS = (0.4, 0.7)
PATTERN_MIN_CONFIDENCE = 0.6
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class StartupRecallQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    limit: int = Field(10, ge=1, le=50, description="lessons to return")
    rules_limit: int = Field(5, ge=0, le=50, description="system rules to return")


def startup_recall(
    engine: RecallEngine, settings: Settings, query: StartupRecallQuery, tenant: str
) -> dict[str, Any]:
    lessons = [_lesson(r["memory"]) for r in _listing(engine, settings, LESSON_TAGS, query.limit, tenant)]
    rules = [_rule(r["memory"]) for r in _listing(engine, settings, RULE_TAGS, query.rules_limit, tenant)]
    critical = sum(1 for lesson in lessons if (lesson["importance"] or 0.0) >= CRITICAL_IMPORTANCE)
    return {
        "status": "success",
        "critical_lessons": lessons,
        "system_rules": rules,
        "lesson_count": len(lessons),
        "rule_count": len(rules),
        "has_critical": critical > 0,
        "summary": f"{len(lessons)} lessons ({critical} critical) and {len(rules)} system rules",
    }


def _listing(
    engine: RecallEngine, settings: Settings, tags: tuple[str, ...], limit: int, tenant: str
) -> list[dict[str, Any]]:
    """Current memories under any of `tags`, most important first (newest first among equals):
    recall's listing mode, so the state rules are exactly recall's."""
    if limit <= 0:
        return []
    query = RecallQuery.model_validate(
        {"tags": list(tags), "limit": limit, "expand_relations": False, "expand_entities": False},
        context={"settings": settings},
    )
    results: list[dict[str, Any]] = engine.recall(query, tenant)["results"]
    return results


def _lesson(memory: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": memory["id"],
        "content": memory["content"],
        "tags": memory["tags"],
        "importance": memory["importance"],
        "type": memory["type"],
        "metadata": memory["metadata"],
        "timestamp": memory["timestamp"],
    }


def _rule(memory: dict[str, Any]) -> dict[str, Any]:
    return {"id": memory["id"], "content": memory["content"], "tags": memory["tags"]}


def analyze(graph: GraphStore, tenant: str) -> dict[str, Any]:
    started = time.perf_counter()
    types = graph.type_stats(tenant)
    analytics = {
        "total_memories": sum(n for _, n, _, _ in types),
        "memory_types": {
            t: {"count": n, "average_confidence": _round(c), "average_importance": _round(i)}
            for t, n, c, i in types
        },
        "confidence_distribution": graph.confidence_buckets(tenant, *CONFIDENCE_BANDS),
        "patterns": graph.confident_memories_of_type(tenant, "Pattern", PATTERN_MIN_CONFIDENCE, 10),
        "clusters": graph.pattern_clusters(tenant, 10),
        "preferences": graph.preference_edges(tenant, 10),
        "temporal_insights": _temporal(graph.activity_by_hour(tenant), graph.activity_by_day(tenant)),
        "entity_frequency": graph.top_entities(tenant, 50),
        "top_tags": [{"tag": t, "count": n} for t, n in graph.top_tags(tenant, 20)],
        "relationships": graph.relationship_counts(tenant),
    }
    elapsed = round((time.perf_counter() - started) * 1000, 2)
    return {"status": "success", "analytics": analytics, "elapsed_ms": elapsed}


def _temporal(
    hours: list[tuple[int, int, float | None]], days: list[tuple[str, int, float | None]]
) -> dict[str, Any]:
    """When memories happen (event time, UTC): by hour of day, weekday and month."""
    weekdays: dict[str, int] = defaultdict(int)
    months: dict[str, int] = defaultdict(int)
    for day, count, _ in days:
        try:
            weekdays[_WEEKDAYS[date.fromisoformat(day).weekday()]] += count
        except ValueError:
            continue
        months[day[:7]] += count
    by_hour = [{"hour": h, "count": n, "average_importance": _round(i)} for h, n, i in hours]
    busiest_hour = max(hours, key=lambda row: (row[1], -row[0]))[0] if hours else None
    busiest_day = max(weekdays, key=lambda w: (weekdays[w], -_WEEKDAYS.index(w))) if weekdays else None
    return {
        "timezone": "UTC",
        "by_hour": by_hour,
        "by_weekday": [{"weekday": w, "count": weekdays[w]} for w in _WEEKDAYS if w in weekdays],
        "by_month": [{"month": m, "count": months[m]} for m in sorted(months)],
        "busiest_hour": busiest_hour,
        "busiest_weekday": busiest_day,
        "first_day": days[0][0] if days else None,
        "last_day": days[-1][0] if days else None,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
