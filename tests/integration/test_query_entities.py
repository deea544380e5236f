"""Query-side entity linking against the real graph: what a query names is found among the
tenant's entities, a rare entity's memories join the candidates within the request's filter,
and a memory that names the entity gains the entity prior."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from automem.app import create_app, stop_app
from automem.recall.entity_link import query_slugs
from automem.services import Services
from automem.stores.recall_filter import RecallFilter
from automem.timeutil import now_iso
from enrichment.context import use_services
from tests.conftest import ADMIN_TOKEN, Api, make_settings, run_jobs

NOTES = (
    ("We moved the ingest pipeline to Kafka last spring.", ["team:data"]),
    ("Kafka consumers lag when the batch job runs.", ["team:ops"]),
    ("Lunch on Fridays is at the Thai place.", ["team:data"]),
    ("The dashboard uses PostgreSQL for its reports.", ["team:data"]),
)


def _store_all(api: Api, jobs: Any) -> list[str]:
    ids = []
    for content, tags in NOTES:
        response = api.post("/memory", json={"content": content, "tags": tags})
        assert response.status_code == 201, response.get_json()
        ids.append(str(response.get_json()["memory_id"]))
    jobs()
    return ids


def _scope(tenant: str = "default", tags: list[str] | None = None) -> RecallFilter:
    return RecallFilter.build(
        tenant=tenant,
        now=now_iso(),
        tags=tags or [],
        tag_mode="any",
        tag_match="prefix",
        exclude_tags=[],
        types=[],
        window=None,
        state_mode="current",
    )


def test_linking_is_off_by_default(api: Api, services: Services, jobs: Any) -> None:
    _store_all(api, jobs)
    assert api.post("/recall", json={"query": "Kafka"}).get_json()["query_entities"] == []


def test_the_graph_links_what_a_query_names_within_the_filter(
    api: Api, services: Services, jobs: Any
) -> None:
    ids = _store_all(api, jobs)
    keys = query_slugs("anything new about Kafka or Oracle?")
    (kafka,) = services.graph.linked_entities(keys, _scope(), rare=20, limit_per=10)
    assert (kafka["kind"], kafka["slug"], kafka["mentions"]) == ("tool", "kafka", 2)
    assert set(kafka["memories"]) == {ids[0], ids[1]}
    (scoped,) = services.graph.linked_entities(keys, _scope(tags=["team:ops"]), rare=20, limit_per=10)
    assert scoped["memories"] == [ids[1]]  # the request's filter holds
    (common,) = services.graph.linked_entities(keys, _scope(), rare=1, limit_per=10)
    assert common["memories"] == []  # mentioned too often to bring its memories in
    assert services.graph.linked_entities(keys, _scope(tenant="other"), rare=20, limit_per=10) == []


@pytest.fixture
def linking(settings: Any, tmp_path: Path) -> Iterator[tuple[Api, Services]]:
    """An app with RECALL_ENTITY_LINKING on (off by default)."""
    app = create_app(make_settings(settings.falkordb_url, tmp_path / "linking", recall_entity_linking=True))
    app.config["TESTING"] = True
    yield Api(app.test_client()), app.extensions["automem"]
    use_services(None)
    stop_app(app)


def test_recall_reports_the_linked_entity_and_prefers_memories_that_name_it(
    linking: tuple[Api, Services],
) -> None:
    api, services = linking
    ids = _store_all(api, lambda: run_jobs(services))
    body = api.post("/recall", json={"query": "Kafka", "limit": 4}).get_json()
    assert body["query_entities"] == [{"name": "Kafka", "kind": "tool", "mentions": 2}]
    by_id = {r["id"]: r for r in body["results"]}
    assert by_id[ids[0]]["score_components"]["entity"] > 0
    others = [r for r in body["results"] if r["id"] not in ids[:2]]
    assert all(r["score_components"].get("entity", 0) == 0 for r in others)
    assert [r["id"] for r in body["results"][:2]] in ([ids[0], ids[1]], [ids[1], ids[0]])


def test_a_merged_entity_is_not_linked(api: Api, services: Services, jobs: Any) -> None:
    _store_all(api, jobs)
    merged = api.post(
        "/entity/kafka/merge",
        json={"merge_into": "postgresql", "category": "tool"},
        headers={"X-Admin-Token": ADMIN_TOKEN},
    )
    assert merged.status_code == 200, merged.get_json()
    keys = query_slugs("Kafka")
    assert services.graph.linked_entities(keys, _scope(), 20, 10) == []
