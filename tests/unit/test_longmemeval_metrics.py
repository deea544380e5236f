"""Pure functions of the LongMemEval benchmark (scripts/bench/longmemeval.py); no service is started."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from scripts.bench.longmemeval import (
    OVERALL,
    TURN_SECONDS,
    Haystack,
    LmeAnswer,
    Scored,
    aggregate,
    answer_memories,
    build_content,
    build_memory,
    evaluate_targets,
    load_haystack,
    map_stored,
    memory_sessions,
    memory_tags,
    miss_record,
    parse_lme_date,
    rank_sessions,
    render_markdown,
    score,
    select_questions,
    session_metrics,
    tenant_name,
    turn_metrics,
)


def raw_question(**overrides: Any) -> dict[str, Any]:
    question = {
        "question_id": "q1",
        "question_type": "multi-session",
        "question": "How many dogs?",
        "question_date": "2023/05/30 (Tue) 18:40",
        "answer": "2",
        "answer_session_ids": ["ev_a", "ev_b"],
        "haystack_session_ids": ["s0", "ev_a", "s2", "ev_b"],
        "haystack_dates": [
            "2023/05/20 (Sat) 02:21",
            "2023/05/21 (Sun) 10:00",
            "2023/05/22 (Mon) 11:00",
            "2023/05/23 (Tue) 23:59",
        ],
        "haystack_sessions": [
            [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": " Hi there. "}],
            [
                {"role": "user", "content": "I have a dog.", "has_answer": True},
                {"role": "assistant", "content": "Nice!", "has_answer": False},
            ],
            [{"role": "user", "content": "Hello"}],  # same content as s0's first turn
            [{"role": "user", "content": "I got a second dog.", "has_answer": True}],
        ],
    }
    question.update(overrides)
    return question


def haystack() -> Haystack:
    return load_haystack(raw_question())


# turn key "<session index>:<turn index>" -> memory id, as /memory/batch would answer (the
# repeated "user: Hello" maps to the first one's memory)
MAPPING = {
    "0:0": "m-hello",
    "0:1": "m-hi",
    "1:0": "m-dog",
    "1:1": "m-nice",
    "2:0": "m-hello",
    "3:0": "m-dog2",
}


# --- data ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2023/12/31 (Sun) 23:59", datetime(2023, 12, 31, 23, 59, tzinfo=UTC)),
        (" 2023/5/2 (Tue) 7:05 ", datetime(2023, 5, 2, 7, 5, tzinfo=UTC)),
        ("2023/05/20 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
    ],
)
def test_parse_lme_date(text: str, expected: datetime) -> None:
    assert parse_lme_date(text) == expected


@pytest.mark.parametrize("text", ["", "2023-05-20 02:21", "2023/13/01 (Sat) 02:21", "2023/05/20 (Sat) 25:00"])
def test_parse_lme_date_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_lme_date(text)


def test_load_haystack_turns_keep_order_and_timestamps() -> None:
    hay = haystack()
    assert [t.key for t in hay.turns] == ["0:0", "0:1", "1:0", "1:1", "2:0", "3:0"]
    assert [t.session_id for t in hay.turns] == ["s0", "s0", "ev_a", "ev_a", "s2", "ev_b"]
    assert [t.has_answer for t in hay.turns] == [False, False, True, False, False, True]
    assert hay.turns[0].timestamp == "2023-05-20T02:21:00+00:00"
    assert hay.turns[1].timestamp == f"2023-05-20T02:21:{TURN_SECONDS:02d}+00:00"
    assert hay.evidence_sessions == ["ev_a", "ev_b"]
    assert hay.notes == []


def test_load_haystack_bad_date_is_noted_and_leaves_no_timestamp() -> None:
    raw = raw_question()
    raw["haystack_dates"] = ["yesterday", *raw["haystack_dates"][1:]]
    hay = load_haystack(raw)
    assert hay.turns[0].timestamp is None and hay.turns[2].timestamp is not None
    assert len(hay.notes) == 1 and "s0" in hay.notes[0]


def test_load_haystack_rejects_ragged_lists() -> None:
    with pytest.raises(SystemExit):
        load_haystack(raw_question(haystack_dates=["2023/05/20 (Sat) 02:21"]))


def test_content_and_memory() -> None:
    hay = haystack()
    assert build_content("user", "  Hi\n") == "user: Hi"
    turn = hay.turns[3]
    memory = build_memory(turn)
    assert memory["content"] == "assistant: Nice!"
    assert memory["tags"] == ["lme", "lme:q1", "lme:q1:ev_a"]
    assert memory["type"] == "Context"
    assert "importance" not in memory
    assert memory["timestamp"] == f"2023-05-21T10:00:{TURN_SECONDS:02d}+00:00"
    assert "session_id" not in memory["metadata"]  # it would change the sequence scope
    assert memory_tags(load_haystack(raw_question(question_id="GPT4_X")).turns[0]) == [
        "lme",
        "lme:gpt4_x",
        "lme:gpt4_x:s0",
    ]


def test_tenant_name() -> None:
    assert tenant_name("gpt4_d31cdae3") == "lme-gpt4_d31cdae3"
    assert tenant_name("A b.c") == "lme-a-b-c"
    assert len(tenant_name("x" * 100)) == 63


def test_select_questions() -> None:
    data = [raw_question(question_id=f"q{n}", question_type=t) for n, t in enumerate("abab")]
    assert [q["question_id"] for q in select_questions(data, None, None)] == ["q0", "q1", "q2", "q3"]
    assert [q["question_id"] for q in select_questions(data, ["b"], None)] == ["q1", "q3"]
    assert [q["question_id"] for q in select_questions(data, ["a", "b"], 3)] == ["q0", "q1", "q2"]
    with pytest.raises(SystemExit):
        select_questions(data, ["c"], None)


def test_map_stored() -> None:
    hay = haystack()
    contents = {"user: Hello": "m1", "assistant: Hi there.": "m2", "user: I have a dog.": "m3"}
    assert map_stored(hay.turns, contents) is None  # not every turn is stored
    contents.update({"assistant: Nice!": "m4", "user: I got a second dog.": "m5"})
    assert map_stored(hay.turns, contents) == {
        "0:0": "m1",
        "0:1": "m2",
        "1:0": "m3",
        "1:1": "m4",
        "2:0": "m1",
        "3:0": "m5",
    }


# --- metrics ------------------------------------------------------------------------------------


def test_memory_sessions_of_a_shared_memory() -> None:
    sessions = memory_sessions(haystack().turns, MAPPING)
    assert sessions["m-hello"] == ["s0", "s2"]
    assert sessions["m-dog"] == ["ev_a"]
    # a session that recurs in the haystack (the data has three) is listed once
    raw = raw_question(haystack_session_ids=["s0", "ev_a", "s0", "ev_b"])
    assert memory_sessions(load_haystack(raw).turns, MAPPING)["m-hello"] == ["s0"]


def test_rank_sessions_by_first_appearance() -> None:
    sessions = memory_sessions(haystack().turns, MAPPING)
    ids = ["m-nice", "m-unknown", "m-hi", "m-dog", "m-hello", "m-dog2"]
    assert rank_sessions(ids, sessions) == ["ev_a", "s0", "s2", "ev_b"]
    assert rank_sessions([], sessions) == []


def test_session_metrics_any_and_all() -> None:
    ranking = ["s0", "ev_a", "s2", "s3", "s4", "ev_b"]
    metrics = session_metrics(ranking, ["ev_a", "ev_b"], [5, 10])
    assert metrics == {
        "session_any@5": 1.0,
        "session_all@5": 0.0,
        "session_any@10": 1.0,
        "session_all@10": 1.0,
    }
    assert session_metrics(ranking, ["zz"], [5])["session_any@5"] == 0.0
    with pytest.raises(ValueError):
        session_metrics(ranking, [], [5])


def test_turn_metrics() -> None:
    answers = answer_memories(haystack().turns, MAPPING)
    assert answers == {"m-dog", "m-dog2"}
    ids = ["x"] * 9 + ["m-dog", "m-dog2"]  # the second has_answer turn is 11th
    assert turn_metrics(ids, answers) == {"turn_any@10": 1.0, "turn_all@10": 0.0}
    assert turn_metrics(["m-dog2", "m-dog"], answers) == {"turn_any@10": 1.0, "turn_all@10": 1.0}
    assert turn_metrics(["m-hello"], answers) == {"turn_any@10": 0.0, "turn_all@10": 0.0}
    assert turn_metrics(["m-dog"], set()) is None


def test_score_question() -> None:
    ids = ["m-dog2", "m-hello", "m-foreign", "m-hi", "m-nice"]
    scored = score(haystack(), MAPPING, ids)
    assert scored.metrics["session_all@5"] == 1.0  # ev_b, s0, s2, ev_a
    assert scored.metrics["turn_any@10"] == 1.0 and scored.metrics["turn_all@10"] == 0.0
    assert scored.distinct_sessions == 4
    assert scored.foreign == 1
    assert scored.evidence_ranks == {"ev_a": 4, "ev_b": 1}


def test_score_without_has_answer_turns_has_no_turn_metrics() -> None:
    raw = raw_question()
    for session in raw["haystack_sessions"]:
        for turn in session:
            turn.pop("has_answer", None)
    scored = score(load_haystack(raw), MAPPING, ["m-dog"])
    assert "turn_any@10" not in scored.metrics and scored.metrics["session_any@5"] == 1.0


def _scored(qtype: str, session: float, turn: float | None, sessions: int = 12) -> Scored:
    metrics = {m: session for m in ("session_any@5", "session_all@5", "session_any@10", "session_all@10")}
    if turn is not None:
        metrics.update({"turn_any@10": turn, "turn_all@10": turn})
    return Scored("q", qtype, metrics, sessions, 0, {})


def test_aggregate_per_type_and_overall() -> None:
    rows = [
        _scored("multi-session", 1.0, 1.0),
        _scored("single-session-user", 0.0, None, sessions=3),
        _scored("single-session-user", 1.0, 0.0),
        _scored("odd-type", 1.0, 1.0),
    ]
    out = aggregate(rows)
    assert list(out) == ["single-session-user", "multi-session", "odd-type", OVERALL]
    ssu = out["single-session-user"]
    assert ssu["n"] == 2 and ssu["session_all@5"] == 0.5
    assert ssu["n_turn"] == 1 and ssu["turn_any@10"] == 0.0  # the question without has_answer is out
    assert ssu["fewer_than_10_sessions"] == 1
    assert out[OVERALL]["n"] == 4 and out[OVERALL]["session_any@5"] == 0.75
    assert out[OVERALL]["n_turn"] == 3 and out[OVERALL]["turn_all@10"] == pytest.approx(2 / 3)


def test_aggregate_type_without_turn_metrics_is_nan() -> None:
    out = aggregate([_scored("multi-session", 1.0, None)])
    assert out["multi-session"]["n_turn"] == 0 and math.isnan(out["multi-session"]["turn_any@10"])


def test_evaluate_targets() -> None:
    overall = {"session_any@5": 0.98, "session_all@5": 0.9, "turn_any@10": math.nan, "turn_all@10": 0.9}
    rows = {r["key"]: r for r in evaluate_targets(overall, 15.0, None)}
    assert rows["session_any@5"]["met"] is True  # at the target
    assert rows["session_all@5"]["met"] is False
    assert rows["turn_any@10"]["met"] is None
    assert rows["turn_all@10"]["met"] is True
    assert rows["recall_p50_ms"]["met"] is True
    assert rows["ingest_drain_s"]["met"] is None
    assert {r["key"]: r["met"] for r in evaluate_targets(overall, 15.1, 601.0)}["ingest_drain_s"] is False


def test_miss_record() -> None:
    hay = haystack()
    ids = ["m-dog2", "m-hello", "m-hi", "m-nice"]
    results = [{"id": i, "memory": {"content": f"c {i}"}, "score": 0.5} for i in ids]
    answer = LmeAnswer(hay, ids, results, 1.0, {})
    scored = score(hay, MAPPING, ids)
    record = miss_record(answer, scored, MAPPING)
    assert record is not None
    assert record["failed"] == ["turn_all@10"]
    assert record["session_ranking_top10"] == ["ev_b", "s0", "s2", "ev_a"]
    assert [(t["content"], t["rank"]) for t in record["has_answer_turns"]] == [
        ("user: I have a dog.", None),
        ("user: I got a second dog.", 1),
    ]
    assert record["top_10"][0] == {
        "rank": 1,
        "sessions": ["ev_b"],
        "has_answer": True,
        "content": "c m-dog2",
        "score": 0.5,
    }
    full = ["m-dog", "m-dog2"]
    hit = LmeAnswer(hay, full, [{"id": i} for i in full], 1.0, {})
    assert miss_record(hit, score(hay, MAPPING, full), MAPPING) is None


def test_render_markdown_shows_types_targets_and_exclusions() -> None:
    rows = [_scored("multi-session", 1.0, 1.0), _scored("multi-session", 1.0, None)]
    metrics = aggregate(rows)
    report = {
        "meta": {
            "date": "d",
            "git_commit": "c",
            "command": "python scripts/bench/longmemeval.py",
            "machine": {"machine": "x86_64", "cores": 2},
        },
        "config": {
            "service": "s",
            "embedding": "e",
            "isolation": "tenant",
            "limit": 50,
            "recall_params": {},
            "data_name": "LongMemEval_S",
            "types": [],
        },
        "metrics": metrics,
        "targets": evaluate_targets(metrics[OVERALL], 9.5, 420.0),
        "questions": {
            "used": 2,
            "no_has_answer": 1,
            "fewer_than_10_sessions": 0,
            "foreign_results": 0,
            "data_notes": [],
        },
        "latency": {"client_ms": {"p50": 9.5, "p95": 20.0, "mean": 11.0}, "server_ms": {}},
        "ingest": {
            "sent": 10,
            "turns": 10,
            "ingested": ["q"],
            "reused": 0,
            "ingest_s": 1.0,
            "statuses": {},
            "drain_s": 2.0,
            "total_s": 3.0,
            "shared_memories": 0,
        },
    }
    text = render_markdown(report)
    assert "| multi-session | 2 | 100.0 % | 100.0 % | 100.0 % | 100.0 % | 100.0 % (n=1) |" in text
    assert "| recall p50 (client round trip) | ≤ 15 ms | 9.5 ms | yes |" in text
    assert "| ingest + drain | ≤ 10 min | 420 s (7.0 min) | yes |" in text
    assert "session recall@5 97 %" in text
