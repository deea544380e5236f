"""`automem doctor` against the real stores and the real app served over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from automem.cli import main
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from automem.settings import Settings
from tests.conftest import ADMIN_TOKEN, API_TOKEN
from tests.integration.test_recall_api import store
from tests.served import base_url  # noqa: F401  (fixture)


@pytest.fixture
def environment(
    monkeypatch: pytest.MonkeyPatch,
    falkordb_server: EmbeddedFalkorDB,
    settings: Settings,
    base_url: str,  # noqa: F811
) -> dict[str, str]:
    """The served app's own configuration, as an operator's shell would hold it."""
    env = {
        "FALKORDB_URL": falkordb_server.url,
        "REDIS_URL": falkordb_server.url,
        "FALKORDB_GRAPH": settings.falkordb_graph,
        "AUTOMEM_DATA_DIR": settings.data_dir,
        "AUTOMEM_VECTOR_BACKEND": "edge",
        "EMBEDDING_PROVIDER": "hash",
        "AUTOMEM_API_TOKEN": API_TOKEN,
        "ADMIN_API_TOKEN": ADMIN_TOKEN,
        "AUTOMEM_ENDPOINT": base_url,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, dict[str, Any]]]:
    capsys.readouterr()  # drop what earlier steps printed (the RQ worker logs to stdout)
    status = main(["doctor", "--json", *args])
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is (status == 0)
    return status, {c["name"]: c for c in body["checks"]}


def statuses(checks: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: c["status"] for name, c in checks.items()}


def test_a_healthy_installation_passes(
    environment: dict[str, str], api: Any, jobs: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    store(api, "Chose PostgreSQL for ACID transactions", tags=["db"])
    jobs()
    status, checks = doctor(capsys)
    assert status == 0
    assert statuses(checks) == {
        "configuration": "ok",
        "api token": "ok",
        "embedding": "ok",
        "falkordb": "ok",
        "redis": "ok",
        "qdrant": "skip",  # the Edge shard belongs to the running API
        "service": "ok",
        "service falkordb": "ok",
        "service qdrant": "ok",
        "service redis": "ok",
        "dimensions": "ok",
        "drift": "ok",
        "failed jobs": "ok",
    }
    assert checks["falkordb"]["detail"].endswith("1 active memories (1 stored)")
    assert checks["dimensions"]["data"] == {"configured": 384, "service": 384, "collection": 384}

    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert "[ok  ] service:" in text and text.rstrip().endswith("all checks passed")


def test_drift_and_failed_jobs_are_warnings(
    environment: dict[str, str],
    api: Any,
    jobs: Any,
    services: Services,
    capsys: pytest.CaptureFixture[str],
) -> None:
    memory_id = store(api, "A memory whose vector goes missing", tags=["x"])
    jobs()
    assert services.vectors is not None
    services.vectors.delete([memory_id])
    services.jobs.queues["enrich"].enqueue("tests.test_doctor.no_such_function")
    jobs()
    status, checks = doctor(capsys)
    assert status == 0
    assert checks["drift"]["status"] == "warn" and checks["drift"]["data"]["difference"] == 1
    assert checks["failed jobs"]["status"] == "warn" and checks["failed jobs"]["data"] == {"enrich": 1}
    assert checks["redis"]["status"] == "warn" and "failed jobs" in checks["redis"]["detail"]


@pytest.mark.parametrize(
    ("changes", "failing", "needle"),
    [
        ({"AUTOMEM_API_KEY": "wrong-key"}, "service", "401"),
        ({"VECTOR_SIZE": "256"}, "dimensions", "embeds 256 dimensions, the service 384"),
        ({"AUTOMEM_ENDPOINT": "http://127.0.0.1:9"}, "service", "does not answer"),
        ({"AUTOMEM_HOST": "0.0.0.0", "AUTOMEM_API_TOKEN": ""}, "api token", "is not loopback"),
        ({"FALKORDB_URL": "redis://127.0.0.1:9"}, "falkordb", "Connection refused"),
        ({"MEMORY_CONTENT_HARD_LIMIT": "100"}, "configuration", "must not exceed"),
    ],
)
def test_problems_fail_with_a_reason(
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, str],
    failing: str,
    needle: str,
) -> None:
    for name, value in changes.items():
        if value:
            monkeypatch.setenv(name, value)
        else:
            monkeypatch.delenv(name)
    status, checks = doctor(capsys)
    assert status == 1
    assert checks[failing]["status"] == "fail"
    assert needle in checks[failing]["detail"]
