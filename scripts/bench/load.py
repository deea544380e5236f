"""Load benchmark: ingest, recall and by-tag speed, and every process's memory, at N = 10k and 100k.

Starts `automem serve` (embedded mode, hash embeddings for queries) on a temporary data dir
unless --url is given, and grows one store through each size in turn. At each size it stores
memories with single POSTs at concurrency 1 and 4 and fills up to the size with /memory/batch,
waits until the background queues have drained (steady state), then measures recall (plain,
tag-prefix filtered, time filtered; concurrency 1 and 8), GET /memory/by-tag and the resident
memory of every process. Memories and queries carry client-side 384-d vectors, so no model time
is measured. The corpus is deterministic (seeded): 100-300-char memories over the 7 types,
hierarchical tags (`project-x`, `slack:channel:general`, `2025-01`), importance 0.3-1.0,
timestamps over a year. Results: benchmarks/load.json and benchmarks/load.md.

    python scripts/bench/load.py                      # N = 10k and 100k
    python scripts/bench/load.py --sizes 10000        # 10k only
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.bench.common import (
    ROOT,
    Service,
    command_line,
    cpu_ms_each,
    cpu_seconds,
    embedded_service,
    git_commit,
    load_avg,
    log,
    machine_info,
    memory_of,
    other_service_processes,
    percentiles,
    progress,
)

SEED = 20250101
DIM = 384
TYPES = ("Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context")
PROJECTS = tuple(f"project-{name}" for name in "abcdefghijklmnopqrst")
SOURCES = (
    "slack:channel:general",
    "slack:channel:random",
    "slack:channel:eng",
    "slack:channel:ops",
    "github:repo:api",
    "github:repo:web",
    "email:inbox",
    "meeting:standup",
)
TOPICS = (
    ("database", "postgres schema migration index query planner vacuum replica"),
    ("deploy", "release pipeline rollback canary kubernetes helm container image"),
    ("frontend", "react component styling accessibility bundle render hydration"),
    ("testing", "pytest fixture flaky coverage integration contract mock"),
    ("security", "token rotation secret audit permission encryption login"),
    ("latency", "cache p95 profiling hot path queue backpressure timeout"),
    ("billing", "invoice stripe plan upgrade refund quota pricing"),
    ("onboarding", "docs tutorial newcomer checklist mentor setup laptop"),
    ("incident", "outage pager postmortem alert escalation dashboard"),
    ("design", "architecture interface module boundary coupling refactor"),
)
_PROSE = (
    "we agreed that the team should keep it simple and revisit after the next milestone noting "
    "the tradeoffs raised in review and the numbers from last week"
)
FILLER = tuple(_PROSE.split())
TEMPLATES = {
    "Decision": "Decided to {a} the {t} work for {p}: {w}.",
    "Pattern": "Noticed a recurring pattern in {t} on {p}: {w}.",
    "Preference": "Prefers {a} over the alternatives for {t} in {p}; {w}.",
    "Style": "Writing style for {t} notes in {p}: {w}.",
    "Habit": "Usually does the {t} review for {p} on Mondays; {w}.",
    "Insight": "Learned that {t} problems in {p} come from {w}.",
    "Context": "Context for {p} {t}: {w}.",
}
ACTIONS = ("adopt", "postpone", "split", "automate", "document", "replace", "measure")
CONCURRENCY = (1, 4)  # recall at one client and at four (the targets' two points)
YEAR_START = 1735689600  # 2025-01-01T00:00:00Z
YEAR_SECONDS = 365 * 86400


class Corpus:
    """Memories and queries drawn from seeded topics: each topic has a direction in vector space
    and a vocabulary, so vector and keyword channels both have something real to find."""

    def __init__(self, seed: int = SEED) -> None:
        gen = np.random.default_rng(seed)
        centroids = gen.normal(size=(len(TOPICS), DIM))
        self.centroids = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
        self.seed = seed

    def _vector(self, gen: np.random.Generator, topic: int) -> list[float]:
        v = self.centroids[topic] + 0.9 * gen.normal(size=DIM) / np.sqrt(DIM)
        return [round(float(x), 4) for x in v / np.linalg.norm(v)]

    def memory(self, n: int) -> dict[str, Any]:
        rng = random.Random(self.seed * 1_000_003 + n)
        gen = np.random.default_rng(self.seed + n)
        topic = rng.randrange(len(TOPICS))
        mtype = TYPES[n % len(TYPES)]
        project = rng.choice(PROJECTS)
        words = TOPICS[topic][1].split()
        stamp = YEAR_START + rng.randrange(YEAR_SECONDS)
        month = time.strftime("%Y-%m", time.gmtime(stamp))
        target = rng.randint(100, 300)
        body = TEMPLATES[mtype].format(
            a=rng.choice(ACTIONS), t=TOPICS[topic][0], p=project, w=" ".join(rng.sample(words, 3))
        )
        while len(body) < target:
            body += " " + rng.choice((*FILLER, *words))
        return {
            "content": f"{body[:target].rstrip()} (#{n})",
            "type": mtype,
            "tags": [project, rng.choice(SOURCES), month],
            "importance": round(rng.uniform(0.3, 1.0), 2),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp)),
            "embedding": self._vector(gen, topic),
        }

    def query(self, n: int) -> dict[str, Any]:
        rng = random.Random(self.seed * 7 + n)
        gen = np.random.default_rng(self.seed * 11 + n)
        topic = rng.randrange(len(TOPICS))
        words = TOPICS[topic][1].split()
        return {
            "query": f"{TOPICS[topic][0]} {' '.join(rng.sample(words, 2))}",
            "embedding": self._vector(gen, topic),
            "limit": 10,
        }


# --- measuring ----------------------------------------------------------------------------------


def timed(call: Callable[[], httpx.Response], expect: Sequence[int]) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = call()
    elapsed = time.perf_counter() - start
    if response.status_code not in expect:
        raise SystemExit(f"unexpected {response.status_code}: {response.text[:300]}")
    return elapsed, response


def run_concurrently(calls: Sequence[Callable[[], float]], concurrency: int) -> tuple[list[float], float]:
    """Run the calls on `concurrency` threads; their durations and the wall time."""
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool, progress(len(calls), f"c={concurrency}") as bar:
        samples = []
        for sample in pool.map(lambda call: call(), calls):
            samples.append(sample)
            bar.update()
    return samples, time.perf_counter() - start


def single_posts(client: httpx.Client, items: Sequence[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    calls = [lambda m=m: timed(lambda: client.post("/memory", json=m), (201,))[0] for m in items]
    samples, wall = run_concurrently(calls, concurrency)
    return {"requests": len(items), "concurrency": concurrency, "per_s": round(len(items) / wall, 1)} | (
        percentiles(samples)
    )


def batch_bodies(make: Callable[[int], dict[str, Any]], first: int, end: int, size: int) -> list[bytes]:
    """The /memory/batch bodies for memories first..end-1, encoded ahead of the timed run (the
    client's JSON work is not the service's) and one chunk at a time: 900k memories as Python
    objects took 11 GB of the client's memory, as JSON bytes 3 GB."""
    return [
        orjson.dumps({"memories": [make(n) for n in range(start, min(end, start + size))]})
        for start in range(first, end, size)
    ]


def batch_posts(
    client: httpx.Client, bodies: Sequence[bytes], count: int, size: int, concurrency: int
) -> dict[str, Any]:
    """POST pre-encoded batch bodies (`count` memories in all) at `concurrency`."""
    headers = {"Content-Type": "application/json"}
    calls = [
        lambda b=b: timed(lambda: client.post("/memory/batch", content=b, headers=headers), (201,))[0]
        for b in bodies
    ]
    samples, wall = run_concurrently(calls, concurrency)
    return {
        "memories": count,
        "batch_size": size,
        "concurrency": concurrency,
        "per_s": round(count / wall, 1),
    } | percentiles(samples)


def recall_runs(
    client: httpx.Client, bodies: Sequence[dict[str, Any]], concurrency: int
) -> tuple[dict[str, Any], list[dict[str, float]]]:
    timings: list[dict[str, float]] = []
    lock = threading.Lock()

    def one(body: dict[str, Any]) -> float:
        elapsed, response = timed(lambda: client.post("/recall", json=body), (200,))
        with lock:
            timings.append(response.json().get("timings_ms") or {})
        return elapsed

    calls: list[Callable[[], float]] = [functools.partial(one, b) for b in bodies]
    samples, wall = run_concurrently(calls, concurrency)
    return {
        "requests": len(bodies),
        "concurrency": concurrency,
        "qps": round(len(bodies) / wall, 1),
    } | percentiles(samples), timings


def stage_breakdown(timings: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    stages = sorted({k for t in timings for k in t})
    return {stage: percentiles([t[stage] / 1000 for t in timings if stage in t]) for stage in stages}


def recall_suite(client: httpx.Client, corpus: Corpus, rounds: int) -> dict[str, Any]:
    variants: dict[str, Callable[[dict[str, Any], int], dict[str, Any]]] = {
        "plain": lambda b, n: b,
        "tag_prefix": lambda b, n: b | {"tags": ["slack"] if n % 2 else [PROJECTS[n % len(PROJECTS)]]},
        "time_window": lambda b, n: (
            b | {"start": f"2025-{1 + n % 10:02d}-01T00:00:00Z", "end": f"2025-{3 + n % 10:02d}-01T00:00:00Z"}
        ),
        # One project's memories (a twentieth of the store), fifty of them: a dashboard or an
        # agent scoped to one context.
        "one_tag_50": lambda b, n: b | {"tags": [PROJECTS[n % len(PROJECTS)]], "limit": 50},
    }
    out: dict[str, Any] = {}
    breakdown: dict[str, Any] = {}
    for name, shape in variants.items():
        bodies = [shape(corpus.query(n), n) for n in range(rounds)]
        for _ in range(2):  # warm-up: the query cache and the engines' first calls
            recall_runs(client, bodies[:20], 1)
        for concurrency in CONCURRENCY:
            result, timings = recall_runs(client, bodies, concurrency)
            out[f"{name}_c{concurrency}"] = result
            if concurrency == 1:
                breakdown[name] = stage_breakdown(timings)
    return {"recall": out, "stages": breakdown}


def by_tag_suite(client: httpx.Client, rounds: int) -> dict[str, Any]:
    queries = {
        "project_prefix": lambda n: {"tags": PROJECTS[n % len(PROJECTS)], "limit": 50},
        "broad_prefix": lambda n: {"tags": "slack", "limit": 50},
        "exact_month": lambda n: {"tags": f"2025-{1 + n % 12:02d}", "tag_match": "exact", "limit": 50},
    }
    out = {}
    for name, params in queries.items():
        calls = [
            lambda n=n, params=params: timed(lambda: client.get("/memory/by-tag", params=params(n)), (200,))[
                0
            ]
            for n in range(rounds)
        ]
        samples, wall = run_concurrently(calls, 1)
        out[name] = {"requests": rounds, "qps": round(rounds / wall, 1)} | percentiles(samples)
    return out


def wait_drained(client: httpx.Client, timeout: float, poll: float = 2.0) -> dict[str, Any]:
    """Wait until every memory is embedded and (when enrichment is on) enriched, and the queues
    are empty."""
    start = time.perf_counter()
    last: dict[str, Any] = {}
    enriching = bool(client.get("/enrichment/status").json().get("enabled"))
    while time.perf_counter() - start < timeout:
        try:
            health = client.get("/health").json()
        except httpx.TransportError:
            time.sleep(poll)
            continue
        counts = health.get("counts") or {}
        depths = (health.get("queues") or {}).get("depths") or {}
        last = {
            "embedding_pending": counts.get("embedding_pending"),
            "enrichment_pending": counts.get("enrichment_pending") if enriching else 0,
            "queued": sum(int(v) for v in depths.values() if int(v) > 0),
            "drift": (health.get("drift") or {}).get("difference"),
        }
        if not any(last.values()):
            return {"drained": True, "seconds": round(time.perf_counter() - start, 1), **last}
        time.sleep(poll)
    return {"drained": False, "seconds": round(time.perf_counter() - start, 1), **last}


# --- the run ------------------------------------------------------------------------------------


def grow_to(
    client: httpx.Client,
    corpus: Corpus,
    start: int,
    size: int,
    args: argparse.Namespace,
    cpu: Callable[[], dict[str, float]] = dict,
) -> dict[str, Any]:
    """Store memories start..size-1: single POSTs at c=1 and c=4, then batches; each phase with
    the CPU its service processes spent a memory (`cpu`: CPU seconds so far by process role)."""
    next_n = start
    results: dict[str, Any] = {}
    for key, count, concurrency in (("single_c1", args.single, 1), ("single_c4", 2 * args.single, 4)):
        count = min(count, size - next_n)
        items = [corpus.memory(n) for n in range(next_n, next_n + count)]
        before = cpu()
        results[key] = single_posts(client, items, concurrency) | cpu_per_memory(before, cpu(), count)
        next_n += count
        log(f"  {key}: {results[key]['per_s']}/s p50 {results[key]['p50_ms']} ms")
    if next_n >= size:  # a small size can be used up by the single POSTs: no batch rate, not 0/s
        return results
    bodies = batch_bodies(corpus.memory, next_n, size, args.batch)
    before = cpu()
    batch = batch_posts(client, bodies, size - next_n, args.batch, args.batch_concurrency)
    results["batch"] = batch | cpu_per_memory(before, cpu(), size - next_n)
    log(f"  batch x{args.batch} c{args.batch_concurrency}: {batch['per_s']}/s")
    return results


def cpu_per_memory(before: dict[str, float], after: dict[str, float], memories: int) -> dict[str, Any]:
    """`cpu_ms`: each process role's CPU between the two readings, in ms a memory (nothing when
    the service is not this run's own, so its processes are unknown)."""
    if not memories or not after:
        return {}
    return {"cpu_ms": cpu_ms_each(before, after, memories)}


def service_cpu(service: Service) -> Callable[[], dict[str, float]]:
    """CPU seconds so far of the service's processes by role; nothing for a service of another
    run (`--url`)."""
    return dict if service.proc is None else functools.partial(cpu_seconds, service.proc.pid)


def backlog_of(client: httpx.Client) -> dict[str, Any]:
    counts = client.get("/health").json().get("counts") or {}
    return {k: counts.get(k) for k in ("total", "embedding_pending", "enrichment_pending")}


def measure_size(service: Service, corpus: Corpus, start: int, size: int, args: argparse.Namespace) -> dict:
    """Ingest up to `size`, then read while the worker still enriches what was written (what a
    user's machine does after an import), wait for the drain, and read again."""
    log(f"N={size}: ingest {start}..{size - 1}")
    with service.client(connections=args.connections) as client:
        ingest = grow_to(client, corpus, start, size, args, service_cpu(service))
        written_at, backlog = time.perf_counter(), backlog_of(client)
        during: dict[str, Any] | None = None
        if not args.skip_during:
            during = recall_suite(client, corpus, args.rounds) | {"backlog_before": backlog}
            during["backlog_after"] = backlog_of(client)
            log("  recall during the drain: " + _p50s(during["recall"]))
        drain = wait_drained(client, drain_timeout(args, size))
        drain["since_ingest_s"] = round(time.perf_counter() - written_at, 1)
        drain["enrichment_per_s"] = _drain_rate(backlog.get("enrichment_pending"), drain)
        log(f"  drained: {drain}")
        counts = client.get("/health").json().get("counts")
        reads = recall_suite(client, corpus, args.rounds)
        log("  recall after the drain: " + _p50s(reads["recall"]))
        by_tag = by_tag_suite(client, args.rounds)
        log("  by-tag: " + _p50s(by_tag))
    memory = memory_of(service.proc.pid) if service.proc else []
    return {
        "size": size,
        "disk_mb": disk_mb(service.data_dir),
        "ingest": ingest,
        "during_drain": during,
        "drain": drain,
        "counts": counts,
        **reads,
        "by_tag": by_tag,
        "processes": memory,
        "load_avg": load_avg(),
    }


def _p50s(results: dict[str, Any]) -> str:
    return ", ".join(f"{k} p50 {v['p50_ms']}" for k, v in results.items())


def _drain_rate(pending: Any, drain: dict[str, Any]) -> float | None:
    """Memories enriched per second from the end of the ingest until the queues were empty, or,
    when the wait timed out (a 1M backlog takes hours), until the wait ended."""
    if not pending:
        return None
    done = int(pending) - (0 if drain.get("drained") else int(drain.get("enrichment_pending") or 0))
    return round(done / max(drain["since_ingest_s"], 0.001), 1)


def drain_timeout(args: argparse.Namespace, size: int) -> float:
    """How long to wait for the queues at this size: --drain-timeout, or --large-drain-timeout
    beyond 100k memories (the reads after it then run while enrichment goes on)."""
    return args.large_drain_timeout if size > 100_000 else args.drain_timeout


def disk_mb(data_dir: Path | None) -> float | None:
    """Disk used by the service's data directory (graph AOF and snapshot, vector shard), in MB."""
    if data_dir is None or not data_dir.exists():
        return None
    total = sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file())
    return round(total / 2**20, 1)


def run(args: argparse.Namespace, service: Service) -> dict[str, Any]:
    """Grow the store through each size; the report is written after every size, so a run that
    dies at 1M keeps what 10k and 100k measured."""
    corpus = Corpus(args.seed)
    stages, done = [], 0
    for size in sorted(args.sizes):
        stages.append(measure_size(service, corpus, done, size, args))
        done = size
        if args.meta is not None:
            partial = {
                "meta": {**args.meta, "partial": size < max(args.sizes)},
                "results": {"stages": stages},
            }
            write_report({**partial, "targets": target_rows(partial)}, Path(args.out))
    return {"stages": stages}


# --- tenants: one tenant's recall alone, then beside nine more of its size -------------------------


def tenant_client(service: Service, key: str, connections: int) -> httpx.Client:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.Client(base_url=service.url, headers={"X-API-Key": key}, timeout=60, limits=limits)


def add_tenant(admin: httpx.Client, name: str) -> str:
    """Create the tenant and mint a write key of it; the key's secret."""
    for path, body in (
        ("/admin/tenants", {"name": name}),
        ("/admin/keys", {"tenant": name, "scope": "write"}),
    ):
        response = admin.post(path, json=body)
        if response.status_code != 201:
            raise SystemExit(f"{path}: {response.status_code} {response.text[:300]}")
    return str(response.json()["key"])


def fill_tenant(
    service: Service, corpus: Corpus, key: str, first: int, size: int, args: argparse.Namespace
) -> dict:
    bodies = batch_bodies(corpus.memory, first, first + size, args.batch)
    with tenant_client(service, key, args.connections) as client:
        return batch_posts(client, bodies, size, args.batch, args.batch_concurrency)


def tenant_recall(service: Service, corpus: Corpus, key: str, args: argparse.Namespace) -> dict[str, Any]:
    bodies = [corpus.query(n) for n in range(args.rounds)]
    with tenant_client(service, key, args.connections) as client:
        for _ in range(2):
            recall_runs(client, bodies[:20], 1)
        result, timings = recall_runs(client, bodies, 1)
        by_tag = by_tag_suite(client, min(args.rounds, 200))["project_prefix"]
    return {"recall_c1": result, "stages": stage_breakdown(timings), "by_tag_project_prefix": by_tag}


def run_tenants(args: argparse.Namespace, service: Service) -> dict[str, Any]:
    """Recall of tenant 0 (`size` memories) alone, then with args.tenants - 1 more tenants of the
    same size in the store: isolation must not cost a tenant its speed."""
    corpus, size = Corpus(args.seed), args.sizes[0]
    with service.client(connections=args.connections) as admin:
        keys = [add_tenant(admin, f"bench-{t}") for t in range(args.tenants)]
        log(f"tenant 0: ingest {size}")
        ingest = [fill_tenant(service, corpus, keys[0], 0, size, args)]
        drain_alone = wait_drained(admin, args.drain_timeout)
        alone = tenant_recall(service, corpus, keys[0], args)
        log(f"  alone: recall p50 {alone['recall_c1']['p50_ms']} ms")
        for t in range(1, args.tenants):
            log(f"tenant {t}: ingest {size}")
            ingest.append(fill_tenant(service, corpus, keys[t], t * size, size, args))
        drain_shared = wait_drained(admin, args.drain_timeout)
        shared = tenant_recall(service, corpus, keys[0], args)
        log(f"  shared: recall p50 {shared['recall_c1']['p50_ms']} ms")
        counts = admin.get("/health").json().get("counts")
    ratio = round(shared["recall_c1"]["p50_ms"] / alone["recall_c1"]["p50_ms"], 3)
    return {
        "tenant_size": size,
        "tenants": args.tenants,
        "store_counts": counts,
        "ingest": ingest,
        "drain": {"alone": drain_alone, "shared": drain_shared},
        "alone": alone,
        "shared": shared,
        "p50_ratio": ratio,
    }


def render_tenants(report: dict[str, Any]) -> str:
    meta, r = report["meta"], report["results"]
    m = meta["machine"]
    rows = [("alone", r["alone"]), (f"beside {r['tenants'] - 1} more tenants", r["shared"])]
    lines = [
        f"# Tenant isolation cost ({meta['date']}, {m['cores']} cores, commit {meta['git_commit']})",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Service: {meta['service']}. Tenant 0 holds {r['tenant_size']:,} memories; its recall "
        f"(concurrency 1, limit 10, client-side {DIM}-d vectors) is measured alone, then with "
        f"{r['tenants'] - 1} more tenants of the same size in the store "
        f"({(r['store_counts'] or {}).get('total', '?')} memories in all). Every request carries a "
        "key of tenant 0.",
        "",
        "| tenant 0 | recall p50 ms | p95 ms | by-tag p50 ms |",
        "|---|---|---|---|",
    ]
    for name, res in rows:
        rec = res["recall_c1"]
        lines.append(
            f"| {name} | {rec['p50_ms']} | {rec['p95_ms']} | {res['by_tag_project_prefix']['p50_ms']} |"
        )
    lines += ["", f"Recall p50 shared / alone: **{r['p50_ratio']}** (target ≤ 1.2).", ""]
    return "\n".join(lines)


# --- report -------------------------------------------------------------------------------------

# Issue 15's targets: (name, size, where, key, goal, "max" when lower is better / "min").
TARGETS: tuple[tuple[str, int, str, str, float, str], ...] = (
    ("recall p50, concurrency 1 (ms)", 10_000, "recall.plain_c1", "p50_ms", 10, "max"),
    ("recall p95, concurrency 1 (ms)", 10_000, "recall.plain_c1", "p95_ms", 20, "max"),
    ("recall throughput, concurrency 4 (QPS)", 10_000, "recall.plain_c4", "qps", 150, "min"),
    ("recall in one tag of ~500, limit 50, p50 (ms)", 10_000, "recall.one_tag_50_c1", "p50_ms", 15, "max"),
    ("single POST /memory, concurrency 1 (/s)", 10_000, "ingest.single_c1", "per_s", 250, "min"),
    ("single POST /memory, concurrency 4 (/s)", 10_000, "ingest.single_c4", "per_s", 400, "min"),
    ("batch ingest with vectors (/s)", 10_000, "ingest.batch", "per_s", 5000, "min"),
    ("recall p50 at 100k (ms)", 100_000, "recall.plain_c1", "p50_ms", 25, "max"),
    ("by-tag p50 at 100k (ms)", 100_000, "by_tag.project_prefix", "p50_ms", 5, "max"),
    ("enrichment drain at 100k (memories/s)", 100_000, "drain", "enrichment_per_s", 80, "min"),
    ("recall p50 at 1M (ms)", 1_000_000, "recall.plain_c1", "p50_ms", 30, "max"),
    ("by-tag p50 at 1M (ms)", 1_000_000, "by_tag.project_prefix", "p50_ms", 10, "max"),
    ("largest process RSS at 1M (MB)", 1_000_000, "processes", "peak_rss_mb", 4096, "max"),
)


def _at(stage: dict[str, Any] | None, where: str, key: str) -> Any:
    """A measured figure of a size's results (None if not measured)."""
    if not stage:
        return None
    if where == "processes":
        return max((p.get(key) or 0 for p in stage.get("processes") or []), default=None)
    node: Any = stage
    for part in where.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node.get(key) if isinstance(node, dict) else None


def _met(value: Any, goal: float, sense: str) -> str:
    if value is None:
        return "not measured"
    return "met" if (value <= goal if sense == "max" else value >= goal) else "not met"


def target_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target with its figure after the drain and, for reads, during it."""
    by_size = {s["size"]: s for s in report["results"]["stages"]}
    rows = []
    for name, size, where, key, goal, sense in TARGETS:
        stage = by_size.get(size)
        after = _at(stage, where, key)
        during = _at(stage.get("during_drain") if stage else None, where, key)
        verdicts = {_met(after, goal, sense)} | ({_met(during, goal, sense)} if during is not None else set())
        verdict = "met" if verdicts == {"met"} else ("not measured" if after is None else "not met")
        rows.append(
            {
                "target": name,
                "goal": goal,
                "sense": sense,
                "during": during,
                "after": after,
                "verdict": verdict,
            }
        )
    return rows


def render_targets(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| target | goal | during the drain | after the drain | |", "|---|---|---|---|---|"]
    for r in rows:
        goal = f"{'≤' if r['sense'] == 'max' else '≥'} {r['goal']:,}"
        during = "" if r["during"] is None else r["during"]
        after = "not run" if r["after"] is None else r["after"]
        lines.append(f"| {r['target']} | {goal} | {during} | {after} | **{r['verdict']}** |")
    return lines


# (label, where, key) of the growth table: what each size measured after its ingest.
GROWTH: tuple[tuple[str, str, str], ...] = (
    ("recall p50 plain (ms)", "recall.plain_c1", "p50_ms"),
    ("recall p95 plain (ms)", "recall.plain_c1", "p95_ms"),
    ("recall p50 tag prefix (ms)", "recall.tag_prefix_c1", "p50_ms"),
    ("recall p50 time window (ms)", "recall.time_window_c1", "p50_ms"),
    ("recall p50 one tag, limit 50 (ms)", "recall.one_tag_50_c1", "p50_ms"),
    ("recall QPS at concurrency 4", "recall.plain_c4", "qps"),
    ("by-tag p50 (ms)", "by_tag.project_prefix", "p50_ms"),
    ("single POST /memory c1 (/s)", "ingest.single_c1", "per_s"),
    ("batch ingest (/s)", "ingest.batch", "per_s"),
    ("enrichment (memories/s)", "drain", "enrichment_per_s"),
    ("largest process RSS (MB)", "processes", "peak_rss_mb"),
    ("disk (MB)", "disk", "disk_mb"),
)


def render_growth(stages: list[dict[str, Any]]) -> list[str]:
    """One row per measure, one column per size, and the growth from the first size to the last."""
    sizes = [s["size"] for s in stages]
    lines = [
        "| measure | " + " | ".join(f"{n:,}" for n in sizes) + f" | {sizes[-1] // sizes[0]}x memories |",
        "|---" * (len(sizes) + 2) + "|",
    ]
    for label, where, key in GROWTH:
        values = [s.get("disk_mb") if where == "disk" else _at(s, where, key) for s in stages]
        first, last = values[0], values[-1]
        growth = (
            f"{last / first:.2f}x" if isinstance(first, int | float) and first and last is not None else ""
        )
        cells = ["" if v is None else str(v) for v in values]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {growth} |")
    for role in sorted({p["role"] for s in stages for p in s.get("processes") or []}):
        peaks = [_peak_rss(s, role) for s in stages]
        growth = f"{peaks[-1] / peaks[0]:.2f}x" if peaks[0] else ""
        lines.append(f"| peak RSS, {role} (MB) | " + " | ".join(str(v) for v in peaks) + f" | {growth} |")
    return lines


def _peak_rss(stage: dict[str, Any], role: str) -> float:
    """The largest peak RSS among a size's processes of one role (two API processes, ...)."""
    return max(
        (p.get("peak_rss_mb") or 0.0 for p in stage.get("processes") or [] if p["role"] == role), default=0.0
    )


def _row(name: str, r: dict[str, Any], rate_key: str) -> str:
    return f"| {name} | {r.get(rate_key, '')} | {r.get('p50_ms')} | {r.get('p95_ms')} | {r.get('p99_ms')} |"


def _ingest_label(key: str, r: dict[str, Any]) -> str:
    return f"{key} (x{r['batch_size']}, c{r['concurrency']})" if key == "batch" else key


def _ingest_cpu_rows(ingest: dict[str, Any]) -> list[str]:
    """The CPU each service process spent a memory in each ingest phase (the benchmark client,
    which sends pre-encoded bodies, is not in it); a role that spent none in any (cron, the
    supervisor) has no column."""
    spent = [(role, ms) for r in ingest.values() for role, ms in (r.get("cpu_ms") or {}).items()]
    roles = sorted({role for role, ms in spent if ms})
    if not roles:
        return []
    lines = ["", "| CPU ms a memory | " + " | ".join(roles) + " |", "|---|" + "---|" * len(roles)]
    for key, r in ingest.items():
        cpu = r.get("cpu_ms") or {}
        cells = " | ".join(str(cpu.get(role, "")) for role in roles)
        lines.append(f"| {_ingest_label(key, r)} | {cells} |")
    return lines


def render_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    m = meta["machine"]
    lines = [
        f"# Load benchmark ({meta['date']}, {m['cores']} cores, Python {m['python']}, "
        f"commit {meta['git_commit']})",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Service: {meta['service']}. Corpus seed {meta['seed']}; client-side {DIM}-d vectors on "
        "memories and queries (no model time); recall `limit` 10. Load average at start "
        f"{meta['load_start']}, at end {meta.get('load_end', '(still running)')}.",
        "",
    ]
    if meta.get("partial"):
        lines += ["**Partial report**: written after a size while the run went on to the next.", ""]
    if meta.get("other_processes"):
        lines += [f"Note: {len(meta['other_processes'])} other service processes shared the CPU.", ""]
    for stage in report["results"]["stages"]:
        size = stage["size"]
        lines += [
            f"## N = {size:,}",
            "",
            "| ingest | per s | p50 ms | p95 ms | p99 ms |",
            "|---|---|---|---|---|",
        ]
        for key, r in stage["ingest"].items():
            lines.append(_row(_ingest_label(key, r), r, "per_s"))
        lines += _ingest_cpu_rows(stage["ingest"])
        drain = stage["drain"]
        lines += [
            "",
            f"Background queues (embedding, enrichment) drained {drain.get('since_ingest_s')} s after "
            f"the ingest ended: {drain.get('enrichment_per_s')} memories enriched per second."
            if drain["drained"]
            else f"Background queues NOT drained {drain.get('since_ingest_s')} s after the ingest "
            f"(timed out): {drain.get('enrichment_pending')} memories still awaiting enrichment, "
            f"{drain.get('embedding_pending')} awaiting embedding; the reads 'after the drain' "
            "ran before it ended.",
            "",
        ]
        during = stage.get("during_drain")
        if during:
            before, after = during["backlog_before"], during["backlog_after"]
            lines += [
                "Recall while the worker was still enriching (backlog "
                f"{before.get('enrichment_pending')} → {after.get('enrichment_pending')} memories "
                "awaiting enrichment):",
                "",
                "| recall during the drain | QPS | p50 ms | p95 ms | p99 ms |",
                "|---|---|---|---|---|",
            ]
            lines += [_row(k, r, "qps") for k, r in during["recall"].items()]
            lines.append("")
        lines += ["| recall after the drain | QPS | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|"]
        lines += [_row(k, r, "qps") for k, r in stage["recall"].items()]
        lines += ["", "| by-tag | QPS | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|"]
        lines += [_row(k, r, "qps") for k, r in stage["by_tag"].items()]
        lines += ["", "Recall stages (server `timings_ms`, concurrency 1, p50 / p95 ms):", ""]
        stages = stage["stages"]
        names = sorted({s for v in stages.values() for s in v})
        lines += ["| stage | " + " | ".join(stages) + " |", "|---" * (len(stages) + 1) + "|"]
        for s in names:
            cells = [
                f"{stages[v][s]['p50_ms']} / {stages[v][s]['p95_ms']}" if s in stages[v] else ""
                for v in stages
            ]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        if stage["processes"]:
            lines += ["", "| process | RSS MB | peak RSS MB |", "|---|---|---|"]
            lines += [
                f"| {p['role']} ({p['pid']}) | {p['rss_mb']} | {p['peak_rss_mb']} |"
                for p in stage["processes"]
            ]
        lines.append("")
    if len(report["results"]["stages"]) > 1:
        lines += ["## How cost grows", "", *render_growth(report["results"]["stages"]), ""]
    lines += ["## Targets", "", *render_targets(report["targets"])]
    lines += [
        "",
        "Embedding with the shipped local model on real memory lengths (target ≥ 50/s) is measured "
        "by `automem bench embedding` (benchmarks/embedding.md): the load benchmark sends vectors.",
    ]
    return "\n".join(lines) + "\n"


def write_report(report: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "load.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "load.md").write_text(render_markdown(report))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10_000, 100_000])
    parser.add_argument("--single", type=int, default=1000, help="single POSTs at c=1 per size (2x at c=4)")
    parser.add_argument("--batch", type=int, default=200, help="memories per /memory/batch request")
    parser.add_argument("--batch-concurrency", type=int, default=2, help="batch requests in flight")
    parser.add_argument("--rounds", type=int, default=400, help="requests per recall/by-tag variant")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--drain-timeout", type=float, default=3600, help="seconds to wait for the queues")
    parser.add_argument(
        "--large-drain-timeout",
        type=float,
        default=900,
        help="seconds to wait for the queues beyond 100k memories (the rate is measured over the wait)",
    )
    parser.add_argument("--workers", type=int, help="RQ workers of the embedded service")
    parser.add_argument(
        "--keep-data",
        type=Path,
        help="data dir of the embedded service, kept after the run for profiling (must be new or empty)",
    )
    parser.add_argument("--env", action="append", default=[], help="extra service setting, NAME=VALUE")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--skip-during", action="store_true", help="read only after the drain, not also while it runs"
    )
    parser.add_argument("--url", help="benchmark a running service (needs --token) instead of starting one")
    parser.add_argument("--token", help="API key for --url")
    parser.add_argument("--admin-token", help="admin token for --url (--tenants creates tenants and keys)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks"), help="directory for load.json / load.md")
    parser.add_argument(
        "--tenants",
        type=int,
        default=0,
        help="instead: recall of one tenant of the first size alone, then beside this many tenants "
        "in all (load_tenants.json / .md)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    meta: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": command_line("load.py", list(argv if argv is not None else sys.argv[1:])),
        "git_commit": git_commit(),
        "machine": machine_info(),
        "seed": args.seed,
        "load_start": load_avg(),
    }
    env = dict(item.split("=", 1) for item in args.env)
    args.meta = None if args.tenants else meta
    runner = run_tenants if args.tenants else run
    if args.url:
        meta["service"] = f"running service at {args.url}"
        results = runner(args, Service(args.url, args.token or "", args.admin_token or ""))
    else:
        # The defaults a user runs (the local model, enrichment on); memories and queries carry
        # the client's vectors, so no model time is measured.
        meta["service"] = "embedded `automem serve` " + (
            " ".join(f"{k}={v}" for k, v in sorted(env.items())) or "with its defaults"
        )
        if args.keep_data and args.keep_data.exists() and any(args.keep_data.iterdir()):
            raise SystemExit(f"--keep-data {args.keep_data} is not empty: the run ingests into a new store")
        with embedded_service(
            env, data_dir=args.keep_data, workers=args.workers, prefix="automem-load-"
        ) as service:
            meta["other_processes"] = other_service_processes(service.proc.pid if service.proc else None)
            results = runner(args, service)
        meta["leftover_processes"] = service.leftovers
    meta["load_end"] = load_avg()
    if args.tenants:
        report: dict[str, Any] = {"meta": meta, "results": results}
        out = Path(args.out)
        (out / "load_tenants.json").write_text(json.dumps(report, indent=2) + "\n")
        (out / "load_tenants.md").write_text(render_tenants(report))
        print(render_tenants(report))
        return 0
    report = {"meta": meta, "results": results, "targets": target_rows({"results": results})}
    write_report(report, Path(args.out))
    print(render_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
