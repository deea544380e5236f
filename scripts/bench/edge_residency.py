"""Resident memory of a reloaded Qdrant Edge shard: Edge's default placement of the dense vectors
against the service's (cold).

Each placement gets a shard written as the service writes it (`EdgeVectorStore.upsert`, the load
benchmark's memories with their payloads and keyword text, batches of 200). Then a process of its
own loads a copy, as the API process does at each start, and runs exact searches, which read every
vector (`store_memory.py`'s shard child): its resident memory, anonymous and file-backed apart, is
the API process's share for the shard after a restart.

    python scripts/bench/edge_residency.py --size 100000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import qdrant_edge as qe

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from automem.record import MemoryRecord
from automem.stores.vectors import VectorPoint
from automem.stores.vectors.qdrant_edge import EdgeVectorStore, shard_config
from automem.vectorsync import payload_for
from scripts.bench import store_memory
from scripts.bench.common import ROOT, report_title, run_child, run_meta, write_report
from scripts.bench.load import DIM, Corpus

PLACEMENTS: dict[str, qe.Memory | None] = {"Edge's default": None, "cold (the service's)": qe.Memory.Cold}
BATCH = 200


def point(corpus: Corpus, n: int) -> VectorPoint:
    memory = corpus.memory(n)
    record = MemoryRecord(
        id=f"00000000-0000-4000-8000-{n:012d}",
        content=memory["content"],
        type=memory["type"],
        tags=memory["tags"],
        importance=memory["importance"],
        timestamp=memory["timestamp"],
        t_valid=memory["timestamp"],
    )
    return VectorPoint(record.id, memory["embedding"], payload_for(record), record.content)


def write_shard(path: Path, size: int, placement: qe.Memory | None) -> float:
    """Seconds to write `size` points to a new shard at `path` with this vector placement."""
    qe.EdgeShard.create(str(path), shard_config(DIM, "float16", placement)).close()
    store = EdgeVectorStore(str(path))
    store.ensure_collection(DIM)
    corpus = Corpus()
    start = time.monotonic()
    for first in range(0, size, BATCH):
        store.upsert([point(corpus, n) for n in range(first, min(size, first + BATCH))])
    seconds = time.monotonic() - start
    store.close()
    return seconds


def measure(size: int) -> list[dict[str, Any]]:
    rows = []
    for name, placement in PLACEMENTS.items():
        workdir = Path(tempfile.mkdtemp(prefix="edge-residency-"))
        try:
            shard = workdir / "shard"
            seconds = write_shard(shard, size, placement)
            loaded = run_child(store_memory.__file__, "--shard-child", str(shard))
            rows.append({"placement": name, "write_seconds": round(seconds, 1), **loaded})
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return rows


def _resident(stage: dict[str, float], base: dict[str, float]) -> str:
    """RSS / anonymous / file-backed MB of a stage, less the bare interpreter's."""
    return " / ".join(
        f"{stage.get(key, 0.0) - base.get(key, 0.0):,.0f}" for key in ("VmRSS", "RssAnon", "RssFile")
    )


def render(report: dict[str, Any]) -> str:
    size = report["size"]
    lines = [
        report_title("A reloaded Edge shard's resident memory by vector placement", report["meta"]),
        "",
        f"Command: `{report['meta']['command']}`. {size:,} points of the load benchmark's memories "
        "(384-d float16 vectors, payloads, keyword text); each shard reloaded in a process of its "
        "own, then five exact searches. MB above the bare interpreter's.",
        "",
        "| placement | writes s | after loading: RSS / anonymous / file "
        "| after searches: RSS / anonymous / file | after searches, bytes a point |",
        "|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        base, load, done = row["python_mb"], row["after_load_mb"], row["after_searches_mb"]
        per_point = (done.get("VmRSS", 0.0) - base.get("VmRSS", 0.0)) * 2**20 / size
        lines.append(
            f"| {row['placement']} | {row['write_seconds']} | {_resident(load, base)} "
            f"| {_resident(done, base)} | {per_point:,.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="points in each shard")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args()
    report = {"meta": run_meta("edge_residency.py"), "size": args.size, "rows": measure(args.size)}
    return write_report(args.out, "edge_residency", report, render)


if __name__ == "__main__":
    raise SystemExit(main())
