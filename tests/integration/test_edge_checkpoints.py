"""Checkpoints of the Qdrant Edge shard (AUTOMEM_EDGE_CHECKPOINT_WRITES / _SECONDS): the owner
flushes the shard's segments once enough was written, which truncates Edge's write-ahead log
(unflushed, it grew by every write until the shard was closed, and a restart after a crash
replayed all of it). A flush changes nothing a crash may lose: every acknowledged write survives
a kill, before, between and after checkpoints."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automem.services import Services
from automem.stores.vectors import VectorPoint
from automem.stores.vectors.qdrant_edge import Checkpoints, EdgeVectorStore
from tests.conftest import Api

DIM = 8


def _points(first: int, count: int) -> list[VectorPoint]:
    return [
        VectorPoint(
            id=str(uuid.UUID(int=i + 1)),
            vector=[float(i % 7 + 1)] + [float(k) for k in range(1, DIM)],
            payload={"rev": 1, "tenant": "t"},
            text=f"note {i}",
        )
        for i in range(first, first + count)
    ]


def test_nothing_written_is_never_due_and_either_bound_can_be_off() -> None:
    assert not Checkpoints(writes=1, seconds=1).due(0, since=10_000)
    assert Checkpoints(writes=10, seconds=0).due(10, since=0)
    assert not Checkpoints(writes=10, seconds=0).due(9, since=10_000)
    assert Checkpoints(writes=0, seconds=5).due(1, since=5)
    assert not Checkpoints(writes=0, seconds=0).due(10**9, since=10**9)


def test_checkpoints_come_at_the_count_and_truncate_the_log(tmp_path: Path) -> None:
    """Edge's log is a series of 32 MB files, and a flush drops the files wholly before the
    previous flush: 40k points of 384 dimensions fill about three, and checkpoints every 10k
    drop the first (unflushed, it stays until the shard is closed)."""
    shard = tmp_path / "shard"
    store = EdgeVectorStore(str(shard), checkpoints=Checkpoints(writes=10_000, seconds=0))
    store.ensure_collection(384)
    vectors = np.random.default_rng(5).standard_normal((40_000, 384)).round(4).tolist()
    try:
        for first in range(0, 40_000, 1_000):
            store.upsert(
                [
                    VectorPoint(id=str(uuid.UUID(int=i + 1)), vector=vectors[i], payload={"rev": 1})
                    for i in range(first, first + 1_000)
                ]
            )
            assert store.checkpoint_if_due() == ((first + 1_000) % 10_000 == 0), first
        assert not store.checkpoint_if_due()  # nothing written since
        log = sorted(f.name for f in (shard / "wal").iterdir())
        assert "closed-0" not in log, log
        assert store.count() == 40_000
    finally:
        store.close()


def test_a_checkpoint_comes_after_the_time_since_the_first_unflushed_write(tmp_path: Path) -> None:
    store = EdgeVectorStore(str(tmp_path / "shard"), checkpoints=Checkpoints(writes=0, seconds=0.3))
    store.ensure_collection(DIM)
    try:
        store.upsert(_points(0, 10))
        assert not store.checkpoint_if_due()
        time.sleep(0.35)
        store.upsert(_points(10, 10))  # a later write does not move the deadline
        assert store.checkpoint_if_due()
    finally:
        store.close()


_KILLED_WRITER = textwrap.dedent(
    """
    import json, os, sys
    from tests.integration.test_edge_checkpoints import DIM, _points
    from automem.stores.vectors.qdrant_edge import Checkpoints, EdgeVectorStore
    path, every, batches = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    store = EdgeVectorStore(path, checkpoints=Checkpoints(writes=every, seconds=0))
    store.ensure_collection(DIM)
    written = flushed = 0
    for size in batches:
        store.upsert(_points(written, size))
        written += size
        flushed += store.checkpoint_if_due()
    print(flushed, flush=True)
    os._exit(0)  # killed: no close, no final flush
    """
)


@settings(max_examples=6, deadline=None)
@given(
    every=st.integers(min_value=50, max_value=400),
    batches=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=8),
)
def test_every_acknowledged_write_survives_a_kill_around_checkpoints(every: int, batches: list[int]) -> None:
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "shard")
        done = subprocess.run(
            [sys.executable, "-c", _KILLED_WRITER, path, str(every), json.dumps(batches)],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        reopened = EdgeVectorStore(path)
        try:
            assert reopened.count() == sum(batches), done.stdout
            last = _points(sum(batches) - 1, 1)[0]
            assert reopened.retrieve([last.id])[0].id == last.id
        finally:
            reopened.close()


def test_the_owners_loop_checkpoints_what_the_api_wrote(
    services: Services, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = services.vectors
    assert isinstance(store, EdgeVectorStore)
    store.checkpoints = Checkpoints(writes=1, seconds=0)
    flushes: list[bool] = []
    original = store.checkpoint_if_due

    def counted() -> bool:
        flushes.append(original())
        return flushes[-1]

    monkeypatch.setattr(store, "checkpoint_if_due", counted)
    stop = threading.Event()
    loop = threading.Thread(target=services.sync.run_forever, args=(stop,), kwargs={"block_ms": 50})
    loop.start()
    try:
        response = api.post("/memory", json={"content": "the harbour opens at six", "tags": ["port"]})
        assert response.status_code == 201
        deadline = time.monotonic() + 10
        while True not in flushes:
            assert time.monotonic() < deadline, "the owner's loop did not checkpoint the API's write"
            time.sleep(0.02)
    finally:
        stop.set()
        loop.join(timeout=10)
