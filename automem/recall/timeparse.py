"""Recall time windows: a natural-language `time_query` (plus explicit start/end) -> UTC window.

Every window is half-open, `[start, end)`; either bound may be open (None). Calendar arithmetic
(midnights, Mondays, month starts) happens in the caller's `tz` (default UTC) and the result is
returned in UTC. Phrases are case-insensitive; extra whitespace, commas, ordinal suffixes ("5th")
and a leading "the" / "on" / "in" / "during" / "within" / "over" / "for" are ignored.

Supported phrases (N = digits or one..twelve; units minute/hour/day/week/month/year, singular,
plural or abbreviated: min, h, hr, d, w, wk, mo, y, yr):

* `today`, `yesterday`, `N days ago` -- that whole day.
* `this day|week|month|year` -- the calendar unit containing now (weeks start Monday).
* `last|previous <unit>` -- the previous calendar unit: "last week" is the Monday-to-Monday week
  before this one, "last month" the previous calendar month, "last day" is yesterday.
* `past <unit>` -- a rolling unit ending now: "past week" = 7 days, "past month" = one calendar
  month back (Mar 31 -> Feb 28/29), "past year" = one year back.
* `last|past N <unit>` -- always rolling and ending now, whatever the word: "last 1 month" is
  the rolling month, unlike "last month". Hours and minutes are always rolling.
* `monday`, `on monday`, `last monday` (names or abbreviations) -- the most recent such day
  strictly before today (1 to 7 days back), whole day.
* DATE -- `2024`, `2024-03`, `2024-03-05`, an ISO datetime, `March 2024`, `Mar 5 2024`,
  `5 March 2024`, `March`, `March 5`. A DATE covers its whole year / month / day; a DATE without
  a year is the most recent one that has started (in March, "in March" is this March; "April"
  is last April). Any other phrase above can also stand in for a DATE ("since last week").
* `since DATE` (from its start), `after DATE` (from its end: "after Jan 5" starts Jan 6),
  `before DATE` (up to its start), `on|in DATE` or a bare DATE (the whole of it).
* `between A and B`, `from A to|until|through B`, `A..B`, `A/B` -- from A's start to B's end, so
  the end day is included (as with an explicit date-only `end`).

Future-only phrases ("tomorrow", "next week") and parts of days ("this morning") are rejected:
`TimeQueryError` names the phrase and lists examples, so the client gets a 400 rather than an
unfiltered recall (AutoMem silently ignored phrases it did not understand).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from automem.timeutil import format_utc, parse_iso, utc_now

Bounds = tuple[datetime | None, datetime | None]
Span = tuple[datetime, datetime]  # both bounds known; start == end for a single instant

EXAMPLES = (
    "today",
    "last 7 days",
    "past week",
    "last month",
    "3 days ago",
    "last monday",
    "since 2024-01-01",
    "in March 2024",
    "between 2024-01-01 and 2024-01-31",
)
MAX_LENGTH = 200  # longer than any sensible phrase; keeps regex work bounded

NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"],
        start=1,
    )
}
UNITS = {
    **dict.fromkeys(("minute", "minutes", "min", "mins"), "minute"),
    **dict.fromkeys(("hour", "hours", "h", "hr", "hrs"), "hour"),
    **dict.fromkeys(("day", "days", "d"), "day"),
    **dict.fromkeys(("week", "weeks", "w", "wk", "wks"), "week"),
    **dict.fromkeys(("month", "months", "mo", "mos"), "month"),
    **dict.fromkeys(("year", "years", "y", "yr", "yrs"), "year"),
}
CALENDAR_UNITS = ("day", "week", "month", "year")
# English names are spelled out: calendar.month_name follows the process locale.
_MONTH_NAMES = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
MONTHS = {
    **{name: i for i, name in enumerate(_MONTH_NAMES, 1)},
    **{name[:3]: i for i, name in enumerate(_MONTH_NAMES, 1)},
    "sept": 9,
}
_DAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAYS = {
    **{name: i for i, name in enumerate(_DAY_NAMES)},
    **{name[:3]: i for i, name in enumerate(_DAY_NAMES)},
    "tues": 1,
    "thur": 3,
    "thurs": 3,
}

_WORD_NUMBER = "|".join(NUMBER_WORDS)
_RELATIVE = re.compile(
    rf"(?P<which>last|past|previous|this)\s+(?:(?P<digits>\d+)\s*|(?P<word>{_WORD_NUMBER})\s+)?"
    r"(?P<unit>[a-z]+)"
)
_AGO = re.compile(rf"(?:(?P<digits>\d+)|(?P<word>{_WORD_NUMBER}))\s+days?\s+ago")
_WEEKDAY = re.compile(r"(?:(?:last|past|previous)\s+)?(?P<day>[a-z]+)")
_PREFIX = re.compile(r"(?:(?:on|in|during|within|over|for)\s+)?(?:the\s+)?")
_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b")
_YEAR = re.compile(r"\d{4}")
_YEAR_MONTH = re.compile(r"(?P<year>\d{4})-(?P<month>\d{1,2})")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[t ]\d.*")
_MONTH_FIRST = re.compile(r"(?P<month>[a-z]+)\.?(?:\s+(?P<day>\d{1,2}))?(?:\s+(?P<year>\d{4}))?")
_DAY_FIRST = re.compile(r"(?P<day>\d{1,2})\s+(?:of\s+)?(?P<month>[a-z]+)\.?(?:\s+(?P<year>\d{4}))?")
_BETWEEN = re.compile(r"between\s+(.+?)\s+and\s+(.+)")
_FROM_TO = re.compile(r"from\s+(.+?)\s+(?:to|until|till|through)\s+(.+)")
_OPEN_ENDED = re.compile(r"(?P<op>since|after|before)\s+(?P<date>.+)")


@dataclass(frozen=True)
class TimeWindow:
    start: datetime | None  # inclusive, tz-aware UTC
    end: datetime | None  # exclusive, tz-aware UTC

    def as_iso(self) -> tuple[str | None, str | None]:
        return (format_utc(self.start) if self.start else None, format_utc(self.end) if self.end else None)


class TimeQueryError(ValueError):
    """A time window the client sent that we cannot honour; the message is fit for a 400."""

    def __init__(self, message: str, field: str = "time_query") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class _Clock:
    now: datetime  # aware, expressed in tz
    tz: tzinfo

    @property
    def today(self) -> date:
        return self.now.date()

    def midnight(self, day: date) -> datetime:
        # Built from wall-clock fields, so DST days correctly last 23 or 25 hours.
        return datetime(day.year, day.month, day.day, tzinfo=self.tz)

    def days(self, first: date, count: int = 1) -> Span:
        return self.midnight(first), self.midnight(first + timedelta(days=count))

    def month(self, year: int, month: int) -> Span:
        first = date(year, month, 1)
        return self.midnight(first), self.midnight(add_months(first, 1))

    def year(self, year: int) -> Span:
        return self.midnight(date(year, 1, 1)), self.midnight(date(year + 1, 1, 1))


def add_months(day: date, months: int) -> date:
    """`day` moved by whole calendar months, clamped to the target month's length."""
    year, month0 = divmod(day.year * 12 + day.month - 1 + months, 12)
    last = calendar.monthrange(year, month0 + 1)[1]
    return date(year, month0 + 1, min(day.day, last))


def parse_time_query(text: str, now: datetime | None = None, tz: tzinfo = UTC) -> TimeWindow:
    """Parse a natural-language window (see the module docstring); raises TimeQueryError."""
    phrase = _normalize(text)
    if not phrase:
        raise TimeQueryError(f"time_query is empty; {_hint()}")
    if len(phrase) > MAX_LENGTH:
        raise TimeQueryError(f"time_query is longer than {MAX_LENGTH} characters")
    moment = now or utc_now()
    clock = _Clock((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(tz), tz)
    quoted = repr(text.strip())
    try:
        bounds = _bounds(phrase, clock)
        window = _in_utc(bounds) if bounds else None
    except TimeQueryError as exc:  # a recognised shape with a bad value: say which phrase
        raise TimeQueryError(f"invalid time_query {quoted}: {exc}") from exc
    except (OverflowError, ValueError) as exc:  # date arithmetic ran past year 1 or 9999
        raise TimeQueryError(f"time_query {quoted} is out of range") from exc
    if window is None:
        raise TimeQueryError(f"unrecognized time_query {quoted}; {_hint()}")
    _check_order(quoted, window)
    return window


def _in_utc(bounds: Bounds) -> TimeWindow:
    start, end = (bound.astimezone(UTC) if bound else None for bound in bounds)
    return TimeWindow(start, end)


def _check_order(quoted: str, window: TimeWindow) -> None:
    start, end = window.start, window.end
    if start is None or end is None or start < end:
        return
    if start == end:
        raise TimeQueryError(
            f"time_query {quoted} names a single moment, not a window; "
            "use it with since/after/before, or give a date"
        )
    raise TimeQueryError(
        f"time_query {quoted} ends before it starts ({format_utc(start)} is not before {format_utc(end)})"
    )


def resolve_window(
    time_query: str | None, start: str | None, end: str | None, now: datetime | None = None
) -> TimeWindow | None:
    """The recall window: explicit ISO `start`/`end` override the matching time_query bound.

    Returns None when nothing was given. A date-only `end` includes that whole day.
    """
    query, low, high = ((value or "").strip() for value in (time_query, start, end))
    if not (query or low or high):
        return None
    base = parse_time_query(query, now) if query else TimeWindow(None, None)
    window = TimeWindow(
        _explicit("start", low) if low else base.start, _explicit("end", high) if high else base.end
    )
    if window.start is not None and window.end is not None and window.start >= window.end:
        first, last = window.as_iso()
        raise TimeQueryError(f"start ({first}) must be before end ({last})")
    return window


def _explicit(field: str, text: str) -> datetime:
    try:
        moment = parse_iso(text)
    except ValueError as exc:
        raise TimeQueryError(f"{field} must be an ISO 8601 date or timestamp, got {text!r}", field) from exc
    if field == "end" and _is_date_only(text):
        try:
            moment += timedelta(days=1)  # "end=2025-01-31" means through the end of that day
        except OverflowError as exc:
            raise TimeQueryError(f"end {text!r} is out of range", "end") from exc
    return moment


def _is_date_only(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _normalize(text: str) -> str:
    collapsed = " ".join(text.replace(",", " ").lower().split())
    return _ORDINAL.sub(r"\1", collapsed)


def _hint() -> str:
    return "try e.g. " + ", ".join(f'"{example}"' for example in EXAMPLES)


def _bounds(phrase: str, clock: _Clock) -> Bounds | None:
    """Range and open-ended operators around DATEs; anything else is a single span."""
    pair = _BETWEEN.fullmatch(phrase) or _FROM_TO.fullmatch(phrase)
    if pair:
        return _range(pair[1], pair[2], clock)
    for separator in ("..", "/"):  # ISO-style ranges; neither occurs inside a DATE
        if separator in phrase:
            first, _, last = phrase.partition(separator)
            return _range(first.strip(), last.strip(), clock)
    if match := _OPEN_ENDED.fullmatch(phrase):
        return _open_ended(match["op"], match["date"], clock)
    return _span(phrase, clock)


def _range(first: str, last: str, clock: _Clock) -> Bounds | None:
    low, high = _span(first, clock), _span(last, clock)
    if low is None or high is None:
        return None
    return low[0], high[1]  # through the end of `last`: "between Jan 1 and Jan 31" includes Jan 31


def _open_ended(op: str, phrase: str, clock: _Clock) -> Bounds | None:
    span = _span(phrase, clock)
    if span is None:
        return None
    if op == "since":
        return span[0], None
    if op == "after":
        return span[1], None  # after a day means once it is over
    return None, span[0]


def _span(phrase: str, clock: _Clock) -> Span | None:
    bare = _PREFIX.sub("", phrase, count=1)
    handlers: tuple[Callable[[str, _Clock], Span | None], ...] = (
        _named_day,
        _days_ago,
        _relative,
        _weekday,
        _date_span,
    )
    for handler in handlers:
        if (span := handler(bare, clock)) is not None:
            return span
    return None


def _named_day(phrase: str, clock: _Clock) -> Span | None:
    offsets = {"today": 0, "this day": 0, "yesterday": 1}
    if phrase not in offsets:
        return None
    return clock.days(clock.today - timedelta(days=offsets[phrase]))


def _count(match: re.Match[str]) -> int:
    count = int(match["digits"]) if match["digits"] else NUMBER_WORDS[match["word"]]
    if count < 1:
        raise TimeQueryError("a time_query count must be at least 1")
    return count


def _days_ago(phrase: str, clock: _Clock) -> Span | None:
    match = _AGO.fullmatch(phrase)
    return clock.days(clock.today - timedelta(days=_count(match))) if match else None


def _relative(phrase: str, clock: _Clock) -> Span | None:
    match = _RELATIVE.fullmatch(phrase)
    if match is None or match["unit"] not in UNITS:
        return None  # "last monday" falls through to _weekday
    which, unit = match["which"], UNITS[match["unit"]]
    counted = bool(match["digits"] or match["word"])
    if which == "this":
        return None if counted or unit not in CALENDAR_UNITS else _calendar_unit(clock, unit, 0)
    if counted:
        return _rolling(clock, unit, _count(match))
    if which == "past" or unit not in CALENDAR_UNITS:
        return _rolling(clock, unit, 1)
    return _calendar_unit(clock, unit, 1)


def _rolling(clock: _Clock, unit: str, count: int) -> Span:
    """`count` units back from now, ending now."""
    if unit in ("minute", "hour"):
        # Elapsed time, not wall-clock time: "last 2 hours" across a DST change is still 2 hours.
        start = clock.now.astimezone(UTC) - timedelta(**{f"{unit}s": count})
    elif unit in ("day", "week"):
        start = clock.now - timedelta(days=count * (7 if unit == "week" else 1))
    else:
        day = add_months(clock.today, -count * (12 if unit == "year" else 1))
        start = clock.now.replace(year=day.year, month=day.month, day=day.day)
    return start, clock.now


def _calendar_unit(clock: _Clock, unit: str, back: int) -> Span:
    """The calendar day/week/month/year `back` units before the one containing now."""
    today = clock.today
    if unit == "day":
        return clock.days(today - timedelta(days=back))
    if unit == "week":
        return clock.days(today - timedelta(days=today.weekday() + 7 * back), 7)
    if unit == "month":
        first = add_months(today.replace(day=1), -back)
        return clock.month(first.year, first.month)
    return clock.year(today.year - back)


def _weekday(phrase: str, clock: _Clock) -> Span | None:
    match = _WEEKDAY.fullmatch(phrase)
    if match is None or match["day"] not in WEEKDAYS:
        return None
    # Strictly in the past (1..7 days back): on a Monday, "monday" means a week ago.
    back = (clock.today.weekday() - WEEKDAYS[match["day"]] - 1) % 7 + 1
    return clock.days(clock.today - timedelta(days=back))


def _date_span(phrase: str, clock: _Clock) -> Span | None:
    if _YEAR.fullmatch(phrase):
        return clock.year(int(phrase))
    if match := _YEAR_MONTH.fullmatch(phrase):
        return clock.month(int(match["year"]), _month_number(int(match["month"]), phrase))
    if _ISO_DATE.fullmatch(phrase):
        return clock.days(_valid_date(*(int(part) for part in phrase.split("-"))))
    if _ISO_DATETIME.fullmatch(phrase):
        return _instant(phrase, clock)
    match = _MONTH_FIRST.fullmatch(phrase) or _DAY_FIRST.fullmatch(phrase)
    if match is None or match["month"] not in MONTHS:
        return None
    return _named_month_span(MONTHS[match["month"]], match["day"], match["year"], clock)


def _month_number(month: int, phrase: str) -> int:
    if not 1 <= month <= 12:
        raise TimeQueryError(f"{phrase!r} is not a valid month")
    return month


def _valid_date(year: int, month: int, day: int) -> date:
    try:
        return date(year, month, day)
    except ValueError as exc:
        raise TimeQueryError(f"{year:04d}-{month:02d}-{day:02d} is not a valid date") from exc


def _instant(phrase: str, clock: _Clock) -> Span:
    text = phrase.upper()
    text = text[:-1] + "+00:00" if text.endswith("Z") else text
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise TimeQueryError(f"{phrase!r} is not a valid ISO 8601 timestamp") from exc
    # A timestamp without an offset is read in the caller's zone, like every other phrase.
    moment = moment if moment.tzinfo else moment.replace(tzinfo=clock.tz)
    return moment, moment


def _named_month_span(month: int, day: str | None, year: str | None, clock: _Clock) -> Span:
    if day is None:
        if year is None:  # the most recent such month that has started
            return clock.month(clock.today.year - (month > clock.today.month), month)
        return clock.month(int(year), month)
    if year is not None:
        return clock.days(_valid_date(int(year), month, int(day)))
    return clock.days(_latest_day(month, int(day), clock.today))


def _latest_day(month: int, day: int, today: date) -> date:
    """The most recent month/day on or before today (Feb 29 looks back to a leap year)."""
    for year in range(today.year, today.year - 9, -1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate <= today:
            return candidate
    raise TimeQueryError(f"{_MONTH_NAMES[month - 1].title()} {day} is not a valid date")
