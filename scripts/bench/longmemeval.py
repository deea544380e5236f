"""LongMemEval_S retrieval benchmark: evidence-session and evidence-turn recall of POST /recall.

Reads /work/shared/data/longmemeval/lme-s-dev.json (60 questions of LongMemEval_S, 10 per
question type, each with its own haystack of ~48 sessions, ~490 turns). Stores every turn of a
question's haystack as one memory (`"<role>: <content>"`, type Context, the session's date plus
TURN_SECONDS a turn as timestamp), tagged `lme`, `lme:<question_id>` and
`lme:<question_id>:<session_id>`; waits until every memory is embedded and enriched; then asks
each question with `tags=["lme:<question_id>"]`, asked at its `question_date` (`reference_time`:
the protocol's "current date" of the question, against which "last Friday" is resolved), and
scores the answer (the benchmark's own retrieval protocol): sessions ranked by their first memory
in the answer, session recall_any@k (an evidence session in the top k sessions) and recall_all@k
(all of them), k = 5 and 10; and at turn level, the `has_answer` turns among the first 10
memories: any@10 and all@10 (questions without a has_answer turn are left out of these). Per
question type and overall, with recall latency, ingest and drain times and the targets met.
Writes benchmarks/longmemeval.json and benchmarks/longmemeval.md and prints the markdown.

Isolation: the service deduplicates identical content within a tenant, so with tags alone a
session that recurs in several haystacks (65 of them do) would be stored once, under the first
question's tags, and missing from the others. By default each question's haystack therefore goes
to a tenant of its own (`lme-<question_id>`, created with the admin token, which the embedded
service has; give --admin-token with --url), still with the tags above; `--isolation tag` keeps
everything in the token's tenant and reports the memories shared between haystacks.

Without --url it starts `python -m automem serve` (embedded mode, fastembed MiniLM int8, content
limit raised to CONTENT_LIMIT characters: a fifth of the turns are longer than the default 2,000)
on a temporary data dir and stops it with SIGTERM at the end.

    python scripts/bench/longmemeval.py --out benchmarks
    python scripts/bench/longmemeval.py --questions 6 --types multi-session,knowledge-update
    python scripts/bench/longmemeval.py --keep-data /tmp/lme-data       # 2nd run skips ingest
    python scripts/bench/longmemeval.py --keep-data /tmp/lme-data --dump-misses /tmp/lme-misses.jsonl
    python scripts/bench/longmemeval.py --url http://127.0.0.1:8001 --token "$AUTOMEM_API_TOKEN" \\
        --admin-token "$ADMIN_API_TOKEN"
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.bench import common
from scripts.bench.common import log
from scripts.bench.locomo import (
    SHARED,
    IngestStats,
    add_service_arguments,
    contents_by_tag,
    dedupe,
    describe_embedding,
    latency_summary,
    map_by_content,
    post_recall,
    shared_ids,
    store_batches,
    to_iso,
    wait_for_embeddings,
    with_service,
)

DEFAULT_DATA = SHARED / "data" / "longmemeval" / "lme-s-dev.json"
NAME = "longmemeval"

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
OVERALL = "overall"
SESSION_KS = (5, 10)
TURN_K = 10
DEFAULT_LIMIT = 50
TURN_SECONDS = 5  # added to the session's date per turn index, so the turn order is kept
CONTENT_LIMIT = 32_000  # the longest turn has 23,821 characters
SESSION_METRICS = [f"session_{m}@{k}" for k in SESSION_KS for m in ("any", "all")]
TURN_METRICS = [f"turn_{m}@{TURN_K}" for m in ("any", "all")]
METRICS = SESSION_METRICS + TURN_METRICS

# (metric, the report's value it reads, target, higher is better)
TARGETS: list[tuple[str, str, float, bool]] = [
    ("session any@5", "session_any@5", 0.98, True),
    ("session all@5", "session_all@5", 0.95, True),
    ("turn any@10", "turn_any@10", 0.92, True),
    ("turn all@10", "turn_all@10", 0.85, True),
    ("recall p50 (client round trip)", "recall_p50_ms", 15.0, False),
    ("ingest + drain", "ingest_drain_s", 600.0, False),
]

# --- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LmeTurn:
    question_id: str
    session_id: str
    session_index: int  # position of the session in the haystack (a session id may recur)
    turn_index: int
    role: str
    text: str
    has_answer: bool
    timestamp: str | None

    @property
    def key(self) -> str:
        """Unique within the haystack."""
        return f"{self.session_index}:{self.turn_index}"

    @property
    def content(self) -> str:
        return build_content(self.role, self.text)


@dataclass
class Haystack:
    question_id: str
    question_type: str
    question: str
    question_date: str
    answer: str
    evidence_sessions: list[str]
    turns: list[LmeTurn]
    notes: list[str] = field(default_factory=list)


_LME_DATE = re.compile(
    r"^\s*(?P<year>\d{4})/(?P<month>\d{1,2})/(?P<day>\d{1,2})\s*(?:\(\s*[A-Za-z]+\s*\))?\s*"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*$"
)


def parse_lme_date(text: str) -> datetime:
    """`"2023/05/20 (Sat) 02:21"` as an aware UTC datetime (the data carries no zone; the weekday
    is optional and not checked). Raises ValueError otherwise."""
    match = _LME_DATE.match(text)
    if match is None:
        raise ValueError(f"unrecognised LongMemEval date {text!r}")
    year, month, day, hour, minute = (int(match[g]) for g in ("year", "month", "day", "hour", "minute"))
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"bad date {text!r}: {exc}") from None


def turn_timestamp(session_date: datetime, turn_index: int) -> str:
    return to_iso(session_date + timedelta(seconds=TURN_SECONDS * turn_index))


def build_content(role: str, text: str) -> str:
    """`"<role>: <content>"`."""
    return f"{role.strip()}: {text.strip()}"


def question_tag(question_id: str) -> str:
    return f"lme:{question_id.strip().lower()}"


def memory_tags(turn: LmeTurn) -> list[str]:
    tag = question_tag(turn.question_id)
    return ["lme", tag, f"{tag}:{turn.session_id.strip().lower()}"]


def tenant_name(question_id: str) -> str:
    """`lme-<question_id>` in the service's tenant alphabet (a-z, 0-9, '-', '_'; 63 at most)."""
    return ("lme-" + re.sub(r"[^a-z0-9_-]", "-", question_id.strip().lower()))[:63]


def build_memory(turn: LmeTurn) -> dict[str, Any]:
    # No `session_id` metadata key: it would name the memory's sequence scope, which the most
    # specific tag (the question's session) already does, per haystack.
    item: dict[str, Any] = {
        "content": turn.content,
        "tags": memory_tags(turn),
        "type": "Context",
        "metadata": {
            "question_id": turn.question_id,
            "haystack_session": turn.session_id,
            "turn": turn.turn_index,
        },
    }
    if turn.timestamp:
        item["timestamp"] = turn.timestamp
    return item


def load_haystack(raw: dict[str, Any]) -> Haystack:
    """One question and its haystack; a session date that does not parse leaves its turns
    without a timestamp (noted)."""
    qid = str(raw["question_id"])
    sessions, ids, dates = raw["haystack_sessions"], raw["haystack_session_ids"], raw["haystack_dates"]
    if not len(sessions) == len(ids) == len(dates):
        raise SystemExit(f"{qid}: haystack_sessions, _session_ids and _dates differ in length")
    turns: list[LmeTurn] = []
    notes: list[str] = []
    for s_index, (session, session_id, raw_date) in enumerate(zip(sessions, ids, dates, strict=True)):
        try:
            date: datetime | None = parse_lme_date(str(raw_date))
        except ValueError as exc:
            date = None
            notes.append(f"{qid} session {session_id}: {exc}; stored without a timestamp")
        for t_index, turn in enumerate(session):
            turns.append(
                LmeTurn(
                    question_id=qid,
                    session_id=str(session_id),
                    session_index=s_index,
                    turn_index=t_index,
                    role=str(turn["role"]),
                    text=str(turn.get("content") or ""),
                    has_answer=bool(turn.get("has_answer")),
                    timestamp=turn_timestamp(date, t_index) if date else None,
                )
            )
    return Haystack(
        question_id=qid,
        question_type=str(raw["question_type"]),
        question=str(raw["question"]),
        question_date=str(raw.get("question_date") or ""),
        answer=str(raw.get("answer", "")),
        evidence_sessions=[str(s) for s in raw.get("answer_session_ids") or []],
        turns=turns,
        notes=notes,
    )


def select_questions(
    data: list[dict[str, Any]], types: Sequence[str] | None, first: int | None
) -> list[dict[str, Any]]:
    """The questions of the given types (all when None), in data order, the first `first` of them."""
    if types:
        known = {str(q["question_type"]) for q in data}
        unknown = sorted(set(types) - known)
        if unknown:
            raise SystemExit(f"unknown question types {unknown}; the data holds {sorted(known)}")
        data = [q for q in data if q["question_type"] in types]
    return data[:first] if first is not None else data


def load_dataset(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text())
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a list of questions")
    return data


# --- metrics ------------------------------------------------------------------------------------


def memory_sessions(turns: Iterable[LmeTurn], mapping: dict[str, str]) -> dict[str, list[str]]:
    """memory id -> the sessions of the turns stored as it, in haystack order (identical turns
    of a haystack share one memory)."""
    out: dict[str, list[str]] = defaultdict(list)
    for turn in turns:
        memory_id = mapping.get(turn.key)
        if memory_id is not None and turn.session_id not in out[memory_id]:
            out[memory_id].append(turn.session_id)
    return dict(out)


def rank_sessions(ids: Sequence[str], sessions_of: dict[str, list[str]]) -> list[str]:
    """Sessions in the order of their first memory in the answer; ids of no known turn are skipped."""
    return list(dict.fromkeys(s for memory_id in ids for s in sessions_of.get(memory_id, [])))


def session_metrics(ranking: Sequence[str], evidence: Sequence[str], ks: Sequence[int]) -> dict[str, float]:
    """session_any@k (an evidence session in the top k sessions) and session_all@k (all are)."""
    if not evidence:
        raise ValueError("a question without evidence sessions cannot be scored")
    out: dict[str, float] = {}
    for k in ks:
        top = set(ranking[:k])
        out[f"session_any@{k}"] = float(any(s in top for s in evidence))
        out[f"session_all@{k}"] = float(all(s in top for s in evidence))
    return out


def answer_memories(turns: Iterable[LmeTurn], mapping: dict[str, str]) -> set[str]:
    """The memory ids of the haystack's has_answer turns."""
    return {mapping[t.key] for t in turns if t.has_answer and t.key in mapping}


def turn_metrics(ids: Sequence[str], answers: set[str], k: int = TURN_K) -> dict[str, float] | None:
    """turn_any@k (a has_answer turn among the first k memories) and turn_all@k (every one is);
    None when the haystack has no has_answer turn."""
    if not answers:
        return None
    top = set(ids[:k])
    return {f"turn_any@{k}": float(bool(answers & top)), f"turn_all@{k}": float(answers <= top)}


@dataclass
class Scored:
    question_id: str
    question_type: str
    metrics: dict[str, float]  # the session metrics, and the turn metrics when it has has_answer turns
    distinct_sessions: int
    foreign: int  # results that are no turn of this haystack
    evidence_ranks: dict[str, int | None]


def score(
    haystack: Haystack, mapping: dict[str, str], ids: Sequence[str], ks: Sequence[int] = SESSION_KS
) -> Scored:
    sessions_of = memory_sessions(haystack.turns, mapping)
    ranking = rank_sessions(ids, sessions_of)
    metrics = session_metrics(ranking, haystack.evidence_sessions, ks)
    metrics.update(turn_metrics(ids, answer_memories(haystack.turns, mapping)) or {})
    return Scored(
        question_id=haystack.question_id,
        question_type=haystack.question_type,
        metrics=metrics,
        distinct_sessions=len(ranking),
        foreign=sum(1 for i in ids if i not in sessions_of),
        evidence_ranks={
            s: ranking.index(s) + 1 if s in ranking else None for s in haystack.evidence_sessions
        },
    )


def _summary(label: str, rows: Sequence[Scored]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": label, "n": len(rows)}
    for name in SESSION_METRICS:
        out[name] = statistics.fmean(r.metrics[name] for r in rows) if rows else math.nan
    with_turns = [r for r in rows if TURN_METRICS[0] in r.metrics]
    out["n_turn"] = len(with_turns)
    for name in TURN_METRICS:
        out[name] = statistics.fmean(r.metrics[name] for r in with_turns) if with_turns else math.nan
    out["fewer_than_10_sessions"] = sum(1 for r in rows if r.distinct_sessions < 10)
    return out


def aggregate(scored: Sequence[Scored]) -> dict[str, dict[str, Any]]:
    """Mean metrics per question type (the known types in their order, then any other), and
    overall; turn metrics over the questions that have has_answer turns (`n_turn`)."""
    by_type: dict[str, list[Scored]] = defaultdict(list)
    for row in scored:
        by_type[row.question_type].append(row)
    order = [t for t in QUESTION_TYPES if t in by_type] + sorted(set(by_type) - set(QUESTION_TYPES))
    out = {t: _summary(t, by_type[t]) for t in order}
    out[OVERALL] = _summary(OVERALL, scored)
    return out


def evaluate_targets(
    overall: dict[str, Any], recall_p50_ms: float, ingest_drain_s: float | None
) -> list[dict[str, Any]]:
    """Each target with its value and whether it is met (None: not measured in this run)."""
    values = {**overall, "recall_p50_ms": recall_p50_ms, "ingest_drain_s": ingest_drain_s}
    rows = []
    for label, key, target, higher in TARGETS:
        value = values.get(key)
        met: bool | None = None
        if value is not None and not math.isnan(value):
            met = value >= target if higher else value <= target
        rows.append(
            {
                "metric": label,
                "key": key,
                "target": target,
                "higher_is_better": higher,
                "value": value,
                "met": met,
            }
        )
    return rows


# --- service ------------------------------------------------------------------------------------


def tenant_keys(client: httpx.Client, admin_token: str, question_ids: Sequence[str]) -> dict[str, str]:
    """question id -> a write key of its own tenant `lme-<question_id>` (created unless it exists)."""
    admin = {"X-Admin-Token": admin_token}
    keys: dict[str, str] = {}
    for qid in question_ids:
        name = tenant_name(qid)
        response = client.post("/admin/tenants", json={"name": name}, headers=admin)
        if response.status_code not in (201, 409):
            raise SystemExit(f"POST /admin/tenants {name}: {response.status_code} {response.text[:300]}")
        response = client.post(
            "/admin/keys", json={"tenant": name, "scope": "write", "name": "longmemeval bench"}, headers=admin
        )
        if response.status_code != 201:
            raise SystemExit(f"POST /admin/keys {name}: {response.status_code} {response.text[:300]}")
        keys[qid] = str(response.json()["key"])
    return keys


def map_stored(turns: Sequence[LmeTurn], contents: dict[str, str]) -> dict[str, str] | None:
    """turn key -> memory id by content when every turn is stored already, else None."""
    return map_by_content(turns, contents, lambda t: t.key)


def ensure_ingested(
    client: httpx.Client, haystacks: Sequence[Haystack], keys: dict[str, str], chunk_size: int
) -> tuple[dict[str, dict[str, str]], IngestStats]:
    """Per question id, turn key -> memory id (the ids /memory/batch answers, in order); a
    haystack whose turns are all stored already (a reused --keep-data dir) is not sent again."""
    stats = IngestStats()
    mappings: dict[str, dict[str, str]] = {}
    start = time.perf_counter()
    for n, hay in enumerate(haystacks, start=1):
        use_key(client, keys.get(hay.question_id))
        existing = map_stored(hay.turns, contents_by_tag(client, question_tag(hay.question_id)))
        if existing is not None:
            mappings[hay.question_id] = existing
            stats.reused.append(hay.question_id)
            continue
        memories = [build_memory(t) for t in hay.turns]
        labels = [f"{hay.question_id} {t.session_id} turn {t.turn_index}" for t in hay.turns]
        ids, statuses = store_batches(client, memories, labels, chunk_size)
        mappings[hay.question_id] = {t.key: memory_id for t, memory_id in zip(hay.turns, ids, strict=True)}
        stats.sent += len(hay.turns)
        stats.statuses.update(statuses)
        stats.ingested.append(hay.question_id)
        if n % 10 == 0 or n == len(haystacks):
            log(
                f"ingested {n}/{len(haystacks)} haystacks, {stats.sent} turns, "
                f"{time.perf_counter() - start:.1f}s"
            )
    stats.ingest_s = time.perf_counter() - start
    return mappings, stats


def use_key(client: httpx.Client, key: str | None) -> None:
    """Send the next requests with `key` (a question's tenant key); None keeps the current one."""
    if key:
        client.headers["X-API-Key"] = key


# --- recall -------------------------------------------------------------------------------------


@dataclass
class LmeAnswer:
    haystack: Haystack
    ids: list[str]
    results: list[dict[str, Any]]
    client_ms: float
    timings: dict[str, float]


def ask(
    client: httpx.Client, haystack: Haystack, limit: int, extra: dict[str, Any] | None = None
) -> LmeAnswer:
    body: dict[str, Any] = {
        "query": haystack.question,
        "tags": [question_tag(haystack.question_id)],
        "limit": limit,
    }
    asked_at = question_moment(haystack)
    if asked_at:  # the question is asked on its date: "last Friday" is the Friday before it
        body["reference_time"] = asked_at
    return LmeAnswer(haystack, *post_recall(client, body | (extra or {})))


def question_moment(haystack: Haystack) -> str | None:
    """The question's date (`question_date`) as ISO 8601, None when it has none or it does not parse."""
    try:
        return to_iso(parse_lme_date(haystack.question_date))
    except ValueError:
        return None


def _clip(text: str | None, size: int = 300) -> str | None:
    return text if text is None or len(text) <= size else text[:size] + "…"


def miss_record(answer: LmeAnswer, scored: Scored, mapping: dict[str, str]) -> dict[str, Any] | None:
    """A JSONL record for error analysis when a session or turn metric missed, else None."""
    failed = [m for m, v in scored.metrics.items() if not v]
    if not failed:
        return None
    hay = answer.haystack
    sessions_of = memory_sessions(hay.turns, mapping)
    by_id = {i: r for i, r in zip(answer.ids, answer.results, strict=True)}
    answers = answer_memories(hay.turns, mapping)
    return {
        "question_id": hay.question_id,
        "question_type": hay.question_type,
        "question": hay.question,
        "question_date": hay.question_date,
        "answer": hay.answer,
        "failed": failed,
        "evidence_sessions": hay.evidence_sessions,
        "evidence_ranks": scored.evidence_ranks,
        "session_ranking_top10": rank_sessions(answer.ids, sessions_of)[:10],
        "has_answer_turns": [
            {
                "session_id": t.session_id,
                "turn": t.turn_index,
                "content": t.content,
                "rank": answer.ids.index(mapping[t.key]) + 1 if mapping.get(t.key) in answer.ids else None,
            }
            for t in hay.turns
            if t.has_answer
        ],
        "top_10": [
            {
                "rank": rank,
                "sessions": sessions_of.get(mid, []),
                "has_answer": mid in answers,
                "content": _clip(((by_id.get(mid) or {}).get("memory") or {}).get("content")),
                "score": (by_id.get(mid) or {}).get("score"),
            }
            for rank, mid in enumerate(dedupe(answer.ids)[:TURN_K], start=1)
        ],
    }


# --- report -------------------------------------------------------------------------------------


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * value:.1f} %"


def _target_value(row: dict[str, Any]) -> str:
    value = row["value"]
    if value is None:
        return "n/a"
    if row["key"] == "recall_p50_ms":
        return f"{value:.1f} ms"
    if row["key"] == "ingest_drain_s":
        return f"{value:.0f} s ({value / 60:.1f} min)"
    return _pct(value)


def _target_text(row: dict[str, Any]) -> str:
    if row["key"] == "recall_p50_ms":
        return f"≤ {row['target']:.0f} ms"
    if row["key"] == "ingest_drain_s":
        return f"≤ {row['target'] / 60:.0f} min"
    return f"≥ {100 * row['target']:.0f} %"


def render_markdown(report: dict[str, Any]) -> str:
    meta, config, q = report["meta"], report["config"], report["questions"]
    machine = meta["machine"]
    extra = config["recall_params"]
    lines = [
        f"# LongMemEval_S retrieval ({meta['date']}, {machine['machine']}, {machine['cores']} cores, "
        f"commit {meta['git_commit']})",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Service: {config['service']}; embedding {config['embedding']}; isolation: {config['isolation']}; "
        f"recall limit {config['limit']} (after one untimed warm-up recall)"
        + (f", extra recall params `{json.dumps(extra)}`" if extra else "")
        + f"; {q['used']} questions of {config['data_name']}"
        + (f" (types {', '.join(config['types'])})" if config["types"] else "")
        + ".",
        "",
        "Sessions are ranked by their first memory in the answer; session any@k: an evidence session "
        "is among the first k sessions, all@k: every one is. Turn any/all@10: one / every `has_answer` "
        "turn among the first 10 memories. AutoMem reports session recall@5 97 % on the whole S set "
        "with 1024-d commercial embeddings and one memory per session; this benchmark stores one "
        "memory per turn with a 384-d local model, which is harder.",
        "",
        "| question type | n | session any@5 | session all@5 | session any@10 | session all@10 "
        "| turn any@10 | turn all@10 | < 10 sessions |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, row in report["metrics"].items():
        title = "**overall**" if label == OVERALL else label
        n_turn = "" if row["n_turn"] == row["n"] else f" (n={row['n_turn']})"
        lines.append(
            f"| {title} | {row['n']} | "
            + " | ".join(_pct(row[m]) for m in SESSION_METRICS)
            + f" | {_pct(row[TURN_METRICS[0]])}{n_turn} | {_pct(row[TURN_METRICS[1]])} "
            f"| {row['fewer_than_10_sessions']} |"
        )
    lines += [
        "",
        f"Questions without a has_answer turn (left out of the turn metrics): {q['no_has_answer']}. "
        f"Answers with fewer than 10 distinct sessions: {q['fewer_than_10_sessions']} of {q['used']}. "
        f"Results that are no turn of the question's haystack: {q['foreign_results']}.",
        "",
        "## Targets",
        "",
        "| metric | target | value | met |",
        "|---|---|---|---|",
    ]
    for row in report["targets"]:
        met = {True: "yes", False: "**no**", None: "not measured"}[row["met"]]
        lines.append(f"| {row['metric']} | {_target_text(row)} | {_target_value(row)} | {met} |")
    lat, ing = report["latency"], report["ingest"]
    c = lat["client_ms"]
    lines += [
        "",
        "## Recall latency (ms)",
        "",
        "| measure | p50 | p95 | mean |",
        "|---|---|---|---|",
        f"| client round trip | {c['p50']} | {c['p95']} | {c['mean']} |",
    ]
    for stage, s in lat["server_ms"].items():
        lines.append(f"| server `{stage}` | {s['p50']} | {s['p95']} | {s['mean']} |")
    lines += [
        "",
        "## Ingest",
        "",
        f"{ing['turns']} turns; {ing['sent']} sent as memories ({len(ing['ingested'])} haystacks; "
        f"{ing['reused']} found stored in the data dir and not sent) in {ing['ingest_s']} s, statuses "
        f"{ing['statuses']}; drain (every memory embedded and enriched) {ing['drain_s']} s; total "
        f"{ing['total_s']} s. Memories holding turns of several haystacks: {ing['shared_memories']}.",
    ]
    notes = q["data_notes"]
    if notes:
        lines += ["", "Data notes: " + "; ".join(notes[:10]) + (" …" if len(notes) > 10 else "")]
    return "\n".join(lines) + "\n"


# --- main ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--questions", type=int, help="the first N questions (after --types)")
    parser.add_argument("--types", help="comma list of question types (default: all)")
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, help=f"recall limit (default {DEFAULT_LIMIT})"
    )
    parser.add_argument(
        "--isolation",
        choices=("tenant", "tag"),
        default="tenant",
        help="each haystack in a tenant of its own (default; needs the admin token) or only under its tag",
    )
    parser.add_argument(
        "--admin-token", default=os.environ.get("ADMIN_API_TOKEN"), help="admin token for --url (tenants)"
    )
    parser.add_argument("--dump-misses", type=Path, help="JSONL of the questions a metric missed")
    add_service_arguments(parser, DEFAULT_DATA, "LongMemEval JSON")
    return parser


def run(args: argparse.Namespace, service: common.Service, service_desc: str) -> int:
    if args.limit < TURN_K:
        raise SystemExit(f"--limit {args.limit} is below {TURN_K}")
    types = [t.strip() for t in args.types.split(",") if t.strip()] if args.types else None
    haystacks = [load_haystack(q) for q in select_questions(load_dataset(args.data), types, args.questions)]
    notes = [n for h in haystacks for n in h.notes]
    for note in notes:
        log(f"data: {note}")
    headers = {"X-API-Key": service.token} if service.token else {}
    with httpx.Client(base_url=service.url, headers=headers, timeout=300) as client:
        embedding_desc = describe_embedding(client, service.url)
        keys: dict[str, str] = {}
        if args.isolation == "tenant":
            if not service.admin_token:
                raise SystemExit(
                    "--isolation tenant needs the admin token (--admin-token); or --isolation tag"
                )
            keys = tenant_keys(client, service.admin_token, [h.question_id for h in haystacks])
        mappings, stats = ensure_ingested(client, haystacks, keys, args.chunk)
        stats.embed_wait_s = wait_for_embeddings(client, args.embed_timeout)
        shared = shared_ids(mappings)
        if shared:
            log(
                f"WARNING: {len(shared)} memories hold turns of several haystacks; "
                "only the first one's tags reach them"
            )
        log(
            f"ingest: {stats.sent} turns sent in {stats.ingest_s:.1f}s {dict(stats.statuses)}, "
            f"reused {len(stats.reused)} haystacks; drain {stats.embed_wait_s:.1f}s; "
            f"total {stats.ingest_s + stats.embed_wait_s:.1f}s"
        )
        if args.ingest_only:
            log(f"health counts: {client.get('/health').json().get('counts')}")
            return 0

        # One untimed recall first: the API's first query embedding loads the model's session.
        use_key(client, keys.get(haystacks[0].question_id))
        post_recall(
            client, {"query": "warm-up", "tags": [question_tag(haystacks[0].question_id)], "limit": 1}
        )
        answers: list[LmeAnswer] = []
        scored: list[Scored] = []
        misses: list[dict[str, Any]] = []
        bar = common.progress(len(haystacks), "questions")
        for hay in haystacks:
            use_key(client, keys.get(hay.question_id))
            answer = ask(client, hay, args.limit, args.recall_params)
            answers.append(answer)
            scored.append(score(hay, mappings[hay.question_id], answer.ids))
            record = miss_record(answer, scored[-1], mappings[hay.question_id])
            if record:
                misses.append(record)
            bar.update()
        bar.close()

    metrics = aggregate(scored)
    latency = latency_summary(answers)
    total_s = stats.ingest_s + stats.embed_wait_s
    report = {
        "meta": common.run_meta(f"{NAME}.py", command=common.command_line(f"{NAME}.py", sys.argv[1:])),
        "config": {
            "service": service_desc,
            "embedding": embedding_desc,
            "data": str(args.data),
            "data_name": "LongMemEval_S (dev subset)",
            "isolation": args.isolation,
            "types": types or [],
            "limit": args.limit,
            "session_k": list(SESSION_KS),
            "turn_k": TURN_K,
            "turn_seconds": TURN_SECONDS,
            "recall_params": args.recall_params,
            "warm_up_recalls": 1,
            "content_limit": None if args.url else CONTENT_LIMIT,
        },
        "metrics": metrics,
        "targets": evaluate_targets(
            metrics[OVERALL],
            latency["client_ms"]["p50"],
            round(total_s, 1) if stats.sent and not stats.reused else None,
        ),
        "questions": {
            "used": len(scored),
            "no_has_answer": sum(1 for s in scored if TURN_METRICS[0] not in s.metrics),
            "fewer_than_10_sessions": sum(1 for s in scored if s.distinct_sessions < 10),
            "foreign_results": sum(s.foreign for s in scored),
            "missed": len(misses),
            "data_notes": notes,
            "per_question": [
                {
                    "question_id": s.question_id,
                    "question_type": s.question_type,
                    **s.metrics,
                    "distinct_sessions": s.distinct_sessions,
                    "evidence_ranks": s.evidence_ranks,
                    "client_ms": round(a.client_ms, 2),
                }
                for s, a in zip(scored, answers, strict=True)
            ],
        },
        "latency": latency,
        "ingest": {
            "turns": sum(len(h.turns) for h in haystacks),
            "sent": stats.sent,
            "statuses": dict(stats.statuses),
            "ingested": stats.ingested,
            "reused": len(stats.reused),
            "ingest_s": round(stats.ingest_s, 2),
            "drain_s": round(stats.embed_wait_s, 2),
            "total_s": round(total_s, 2),
            "shared_memories": len(shared),
        },
    }
    if args.dump_misses:
        args.dump_misses.parent.mkdir(parents=True, exist_ok=True)
        args.dump_misses.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in misses))
        log(f"wrote {len(misses)} missed questions to {args.dump_misses}")
    return common.write_report(args.out, NAME, report, render_markdown)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    env = {**common.model_env(), "MEMORY_CONTENT_HARD_LIMIT": str(CONTENT_LIMIT)}
    return with_service(args, run, "automem-lme-", env)


if __name__ == "__main__":
    sys.exit(main())
