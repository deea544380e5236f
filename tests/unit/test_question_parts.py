"""Two-part questions: which questions split, into what, and which stay whole."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from automem.recall.split import question_parts


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "Which did we adopt first, the event bus or the job queue?",
            ["the event bus", "the job queue"],
        ),
        (
            "Which library did the team pick first, 'Requests' or 'HTTPX'?",
            ["'Requests'", "'HTTPX'"],
        ),
        (
            "Was the staging database slower, compared to the production replica?",
            ["Was the staging database slower", "the production replica"],
        ),
        (
            "Did the schema migration finish before the quarterly audit started?",
            ["the schema migration finish", "the quarterly audit started"],
        ),
        (
            "How many days did the rollout take after the security review approved it?",
            ["the rollout take", "the security review approved it"],
        ),
        (
            "How many weeks did it take for us to ship the installer after the beta started?",
            ["ship the installer", "the beta started"],
        ),
        (
            "How long had Priya been on call before the pager moved to Tomas?",
            ["Priya been on call", "the pager moved to Tomas"],
        ),
        (
            "Which editor do Priya and Tomas both use?",
            ["Which editor do Priya use", "Which editor do Tomas use"],
        ),
        (
            "What conferences have both Priya and Tomas attended?",
            ["What conferences have Priya attended", "What conferences have Tomas attended"],
        ),
    ],
)
def test_two_part_questions_split_into_their_parts(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


@pytest.mark.parametrize(
    "question",
    [
        "What database did we choose for billing?",
        "When did the outage start after the deploy?",  # a when-question asks for one time
        "Should we use tabs or spaces?",  # no comma: a plain question with an "or" in it
        "What did Priya and Tomas discuss at standup?",  # a shared event, not one thing each
        "How many days before the launch did we freeze the API?",  # nothing before "before"
        "Which is better, A or B?",  # parts too short to search for
        "",
        "   ",
    ],
)
def test_other_questions_stay_whole(question: str) -> None:
    assert question_parts(question) == []


@given(st.text(max_size=200))
def test_parts_are_two_trimmed_texts_or_none(text: str) -> None:
    parts = question_parts(text)
    assert parts == [] or (len(parts) == 2 and all(p.strip() == p and p for p in parts))
