"""Commands that run a process: serve, worker, cron, mcp."""

from __future__ import annotations

import argparse
import os
import socket
import tempfile

from automem.cli.common import Subparsers, settings_with
from automem.errors import ConfigurationError
from automem.settings import Settings, load_settings


def add_serve(sub: Subparsers) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the service (embedded FalkorDB + Qdrant Edge unless "
        "FALKORDB_URL/QDRANT_URL point to servers)",
    )
    serve.add_argument("--data-dir", dest="data_dir", help="data directory (default $AUTOMEM_DATA_DIR)")
    serve.add_argument("--host", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8001)")
    serve.add_argument("--workers", type=int, help="RQ worker processes in embedded mode (default 1)")
    serve.set_defaults(func=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    from automem.auth import check_bind_allowed
    from automem.embedded import api_command, serve
    from automem.metrics import MULTIPROC_ENV

    settings = settings_with(args)
    check_bind_allowed(settings, settings.host)
    if settings.embedded:
        workers = args.workers if args.workers is not None else settings.worker_processes
        return serve(settings, settings.host, settings.port, workers)
    argv = api_command(settings, settings.host, settings.port)
    argv[argv.index("--workers") + 1] = str(settings.api_processes)
    if settings.api_processes > 1 and not os.environ.get(MULTIPROC_ENV):
        # Several processes answer /metrics in turn: each must see all of their histograms.
        os.environ[MULTIPROC_ENV] = tempfile.mkdtemp(prefix="automem-metrics-")
    os.execv(argv[0], argv)
    return 0  # not reached


def add_worker(sub: Subparsers) -> None:
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
    worker.set_defaults(func=worker_command)


def worker_command(args: argparse.Namespace) -> int:
    if args.check:
        # Light on purpose (a health check runs often): settings and Redis only, no services.
        return 0 if worker_registered(load_settings(), socket.gethostname()) else 1
    from enrichment import worker

    queues = args.queues.split(",") if args.queues else list(worker.QUEUE_NAMES)
    cron = not args.no_cron and not args.burst
    return worker.run(queues, burst=args.burst, cron=cron, reconcile_first=not args.no_reconcile)


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


def add_cron(sub: Subparsers) -> None:
    cron = sub.add_parser("cron", help="run only the consolidation scheduler (RQ cron; one is active)")
    cron.set_defaults(func=cron_command)


def cron_command(args: argparse.Namespace) -> int:
    from enrichment.cron import run_forever

    return run_forever(load_settings())


def add_mcp(sub: Subparsers) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="serve the memory tools to an MCP client (Claude Desktop, Cursor, ...) on stdin/stdout; "
        "talks to the service at AUTOMEM_ENDPOINT with AUTOMEM_API_KEY (see docs/mcp.md)",
    )
    mcp.add_argument("--endpoint", help="service URL (default $AUTOMEM_ENDPOINT or http://127.0.0.1:8001)")
    mcp.set_defaults(func=mcp_command)


def mcp_command(args: argparse.Namespace) -> int:
    from automem.mcp_server import run

    return run(load_settings(**({"client_endpoint": args.endpoint} if args.endpoint else {})))
