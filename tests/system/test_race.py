"""PATCH immediately after POST while a real RQ worker process embeds: no write is reverted.

The app in this process owns the Qdrant Edge shard and drains the vector hand-off stream; the
worker is a separate `automem worker` process, exactly as in embedded mode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from automem.settings import Settings
from automem.stores.vectors.qdrant_edge import HALF_PRECISION
from tests.conftest import Api, make_settings
from tests.stack import wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def live_app(falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path) -> Iterator[Flask]:
    settings = make_settings(falkordb_server.url, tmp_path / "data")
    app = create_app(settings, start_vector_drain=True)
    yield app
    stop_app(app)


def start_worker(settings: Settings) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOMEM_", "FALKORDB_", "QDRANT_"))}
    env.update(
        {
            "FALKORDB_URL": str(settings.falkordb_url),
            "REDIS_URL": str(settings.redis_url),
            "FALKORDB_GRAPH": settings.falkordb_graph,
            "AUTOMEM_DATA_DIR": settings.data_dir,
            "AUTOMEM_VECTOR_BACKEND": "edge",
            "EMBEDDING_PROVIDER": "hash",
            "AUTOMEM_LOG_LEVEL": "WARNING",
        }
    )
    return subprocess.Popen([sys.executable, "-m", "automem", "worker"], env=env)


def wait_settled(svc: Services, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = svc.graph.counts()
        if (
            counts["embedding_pending"] == 0
            and svc.jobs.depths()["embed"] == 0
            and svc.sync.backlog() == 0
            and svc.vectors is not None
            and svc.vectors.count() == count
        ):
            return
        time.sleep(0.1)
    raise AssertionError(
        f"not settled: {svc.graph.counts()} {svc.jobs.depths()} backlog={svc.sync.backlog()}"
    )


def test_patch_right_after_post_survives_the_worker(live_app: Flask) -> None:
    svc: Services = live_app.extensions["automem"]
    api = Api(live_app.test_client())
    worker = start_worker(svc.settings)
    try:
        expected = {}
        for n in range(60):
            created = api.post("/memory", json={"content": f"original content {n}", "tags": ["before"]})
            assert created.status_code == 201
            memory_id = created.get_json()["memory_id"]
            patch = {"tags": [f"after:{n}"], "importance": 0.9, "metadata": {"n": n}}
            if n % 2:
                patch["content"] = f"edited content {n}"
            assert api.patch(f"/memory/{memory_id}", json=patch).status_code == 200
            expected[memory_id] = patch
        wait_settled(svc, len(expected))
    finally:
        worker.terminate()
        worker.wait(30)
    # The worker's last jobs (enrichment) may have handed vector writes to this app's drain thread.
    wait_until(lambda: svc.sync.backlog() == 0, 30, "the vector hand-off was not drained")
    assert svc.vectors is not None
    points = {r.id: r for r in svc.vectors.retrieve(list(expected), with_vectors=True)}
    for memory_id, patch in expected.items():
        doc = svc.graph.get_memories([memory_id], with_embedding=True)[0]
        content = patch.get("content", doc.content)
        assert doc.tags == patch["tags"] and doc.importance == 0.9 and doc.content == content
        assert doc.embedding_hash == doc.content_hash
        assert doc.metadata["n"] == patch["metadata"]["n"]
        payload = points[memory_id].payload  # the filter fields, at the graph's rev
        assert payload["tags"] == patch["tags"] and payload["importance"] == 0.9
        assert payload["rev"] == doc.rev and payload["state"] == "active"
        expected_vector = svc.embedder.embed_one(content)
        assert points[memory_id].vector is not None
        # Within the shard's float16 precision; another text's vector is ~0.05 away per component.
        assert (
            max(abs(a - b) for a, b in zip(points[memory_id].vector, expected_vector, strict=True))
            < HALF_PRECISION
        )
