"""GET /backup and POST /admin/restore (and `automem backup` / `automem restore`): backup → wipe →
restore gives identical ids, contents, tags, edges, history and vectors, on both vector backends;
bad archives, non-empty targets and other dimensions are refused without touching the store."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask import Flask
from werkzeug.serving import make_server

from automem.cli import main
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from automem.settings import Settings
from enrichment.consolidation import Consolidator
from enrichment.context import use_services
from tests.conftest import ADMIN_TOKEN, API_TOKEN, Api, make_settings

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


@pytest.fixture(params=["edge", "qdrant"])
def settings(
    request: pytest.FixtureRequest, falkordb_server: EmbeddedFalkorDB, redis_conn: object, tmp_path: Path
) -> Settings:
    if request.param == "edge":
        return make_settings(falkordb_server.url, tmp_path / "data")
    return make_settings(
        falkordb_server.url, tmp_path / "data", vector_backend="qdrant", qdrant_path=str(tmp_path / "qdrant")
    )


def _vector(dim: int, axis: int, tilt: float = 0.0) -> list[float]:
    out = [0.0] * dim
    out[axis] = 1.0
    out[(axis + 1) % dim] = tilt
    return out


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


@pytest.fixture
def populated(api: Api, services: Services, jobs: Any) -> dict[str, str]:
    """A store with everything a backup must carry."""
    dim = services.embedder.dimension
    ids = {
        "alice": _store(
            api,
            "Alice deployed the billing service to Kubernetes in Berlin.",
            tags=["project:billing", "ops"],
            metadata={"source": "standup", "nested": {"depth": [1, 2]}},
            importance=0.8,
            embedding=_vector(dim, 5, 0.05),
        ),
        "bob": _store(
            api,
            "Bob moved the billing database to PostgreSQL.",
            tags=["project:billing"],
            embedding=_vector(dim, 5, 0.06),
        ),
        "carol": _store(
            api,
            "Carol reviewed the billing rollout plan.",
            tags=["project:billing"],
            embedding=_vector(dim, 5, 0.07),
        ),
        "plain": _store(api, "We prefer tabs over spaces in Go code.", tags=["style"]),
        "modified": _store(api, "The retro is on Mondays", tags=["team"]),
        "deleted": _store(api, "Temporary note to delete", tags=["scratch"]),
        "recovered": _store(api, "Deleted by mistake, then recovered", tags=["scratch"]),
    }
    assert (
        api.patch(
            f"/memory/{ids['modified']}", json={"content": "The retro is on Thursdays", "reason": "moved"}
        ).status_code
        == 200
    )
    assert api.delete(f"/memory/{ids['deleted']}?reason=done").status_code == 200
    assert api.delete(f"/memory/{ids['recovered']}").status_code == 200
    assert api.post(f"/memory/{ids['recovered']}/recover").status_code == 200
    related = {"memory1_id": ids["alice"], "memory2_id": ids["bob"], "type": "RELATES_TO", "strength": 0.7}
    assert api.post("/associate", json=related).status_code == 201
    jobs()  # embeddings, entities, MENTIONS, PRECEDED_BY, SIMILAR_TO, history events
    use_services(services)
    Consolidator(services).run("cluster", dry_run=False)  # a :Pattern, EXEMPLIFIES, a :ConsolidationRun
    return ids


def snapshot(services: Services) -> dict[str, Any]:
    """Every node, edge and vector point of the store, keyed by identity (not internal ids)."""
    nodes = sorted(
        json.dumps([labels, props], sort_keys=True)
        for labels, props in services.graph._ro("MATCH (n) RETURN labels(n), properties(n)")
    )
    edges = sorted(
        json.dumps(row, sort_keys=True)
        for row in services.graph._ro(
            "MATCH (a)-[r]->(b) RETURN type(r), coalesce(a.id, a.key), coalesce(b.id, b.key), properties(r)"
        )
    )
    assert services.vectors is not None
    points = {p.id: p for p in services.vectors.iter_records(with_vectors=True)}
    return {"nodes": nodes, "edges": edges, "points": points}


def assert_same(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert after["nodes"] == before["nodes"]  # ids, contents, tags, embeddings, history, entities
    assert after["edges"] == before["edges"]
    assert set(after["points"]) == set(before["points"])
    for point_id, point in before["points"].items():
        restored = after["points"][point_id]
        assert restored.payload == point.payload
        if point.vector is None:
            assert restored.vector is None
        else:
            np.testing.assert_allclose(restored.vector, point.vector, rtol=0, atol=1e-6)


def _backup(api: Api) -> bytes:
    response = api.get("/backup", headers=ADMIN)
    assert response.status_code == 200
    assert response.mimetype == "application/gzip"
    assert "attachment" in response.headers["Content-Disposition"]
    return bytes(response.data)


def _restore(api: Api, archive: bytes, query: str = "") -> Any:
    return api.post(
        f"/admin/restore{query}", data=archive, headers={**ADMIN, "Content-Type": "application/gzip"}
    )


def _wipe(services: Services) -> None:
    services.graph.wipe()
    services.graph.ensure_schema(services.embedder.dimension)
    assert services.vectors is not None
    services.vectors.drop()
    services.vectors.ensure_collection(services.embedder.dimension)


def _records(archive: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(archive).splitlines()]


def test_backup_wipe_restore_round_trip(api: Api, services: Services, populated: dict[str, str]) -> None:
    before = snapshot(services)
    history = {name: api.get(f"/memory/{i}/history").get_json()["events"] for name, i in populated.items()}
    archive = _backup(api)
    records = _records(archive)
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

    _wipe(services)
    assert snapshot(services)["nodes"] == []
    response = _restore(api, archive)
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
    archive = _backup(api)
    # An archive without vector points restores them from the graph alone, as does vectors=graph.
    without_points = _gzip([r for r in _records(archive) if r["kind"] != "vector"], drop_vectors=True)
    for payload, query in ((without_points, "?mode=replace"), (archive, "?mode=replace&vectors=graph")):
        response = _restore(api, payload, query)
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["vectors_source"] == "graph"
        assert response.get_json()["vectors_rebuilt_from_graph"] == len(before["points"])
        assert_same(before, snapshot(services))


def _gzip(records: list[dict[str, Any]], drop_vectors: bool = False) -> bytes:
    if drop_vectors:
        end = records[-1]
        records = [*records[:-1], {**end, "counts": {**end["counts"], "vector": 0}}]
    return gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode())


def test_restore_refuses_a_store_with_memories(
    api: Api, services: Services, populated: dict[str, str]
) -> None:
    archive = _backup(api)
    before = snapshot(services)
    refused = _restore(api, archive)
    assert refused.status_code == 409
    assert refused.get_json()["reason"] == "store_not_empty" and refused.get_json()["counts"]["Memory"] == 7
    assert_same(before, snapshot(services))
    # mode=replace wipes first: a memory stored after the backup is gone afterwards.
    extra = _store(api, "Stored after the backup")
    assert _restore(api, archive, "?mode=replace").status_code == 200
    assert api.get(f"/memory/{extra}").status_code == 404
    assert_same(before, snapshot(services))


def test_bad_archives_leave_the_store_as_it_was(
    api: Api, services: Services, populated: dict[str, str]
) -> None:
    archive = _backup(api)
    before = snapshot(services)
    records = _records(archive)
    memory = next(r for r in records if r["kind"] == "memory")
    bad = {
        "not gzip": b"this is not an archive",
        "truncated": archive[: len(archive) // 2],
        "empty": b"",
        "no end record": _gzip(records[:-1]),
        "wrong counts": _gzip([*records[:-1], {"kind": "end", "counts": {"memory": 1}}]),
        "not json": gzip.compress(b'{"kind": "header"}\nnot json\n'),
        "no header": _gzip(records[1:]),
        "other format": _gzip([{**records[0], "format": "something-else"}, *records[1:]]),
        "newer version": _gzip([{**records[0], "version": 99}, *records[1:]]),
        "bad property": _gzip(
            [records[0], {**memory, "props": {**memory["props"], "x": {"a": 1}}}, *records[1:]]
        ),
        "out of order": _gzip([records[0], records[-2], memory, *records[1:]]),
        "bad label": _gzip([records[0], {"kind": "node", "labels": ["X) DETACH DELETE (n"], "props": {}}]),
    }
    for name, payload in bad.items():
        response = _restore(api, payload, "?mode=replace")
        assert response.status_code == 400, (name, response.get_json())
        assert response.get_json()["reason"] == "invalid_archive", name
        assert response.get_json()["field"] == "body"
        assert_same(before, snapshot(services))


def test_a_restore_of_another_dimension_is_refused(
    api: Api, services: Services, populated: dict[str, str]
) -> None:
    records = _records(_backup(api))
    header = {**records[0], "embedding": {**records[0]["embedding"], "dimension": 8}}
    memory = {**next(r for r in records if r["kind"] == "memory"), "embedding": [0.5] * 8}
    archive = _gzip([header, memory, {"kind": "end", "counts": {"memory": 1}}])
    response = _restore(api, archive, "?mode=replace")
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
    assert _restore(api, b"x", "?mode=everything").status_code == 400


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
            _store(
                api,
                f"Memory number {n} with a vector",
                embedding=[round(float(v), 3) for v in rng.standard_normal(dim)],
            )
        archive = _backup(api)
        assert 4096 < len(archive) < 1 << 20
        assert (
            api.post("/memory", json={"content": "x" * 1000, "metadata": {"pad": "y" * 5000}}).status_code
            == 413
        )
        assert _restore(api, archive, "?mode=replace").status_code == 200
        app.extensions["automem"].settings = small_body_settings.model_copy(
            update={"restore_max_bytes": 4096}
        )
        too_big = _restore(api, archive, "?mode=replace")
        assert too_big.status_code == 413 and too_big.get_json()["reason"] == "payload_too_large"
        assert api.get("/memory/by-tag?tags=x").status_code == 200
    finally:
        stop_app(app)


@pytest.fixture
def live_url(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(5)


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
