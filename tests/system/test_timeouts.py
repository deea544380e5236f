"""Every request's graph work is bounded: FalkorDB aborts a read query after
AUTOMEM_GRAPH_TIMEOUT_SECONDS (503 `graph_timeout` in the envelope), and the client gives up on a
reply 5 s after that."""

from __future__ import annotations

from pathlib import Path

import pytest

from automem.embedded import EmbeddedFalkorDB, api_command
from automem.errors import StoreUnavailable
from automem.stores.graph import GraphStore
from tests.conftest import make_settings


def test_a_slow_read_query_is_aborted_and_reported_as_unavailable(falkordb_server: EmbeddedFalkorDB) -> None:
    store = GraphStore.from_url(falkordb_server.url, "timeout_probe", timeout_seconds=0.05)
    store._query("UNWIND range(1, 20000) AS x CREATE (:Probe {v: x})")
    try:
        with pytest.raises(StoreUnavailable) as caught:
            # A cross product of 4e8 pairs, no join to plan: far longer than 50 ms.
            store._ro("MATCH (a:Probe), (b:Probe) WHERE a.v < b.v RETURN count(*)")
        assert caught.value.reason == "graph_timeout" and caught.value.status == 503
        connection = store.db.connection.connection_pool.connection_kwargs
        assert connection["socket_timeout"] == pytest.approx(5.05)
    finally:
        store.graph.delete()


def test_no_timeout_when_disabled(falkordb_server: EmbeddedFalkorDB) -> None:
    store = GraphStore.from_url(falkordb_server.url, "timeout_off", timeout_seconds=0)
    assert store.read_timeout_ms is None
    assert store.db.connection.connection_pool.connection_kwargs["socket_timeout"] is None


def test_the_api_heartbeat_timeout_is_a_setting(tmp_path: Path) -> None:
    settings = make_settings("redis://127.0.0.1:1", tmp_path, api_timeout_seconds=45)
    argv = api_command(settings, "127.0.0.1", 8001)
    assert argv[argv.index("--timeout") + 1] == "45"
