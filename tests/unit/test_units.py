"""Pure functions: classification and time parsing."""

from __future__ import annotations

import pytest

from automem.classify import canonical_type, classify
from automem.timeutil import normalize_iso


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We decided to go with Postgres and chose it over Mongo", "Decision"),
        ("I prefer dark mode instead of light themes", "Preference"),
        ("Turns out the root cause was a missing index; I realized it late", "Insight"),
        ("Every morning I review the on-call dashboard, it is my routine", "Habit"),
        ("Builds usually fail on Mondays; a recurring pattern", "Pattern"),
        ("Use snake_case naming convention in Python", "Style"),
    ],
)
def test_regex_classifier(text: str, expected: str) -> None:
    result = classify(text)
    assert result.type == expected and result.method == "regex" and 0.5 < result.confidence <= 0.95


def test_classifier_default_and_word_boundaries() -> None:
    assert classify("whenever").type == "Pattern"
    assert classify("The weather is mild").type == "Context"
    assert classify("The weather is mild").confidence == 0.3
    assert classify("unpicked apples").method == "default"  # `picked` needs a word boundary


def test_canonical_type() -> None:
    assert canonical_type("decision") == "Decision" and canonical_type(" INSIGHT ") == "Insight"
    assert canonical_type("Memory") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2025-01-02T03:04:05Z", "2025-01-02T03:04:05.000000+00:00"),
        ("2025-01-02T03:04:05", "2025-01-02T03:04:05.000000+00:00"),
        ("2025-01-02", "2025-01-02T00:00:00.000000+00:00"),
        ("2025-01-02T05:04:05.123+02:00", "2025-01-02T03:04:05.123000+00:00"),
    ],
)
def test_timestamps_normalise_to_uniform_utc(raw: str, expected: str) -> None:
    assert normalize_iso(raw) == expected


@pytest.mark.parametrize("raw", ["", "tomorrow", "2025-13-01", "01/02/2025"])
def test_bad_timestamps(raw: str) -> None:
    with pytest.raises(ValueError):
        normalize_iso(raw)
