"""The graph's share of the batch path, with its vector index (embedded mode) and without it
(server mode: GRAPH_VECTOR_INDEX=auto with a Qdrant server).

For each setting, a fresh embedded FalkorDB and the service's own batch path in this process
(`build_services`, then `MemoryService.create_batch`): N memories of the load benchmark's corpus
with their 384-d client vectors, in batches, enrichment off (no jobs queue up in the server's
Redis). The vector store is a Qdrant Edge shard in this process in both runs (qdrant-client's
local mode, the usual stand-in for a server, slows to a crawl past 20k points); for the run
without the index the graph's index is dropped after start, as GRAPH_VECTOR_INDEX does when a
Qdrant server is configured (`GraphStore.ensure_schema(vector_index=False)`). Measured:
FalkorDB's CPU a memory (/proc), its resident memory at the end and its peak (VmHWM), and the
graph write's own time a memory, as the batch path waits for it (`GraphStore.create_memories`
timed alone). The batch rate is the service's validation and `create_batch` (the corpus is
made outside the timing, as a client would make it); it includes the Edge shard's point writes,
which a Qdrant server would make in its own process.

    python scripts/bench/graph_write.py --size 100000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from automem.embedded import EmbeddedFalkorDB
from automem.models import MemoryCreate
from automem.services import build_services
from automem.settings import Settings
from scripts.bench.common import ROOT, process_cpu_seconds, report_title, run_meta, status_mb, write_report
from scripts.bench.load import Corpus

SETTINGS = {"on": "the graph's vector index (embedded mode)", "off": "no graph vector index (server mode)"}


def measure(size: int, batch: int, index: str) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="graph-write-"))
    server = EmbeddedFalkorDB(workdir)
    server.start(timeout=120)
    try:
        pid = int(redis.Redis.from_url(server.url).info("server")["process_id"])
        settings = Settings(
            falkordb_url=server.url,
            redis_url=server.url,
            data_dir=str(workdir / "data"),
            embedding_provider="hash",
            vector_backend="edge",
            enrichment_enabled=False,
        )
        svc = build_services(settings, owner_of_vectors=True)
        svc.graph.ensure_schema(svc.embedder.dimension, vector_index=index == "on")
        graph_seconds = 0.0
        write = svc.graph.create_memories

        def timed_write(rows: Any) -> Any:
            nonlocal graph_seconds
            began = time.perf_counter()
            try:
                return write(rows)
            finally:
                graph_seconds += time.perf_counter() - began

        svc.graph.create_memories = timed_write  # type: ignore[method-assign]
        corpus = Corpus()
        cpu_before = process_cpu_seconds(pid)
        seconds = 0.0  # the service's part: the corpus is made outside it, as a client would
        for first in range(0, size, batch):
            items = [corpus.memory(n) for n in range(first, min(size, first + batch))]
            began = time.perf_counter()
            bodies = [MemoryCreate.model_validate(m, context={"settings": settings}) for m in items]
            svc.memories.create_batch(bodies)
            seconds += time.perf_counter() - began
        cpu = process_cpu_seconds(pid) - cpu_before
        memory = status_mb(pid)
        svc.close()
        return {
            "graph_vector_index": index,
            "memories": size,
            "seconds": round(seconds, 1),
            "batch_per_s": round(size / seconds, 1),
            "graph_write_ms_a_memory": round(graph_seconds * 1000 / size, 3),
            "falkordb_cpu_ms_a_memory": round(cpu * 1000 / size, 3),
            "falkordb_rss_mb": memory.get("VmRSS"),
            "falkordb_peak_mb": memory.get("VmHWM"),
        }
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def render(report: dict[str, Any]) -> str:
    meta, config = report["meta"], report["config"]
    lines = [
        report_title("The graph's share of the batch path, with and without its vector index", meta),
        "",
        f"Command: `{meta['command']}`. {config['size']:,} memories of the load corpus (384-d client "
        f"vectors) through `MemoryService.create_batch` in batches of {config['batch']}, enrichment off; "
        "the vector store a Qdrant Edge shard in this process in every run (the batch rate is the "
        "service's validation and batch write, the corpus made outside it, and includes the shard's "
        "point writes, which a Qdrant server would make in its own); without the index, the graph's "
        "index dropped after start, as GRAPH_VECTOR_INDEX=auto does with a Qdrant server.",
        "",
        "| graph | graph write ms a memory | FalkorDB CPU ms a memory | FalkorDB RSS MB "
        "| FalkorDB peak MB | batch / s |",
        "|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        lines.append(
            f"| {SETTINGS[run['graph_vector_index']]} | {run['graph_write_ms_a_memory']} | "
            f"{run['falkordb_cpu_ms_a_memory']} | {run['falkordb_rss_mb']:,.0f} | "
            f"{run['falkordb_peak_mb']:,.0f} | {run['batch_per_s']:,.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories written in each run")
    parser.add_argument("--batch", type=int, default=200, help="memories a batch")
    parser.add_argument("--index", default="on,off", help="runs: the graph's index on, off, or both")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    parser.add_argument("--name", default="graph_write", help="report file name, without extension")
    args = parser.parse_args()
    runs = [i for i in args.index.split(",") if i in SETTINGS]
    report = {
        "meta": run_meta("graph_write.py"),
        "config": {"size": args.size, "batch": args.batch},
        "runs": [measure(args.size, args.batch, index) for index in runs],
    }
    return write_report(args.out, args.name, report, render)


if __name__ == "__main__":
    raise SystemExit(main())
