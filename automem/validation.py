"""The rules every memory, edge and vector obeys, in one place.

The API's request models (single and batch writes), the restore of an archive and the import
from AutoMem all apply these, so whatever one way in accepts the others accept too, and nothing
that one component of the service cannot hold gets in through another. Each rule raises
`ValueError` with a message fit for a 400 (the callers add the field).

- Text: no NUL (FalkorDB takes parameters as C strings) and no lone UTF-16 surrogate (no UTF-8
  form), in values and in keys; content must have a visible character (zero-width characters
  and whitespace alone are empty).
- Vectors: numbers only, finite, inside float32's range (both stores keep float32: a 1e308 would
  become infinity in the graph and NaN in the vector store), of the configured dimension.
- Times: ISO 8601, inside [MIN_TIME, MAX_TIME], a span every component handles (the sequence
  window adds a day on either side; Qdrant's datetime index and Python's datetime end at 9999).
  A validity interval ends after it starts.
- Tags: what by-tag and recall can look up: no comma (both split a tag list on commas), no
  control character, at least one segment.
- Numbers in metadata: finite, and integers inside the signed 64-bit range (larger ones would
  come back as floats).
- Graph property keys (archives): identifiers, so no key can break out of a Cypher map.
- Graph property floats (archives): at most 15 significant digits, as FalkorDB returns doubles
  (1000000000000001.0 would read back as 1000000000000000.0).
- Unit numbers (importance, confidence) and the listings' `rank`: 15 decimal places, the numbers
  both stores return exactly (see `as_unit_float`).
- Memory ids: UUIDs.
"""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np

from automem.tags import canonical_prefix
from automem.timeutil import format_utc, parse_iso

MIN_TIME = datetime(1000, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(9000, 12, 31, 23, 59, 59, tzinfo=UTC)
_NUMBER_TYPES = {float, int}
FLOAT32_MAX = 3.4028234663852886e38
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Characters that take no room: content made only of these and whitespace is empty.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"))
_PROPERTY_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_TAG_FORBIDDEN = re.compile(r"[,\x00-\x1f\x7f]")


def as_graph_float(value: Any) -> Any:
    """A float as the graph will return it (15 significant digits), so that what a write
    answers, what the vector store's payload holds and what a later read or a restore gives are
    the same number; other values pass."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.15g}")
    return value


# Qdrant Edge parses a payload number from its shortest decimal text and rounds twice when that
# text has more digits than a double holds exactly or an exponent beyond 22: about one value in
# five with 17 digits, or below 1e-20, reads back one unit in the last place off, and so differs
# from the graph's copy (and a restore of that copy from itself). A number in [0, 2) with 15
# decimal places has at most 16 digits (below 2**53) and the exponent -15, so Edge reads it
# exactly; the graph returns its 15 significant digits as they are.
UNIT_DECIMALS = 15


def as_unit_float(value: Any) -> Any:
    """A float in [0, 2) as every store returns it (15 decimal places; smaller parts are below
    any importance a client means); other values pass."""
    if isinstance(value, float) and math.isfinite(value):
        return round(value, UNIT_DECIMALS)
    return value


def check_graph_float(value: Any, what: str = "value") -> Any:
    """A float the graph returns as it was given (an archive must restore exactly what it
    holds); other values pass."""
    rounded = as_graph_float(value)  # the same object when it is no finite float
    if rounded is not value and rounded != value:
        raise ValueError(f"{what} holds {value!r}: more significant digits than the graph returns (15)")
    return value


# --- text -------------------------------------------------------------------------------------
def text_problem(text: str) -> str | None:
    """Why the stores cannot hold `text`, or None."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired UTF-16 surrogate"
    return None


def storable_problem(value: Any, path: str = "", numbers: bool = True) -> tuple[str, str] | None:
    """(path, problem) of the first string, key or (with `numbers`) number the stores cannot hold
    in a JSON value."""
    if isinstance(value, str):
        problem = text_problem(value)
        return (path, problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            # Escaped: the message must itself be text (a lone surrogate in a key would break it).
            shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
            where = f"{path}.{shown}" if path else shown
            problem = text_problem(str(key))
            if problem:
                return where, f"key {problem}"
            found = storable_problem(item, where, numbers)
            if found:
                return found
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found = storable_problem(item, f"{path}[{n}]", numbers)
            if found:
                return found
    elif not numbers:
        return None
    elif isinstance(value, float) and not math.isfinite(value):
        return path, "is not a finite number"
    elif isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return path, "is an integer outside the signed 64-bit range"
    return None


def check_storable(value: Any, what: str = "value") -> Any:
    found = storable_problem(value)
    if found:
        where, problem = found
        raise ValueError(f"{what}{'.' + where if where else ''} {problem}")
    return value


def visible(text: str) -> str:
    """`text` trimmed; empty when it holds nothing but whitespace and zero-width characters."""
    stripped = text.strip()
    return stripped if stripped.translate(_INVISIBLE).strip() else ""


# --- vectors ----------------------------------------------------------------------------------
def check_vector(values: Any, dimension: int | None = None) -> list[float]:
    """A list of finite float32-representable numbers (of `dimension` when given)."""
    if not isinstance(values, list) or not values:
        raise ValueError("must be a non-empty array of numbers")
    if not set(map(type, values)) <= _NUMBER_TYPES:  # bool is an int subclass, not a number here
        raise ValueError("must be an array of numbers")
    # One numpy pass: a batch of 200 client vectors is 77k numbers (44 -> 21 us a vector).
    # Integers beyond a float's range overflow the conversion: not finite either way.
    try:
        array = np.fromiter(values, dtype=np.float64, count=len(values))
    except OverflowError:
        array = np.array([math.inf])
    if not (np.isfinite(array).all() and float(np.abs(array).max()) <= FLOAT32_MAX):
        raise ValueError("must hold finite numbers within float32's range (|v| <= 3.4e38)")
    if dimension is not None and len(values) != dimension:
        raise ValueError(f"must contain exactly {dimension} values (got {len(values)})")
    floats: list[float] = array.tolist()
    return floats


# --- times ------------------------------------------------------------------------------------
def check_time(value: str) -> str:
    """An ISO 8601 time inside the supported span, in the stored form."""
    try:
        moment = parse_iso(value)
    except ValueError as exc:
        raise ValueError(f"not a valid ISO 8601 date-time: {value!r}") from exc
    if not MIN_TIME <= moment <= MAX_TIME:
        raise ValueError(f"{value!r} is outside the supported span {MIN_TIME.year}..{MAX_TIME.year}")
    return format_utc(moment)


def check_validity(t_valid: str | None, t_invalid: str | None) -> None:
    """Stored times (one format) compare as strings."""
    if t_valid and t_invalid and t_invalid <= t_valid:
        raise ValueError("t_invalid must be later than t_valid")


# --- tags, keys, ids ----------------------------------------------------------------------------
def check_tag(tag: str, max_length: int) -> str:
    if _TAG_FORBIDDEN.search(tag):
        raise ValueError(f"tag {tag!r} holds a comma or a control character (tags are split on commas)")
    problem = text_problem(tag)
    if problem:
        raise ValueError(f"a tag {problem}")
    if len(tag) > max_length:
        raise ValueError(f"a tag is longer than {max_length} characters")
    if not canonical_prefix(tag):
        raise ValueError(f"tag {tag!r} has no segment to look up (only separators)")
    return tag


def check_property_key(key: Any) -> str:
    if not isinstance(key, str) or not _PROPERTY_KEY.fullmatch(key):
        raise ValueError(f"property key {key!r} is not an identifier (letters, digits, underscores)")
    return key


def check_uuid(value: Any) -> str:
    """The canonical form of a UUID."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"{value!r} is not a UUID") from exc
