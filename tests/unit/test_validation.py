"""The rules every way in applies (automem.validation), and the request models that apply them:
what the service took before and could not hold afterwards is now a 400 naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from automem.errors import InvalidInput
from automem.models import MemoryCreate, MemoryUpdate, parse
from automem.settings import Settings
from automem.validation import (
    FLOAT32_MAX,
    check_property_key,
    check_storable,
    check_tag,
    check_time,
    check_uuid,
    check_validity,
    check_vector,
    visible,
)

SETTINGS = Settings()


def refused(model: Any, body: dict[str, Any]) -> str:
    with pytest.raises(InvalidInput) as caught:
        parse(model, body, SETTINGS)
    assert caught.value.field
    return str(caught.value.field)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "embedding": [1e308] * 3}, "embedding"),  # float32 overflow (issue 17)
        ({"content": "x", "embedding": [float("nan")]}, "embedding"),
        ({"content": "\u200b\u200b \u200d"}, "content"),  # zero-width spaces alone
        ({"content": "x", "timestamp": "9999-12-31T00:00:00Z"}, "timestamp"),
        ({"content": "x", "timestamp": "0001-01-01T00:00:00Z"}, "timestamp"),
        (
            {"content": "x", "t_valid": "2025-02-01T00:00:00Z", "t_invalid": "2025-01-01T00:00:00Z"},
            "t_invalid",
        ),
        (
            {"content": "x", "timestamp": "2025-02-01T00:00:00Z", "t_invalid": "2025-02-01T00:00:00Z"},
            "t_invalid",
        ),
        ({"content": "x", "metadata": {"n": 2**64 + 1}}, "metadata"),
        ({"content": "x", "metadata": {"n": float("inf")}}, "metadata"),
        ({"content": "x", "tags": ["a,b"]}, "tags"),
        ({"content": "x", "tags": [":/:"]}, "tags"),
        ({"content": "x", "tags": ["tab\there"]}, "tags"),
    ],
)
def test_what_could_not_be_held_is_refused_at_the_door(body: dict[str, Any], field: str) -> None:
    assert refused(MemoryCreate, body) == field


def test_an_update_checks_the_interval_it_is_given() -> None:
    body = {"t_valid": "2025-02-01T00:00:00Z", "t_invalid": "2025-01-01T00:00:00Z"}
    assert refused(MemoryUpdate, body) == "t_invalid"
    assert parse(
        MemoryUpdate, {"t_invalid": "2020-01-01T00:00:00Z"}, SETTINGS
    ).t_invalid  # stored t_valid: the service


def test_what_fits_is_kept_as_given() -> None:
    body = parse(
        MemoryCreate,
        {
            "content": "  ok \u200b ",
            "embedding": [FLOAT32_MAX, -1, 0.5],
            "timestamp": "1066-10-14T09:00:00Z",
            "metadata": {"n": 2**63 - 1, "f": 1.5},
            "tags": "a:b, c/d",
        },
        SETTINGS,
    )
    assert body.content == "ok \u200b" and body.embedding == [FLOAT32_MAX, -1.0, 0.5]
    assert body.timestamp == "1066-10-14T09:00:00.000000+00:00" and body.tags == ["a:b", "c/d"]


def test_vectors() -> None:
    assert check_vector([1, 2.5], 2) == [1.0, 2.5]
    for bad in ([], [True], ["1"], [3.5e38], [float("-inf")]):
        with pytest.raises(ValueError):
            check_vector(bad)
    with pytest.raises(ValueError, match="exactly 3 values"):
        check_vector([1.0, 2.0], 3)


def test_times_and_intervals() -> None:
    assert check_time("2025-01-31") == "2025-01-31T00:00:00.000000+00:00"
    for bad in ("9001-01-01", "0999-12-31", "soon"):
        with pytest.raises(ValueError):
            check_time(bad)
    check_validity("2025-01-01T00:00:00.000000+00:00", None)
    with pytest.raises(ValueError):
        check_validity("2025-01-01T00:00:00.000000+00:00", "2025-01-01T00:00:00.000000+00:00")


def test_keys_tags_ids_and_text() -> None:
    assert check_property_key("created_at") == "created_at"
    for bad in ("a`b", "1a", "", "a b", "a-b", 7):
        with pytest.raises(ValueError):
            check_property_key(bad)
    assert check_tag("slack:channel:general", 100)
    assert check_uuid("6F1C2A4E-0000-4000-8000-000000000001") == "6f1c2a4e-0000-4000-8000-000000000001"
    with pytest.raises(ValueError):
        check_uuid("../../etc/passwd")
    for bad in ({"k": "a\x00"}, {"k\ud800": 1}, ["\ud800"]):
        with pytest.raises(ValueError):
            check_storable(bad)
    assert visible("\u200b \u2060") == "" and visible(" a\u200b ") == "a\u200b"


@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_whatever_passes_survives_a_json_round_trip(value: Any) -> None:
    """What check_storable lets through is what JSON text (metadata) and the stores carry back
    unchanged."""
    try:
        check_storable(value)
    except ValueError:
        return
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    assert json.loads(text) == value
    text.encode("utf-8")


def test_integers_beyond_64_bits_reach_validation_as_sent() -> None:
    """orjson would read 2**70 as a float; the body reader keeps it exact, so the model refuses it."""
    from automem.jsonio import loads

    body = loads(b'{"content": "x", "metadata": {"n": 1180591620717411303424, "s": "12345678901234567890"}}')
    assert body["metadata"]["n"] == 2**70 and isinstance(body["metadata"]["n"], int)
    assert refused(MemoryCreate, body) == "metadata"
    with pytest.raises(ValueError):
        loads(b'{"n": 12345678901234567890123, "x": NaN}')
    assert loads(b'{"n": 1.5}') == {"n": 1.5}


def test_answers_holding_integers_beyond_64_bits_are_written_exactly() -> None:
    """orjson refuses them; an echoed query limit of 2**100 answered 500 (found by `make fuzz`)."""
    from automem.jsonio import dumps

    assert dumps({"limit": 2**100, "é": [1.5, None, {1: True}]}) == (
        '{"limit":1267650600228229401496703205376,"é":[1.5,null,{"1":true}]}'.encode()
    )
    assert dumps({"n": 2**63 - 1, "é": 0.1}) == '{"n":9223372036854775807,"é":0.1}'.encode()


def test_a_key_with_a_lone_surrogate_is_a_400_not_a_crash() -> None:
    """Found by the restore property test: the error message quoted the key and could not be built."""
    assert refused(MemoryCreate, {"content": "x", "metadata": {"\ud800": None}}) == "metadata"
    assert refused(MemoryCreate, {"content": "x", "metadata": {"ok": {"\udfff\x00": 1}}}) == "metadata"
