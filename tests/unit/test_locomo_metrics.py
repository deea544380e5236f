"""Pure functions of the LoCoMo benchmark (scripts/bench/locomo.py); no service is started."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from scripts.bench.common import category_words
from scripts.bench.locomo import (
    OVERALL,
    Answer,
    Question,
    aggregate,
    build_content,
    build_memory,
    chunk_items,
    command_line,
    embedding_state,
    extract_questions,
    extract_turns,
    load_conversation,
    map_stored,
    memory_tags,
    miss_record,
    parse_evidence,
    parse_locomo_datetime,
    percentile,
    question_metrics,
    session_numbers,
    shared_ids,
    speaker_tag,
)

KS = [5, 10]


def sample() -> dict[str, Any]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann Lee",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann Lee", "dia_id": "D1:1", "text": "Hi Bob!"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Look.", "blip_caption": "a photo of a dog"},
            ],
            "session_2_date_time": "12:05 am on 1 February, 2024",
            "session_2": [
                {"speaker": "Ann Lee", "dia_id": "D2:1", "text": "Hi Bob!"},  # same content as D1:1
                {"speaker": "Bob", "dia_id": "D2:2", "text": "  I moved to Paris.  "},
            ],
            "session_10_date_time": "9:00 am on 3 March, 2024",
            "session_10": [{"speaker": "Bob", "dia_id": "D10:1", "text": "Back home."}],
            "session_11_date_time": "10:00 am on 4 March, 2024",  # a date without a session
        },
        "qa": [
            {"question": "q0", "answer": "a", "evidence": ["D1:1"], "category": 4},
            {"question": "q1", "answer": "a", "evidence": ["D1:2; D2:2"], "category": 1},
            {"question": "q2", "answer": "a", "evidence": ["D9:9"], "category": 2},
            {"question": "q3", "answer": "a", "evidence": [], "category": 3},
            {"question": "q4", "adversarial_answer": "x", "evidence": [" D10:1 ", "D"], "category": 5},
        ],
    }


# --- dates --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:48 am on 1 February, 2023", datetime(2023, 2, 1, 0, 48, tzinfo=UTC)),
        ("12:05 pm on 1 February, 2023", datetime(2023, 2, 1, 12, 5, tzinfo=UTC)),
        ("11:01 am on 17 December, 2022", datetime(2022, 12, 17, 11, 1, tzinfo=UTC)),
        ("  7:31 PM on 21 january 2022 ", datetime(2022, 1, 21, 19, 31, tzinfo=UTC)),
        ("7 p.m. on 3rd Sept, 2022", datetime(2022, 9, 3, 19, 0, tzinfo=UTC)),
        ("10:00am on 4 Mar, 2024", datetime(2024, 3, 4, 10, 0, tzinfo=UTC)),
        ("2023-05-08T13:56:00Z", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    ],
)
def test_parse_locomo_datetime(text: str, expected: datetime) -> None:
    assert parse_locomo_datetime(text) == expected


@pytest.mark.parametrize(
    "text", ["", "noon on 8 May, 2023", "13:10 pm on 8 May, 2023", "1:56 pm on 8 Mai, 2023"]
)
def test_parse_locomo_datetime_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_locomo_datetime(text)


# --- turns and memories -------------------------------------------------------------------------


def test_build_content() -> None:
    assert build_content("Caroline", "Hey Mel!") == "Caroline: Hey Mel!"
    assert (
        build_content("Mel", "Look. ", "a photo of a lake") == "Mel: Look. [shares image: a photo of a lake]"
    )
    assert build_content("Mel", "Look.", "  ") == "Mel: Look."


def test_speaker_tag() -> None:
    assert speaker_tag("Caroline") == "speaker:caroline"
    assert speaker_tag("Ann  Lee ") == "speaker:ann-lee"


def test_session_numbers_ignore_dates_without_sessions() -> None:
    assert session_numbers(sample()["conversation"]) == [1, 2, 10]


def test_extract_turns_and_memory() -> None:
    turns, notes = extract_turns(sample())
    assert notes == []
    assert [t.dia_id for t in turns] == ["D1:1", "D1:2", "D2:1", "D2:2", "D10:1"]
    bob = turns[1]
    assert bob.content == "Bob: Look. [shares image: a photo of a dog]"
    assert turns[3].content == "Bob: I moved to Paris."
    assert turns[2].timestamp == "2024-02-01T00:05:00+00:00"
    memory = build_memory(turns[0])
    assert memory == {
        "content": "Ann Lee: Hi Bob!",
        "tags": ["locomo", "locomo:conv-x", "locomo:conv-x:session_1", "speaker:ann-lee"],
        "timestamp": "2023-05-08T13:56:00+00:00",
        "type": "Context",
        "importance": 0.5,
        "metadata": {"sample_id": "conv-x", "dia_id": "D1:1", "session": 1, "speaker": "Ann Lee"},
    }
    assert memory_tags(turns[4])[2] == "locomo:conv-x:session_10"


def test_unparsable_session_date_is_noted_and_omitted() -> None:
    data = sample()
    data["conversation"]["session_2_date_time"] = "sometime"
    turns, notes = extract_turns(data)
    assert turns[2].timestamp is None and "timestamp" not in build_memory(turns[2])
    assert len(notes) == 1 and "session_2" in notes[0]


def test_chunk_items_respects_count_and_bytes() -> None:
    items = [{"content": "x" * 100} for _ in range(1200)]
    chunks = chunk_items(items, max_items=500)
    assert [len(c) for c in chunks] == [500, 500, 200]
    small = chunk_items(items, max_items=500, max_bytes=5_000)
    assert all(len(json.dumps({"memories": c})) < 5_000 for c in small)
    assert sum(len(c) for c in small) == 1200


# --- evidence and questions ---------------------------------------------------------------------


def test_parse_evidence() -> None:
    known = {"D1:1", "D1:2", "D8:6", "D9:17", "D11:26"}
    assert parse_evidence(["D8:6; D9:17"], known) == (["D8:6", "D9:17"], [])
    assert parse_evidence([" D1:1 ", "D1:2,D1:1"], known) == (["D1:1", "D1:2"], [])
    assert parse_evidence(["D1:1", "D", "D:11:26", "D10:19", ""], known) == (
        ["D1:1"],
        ["D", "D:11:26", "D10:19"],
    )
    assert parse_evidence("D1:2", known) == (["D1:2"], [])
    assert parse_evidence(None, known) == ([], [])


def test_extract_questions_skips_questions_without_existing_evidence() -> None:
    turns, _ = extract_turns(sample())
    questions, skipped = extract_questions(sample(), {t.dia_id for t in turns})
    assert [q.question for q in questions] == ["q0", "q1", "q4"]
    assert questions[1].evidence == ["D1:2", "D2:2"]
    assert questions[2].evidence == ["D10:1"] and questions[2].ignored_evidence == ["D"]
    assert questions[2].answer == "x"  # adversarial questions carry adversarial_answer
    assert [(s["question"], s["category"]) for s in skipped] == [("q2", 2), ("q3", 3)]
    assert skipped[0]["ignored"] == ["D9:9"]


def test_load_conversation_notes_ignored_ids() -> None:
    conv = load_conversation(sample())
    assert len(conv.questions) == 3 and len(conv.skipped) == 2
    assert any("ignored evidence ['D']" in n for n in conv.notes)


# --- metrics ------------------------------------------------------------------------------------


MAPPING = {"D1:1": "m1", "D1:2": "m2", "D2:1": "m1", "D2:2": "m4", "D10:1": "m5"}


def test_metrics_all_found() -> None:
    m = question_metrics(["D1:2", "D2:2"], MAPPING, ["m2", "x", "m4"], KS)
    assert m == {
        "all@5": 1.0,
        "any@5": 1.0,
        "frac@5": 1.0,
        "all@10": 1.0,
        "any@10": 1.0,
        "frac@10": 1.0,
        "mrr": 1.0,
    }


def test_metrics_partial_and_cutoff() -> None:
    retrieved = ["a", "b", "c", "m2", "d", "e", "m4", "f", "g", "h"]
    m = question_metrics(["D1:2", "D2:2"], MAPPING, retrieved, KS)
    assert (m["all@5"], m["any@5"], m["frac@5"]) == (0.0, 1.0, 0.5)
    assert (m["all@10"], m["any@10"], m["frac@10"]) == (1.0, 1.0, 1.0)
    assert m["mrr"] == pytest.approx(1 / 4)


def test_metrics_none_found() -> None:
    m = question_metrics(["D10:1"], MAPPING, ["a", "b"], KS)
    assert all(v == 0.0 for v in m.values())


def test_mrr_uses_first_evidence_turn_found() -> None:
    m = question_metrics(["D10:1", "D2:2"], MAPPING, ["a", "m4", "m5"], KS)
    assert m["mrr"] == pytest.approx(1 / 2)


def test_repeated_ids_do_not_take_ranks() -> None:
    m = question_metrics(["D2:2"], MAPPING, ["a", "a", "a", "b", "b", "m4"], [3])
    assert m["all@3"] == 1.0 and m["mrr"] == pytest.approx(1 / 3)


def test_duplicate_content_turns_share_a_memory() -> None:
    # D1:1 and D2:1 hold the same content, stored once as m1: retrieving m1 finds both turns.
    m = question_metrics(["D1:1", "D2:1"], MAPPING, ["m1"], KS)
    assert (m["all@5"], m["frac@5"], m["mrr"]) == (1.0, 1.0, 1.0)
    m = question_metrics(["D1:1", "D2:1", "D2:2"], MAPPING, ["x", "m1"], KS)
    assert m["frac@5"] == pytest.approx(2 / 3) and m["all@5"] == 0.0 and m["mrr"] == 0.5


def test_unmapped_turn_is_never_found() -> None:
    m = question_metrics(["D1:1", "D7:7"], MAPPING, ["m1"], KS)
    assert (m["all@5"], m["any@5"], m["frac@5"]) == (0.0, 1.0, 0.5)


def test_question_without_evidence_is_not_scored() -> None:
    with pytest.raises(ValueError):
        question_metrics([], MAPPING, ["m1"], KS)


def test_aggregate_per_category_overall_and_adversarial_apart() -> None:
    def row(v: float) -> dict[str, float]:
        return {f"{m}@{k}": v for k in KS for m in ("all", "any", "frac")} | {"mrr": v}

    scored = [(1, row(1.0)), (1, row(0.0)), (4, row(1.0)), (5, row(0.0)), (5, row(0.0))]
    out = aggregate(scored, KS)
    assert list(out) == ["1", "2", "3", "4", OVERALL, "5"]
    assert out["1"]["n"] == 2 and out["1"]["all@5"] == 0.5 and out["1"]["name"] == "multi-hop"
    assert out["2"]["n"] == 0 and out["2"]["mrr"] == 0.0
    assert out[OVERALL]["n"] == 3 and out[OVERALL]["frac@10"] == pytest.approx(2 / 3)
    assert out["5"]["n"] == 2 and out["5"]["any@10"] == 0.0  # adversarial does not enter 1-4


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([3.0], 0.99) == 3.0
    assert math.isnan(percentile([], 0.5))


# --- ingest helpers -----------------------------------------------------------------------------


def test_map_stored_by_content() -> None:
    turns, _ = extract_turns(sample())
    stored = {
        "Ann Lee: Hi Bob!": "m1",
        "Bob: Look. [shares image: a photo of a dog]": "m2",
        "Bob: I moved to Paris.": "m4",
        "Bob: Back home.": "m5",
    }
    assert map_stored(turns, stored) == MAPPING
    del stored["Bob: Back home."]
    assert map_stored(turns, stored) is None


def test_shared_ids_across_conversations() -> None:
    assert shared_ids({"a": {"D1:1": "m1", "D1:2": "m2"}, "b": {"D1:1": "m1"}}) == {"m1": ["a", "b"]}
    assert shared_ids({"a": {"D1:1": "m1", "D2:1": "m1"}}) == {}


def test_embedding_state() -> None:
    assert embedding_state({"counts": {"embedding_pending": 3}, "drift": {"difference": 1}}) == (3, 1)
    assert embedding_state({"counts": None, "drift": None}) == (None, None)


def test_miss_record() -> None:
    conv = load_conversation(sample())
    question = Question("conv-x", 1, "q1", "a", 1, ["D1:2", "D2:2"])
    results = [
        {"id": "m2", "memory": {"content": "Bob: Look."}, "score": 0.9, "match_type": "hybrid"},
        {"id": "m1", "memory": {"content": "Ann Lee: Hi Bob!"}, "score": 0.5},
    ]
    answer = Answer(question, ["m2", "m1"], results, 1.0, {})
    record = miss_record(answer, conv, MAPPING, 10)
    assert record is not None
    assert [(e["dia_id"], e["rank"]) for e in record["evidence"]] == [("D1:2", 1), ("D2:2", None)]
    assert record["top_k"][0]["evidence"] is True and record["top_k"][1]["dia_ids"] == ["D1:1", "D2:1"]
    hit = Answer(question, ["m4", "m2"], results, 1.0, {})
    assert miss_record(hit, conv, MAPPING, 10) is None


def test_command_line_masks_token() -> None:
    assert command_line(["--url", "http://h", "--token", "secret", "--k", "5,10"]) == (
        "python scripts/bench/locomo.py --url http://h --token '***' --k 5,10"
    )
    assert "secret" not in command_line(["--token=secret"])


def test_the_report_says_whether_category_words_were_on(tmp_path: Path) -> None:
    """A run without WordNet finds less than the committed figures (which had it): its report
    says so rather than passing for a run of the same service."""
    assert category_words({"WORDNET_DIR": str(tmp_path)}) == f"off (no WordNet at {str(tmp_path)!r})"
    assert category_words({}) == "on"  # the default WORDNET_DIR, where CI installs wordnet-base
