"""Episodes in the real graph: the sequence chain of a named sequence, walked several turns from
a memory, stays within its sequence and skips the untagged stream."""

from __future__ import annotations

from typing import Any

from automem.services import Services
from tests.conftest import Api


def _turns(api: Api, tags: list[str], count: int) -> list[str]:
    ids = []
    for n in range(count):
        body = {
            "content": f"{tags} turn {n}: note {n * 7919}",
            "tags": tags,
            "timestamp": f"2024-06-01T10:00:{n * 5:02d}Z",
        }
        response = api.post("/memory", json=body)
        assert response.status_code == 201, response.get_json()
        ids.append(str(response.get_json()["memory_id"]))
    return ids


def test_the_chain_is_walked_within_its_sequence(api: Api, services: Services, jobs: Any) -> None:
    turns = _turns(api, ["chat:session-1"], 6)
    other = _turns(api, ["chat:session-2"], 3)
    jobs()
    found = services.graph.chain_neighbours([turns[2]], 2, 3)
    assert sorted(found) == sorted(
        [(turns[2], turns[0], 2), (turns[2], turns[4], 2), (turns[2], turns[5], 3)]
    )
    assert services.graph.chain_neighbours([other[0]], 2, 3) == [(other[0], other[2], 2)]


def test_the_untagged_stream_has_no_episode(api: Api, services: Services, jobs: Any) -> None:
    loose = _turns(api, [], 4)
    jobs()
    assert services.graph.chain_neighbours([loose[1]], 2, 3) == []
