"""Sequence placement: what enrichment's neighbour lookup costs a memory written as it happens.

Builds a store straight in an embedded FalkorDB (memories spread over 2025 in `--scopes`
sequence scopes, as an import leaves them), then writes live memories one at a time, each a few
seconds after the last of its scope (an agent writing as it goes: every one is its scope's
newest), and times `GraphStore.sequence_place` for each, the call enrichment makes, with the
scopes' time ranges (`automem.stores.scope_bounds`) and without them, alternating on the same
store. A random memory of the import is timed the same way as the control: its neighbours are
usually close on both sides. Writes benchmarks/sequence.json and sequence.md.

    automem bench sequence --sizes 10000,100000   (or python scripts/bench/sequence.py ...)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from automem.embedded import EmbeddedFalkorDB  # noqa: E402
from automem.stores.graph import GraphStore  # noqa: E402
from scripts.bench.common import log, run_meta, write_report  # noqa: E402
from scripts.bench.walks import BATCH, DIMENSION, memory_rows  # noqa: E402

LIVE_START = datetime(2026, 6, 1, tzinfo=UTC)


def _scoped(rows: list[dict[str, Any]], scopes: int, rng: random.Random) -> list[dict[str, Any]]:
    """The import's rows, each in one of `scopes` scopes at a random second of 2025."""
    for row in rows:
        props = row["props"]
        scope = f"project-{rng.randrange(scopes)}"
        stamp = (
            datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(365 * 86_400))
        ).isoformat()
        props.update(tenant="default", tags=[scope], tag_prefixes=[scope], seq_scope=scope)
        props.update(timestamp=stamp, created_at=stamp, dedup_key=f"default:{props['id']}")
    return rows


def _timed_place(graph: GraphStore, memory_id: str, ranges: bool) -> tuple[float, int]:
    """Milliseconds and queries of one lookup, with or without the ranges."""
    doc = graph.get_memories([memory_id])[0]
    calls = 0
    plain = graph._ro

    def counted(cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        nonlocal calls
        calls += 1
        return plain(cypher, params)

    graph._ro = counted  # type: ignore[method-assign]
    graph.scope_ranges_complete = ranges
    try:
        start = time.perf_counter()
        graph.sequence_place(doc)
        return (time.perf_counter() - start) * 1000, calls
    finally:
        del graph._ro
        graph.scope_ranges_complete = True


def _summary(samples: list[tuple[float, int]]) -> dict[str, float]:
    times = sorted(ms for ms, _ in samples)
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
        "queries": round(statistics.mean(q for _, q in samples), 2),
    }


def _ab(ids: Sequence[str], graph: GraphStore) -> dict[str, dict[str, float]]:
    """Each memory timed with and without the ranges, in alternating order."""
    runs: dict[bool, list[tuple[float, int]]] = {True: [], False: []}
    for n, memory_id in enumerate(ids):
        for ranges in (True, False) if n % 2 else (False, True):
            runs[ranges].append(_timed_place(graph, memory_id, ranges))
    return {"with ranges": _summary(runs[True]), "without": _summary(runs[False])}


def _live(graph: GraphStore, size: int, scopes: int, live: int, rng: random.Random) -> dict[str, Any]:
    """Live memories written one at a time, each timed while it is its scope's newest (the first
    of each scope, whose previous memory is months back, is written but not timed)."""
    vectors = np.random.default_rng(rng.randrange(1 << 30))
    runs: dict[bool, list[tuple[float, int]]] = {True: [], False: []}
    for n in range(live + scopes):
        row = _scoped(memory_rows(size + n, 1, vectors), scopes, rng)[0]
        row["props"]["seq_scope"] = row["props"]["tags"][0] = row["props"]["tag_prefixes"][0] = (
            f"project-{n % scopes}"
        )
        stamp = (LIVE_START + timedelta(seconds=5 * n)).isoformat()
        row["props"].update(timestamp=stamp, created_at=stamp)
        graph.create_memories([row])
        if n >= scopes:
            for ranges in (True, False) if n % 2 else (False, True):
                runs[ranges].append(_timed_place(graph, row["props"]["id"], ranges))
    return {"with ranges": _summary(runs[True]), "without": _summary(runs[False])}


def measure(size: int, scopes: int, live: int, seed: int) -> dict[str, Any]:
    rng, vectors = random.Random(seed), np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="automem-sequence-") as tmp:
        server = EmbeddedFalkorDB(Path(tmp))
        graph = GraphStore.from_url(server.start(), "memories")
        try:
            graph.ensure_schema(DIMENSION)
            imported: list[str] = []
            for first in range(0, size, BATCH):
                rows = _scoped(memory_rows(first, min(BATCH, size - first), vectors), scopes, rng)
                graph.create_memories(rows)
                imported += [r["props"]["id"] for r in rows]
            log(f"{size:,} memories in {scopes} scopes written")
            results = {
                "newest of its scope": _live(graph, size, scopes, live, rng),
                "an imported memory (control)": _ab(rng.sample(imported, live), graph),
            }
            log(f"  {size:,}: {results}")
            return {"size": size, "scopes": scopes, "live": live, "results": results}
        finally:
            server.stop()


def render(report: dict[str, Any]) -> str:
    lines = [
        f"# Sequence placement ({report['meta']['date']}, commit {report['meta']['git_commit']})",
        "",
        f"Command: `{report['meta']['command']}`. `GraphStore.sequence_place` (enrichment's "
        "neighbour lookup, both sides and the links) timed in the benchmark's process against "
        "an embedded FalkorDB, with the scopes' time ranges and without them, alternating.",
        "",
        "| store | memory | with ranges p50 / p95 | queries | without p50 / p95 | queries |",
        "|---|---|---|---|---|---|",
    ]
    for stage in report["stages"]:
        for kind, ab in stage["results"].items():
            on, off = ab["with ranges"], ab["without"]
            lines.append(
                f"| {stage['size']:,} in {stage['scopes']} scopes | {kind} | {on['p50_ms']} / "
                f"{on['p95_ms']} ms | {on['queries']} | {off['p50_ms']} / {off['p95_ms']} ms | "
                f"{off['queries']} |"
            )
    lines += [
        "",
        "Newest of its scope: written a few seconds after the last live memory of its scope, so "
        "its previous one is inside the first (hour) window and nothing follows it. Without the "
        "ranges its 'after' side falls through the day window to a scan of the whole scope.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument(
        "--scopes", type=int, default=9, help="sequence scopes (the load corpus: ~1,170 a scope at 10k)"
    )
    parser.add_argument("--live", type=int, default=300, help="live memories timed per size")
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args(argv)
    stages = [measure(int(size), args.scopes, args.live, args.seed) for size in args.sizes.split(",")]
    report = {"meta": run_meta("sequence.py", sizes=args.sizes, scopes=args.scopes), "stages": stages}
    return write_report(args.out, "sequence", report, render)


if __name__ == "__main__":
    raise SystemExit(main())
