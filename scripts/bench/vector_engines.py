"""Where the nearest-neighbour search could run in embedded mode, measured apart: FalkorDB's HNSW
index (the vector channel today), Qdrant Edge's exact search (what embedded mode's shard does for a
narrow filter), and Edge's own HNSW built by `optimize()` in a process of its own, with float32
vectors and with int8-quantised vectors beside float32 originals kept on disk.

Issue 15 asks for the alternatives measured before choosing where the vector work runs, and its
1M target (largest process <= 4 GB) needs one copy of each vector less than today's layout. Each
engine and size runs in a fresh child process, so its resident memory is its own: N clustered
384-d vectors (the load benchmark's topic model), each with two tags (one of 20 projects, one of
8 sources), inserted in batches, then searched with 50 queries: plain (k = 240, the vector
channel's over-fetch), filtered to one project (~5 % of the store, k = 100) and to one project
and one source (~0.6 %, k = 100). Recall@k is against the exact answer computed with NumPy.

    python scripts/bench/vector_engines.py                          # 100k
    python scripts/bench/vector_engines.py --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from automem.stores.graph import vector_index_options
from scripts.bench.common import (
    ROOT,
    log,
    percentiles,
    report_title,
    run_child,
    run_meta,
    status_mb,
    write_report,
)

DIM = 384
SEED = 20251129
TOPICS = 10
PROJECTS = 20
SOURCES = 8
CHUNK = 1000
QUERIES = 50
K_PLAIN = 240
K_FILTERED = 100
ENGINES = ("falkordb-hnsw", "edge-exact", "edge-hnsw-f32", "edge-hnsw-int8", "edge-exact-f16")
ENGINE_HELP = {
    "falkordb-hnsw": "FalkorDB's HNSW (M 16, efConstruction 64), the vector on a node property",
    "edge-exact": "an Edge shard as embedded mode kept it (appendable segments, no HNSW), float32: exact",
    "edge-exact-f16": "the same with float16 vectors (AUTOMEM_EDGE_VECTOR_DATATYPE's default since stop 51)",
    "edge-hnsw-f32": "an Edge shard after optimize(): HNSW (m 16, ef_construct 64, payload_m 16), float32",
    "edge-hnsw-int8": "the same with int8 scalar quantisation in RAM, float32 originals on disk, rescored",
}


# --- the data: deterministic chunks, regenerated wherever they are needed ----------------------


def centroids() -> np.ndarray:
    c = np.random.default_rng(SEED).normal(size=(TOPICS, DIM))
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def _topic_vectors(gen: np.random.Generator, topics: np.ndarray) -> np.ndarray:
    v = centroids()[topics] + 0.9 * gen.normal(size=(len(topics), DIM)) / np.sqrt(DIM)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def chunks(size: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """(first id, vectors, project of each, source of each), CHUNK points at a time."""
    for start in range(0, size, CHUNK):
        n = min(CHUNK, size - start)
        gen = np.random.default_rng(SEED + 1 + start)
        topics = gen.integers(0, TOPICS, n)
        yield start, _topic_vectors(gen, topics), gen.integers(0, PROJECTS, n), gen.integers(0, SOURCES, n)


def queries() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gen = np.random.default_rng(SEED - 1)
    return (
        _topic_vectors(gen, gen.integers(0, TOPICS, QUERIES)),
        gen.integers(0, PROJECTS, QUERIES),
        gen.integers(0, SOURCES, QUERIES),
    )


def tags_of(project: int, source: int) -> list[str]:
    return [f"project-{project}", f"source-{source}"]


def exact_answers(size: int) -> dict[str, list[set[int]]]:
    """The true nearest ids of every query and kind, streamed over the chunks."""
    qv, qp, qs = queries()
    best: dict[str, list[list[tuple[float, int]]]] = {kind: [[] for _ in range(QUERIES)] for kind in KINDS}
    for start, vectors, projects, sources in chunks(size):
        scores = vectors @ qv.T  # unit vectors: cosine
        for q in range(QUERIES):
            for kind, (k, mask) in _kind_masks(projects, sources, qp[q], qs[q]).items():
                idx = np.nonzero(mask)[0]
                if len(idx) == 0:
                    continue
                top = idx[np.argsort(-scores[idx, q])[:k]]
                best[kind][q] = sorted(best[kind][q] + [(float(scores[i, q]), start + int(i)) for i in top])[
                    -k:
                ]
    return {kind: [{i for _, i in rows} for rows in per_query] for kind, per_query in best.items()}


KINDS = ("plain", "project", "project+source")


def _kind_masks(
    projects: np.ndarray, sources: np.ndarray, p: int, s: int
) -> dict[str, tuple[int, np.ndarray]]:
    every = np.ones(len(projects), dtype=bool)
    return {
        "plain": (K_PLAIN, every),
        "project": (K_FILTERED, projects == p),
        "project+source": (K_FILTERED, (projects == p) & (sources == s)),
    }


# --- measuring inside the child ---------------------------------------------------------------


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


Search = Callable[[np.ndarray, int, int, str], list[int]]


def time_searches(search: Search) -> dict[str, Any]:
    """p50 of each kind of search, and the ids each query found (the parent scores them)."""
    qv, qp, qs = queries()
    out: dict[str, Any] = {}
    for kind in KINDS:
        k = K_PLAIN if kind == "plain" else K_FILTERED
        search(qv[0], int(qp[0]), int(qs[0]), kind)  # warm
        times, found = [], []
        for q in range(QUERIES):
            started = time.perf_counter()
            ids = search(qv[q], int(qp[q]), int(qs[q]), kind)
            times.append(time.perf_counter() - started)
            found.append(ids)
        out[kind] = {**percentiles(times), "k": k, "ids": found}
    return out


@contextmanager
def ticking(period: float = 0.01) -> Iterator[list[float]]:
    """A Python thread that wakes every `period` while the block runs; yields (then fills) the
    longest it waited past its period: whether the block let other Python threads run."""
    longest = [0.0]
    done = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not done.wait(period):
            now = time.perf_counter()
            longest[0] = max(longest[0], now - last - period)
            last = now

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield longest
    finally:
        done.set()
        thread.join()


def run_edge(engine: str, size: int, where: Path) -> dict[str, Any]:
    import qdrant_edge as qe

    hnsw = qe.HnswIndexConfig(m=16, ef_construct=64, full_scan_threshold=10000, payload_m=16)
    params: dict[str, Any] = {"size": DIM, "distance": qe.Distance.Cosine}
    if engine == "edge-exact-f16":
        params["datatype"] = qe.VectorStorageDatatype.Float16
    if engine == "edge-hnsw-int8":
        params["memory"] = qe.Memory.Cold
        params["quantization_config"] = qe.ScalarQuantizationConfig(
            type=qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned
        )
    shard = qe.EdgeShard.create(
        str(where), qe.EdgeConfig(vectors=qe.EdgeVectorParams(**params), hnsw_config=hnsw)
    )
    shard.update(qe.UpdateOperation.create_field_index("tags", qe.PayloadSchemaType.Keyword))
    started = time.perf_counter()
    for start, vectors, projects, sources in chunks(size):
        points = [
            qe.Point(start + i, vectors[i].tolist(), {"tags": tags_of(int(projects[i]), int(sources[i]))})
            for i in range(len(vectors))
        ]
        shard.update(qe.UpdateOperation.upsert_points(points))
    shard.flush()
    result: dict[str, Any] = {"insert_per_s": round(size / (time.perf_counter() - started))}
    if engine.startswith("edge-hnsw"):
        started = time.perf_counter()
        with ticking() as longest_wait:
            shard.optimize()
        result["optimize_s"] = round(time.perf_counter() - started, 1)
        result["python_thread_longest_wait_s"] = round(longest_wait[0], 2)

    def search(vector: np.ndarray, project: int, source: int, kind: str) -> list[int]:
        must: list[Any] = []
        if kind != "plain":
            must.append(qe.FieldCondition("tags", match=qe.MatchValue(f"project-{project}")))
        if kind == "project+source":
            must.append(qe.FieldCondition("tags", match=qe.MatchValue(f"source-{source}")))
        hits = shard.query(
            qe.QueryRequest(
                query=qe.Query.Nearest(vector.tolist()),
                limit=K_PLAIN if kind == "plain" else K_FILTERED,
                filter=qe.Filter(must=must) if must else None,
                with_payload=False,
            )
        )
        return [int(h.id) for h in hits]

    result["memory_after_build_mb"] = status_mb()
    result["searches"] = time_searches(search)
    result["disk_mb"] = disk_mb(where)
    shard.close()
    return result


def run_falkordb(size: int, where: Path) -> dict[str, Any]:
    from falkordb import FalkorDB

    from automem.embedded import EmbeddedFalkorDB

    server = EmbeddedFalkorDB(where)
    server.start()
    try:
        graph = FalkorDB.from_url(server.url).select_graph("engines")
        graph.query("CREATE INDEX FOR (v:V) ON (v.id)")
        graph.query(f"CREATE VECTOR INDEX FOR (v:V) ON (v.embedding) OPTIONS {vector_index_options(DIM)}")
        started = time.perf_counter()
        for start, vectors, projects, sources in chunks(size):
            rows = [
                {
                    "id": start + i,
                    "tags": tags_of(int(projects[i]), int(sources[i])),
                    "e": vectors[i].tolist(),
                }
                for i in range(len(vectors))
            ]
            graph.query(
                "UNWIND $rows AS r CREATE (v:V {id: r.id, tags: r.tags}) SET v.embedding = vecf32(r.e)",
                {"rows": rows},
            )
        result: dict[str, Any] = {"insert_per_s": round(size / (time.perf_counter() - started))}

        def search(vector: np.ndarray, project: int, source: int, kind: str) -> list[int]:
            # The vector channel's way with a filter: ask the index for twice the limit, filter after.
            k = K_PLAIN if kind == "plain" else K_FILTERED
            wanted = (
                []
                if kind == "plain"
                else [f"project-{project}"] + ([f"source-{source}"] if kind != "project" else [])
            )
            rows = graph.ro_query(
                "CALL db.idx.vector.queryNodes('V', 'embedding', $fetch, vecf32($q)) YIELD node, score "
                "WHERE all(t IN $tags WHERE t IN node.tags) RETURN node.id LIMIT $k",
                {"fetch": k if not wanted else 2 * k, "q": vector.tolist(), "tags": wanted, "k": k},
            ).result_set
            return [int(r[0]) for r in rows]

        assert server.process is not None
        result["memory_after_build_mb"] = status_mb(server.process.pid)
        result["searches"] = time_searches(search)
        result["server_peak_mb"] = status_mb(server.process.pid)["VmHWM"]
        result["disk_mb"] = disk_mb(where)
        return result
    finally:
        server.stop()


def child(engine: str, size: int, out: Path) -> int:
    where = Path(tempfile.mkdtemp(prefix=f"engines-{engine}-"))
    try:
        result = (
            run_falkordb(size, where)
            if engine == "falkordb-hnsw"
            else run_edge(engine, size, where / "shard")
        )
    finally:
        shutil.rmtree(where, ignore_errors=True)
    out.write_text(json.dumps(result))
    return 0


# --- the parent: one child per engine and size, then the recall of every answer ----------------


def score(searches: dict[str, Any], truth: dict[str, list[set[int]]]) -> None:
    """Replace each kind's found ids by how many it returned and its recall@k."""
    for kind, row in searches.items():
        found = row.pop("ids")
        hits = [len(set(f) & truth[kind][q]) / max(1, len(truth[kind][q])) for q, f in enumerate(found)]
        row["returned"] = round(sum(len(f) for f in found) / QUERIES, 1)
        row["recall"] = round(sum(hits) / QUERIES, 4)


def measure(engine: str, size: int, truth: dict[str, list[set[int]]]) -> dict[str, Any]:
    started = time.perf_counter()
    result = run_child(__file__, "--child", engine, "--size", str(size))
    score(result["searches"], truth)
    result.update(engine=engine, size=size, wall_s=round(time.perf_counter() - started, 1))
    log(f"{engine} at {size:,}: {result}")
    return result


def render(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [
        report_title("Where the nearest-neighbour search could run", meta),
        "",
        f"Command: `{meta['command']}`. " + (__doc__ or "").split("\n\n")[1].replace("\n", " "),
        "",
        *[
            f"- **{name}**: {text}"
            for name, text in ENGINE_HELP.items()
            if name in {r["engine"] for r in report["rows"]}
        ],
        "",
        "A Python thread that wakes every 10 ms ran beside `optimize()`; its longest wait says "
        "whether the build lets the owning process serve anything meanwhile (Edge holds the GIL). "
        "Memory is the engine's process after the build (for FalkorDB the server; for Edge the "
        "process holding the shard, its Python included): RSS, of which anonymous and file-backed "
        "(mapped shard files, which the kernel may drop), and the peak.",
        "",
        "| engine | N | insert /s | optimize s (longest Python wait s) | RSS MB | anon MB | file MB "
        "| peak MB | disk MB "
        "| plain p50 ms (recall@240) | one project p50 ms (recall@100) "
        "| project+source p50 ms (recall@100) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        mem = r["memory_after_build_mb"]
        cells = [
            f"{r['searches'][kind]['p50_ms']} ({r['searches'][kind].get('recall', '-')})" for kind in KINDS
        ]
        lines.append(
            f"| {r['engine']} | {r['size']:,} | {r['insert_per_s']:,} | {r.get('optimize_s', '-')} "
            f"({r.get('python_thread_longest_wait_s', '-')}) "
            f"| {mem.get('VmRSS')} | {mem.get('RssAnon')} | {mem.get('RssFile')} "
            f"| {r.get('server_peak_mb', mem.get('VmHWM'))} | {r['disk_mb']} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    parser.add_argument("--name", default="vector_engines", help="report file name (<name>.json, .md)")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.size, args.child_out)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        truth = exact_answers(size)
        for engine in args.engines.split(","):
            rows.append(measure(engine, size, truth))
    return write_report(args.out, args.name, {"meta": run_meta("vector_engines.py"), "rows": rows}, render)


if __name__ == "__main__":
    raise SystemExit(main())
