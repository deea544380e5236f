"""GET /backup and POST /admin/restore (and `automem backup` / `automem restore`): backup → wipe →
restore gives identical ids, contents, tags, edges, history and vectors, on both vector backends;
bad archives, non-empty targets and other dimensions are refused without touching the store."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from automem.cli import main
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from automem.settings import Settings
from tests.archives import (
    archive_records,
    assert_same,
    gzip_records,
    populate,
    post_restore,
    snapshot,
    store_memory,
    take_backup,
    wipe_store,
)
from tests.conftest import ADMIN_TOKEN, API_TOKEN, Api, make_settings


@pytest.fixture(params=["edge", "qdrant"])
def settings(
    request: pytest.FixtureRequest, falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path
) -> Settings:
    if request.param == "edge":
        return make_settings(falkordb_server.url, tmp_path / "data")
    return make_settings(
        falkordb_server.url, tmp_path / "data", vector_backend="qdrant", qdrant_path=str(tmp_path / "qdrant")
    )


@pytest.fixture
def populated(api: Api, services: Services, jobs: Any) -> dict[str, str]:
    return populate(api, services, jobs)


def test_backup_wipe_restore_round_trip(api: Api, services: Services, populated: dict[str, str]) -> None:
    before = snapshot(services)
    history = {name: api.get(f"/memory/{i}/history").get_json()["events"] for name, i in populated.items()}
    archive = take_backup(api)
    records = archive_records(archive)
    assert (
        records[0]["kind"] == "header" and records[0]["embedding"]["dimension"] == services.embedder.dimension
    )
    assert records[-1] == {
        "kind": "end",
        "counts": {
            k: sum(r["kind"] == k for r in records) for k in ("memory", "event", "node", "edge", "vector")
        },
    }
    assert {"Entity", "Pattern", "ConsolidationRun"} <= {
        r["labels"][0] for r in records if r["kind"] == "node"
    }

    wipe_store(services)
    assert snapshot(services)["nodes"] == []
    response = post_restore(api, archive)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["restored"]["memories"] == 7 and body["vectors_source"] == "archive"
    assert body["skipped_edges"] == 0 and body["vectors_rebuilt_from_graph"] == 0

    assert_same(before, snapshot(services))
    for name, memory_id in populated.items():
        assert api.get(f"/memory/{memory_id}/history").get_json()["events"] == history[name]
    lifecycle = [e["event"] for e in history["recovered"] if e["event"] != "enriched"]
    assert lifecycle == ["recovered", "deleted", "created"]
    # The restored store works: recall by meaning and keyword, by-tag, read, the deleted one stays hidden.
    found = api.get("/recall?query=Kubernetes%20Berlin&limit=3").get_json()["results"]
    assert found and found[0]["id"] == populated["alice"]
    assert api.get("/memory/by-tag?tags=project:billing").get_json()["count"] == 3
    assert api.get(f"/memory/{populated['deleted']}").status_code == 404
    assert api.get(f"/memory/{populated['modified']}").get_json()["memory"]["content"] == (
        "The retro is on Thursdays"
    )
    assert api.post(f"/memory/{populated['deleted']}/recover").status_code == 200


def test_vectors_rebuilt_from_the_graph(api: Api, services: Services, populated: dict[str, str]) -> None:
    before = snapshot(services)
    archive = take_backup(api)
    # An archive without vector points restores them from the graph alone, as does vectors=graph.
    without_points = gzip_records(
        [r for r in archive_records(archive) if r["kind"] != "vector"], drop_vectors=True
    )
    for payload, query in ((without_points, "?mode=replace"), (archive, "?mode=replace&vectors=graph")):
        response = post_restore(api, payload, query)
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["vectors_source"] == "graph"
        assert response.get_json()["vectors_rebuilt_from_graph"] == len(before["points"])
        assert_same(before, snapshot(services))


def test_restore_refuses_a_store_with_memories(
    api: Api, services: Services, populated: dict[str, str]
) -> None:
    archive = take_backup(api)
    before = snapshot(services)
    refused = post_restore(api, archive)
    assert refused.status_code == 409
    assert refused.get_json()["reason"] == "store_not_empty" and refused.get_json()["counts"]["Memory"] == 7
    assert_same(before, snapshot(services))
    # mode=replace wipes first: a memory stored after the backup is gone afterwards.
    extra = store_memory(api, "Stored after the backup")
    assert post_restore(api, archive, "?mode=replace").status_code == 200
    assert api.get(f"/memory/{extra}").status_code == 404
    assert_same(before, snapshot(services))


def test_bad_archives_leave_the_store_as_it_was(
    api: Api, services: Services, populated: dict[str, str]
) -> None:
    archive = take_backup(api)
    before = snapshot(services)
    records = archive_records(archive)
    memory = next(r for r in records if r["kind"] == "memory")
    bad = {
        "not gzip": b"this is not an archive",
        "truncated": archive[: len(archive) // 2],
        "empty": b"",
        "no end record": gzip_records(records[:-1]),
        "wrong counts": gzip_records([*records[:-1], {"kind": "end", "counts": {"memory": 1}}]),
        "not json": gzip.compress(b'{"kind": "header"}\nnot json\n'),
        "no header": gzip_records(records[1:]),
        "other format": gzip_records([{**records[0], "format": "something-else"}, *records[1:]]),
        "newer version": gzip_records([{**records[0], "version": 99}, *records[1:]]),
        "bad property": gzip_records(
            [records[0], {**memory, "props": {**memory["props"], "x": {"a": 1}}}, *records[1:]]
        ),
        "out of order": gzip_records([records[0], records[-2], memory, *records[1:]]),
        "bad label": gzip_records(
            [records[0], {"kind": "node", "labels": ["X) DETACH DELETE (n"], "props": {}}]
        ),
    }
    for name, payload in bad.items():
        response = post_restore(api, payload, "?mode=replace")
        assert response.status_code == 400, (name, response.get_json())
        assert response.get_json()["reason"] == "invalid_archive", name
        assert response.get_json()["field"] == "body"
        assert_same(before, snapshot(services))


def test_a_restore_of_another_dimension_is_refused(
    api: Api, services: Services, populated: dict[str, str]
) -> None:
    records = archive_records(take_backup(api))
    header = {**records[0], "embedding": {**records[0]["embedding"], "dimension": 8}}
    memory = {**next(r for r in records if r["kind"] == "memory"), "embedding": [0.5] * 8}
    archive = gzip_records([header, memory, {"kind": "end", "counts": {"memory": 1}}])
    response = post_restore(api, archive, "?mode=replace")
    assert response.status_code == 409 and response.get_json()["reason"] == "dimension_mismatch"
    assert response.get_json()["archive_dimension"] == 8


def test_backup_and_restore_need_the_admin_token(api: Api, client: Any) -> None:
    assert client.get("/backup").status_code == 401
    assert client.post("/admin/restore", data=b"x").status_code == 401
    assert api.get("/backup").status_code == 401
    # As AutoMem: GET /backup takes the admin token alone, in any of AutoMem's spellings.
    for headers in ({"X-Admin-Token": ADMIN_TOKEN}, {"X-Admin-Api-Key": ADMIN_TOKEN}):
        assert client.get("/backup", headers=headers).status_code == 200
    assert client.get(f"/backup?admin_token={ADMIN_TOKEN}").status_code == 200
    assert api.post("/admin/restore", data=b"x").status_code == 401
    assert api.get("/backup", headers={"X-Admin-Token": "wrong"}).status_code == 401
    assert post_restore(api, b"x", "?mode=everything").status_code == 400


@pytest.fixture
def small_body_settings(falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path) -> Settings:
    return make_settings(
        falkordb_server.url, tmp_path / "data", max_body_bytes=4096, restore_max_bytes=1 << 20
    )


def test_the_restore_body_has_its_own_limit(small_body_settings: Settings) -> None:
    from automem.app import create_app, stop_app

    app = create_app(small_body_settings, start_vector_drain=False)
    try:
        api = Api(app.test_client())
        dim = app.extensions["automem"].embedder.dimension
        rng = np.random.default_rng(7)
        for n in range(4):  # random vectors: the archive does not compress below the body limit
            store_memory(
                api,
                f"Memory number {n} with a vector",
                embedding=[round(float(v), 3) for v in rng.standard_normal(dim)],
            )
        archive = take_backup(api)
        assert 4096 < len(archive) < 1 << 20
        assert (
            api.post("/memory", json={"content": "x" * 1000, "metadata": {"pad": "y" * 5000}}).status_code
            == 413
        )
        assert post_restore(api, archive, "?mode=replace").status_code == 200
        app.extensions["automem"].settings = small_body_settings.model_copy(
            update={"restore_max_bytes": 4096}
        )
        too_big = post_restore(api, archive, "?mode=replace")
        assert too_big.status_code == 413 and too_big.get_json()["reason"] == "payload_too_large"
        assert api.get("/memory/by-tag?tags=x").status_code == 200
    finally:
        stop_app(app)


def test_cli_backup_and_restore_through_the_api(
    api: Api,
    services: Services,
    populated: dict[str, str],
    live_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AUTOMEM_API_TOKEN", API_TOKEN)
    monkeypatch.setenv("ADMIN_API_TOKEN", ADMIN_TOKEN)
    before = snapshot(services)
    target = tmp_path / "store.jsonl.gz"
    assert main(["backup", "-o", str(target), "--url", live_url]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert saved["file"] == str(target) and saved["counts"]["memory"] == 7
    assert not (tmp_path / "store.jsonl.gz.part").exists()

    assert main(["restore", str(target), "--url", live_url]) == 2  # refused: the store holds memories
    assert "not empty" in capsys.readouterr().err
    assert main(["restore", str(target), "--replace", "--url", live_url]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["restored"]["memories"] == 7
    assert_same(before, snapshot(services))
    assert main(["restore", str(target), "--url", "http://127.0.0.1:9"]) == 2
    assert "cannot reach the service" in capsys.readouterr().err
