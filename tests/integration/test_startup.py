"""Start-up checks and the real embedding model through the whole write path."""

from __future__ import annotations

from pathlib import Path

import pytest

from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from automem.errors import DimensionMismatch
from enrichment.context import use_services
from tests.conftest import MODEL_DIR, Api, make_settings, run_jobs


def test_dimension_change_refuses_to_start(
    falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path
) -> None:
    first = create_app(make_settings(falkordb_server.url, tmp_path), start_vector_drain=False)
    stop_app(first)
    with pytest.raises(DimensionMismatch, match="automem reembed"):
        create_app(make_settings(falkordb_server.url, tmp_path, vector_size=128), start_vector_drain=False)


def test_edge_shard_has_a_single_owner(
    falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path
) -> None:
    from automem.errors import ShardLocked

    settings = make_settings(falkordb_server.url, tmp_path, shard_lock_wait_seconds=0.5)
    owner = create_app(settings, start_vector_drain=False)
    try:
        with pytest.raises(ShardLocked):
            create_app(settings, start_vector_drain=False)
    finally:
        stop_app(owner)


@pytest.mark.semantic
def test_real_model_embeds_through_the_worker(
    falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path
) -> None:
    if not (MODEL_DIR / "model.onnx").exists():
        pytest.skip(f"offline model not found at {MODEL_DIR}")
    settings = make_settings(
        falkordb_server.url, tmp_path, embedding_provider="fastembed", embedding_model_dir=str(MODEL_DIR)
    )
    app = create_app(settings, start_vector_drain=False)
    try:
        svc = app.extensions["automem"]
        assert (svc.embedder.name, svc.embedder.dimension) == ("fastembed", 384)
        api = Api(app.test_client())
        texts = [
            "The team picked PostgreSQL for its transactional guarantees.",
            "My cat sleeps on the windowsill every afternoon.",
            "We deploy the frontend to a CDN on every merge.",
        ]
        ids = [api.post("/memory", json={"content": t}).get_json()["memory_id"] for t in texts]
        run_jobs(svc)
        assert svc.vectors.count() == 3
        hits = svc.vectors.search(svc.embedder.embed_one("which database did we choose?"), limit=3)
        assert hits[0].id == ids[0]
        hits = svc.vectors.search(svc.embedder.embed_one("pets napping in the sun"), limit=3)
        assert hits[0].id == ids[1]
    finally:
        use_services(None)
        stop_app(app)
