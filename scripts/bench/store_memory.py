"""What a kept store holds in memory, per memory, in each of its two engines.

FalkorDB: the graph's own breakdown (`GRAPH.MEMORY USAGE`: node attributes by label, matrices,
range indexes), the server's `used_memory`, and what dropping the vector index gives back (the
HNSW index's own share, which `GRAPH.MEMORY USAGE` does not count). The Qdrant Edge shard: its
files by component, and the resident memory of a process that loads it and runs exact searches
(which read every dense vector), anonymous and file-backed apart. Works on copies: the kept
store is untouched.

    python scripts/bench/load.py --sizes 100000 --keep-data /tmp/m100/data
    python scripts/bench/store_memory.py --data-dir /tmp/m100/data
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from automem.embedded import EmbeddedFalkorDB
from automem.stores.graph import VECTOR_LABEL
from scripts.bench.common import ROOT, report_title, run_child, run_meta, status_mb, write_report

GRAPH = "memories"


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, dict):
        return {_decode(k): _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def used_mb(client: redis.Redis, settle: float = 0.0) -> float:
    """The server's used_memory; with `settle`, once it has held still that long (a dropped
    index is freed in the background, after the drop answers)."""
    reading = int(client.info("memory")["used_memory"])
    still_since = time.monotonic()
    while time.monotonic() - still_since < settle:
        time.sleep(0.5)
        now = int(client.info("memory")["used_memory"])
        if abs(now - reading) > 2**20:
            still_since = time.monotonic()
        reading = now
    return round(reading / 2**20, 1)


def label_counts(client: redis.Redis) -> dict[str, int]:
    labels = [
        row[0] for row in _decode(client.execute_command("GRAPH.RO_QUERY", GRAPH, "CALL db.labels()"))[1]
    ]
    return {
        label: int(
            client.execute_command("GRAPH.RO_QUERY", GRAPH, f"MATCH (n:`{label}`) RETURN count(n)")[1][0][0]
        )
        for label in labels
    }


def wait_indexed(client: redis.Redis, vectors: bool, timeout: float = 3600) -> None:
    """Until every index is operational and the vector index is there (or gone): FalkorDB fills
    indexes in the background after a load, and replaces a label's index when its vector index
    is dropped."""
    deadline = time.monotonic() + timeout
    query = "CALL db.indexes() YIELD properties, status RETURN properties, status"
    while time.monotonic() < deadline:
        rows = _decode(client.execute_command("GRAPH.RO_QUERY", GRAPH, query))[1]
        indexed = any("embedding" in str(row[0]) for row in rows)
        if indexed == vectors and all(row[1] == "OPERATIONAL" for row in rows):
            return
        time.sleep(1)
    raise TimeoutError("indexes still under construction")


def measure_graph(data_dir: Path) -> dict[str, Any]:
    copy = Path(tempfile.mkdtemp(prefix="graph-memory-"))
    shutil.copytree(data_dir / "falkordb", copy / "falkordb")
    shutil.copy(data_dir / "falkordb.secret", copy / "falkordb.secret")
    server = EmbeddedFalkorDB(copy)
    server.start(timeout=3600)
    try:
        client = redis.Redis.from_url(server.url)
        wait_indexed(client, vectors=True)
        usage = _decode(client.execute_command("GRAPH.MEMORY", "USAGE", GRAPH, "SAMPLES", "1000"))
        before = used_mb(client)
        client.execute_command(
            "GRAPH.QUERY", GRAPH, f"DROP VECTOR INDEX FOR (v:{VECTOR_LABEL}) ON (v.embedding)"
        )
        return {
            "labels": label_counts(client),
            "graph_memory_usage_mb": usage,
            "used_memory_mb": before,
            "used_memory_without_vector_index_mb": used_mb(client, settle=5.0),
        }
    finally:
        server.stop()
        shutil.rmtree(copy, ignore_errors=True)


SHARD_PARTS = {
    "vector_storage": "dense vectors",
    "vector_storage-bm25": "keyword (BM25) vectors",
    "payload_storage": "payloads",
    "payload_index": "payload indexes",
    "mutable_id_tracker": "id tracker",
}


def shard_files(shard: Path) -> dict[str, float]:
    """MB on disk of each component, summed over the shard's segments, and its write-ahead log."""
    wal = [f for f in (shard / "wal").rglob("*") if f.is_file()]
    sizes: dict[str, float] = {"write-ahead log": sum(f.stat().st_blocks * 512 for f in wal) / 2**20}
    for segment in (shard / "segments").iterdir():
        for part in segment.iterdir():
            prefixes = sorted(
                SHARD_PARTS, key=len, reverse=True
            )  # "vector_storage-bm25" before "vector_storage"
            name = next((SHARD_PARTS[k] for k in prefixes if part.name.startswith(k)), "other")
            files = [part] if part.is_file() else [f for f in part.rglob("*") if f.is_file()]
            # Blocks, not sizes: Edge's mapped files are sparse, their apparent size is their capacity.
            sizes[name] = sizes.get(name, 0.0) + sum(f.stat().st_blocks * 512 for f in files) / 2**20
    return {k: round(v, 1) for k, v in sizes.items()}


def shard_child(shard: Path, out: Path) -> int:
    """In a process of its own: load a copy of the shard, run exact searches, report its memory."""
    import qdrant_edge as qe

    copy = Path(tempfile.mkdtemp(prefix="shard-memory-")) / "shard"
    shutil.copytree(shard, copy)
    try:
        before = status_mb()
        loaded = qe.EdgeShard.load(str(copy))
        after_load = status_mb()
        dim = json.loads((copy / "edge_config.json").read_text())["vectors"][""]["size"]
        vector = np.random.default_rng(0).normal(size=dim).tolist()
        for _ in range(5):
            loaded.query(qe.QueryRequest(query=qe.Query.Nearest(vector), limit=100, with_payload=False))
        result = {"python_mb": before, "after_load_mb": after_load, "after_searches_mb": status_mb()}
        loaded.close()
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)
    out.write_text(json.dumps(result))
    return 0


def measure_shard(data_dir: Path) -> dict[str, Any]:
    shard = next((data_dir / "qdrant-edge").iterdir())
    return {"files_mb": shard_files(shard), **run_child(__file__, "--shard-child", str(shard))}


def _row(name: str, mb: float, memories: int) -> str:
    return f"| {name} | {mb:,.1f} | {mb * 2**20 / memories:,.0f} |"


def graph_rows(r: dict[str, Any], memories: int) -> list[str]:
    usage = r["graph_memory_usage_mb"]
    parts = [
        (f"node attributes: {label}", mb)
        for label, mb in usage["amortized_node_attributes_by_label_sz_mb"].items()
        if mb
    ]
    blocks = usage["amortized_node_block_sz_mb"] + usage["amortized_edge_block_sz_mb"]
    parts += [
        ("label and relation matrices", usage["label_matrices_sz_mb"] + usage["relation_matrices_sz_mb"]),
        (
            "node and edge blocks, edge attributes",
            blocks + sum(usage["amortized_edge_attributes_by_type_sz_mb"].values()),
        ),
        ("range indexes", usage["indices_sz_mb"]),
        (
            "the vector index (used_memory given back by dropping it)",
            r["used_memory_mb"] - r["used_memory_without_vector_index_mb"],
        ),
        (
            "the rest: Redis keys (queues, streams), allocator, module",
            r["used_memory_without_vector_index_mb"] - usage["total_graph_sz_mb"],
        ),
        ("**the server's used_memory in all**", r["used_memory_mb"]),
    ]
    return [_row(name, mb, memories) for name, mb in parts]


def shard_rows(r: dict[str, Any], memories: int) -> list[str]:
    rows = [
        _row(f"on disk: {name}", mb, memories)
        for name, mb in sorted(r["files_mb"].items(), key=lambda x: -x[1])
    ]
    python, loaded, searched = r["python_mb"], r["after_load_mb"], r["after_searches_mb"]
    rows += [
        _row(
            "resident after loading, anonymous (less the bare interpreter)",
            loaded["RssAnon"] - python["RssAnon"],
            memories,
        ),
        _row(
            "resident after loading, file-backed (mapped files)",
            loaded["RssFile"] - python["RssFile"],
            memories,
        ),
        _row("resident after exact searches, file-backed", searched["RssFile"] - python["RssFile"], memories),
        _row("**resident after exact searches in all**", searched["VmRSS"] - python["VmRSS"], memories),
    ]
    return rows


def render(report: dict[str, Any]) -> str:
    meta, graph, shard = report["meta"], report["graph"], report["shard"]
    memories = graph["labels"].get("Memory", 0) or 1
    return (
        "\n".join(
            [
                report_title("What a store holds in memory, per memory", meta),
                "",
                f"Command: `{meta['command'].split(' --about')[0]}`. {meta.get('about', '')}",
                "",
                "## FalkorDB",
                "",
                "Nodes: " + ", ".join(f"{k} {v:,}" for k, v in graph["labels"].items()) + ".",
                "",
                "| part | MB | bytes a memory |",
                "|---|---|---|",
                *graph_rows(graph, memories),
                "",
                "## The Qdrant Edge shard (held by the API process in embedded mode)",
                "",
                "| part | MB | bytes a memory |",
                "|---|---|---|",
                *shard_rows(shard, memories),
            ]
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--about", default="", help="how the store was made, for the report")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    parser.add_argument("--shard-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.shard_child:
        return shard_child(args.shard_child, args.child_out)
    if args.data_dir is None:
        parser.error("--data-dir is required")
    report = {
        "meta": run_meta("store_memory.py", about=args.about),
        "graph": measure_graph(args.data_dir),
        "shard": measure_shard(args.data_dir),
    }
    return write_report(args.out, "store_memory", report, render)


if __name__ == "__main__":
    raise SystemExit(main())
