"""Walks over every memory: how long one pass over the store takes, and how it grows.

The vector repair (every start of the API), the reconcile job (at start and every 15 minutes:
the embedding and enrichment backlogs), a tenant's ids (tenant restore), the decay pass and the
time-key migration each read every memory a page at a time. This builds stores of the given
sizes straight in an embedded FalkorDB (memories as the write path makes them, with client
vectors, none enriched yet: the store right after an import), then times each walk (wall time
and the FalkorDB server's CPU) and, beside them, the paging they replaced (`m.id > $after ORDER
BY m.id LIMIT n`, kept here as reference Cypher), which sorted every memory past the cursor for
each page. Writes benchmarks/walks.json and walks.md.

    automem bench walks --sizes 10000,100000,1000000   (or python scripts/bench/walks.py ...)
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from automem.embedded import EmbeddedFalkorDB  # noqa: E402
from automem.stores.graph import GraphStore  # noqa: E402
from scripts.bench.common import log, process_cpu_seconds, run_meta, write_report  # noqa: E402

PAGE = 1000  # the callers' page (automem.backlog.PAGE, the vector repair's page)
DIMENSION = 384
BATCH = 1000
TENANTS = ("default", "team")

# The paging the walks replaced, for comparison on the same store.
OLD_REVS = "MATCH (m:Memory) WHERE m.id > $after RETURN m.id, m.rev ORDER BY m.id LIMIT $limit"
OLD_BACKLOG = """
MATCH (m:Memory)
WHERE m.id > $after AND m.state = 'active' AND ($tenant IS NULL OR m.tenant = $tenant)
  AND (coalesce(m.enriched, false) = false OR coalesce(m.enrichment_version, 0) < $version)
  AND ($retry OR coalesce(m.enrich_failed_version, -1) <> m.version)
RETURN m.id ORDER BY m.id LIMIT $limit
"""


def memory_rows(start: int, count: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for n in range(start, start + count):
        content = f"memory {n}: a note about topic {n % 97} written during the import"
        digest = hashlib.sha256(content.encode()).hexdigest()
        stamp = f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T12:00:00+00:00"
        props = {
            "id": str(uuid.uuid4()),
            "tenant": TENANTS[n % 10 == 0],
            "content": content,
            "content_hash": digest,
            "dedup_key": f"{TENANTS[n % 10 == 0]}:{digest}",
            "type": "Context",
            "confidence": 0.9,
            "tags": [f"project-{n % 20}"],
            "tag_prefixes": [f"project-{n % 20}"],
            "importance": 0.5,
            "metadata": "{}",
            "timestamp": stamp,
            "created_at": stamp,
            "updated_at": stamp,
            "last_accessed": stamp,
            "t_valid": stamp,
            "state": "active",
            "version": 1,
            "rev": 1,
            "enriched": False,
            "seq_scope": "",
            "embedding_hash": digest,
            "embedding_model": "client",
        }
        vector = rng.standard_normal(DIMENSION).astype(np.float32)
        rows.append({"props": props, "embedding": (vector / np.linalg.norm(vector)).tolist()})
    return rows


def old_pages(graph: GraphStore, cypher: str, params: dict[str, Any]) -> Iterator[list[list[Any]]]:
    after = ""
    while rows := graph._ro(cypher, params | {"after": after, "limit": PAGE}):
        yield rows
        after = str(rows[-1][0])


def timed(pid: int, pages: Callable[[], Iterator[Sequence[Any]]]) -> dict[str, Any]:
    cpu, start = process_cpu_seconds(pid), time.perf_counter()
    count = sum(len(page) for page in pages())
    return {
        "memories": count,
        "seconds": round(time.perf_counter() - start, 3),
        "falkordb_cpu_seconds": round(process_cpu_seconds(pid) - cpu, 2),
    }


def walks(graph: GraphStore, replaced: bool) -> dict[str, Callable[[], Iterator[Sequence[Any]]]]:
    backlog = {"tenant": None, "version": 1, "retry": False}
    now: dict[str, Callable[[], Iterator[Sequence[Any]]]] = {
        "vector repair / audit (ids and revs)": lambda: graph.revs_pages(PAGE),
        "enrichment backlog (reconcile)": lambda: graph.enrichment_pages(PAGE, version=1),
        "embedding backlog (reconcile)": lambda: graph.reembed_pages("bench-model", False, PAGE),
        "one tenant's ids (tenant restore)": lambda: graph.tenant_id_pages("team", PAGE),
        "decay pass (active memories, links)": lambda: graph.scoring_pages(PAGE),
    }
    before: dict[str, Callable[[], Iterator[Sequence[Any]]]] = {
        "replaced: ids and revs, m.id > $after ORDER BY m.id": lambda: old_pages(graph, OLD_REVS, {}),
        "replaced: enrichment backlog, the same": lambda: old_pages(graph, OLD_BACKLOG, backlog),
    }
    return now | before if replaced else now


def measure(size: int, seed: int, replaced: bool) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="automem-walks-") as tmp:
        server = EmbeddedFalkorDB(Path(tmp))
        url = server.start()
        try:
            graph = GraphStore.from_url(url, "memories")
            graph.ensure_schema(DIMENSION)
            start = time.perf_counter()
            for first in range(0, size, BATCH):
                graph.create_memories(memory_rows(first, min(BATCH, size - first), rng))
            log(f"{size:,} memories written in {time.perf_counter() - start:.0f} s")
            assert server.process is not None
            pid = server.process.pid
            results = {}
            for name, pages in walks(graph, replaced).items():
                results[name] = timed(pid, pages)
                log(f"  {name}: {results[name]}")
            return {"size": size, "walks": results}
        finally:
            server.stop()


def render(report: dict[str, Any]) -> str:
    sizes = [stage["size"] for stage in report["stages"]]
    names = list(report["stages"][0]["walks"])
    lines = [
        f"# Walks over every memory ({report['meta']['date']}, commit {report['meta']['git_commit']})",
        "",
        f"Command: `{report['meta']['command']}`. Stores built straight in an embedded FalkorDB "
        "(every memory active, none enriched: the store right after an import; a tenth in a "
        f"second tenant); pages of {PAGE}. Seconds of wall time / of the FalkorDB server's CPU "
        "for one whole walk.",
        "",
        "| walk | " + " | ".join(f"{s:,}" for s in sizes) + (" | per 10x |" if len(sizes) > 1 else ""),
        "|---|" + "---|" * len(sizes) + ("---|" if len(sizes) > 1 else ""),
    ]
    for name in names:
        cells = [stage["walks"].get(name) for stage in report["stages"]]
        row = " | ".join(
            f"{c['seconds']} s / {c['falkordb_cpu_seconds']} s ({c['memories']:,})" if c else "not run"
            for c in cells
        )
        timed = [(size, c) for size, c in zip(sizes, cells, strict=True) if c]
        growth = ""
        if len(sizes) > 1:
            growth = " - |"
            if len(timed) > 1 and timed[0][1]["seconds"] > 0:
                (small, first), (large, last) = timed[0], timed[-1]
                per_tenfold = (last["seconds"] / first["seconds"]) ** (1 / math.log10(large / small))
                growth = f" {per_tenfold:.1f}x |"
        lines.append(f"| {name} | {row} |{growth}")
    lines += [
        "",
        "(n) is the number of memories the walk returned. The walks read windows of node ids "
        "(`GraphStore._walk`): each query costs its window, so a walk grows with the store; "
        "the replaced paging sorted every memory past its cursor for each page (timed up to "
        f"{report['meta']['replaced_up_to']:,} memories). Per 10x: how the wall time grows "
        "for each tenfold of the store, between the smallest and the largest size timed (10x is "
        "linear, 100x quadratic).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    parser.add_argument(
        "--replaced-up-to",
        type=int,
        default=100_000,
        help="time the replaced paging only at sizes up to this (at 1M one such walk takes ~25 minutes)",
    )
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    stages = [measure(size, args.seed, size <= args.replaced_up_to) for size in sizes]
    report = {
        "meta": run_meta("walks.py", sizes=args.sizes, replaced_up_to=args.replaced_up_to),
        "stages": stages,
    }
    return write_report(args.out, "walks", report, render)


if __name__ == "__main__":
    raise SystemExit(main())
