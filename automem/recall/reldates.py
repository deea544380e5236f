"""Relative dates in a memory's words, resolved against the memory's own time.

"We went camping last weekend" stored on 2023-05-08 is about the weekend of 6 May 2023; a
question about May 2023, or about that weekend, should match it even though its words name no
date. Enrichment finds the relative phrases below, resolves each against the memory's
`timestamp` (the time it speaks from, not the time it was stored) and keeps them in
`metadata.enrichment.dates` as `{text, start, end, label}` (dates half-open, `label` in words); the keyword
index then holds the labels beside the content. The content itself is never changed.

Phrases (case-insensitive; N = digits or one..twelve, "a"/"an" = 1):

- `today`, `tonight`, `this morning|afternoon|evening` -> that day; `yesterday`, `last night`
  -> the day before; `tomorrow` -> the day after;
- `last|previous week|month|year|weekend`, `the past weekend` -> the calendar unit before the memory's;
  `this week|month|year|weekend` -> the memory's own; `next ...` -> the one after;
- `last|this past <weekday>` -> the latest such day before the memory's day; `next <weekday>`
  -> the first one after it;
- `N days|weeks|months|years ago` -> that day, or the calendar unit containing it;
  `N weekends ago` -> that weekend; `in N days|weeks` -> ahead.

Weeks start on Monday; a weekend is its Saturday and Sunday.

The same phrases in a recall query (`query_time`) name when what it asks about happened: "which
bike did I service last weekend?" asked on 2023-03-21 is about 18-19 March 2023. Only past or
present phrases count there (a question is about what was said before it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from automem.recall.timeparse import MONTHS, NUMBER_WORDS, WEEKDAYS, add_months
from automem.record import enrichment_dates
from automem.timeutil import parse_iso

MAX_DATES = 8  # a memory naming more relative times than this is a log, not a story

_NUMBER = rf"(?P<n>\d{{1,3}}|{'|'.join(NUMBER_WORDS)}|a|an)"
_WEEKDAY = "|".join(sorted((d for d in WEEKDAYS if len(d) > 3), key=len, reverse=True))
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rf"\b(?:{pattern})\b", re.I))
    for kind, pattern in (
        ("day", r"(?P<day>today|tonight|this (?:morning|afternoon|evening)|yesterday|last night|tomorrow)"),
        ("ago", rf"{_NUMBER} (?P<unit>day|week|weekend|month|year)s? ago"),
        ("ahead", rf"in {_NUMBER} (?P<unit>day|week|month|year)s?"),
        ("weekday", rf"(?P<which>last|this past|next) (?P<weekday>{_WEEKDAY})"),
        ("unit", r"(?P<which>last|previous|this past|this|next) (?P<unit>week|weekend|month|year)"),
        # "The past week" is a rolling week (as in time_query); the past weekend is the last one.
        ("past_weekend", r"(?:the )?past weekend"),
    )
)
_DAY_OFFSETS = {"today": 0, "tonight": 0, "yesterday": -1, "last night": -1, "tomorrow": 1}
_STEP = {"last": -1, "previous": -1, "this past": -1, "this": 0, "next": 1}


@dataclass(frozen=True)
class Resolved:
    text: str
    start: date
    end: date  # exclusive
    label: str

    def as_metadata(self) -> dict[str, str]:
        return {
            "text": self.text,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "label": self.label,
        }


def relative_dates(content: str, timestamp: str | None) -> list[Resolved]:
    """The relative time phrases of `content` resolved against `timestamp`, in text order, each
    distinct phrase once; [] without a usable timestamp."""
    try:
        today = parse_iso(str(timestamp)).date()
    except ValueError:
        return []
    found: dict[int, Resolved] = {}
    taken: list[range] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(content):
            phrase = " ".join(match.group(0).lower().split())
            if any(match.start() in span or match.end() - 1 in span for span in taken):
                continue
            taken.append(range(match.start(), match.end()))
            found[match.start()] = Resolved(phrase, *_RESOLVERS[kind](match, today))
    distinct: dict[str, Resolved] = {}
    for start in sorted(found):
        distinct.setdefault(found[start].text, found[start])
    return list(distinct.values())[:MAX_DATES]


def _count(match: re.Match[str]) -> int:
    word = match["n"].lower()
    if word in ("a", "an"):
        return 1
    return NUMBER_WORDS.get(word) or int(word)


def _day(match: re.Match[str], today: date) -> tuple[date, date, str]:
    word = " ".join(match["day"].lower().split())
    return _one_day(today + timedelta(days=_DAY_OFFSETS.get(word, 0)))


def _ago(match: re.Match[str], today: date) -> tuple[date, date, str]:
    return _unit_around(match["unit"].lower(), today, -_count(match))


def _ahead(match: re.Match[str], today: date) -> tuple[date, date, str]:
    return _unit_around(match["unit"].lower(), today, _count(match))


def _weekday(match: re.Match[str], today: date) -> tuple[date, date, str]:
    target = WEEKDAYS[match["weekday"].lower()]
    if match["which"].lower() == "next":
        return _one_day(today + timedelta(days=(target - today.weekday() - 1) % 7 + 1))
    return _one_day(today - timedelta(days=(today.weekday() - target - 1) % 7 + 1))


def _unit(match: re.Match[str], today: date) -> tuple[date, date, str]:
    step = _STEP[" ".join(match["which"].lower().split())]
    return _unit_around(match["unit"].lower(), today, step)


def _unit_around(unit: str, today: date, count: int) -> tuple[date, date, str]:
    """The calendar unit `count` units from `today` (negative: back)."""
    if unit == "day":
        return _one_day(today + timedelta(days=count))
    if unit == "week":
        return _week(today - timedelta(days=today.weekday()) + timedelta(weeks=count))
    if unit == "weekend":
        return _weekend(today, count)
    if unit == "month":
        first = add_months(today.replace(day=1), count)
        return first, add_months(first, 1), f"{_month_name(first.month)} {first.year}"
    return date(today.year + count, 1, 1), date(today.year + count + 1, 1, 1), str(today.year + count)


def _weekend(today: date, step: int) -> tuple[date, date, str]:
    """The weekend `step` weekends from the memory's: "last weekend" said on a Monday or on a
    Saturday is the one before the current week's."""
    saturday = today - timedelta(days=today.weekday()) + timedelta(days=5) + timedelta(weeks=step)
    return saturday, saturday + timedelta(days=2), f"weekend of {_words(saturday)}"


def _week(monday: date) -> tuple[date, date, str]:
    return monday, monday + timedelta(days=7), f"week of {_words(monday)}"


def _one_day(day: date) -> tuple[date, date, str]:
    return day, day + timedelta(days=1), _words(day)


def _words(day: date) -> str:
    return f"{day.day} {_month_name(day.month)} {day.year}"


def _month_name(month: int) -> str:
    return max((name for name, number in MONTHS.items() if number == month), key=len).title()


def _past_weekend(match: re.Match[str], today: date) -> tuple[date, date, str]:
    return _weekend(today, -1)


_RESOLVERS = {
    "day": _day,
    "ago": _ago,
    "ahead": _ahead,
    "weekday": _weekday,
    "unit": _unit,
    "past_weekend": _past_weekend,
}


def query_time(question: str, asked_at: str) -> Resolved | None:
    """The first past or present relative time `question` names, resolved against the moment it
    is asked (ISO 8601; days are UTC days, as memory timestamps are compared); None when it
    names none (future phrases such as "next week" are not counted)."""
    today = parse_iso(asked_at).date()
    return next((found for found in relative_dates(question, asked_at) if found.start <= today), None)


def content_spans(metadata: Mapping[str, Any]) -> list[tuple[date, date]]:
    """The [start, end) dates enrichment resolved in a memory's words (`metadata.enrichment.dates`)."""
    spans: list[tuple[date, date]] = []
    for item in enrichment_dates(metadata):
        try:
            spans.append((date.fromisoformat(item["start"]), date.fromisoformat(item["end"])))
        except (KeyError, TypeError, ValueError):
            continue  # a hand-edited or foreign entry: not evidence of a time
    return spans
