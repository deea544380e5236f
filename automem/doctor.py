"""`automem doctor`: is this installation configured and working?

Checks, in order: the configuration is valid; the API token setup is safe for the bind address;
the embedding provider loads and yields vectors of its dimension; the stores answer (FalkorDB,
Redis and Qdrant directly when they are external servers; in embedded mode they live inside
`automem serve` and are checked through it); and the running service (AUTOMEM_ENDPOINT) answers
with a key it accepts, uses the same embedding dimension as its vector collection and as this
configuration, has no graph-vector drift and no failed jobs. Each check is ok, warn or fail;
any fail makes the exit status 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from automem.settings import Settings, host_is_loopback, load_settings

Status = Literal["ok", "warn", "fail", "skip"]
MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}


@dataclass
class Check:
    name: str
    status: Status
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Findings:
    """What the checks learnt that later checks compare against."""

    dimension: int | None = None
    graph_total: int | None = None
    vector_count: int | None = None
    vector_dimension: int | None = None


def run(overrides: dict[str, Any] | None = None, service: bool = True) -> list[Check]:
    try:
        settings = load_settings(**(overrides or {}))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "settings"
        return [Check("configuration", "fail", f"{where}: {first.get('msg')}")]
    checks = [Check("configuration", "ok", f"valid ({_mode(settings)} mode)")]
    found = Findings()
    for step in (_auth, _embedding, _graph, _queue, _vectors, _store_drift):
        checks.extend(step(settings, found))
    if service:
        checks.extend(_service(settings, found))
    return checks


def _mode(settings: Settings) -> str:
    return "embedded" if settings.embedded else "server"


def _auth(settings: Settings, _: Findings) -> Iterator[Check]:
    if settings.api_token:
        yield Check("api token", "ok", "AUTOMEM_API_TOKEN is set")
    elif host_is_loopback(settings.host):
        yield Check(
            "api token", "warn", f"no AUTOMEM_API_TOKEN: unauthenticated on {settings.host} (loopback)"
        )
    else:
        yield Check(
            "api token",
            "fail",
            f"no AUTOMEM_API_TOKEN but AUTOMEM_HOST={settings.host} is not "
            "loopback: the service refuses to start; set a token",
        )
    if not settings.admin_token:
        yield Check("admin token", "warn", "ADMIN_API_TOKEN is not set: admin routes answer 403")


def _embedding(settings: Settings, found: Findings) -> Iterator[Check]:
    from automem.embedding import build_provider

    try:
        provider, warnings = build_provider(settings)
        vector = provider.embed_one("automem doctor probe")
    except Exception as exc:  # any provider failure is the finding
        yield Check("embedding", "fail", f"{type(exc).__name__}: {exc}")
        return
    detail = f"{provider.name} {provider.model}, {provider.dimension} dimensions"
    data = {"provider": provider.name, "model": provider.model, "dimension": provider.dimension}
    if len(vector) != provider.dimension:
        yield Check("embedding", "fail", f"{detail}, but a probe came back with {len(vector)}", data)
        return
    found.dimension = provider.dimension
    yield Check("embedding", "warn" if warnings else "ok", "; ".join([detail, *warnings]), data)


def _graph(settings: Settings, found: Findings) -> Iterator[Check]:
    url = settings.graph_url()
    if not url:
        yield Check("falkordb", "skip", "embedded: runs inside `automem serve` (checked through the service)")
        return
    from automem.stores.graph import GraphStore

    yield _reach("falkordb", lambda: _graph_counts(GraphStore.from_url(url, settings.falkordb_graph), found))


def _graph_counts(graph: Any, found: Findings) -> str:
    counts = graph.counts()
    found.graph_total = counts["total"]
    return f"graph {graph.graph_name}: {counts['active']} active memories ({counts['total']} stored)"


def _queue(settings: Settings, _: Findings) -> Iterator[Check]:
    url = settings.queue_url()
    if not url:
        yield Check("redis", "skip", "embedded: runs inside `automem serve` (checked through the service)")
        return
    import redis

    from automem.stores.queue import JobQueue

    def failed_jobs() -> str:
        connection = redis.Redis.from_url(url)
        connection.ping()
        failed = {q: n for q, n in JobQueue(connection, settings).failed_counts().items() if n}
        if failed:
            raise _Warn(f"failed jobs {failed}: see GET /admin/jobs, requeue with POST /enrichment/reprocess")
        return "reachable, no failed jobs"

    yield _reach("redis", failed_jobs)


def _vectors(settings: Settings, found: Findings) -> Iterator[Check]:
    from automem.errors import ShardLocked
    from automem.stores.vectors import open_vector_store

    try:
        store = open_vector_store(settings)
    except ShardLocked:
        yield Check(
            "qdrant", "skip", "the Edge shard is owned by the running API (checked through the service)"
        )
        return
    except Exception as exc:  # a client that cannot even be built is the finding
        if settings.qdrant_path and "already accessed" in str(exc):
            yield Check("qdrant", "skip", "the local Qdrant path is open in the running API")
        else:
            yield Check("qdrant", "fail", f"{type(exc).__name__}: {exc}")
        return
    try:
        yield _reach("qdrant", lambda: _vector_counts(store, found))
    finally:
        store.close()


def _vector_counts(store: Any, found: Findings) -> str:
    dimension = store.dimension()
    if dimension is None:
        return f"{store.backend}: no collection yet (created at the first start)"
    found.vector_dimension, found.vector_count = dimension, store.count()
    if found.dimension is not None and dimension != found.dimension:
        raise _Fail(
            f"the collection holds {dimension}-dimensional vectors but the embedding provider "
            f"yields {found.dimension}: restore the previous model, or `automem reembed --all` "
            "for a model of the same dimension"
        )
    return f"{store.backend}: {found.vector_count} points of {dimension} dimensions"


def _store_drift(_: Settings, found: Findings) -> Iterator[Check]:
    """Graph against vectors read directly (server mode), so drift shows with the service down."""
    if found.graph_total is None or found.vector_count is None:
        return
    difference = found.graph_total - found.vector_count
    status: Status = "warn" if difference else "ok"
    yield Check(
        "drift (stores)",
        status,
        f"{found.graph_total} memories, {found.vector_count} vector points"
        + (": `automem reconcile` or POST /admin/sync repairs it" if difference else ""),
    )


def _service(settings: Settings, found: Findings) -> Iterator[Check]:
    from automem.client import AutomemClient, RetryPolicy
    from automem.client.errors import ApiError, AutomemClientError

    endpoint = settings.client_endpoint
    with AutomemClient(endpoint, settings.client_key, timeout=10.0, retry=RetryPolicy(retries=0)) as mem:
        try:
            health = mem.health()
        except AutomemClientError as exc:
            yield Check("service", "fail", f"{endpoint} does not answer: {exc}")
            return
        try:
            mem.tags(prefix="automem-doctor")
            yield Check(
                "service",
                "ok",
                f"{endpoint}: {health.status}, version {health.version}, the API key is accepted",
            )
        except ApiError as exc:
            yield Check("service", "fail", f"{endpoint}: {exc} (check AUTOMEM_API_KEY / AUTOMEM_API_TOKEN)")
    yield from _service_stores(health.model_dump())
    yield _dimensions(health.model_dump(), found)
    yield _drift(health.drift)
    yield _failed(health.queues)
    for warning in health.warnings:
        yield Check("service warning", "warn", warning)


def _service_stores(health: dict[str, Any]) -> Iterator[Check]:
    for name in ("falkordb", "qdrant"):
        state = health.get(name)
        status: Status = "ok" if state == "connected" else "warn" if state == "not_owned" else "fail"
        yield Check(f"service {name}", status, str(state))
    queues = health.get("queues") or {}
    yield Check(
        "service redis", "ok" if queues.get("status") == "connected" else "fail", str(queues.get("status"))
    )


def _dimensions(health: dict[str, Any], found: Findings) -> Check:
    served = (health.get("embedding") or {}).get("dimension")
    collection = (health.get("vectors") or {}).get("dimension")
    data = {"configured": found.dimension, "service": served, "collection": collection}
    if collection is not None and served != collection:
        return Check(
            "dimensions",
            "fail",
            f"the service embeds {served} dimensions into a collection of {collection}: `automem reembed`",
            data,
        )
    if found.dimension is not None and served is not None and served != found.dimension:
        return Check(
            "dimensions",
            "fail",
            f"this configuration embeds {found.dimension} dimensions, the "
            f"service {served}: the settings here differ from the service's",
            data,
        )
    return Check("dimensions", "ok", f"{served} dimensions everywhere", data)


def _drift(drift: dict[str, int] | None) -> Check:
    if drift is None:
        return Check("drift", "skip", "the service could not compare graph and vectors")
    if drift["difference"]:
        return Check(
            "drift",
            "warn",
            f"{drift['graph_memories']} memories but {drift['vector_points']} vector "
            "points: `automem reconcile` or POST /admin/sync repairs it",
            drift,
        )
    pending = f" ({drift['embedding_pending']} embeddings pending)" if drift.get("embedding_pending") else ""
    return Check(
        "drift", "ok", f"{drift['graph_memories']} memories, {drift['vector_points']} points{pending}", drift
    )


def _failed(queues: dict[str, Any]) -> Check:
    failed = {q: n for q, n in (queues.get("failed") or {}).items() if n}
    if failed:
        return Check(
            "failed jobs",
            "warn",
            f'{failed}: see GET /admin/jobs; requeue with POST /enrichment/reprocess {{"failed": true}}',
            failed,
        )
    return Check("failed jobs", "ok", "none")


class _Warn(Exception):
    pass


class _Fail(Exception):
    pass


def _reach(name: str, probe: Callable[[], str]) -> Check:
    try:
        return Check(name, "ok", probe())
    except _Warn as exc:
        return Check(name, "warn", str(exc))
    except _Fail as exc:
        return Check(name, "fail", str(exc))
    except Exception as exc:  # unreachable, refused, auth: every error is the finding
        return Check(name, "fail", f"{type(exc).__name__}: {exc}")


def report(checks: list[Check], as_json: bool) -> tuple[str, int]:
    failed = any(c.status == "fail" for c in checks)
    if as_json:
        return json.dumps({"ok": not failed, "checks": [asdict(c) for c in checks]}, indent=2), int(failed)
    lines = [f"[{MARKS[c.status]}] {c.name}: {c.detail}" for c in checks]
    lines.append("problems found" if failed else "all checks passed")
    return "\n".join(lines), int(failed)
