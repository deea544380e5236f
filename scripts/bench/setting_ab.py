"""One setting, two values, back to back: recall and single writes on one store, alternating.

This machine's speed drifts by up to a fifth between runs, so a setting's effect is measured by
restarting `automem serve` on the same store with each value in turn (A B A B ...): each run
warms up, measures recall at concurrency 1 and 4 (the load benchmark's plain queries) with each
service process's CPU time per recall, then single POSTs at concurrency 4 of new memories, and
waits for the worker to drain what they queued, so the next run starts from the same state.
The store is the load benchmark's corpus with the defaults (enrichment on), built first unless
--keep-data holds one already. Results: benchmarks/<name>.json and .md.

    python scripts/bench/setting_ab.py --setting AUTOMEM_FALKORDB_THREADS --values 2,1 --pairs 4
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.bench.common import (
    ROOT,
    cpu_ms_each,
    cpu_seconds,
    embedded_service,
    log,
    report_title,
    run_meta,
    write_report,
)
from scripts.bench.load import Corpus, batch_bodies, batch_posts, recall_runs, single_posts, wait_drained

ROLES = ("api", "falkordb", "worker")


def build_store(data: Path, corpus: Corpus, n: int) -> None:
    with embedded_service(data_dir=data, prefix="automem-ab-") as service, service.client() as client:
        batch_posts(client, batch_bodies(corpus.memory, 0, n, 200), n, 200, 2)
        log(f"built {n} memories: {wait_drained(client, 3600)}")


def measure(data: Path, setting: str, value: str, corpus: Corpus, first: int, rounds: int) -> dict[str, Any]:
    """One run of the service with `setting=value`: recall c1 and c4, CPU per recall, single POSTs."""
    with (
        embedded_service({setting: value}, data_dir=data, prefix="automem-ab-") as service,
        service.client() as client,
    ):
        wait_drained(client, 600)  # the start-up repair and reconcile, before anything is timed
        bodies = [corpus.query(n) for n in range(rounds)]
        recall_runs(client, bodies[:100], 4)  # warm-up
        c1 = recall_runs(client, bodies[: rounds // 4], 1)[0]
        assert service.proc is not None
        before = cpu_seconds(service.proc.pid)
        c4 = recall_runs(client, bodies, 4)[0]
        after = cpu_seconds(service.proc.pid)
        items = [corpus.memory(n) for n in range(first, first + rounds)]
        writes = single_posts(client, items, 4)
        wait_drained(client, 600)
    cpu = cpu_ms_each(before, after, rounds, ROLES, digits=2)
    row = {
        "value": value,
        "recall_c1_p50_ms": c1["p50_ms"],
        "recall_c4_qps": c4["qps"],
        "recall_c4_p95_ms": c4["p95_ms"],
        "cpu_ms_per_recall": cpu,
        "single_c4_per_s": writes["per_s"],
    }
    log(f"{setting}={value}: {row}")
    return row


def summary(results: Sequence[dict[str, Any]], values: Sequence[str]) -> dict[str, dict[str, float]]:
    """Mean of each measure per value."""
    out: dict[str, dict[str, float]] = {}
    for value in values:
        rows = [r for r in results if r["value"] == value]
        means = {
            k: statistics.mean(r[k] for r in rows) for k in rows[0] if k not in ("value", "cpu_ms_per_recall")
        }
        for role in ROLES:
            means[f"{role}_cpu_ms"] = statistics.mean(r["cpu_ms_per_recall"][role] for r in rows)
        out[value] = {k: round(v, 2) for k, v in means.items()}
    return out


def render(report: dict[str, Any]) -> str:
    meta, setting = report["meta"], report["meta"]["setting"]
    lines = [
        report_title(f"{setting}: A/B", meta),
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Store: {meta['store']}. Each run restarts `automem serve` on it with one value, in the "
        "order below; recall of the load benchmark's plain queries, "
        f"{meta['rounds']} at concurrency 4 ({meta['rounds'] // 4} at concurrency 1), then as many "
        "single POSTs of new memories at concurrency 4, then the drain of what they queued.",
        "",
        "| run | value | recall c1 p50 ms | recall c4 QPS | recall c4 p95 ms "
        "| CPU ms per recall: API / FalkorDB / worker | single POST c4 per s |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, row in enumerate(report["results"], start=1):
        cpu = row["cpu_ms_per_recall"]
        lines.append(
            f"| {n} | {row['value']} | {row['recall_c1_p50_ms']} | {row['recall_c4_qps']} | "
            f"{row['recall_c4_p95_ms']} | {cpu['api']} / {cpu['falkordb']} / {cpu['worker']} | "
            f"{row['single_c4_per_s']} |"
        )
    lines += [
        "",
        "Means:",
        "",
        "| value | recall c1 p50 ms | recall c4 QPS | recall c4 p95 ms "
        "| CPU ms per recall: API / FalkorDB / worker | single POST c4 per s |",
        "|---|---|---|---|---|---|",
    ]
    for value, m in report["summary"].items():
        lines.append(
            f"| {value} | {m['recall_c1_p50_ms']} | {m['recall_c4_qps']} | {m['recall_c4_p95_ms']} | "
            f"{m['api_cpu_ms']} / {m['falkordb_cpu_ms']} / {m['worker_cpu_ms']} | {m['single_c4_per_s']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--setting", required=True, help="the setting's variable, e.g. AUTOMEM_FALKORDB_THREADS"
    )
    parser.add_argument("--values", required=True, help="two (or more) values, comma list, run in turn")
    parser.add_argument("--pairs", type=int, default=4, help="rounds of the values")
    parser.add_argument("--n", type=int, default=10_000, help="memories of a store this run builds")
    parser.add_argument("--rounds", type=int, default=1500, help="recalls at concurrency 4 per run")
    parser.add_argument("--keep-data", type=Path, help="a store to reuse (built here when empty or new)")
    parser.add_argument("--name", help="report name (default: the setting in lower case)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args(argv)
    values = args.values.split(",")
    corpus = Corpus()
    with tempfile.TemporaryDirectory(prefix="automem-ab-data-") as tmp:
        data = args.keep_data or Path(tmp)
        if not (data / "falkordb").exists():
            build_store(data, corpus, args.n)
        results = []
        for n in range(args.pairs * len(values)):
            first = 10_000_000 + n * args.rounds  # new memories each run, never the store's own
            results.append(measure(data, args.setting, values[n % len(values)], corpus, first, args.rounds))
    store = f"the kept store {args.keep_data}" if args.keep_data else f"{args.n} memories built by this run"
    meta = run_meta("setting_ab.py", setting=args.setting, rounds=args.rounds, store=store)
    report = {"meta": meta, "results": results, "summary": summary(results, values)}
    return write_report(args.out, args.name or args.setting.lower(), report, render)


if __name__ == "__main__":
    sys.exit(main())
