"""The `automem` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import runpy
import socket
import sys
import tempfile
import time
from pathlib import Path

from automem import docsgen, logs
from automem.errors import ConfigurationError
from automem.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
GENERATED = docsgen.GENERATED  # kept importable here for the tests and older scripts


def _settings_with(args: argparse.Namespace) -> Settings:
    overrides = {}
    for name in ("data_dir", "host", "port"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    return load_settings(**overrides)


def cmd_serve(args: argparse.Namespace) -> int:
    settings = _settings_with(args)
    from automem.app import check_bind_allowed

    check_bind_allowed(settings, settings.host)
    if settings.embedded:
        from automem.embedded import serve

        workers = args.workers if args.workers is not None else settings.worker_processes
        return serve(settings, settings.host, settings.port, workers)
    from automem.embedded import api_command

    argv = api_command(settings, settings.host, settings.port)
    argv[argv.index("--workers") + 1] = str(settings.api_processes)
    from automem.metrics import MULTIPROC_ENV

    if settings.api_processes > 1 and not os.environ.get(MULTIPROC_ENV):
        # Several processes answer /metrics in turn: each must see all of their histograms.
        os.environ[MULTIPROC_ENV] = tempfile.mkdtemp(prefix="automem-metrics-")
    os.execv(argv[0], argv)
    return 0  # not reached


def worker_registered(settings: Settings, hostname: str) -> bool:
    """True when an RQ worker of this host is registered in Redis. Its registration expires
    unless the worker heartbeats, so this is a liveness check of `automem worker` itself."""
    import redis
    from rq import Worker

    url = settings.queue_url()
    if not url:
        raise ConfigurationError("set REDIS_URL or FALKORDB_URL: workers run in server mode")
    connection = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    return any(worker.hostname == hostname for worker in Worker.all(connection=connection))


def cmd_worker(args: argparse.Namespace) -> int:
    if args.check:
        # Light on purpose (a health check runs often): settings and Redis only, no services.
        return 0 if worker_registered(load_settings(), socket.gethostname()) else 1
    from enrichment import worker

    queues = args.queues.split(",") if args.queues else list(worker.QUEUE_NAMES)
    cron = not args.no_cron and not args.burst
    return worker.run(queues, burst=args.burst, cron=cron, reconcile_first=not args.no_reconcile)


def cmd_cron(args: argparse.Namespace) -> int:
    from enrichment.cron import run_forever

    return run_forever(load_settings())


def cmd_reconcile(args: argparse.Namespace) -> int:
    from enrichment.maintenance import reconcile

    print(json.dumps(reconcile()))
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    """Queue re-embedding (workers do it) and, with --wait, show a progress bar until done."""
    from tqdm import tqdm

    from automem.backlog import reembed_progress
    from enrichment.context import current_services
    from enrichment.embedding import reembed

    print(json.dumps(reembed(every=args.all)))
    if not args.wait:
        return 0
    svc = current_services()
    with tqdm(desc="re-embedding", unit="memory", file=sys.stderr) as bar:
        while True:
            progress = reembed_progress(svc)
            bar.total, bar.n = progress["memories"], progress["done"]
            bar.refresh()
            if progress["remaining"] <= 0:
                return 0
            time.sleep(args.interval)


def cmd_docs(args: argparse.Namespace) -> int:
    """Write or check every generated file: docs, .env.example, README table, Helm values."""
    if args.write:
        for path in docsgen.write_all():
            print(f"wrote {path}")
        return 0
    stale = docsgen.stale_files()
    if stale:
        print(f"stale generated files: {', '.join(stale)}; run `automem docs --write`")
        return 1
    print("generated files are current")
    return 0


def cmd_backup(args: argparse.Namespace) -> int:
    from automem import backup

    settings = load_settings()
    url = args.url or backup.service_url(settings)
    output = Path(args.output) if args.output else None
    print(json.dumps(backup.download_backup(url, backup.admin_headers(settings), output)))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from automem import backup

    settings = load_settings()
    url = args.url or backup.service_url(settings)
    headers = backup.admin_headers(settings)
    result = backup.upload_restore(url, headers, Path(args.file), args.replace, args.vectors_from_graph)
    print(json.dumps(result, indent=2))
    return 0


def cmd_settings(args: argparse.Namespace) -> int:
    if args.write or args.check:
        return cmd_docs(args)
    print(json.dumps(load_settings().redacted(), indent=2, default=str))
    return 0


BENCHMARKS = {
    "locomo": "locomo.py",
    "bm25": "bm25_backends.py",
    "enrichment": "enrichment.py",
    "load": "load.py",
    "api-threads": "api_threads.py",
    "aof": "aof_durability.py",
}


def cmd_bench(args: argparse.Namespace) -> int:
    """Run a benchmark script of scripts/bench (a source checkout) with the remaining arguments."""
    script = ROOT / "scripts" / "bench" / BENCHMARKS[args.name]
    if not script.exists():
        raise ConfigurationError(f"{script} not found: benchmarks run from a source checkout")
    sys.argv = [str(script), *args.rest]
    sys.path.insert(0, str(ROOT))
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from automem.mcp_server import run

    return run(load_settings(**({"client_endpoint": args.endpoint} if args.endpoint else {})))


def cmd_doctor(args: argparse.Namespace) -> int:
    from automem import doctor

    logging.getLogger("httpx").setLevel(logging.WARNING)
    checks = doctor.run(
        {"client_endpoint": args.endpoint} if args.endpoint else {}, service=not args.no_service
    )
    text, status = doctor.report(checks, args.json)
    print(text)
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="automem", description="Long-term memory service for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve",
        help="run the service (embedded FalkorDB + Qdrant Edge unless "
        "FALKORDB_URL/QDRANT_URL point to servers)",
    )
    serve.add_argument("--data-dir", dest="data_dir", help="data directory (default $AUTOMEM_DATA_DIR)")
    serve.add_argument("--host", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8001)")
    serve.add_argument("--workers", type=int, help="RQ worker processes in embedded mode (default 1)")
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="run an RQ worker for the embed/enrich/maintenance queues")
    worker.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    worker.add_argument("--queues", help="comma list of queues (default: all)")
    worker.add_argument("--no-reconcile", action="store_true", help="skip the reconcile pass at start")
    worker.add_argument("--no-cron", action="store_true", help="do not run the consolidation scheduler")
    worker.add_argument(
        "--check",
        action="store_true",
        help="health check: exit 0 when a worker of this host is registered and heartbeating, else 1",
    )
    worker.set_defaults(func=cmd_worker)

    cron = sub.add_parser("cron", help="run only the consolidation scheduler (RQ cron; one is active)")
    cron.set_defaults(func=cmd_cron)

    rec = sub.add_parser(
        "reconcile",
        help="queue embedding (missing or of another model) and enrichment for every memory that lacks it",
    )
    rec.set_defaults(func=cmd_reconcile)

    reemb = sub.add_parser(
        "reembed",
        help="re-embed memories lacking a vector of the configured model (--all: every memory); "
        "workers do the work while old vectors keep answering",
    )
    reemb.add_argument("--all", action="store_true", help="re-embed every memory, not only stale ones")
    reemb.add_argument("--wait", action="store_true", help="show a progress bar until every memory is done")
    reemb.add_argument("--interval", type=float, default=2.0, help="seconds between progress updates")
    reemb.set_defaults(func=cmd_reembed)

    via_api = (
        "It talks to the running service (`automem serve`, or --url) with AUTOMEM_API_TOKEN and "
        "ADMIN_API_TOKEN from the environment: in embedded mode the API process owns the Qdrant Edge "
        "shard, so the CLI never opens the stores itself."
    )
    bk = sub.add_parser(
        "backup",
        help="download a backup archive of graph, history and vectors (GET /backup)",
        description="Stream one gzip'd JSON-lines archive (memories with embeddings, history, entities, "
        "patterns, edges, vector points) to a file, verified complete before it is renamed into place. "
        + via_api,
    )
    bk.add_argument("-o", "--output", help="file to write (default: the name the service suggests)")
    bk.add_argument("--url", help="the service's base URL (default http://127.0.0.1:$PORT)")
    bk.set_defaults(func=cmd_backup)
    rs = sub.add_parser(
        "restore",
        help="rebuild the service's store from a backup archive (POST /admin/restore)",
        description="Upload an archive; the service validates all of it first (a corrupt or truncated "
        "archive changes nothing), then writes graph, history and vectors, re-creates indexes and "
        "queues any missing embedding or enrichment. A store holding memories is refused unless "
        "--replace. " + via_api,
    )
    rs.add_argument("file", help="an archive written by `automem backup` or GET /backup")
    rs.add_argument("--replace", action="store_true", help="wipe graph, vectors and queued work first")
    rs.add_argument(
        "--vectors-from-graph",
        action="store_true",
        help="rebuild every vector point from the graph instead of using the archive's points",
    )
    rs.add_argument("--url", help="the service's base URL (default http://127.0.0.1:$PORT)")
    rs.set_defaults(func=cmd_restore)

    st = sub.add_parser("settings", help="show settings (secrets masked); --write/--check as `automem docs`")
    st.add_argument("--write", action="store_true", help="same as `automem docs --write`")
    st.add_argument("--check", action="store_true", help="same as `automem docs --check`")
    st.set_defaults(func=cmd_settings)
    docs = sub.add_parser(
        "docs",
        help="regenerate (--write) or check (--check, the default) the files generated from the settings "
        "registry and the OpenAPI document: docs/, .env.example, README table, Helm values and schema",
    )
    mode = docs.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write every generated file")
    mode.add_argument("--check", action="store_true", help="exit 1 when a generated file is stale (default)")
    docs.set_defaults(func=cmd_docs)
    bench = sub.add_parser(
        "bench",
        help="run a benchmark: locomo (recall quality), load (speed and memory at 10k/100k), "
        "api-threads, bm25, enrichment, aof (durability)",
    )
    bench.add_argument("name", choices=sorted(BENCHMARKS))
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="arguments of the benchmark (see its --help)")
    bench.set_defaults(func=cmd_bench)

    mcp = sub.add_parser(
        "mcp",
        help="serve the memory tools to an MCP client (Claude Desktop, Cursor, ...) on stdin/stdout; "
        "talks to the service at AUTOMEM_ENDPOINT with AUTOMEM_API_KEY (see docs/mcp.md)",
    )
    mcp.add_argument("--endpoint", help="service URL (default $AUTOMEM_ENDPOINT or http://127.0.0.1:8001)")
    mcp.set_defaults(func=cmd_mcp)

    doc = sub.add_parser(
        "doctor",
        help="check the configuration, API token setup, embedding provider and dimensions, FalkorDB/"
        "Redis/Qdrant connectivity, the running service, graph-vector drift and failed jobs; "
        "exit status 1 when a check fails",
    )
    doc.add_argument("--json", action="store_true", help="print the checks as JSON")
    doc.add_argument("--endpoint", help="service URL (default $AUTOMEM_ENDPOINT or http://127.0.0.1:8001)")
    doc.add_argument("--no-service", action="store_true", help="skip the checks through the running service")
    doc.set_defaults(func=cmd_doctor)
    for choice in sub._choices_actions:  # `automem CMD --help` opens with the line the overview shows
        sub.choices[choice.dest].description = sub.choices[choice.dest].description or choice.help
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(os.environ.get("AUTOMEM_LOG_LEVEL", "INFO"), os.environ.get("AUTOMEM_LOG_FORMAT", "json"))
    try:
        return int(args.func(args))
    except ConfigurationError as exc:
        print(f"automem: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
