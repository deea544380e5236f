"""Graph reads run on a connection of the reading thread's own (CypherGraph._reader): each thread
keeps one, and a connection lost with the server is made again by the next read."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from automem.embedded import EmbeddedFalkorDB
from automem.errors import StoreUnavailable
from automem.stores.graph import GraphStore

Stack = tuple[EmbeddedFalkorDB, GraphStore]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    server = EmbeddedFalkorDB(tmp_path, appendfsync="always")
    server.start()
    try:
        yield server, GraphStore.from_url(server.url, "reads")
    finally:
        server.stop()


def _store_one(store: GraphStore) -> str:
    """Write one memory; the read that returns its id."""
    store._query("CREATE (:Memory {id: 'kept'})")
    return "MATCH (m:Memory) RETURN m.id"


def _client_id(store: GraphStore) -> int:
    return int(store._reader().execute_command("CLIENT", "ID"))


def test_each_thread_reads_on_a_connection_of_its_own(stack: Stack) -> None:
    _, store = stack
    mine = _client_id(store)
    assert _client_id(store) == mine  # kept, not taken anew per read
    others: list[int] = []
    # Each thread holds its connection until all have read: a thread that has ended gives its
    # connection back to the pool, and a later thread may then be lent the same one.
    all_read = threading.Barrier(3)

    def read_and_wait() -> None:
        others.append(_client_id(store))
        all_read.wait(timeout=30)

    threads = [threading.Thread(target=read_and_wait) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({mine, *others}) == 4


def test_reads_fail_cleanly_while_the_server_is_down_and_resume_after(stack: Stack) -> None:
    server, store = stack
    read = _store_one(store)
    assert store._ro(read) == [["kept"]]
    server.stop()
    with pytest.raises(StoreUnavailable):
        store._ro(read)
    server.start()  # the same port and data
    assert store._ro(read) == [["kept"]]


def test_the_first_read_after_a_kill_and_restart_succeeds(stack: Stack) -> None:
    # No read between the kill and the restart: the thread's kept connection is a dead socket.
    server, store = stack
    read = _store_one(store)
    assert store._ro(read) == [["kept"]]
    server.kill()
    server.start()
    assert store._ro(read) == [["kept"]]


def test_a_forked_child_reads_on_a_connection_of_its_own(stack: Stack) -> None:
    _, store = stack
    read = _store_one(store)
    parent = _client_id(store)
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if it read the right rows on another connection
        ok = _client_id(store) != parent and store._ro(read) == [["kept"]]
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _client_id(store) == parent
    assert store._ro(read) == [["kept"]]
