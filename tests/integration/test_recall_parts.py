"""Two-part questions through POST /recall: each part's memory reaches the answer even when
memories that resemble the whole question crowd it, and RECALL_QUESTION_PARTS=false turns the
parts off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from automem.app import create_app, stop_app
from automem.settings import Settings
from enrichment.context import use_services
from tests.conftest import Api, make_settings, run_jobs

QUESTION = "Which did we adopt first, the durable event bus or the nightly job queue?"
PARTS = {
    "bus": "Adopted the durable event bus for order updates.",
    "queue": "Set up the nightly job queue for invoices.",
}
# Memories that share more of the whole question's words than either part's memory does, but
# fewer of a part's words than that part's memory.
CROWD = [f"Which did we adopt first: the durable nightly event job, take {n}?" for n in range(3)]


def _answer(api: Api, limit: int) -> list[str]:
    response = api.post("/recall", json={"query": QUESTION, "limit": limit})
    assert response.status_code == 200, response.get_json()
    return [r["memory"]["content"] for r in response.get_json()["results"]]


def _fill(api: Api) -> None:
    for content in [*CROWD, *PARTS.values()]:
        response = api.post("/memory", json={"content": content})
        assert response.status_code == 201, response.get_json()


@pytest.fixture
def unsplit(settings: Settings, tmp_path: Path) -> Iterator[tuple[Api, Any]]:
    app: Flask = create_app(
        make_settings(settings.falkordb_url, tmp_path / "whole", recall_question_parts=False),
        start_vector_drain=False,
    )
    app.config["TESTING"] = True
    yield Api(app.test_client()), app.extensions["automem"]
    use_services(None)
    stop_app(app)


def test_each_part_of_a_two_part_question_is_found(api: Api, jobs: Any) -> None:
    _fill(api)
    jobs()
    found = _answer(api, limit=3)
    assert PARTS["bus"] in found and PARTS["queue"] in found


def test_the_whole_question_alone_is_crowded_out(unsplit: tuple[Api, Any]) -> None:
    api, services = unsplit
    _fill(api)
    run_jobs(services)
    found = _answer(api, limit=3)
    assert not (PARTS["bus"] in found and PARTS["queue"] in found)
