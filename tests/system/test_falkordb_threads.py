"""The embedded FalkorDB runs with the query threads it is given (AUTOMEM_FALKORDB_THREADS)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from automem.embedded import EmbeddedFalkorDB, Supervisor
from automem.settings import Settings


def _thread_count(server: EmbeddedFalkorDB) -> int:
    conn = redis.Redis.from_url(server.url)
    try:
        name, value = conn.execute_command("GRAPH.CONFIG", "GET", "THREAD_COUNT")
    finally:
        conn.close()
    assert name == b"THREAD_COUNT"
    return int(value)


# Two counts: whatever FalkorDB's own default is on a machine, one of them differs from it.
@pytest.mark.parametrize("threads", [1, 5])
def test_the_server_runs_the_threads_it_is_given(tmp_path: Path, threads: int) -> None:
    server = EmbeddedFalkorDB(tmp_path, threads=threads)
    server.start()
    try:
        assert _thread_count(server) == threads
    finally:
        server.stop()


@pytest.mark.parametrize("threads", [0, 3])
def test_serve_hands_the_setting_to_its_falkordb(tmp_path: Path, threads: int) -> None:
    settings = Settings(data_dir=str(tmp_path), falkordb_threads=threads)
    server = Supervisor(settings, "127.0.0.1", 8001, workers=1).falkordb
    assert server.threads == threads
    assert ("THREAD_COUNT" in server.command()) == (threads > 0)  # 0: FalkorDB's own default
