"""Write-path benchmark: ingest throughput and read latency of the foundation routes.

Starts `automem serve` on a temporary data dir (embedded mode, hash embeddings) unless --url is
given, stores N memories with client-side 384-d vectors (so no model time is measured) through
single POSTs at concurrency 1 and 4 and through /memory/batch, then times GET /memory/<id> and
/memory/by-tag. Writes JSON + markdown to benchmarks/.

    python scripts/bench/write_path.py --n 2000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "bench-token"
TAGS = ["project-x", "project-y", "slack:channel:general", "slack:channel:random", "slack:user:u1", "2025-01"]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)

    return {
        "p50_ms": pick(0.50),
        "p95_ms": pick(0.95),
        "p99_ms": pick(0.99),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2),
    }


def memory(rng: random.Random, n: int) -> dict[str, Any]:
    vector = [round(rng.uniform(-1, 1), 5) for _ in range(384)]
    return {
        "content": f"benchmark memory {n}: " + " ".join(rng.choice(WORDS) for _ in range(25)),
        "tags": rng.sample(TAGS, 2),
        "importance": round(rng.uniform(0.3, 1.0), 2),
        "embedding": vector,
    }


WORDS = (
    "decided",
    "postgres",
    "deploy",
    "cache",
    "latency",
    "review",
    "prefers",
    "tabs",
    "retry",
    "queue",
    "graph",
    "vector",
    "incident",
    "rollback",
    "schema",
    "index",
    "budget",
    "meeting",
)


@contextmanager
def embedded_service() -> Iterator[str]:
    data = tempfile.mkdtemp(prefix="automem-bench-")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOMEM_", "FALKORDB_", "QDRANT_"))}
    env.update({"AUTOMEM_API_TOKEN": TOKEN, "EMBEDDING_PROVIDER": "hash", "AUTOMEM_LOG_LEVEL": "WARNING"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "automem", "serve", "--data-dir", data, "--port", str(port)], env=env
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def _free_port() -> int:
    from automem.embedded import free_port

    return free_port()


def _wait(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("service did not start")


def timed(fn: Callable[[], httpx.Response], expect: int) -> float:
    start = time.perf_counter()
    response = fn()
    elapsed = time.perf_counter() - start
    if response.status_code != expect:
        raise SystemExit(f"unexpected {response.status_code}: {response.text[:200]}")
    return elapsed


def single_posts(client: httpx.Client, items: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        samples = list(pool.map(lambda m: timed(lambda: client.post("/memory", json=m), 201), items))
    wall = time.perf_counter() - start
    return {
        "requests": len(items),
        "concurrency": concurrency,
        "per_s": round(len(items) / wall, 1),
        **percentiles(samples),
    }


def batch_posts(client: httpx.Client, items: list[dict[str, Any]], size: int) -> dict[str, Any]:
    start = time.perf_counter()
    samples = [
        timed(lambda chunk=items[i : i + size]: client.post("/memory/batch", json={"memories": chunk}), 201)
        for i in range(0, len(items), size)
    ]
    wall = time.perf_counter() - start
    return {
        "memories": len(items),
        "batch_size": size,
        "per_s": round(len(items) / wall, 1),
        **percentiles(samples),
    }


def reads(client: httpx.Client, ids: list[str], rounds: int) -> dict[str, Any]:
    rng = random.Random(7)
    get = [timed(lambda: client.get(f"/memory/{rng.choice(ids)}"), 200) for _ in range(rounds)]
    narrow = [
        timed(lambda: client.get("/memory/by-tag", params={"tags": "slack:user", "limit": 20}), 200)
        for _ in range(rounds)
    ]
    broad = [
        timed(lambda: client.get("/memory/by-tag", params={"tags": "slack", "limit": 20}), 200)
        for _ in range(rounds)
    ]
    return {
        "get_memory": percentiles(get),
        "by_tag_narrow": percentiles(narrow),
        "by_tag_broad": percentiles(broad),
    }


def run(url: str, n: int) -> dict[str, Any]:
    rng = random.Random(42)
    client = httpx.Client(
        base_url=url, headers={"X-API-Key": TOKEN}, timeout=60, limits=httpx.Limits(max_connections=16)
    )
    quarter = max(1, n // 4)
    results: dict[str, Any] = {
        "single_c1": single_posts(client, [memory(rng, i) for i in range(quarter)], 1),
        "single_c4": single_posts(client, [memory(rng, i) for i in range(quarter, 2 * quarter)], 4),
        "batch_200": batch_posts(client, [memory(rng, i) for i in range(2 * quarter, n)], 200),
    }
    ids = [
        item["memory"]["id"]
        for item in client.get("/memory/by-tag", params={"tags": ",".join(TAGS), "limit": 200}).json()[
            "memories"
        ]
    ]
    results["reads"] = reads(client, ids, 300)
    results["health"] = client.get("/health").json()["counts"]
    return results


def write_report(results: dict[str, Any], n: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "n": n,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
        "command": f"python scripts/bench/write_path.py --n {n}",
    }
    (out / "write_path.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    lines = [
        f"# Write-path benchmark ({meta['date']}, {meta['machine']}, N={n}, embedded mode)",
        "",
        f"Command: `{meta['command']}`",
        "",
        "| measure | throughput/s | p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|---|",
    ]
    for key in ("single_c1", "single_c4", "batch_200"):
        r = results[key]
        lines.append(f"| {key} | {r['per_s']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} |")
    for key, r in results["reads"].items():
        lines.append(f"| {key} | | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} |")
    (out / "write_path.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="memories to store")
    parser.add_argument(
        "--url", help="benchmark a running service (token: bench-token) instead of starting one"
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks"), help="directory for the JSON and markdown")
    args = parser.parse_args()
    if args.url:
        results = run(args.url, args.n)
    else:
        with embedded_service() as url:
            results = run(url, args.n)
    write_report(results, args.n, Path(args.out))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
