"""Starting the embedded FalkorDB: a server still loading its data is waited for, however long
it takes (a million-memory store rebuilds its indexes for over ten minutes here); the start
timeout bounds only the wait for a server to listen at all.

A store that large cannot be loaded in a test's time, so the loading server is a small RESP
server that answers LOADING, as Redis does, for a while and then answers normally."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from automem import embedded
from automem.embedded import EmbeddedFalkorDB
from automem.errors import ConfigurationError
from automem.settings import Settings


class LoadingServer:
    """Answers every command with a LOADING error until `ready_at`, then +OK (GRAPH.LIST: an
    empty list)."""

    def __init__(self, loading_seconds: float) -> None:
        self.ready_at = time.monotonic() + loading_seconds
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.loading_replies = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while (command := _read_command(reader)) is not None:
                if time.monotonic() < self.ready_at:
                    self.loading_replies += 1
                    conn.sendall(b"-LOADING Redis is loading the dataset in memory\r\n")
                elif command[0].upper() == b"GRAPH.LIST":
                    conn.sendall(b"*0\r\n")
                else:
                    conn.sendall(b"+OK\r\n")

    def close(self) -> None:
        self.sock.close()


def _read_command(reader: BinaryIO) -> list[bytes] | None:
    """One RESP array of bulk strings (what redis-py sends), or None at the end of the stream."""
    header = reader.readline()
    if not header.startswith(b"*"):
        return None
    parts = []
    for _ in range(int(header[1:])):
        size = int(reader.readline()[1:])
        parts.append(reader.read(size + 2)[:-2])
    return parts


@pytest.fixture()
def loading_server() -> Iterator[LoadingServer]:
    server = LoadingServer(loading_seconds=1.5)
    yield server
    server.close()


def _falkordb_at(port: int, tmp_path: Path) -> EmbeddedFalkorDB:
    db = EmbeddedFalkorDB(tmp_path, port=port)
    db.password = "secret"
    return db


def test_a_server_loading_longer_than_the_timeout_is_waited_for(
    loading_server: LoadingServer, tmp_path: Path
) -> None:
    db = _falkordb_at(loading_server.port, tmp_path)
    db._wait_ready(timeout=0.3)
    assert time.monotonic() >= loading_server.ready_at  # the start waited for the loading to end
    assert loading_server.loading_replies > 1


def test_a_server_that_never_listens_fails_after_the_timeout(tmp_path: Path) -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens on this port now
    db = _falkordb_at(port, tmp_path)
    start = time.monotonic()
    with pytest.raises(ConfigurationError, match="did not answer within"):
        db._wait_ready(timeout=0.3)
    assert time.monotonic() - start < 5


def test_a_stop_requested_while_loading_ends_the_wait(loading_server: LoadingServer, tmp_path: Path) -> None:
    db = _falkordb_at(loading_server.port, tmp_path)
    asked = time.monotonic() + 0.4
    db._wait_ready(timeout=0.1, cancelled=lambda: time.monotonic() > asked)
    assert time.monotonic() < loading_server.ready_at


def test_a_port_picked_for_falkordb_is_never_the_apis(monkeypatch: pytest.MonkeyPatch) -> None:
    # The OS hands out the API's ephemeral port again (a launcher picked it the same way and
    # the API has not bound it yet): the pick asks again instead of taking it.
    offered = iter([41001, 41001, 41002])
    monkeypatch.setattr(embedded, "_ephemeral_port", lambda host: next(offered))
    assert embedded.free_port(avoid=(41001,)) == 41002
    monkeypatch.setattr(embedded, "_ephemeral_port", lambda host: 41001)
    with pytest.raises(OSError, match="no free port"):
        embedded.free_port(avoid=(41001,))


def test_the_supervisor_tells_falkordb_to_avoid_the_api_port(tmp_path: Path) -> None:
    supervisor = embedded.Supervisor(Settings(data_dir=str(tmp_path)), "127.0.0.1", 41001, workers=0)
    assert supervisor.falkordb.avoid_ports == (41001,)
