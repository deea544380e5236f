"""Enrichment-throughput benchmark: how fast the RQ workers drain an embedding + enrichment backlog.

Starts `python -m automem serve` (embedded mode, fastembed MiniLM int8, the default number of
RQ workers unless --workers) on a temporary data dir, builds a deterministic synthetic corpus of
N agent memories (7 types; people, tools, projects, organisations and places for the entity
extractor; hierarchical tags; timestamps over 2025), ingests it through POST /memory/batch as fast
as it can, then polls /health and /enrichment/status every second until nothing awaits embedding
or enrichment and the embed/enrich queues are empty. Reports the drain time, embedding and
enrichment throughput, the share of memories that got entity tags, PRECEDED_BY / SIMILAR_TO
edges (estimated from a sample) and failures, and writes benchmarks/enrichment.json and
benchmarks/enrichment.md. The service is stopped with SIGTERM and checked for leftover processes.

    python scripts/bench/enrichment.py                 # 10,000 memories
    python scripts/bench/enrichment.py --n 300         # smoke run
    python scripts/bench/enrichment.py --workers 2
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
# Run as a script, this file's directory heads sys.path and its name would shadow the `enrichment`
# package of the service: drop that entry and import from the checkout root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from automem.tags import sequence_scope  # noqa: E402
from scripts.bench import common  # noqa: E402
from scripts.bench.common import (  # noqa: E402
    MODEL_DIR,
    Service,
    git_commit,
    load_avg,
    log,
    machine_info,
    other_service_processes,
)

BATCH = 1000
SAMPLE = 200
SEED = 20250101

# --- corpus -------------------------------------------------------------------------------------

PEOPLE = (
    "Maria Lopez", "Priya Shah", "Tom Becker", "Aisha Okafor", "Lukas Novak", "Chen Wei",
    "Sofia Rossi", "James Carter", "Yuki Tanaka", "Omar Haddad", "Elena Petrova", "Daniel Kim",
    "Fatima Zahra", "Noah Fischer", "Grace Mensah", "Mateo Silva", "Hannah Berg", "Ravi Iyer",
    "Lena Hoffmann", "Samuel Adeyemi", "Olivia Brooks", "Kenji Sato", "Ana Costa", "Marco Bianchi",
)  # fmt: skip
TOOLS = (
    "PostgreSQL", "Redis", "Kubernetes", "React", "Docker", "Terraform", "Kafka", "Grafana",
    "Prometheus", "Elasticsearch", "TypeScript", "Python", "GitHub Actions", "Nginx", "MongoDB",
    "FastAPI", "Django", "RabbitMQ", "Vue", "Helm", "Ansible", "ClickHouse", "SQLite", "Jenkins",
)  # fmt: skip
PROJECTS = (
    "Atlas",
    "Phoenix",
    "Nimbus",
    "Orion",
    "Helix",
    "Borealis",
    "Quasar",
    "Tempo",
    "Juniper",
    "Falcon",
)
ORGS = (
    "Acme Corp", "Globex Inc", "Stripe", "Shopify", "Datadog", "Initech", "Umbrella Labs",
    "Cloudflare", "GitLab", "Atlassian",
)  # fmt: skip
PLACES = (
    "Berlin", "Lisbon", "Toronto", "Singapore", "Austin", "Amsterdam", "Tokyo", "Nairobi",
    "Madrid", "Dublin", "Seoul", "Melbourne",
)  # fmt: skip
CHANNELS = ("general", "random", "eng-backend", "incidents", "design", "releases", "infra")
METRICS = ("p95 latency", "error rate", "build time", "memory usage", "cold start", "queue lag")
AMOUNTS = ("12%", "30%", "2x", "40 ms", "a third", "half", "3 minutes", "200 MB")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "Decision": (
        "Decided with {person} to move the {project} project's session store from {tool} to {tool2} "
        "before the {place} offsite; the {org} contract allows it.",
        "{person} and I agreed to adopt {tool} for {project}: {tool2} could not keep the {metric} "
        "under budget during the last load test.",
        "Final call on {project}: we keep {tool} and drop {tool2}. {person} will write the migration "
        "plan and share it in the {place} office on {day}.",
        "After the review with {org}, we decided to pin {tool} for the {project} release and revisit "
        "{tool2} next quarter; {person} owns the follow-up.",
    ),
    "Pattern": (
        "Every time we deploy {project} on {tool}, the {metric} climbs by {amount} for ten minutes; "
        "{person} traced it to cold {tool2} caches.",
        "Recurring issue: {tool} connections leak when {project} workers restart. {person} has seen the "
        "same pattern at {org}.",
        "Incidents in {project} cluster around {day} releases; {person} noticed that {tool2} migrations "
        "run then and lock {tool} tables.",
    ),
    "Preference": (
        "{person} prefers {tool} over {tool2} for the {project} dashboards and asked to keep the "
        "config in the {place} repo.",
        "The {org} team likes small pull requests and wants {tool} checks green before review; "
        "{person} said so again on {day}.",
        "{person} would rather use {tool} than {tool2} for local development on {project}; setup "
        "takes {amount} less time.",
    ),
    "Style": (
        "{person} writes {tool} code with explicit types and short functions; reviews on {project} "
        "follow the same style guide as {org}.",
        "For {project} docs, {person} wants plain sentences, one idea per paragraph, and {tool} "
        "examples that run as written.",
        "Commit messages on {project} use the imperative mood and mention the {tool} component; "
        "{person} enforces it in review.",
    ),
    "Habit": (
        "{person} checks the {tool} dashboards every morning before standup and posts the {metric} "
        "for {project} in the channel.",
        "Each {day}, {person} rotates the {tool} credentials for {project} and notes it in the "
        "runbook kept by {org}.",
        "{person} runs the {tool2} backup for {project} by hand every {day} evening from the {place} office.",
    ),
    "Insight": (
        "Moving {project} from {tool2} to {tool} cut the {metric} by {amount}; {person} thinks "
        "the gain comes from fewer round trips.",
        "{person} found that {tool} in {place} adds {amount} to the {metric} of {project} because "
        "requests cross regions to {org}.",
        "Lesson from the {project} outage: {tool} failover works, but {tool2} clients need retries "
        "with jitter. {person} wrote it up.",
    ),
    "Context": (
        "{person} joined {org} in {place} and now leads the {project} project, which runs on {tool} "
        "and {tool2}.",
        "Met {person} from {org} in {place} on {day}; they run {tool} at scale and offered to review "
        "the {project} architecture.",
        "The {project} project serves customers of {org} in {place}; its API is written in {tool} "
        "with {tool2} for background jobs.",
    ),
}
TYPES = tuple(TEMPLATES)
EXTRAS = (
    " {person} will confirm with {org} by {day}.",
    " Benchmarks ran on the {place} cluster with {tool} {amount} faster than before.",
    " {person} flagged that the {metric} alerts in {tool} were noisy during the rollout.",
    " Next step: a design review with {person} and the {org} platform team in {place}.",
    " The {tool} upgrade is tracked on the {project} board; {person} is the reviewer.",
)
TAIL = (
    " Revisit in the next planning cycle.",
    " Follow-up ticket filed.",
    " Worth mentioning at the retro.",
    " Numbers are in the weekly report.",
)


def project_tag(project: str) -> str:
    return f"project-{project.lower()}"


def build_corpus(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    """n distinct memories, the same for the same n and seed."""
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    while len(out) < n:
        kind = rng.choice(TYPES)
        tool, tool2 = rng.sample(TOOLS, 2)
        project = rng.choice(PROJECTS)
        content = rng.choice(TEMPLATES[kind]).format(
            person=rng.choice(PEOPLE),
            tool=tool,
            tool2=tool2,
            project=project,
            org=rng.choice(ORGS),
            place=rng.choice(PLACES),
            metric=rng.choice(METRICS),
            amount=rng.choice(AMOUNTS),
            day=rng.choice(DAYS),
        )
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            content += rng.choice(EXTRAS).format(
                person=rng.choice(PEOPLE),
                tool=rng.choice(TOOLS),
                project=rng.choice(PROJECTS),
                org=rng.choice(ORGS),
                place=rng.choice(PLACES),
                metric=rng.choice(METRICS),
                amount=rng.choice(AMOUNTS),
                day=rng.choice(DAYS),
            )
        while (content in seen or len(content) < 100) and len(content) < 260:
            content += rng.choice(TAIL)
        if content in seen or not 100 <= len(content) <= 300:
            continue
        seen.add(content)
        moment = start + timedelta(seconds=rng.randrange(365 * 24 * 3600))
        tags = [project_tag(project)]
        if rng.random() < 0.6:
            tags.append(f"slack:channel:{rng.choice(CHANNELS)}")
        tags.append(moment.strftime("%Y-%m"))
        out.append(
            {
                "content": content,
                "type": kind,
                "tags": tags,
                "importance": round(rng.uniform(0.3, 1.0), 2),
                "timestamp": moment.isoformat(),
                "metadata": {"source": "bench-enrichment"},
            }
        )
    return out


# --- service ------------------------------------------------------------------------------------


def worker_count(pid: int) -> int:
    try:
        children = (Path("/proc") / str(pid) / "task" / str(pid) / "children").read_text().split()
    except OSError:
        return -1
    count = 0
    for child in children:
        try:
            cmd = (Path("/proc") / child / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"automem" in cmd and b"worker" in cmd:
            count += 1
    return count


# --- polling ------------------------------------------------------------------------------------


def sample_state(client: httpx.Client, start: float) -> dict[str, Any]:
    health = client.get("/health").json()
    status = client.get("/enrichment/status").json()
    counts = health.get("counts") or {}
    depths = (health.get("queues") or {}).get("depths") or {}
    queues = status.get("queues") or {}
    active = int(counts.get("active") or 0)
    return {
        "t": round(time.perf_counter() - start, 2),
        "active": active,
        "embedded": int(counts.get("with_embedding") or 0),
        "embedding_pending": int(counts.get("embedding_pending") or 0),
        "enriched": active - int(counts.get("enrichment_pending") or 0),
        "enrichment_pending": int(counts.get("enrichment_pending") or 0),
        "depth_embed": int(depths.get("embed") or 0),
        "depth_enrich": int(depths.get("enrich") or 0),
        "in_flight_embed": int((queues.get("embed") or {}).get("in_flight") or 0),
        "in_flight_enrich": int((queues.get("enrich") or {}).get("in_flight") or 0),
        "failed": int(status.get("failed") or 0),
        "enriched_counter": int((status.get("stats") or {}).get("enriched") or 0),
        "vector_count": health.get("vector_count"),
    }


class Poller(threading.Thread):
    """Samples /health + /enrichment/status every `interval` seconds from `start` on."""

    def __init__(self, url: str, token: str, start: float, interval: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(base_url=url, headers={"X-API-Key": token}, timeout=30)
        self.start_time = start
        self.interval = interval
        self.samples: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.stop_event = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        next_at = time.perf_counter()
        while not self.stop_event.is_set():
            try:
                sample = sample_state(self.client, self.start_time)
                with self.lock:
                    self.samples.append(sample)
            except (httpx.HTTPError, ValueError) as exc:
                self.errors.append(
                    f"{time.perf_counter() - self.start_time:.1f}s {type(exc).__name__}: {exc}"
                )
            next_at += self.interval
            self.stop_event.wait(max(0.0, next_at - time.perf_counter()))
        self.client.close()

    def latest(self) -> dict[str, Any] | None:
        with self.lock:
            return self.samples[-1] if self.samples else None


def drained(sample: dict[str, Any], expected: int) -> bool:
    return (
        sample["active"] >= expected
        and sample["embedding_pending"] == 0
        and sample["enrichment_pending"] == 0
        and sample["depth_embed"] == 0
        and sample["depth_enrich"] == 0
        and sample["in_flight_embed"] == 0
        and sample["in_flight_enrich"] == 0
    )


# --- ingest -------------------------------------------------------------------------------------


def ingest(
    client: httpx.Client, corpus: Sequence[dict[str, Any]], batch: int
) -> tuple[list[str], Counter[str]]:
    ids: list[str] = []
    statuses: Counter[str] = Counter()
    for offset in range(0, len(corpus), batch):
        chunk = list(corpus[offset : offset + batch])
        response = client.post("/memory/batch", json={"memories": chunk})
        if response.status_code not in (200, 201):
            raise SystemExit(f"POST /memory/batch: {response.status_code} {response.text[:500]}")
        for result in response.json()["results"]:
            statuses[result.get("status", "?")] += 1
            if result.get("id"):
                ids.append(str(result["id"]))
    return ids, statuses


# --- analysis -----------------------------------------------------------------------------------


def rate_between(samples: Sequence[dict[str, Any]], key: str, total: int) -> dict[str, Any]:
    """Throughput of `key` from the first sample where it rose above its start to the first where it
    reached total; plus the 10%-90% window rate and the start/finish times."""
    if not samples or total <= 0:
        return {}
    base = samples[0][key]
    first = next((s for s in samples if s[key] > base), None)
    done = next((s for s in samples if s[key] >= total), None)
    out: dict[str, Any] = {
        "first_t": first["t"] if first else None,
        "done_t": done["t"] if done else None,
    }
    if first and done and done["t"] > first["t"]:
        # the sample before `first` is the last one with nothing done yet
        before = samples[max(0, samples.index(first) - 1)]
        out["per_s"] = round((done[key] - before[key]) / (done["t"] - before["t"]), 2)
    lo = next((s for s in samples if s[key] >= 0.1 * total), None)
    hi = next((s for s in samples if s[key] >= 0.9 * total), None)
    if lo and hi and hi["t"] > lo["t"]:
        out["per_s_10_90"] = round((hi[key] - lo[key]) / (hi["t"] - lo["t"]), 2)
    return out


def inspect_sample(client: httpx.Client, ids: Sequence[str], size: int, n_total: int) -> dict[str, Any]:
    rng = random.Random(SEED + 1)
    picked = rng.sample(list(ids), min(size, len(ids)))
    with_entity = 0
    entity_tags = 0
    kinds: Counter[str] = Counter()
    degrees: dict[str, list[int]] = {"PRECEDED_BY": [], "SIMILAR_TO": []}
    no_entity_examples: list[str] = []
    for memory_id in picked:
        memory = client.get(f"/memory/{memory_id}").json()["memory"]
        tags = [t for t in memory.get("tags") or [] if t.startswith("entity:")]
        entity_tags += len(tags)
        kinds.update(t.split(":")[1] for t in tags)
        if tags:
            with_entity += 1
        elif len(no_entity_examples) < 3:
            no_entity_examples.append(memory.get("content", "")[:160])
        for rel in degrees:
            body = client.get(
                f"/memories/{memory_id}/related", params={"relationship_types": rel, "limit": 200}
            ).json()
            degrees[rel].append(int(body.get("count") or 0))
    n = len(picked)
    edges = {
        rel: {
            "sample_mean_degree": round(sum(d) / n, 3) if n else None,
            "sample_with_edge_share": round(sum(1 for x in d if x) / n, 3) if n else None,
            "estimated_edges": round(sum(d) / n * n_total / 2) if n else None,
        }
        for rel, d in degrees.items()
    }
    return {
        "sample": n,
        "with_entity_share": round(with_entity / n, 3) if n else None,
        "entity_tags_per_memory": round(entity_tags / n, 2) if n else None,
        "entity_kinds": dict(kinds.most_common()),
        "no_entity_examples": no_entity_examples,
        "edges": edges,
    }


def entity_tag_summary(client: httpx.Client) -> dict[str, Any]:
    body = client.get("/tags", params={"prefix": "entity"}).json()
    flat = body.get("flat") or []
    per_kind: Counter[str] = Counter()
    for row in flat:
        parts = row["tag"].split(":")
        if len(parts) == 3:
            per_kind[parts[1]] += 1
    total = next((row["count"] for row in flat if row["tag"] == "entity"), None)
    return {"memories_with_entity_tag": total, "distinct_entities_by_kind": dict(per_kind.most_common())}


def expected_preceded_by(corpus: Sequence[dict[str, Any]]) -> int:
    """PRECEDED_BY edges a complete sequence linking gives: one per memory but the first of a scope."""
    scopes = Counter(sequence_scope(m["tags"], m.get("metadata") or {}) for m in corpus)
    return sum(c - 1 for c in scopes.values())


def service_log_errors(path: Path, keep: int = 10) -> dict[str, Any]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return {"lines": 0, "error_lines": 0, "tracebacks": 0, "examples": []}
    errors = [ln for ln in lines if "ERROR" in ln or "CRITICAL" in ln or "Exception" in ln]
    examples = list(dict.fromkeys(ln[:300] for ln in errors))[:keep]
    return {
        "lines": len(lines),
        "error_lines": len(errors),
        "warning_lines": sum(1 for ln in lines if "WARNING" in ln),
        "tracebacks": sum(1 for ln in lines if ln.startswith("Traceback")),
        "examples": examples,
    }


def command_line(argv: Sequence[str]) -> str:
    return common.command_line("enrichment.py", argv)


def _min(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:.1f} s ({seconds / 60:.1f} min)"


def render_markdown(report: dict[str, Any]) -> str:
    meta, cfg, res = report["meta"], report["config"], report["results"]
    m = meta["machine"]
    enrich, embed = res["enrichment"], res["embedding"]
    sample = res["sample"]
    lines = [
        f"# Enrichment throughput ({meta['date']}, {m['cores']} cores, Python {m['python']}, "
        f"commit {meta['git_commit']})",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Service: embedded `automem serve` with {cfg['workers']} RQ worker(s); embedding "
        f"{cfg['embedding']}; corpus {cfg['n']} synthetic memories (seed {cfg['seed']}), "
        f"batches of {cfg['batch']}.",
        "",
        f"**This service: ~{res['end_to_end_per_s']:.0f} memories/s through embedding + "
        f"enrichment (the enrichment jobs alone ~{enrich.get('per_s', 0):.0f}/s); a "
        f"{cfg['n'] / 1000:g}k backlog drains in ~{res['total_s'] / 60:.1f} minutes.** "
        "AutoMem on this machine, as given in the issue: ~15 memories/s, a 10k backlog in ~7 minutes.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| ingest (POST /memory/batch) | {res['ingest_s']} s, {res['ingest_per_s']} memories/s "
        f"({res['statuses']}) |",
        f"| backlog drain after ingest | {_min(res['drain_after_ingest_s'])} |",
        f"| ingest start to fully drained | {_min(res['total_s'])} |",
        f"| end-to-end backlog throughput (N / drained time) | {res['end_to_end_per_s']} memories/s |",
        f"| enrichment throughput (first to last enriched) | {enrich.get('per_s')} memories/s |",
        f"| enrichment throughput, 10%-90% window | {enrich.get('per_s_10_90')} memories/s |",
        f"| first / last enriched at | {enrich.get('first_t')} s / {enrich.get('done_t')} s |",
        f"| embedding throughput (first to last embedded) | {embed.get('per_s')} memories/s |",
        f"| embedding throughput, 10%-90% window | {embed.get('per_s_10_90')} memories/s |",
        f"| first / last embedded at | {embed.get('first_t')} s / {embed.get('done_t')} s |",
        f"| memories with >=1 entity tag (sample of {sample['sample']}) | "
        f"{sample['with_entity_share']:.1%} |",
        f"| memories with >=1 entity tag (GET /tags?prefix=entity) | "
        f"{res['entity_tags']['memories_with_entity_tag']} of {res['final']['active']} |",
        f"| entity tags per memory (sample) | {sample['entity_tags_per_memory']} |",
        f"| distinct entities by kind | {res['entity_tags']['distinct_entities_by_kind']} |",
    ]
    for rel, e in sample["edges"].items():
        lines.append(
            f"| {rel} edges (estimated from sample degree {e['sample_mean_degree']}) | "
            f"~{e['estimated_edges']}"
            + (f" (complete chains would give {res['expected_preceded_by']})" if rel == "PRECEDED_BY" else "")
            + f"; {e['sample_with_edge_share']:.0%} of sampled memories have one |"
        )
    lines += [
        f"| failed jobs (/enrichment/status) | {res['final_status'].get('failed')} |",
        f"| enrichment counter / failures | {res['final_status'].get('stats', {}).get('enriched')} / "
        f"{res['final_status'].get('stats', {}).get('failures')} |",
        f"| service log error lines / tracebacks | {res['service_log']['error_lines']} / "
        f"{res['service_log']['tracebacks']} |",
        f"| processes left after SIGTERM | {len(res['leftover_processes'] or [])} |",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['platform']}. Load average at start "
        f"{meta['load_start']}, at end {meta['load_end']}.",
    ]
    if meta["other_processes_at_start"]:
        lines += [
            "",
            f"Note: {len(meta['other_processes_at_start'])} other automem/gunicorn/redis-server "
            "processes were running when the benchmark started (another benchmark or service "
            "shared the CPU), so these numbers are pessimistic.",
        ]
    if max(meta["load_start"][0], meta["load_end"][0]) > 0.5 * (m["cores"] or 1):
        lines += [
            "",
            f"Note: high load (1-min load average {meta['load_start'][0]} at start, "
            f"{meta['load_end'][0]} at end, on {m['cores']} cores).",
        ]
    if res["service_log"]["examples"]:
        lines += ["", "Service log errors (first distinct lines):", ""]
        lines += [f"    {ln}" for ln in res["service_log"]["examples"]]
    lines += [
        "",
        "## Backlog over time",
        "",
        "| t (s) | active | embedded | enriched | embed queue | enrich queue |",
        "|---|---|---|---|---|---|",
    ]
    series = res["series"]
    step = max(1, len(series) // 20)
    for s in series[::step] + ([series[-1]] if series and (len(series) - 1) % step else []):
        lines.append(
            f"| {s['t']} | {s['active']} | {s['embedded']} | {s['enriched']} | "
            f"{s['depth_embed']} | {s['depth_enrich']} |"
        )
    lines += [
        "",
        "Throughput is measured from the 1-second /health samples: memories enriched (or embedded) "
        "between the last sample before the first one and the first sample with all of them done, "
        "over that time. Polling starts with the first batch, so work done while batches are still "
        "arriving counts. Edge counts are degree means on a random sample times N/2 (GET "
        "/memories/<id>/related, depth 1).",
    ]
    return "\n".join(lines) + "\n"


# --- main ---------------------------------------------------------------------------------------


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories in the corpus (default 10000)")
    parser.add_argument(
        "--workers", type=int, help="RQ worker processes (serve --workers; default: service's)"
    )
    parser.add_argument("--batch", type=int, default=BATCH, help="memories per POST /memory/batch")
    parser.add_argument(
        "--sample", type=int, default=SAMPLE, help="memories inspected for entities and edges"
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the drain")
    parser.add_argument("--start-timeout", type=float, default=180, help="seconds to wait for the service")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks", help="directory for the reports")
    parser.add_argument(
        "--service-log",
        type=Path,
        default=Path(tempfile.gettempdir()) / "automem-enrichment-bench.log",
        help="where the service's output goes",
    )
    return parser


def run(args: argparse.Namespace, service: Service, meta: dict[str, Any]) -> dict[str, Any]:
    corpus = build_corpus(args.n)
    mean_chars = sum(len(m["content"]) for m in corpus) / len(corpus)
    log(f"corpus: {len(corpus)} memories, {mean_chars:.0f} chars avg")
    assert service.proc is not None
    workers = worker_count(service.proc.pid)
    headers = {"X-API-Key": service.token}
    with httpx.Client(base_url=service.url, headers=headers, timeout=300) as client:
        health = client.get("/health").json()
        emb = health.get("embedding") or {}
        embedding = f"{emb.get('provider')}/{emb.get('model')} ({emb.get('dimension')}d)"
        log(f"service {service.url}: embedding {embedding}, {workers} worker(s)")
        if emb.get("provider") == "hash":
            log("WARNING: hash embeddings; the model directory is missing?")
        start = time.perf_counter()
        poller = Poller(service.url, service.token, start)
        poller.start()
        ids, statuses = ingest(client, corpus, args.batch)
        ingest_s = time.perf_counter() - start
        log(f"ingest: {len(ids)} memories in {ingest_s:.1f}s {dict(statuses)}")
        expected = statuses.get("created", 0)
        last_log = 0.0
        while True:
            sample = poller.latest()
            elapsed = time.perf_counter() - start
            if sample and sample["t"] > ingest_s and drained(sample, expected):
                break
            if elapsed - last_log >= 15 and sample:
                log(
                    f"{elapsed:6.0f}s embedded {sample['embedded']}/{expected} enriched "
                    f"{sample['enriched']}/{expected} queues embed={sample['depth_embed']} "
                    f"enrich={sample['depth_enrich']} failed={sample['failed']}"
                )
                last_log = elapsed
            if elapsed > args.timeout:
                poller.stop_event.set()
                raise SystemExit(f"backlog not drained after {args.timeout:.0f}s: {sample}")
            time.sleep(0.25)
        total_s = sample["t"]
        poller.stop_event.set()
        poller.join(10)
        log(f"drained at {total_s:.1f}s ({total_s - ingest_s:.1f}s after ingest)")
        series = poller.samples
        final_status = client.get("/enrichment/status").json()
        try:
            admin = client.get("/admin/jobs", headers={"X-Admin-Token": service.admin_token}).json()
            failed_jobs = admin.get("failed_jobs") or []
        except (httpx.HTTPError, ValueError):
            failed_jobs = []
        sample_info = inspect_sample(client, ids, args.sample, expected)
        entity_tags = entity_tag_summary(client)
        final_health = client.get("/health").json()
    results = {
        "ingest_s": round(ingest_s, 2),
        "ingest_per_s": round(len(ids) / ingest_s, 1),
        "statuses": dict(statuses),
        "drain_after_ingest_s": round(total_s - ingest_s, 2),
        "total_s": round(total_s, 2),
        "end_to_end_per_s": round(expected / total_s, 2) if total_s else None,
        "enrichment": rate_between(series, "enriched", expected),
        "embedding": rate_between(series, "embedded", expected),
        "sample": sample_info,
        "entity_tags": entity_tags,
        "expected_preceded_by": expected_preceded_by(corpus),
        "final": series[-1] if series else {},
        "final_status": final_status,
        "final_health_counts": final_health.get("counts"),
        "failed_jobs": failed_jobs[:20],
        "poll_errors": poller.errors[:20],
        "series": series,
    }
    return {
        "meta": meta,
        "config": {
            "n": args.n,
            "seed": SEED,
            "batch": args.batch,
            "workers": workers,
            "workers_arg": args.workers,
            "embedding": embedding,
            "model_dir": str(MODEL_DIR),
            "service_log": str(service.log_path),
        },
        "results": results,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    meta: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "git_commit": git_commit(),
        "command": command_line(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "load_start": load_avg(),
        "other_processes_at_start": other_service_processes(),
    }
    if meta["other_processes_at_start"]:
        log(f"note: {len(meta['other_processes_at_start'])} other automem/gunicorn/redis processes running")
    try:
        with common.embedded_service(
            common.model_env(),
            workers=args.workers,
            start_timeout=args.start_timeout,
            log_path=args.service_log,
            prefix="automem-enrich-",
        ) as service:
            report = run(args, service, meta)
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    meta["load_end"] = load_avg()
    assert service.log_path is not None
    report["results"]["service_log"] = service_log_errors(service.log_path)
    report["results"]["leftover_processes"] = service.leftovers
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "enrichment.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = render_markdown(report)
    (args.out / "enrichment.md").write_text(markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
