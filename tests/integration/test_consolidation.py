"""Consolidation: the scoring formula, dry runs vs real runs on RQ, forgetting, the API and the
RQ cron registration, against the real embedded FalkorDB/Redis stack."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis
from rq import Queue
from rq.cron import CronScheduler

from automem.embedded import EmbeddedFalkorDB
from automem.record import MemoryRecord
from automem.services import Services
from automem.settings import Settings
from automem.timeutil import format_utc, utc_now
from enrichment.consolidation import (
    classify_pair,
    cluster_indices,
    is_pinned,
    key_terms,
    match_patterns,
    protection,
    relevance,
    score_memory,
    unit_rows,
)
from enrichment.cron import CronRunner, build_scheduler, next_runs, scheduled_tasks
from tests.conftest import ADMIN_TOKEN, Api, make_settings

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}
NOW = utc_now()
OLD = "2019-03-01T10:00:00Z"


def days_ago(n: float) -> str:
    return format_utc(NOW - timedelta(days=n))


# --- the formula -----------------------------------------------------------------------------------
BASE: dict[str, Any] = {
    "age_days": 30.0,
    "days_since_access": 10.0,
    "access_count": 2,
    "links": 1,
    "importance": 0.5,
    "confidence": 0.5,
    "decay_rate": 0.01,
}


@pytest.mark.parametrize(
    ("field", "values", "direction"),
    [
        ("age_days", [0, 1, 10, 60, 200, 1000], -1),
        ("days_since_access", [0, 1, 7, 30, 365], -1),
        ("access_count", [0, 1, 3, 10, 50], 1),
        ("links", [0, 1, 2, 5, 20], 1),
        ("importance", [0.0, 0.2, 0.5, 0.8, 1.0], 1),
        ("confidence", [0.0, 0.3, 0.6, 1.0], 1),
    ],
)
def test_relevance_is_monotonic(field: str, values: list[float], direction: int) -> None:
    scores = [relevance(**{**BASE, field: v}) for v in values]
    for earlier, later in itertools.pairwise(scores):
        assert (later - earlier) * direction >= 0, (field, scores)  # flat only at the floor/cap
    assert (scores[-1] - scores[0]) * direction > 0
    assert len(set(scores[:3])) == 3, scores
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_relevance_floor_cap_and_threshold_reachable() -> None:
    ancient = {**BASE, "age_days": 5000, "days_since_access": 5000, "access_count": 0}
    assert relevance(**{**ancient, "importance": 0.6}) == pytest.approx(0.18)  # 0.3 x importance
    assert relevance(**{**BASE, "age_days": 0, "links": 10**6, "importance": 1, "confidence": 1}) == 1.0
    # An unused importance-0.5 memory falls below the 0.2 archive threshold after some months.
    fresh = {**BASE, "age_days": 0, "days_since_access": 0, "access_count": 0, "links": 0}
    assert relevance(**fresh) > 0.5
    assert relevance(**{**fresh, "age_days": 150, "days_since_access": 150}) < 0.2


def test_never_accessed_scores_below_accessed() -> None:
    assert relevance(**{**BASE, "days_since_access": None}) < relevance(**BASE)


def doc(**fields: Any) -> MemoryRecord:
    base = {
        "id": "m",
        "type": "Context",
        "tags": [],
        "importance": 0.3,
        "confidence": 0.5,
        "timestamp": OLD,
        "created_at": OLD,
        "last_accessed": OLD,
        "access_count": 0,
        "metadata": "{}",
        "relevance_score": None,
    }
    return MemoryRecord.from_props({**base, **fields})


def test_pinned_memories_never_decay() -> None:
    for pinned in (doc(tags=["pinned"]), doc(tags=["critical"]), doc(metadata=json.dumps({"pinned": True}))):
        assert is_pinned(pinned)
        assert score_memory(replace(pinned, relevance_score=0.93), NOW, 0.01) == pytest.approx(0.93)
    plain = doc(relevance_score=0.93)
    assert not is_pinned(plain) and not is_pinned(doc(metadata=json.dumps({"pinned": "no"})))
    assert score_memory(plain, NOW, 0.01) < 0.1


def test_protection_reasons(settings: Settings) -> None:
    assert settings.consolidation_grace_period_days == 90
    assert protection(doc(), NOW, settings) is None
    assert protection(doc(tags=["critical"]), NOW, settings) == "pinned"
    assert protection(doc(importance=0.7), NOW, settings) == "importance"
    assert protection(doc(type="Decision"), NOW, settings) == "type"
    assert protection(doc(type="Insight"), NOW, settings) == "type"
    # An old event stored recently is still in its grace period.
    assert protection(doc(created_at=days_ago(3)), NOW, settings) == "grace_period"
    assert protection(doc(timestamp=days_ago(3)), NOW, settings) == "grace_period"


def test_classify_pair() -> None:
    insight = MemoryRecord("i", type="Insight", tags=["a"], timestamp=OLD)
    decision = MemoryRecord("d", type="Decision", tags=["b"], timestamp=OLD)
    context = MemoryRecord("c", type="Context", tags=["a"], timestamp=OLD)
    assert classify_pair(decision, insight, 0.55) == ("explains", 0.7, False)
    assert classify_pair(decision, context, 0.8) == ("shares_theme", 0.8, True)
    assert classify_pair(decision, context, 0.6) is None
    assert classify_pair(context, replace(context, timestamp="2019-03-05T00:00:00Z"), 0.35) == (
        "parallel_context",
        0.5,
        True,
    )
    assert classify_pair(context, replace(context, timestamp="2019-04-05T00:00:00Z"), 0.35) is None


def noisy_cluster(rng: np.random.Generator, center: np.ndarray, n: int, noise: float) -> np.ndarray:
    return center + noise * rng.standard_normal((n, center.shape[0]))


@pytest.mark.parametrize("exact_limit", [10_000, 0])  # exact pairs, and the LSH-blocked path
def test_cluster_indices_finds_clusters_within_groups(exact_limit: int) -> None:
    rng = np.random.default_rng(7)
    dim = 64
    centers = rng.standard_normal((3, dim))
    rows = [noisy_cluster(rng, c, 6, 0.1) for c in centers] + [rng.standard_normal((60, dim))]
    unit = unit_rows(np.concatenate(rows)).astype(np.float16)
    groups = [0] * len(unit)
    groups[12:18] = [1, 1, 1, 2, 2, 2]  # the third cluster is split across two tenants
    clusters = cluster_indices(unit, groups, 0.75, 3, exact_limit=exact_limit)
    assert sorted(map(sorted, clusters)) == [
        list(range(0, 6)),
        list(range(6, 12)),
        [12, 13, 14],
        [15, 16, 17],
    ]


def test_key_terms_and_pattern_matching() -> None:
    texts = ["Postgres backups run nightly", "The nightly postgres backup failed", "postgres vacuum nightly"]
    assert key_terms(texts, 2) == ["nightly", "postgres"]
    existing = {"p1": ["a", "b", "c"], "p2": ["x", "y"]}
    assert match_patterns([["a", "b", "c", "d"], ["q", "r", "s"], ["x", "y", "z"]], existing) == [
        "p1",
        None,
        "p2",
    ]


# --- against the stack -----------------------------------------------------------------------------
@pytest.fixture
def settings(falkordb_server: EmbeddedFalkorDB, redis_conn: redis.Redis, tmp_path: Path) -> Settings:
    return make_settings(falkordb_server.url, tmp_path / "data")


def vec(dim: int, **weights: float) -> list[float]:
    """A vector with the given weights on axes named a0, a1, ..."""
    out = [0.0] * dim
    for name, value in weights.items():
        out[int(name[1:])] = value
    return out


def store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["memory_id"]  # type: ignore[no-any-return]


def consolidate(api: Api, headers: dict[str, str] | None = None, **body: Any) -> Any:
    return api.post("/consolidate", json=body, headers=headers)


@pytest.fixture
def corpus(api: Api, services: Services, jobs: Any) -> dict[str, str]:
    dim = services.embedder.dimension
    ids = {
        # A cluster of three very similar Context memories (cosine ~0.99).
        "c1": store(
            api, "Nightly postgres backup finished to bucket alpha", embedding=vec(dim, a0=1, a1=0.10)
        ),
        "c2": store(
            api, "Nightly postgres backup uploaded to bucket beta", embedding=vec(dim, a0=1, a2=0.10)
        ),
        "c3": store(
            api, "Nightly postgres backup verified on bucket gamma", embedding=vec(dim, a0=1, a3=0.12)
        ),
        # An Insight and a Decision at cosine 0.6: a creative "explains" association.
        "insight": store(
            api, "Slow deploys come from cold caches", type="Insight", embedding=vec(dim, a10=1)
        ),
        "decision": store(
            api, "We warm caches before each deploy", type="Decision", embedding=vec(dim, a10=0.6, a11=0.8)
        ),
        # Old, unused, unimportant: what forgetting is for.
        "stale": store(
            api,
            "Zebrafish lunch menu trivia from an offsite",
            tags=["trivia"],
            importance=0.2,
            timestamp=OLD,
            last_accessed=OLD,
            embedding=vec(dim, a20=1),
        ),
    }
    jobs()
    return ids


def snapshot(services: Services, ids: list[str]) -> dict[str, Any]:
    docs = {d.id: d for d in services.graph.get_memories(ids)}
    return {"docs": docs, "state": services.graph.consolidation_state(ids)}


def test_dry_run_writes_nothing(api: Api, services: Services, corpus: dict[str, str]) -> None:
    ids = list(corpus.values())
    before = snapshot(services, ids)
    response = consolidate(api, mode="full")  # dry_run defaults to true
    assert response.status_code == 200, response.get_json()
    run = response.get_json()["consolidation"]
    assert run["dry_run"] is True and run["success"] is True and run["mode"] == "full"
    steps = run["steps"]
    assert steps["decay"]["processed"] == len(ids) and steps["decay"]["changed"] == len(ids)
    assert steps["decay"]["written"] == 0
    assert any(a["kind"] == "explains" for a in steps["creative"]["associations"])
    assert steps["creative"]["created"] == 0
    [pattern] = steps["cluster"]["patterns"]
    assert sorted(pattern["members"]) == sorted([corpus["c1"], corpus["c2"], corpus["c3"]])
    assert "skipped" in steps["forget"]  # forgetting is off by default, so `full` leaves it out

    forget = consolidate(api, mode="forget", dry_run=True)  # a dry run needs no admin token
    assert forget.status_code == 200
    step = forget.get_json()["consolidation"]["steps"]["forget"]
    assert step["would_archive"] == 0 and step["protected"] == {"grace_period": 1}  # stored just now
    services.settings = services.settings.model_copy(update={"consolidation_grace_period_days": 0})
    step = consolidate(api, mode="forget").get_json()["consolidation"]["steps"]["forget"]
    assert step["archived_ids"] == [corpus["stale"]] and step["archived"] == 0

    assert snapshot(services, ids) == before
    assert all(s["relevance_score"] is None for s in before["state"].values())
    assert services.graph.discovered_edges() == []
    assert services.graph.patterns() == []
    assert services.graph.consolidation_runs(10) == []


def run_mode(api: Api, jobs: Any, mode: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    response = consolidate(api, headers=headers, mode=mode, dry_run=False)
    assert response.status_code == 202, response.get_json()
    body = response.get_json()
    assert body["job_id"] == f"consolidation-{mode}" and body["job_status"] == "queued"
    jobs()
    return body  # type: ignore[no-any-return]


def test_real_run_writes_scores_edges_patterns_and_history(
    api: Api, services: Services, corpus: dict[str, str], jobs: Any
) -> None:
    ids = list(corpus.values())
    before = services.graph.consolidation_state(ids)
    run_mode(api, jobs, "decay")
    after = services.graph.consolidation_state(ids)
    for memory_id in ids:
        score = after[memory_id]["relevance_score"]
        assert 0 < score <= 1 and after[memory_id]["relevance_at"]
        # The score is not a client-visible change, and not in the vector payload.
        assert after[memory_id]["version"] == before[memory_id]["version"]
        assert after[memory_id]["rev"] == before[memory_id]["rev"]
    assert after[corpus["stale"]]["relevance_score"] < 0.2 < after[corpus["c1"]]["relevance_score"]

    run_mode(api, jobs, "creative")
    edges = services.graph.discovered_edges()
    explains = [e for e in edges if e["kind"] == "explains"]
    assert [(e["a"], e["b"]) for e in explains] == [(corpus["insight"], corpus["decision"])]
    assert explains[0]["origin"] == "consolidation" and explains[0]["similarity"] == pytest.approx(
        0.6, abs=1e-3
    )
    run_mode(api, jobs, "creative")  # a re-run refreshes, never duplicates
    assert len(services.graph.discovered_edges()) == len(edges)

    run_mode(api, jobs, "cluster")
    [pattern] = services.graph.patterns()
    assert sorted(pattern["members"]) == sorted([corpus["c1"], corpus["c2"], corpus["c3"]])
    assert pattern["size"] == 3 and pattern["dominant_type"] == "Context"
    assert "postgres" in pattern["key_terms"] and "3 Context memories" in pattern["content"]
    run_mode(api, jobs, "cluster")
    [again] = services.graph.patterns()
    assert again["id"] == pattern["id"]
    # Patterns are not memories: recall and counts never see them.
    results = api.get("/recall?query=nightly postgres backup&limit=20").get_json()["results"]
    assert {r["id"] for r in results} <= set(ids)
    assert services.graph.counts()["total"] == len(ids)

    history = api.get("/consolidate/status").get_json()["history"]
    assert [h["mode"] for h in history] == ["cluster", "cluster", "creative", "creative", "decay"]
    assert all(h["success"] and h["dry_run"] is False and h["finished_at"] for h in history)
    assert history[-1]["result"]["decay"]["written"] == len(ids)
    creative_rerun, creative_first = (h["result"]["creative"] for h in history[2:4])
    assert creative_first["created"] == len(edges) >= 1
    assert creative_rerun["created"] == 0 and creative_rerun["updated"] == len(edges)
    assert history[1]["result"]["cluster"]["created"] == 1 and history[0]["result"]["cluster"]["updated"] == 1


def test_forget_archives_only_unprotected_low_relevance(
    api: Api, services: Services, corpus: dict[str, str], jobs: Any
) -> None:
    old = {"timestamp": OLD, "last_accessed": OLD, "tags": ["trivia"], "importance": 0.2}
    protected = {
        "important": store(api, "Zebrafish allergy of the CEO", **{**old, "importance": 0.9}),
        "pinned": store(api, "Zebrafish tank password hint", **{**old, "tags": ["trivia", "pinned"]}),
        "meta_pinned": store(api, "Zebrafish feeding schedule", **old, metadata={"pinned": True}),
        "decision": store(api, "Zebrafish stay out of the office", **old, type="Decision"),
        "recent": store(api, "Zebrafish sighting this morning", tags=["trivia"], importance=0.2),
    }
    jobs()
    # Forgetting makes memories disappear from recall: it needs the admin token.
    assert consolidate(api, mode="forget", dry_run=False).status_code == 401
    assert (
        consolidate(api, headers={"X-Admin-Token": "wrong"}, mode="forget", dry_run=False).status_code == 401
    )
    assert consolidate(api, mode="full", dry_run=False).status_code == 401
    stale = corpus["stale"]
    assert stale in {r["id"] for r in api.get("/recall?query=zebrafish&limit=20").get_json()["results"]}

    # Grace period: memories stored moments ago are never archived, whatever their event time.
    run_mode(api, jobs, "forget", headers=ADMIN)
    assert services.graph.consolidation_state([stale])[stale]["state"] == "active"
    services.settings = services.settings.model_copy(update={"consolidation_grace_period_days": 0})
    run_mode(api, jobs, "forget", headers=ADMIN)

    states = services.graph.consolidation_state([stale, *protected.values(), *corpus.values()])
    archived = {i for i, s in states.items() if s["state"] == "archived"}
    assert archived == {stale}
    assert states[stale]["archived_at"] and states[stale]["relevance_score"] < 0.2

    # Gone from current-state recall and by-tag, readable by id, its vector payload follows.
    recalled = {r["id"] for r in api.get("/recall?query=zebrafish&limit=20").get_json()["results"]}
    assert stale not in recalled and protected["important"] in recalled
    by_tag = api.get("/memory/by-tag?tags=trivia&limit=50").get_json()
    assert stale not in {r["id"] for r in by_tag["memories"]} and by_tag["count"] == 5
    history = {
        r["id"] for r in api.get("/recall?query=zebrafish&state_mode=history&limit=20").get_json()["results"]
    }
    assert stale in history
    single = api.get(f"/memory/{stale}")
    assert single.status_code == 200 and single.get_json()["memory"]["state"] == "archived"
    assert services.vectors is not None
    [point] = services.vectors.retrieve([stale])
    assert point.payload["state"] == "archived"
    # Archiving released the dedup key: storing the same content again makes a new, active memory.
    again = api.post("/memory", json={"content": "Zebrafish lunch menu trivia from an offsite"})
    assert again.status_code == 201 and again.get_json()["memory_id"] != stale

    status = api.get("/consolidate/status").get_json()
    [latest, *_] = status["history"]
    assert latest["mode"] == "forget" and latest["result"]["forget"]["archived"] == 1
    # Below the threshold but protected (importance 0.9 keeps a floor of 0.27: above it anyway).
    assert latest["result"]["forget"]["protected"] == {"pinned": 2, "type": 1}
    assert status["history"][1]["result"]["forget"]["protected"] == {
        "pinned": 2,
        "type": 1,
        "grace_period": 1,
    }


def test_bad_input_and_admin_rules(api: Api, services: Services) -> None:
    bad = consolidate(api, mode="compress")
    assert bad.status_code == 400
    assert bad.get_json()["status"] == "error" and bad.get_json()["field"] == "mode"
    assert consolidate(api, mode="decay", dry_run="yes").get_json()["field"] == "dry_run"
    assert api.post("/consolidate", data="{nope", content_type="application/json").status_code == 400
    assert api.post("/consolidate").status_code == 200  # no body: a full dry run
    assert consolidate(api, mode="Decay").status_code == 200
    # Decay, creative and cluster never hide a memory: the API token is enough.
    first = consolidate(api, mode="decay", dry_run=False)
    assert first.status_code == 202 and first.get_json()["job_status"] == "queued"
    again = consolidate(api, mode="decay", dry_run=False)
    assert again.get_json()["job_status"] == "already_queued"
    assert Queue("maintenance", connection=services.queue_redis).job_ids == ["consolidation-decay"]
    assert consolidate(api, headers=ADMIN, mode="full", dry_run=False).status_code == 202
    assert api.client.post("/consolidate", json={}).status_code == 401


def test_status_shows_next_runs_and_history(
    api: Api, services: Services, corpus: dict[str, str], jobs: Any
) -> None:
    status = api.get("/consolidate/status").get_json()
    assert status["status"] == "success" and status["enabled"] is True and status["history"] == []
    assert status["next_run_at"]["forget"] == "disabled" and status["next_runs"]["forget"] == "Disabled"
    assert status["intervals"]["decay"] == 86400 and status["scheduler"] == {"active": False}
    assert status["next_runs"]["decay"] == "Due now" and status["thread_alive"] is False
    run_mode(api, jobs, "decay")
    status = api.get("/consolidate/status").get_json()
    [run] = status["history"]
    assert run["mode"] == "decay" and run["trigger"] == "job" and run["success"] is True
    next_decay = status["next_run_at"]["decay"]
    assert next_decay > format_utc(utc_now() + timedelta(seconds=86000))
    assert status["next_runs"]["decay"] == "In 1 day(s)"
    assert status["running"] is False


def test_history_is_pruned(services: Services) -> None:
    for n in range(5):
        run = {"id": f"r{n}", "mode": "decay", "dry_run": False, "success": True, "trigger": "job"}
        services.graph.record_consolidation_run({**run, "started_at": days_ago(5 - n)}, 3, ["decay"])
    assert [r["id"] for r in services.graph.consolidation_runs(10)] == ["r4", "r3", "r2"]
    assert services.graph.consolidation_last_runs() == {"decay": days_ago(1)}


# --- RQ cron --------------------------------------------------------------------------------------
def test_cron_registers_enabled_tasks(settings: Settings, redis_conn: redis.Redis) -> None:
    with_purge = build_scheduler(settings, redis_conn, {})
    registered = {job.name: job for job in with_purge.get_jobs()}
    purge, sweep = registered["purge-deleted"], registered["intake-sweep"]
    assert purge.func_name == "enrichment.maintenance.purge_deleted" and purge.interval == 3600
    assert sweep.func_name == "enrichment.intake.dispatch_intake" and sweep.interval == 60
    reconcile = registered["reconcile"]
    assert reconcile.func_name == "enrichment.maintenance.reconcile" and reconcile.interval == 900
    # Purge, reconcile and the intake sweep do not depend on consolidation.
    no_consolidation = settings.model_copy(update={"consolidation_enabled": False})
    assert {j.name for j in build_scheduler(no_consolidation, redis_conn, {}).get_jobs()} == {
        "purge-deleted",
        "reconcile",
        "intake-sweep",
    }
    # consolidation alone below
    settings = settings.model_copy(update={"purge_interval_seconds": 0, "reconcile_interval_seconds": 0})
    scheduler = build_scheduler(settings, redis_conn, {})
    jobs = {job.name: job for job in scheduler.get_jobs() if job.name.startswith("consolidation:")}
    assert set(jobs) == {"consolidation:decay", "consolidation:creative", "consolidation:cluster"}
    assert jobs["consolidation:decay"].interval == 86400 and jobs["consolidation:cluster"].interval == 2592000
    assert jobs["consolidation:decay"].func_name == "enrichment.consolidation.run_consolidation"
    assert jobs["consolidation:decay"].kwargs == {"mode": "decay", "dry_run": False, "scheduled": True}
    assert all(job.queue_name == "maintenance" and job.should_run() for job in jobs.values())

    # Seeded from the last runs, a restart does not re-run tasks that ran recently.
    seeded = build_scheduler(settings, redis_conn, {"decay": days_ago(0.5), "creative": days_ago(8)})
    due = {job.name: job.should_run() for job in seeded.get_jobs() if job.name.startswith("consolidation:")}
    assert due == {
        "consolidation:decay": False,
        "consolidation:creative": True,
        "consolidation:cluster": True,
    }

    with_forget = settings.model_copy(update={"consolidation_forget_interval_seconds": 3600})
    assert "forget" in scheduled_tasks(with_forget)
    assert "consolidation:forget" in {j.name for j in build_scheduler(with_forget, redis_conn, {}).get_jobs()}
    off = settings.model_copy(update={"consolidation_enabled": False})
    assert [job.name for job in build_scheduler(off, redis_conn, {}).get_jobs()] == ["intake-sweep"]
    assert set(next_runs(off, redis_conn, {}).values()) == {"disabled"}


def test_one_cron_scheduler_is_active_and_its_jobs_run(
    api: Api, services: Services, corpus: dict[str, str], jobs: Any
) -> None:
    conn = services.queue_redis
    no_purge = services.settings.model_copy(
        update={"purge_interval_seconds": 0, "reconcile_interval_seconds": 0}
    )
    first = CronRunner(no_purge, conn, services.graph)
    second = CronRunner(no_purge, conn, services.graph)
    assert first.tick() <= 30 and second.tick() == 30  # the second waits for the lease
    assert first.scheduler is not None and second.scheduler is None
    [live] = CronScheduler.all(conn)
    assert live.name == first.name
    assert {j.name for j in live.get_jobs()} == {
        "consolidation:decay",
        "consolidation:creative",
        "consolidation:cluster",
        "intake-sweep",
    }
    maintenance = Queue("maintenance", connection=conn)
    assert maintenance.count == 3  # nothing ran yet: every enabled task is due at once
    first.tick()
    second.tick()
    assert maintenance.count == 3

    status = api.get("/consolidate/status").get_json()
    assert status["scheduler"]["active"] is True and status["scheduler"]["name"] == first.name
    assert status["next_run_at"]["decay"] > format_utc(utc_now() + timedelta(seconds=86000))
    assert status["thread_alive"] is True

    jobs()
    history = api.get("/consolidate/status").get_json()["history"]
    assert sorted(h["mode"] for h in history) == ["cluster", "creative", "decay"]
    assert {h["trigger"] for h in history} == {"schedule"}
    assert services.graph.patterns() and services.graph.discovered_edges()

    # A duplicate scheduled run (another scheduler, a re-enqueue) is skipped.
    from enrichment.consolidation import run_consolidation

    assert run_consolidation("decay", scheduled=True)["skipped"].startswith("ran at")

    # When the leader stops, the other one takes over and seeds its schedule from the graph.
    first.stop()
    second.tick()
    assert second.scheduler is not None
    assert not any(
        job.should_run() for job in second.scheduler.get_jobs() if job.name.startswith("consolidation:")
    )
    second.stop()
    assert CronScheduler.all(conn) == []
