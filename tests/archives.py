"""Archives in tests: a populated store with everything a backup must carry, a snapshot of a
whole store to compare, and backup/restore/record helpers (tests/integration/test_backup.py,
test_restore_atomic.py and the property tests use them)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import numpy as np

from automem.services import Services
from automem.stores.scope_bounds import SCOPE_LABEL
from automem.stores.vectors.qdrant_edge import HALF_PRECISION
from enrichment.consolidation import Consolidator
from enrichment.context import use_services
from tests.conftest import ADMIN_TOKEN, Api

ADMIN = {"X-Admin-Token": ADMIN_TOKEN}


def vector_on_axis(dim: int, axis: int, tilt: float = 0.0) -> list[float]:
    out = [0.0] * dim
    out[axis] = 1.0
    out[(axis + 1) % dim] = tilt
    return out


def store_memory(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def populate(api: Api, services: Services, jobs: Any) -> dict[str, str]:
    """Fill a store with everything a backup must carry; the ids by name."""
    dim = services.embedder.dimension
    ids = {
        "alice": store_memory(
            api,
            "Alice deployed the billing service to Kubernetes in Berlin.",
            tags=["project:billing", "ops"],
            metadata={"source": "standup", "nested": {"depth": [1, 2]}},
            importance=0.8,
            embedding=vector_on_axis(dim, 5, 0.05),
        ),
        "bob": store_memory(
            api,
            "Bob moved the billing database to PostgreSQL.",
            tags=["project:billing"],
            embedding=vector_on_axis(dim, 5, 0.06),
        ),
        "carol": store_memory(
            api,
            "Carol reviewed the billing rollout plan.",
            tags=["project:billing"],
            embedding=vector_on_axis(dim, 5, 0.07),
        ),
        "plain": store_memory(api, "We prefer tabs over spaces in Go code.", tags=["style"]),
        "modified": store_memory(api, "The retro is on Mondays", tags=["team"]),
        "deleted": store_memory(api, "Temporary note to delete", tags=["scratch"]),
        "recovered": store_memory(api, "Deleted by mistake, then recovered", tags=["scratch"]),
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
    """Every node, edge and vector point of the store, keyed by identity (not internal ids); not
    the scopes' time ranges, which a restore makes from the memories it writes (a live store's
    may be wider: they are never narrowed)."""
    nodes = sorted(
        json.dumps([labels, props], sort_keys=True)
        for labels, props in services.graph._ro(
            f"MATCH (n) WHERE NOT n:{SCOPE_LABEL} RETURN labels(n), properties(n)"
        )
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
        assert restored.payload == point.payload, {
            k: (point.payload.get(k), restored.payload.get(k))
            for k in set(point.payload) | set(restored.payload)
            if point.payload.get(k) != restored.payload.get(k)
        }
        if point.vector is None:
            assert restored.vector is None
        else:
            # A float16 shard rounds the vector it is given, and the restored point's comes from
            # the graph's float32 copy, not from the write the first point had: a component on
            # a rounding boundary may land one float16 step (~3e-5) away (seen once in CI).
            np.testing.assert_allclose(restored.vector, point.vector, rtol=0, atol=HALF_PRECISION)


def take_backup(api: Api) -> bytes:
    response = api.get("/backup", headers=ADMIN)
    assert response.status_code == 200
    assert response.mimetype == "application/gzip"
    assert "attachment" in response.headers["Content-Disposition"]
    return bytes(response.data)


def post_restore(api: Api, archive: bytes, query: str = "") -> Any:
    return api.post(
        f"/admin/restore{query}", data=archive, headers={**ADMIN, "Content-Type": "application/gzip"}
    )


def wipe_store(services: Services) -> None:
    services.graph.wipe()
    services.graph.ensure_schema(services.embedder.dimension)
    assert services.vectors is not None
    services.vectors.drop()
    services.vectors.ensure_collection(services.embedder.dimension)


def archive_records(archive: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(archive).splitlines()]


def gzip_records(records: list[dict[str, Any]], drop_vectors: bool = False) -> bytes:
    if drop_vectors:
        end = records[-1]
        records = [*records[:-1], {**end, "counts": {**end["counts"], "vector": 0}}]
    return gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode())
