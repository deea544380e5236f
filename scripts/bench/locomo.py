"""LoCoMo retrieval benchmark: evidence recall of POST /recall on the LoCoMo conversations.

Ingests every dialog turn of /work/shared/data/locomo/locomo-dev.json as one memory
(`"<Speaker>: <text>"`, plus ` [shares image: <caption>]`), tagged `locomo`, `locomo:<sample_id>`,
`locomo:<sample_id>:session_<n>` and `speaker:<name>`, with the session's date-time as timestamp;
waits until every memory is embedded and mirrored in the vector index; then asks each question
with `tags=["locomo:<sample_id>"]` and scores the returned ids against the question's evidence
turns: all@k, any@k, frac@k and MRR per category (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, the aggregate of 1-4; 5 adversarial apart), plus client and server recall latency.
Writes benchmarks/locomo.json and benchmarks/locomo.md and prints the markdown.

Without --url it starts `python -m automem serve` (embedded mode, fastembed MiniLM int8) on a
temporary data dir and stops it with SIGTERM at the end.

    python scripts/bench/locomo.py
    python scripts/bench/locomo.py --k 5,10 --out benchmarks
    python scripts/bench/locomo.py --keep-data /tmp/locomo-data            # 2nd run skips ingest
    python scripts/bench/locomo.py --keep-data /tmp/locomo-data --dump-misses /tmp/misses.jsonl
    python scripts/bench/locomo.py --conversations conv-26 --ingest-only
    python scripts/bench/locomo.py --url http://127.0.0.1:8001 --token "$AUTOMEM_API_TOKEN"
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import statistics
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, TypeVar

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.bench import common
from scripts.bench.common import ROOT, git_commit, log


class HasContent(Protocol):
    @property
    def content(self) -> str: ...


T = TypeVar("T", bound=HasContent)
SHARED = ROOT.parent / "shared"
DEFAULT_DATA = SHARED / "data" / "locomo" / "locomo-dev.json"

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MAIN_CATEGORIES = (1, 2, 3, 4)
ADVERSARIAL = 5
OVERALL = "1-4"

CHUNK_ITEMS = 500
CHUNK_BYTES = 900_000  # the service rejects bodies of 1 MiB and more
LISTING_PAGE = 100

# --- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    sample_id: str
    session: int
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    timestamp: str | None

    @property
    def content(self) -> str:
        return build_content(self.speaker, self.text, self.caption)


@dataclass
class Question:
    sample_id: str
    index: int
    question: str
    answer: str
    category: int
    evidence: list[str]
    ignored_evidence: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped: list[dict[str, Any]]
    notes: list[str]


def load_dataset(path: Path) -> list[dict[str, Any]]:
    """The LoCoMo JSON: a list of samples with `sample_id`, `conversation` and `qa`."""
    data = json.loads(path.read_text())
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a list of conversations")
    return data


def select_samples(samples: list[dict[str, Any]], names: Sequence[str] | None) -> list[dict[str, Any]]:
    if not names:
        return samples
    by_id = {s["sample_id"]: s for s in samples}
    unknown = [n for n in names if n not in by_id]
    if unknown:
        raise SystemExit(f"unknown conversations {unknown}; the data holds {sorted(by_id)}")
    return [by_id[n] for n in names]


_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}

_LOCOMO_TIME = re.compile(
    r"""^\s*
    (?P<hour>\d{1,2})(?:[:.](?P<minute>\d{2}))?\s*
    (?P<ampm>[ap])\.?\s*m\.?\s*
    (?:on\s+)?,?\s*
    (?P<day>\d{1,2})(?:st|nd|rd|th)?\s+
    (?P<month>[a-z]+)\.?\s*,?\s*
    (?P<year>\d{4})\s*$""",
    re.IGNORECASE | re.VERBOSE,
)


def parse_locomo_datetime(text: str) -> datetime:
    """`"1:56 pm on 8 May, 2023"` as an aware UTC datetime (the data carries no zone).

    Tolerates case, extra spaces, `a.m.`, a missing minute or comma, ordinal days (`8th`),
    abbreviated months, and also accepts plain ISO 8601. Raises ValueError otherwise."""
    match = _LOCOMO_TIME.match(text)
    if match is None:
        try:
            moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"unrecognised LoCoMo date-time {text!r}") from None
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    hour, minute = int(match["hour"]), int(match["minute"] or 0)
    if not 1 <= hour <= 12 or minute > 59:
        raise ValueError(f"bad clock time in {text!r}")
    hour = hour % 12 + (12 if match["ampm"].lower() == "p" else 0)
    month = _MONTHS.get(match["month"].lower())
    if month is None:
        raise ValueError(f"unknown month in {text!r}")
    return datetime(int(match["year"]), month, int(match["day"]), hour, minute, tzinfo=UTC)


def to_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def build_content(speaker: str, text: str, caption: str | None = None) -> str:
    """`"<Speaker>: <text>"`, plus ` [shares image: <caption>]` when the turn shares an image."""
    content = f"{speaker.strip()}: {text.strip()}"
    if caption and caption.strip():
        content += f" [shares image: {caption.strip()}]"
    return content


def speaker_tag(name: str) -> str:
    return "speaker:" + "-".join(name.lower().split())


def conversation_tag(sample_id: str) -> str:
    return f"locomo:{sample_id.lower()}"


def memory_tags(turn: Turn) -> list[str]:
    conv = conversation_tag(turn.sample_id)
    return ["locomo", conv, f"{conv}:session_{turn.session}", speaker_tag(turn.speaker)]


def normalize_content(content: str) -> str:
    """The service's deduplication form (NFC, whitespace runs collapsed)."""
    return " ".join(unicodedata.normalize("NFC", content).split())


def session_numbers(conversation: dict[str, Any]) -> list[int]:
    """Numbers of the `session_N` keys that hold a list of turns, ascending (the data also has
    `session_N_date_time` keys without a session)."""
    numbers = []
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(value, list):
            numbers.append(int(match[1]))
    return sorted(numbers)


def extract_turns(sample: dict[str, Any]) -> tuple[list[Turn], list[str]]:
    """Every dialog turn of a sample, in order, and notes about oddities met on the way."""
    sample_id = sample["sample_id"]
    conversation = sample["conversation"]
    turns: list[Turn] = []
    notes: list[str] = []
    seen: set[str] = set()
    for n in session_numbers(conversation):
        raw_date = conversation.get(f"session_{n}_date_time")
        timestamp = None
        try:
            timestamp = to_iso(parse_locomo_datetime(raw_date)) if raw_date else None
        except ValueError as exc:
            notes.append(f"{sample_id} session_{n}: {exc}; stored without a timestamp")
        if raw_date is None:
            notes.append(f"{sample_id} session_{n}: no date-time; stored without a timestamp")
        for turn in conversation[f"session_{n}"]:
            dia_id = str(turn["dia_id"]).strip()
            if dia_id in seen:
                notes.append(f"{sample_id}: dia_id {dia_id} repeats; later turn skipped")
                continue
            seen.add(dia_id)
            turns.append(
                Turn(
                    sample_id=sample_id,
                    session=n,
                    dia_id=dia_id,
                    speaker=str(turn["speaker"]),
                    text=str(turn.get("text") or ""),
                    caption=turn.get("blip_caption") or None,
                    timestamp=timestamp,
                )
            )
    return turns, notes


def parse_evidence(raw: Iterable[str] | str | None, known: set[str]) -> tuple[list[str], list[str]]:
    """Evidence dia_ids that exist in the conversation (stripped, `;`/`,`-joined entries split,
    de-duplicated in order), and the entries that were ignored because no such turn exists."""
    if raw is None:
        return [], []
    entries = [raw] if isinstance(raw, str) else list(raw)
    valid: list[str] = []
    ignored: list[str] = []
    for entry in entries:
        for part in re.split(r"[;,]", str(entry)):
            dia_id = part.strip()
            if not dia_id:
                continue
            if dia_id not in known:
                ignored.append(dia_id)
            elif dia_id not in valid:
                valid.append(dia_id)
    return valid, ignored


def extract_questions(sample: dict[str, Any], known: set[str]) -> tuple[list[Question], list[dict[str, Any]]]:
    """The questions with at least one existing evidence turn, and the skipped ones."""
    questions: list[Question] = []
    skipped: list[dict[str, Any]] = []
    for index, qa in enumerate(sample.get("qa", [])):
        evidence, ignored = parse_evidence(qa.get("evidence"), known)
        category = int(qa.get("category", 0))
        if not evidence:
            skipped.append(
                {
                    "sample_id": sample["sample_id"],
                    "index": index,
                    "category": category,
                    "question": qa.get("question"),
                    "evidence": qa.get("evidence"),
                    "ignored": ignored,
                    "reason": "no evidence" if not ignored else "no evidence id exists in the conversation",
                }
            )
            continue
        questions.append(
            Question(
                sample_id=sample["sample_id"],
                index=index,
                question=str(qa["question"]),
                answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                category=category,
                evidence=evidence,
                ignored_evidence=ignored,
            )
        )
    return questions, skipped


def load_conversation(sample: dict[str, Any]) -> Conversation:
    turns, notes = extract_turns(sample)
    questions, skipped = extract_questions(sample, {t.dia_id for t in turns})
    for q in questions:
        if q.ignored_evidence:
            notes.append(
                f"{q.sample_id} q{q.index}: ignored evidence {q.ignored_evidence} (kept {q.evidence})"
            )
    return Conversation(sample["sample_id"], turns, questions, skipped, notes)


def build_memory(turn: Turn) -> dict[str, Any]:
    item: dict[str, Any] = {
        "content": turn.content,
        "tags": memory_tags(turn),
        "type": "Context",
        "importance": 0.5,
        "metadata": {
            "sample_id": turn.sample_id,
            "dia_id": turn.dia_id,
            "session": turn.session,
            "speaker": turn.speaker,
        },
    }
    if turn.timestamp:
        item["timestamp"] = turn.timestamp
    return item


def chunk_items(
    items: Sequence[dict[str, Any]], max_items: int = CHUNK_ITEMS, max_bytes: int = CHUNK_BYTES
) -> list[list[dict[str, Any]]]:
    """Consecutive chunks of at most max_items whose JSON body stays under max_bytes."""
    chunks: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = len('{"memories": []}')
    for item in items:
        item_size = len(json.dumps(item).encode()) + 2
        if current and (len(current) >= max_items or size + item_size > max_bytes):
            chunks.append(current)
            current, size = [], len('{"memories": []}')
        current.append(item)
        size += item_size
    if current:
        chunks.append(current)
    return chunks


# --- service ------------------------------------------------------------------------------------


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


# --- ingest -------------------------------------------------------------------------------------


@dataclass
class IngestStats:
    sent: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    ingested: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    ingest_s: float = 0.0
    embed_wait_s: float = 0.0


def store_batches(
    client: httpx.Client,
    memories: Sequence[dict[str, Any]],
    labels: Sequence[str],
    chunk_size: int = CHUNK_ITEMS,
) -> tuple[list[str], Counter[str]]:
    """POST the memories through /memory/batch in chunks; the memory id answered for each, in
    order (a duplicate's is the existing memory's), and the count of each status. `labels` name
    the items in errors."""
    ids: list[str] = []
    statuses: Counter[str] = Counter()
    offset = 0
    for chunk in chunk_items(memories, max_items=chunk_size):
        response = client.post("/memory/batch", json={"memories": chunk})
        if response.status_code not in (200, 201):
            raise SystemExit(f"POST /memory/batch: {response.status_code} {response.text[:500]}")
        results = response.json()["results"]
        if len(results) != len(chunk):
            raise SystemExit(f"POST /memory/batch answered {len(results)} results for {len(chunk)} items")
        for label, result in zip(labels[offset : offset + len(chunk)], results, strict=True):
            statuses[result.get("status", "?")] += 1
            if result.get("status") not in ("created", "duplicate") or not result.get("id"):
                raise SystemExit(f"{label}: unexpected batch result {result}")
            ids.append(str(result["id"]))
        offset += len(chunk)
    return ids, statuses


def ingest_turns(
    client: httpx.Client, turns: Sequence[Turn], chunk_size: int = CHUNK_ITEMS
) -> tuple[dict[str, str], Counter[str]]:
    """POST the turns through /memory/batch; dia_id -> memory id as returned (a duplicate maps to
    the existing memory), and the count of each status."""
    memories = [build_memory(t) for t in turns]
    labels = [f"{t.sample_id} {t.dia_id}" for t in turns]
    ids, statuses = store_batches(client, memories, labels, chunk_size)
    return {t.dia_id: memory_id for t, memory_id in zip(turns, ids, strict=True)}, statuses


def stored_contents(client: httpx.Client, sample_id: str) -> dict[str, str]:
    """normalised content -> memory id of every memory tagged locomo:<sample_id>."""
    return contents_by_tag(client, conversation_tag(sample_id))


def contents_by_tag(client: httpx.Client, tag: str) -> dict[str, str]:
    """normalised content -> memory id of every memory carrying `tag` (GET /memory/by-tag, paged)."""
    found: dict[str, str] = {}
    offset = 0
    while True:
        response = client.get("/memory/by-tag", params={"tags": tag, "limit": LISTING_PAGE, "offset": offset})
        if response.status_code != 200:
            raise SystemExit(f"GET /memory/by-tag: {response.status_code} {response.text[:300]}")
        body = response.json()
        items = body.get("memories") or body.get("results") or []
        for item in items:
            memory = item.get("memory") or item
            memory_id = str(item.get("id") or memory["id"])
            found.setdefault(normalize_content(memory.get("content") or ""), memory_id)
        if not body.get("has_more") or not items:
            return found
        offset += len(items)


def map_by_content(
    turns: Sequence[T], contents: dict[str, str], key: Callable[[T], str]
) -> dict[str, str] | None:
    """key(turn) -> memory id by content when every turn is already stored, else None (within a
    tenant, identical content is one memory, so its content names it)."""
    mapping: dict[str, str] = {}
    for turn in turns:
        memory_id = contents.get(normalize_content(turn.content))
        if memory_id is None:
            return None
        mapping[key(turn)] = memory_id
    return mapping


def map_stored(turns: Sequence[Turn], contents: dict[str, str]) -> dict[str, str] | None:
    """dia_id -> memory id by content when every turn is already stored, else None."""
    return map_by_content(turns, contents, lambda t: t.dia_id)


def ensure_ingested(
    client: httpx.Client, conversations: Sequence[Conversation], chunk_size: int
) -> tuple[dict[str, dict[str, str]], IngestStats]:
    """Per sample_id, dia_id -> memory id; conversations whose turns are all stored already
    (a reused --keep-data dir) are not sent again."""
    stats = IngestStats()
    mappings: dict[str, dict[str, str]] = {}
    start = time.perf_counter()
    for conv in conversations:
        existing = map_stored(conv.turns, stored_contents(client, conv.sample_id))
        if existing is not None:
            mappings[conv.sample_id] = existing
            stats.reused.append(conv.sample_id)
            continue
        t0 = time.perf_counter()
        mapping, statuses = ingest_turns(client, conv.turns, chunk_size)
        mappings[conv.sample_id] = mapping
        stats.sent += len(conv.turns)
        stats.statuses.update(statuses)
        stats.ingested.append(conv.sample_id)
        log(
            f"ingested {conv.sample_id}: {len(conv.turns)} turns in {time.perf_counter() - t0:.1f}s "
            f"({dict(statuses)})"
        )
    stats.ingest_s = time.perf_counter() - start
    return mappings, stats


def shared_ids(mappings: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """Memory ids reached from turns of several conversations (content duplicated across them):
    such a memory carries only the first conversation's tags, so the others cannot recall it."""
    owners: dict[str, set[str]] = defaultdict(set)
    for sample_id, mapping in mappings.items():
        for memory_id in mapping.values():
            owners[memory_id].add(sample_id)
    return {mid: sorted(s) for mid, s in owners.items() if len(s) > 1}


def embedding_state(health: dict[str, Any]) -> tuple[int | None, int | None]:
    """(memories awaiting embedding or enrichment plus queued jobs, drift difference) from a
    /health body; None when unknown."""
    counts = health.get("counts") or {}
    drift = health.get("drift") or {}
    pending = counts.get("embedding_pending", drift.get("embedding_pending"))
    if pending is None:
        return None, drift.get("difference")
    depths = (health.get("queues") or {}).get("depths") or {}
    waiting = sum(int(v) for name, v in depths.items() if name in ("embed", "enrich") and int(v) > 0)
    return pending + int(counts.get("enrichment_pending") or 0) + waiting, drift.get("difference")


def wait_for_embeddings(client: httpx.Client, timeout: float, poll: float = 1.0) -> float:
    """Poll /health until nothing awaits embedding and the vector index mirrors the graph."""
    start = time.perf_counter()
    last_line = 0.0
    interactive = sys.stderr.isatty()
    while True:
        elapsed = time.perf_counter() - start
        body = client.get("/health").json()
        pending, difference = embedding_state(body)
        if pending == 0 and difference == 0:
            if interactive:
                print(file=sys.stderr)
            return elapsed
        line = (
            f"waiting for embeddings: pending={pending} drift={difference} "
            f"vectors={body.get('vector_count')} memories={body.get('memory_count')} ({elapsed:.0f}s)"
        )
        if interactive:
            print("\r" + line, end="", file=sys.stderr, flush=True)
        elif elapsed - last_line >= 10:
            log(line)
            last_line = elapsed
        if elapsed > timeout:
            raise SystemExit(f"embeddings not drained after {timeout:.0f}s: {line}")
        time.sleep(poll)


# --- recall -------------------------------------------------------------------------------------


@dataclass
class Answer:
    question: Question
    ids: list[str]
    results: list[dict[str, Any]]
    client_ms: float
    timings: dict[str, float]


def ask(client: httpx.Client, question: Question, limit: int, extra: dict[str, Any] | None = None) -> Answer:
    body = {
        "query": question.question,
        "tags": [conversation_tag(question.sample_id)],
        "limit": limit,
        **(extra or {}),
    }
    return Answer(question, *post_recall(client, body))


def post_recall(
    client: httpx.Client, body: dict[str, Any]
) -> tuple[list[str], list[dict[str, Any]], float, dict[str, float]]:
    """POST /recall: the ids and results in order, the client round trip in ms, and the server's
    numeric `timings_ms`."""
    start = time.perf_counter()
    response = client.post("/recall", json=body)
    client_ms = (time.perf_counter() - start) * 1000
    if response.status_code != 200:
        raise SystemExit(f"POST /recall {body}: {response.status_code} {response.text[:500]}")
    payload = response.json()
    results = payload.get("results") or []
    ids = [str(r.get("id") or (r.get("memory") or {}).get("id")) for r in results]
    timings = {
        k: float(v) for k, v in (payload.get("timings_ms") or {}).items() if isinstance(v, int | float)
    }
    return ids, results, client_ms, timings


# --- metrics ------------------------------------------------------------------------------------


def dedupe(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def question_metrics(
    evidence: Sequence[str], dia_to_memory: dict[str, str], retrieved: Sequence[str], ks: Sequence[int]
) -> dict[str, float]:
    """all@k, any@k, frac@k (over evidence turns) and reciprocal rank of the first evidence turn.

    A turn counts as found when the memory its content was stored as (several turns with the
    same content share one memory) is among the first k distinct ids returned."""
    if not evidence:
        raise ValueError("a question without evidence is skipped, not scored")
    rank_of: dict[str, int] = {}
    for rank, memory_id in enumerate(dedupe(retrieved), start=1):
        rank_of[memory_id] = rank
    ranks = [rank_of.get(dia_to_memory.get(d, ""), 0) for d in evidence]
    out: dict[str, float] = {}
    for k in ks:
        hits = sum(1 for r in ranks if 0 < r <= k)
        out[f"all@{k}"] = float(hits == len(ranks))
        out[f"any@{k}"] = float(hits > 0)
        out[f"frac@{k}"] = hits / len(ranks)
    first = min((r for r in ranks if r > 0), default=0)
    out["mrr"] = 1.0 / first if first else 0.0
    return out


def metric_names(ks: Sequence[int]) -> list[str]:
    return [f"{m}@{k}" for k in ks for m in ("all", "any", "frac")] + ["mrr"]


def _mean_row(rows: Sequence[dict[str, float]], names: Sequence[str]) -> dict[str, float]:
    return {name: (statistics.fmean(r[name] for r in rows) if rows else 0.0) for name in names}


def aggregate(scored: Sequence[tuple[int, dict[str, float]]], ks: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Mean metrics per category ("1".."5"), over categories 1-4 together ("1-4"), each with n.
    Keys appear in report order: 1, 2, 3, 4, 1-4, 5, then any unexpected category."""
    names = metric_names(ks)
    by_category: dict[int, list[dict[str, float]]] = defaultdict(list)
    for category, metrics in scored:
        by_category[category].append(metrics)
    out: dict[str, dict[str, Any]] = {}

    def row(label: str, name: str, rows: list[dict[str, float]]) -> None:
        out[label] = {"name": name, "n": len(rows), **_mean_row(rows, names)}

    for c in MAIN_CATEGORIES:
        row(str(c), CATEGORY_NAMES[c], by_category.get(c, []))
    row(OVERALL, "overall", [m for c in MAIN_CATEGORIES for m in by_category.get(c, [])])
    row(str(ADVERSARIAL), CATEGORY_NAMES[ADVERSARIAL], by_category.get(ADVERSARIAL, []))
    for c in sorted(set(by_category) - {*MAIN_CATEGORIES, ADVERSARIAL}):
        row(str(c), f"category {c}", by_category[c])
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


class Timed(Protocol):
    """A recall answer's latencies: the client round trip and the server's stages, in ms."""

    client_ms: float
    timings: dict[str, float]


def latency_summary(answers: Sequence[Timed]) -> dict[str, Any]:
    client = [a.client_ms for a in answers]
    stages: dict[str, list[float]] = defaultdict(list)
    for a in answers:
        for stage, ms in a.timings.items():
            stages[stage].append(ms)
    return {
        "client_ms": {
            "n": len(client),
            "p50": round(percentile(client, 0.50), 2),
            "p95": round(percentile(client, 0.95), 2),
            "p99": round(percentile(client, 0.99), 2),
            "mean": round(statistics.fmean(client), 2) if client else math.nan,
        },
        "server_ms": {
            stage: {
                "n": len(v),
                "mean": round(statistics.fmean(v), 2),
                "p50": round(percentile(v, 0.50), 2),
                "p95": round(percentile(v, 0.95), 2),
            }
            for stage, v in stages.items()
        },
    }


def miss_record(
    answer: Answer, conv: Conversation, dia_to_memory: dict[str, str], k: int
) -> dict[str, Any] | None:
    """A JSONL record for error analysis when not every evidence turn is in the top k."""
    q = answer.question
    top = dedupe(answer.ids)[:k]
    if all(dia_to_memory.get(d) in top for d in q.evidence):
        return None
    turns = {t.dia_id: t for t in conv.turns}
    memory_to_dia: dict[str, list[str]] = defaultdict(list)
    for dia_id, memory_id in dia_to_memory.items():
        memory_to_dia[memory_id].append(dia_id)
    by_id = {str(r.get("id") or (r.get("memory") or {}).get("id")): r for r in answer.results}
    evidence_ids = {dia_to_memory.get(d) for d in q.evidence}
    return {
        "sample_id": q.sample_id,
        "index": q.index,
        "category": q.category,
        "question": q.question,
        "answer": q.answer,
        "evidence": [
            {
                "dia_id": d,
                "content": turns[d].content,
                "timestamp": turns[d].timestamp,
                "rank": top.index(dia_to_memory[d]) + 1 if dia_to_memory.get(d) in top else None,
            }
            for d in q.evidence
        ],
        "top_k": [
            {
                "rank": rank,
                "dia_ids": memory_to_dia.get(mid, []),
                "evidence": mid in evidence_ids,
                "content": (by_id.get(mid, {}).get("memory") or {}).get("content"),
                "score": by_id.get(mid, {}).get("score"),
                "match_type": by_id.get(mid, {}).get("match_type"),
            }
            for rank, mid in enumerate(top, start=1)
        ],
    }


# --- report -------------------------------------------------------------------------------------


def command_line(argv: Sequence[str]) -> str:
    """The command used, with the token value masked."""
    return common.command_line("locomo.py", argv)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def render_markdown(report: dict[str, Any]) -> str:
    meta, config = report["meta"], report["config"]
    ks = config["k"]
    names = metric_names(ks)
    extra = config["recall_params"]
    lines = [
        f"# LoCoMo retrieval ({meta['date']}, {meta['machine']}, commit {meta['git_commit']})",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Service: {config['service']}; embedding {config['embedding']}; recall limit {config['limit']}"
        + (f", extra recall params `{json.dumps(extra)}`" if extra else "")
        + f"; conversations {', '.join(config['conversations'])}.",
        "",
        "| category | " + " | ".join(n.replace("mrr", "MRR") for n in names) + " | n |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for label, row in report["metrics"].items():
        title = f"{label} {row['name']}" if label != OVERALL else "**all 1-4**"
        if label == str(ADVERSARIAL):
            title += " (apart)"
        lines.append(f"| {title} | " + " | ".join(_fmt(row[n]) for n in names) + f" | {row['n']} |")
    q = report["questions"]
    lines += [
        "",
        f"Questions: {q['used']} used, {q['skipped']} skipped (no existing evidence id)"
        + (f", by category {q['skipped_by_category']}" if q["skipped"] else "")
        + f"; {q['ignored_evidence_ids']} malformed/unknown evidence ids ignored.",
        "",
        "## Recall latency (ms)",
        "",
        "| measure | p50 | p95 | p99 | mean |",
        "|---|---|---|---|---|",
    ]
    c = report["latency"]["client_ms"]
    lines.append(f"| client round trip | {c['p50']} | {c['p95']} | {c['p99']} | {c['mean']} |")
    for stage, s in report["latency"]["server_ms"].items():
        lines.append(f"| server `{stage}` | {s['p50']} | {s['p95']} | | {s['mean']} |")
    ing = report["ingest"]
    lines += [
        "",
        f"Ingest: {ing['sent']} memories sent in {ing['ingest_s']} s (statuses {ing['statuses']}; "
        f"reused conversations: {ing['reused'] or 'none'}); embedding drain {ing['embed_wait_s']} s.",
    ]
    return "\n".join(lines) + "\n"


def write_report(report: dict[str, Any], out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    (out / "locomo.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = render_markdown(report)
    (out / "locomo.md").write_text(markdown)
    return markdown


# --- main ---------------------------------------------------------------------------------------


def parse_ks(text: str) -> list[int]:
    ks = sorted({int(part) for part in text.split(",") if part.strip()})
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError("--k needs positive integers, e.g. 5,10")
    return ks


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--k", type=parse_ks, default=[5, 10], help="cut-offs, comma list (default 5,10)")
    parser.add_argument("--limit", type=int, help="recall limit (default: the largest k)")
    parser.add_argument("--conversations", help="comma list of sample ids (default: all)")
    parser.add_argument("--dump-misses", type=Path, help="JSONL of questions missing evidence in top k")
    add_service_arguments(parser, DEFAULT_DATA, "LoCoMo JSON")
    return parser


def add_service_arguments(parser: argparse.ArgumentParser, data: Path, data_help: str) -> None:
    """The options of a retrieval benchmark run against a service: which service, where the data
    and the reports are, ingest and wait settings."""
    parser.add_argument("--url", help="benchmark a running service instead of starting one")
    parser.add_argument("--token", default=os.environ.get("AUTOMEM_API_TOKEN"), help="API key for --url")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks", help="directory for the reports")
    parser.add_argument("--data", type=Path, default=data, help=data_help)
    parser.add_argument(
        "--keep-data", type=Path, help="data dir of the embedded service, kept; a rerun skips ingest"
    )
    parser.add_argument("--ingest-only", action="store_true", help="ingest, wait for embeddings, stop")
    parser.add_argument(
        "--recall-params", type=json.loads, default={}, help='extra /recall body fields, JSON: {"x": 1}'
    )
    parser.add_argument("--chunk", type=int, default=CHUNK_ITEMS, help="memories per batch request")
    parser.add_argument("--embed-timeout", type=float, default=1800, help="seconds to wait for embeddings")
    parser.add_argument("--start-timeout", type=float, default=180, help="seconds to wait for the service")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of the embedded service (repeat), e.g. RECALL_ENTITY_LINKING=false for an ablation",
    )


def describe_embedding(client: httpx.Client, url: str) -> str:
    """`provider/model (Nd)` of the service's embedding, from /health (logged; a warning for the
    hash provider)."""
    embedding = client.get("/health").json().get("embedding") or {}
    embedding_desc = f"{embedding.get('provider')}/{embedding.get('model')} ({embedding.get('dimension')}d)"
    log(f"service {url}: embedding {embedding_desc}")
    if embedding.get("provider") == "hash":
        log("WARNING: the service uses hash embeddings; semantic recall numbers are meaningless")
    return embedding_desc


def run(args: argparse.Namespace, url: str, token: str | None, service: str) -> int:
    ks: list[int] = args.k
    limit = args.limit or max(ks)
    if limit < max(ks):
        raise SystemExit(f"--limit {limit} is below the largest k {max(ks)}")
    names = [n.strip() for n in args.conversations.split(",")] if args.conversations else None
    conversations = [load_conversation(s) for s in select_samples(load_dataset(args.data), names)]
    for conv in conversations:
        for note in conv.notes:
            log(f"data: {note}")

    headers = {"X-API-Key": token} if token else {}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        embedding_desc = describe_embedding(client, url)
        mappings, stats = ensure_ingested(client, conversations, args.chunk)
        stats.embed_wait_s = wait_for_embeddings(client, args.embed_timeout)
        for memory_id, owners in shared_ids(mappings).items():
            log(f"WARNING: memory {memory_id} holds turns of {owners}; only the first one's tag reaches it")
        log(
            f"ingest: {stats.sent} turns sent in {stats.ingest_s:.1f}s {dict(stats.statuses)}, "
            f"reused {stats.reused or 'none'}; embedding drain {stats.embed_wait_s:.1f}s; "
            f"total {stats.ingest_s + stats.embed_wait_s:.1f}s"
        )
        if args.ingest_only:
            counts = client.get("/health").json().get("counts")
            log(f"health counts: {counts}")
            return 0

        answers: list[Answer] = []
        scored: list[tuple[int, dict[str, float]]] = []
        misses: list[dict[str, Any]] = []
        total = sum(len(c.questions) for c in conversations)
        bar = common.progress(total, "questions")
        for conv in conversations:
            mapping = mappings[conv.sample_id]
            for q in conv.questions:
                answer = ask(client, q, limit, args.recall_params)
                answers.append(answer)
                scored.append((q.category, question_metrics(q.evidence, mapping, answer.ids, ks)))
                if args.dump_misses:
                    record = miss_record(answer, conv, mapping, max(ks))
                    if record:
                        misses.append(record)
                bar.update()
                if len(answers) % 100 == 0 and bar.disable:
                    log(f"asked {len(answers)}/{total}")
        bar.close()

    skipped = [s for c in conversations for s in c.skipped]
    report = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "git_commit": git_commit(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "command": command_line(sys.argv[1:]),
        },
        "config": {
            "service": service,
            "embedding": embedding_desc,
            "data": str(args.data),
            "conversations": [c.sample_id for c in conversations],
            "k": ks,
            "limit": limit,
            "recall_params": args.recall_params,
        },
        "metrics": aggregate(scored, ks),
        "questions": {
            "used": len(scored),
            "skipped": len(skipped),
            "skipped_by_category": dict(Counter(str(s["category"]) for s in skipped)),
            "ignored_evidence_ids": sum(len(q.ignored_evidence) for c in conversations for q in c.questions)
            + sum(len(s["ignored"]) for s in skipped),
            "skipped_list": skipped,
            "data_notes": [n for c in conversations for n in c.notes],
        },
        "latency": latency_summary(answers),
        "ingest": {
            "turns": sum(len(c.turns) for c in conversations),
            "sent": stats.sent,
            "statuses": dict(stats.statuses),
            "ingested": stats.ingested,
            "reused": stats.reused,
            "ingest_s": round(stats.ingest_s, 2),
            "embed_wait_s": round(stats.embed_wait_s, 2),
        },
    }
    if args.dump_misses:
        args.dump_misses.parent.mkdir(parents=True, exist_ok=True)
        args.dump_misses.write_text("".join(json.dumps(m) + "\n" for m in misses))
        log(f"wrote {len(misses)} misses to {args.dump_misses}")
    print(write_report(report, args.out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return with_service(
        args, lambda a, svc, desc: run(a, svc.url, svc.token, desc), "automem-locomo-", common.model_env()
    )


def with_service(
    args: argparse.Namespace,
    run: Callable[[argparse.Namespace, common.Service, str], int],
    prefix: str,
    env: dict[str, str],
) -> int:
    """`run(args, service, description)` against --url (with --token, and --admin-token when the
    parser has it), or else against an embedded service started with `env` (its data in
    --keep-data when given) and stopped at the end; 130 when interrupted (SIGINT or SIGTERM)."""
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    try:
        if args.url:
            if args.keep_data:
                log("--keep-data is ignored with --url")
            url, admin = args.url.rstrip("/"), getattr(args, "admin_token", None)
            external = common.Service(url, args.token or "", admin or "")
            return run(args, external, f"external {args.url}")
        settings = dict(item.split("=", 1) for item in getattr(args, "env", []))
        with common.embedded_service(
            {**env, **settings}, data_dir=args.keep_data, start_timeout=args.start_timeout, prefix=prefix
        ) as service:
            kept = f", data kept in {args.keep_data}" if args.keep_data else ""
            chosen = "".join(f", {k}={v}" for k, v in sorted(settings.items()))
            words = common.category_words({**env, **settings})
            return run(args, service, f"embedded (automem serve{kept}{chosen}; category words {words})")
    except KeyboardInterrupt:
        log("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
