"""LLM paths of the write path and the enrichment jobs, against the local OpenAI-compatible stub:
classification of unsure memories, write-time summarisation, and the circuit breaker that pauses
LLM jobs on a 429 instead of retrying in a storm."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from enrichment.context import use_services
from tests.conftest import Api, make_settings, run_jobs
from tests.stubs.openai_stub import OpenAIStub

UNSURE = "The sky over the harbour was grey this morning."  # no rule matches: Context 0.3


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(chat_reply={"type": "Insight", "confidence": 0.85}) as server:
        yield server


@pytest.fixture
def llm_app(
    falkordb_server: EmbeddedFalkorDB, redis_conn: Any, tmp_path: Path, stub: OpenAIStub
) -> Iterator[Flask]:
    settings = make_settings(
        falkordb_server.url,
        tmp_path / "data",
        llm_base_url=stub.base_url,
        llm_api_key="stub-key",
        llm_breaker_seconds=120,
    )
    application = create_app(settings, start_vector_drain=False)
    yield application
    use_services(None)
    stop_app(application)


@pytest.fixture
def llm_api(llm_app: Flask) -> Api:
    return Api(llm_app.test_client())


@pytest.fixture
def llm_services(llm_app: Flask) -> Services:
    return llm_app.extensions["automem"]  # type: ignore[no-any-return]


def _chat_calls(stub: OpenAIStub) -> int:
    return len(stub.requests_to("/chat/completions"))


def _store(api: Api, **body: Any) -> dict[str, Any]:
    response = api.post("/memory", json=body)
    assert response.status_code == 201, response.get_json()
    return dict(response.get_json())


def test_unsure_memory_gets_the_llm_type(llm_api: Api, llm_services: Services, stub: OpenAIStub) -> None:
    created = _store(llm_api, content=UNSURE)
    assert (created["type"], created["classification"]) == ("Context", "default")
    run_jobs(llm_services)
    memory = llm_api.get(f"/memory/{created['memory_id']}").get_json()["memory"]
    assert memory["type"] == "Insight"
    assert memory["confidence"] == 0.85
    assert _chat_calls(stub) == 1
    stored = llm_services.graph.get_memory(created["memory_id"])
    assert stored is not None and stored.classification == "llm"
    events = llm_api.get(f"/memory/{created['memory_id']}/history").get_json()["events"]
    [classified] = [e for e in events if e["event"] == "classified"]
    assert classified["actor"] == "job:classify" and classified["version"] == 1
    assert classified["changes"] == {
        "type": {"old": "Context", "new": "Insight"},
        "confidence": {"old": 0.3, "new": 0.85},
    }


def test_confident_or_explicit_types_are_not_sent(
    llm_api: Api, llm_services: Services, stub: OpenAIStub
) -> None:
    _store(llm_api, content="We decided to use PostgreSQL and chose it over MySQL.")  # rules are sure
    _store(llm_api, content=UNSURE + " again", type="Habit")
    run_jobs(llm_services)
    assert _chat_calls(stub) == 0


def test_a_type_set_by_the_client_meanwhile_wins(
    llm_api: Api, llm_services: Services, stub: OpenAIStub
) -> None:
    created = _store(llm_api, content=UNSURE)
    memory_id = created["memory_id"]
    doc = llm_services.graph.get_memory(memory_id)
    assert doc is not None
    llm_api.patch(f"/memory/{memory_id}", json={"type": "Preference"})
    # A classification read before the client's change must not land.
    assert not llm_services.graph.set_llm_type(memory_id, doc.version, "Insight", 0.9)
    run_jobs(llm_services)
    memory = llm_api.get(f"/memory/{memory_id}").get_json()["memory"]
    assert memory["type"] == "Preference"


def test_429_opens_the_breaker_and_defers_the_job(
    llm_api: Api, llm_services: Services, stub: OpenAIStub
) -> None:
    stub.fail_next(429, count=5)
    first = _store(llm_api, content=UNSURE)
    second = _store(llm_api, content=UNSURE + " And windy.")
    run_jobs(llm_services)
    # One request hit the 429; the breaker then kept the other job from calling at all.
    assert _chat_calls(stub) == 1
    status = llm_api.get("/enrichment/status").get_json()
    assert status["llm"]["configured"] is True
    assert status["llm"]["breaker"]["open"] is True
    assert status["llm"]["breaker"]["retry_after"] > 60
    assert status["queues"]["enrich"]["scheduled"] == 2  # both classifications wait, none failed
    assert status["queues"]["enrich"]["failed"] == 0
    run_jobs(llm_services)  # nothing is due: no retry storm
    assert _chat_calls(stub) == 1
    for created in (first, second):
        memory = llm_api.get(f"/memory/{created['memory_id']}").get_json()["memory"]
        assert memory["type"] == "Context"  # the rules' answer stands meanwhile
        assert memory["enriched"] is True  # the rest of enrichment did not wait for the LLM


def test_long_content_is_summarised_with_the_original_kept(llm_api: Api, stub: OpenAIStub) -> None:
    stub.chat_reply = "Chose PostgreSQL for billing; migration done in March."
    long = "We compared databases for the billing service. " * 15
    created = _store(llm_api, content=long.strip())
    assert created["summarized"] is True
    assert created["original_length"] == len(long.strip())
    assert created["summarized_length"] == len(stub.chat_reply)
    memory = llm_api.get(f"/memory/{created['memory_id']}").get_json()["memory"]
    assert memory["content"] == stub.chat_reply
    assert memory["metadata"]["original_content"] == long.strip()
    assert memory["metadata"]["was_summarized"] is True


def test_summary_failure_stores_the_content_as_is(llm_api: Api, stub: OpenAIStub) -> None:
    stub.fail_next(500)
    long = ("Detailed notes about the incident review. " * 15).strip()
    created = _store(llm_api, content=long)
    assert created["summarized"] is False
    memory = llm_api.get(f"/memory/{created['memory_id']}").get_json()["memory"]
    assert memory["content"] == long


def test_without_an_llm_nothing_is_summarised(api: Api) -> None:
    long = ("Plain long content without any model around. " * 15).strip()
    created = api.post("/memory", json={"content": long}).get_json()
    assert "summarized" not in created
    assert api.get("/enrichment/status").get_json()["llm"] == {"configured": False}
