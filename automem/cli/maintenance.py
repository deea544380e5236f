"""Commands that look after the data: reconcile, reembed, backup, restore."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from automem.cli.common import VIA_API, Subparsers
from automem.settings import load_settings


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
