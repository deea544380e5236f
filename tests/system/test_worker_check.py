"""`automem worker --check`: the health check compose and the Helm chart run in worker containers."""

from __future__ import annotations

import socket

import pytest
import redis
from rq import Worker

from automem import cli
from automem.embedded import EmbeddedFalkorDB
from automem.settings import Settings


def test_check_follows_the_workers_registration(
    falkordb_server: EmbeddedFalkorDB, redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", falkordb_server.url)
    assert cli.main(["worker", "--check"]) == 1  # no worker has registered from this host
    worker = Worker(["embed"], connection=redis_conn)
    worker.register_birth()
    try:
        assert worker.hostname == socket.gethostname()
        assert cli.main(["worker", "--check"]) == 0
        other_host = Settings(redis_url=falkordb_server.url)
        assert not cli.worker_registered(other_host, "some-other-pod")
    finally:
        worker.register_death()
    assert cli.main(["worker", "--check"]) == 1


def test_check_needs_a_server_mode_queue(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["worker", "--check"]) == 2
    assert "REDIS_URL" in capsys.readouterr().err
