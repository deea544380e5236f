"""Relative dates in content, resolved against the memory's own time (2023-05-08 is a Monday)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from automem.recall.reldates import content_spans, query_time, relative_dates

MONDAY = "2023-05-08T13:56:00+00:00"
SATURDAY = "2023-05-13T09:00:00Z"


@pytest.mark.parametrize(
    ("content", "timestamp", "start", "end", "label"),
    [
        ("We went camping last weekend.", MONDAY, "2023-05-06", "2023-05-08", "weekend of 6 May 2023"),
        ("Yesterday the deploy failed.", MONDAY, "2023-05-07", "2023-05-08", "7 May 2023"),
        ("We hiked the past weekend.", MONDAY, "2023-05-06", "2023-05-08", "weekend of 6 May 2023"),
        ("Tonight we celebrate.", MONDAY, "2023-05-08", "2023-05-09", "8 May 2023"),
        ("I signed up two weeks ago.", MONDAY, "2023-04-24", "2023-05-01", "week of 24 April 2023"),
        ("Last Saturday was fun.", MONDAY, "2023-05-06", "2023-05-07", "6 May 2023"),
        ("Last Saturday was fun.", SATURDAY, "2023-05-06", "2023-05-07", "6 May 2023"),
        ("This past Friday I ran.", MONDAY, "2023-05-05", "2023-05-06", "5 May 2023"),
        ("Next Monday we start.", MONDAY, "2023-05-15", "2023-05-16", "15 May 2023"),
        ("Next month we move.", MONDAY, "2023-06-01", "2023-07-01", "June 2023"),
        ("Last month was busy.", "2023-01-15T00:00:00Z", "2022-12-01", "2023-01-01", "December 2022"),
        ("I painted it last year!", MONDAY, "2022-01-01", "2023-01-01", "2022"),
        ("A month ago I quit.", "2023-03-31T00:00:00Z", "2023-02-01", "2023-03-01", "February 2023"),
        ("Three days ago, at the lake.", MONDAY, "2023-05-05", "2023-05-06", "5 May 2023"),
        ("We meet in 2 weeks.", MONDAY, "2023-05-22", "2023-05-29", "week of 22 May 2023"),
    ],
)
def test_phrases_resolve_against_the_memory_time(
    content: str, timestamp: str, start: str, end: str, label: str
) -> None:
    [found] = relative_dates(content, timestamp)
    assert (found.start.isoformat(), found.end.isoformat(), found.label) == (start, end, label)
    assert found.text in content.lower()


def test_each_phrase_once_in_text_order_and_no_overlaps() -> None:
    found = relative_dates("Last week, yesterday and last week again; this past week too.", MONDAY)
    assert [r.text for r in found] == ["last week", "yesterday", "this past week"]


@pytest.mark.parametrize(
    ("content", "timestamp"),
    [
        ("We chose PostgreSQL for billing.", MONDAY),  # no relative time
        ("The last weekend of the sprint", "not a time"),  # no usable timestamp
        ("The lastweek typo and yesterdays news", MONDAY),  # not whole words
    ],
)
def test_nothing_to_resolve(content: str, timestamp: str) -> None:
    assert relative_dates(content, timestamp) == []


@given(
    st.lists(
        st.sampled_from(
            ["yesterday", "last week", "two months ago", "next friday", "this weekend", "a year ago", "words"]
        ),
        max_size=12,
    ),
    st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 1, 1)),
)
def test_every_resolution_is_a_span_near_the_memory_time(phrases: list[str], day: date) -> None:
    content = " and ".join(phrases)
    for found in relative_dates(content, f"{day.isoformat()}T12:00:00Z"):
        assert found.start < found.end
        assert abs(found.start - day) <= timedelta(days=800)
        assert found.text in content.lower()


TUESDAY = "2023-03-21T21:43:00Z"


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("Which bike did I service the past weekend?", "2023-03-18", "2023-03-20"),
        ("What did I fix last weekend?", "2023-03-18", "2023-03-20"),
        ("What artist did I start to listen to last Friday?", "2023-03-17", "2023-03-18"),
        ("What did we decide yesterday?", "2023-03-20", "2023-03-21"),
        ("What certification did I complete last month?", "2023-02-01", "2023-03-01"),
        ("Who called three days ago?", "2023-03-18", "2023-03-19"),
        ("What did I cook this week?", "2023-03-20", "2023-03-27"),
    ],
)
def test_a_question_names_a_time_resolved_against_when_it_is_asked(
    question: str, start: str, end: str
) -> None:
    named = query_time(question, TUESDAY)
    assert named is not None and (named.start.isoformat(), named.end.isoformat()) == (start, end)


def test_the_named_time_keeps_the_question_s_own_words() -> None:
    named = query_time("Which bike did I service the past weekend?", TUESDAY)
    assert named is not None and (named.text, named.label) == ("the past weekend", "weekend of 18 March 2023")
    last = query_time("What did I fix last weekend?", TUESDAY)
    assert last is not None and last.text == "last weekend"


@pytest.mark.parametrize(
    "question",
    [
        "What is planned for next week?",  # the future: not a time something was said
        "What are my plans this weekend?",  # asked on a Tuesday, the weekend is ahead
        "Where do I meet them tomorrow?",
        "Which bike do I ride?",
        "How many weeks ago did I attend the workshop?",  # asks for a span, names none
    ],
)
def test_a_question_without_a_past_time_names_none(question: str) -> None:
    assert query_time(question, TUESDAY) is None


def test_content_spans_reads_what_enrichment_resolved_and_skips_the_rest() -> None:
    metadata = {
        "enrichment": {
            "dates": [
                {"text": "last weekend", "start": "2023-03-18", "end": "2023-03-20", "label": "x"},
                {"text": "broken", "start": "March", "end": "2023-03-20"},
                "not a date",
            ]
        }
    }
    assert content_spans(metadata) == [(date(2023, 3, 18), date(2023, 3, 20))]
    assert content_spans({}) == [] and content_spans({"enrichment": {"dates": "x"}}) == []
