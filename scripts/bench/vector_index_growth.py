"""FalkorDB's memory while its vector index grows: the transient above the resident memory.

Writes N 384-d vectors (the vector-engines benchmark's: ten topics, each point's noise as large
as its topic's centroid) to a fresh embedded FalkorDB in batches, as the service's batch path
does (`CYPHER rows=[...] UNWIND $rows ... vecf32(...)`, the parameters formatted by the graph
store's own `cypher_params`): onto one label with an HNSW vector index (the service's options),
onto K labels with an index each (`--partitions`: each batch to one of them in turn, so each
index holds a K-th), and onto a label without one; and samples the server's resident memory
every 20 ms. A *spike* is a sample more than `--threshold` MB above both samples `--gap` before and
after it: memory taken and given back within a fraction of a second. The report gives, per
quarter of the run, the write rate, the spikes' size and their size per vector then stored,
and how many vectors were written between two of them; then the server's final resident
memory, its peak (VmHWM), and a query asking every index for its nearest 100 (one statement,
`UNION ALL`): its p50, and how many of the exact 10 nearest the merged answers' best 10 hold.

    python scripts/bench/vector_index_growth.py --size 300000
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from automem.embedded import EmbeddedFalkorDB
from automem.stores.graph import Vector32, cypher_params, vector_index_options
from scripts.bench.common import ROOT, report_title, run_meta, status_mb, write_report
from scripts.bench.vector_engines import DIM, chunks, queries

GRAPH = "growth"
SAMPLE_SECONDS = 0.02


def _vector_index(label: str) -> str:
    """The service's own vector index (GraphStore._ensure_vector_index), on a label of the run's."""
    return f"CREATE VECTOR INDEX FOR (v:{label}) ON (v.e) OPTIONS {vector_index_options(DIM)}"


RANGE_INDEX = "CREATE INDEX FOR (v:V0) ON (v.id)"
WRITE = "UNWIND $rows AS r CREATE (:{label} {{id: r.id, e: vecf32(r.e)}})"
# Each index is asked for its nearest NEAREST (recall asks a few hundred candidates); the
# merged answers' best 10 are scored against the exact 10.
NEAREST = 100
SEARCH = (
    f"CALL db.idx.vector.queryNodes('{{label}}', 'e', {NEAREST}, vecf32($q)) YIELD node, score "
    "RETURN node.id, score"
)

Sample = tuple[float, float]  # (seconds since the first write, resident MB)
Mark = tuple[float, int]  # (seconds since the first write, vectors written by then)


def spikes(samples: list[Sample], marks: list[Mark], gap: int, threshold: float) -> list[dict[str, float]]:
    """The samples more than `threshold` MB above both samples `gap` positions away, one per
    run of adjacent ones (the one most above its neighbours), each with the vectors written by
    its time (the first batch that ended after it)."""
    found: list[dict[str, float]] = []
    times = [t for t, _ in marks]
    for i in range(gap, len(samples) - gap):
        t, rss = samples[i]
        excess = rss - max(samples[i - gap][1], samples[i + gap][1])
        if excess <= threshold:
            continue
        written = marks[min(bisect.bisect_right(times, t), len(marks) - 1)][1] if marks else 0
        spike = {"t": t, "rss_mb": rss, "excess_mb": excess, "written": written}
        if found and i - found[-1]["index"] <= gap:
            if excess > found[-1]["excess_mb"]:
                found[-1] = spike | {"index": i}
            continue
        found.append(spike | {"index": i})
    return [{k: v for k, v in s.items() if k != "index"} for s in found]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def quarters(size: int, marks: list[Mark], found: list[dict[str, float]]) -> list[dict[str, Any]]:
    """Per quarter of the vectors written: the write rate, and the spikes' size, size per vector
    stored and spacing (vectors written between two spikes)."""
    rows = []
    for q in range(4):
        low, high = size * q // 4, size * (q + 1) // 4
        span = [(t, n) for t, n in marks if low < n <= high]
        rate = 0.0
        if len(span) > 1 and span[-1][0] > span[0][0]:
            rate = (span[-1][1] - span[0][1]) / (span[-1][0] - span[0][0])
        inside = [s for s in found if low < s["written"] <= high]
        sizes = [s["excess_mb"] for s in inside]
        per_vector = _median([s["excess_mb"] * 2**20 / s["written"] for s in inside])
        spacing = _median([b["written"] - a["written"] for a, b in itertools.pairwise(inside)])
        rows.append(
            {
                "vectors": f"{low:,}-{high:,}",
                "writes_per_s": round(rate, 1),
                "spikes": len(inside),
                "spike_mb_median": None if not sizes else round(statistics.median(sizes), 1),
                "spike_mb_max": None if not sizes else round(max(sizes), 1),
                "bytes_per_vector_stored": None if per_vector is None else round(per_vector),
                "vectors_between_spikes": None if spacing is None else round(spacing),
            }
        )
    return rows


def _sampler(pid: int, start: float, samples: list[Sample], stop: threading.Event) -> None:
    while not stop.is_set():
        rss = status_mb(pid).get("VmRSS")
        if rss is not None:
            samples.append((time.monotonic() - start, rss))
        time.sleep(SAMPLE_SECONDS)


def _rows(first: int, vectors: np.ndarray) -> str:
    rows = [{"id": first + k, "e": Vector32(v.tolist())} for k, v in enumerate(vectors)]
    return cypher_params({"rows": rows})


def _labels(indexes: int) -> list[str]:
    return [f"V{k}" for k in range(max(indexes, 1))]


def recall_at_10(found: list[list[tuple[int, float]]], stored: np.ndarray, queries: np.ndarray) -> float:
    """Mean share of each query's exact 10 nearest (cosine) among the 10 best it was answered
    with; `found` holds each query's (id, cosine distance) rows from every index."""
    unit = stored / np.linalg.norm(stored, axis=1, keepdims=True)
    shares = []
    for rows, query in zip(found, queries, strict=True):
        exact = set(np.argsort(-(unit @ (query / np.linalg.norm(query))))[:10].tolist())
        best = {i for i, _ in sorted(rows, key=lambda row: row[1])[:10]}
        shares.append(len(exact & best) / 10)
    return round(float(np.mean(shares)), 3)


def _search(client: redis.Redis, labels: list[str], queries: np.ndarray) -> tuple[float, list[list[Any]]]:
    """p50 ms of one statement asking every label's index for its nearest, and its rows."""
    statement = " UNION ALL ".join(SEARCH.format(label=label) for label in labels)
    times, found = [], []
    for query in queries:
        params = cypher_params({"q": Vector32(query.tolist())})
        start = time.perf_counter()
        reply = client.execute_command("GRAPH.RO_QUERY", GRAPH, params + statement)
        times.append((time.perf_counter() - start) * 1000)
        found.append([(int(i), float(score)) for i, score in reply[1]])
    return round(statistics.median(times), 2), found


def _search_and_score(client: redis.Redis, labels: list[str], stored: np.ndarray) -> tuple[float, float]:
    """The vector-engines benchmark's queries asked of every index: p50 ms and recall@10."""
    asked = queries()[0]
    search_ms, found = _search(client, labels, asked)
    return search_ms, recall_at_10(found, stored, asked)


def measure(size: int, batch: int, indexes: int, gap: int, threshold: float) -> dict[str, Any]:
    """Write `size` vectors to a fresh server: onto `indexes` labels, a vector index each (a
    batch's vectors go to one label, in turn), or with `indexes` 0 onto one label without."""
    workdir = Path(tempfile.mkdtemp(prefix="index-growth-"))
    server = EmbeddedFalkorDB(workdir)
    server.start(timeout=120)
    try:
        client = redis.Redis.from_url(server.url)
        pid = int(client.info("server")["process_id"])
        labels = _labels(indexes)
        for label in labels if indexes else []:
            client.execute_command("GRAPH.QUERY", GRAPH, _vector_index(label))
        if not indexes:
            client.execute_command("GRAPH.QUERY", GRAPH, RANGE_INDEX)
        stored = np.concatenate([vectors for _, vectors, _, _ in chunks(size)])
        samples: list[Sample] = []
        marks: list[Mark] = []
        stop = threading.Event()
        start = time.monotonic()
        sampler = threading.Thread(target=_sampler, args=(pid, start, samples, stop), daemon=True)
        sampler.start()
        for first in range(0, size, batch):
            count, label = min(batch, size - first), labels[(first // batch) % len(labels)]
            rows = _rows(first, stored[first : first + count])
            client.execute_command("GRAPH.QUERY", GRAPH, rows + WRITE.format(label=label))
            marks.append((time.monotonic() - start, first + count))
        seconds = time.monotonic() - start
        time.sleep(1.0)
        stop.set()
        sampler.join()
        found = spikes(samples, marks, gap, threshold)
        final = status_mb(pid)
        above = final.get("VmHWM", 0.0) - final.get("VmRSS", 0.0)
        search_ms, recall = _search_and_score(client, labels, stored) if indexes else (None, None)
        return {
            "vector_indexes": indexes,
            "seconds": round(seconds, 1),
            "writes_per_s": round(size / seconds, 1),
            "quarters": quarters(size, marks, found),
            "spikes": len(found),
            "largest_spike_mb": round(max((s["excess_mb"] for s in found), default=0.0), 1),
            "final_rss_mb": final.get("VmRSS"),
            "peak_rss_mb": final.get("VmHWM"),
            # The sampled spikes are lower bounds (a copy can start and end between samples);
            # the kernel's peak is not.
            "peak_above_final_mb": round(above, 1),
            "peak_above_final_bytes_a_vector": round(above * 2**20 / size),
            "search_p50_ms": search_ms,
            "recall_at_10": recall,
            "samples": len(samples),
        }
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _cell(value: Any) -> str:
    return "" if value is None else f"{value:,}" if isinstance(value, int | float) else str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]


RUN_COLUMNS = {
    "writes_per_s": "writes / s",
    "spikes": "spikes",
    "largest_spike_mb": "largest spike MB",
    "final_rss_mb": "final RSS MB",
    "peak_rss_mb": "peak RSS (VmHWM) MB",
    "peak_above_final_bytes_a_vector": "peak above final, bytes a vector",
    "search_p50_ms": f"nearest {NEAREST} of each index, p50 ms",
    "recall_at_10": "recall@10 of the merged answers",
}
QUARTER_COLUMNS = {
    "vectors": "vectors",
    "writes_per_s": "writes / s",
    "spikes": "spikes",
    "spike_mb_median": "median spike MB",
    "spike_mb_max": "largest MB",
    "bytes_per_vector_stored": "bytes a stored vector",
    "vectors_between_spikes": "vectors between spikes",
}


def _label(run: dict[str, Any]) -> str:
    indexes = run["vector_indexes"]
    if not indexes:
        return "no vector index (a range index on id)"
    return "one vector index" if indexes == 1 else f"{indexes} vector indexes, a batch to each in turn"


def render(report: dict[str, Any]) -> str:
    meta, config, runs = report["meta"], report["config"], report["runs"]
    lines = [
        report_title("FalkorDB's memory while its vector index grows", meta),
        "",
        f"Command: `{meta['command']}`. {config['size']:,} vectors of {DIM} floats in batches of "
        f"{config['batch']}; resident memory sampled every {int(SAMPLE_SECONDS * 1000)} ms; a spike is a "
        f"sample more than {config['threshold_mb']} MB above both samples {config['gap']} places away.",
        "",
        *_table(["label", *RUN_COLUMNS.values()], [[_label(r), *(r[k] for k in RUN_COLUMNS)] for r in runs]),
        "",
        "A spike as sampled is a lower bound (a copy may begin and end between two samples); the",
        "peak the kernel recorded (VmHWM) is not.",
    ]
    for run in runs:
        rows = [[q[k] for k in QUARTER_COLUMNS] for q in run["quarters"]]
        lines += ["", f"### {_label(run).capitalize()}, by quarter of the run", ""]
        lines += _table(list(QUARTER_COLUMNS.values()), rows)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=300_000, help="vectors written in each run")
    parser.add_argument("--batch", type=int, default=200, help="vectors a write query")
    parser.add_argument("--gap", type=int, default=5, help="samples between a spike and its neighbours")
    parser.add_argument("--threshold", type=float, default=20.0, help="MB above both neighbours")
    parser.add_argument(
        "--partitions", default="1,4", help="vector indexes to spread the vectors over, a run each"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args()
    partitions = [int(k) for k in args.partitions.split(",") if k.strip()]
    report = {
        "meta": run_meta("vector_index_growth.py"),
        "config": {
            "size": args.size,
            "batch": args.batch,
            "gap": args.gap,
            "threshold_mb": args.threshold,
            "partitions": partitions,
        },
        "runs": [measure(args.size, args.batch, k, args.gap, args.threshold) for k in [*partitions, 0]],
    }
    return write_report(args.out, "vector_index_growth", report, render)


if __name__ == "__main__":
    raise SystemExit(main())
