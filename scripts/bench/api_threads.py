"""Gunicorn thread count of the API (AUTOMEM_API_THREADS): recall and ingest at each setting.

Builds one store (the load benchmark's corpus, enrichment off so the build is quick), then for
each thread count restarts `automem serve` on it and measures recall at concurrency 1 and 8 and
single-request ingest at concurrency 4. Results: benchmarks/api_threads.json and .md.

    python scripts/bench/api_threads.py --n 10000 --threads 2,4,8,16
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.bench.common import (
    ROOT,
    command_line,
    embedded_service,
    git_commit,
    log,
    machine_info,
    report_title,
)
from scripts.bench.load import Corpus, batch_bodies, batch_posts, recall_runs, single_posts

QUIET = {"EMBEDDING_PROVIDER": "hash", "ENRICHMENT_ENABLED": "false"}


def measure(data: Path, threads: int, corpus: Corpus, start: int, rounds: int) -> dict[str, Any]:
    env = {**QUIET, "AUTOMEM_API_THREADS": str(threads)}
    with (
        embedded_service(env, data_dir=data, prefix="automem-threads-") as service,
        service.client() as client,
    ):
        bodies = [corpus.query(n) for n in range(rounds)]
        recall_runs(client, bodies[:20], 1)  # warm-up
        out: dict[str, Any] = {"threads": threads}
        for concurrency in (1, 8):
            out[f"recall_c{concurrency}"] = recall_runs(client, bodies, concurrency)[0]
        items = [corpus.memory(n) for n in range(start, start + rounds)]
        out["ingest_c4"] = single_posts(client, items, 4)
    log(
        f"threads {threads}: " + ", ".join(f"{k} p50 {v['p50_ms']}" for k, v in out.items() if k != "threads")
    )
    return out


def render(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [
        report_title("API threads", meta),
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Store: {meta['n']} memories of the load benchmark's corpus (enrichment off); each setting "
        "restarts `automem serve` on it.",
        "",
        "| threads | recall c1 p50 / p95 ms | recall c1 QPS | recall c8 p50 / p95 ms | recall c8 QPS "
        "| ingest c4 per s | ingest c4 p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["results"]:
        c1, c8, ingest = row["recall_c1"], row["recall_c8"], row["ingest_c4"]
        lines.append(
            f"| {row['threads']} | {c1['p50_ms']} / {c1['p95_ms']} | {c1['qps']} | {c8['p50_ms']} / "
            f"{c8['p95_ms']} | {c8['qps']} | {ingest['per_s']} | {ingest['p50_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--threads", default="2,4,8,16", help="comma list of thread counts")
    parser.add_argument("--rounds", type=int, default=200, help="requests per measurement")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args(argv)
    corpus = Corpus()
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": command_line("api_threads.py", list(argv if argv is not None else sys.argv[1:])),
        "git_commit": git_commit(),
        "machine": machine_info(),
        "n": args.n,
    }
    results = []
    with tempfile.TemporaryDirectory(prefix="automem-threads-data-") as tmp:
        data = Path(tmp)
        with embedded_service(QUIET, data_dir=data) as service, service.client() as client:
            batch_posts(client, batch_bodies(corpus.memory, 0, args.n, 200), args.n, 200, 2)
        for offset, threads in enumerate(int(t) for t in args.threads.split(",")):
            results.append(measure(data, threads, corpus, args.n + offset * args.rounds, args.rounds))
    report = {"meta": meta, "results": results}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "api_threads.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "api_threads.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
