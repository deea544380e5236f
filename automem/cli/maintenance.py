"""Commands that look after the data: reconcile, reembed, backup, restore, import-automem."""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from automem.cli.common import VIA_API, Subparsers
from automem.errors import ConfigurationError
from automem.settings import Settings, load_settings

if TYPE_CHECKING:
    from automem.client import AutomemClient
    from automem.stores.automem_source import AutoMemGraph
    from automem.stores.vectors.automem_source import AutoMemVectors


def add_reconcile(sub: Subparsers) -> None:
    rec = sub.add_parser(
        "reconcile",
        help="queue embedding (missing or of another model) and enrichment for every memory that lacks it",
    )
    rec.set_defaults(func=reconcile_command)


def reconcile_command(args: argparse.Namespace) -> int:
    from enrichment.maintenance import reconcile

    print(json.dumps(reconcile()))
    return 0


def add_reembed(sub: Subparsers) -> None:
    reemb = sub.add_parser(
        "reembed",
        help="re-embed memories lacking a vector of the configured model (--all: every memory); "
        "workers do the work while old vectors keep answering",
    )
    reemb.add_argument("--all", action="store_true", help="re-embed every memory, not only stale ones")
    reemb.add_argument("--wait", action="store_true", help="show a progress bar until every memory is done")
    reemb.add_argument("--interval", type=float, default=2.0, help="seconds between progress updates")
    reemb.set_defaults(func=reembed_command)


def reembed_command(args: argparse.Namespace) -> int:
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


def add_backup(sub: Subparsers) -> None:
    bk = sub.add_parser(
        "backup",
        help="download a backup archive of graph, history and vectors (GET /backup)",
        description="Stream one gzip'd JSON-lines archive (memories with embeddings, history, entities, "
        "patterns, edges, vector points) to a file, verified complete before it is renamed into place. "
        + VIA_API,
    )
    bk.add_argument("-o", "--output", help="file to write (default: the name the service suggests)")
    bk.add_argument("--url", help="the service's base URL (default http://127.0.0.1:$PORT)")
    bk.set_defaults(func=backup_command)


def backup_command(args: argparse.Namespace) -> int:
    from automem import backup

    settings = load_settings()
    url = args.url or backup.service_url(settings)
    output = Path(args.output) if args.output else None
    print(json.dumps(backup.download_backup(url, backup.admin_headers(settings), output)))
    return 0


def add_restore(sub: Subparsers) -> None:
    rs = sub.add_parser(
        "restore",
        help="rebuild the service's store from a backup archive (POST /admin/restore)",
        description="Upload an archive; the service validates all of it first (a corrupt or truncated "
        "archive changes nothing), then writes graph, history and vectors, re-creates indexes and "
        "queues any missing embedding or enrichment. A store holding memories is refused unless "
        "--replace. " + VIA_API,
    )
    rs.add_argument("file", help="an archive written by `automem backup` or GET /backup")
    rs.add_argument("--replace", action="store_true", help="wipe graph, vectors and queued work first")
    rs.add_argument(
        "--vectors-from-graph",
        action="store_true",
        help="rebuild every vector point from the graph instead of using the archive's points",
    )
    rs.add_argument("--url", help="the service's base URL (default http://127.0.0.1:$PORT)")
    rs.set_defaults(func=restore_command)


def restore_command(args: argparse.Namespace) -> int:
    from automem import backup

    settings = load_settings()
    url = args.url or backup.service_url(settings)
    headers = backup.admin_headers(settings)
    result = backup.upload_restore(url, headers, Path(args.file), args.replace, args.vectors_from_graph)
    print(json.dumps(result, indent=2))
    return 0


def add_import_automem(sub: Subparsers) -> None:
    imp = sub.add_parser(
        "import-automem",
        help="copy a running AutoMem's memories, relations and vectors into this service",
        description="Reads AutoMem's FalkorDB graph (memories with their ids, tags, types, "
        "importance, timestamps and metadata; the 11 authored relation types) and, when given, its "
        "Qdrant collection (vectors, used when their dimension is this service's), and stores them "
        "through this service's API (POST /memory/batch, POST /associate). Re-runnable: what an "
        "earlier run stored is skipped (POST /admin/existing). AutoMem's similarity, sequence and "
        "discovery edges and its entities are not copied: enrichment recomputes them. Prints a JSON "
        "report. " + VIA_API,
    )
    imp.add_argument(
        "--falkordb-url", required=True, help="AutoMem's FalkorDB: redis://[:PASSWORD@]HOST:PORT"
    )
    imp.add_argument("--graph", default="memories", help="AutoMem's FALKORDB_GRAPH (default memories)")
    vectors = imp.add_mutually_exclusive_group()
    vectors.add_argument("--qdrant-url", help="AutoMem's Qdrant server (its QDRANT_URL)")
    vectors.add_argument("--qdrant-path", help="a Qdrant local-mode directory instead of a server")
    imp.add_argument("--qdrant-api-key", help="AutoMem's QDRANT_API_KEY, if its server needs one")
    imp.add_argument(
        "--collection", default="memories", help="AutoMem's QDRANT_COLLECTION (default memories)"
    )
    imp.add_argument("--url", help="this service's base URL (default http://127.0.0.1:$PORT)")
    imp.add_argument(
        "--batch", type=_batch_size, default=500, help="memories per request, 1-1000 (default 500)"
    )
    imp.add_argument(
        "--reembed",
        action="store_true",
        help="leave AutoMem's vectors behind and let the workers embed every memory (for AutoMem data "
        "embedded with another model of the same dimension)",
    )
    imp.add_argument("--dry-run", action="store_true", help="read, map and check what exists; write nothing")
    imp.add_argument("--timeout", type=float, default=120.0, help="seconds per request to this service")
    imp.set_defaults(func=import_automem_command)


def _batch_size(value: str) -> int:
    size = int(value)
    if not 1 <= size <= 1000:
        raise argparse.ArgumentTypeError("must be between 1 and 1000")
    return size


def import_automem_command(args: argparse.Namespace) -> int:
    """Run the import and print its report; 1 when a failure stopped it (a re-run continues)."""
    from automem.automem_import import AutoMemImport, ImportOptions

    settings = load_settings()
    options = ImportOptions(
        batch=args.batch,
        dry_run=args.dry_run,
        reembed=args.reembed,
        max_body_bytes=settings.max_body_bytes,
        settings=settings,
    )
    with ExitStack() as stack:
        client = stack.enter_context(_service_client(args, settings))
        graph, vectors = _automem_sources(args, stack)
        report = AutoMemImport(graph, vectors, client, options).run()
    print(json.dumps(report, indent=2))
    return 1 if report["status"] == "failed" else 0


def _service_client(args: argparse.Namespace, settings: Settings) -> AutomemClient:
    """This service's SDK client with the tokens of the environment (the admin token is needed:
    the import asks POST /admin/existing what an earlier run stored)."""
    from automem import backup
    from automem.client import AutomemClient, RetryPolicy

    if not settings.admin_token:
        raise ConfigurationError("ADMIN_API_TOKEN is not set: the import asks POST /admin/existing")
    return AutomemClient(
        args.url or backup.service_url(settings),
        settings.client_key,
        admin_token=settings.admin_token,
        timeout=args.timeout,
        retry=RetryPolicy(retries=settings.client_retries),
    )


def _automem_sources(
    args: argparse.Namespace, stack: ExitStack
) -> tuple[AutoMemGraph, AutoMemVectors | None]:
    """AutoMem's graph (checked to exist) and, when given, its Qdrant collection; closed by `stack`."""
    from automem.stores.automem_source import AutoMemGraph
    from automem.stores.vectors.automem_source import AutoMemVectors

    graph = AutoMemGraph.from_url(args.falkordb_url, args.graph)
    stack.callback(graph.close)
    graph.check()
    if not (args.qdrant_url or args.qdrant_path):
        return graph, None
    vectors = AutoMemVectors.open(args.collection, args.qdrant_url, args.qdrant_path, args.qdrant_api_key)
    stack.callback(vectors.close)
    return graph, vectors
