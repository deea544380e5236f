"""Recall time windows: natural-language phrases and explicit start/end -> UTC windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from automem.recall.timeparse import TimeQueryError, TimeWindow, parse_time_query, resolve_window

NOW = datetime(2025, 3, 5, 14, 30, tzinfo=UTC)  # a Wednesday


def at(text: str | None) -> datetime | None:
    """Shorthand: '2025-03-05' or '2025-03-05T14:30' as an aware UTC datetime."""
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=UTC)


def tw(start: str | None, end: str | None) -> TimeWindow:
    return TimeWindow(at(start), at(end))


def window(text: str, now: datetime = NOW) -> tuple[datetime | None, datetime | None]:
    parsed = parse_time_query(text, now)
    return parsed.start, parsed.end


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # whole days
        ("today", "2025-03-05", "2025-03-06"),
        ("yesterday", "2025-03-04", "2025-03-05"),
        ("3 days ago", "2025-03-02", "2025-03-03"),
        ("one day ago", "2025-03-04", "2025-03-05"),
        ("last day", "2025-03-04", "2025-03-05"),
        # rolling windows end now
        ("last 24 hours", "2025-03-04T14:30", "2025-03-05T14:30"),
        ("past 12 hrs", "2025-03-05T02:30", "2025-03-05T14:30"),
        ("last hour", "2025-03-05T13:30", "2025-03-05T14:30"),
        ("last 90 minutes", "2025-03-05T13:00", "2025-03-05T14:30"),
        ("past 3 days", "2025-03-02T14:30", "2025-03-05T14:30"),
        ("last 7d", "2025-02-26T14:30", "2025-03-05T14:30"),
        ("last three weeks", "2025-02-12T14:30", "2025-03-05T14:30"),
        ("last 1 week", "2025-02-26T14:30", "2025-03-05T14:30"),
        ("last 1 month", "2025-02-05T14:30", "2025-03-05T14:30"),
        ("past two months", "2025-01-05T14:30", "2025-03-05T14:30"),
        ("last 3 months", "2024-12-05T14:30", "2025-03-05T14:30"),
        ("last 2 years", "2023-03-05T14:30", "2025-03-05T14:30"),
        ("past day", "2025-03-04T14:30", "2025-03-05T14:30"),
        ("past week", "2025-02-26T14:30", "2025-03-05T14:30"),
        ("past month", "2025-02-05T14:30", "2025-03-05T14:30"),
        ("past year", "2024-03-05T14:30", "2025-03-05T14:30"),
        # calendar units
        ("this week", "2025-03-03", "2025-03-10"),
        ("last week", "2025-02-24", "2025-03-03"),
        ("previous week", "2025-02-24", "2025-03-03"),
        ("this month", "2025-03-01", "2025-04-01"),
        ("last month", "2025-02-01", "2025-03-01"),
        ("this year", "2025-01-01", "2026-01-01"),
        ("last year", "2024-01-01", "2025-01-01"),
        # weekdays: most recent strictly before today
        ("on monday", "2025-03-03", "2025-03-04"),
        ("last monday", "2025-03-03", "2025-03-04"),
        ("tuesday", "2025-03-04", "2025-03-05"),
        ("wednesday", "2025-02-26", "2025-02-27"),
        ("last sunday", "2025-03-02", "2025-03-03"),
        ("on fri", "2025-02-28", "2025-03-01"),
    ],
)
def test_relative_phrases(text: str, start: str, end: str) -> None:
    assert window(text) == (at(start), at(end))


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2024-01-05", "2024-01-05", "2024-01-06"),
        ("on 2024-01-05", "2024-01-05", "2024-01-06"),
        ("on Jan 5th, 2024", "2024-01-05", "2024-01-06"),
        ("5 January 2024", "2024-01-05", "2024-01-06"),
        ("the 5th of january 2024", "2024-01-05", "2024-01-06"),
        ("in 2024", "2024-01-01", "2025-01-01"),
        ("2024-03", "2024-03-01", "2024-04-01"),
        ("in March 2024", "2024-03-01", "2024-04-01"),
        ("in February 2024", "2024-02-01", "2024-03-01"),
        ("on feb 29 2024", "2024-02-29", "2024-03-01"),
        ("in March", "2025-03-01", "2025-04-01"),  # this March has started
        ("in april", "2024-04-01", "2024-05-01"),  # next April has not: last year's
        ("in December", "2024-12-01", "2025-01-01"),
        ("march 5", "2025-03-05", "2025-03-06"),
        ("march 6", "2024-03-06", "2024-03-07"),
        ("feb 29", "2024-02-29", "2024-03-01"),  # the most recent leap day
        ("since 2024-02-29", "2024-02-29", None),
        ("since January 2024", "2024-01-01", None),
        ("since Jan 5 2024", "2024-01-05", None),
        ("since 2024", "2024-01-01", None),
        ("since last week", "2025-02-24", None),
        ("since 2024-01-05T10:00:00+02:00", "2024-01-05T08:00", None),
        ("after 2024-01-05", "2024-01-06", None),
        ("after 2024", "2025-01-01", None),
        ("before March 2024", None, "2024-03-01"),
        ("before 2024-06-01", None, "2024-06-01"),
        ("between 2024-01-01 and 2024-01-31", "2024-01-01", "2024-02-01"),
        ("between January 2024 and March 2024", "2024-01-01", "2024-04-01"),
        ("from jan 5 2024 to jan 7 2024", "2024-01-05", "2024-01-08"),
        ("2024-01-01..2024-02-01", "2024-01-01", "2024-02-02"),
        ("2024-01-01/2024-02-01", "2024-01-01", "2024-02-02"),
        ("2024-01-01T10:00:00Z/2024-01-01T12:00:00Z", "2024-01-01T10:00", "2024-01-01T12:00"),
    ],
)
def test_dates_and_operators(text: str, start: str | None, end: str | None) -> None:
    assert window(text) == (at(start), at(end))


@pytest.mark.parametrize("text", ["  LAST   Week ", "The Past Week", "in the last 3 days", "Last WEEK"])
def test_case_whitespace_and_fillers(text: str) -> None:
    parsed = parse_time_query(text, NOW)
    assert parsed.end is not None and parsed.end <= NOW + timedelta(days=1)
    assert parsed.start is not None and parsed.start < parsed.end


def test_month_arithmetic_across_years_and_month_ends() -> None:
    assert window("last month", datetime(2025, 1, 15, tzinfo=UTC)) == (at("2024-12-01"), at("2025-01-01"))
    assert window("last week", datetime(2025, 1, 2, tzinfo=UTC)) == (at("2024-12-23"), at("2024-12-30"))
    assert window("past month", datetime(2025, 3, 31, tzinfo=UTC))[0] == at("2025-02-28")
    assert window("past month", datetime(2024, 3, 31, tzinfo=UTC))[0] == at("2024-02-29")
    assert window("past year", datetime(2024, 2, 29, tzinfo=UTC))[0] == at("2023-02-28")
    assert window("this month", datetime(2024, 12, 31, tzinfo=UTC)) == (at("2024-12-01"), at("2025-01-01"))


def test_non_utc_timezone() -> None:
    tokyo = timezone(timedelta(hours=9))
    late = datetime(2025, 3, 5, 15, 30, tzinfo=UTC)  # already March 6 in Tokyo
    assert parse_time_query("today", late, tokyo) == tw("2025-03-05T15:00", "2025-03-06T15:00")
    assert parse_time_query("since 2025-01-01T09:00", NOW, tokyo).start == at("2025-01-01T00:00")
    new_york = ZoneInfo("America/New_York")
    # DST starts on 2025-03-09: that local day lasts 23 hours.
    dst_day = parse_time_query("2025-03-09", NOW, new_york)
    assert dst_day == tw("2025-03-09T05:00", "2025-03-10T04:00")
    assert dst_day.start is not None and dst_day.start.tzinfo == UTC
    assert parse_time_query("last 2 hours", NOW, new_york) == TimeWindow(at("2025-03-05T12:30"), NOW)


def test_naive_now_is_utc_and_default_now_works() -> None:
    assert parse_time_query("today", NOW.replace(tzinfo=None)) == parse_time_query("today", NOW)
    parsed = parse_time_query("past week")
    assert parsed.start is not None and parsed.end is not None
    assert parsed.end - parsed.start == timedelta(days=7)


@pytest.mark.parametrize(
    "text",
    [
        "whenever",
        "",
        "   ",
        "tomorrow",
        "next week",
        "this morning",
        "last 0 days",
        "this 3 days",
        "last fortnight",
        "since blah",
        "between 2024-02-01 and 2024-01-01",
        "on 2024-02-30",
        "feb 30",
        "2024-13",
        "on 2024-01-05T10:00:00Z",
        "last 99999999 years",
        "1/2/2024",
        "x" * 300,
    ],
)
def test_rejected_phrases(text: str) -> None:
    with pytest.raises(TimeQueryError):
        parse_time_query(text, NOW)


def test_error_message_lists_examples() -> None:
    with pytest.raises(TimeQueryError, match="unrecognized time_query 'whenever'") as info:
        parse_time_query("whenever", NOW)
    assert '"last 7 days"' in str(info.value) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("on 2024-02-30", "invalid time_query 'on 2024-02-30': 2024-02-30 is not a valid date"),
        ("last 0 days", "count must be at least 1"),
        ("2024-01-05T10:00:00Z", "single moment"),
        ("between 2024-02-01 and 2024-01-01", "ends before it starts"),
        ("last 99999999 years", "out of range"),
    ],
)
def test_error_messages_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(TimeQueryError, match=message):
        parse_time_query(text, NOW)


def test_as_iso() -> None:
    assert TimeWindow(at("2025-03-01"), None).as_iso() == ("2025-03-01T00:00:00.000000+00:00", None)


def test_resolve_window_nothing_given() -> None:
    assert resolve_window(None, None, None, NOW) is None
    assert resolve_window(" ", "", None, NOW) is None


def test_resolve_window_query_only() -> None:
    assert resolve_window("last week", None, None, NOW) == tw("2025-02-24", "2025-03-03")


def test_resolve_window_explicit_bounds_override() -> None:
    assert resolve_window("last week", "2025-02-26T12:00:00Z", None, NOW) == tw(
        "2025-02-26T12:00", "2025-03-03"
    )
    assert resolve_window("since 2024", None, "2024-06-30", NOW) == tw("2024-01-01", "2024-07-01")
    assert resolve_window(None, "2025-01-01", "2025-01-31", NOW) == tw("2025-01-01", "2025-02-01")
    assert resolve_window(None, None, "2025-01-31T10:00:00+01:00", NOW) == tw(None, "2025-01-31T09:00")
    assert resolve_window(None, "2025-01-01", None, NOW) == TimeWindow(at("2025-01-01"), None)


@pytest.mark.parametrize(
    ("time_query", "start", "end"),
    [
        (None, "2025-02-01", "2025-01-01"),
        (None, "2025-01-01T00:00:00Z", "2025-01-01T00:00:00Z"),
        ("last week", "2025-03-04", None),  # explicit start after the phrase's end
        (None, "not a date", None),
        (None, None, "9999-12-31"),
        ("whenever", None, None),
    ],
)
def test_resolve_window_errors(time_query: str | None, start: str | None, end: str | None) -> None:
    with pytest.raises(TimeQueryError):
        resolve_window(time_query, start, end, NOW)
