"""The `automem` command line: one module per group of commands, each command's arguments
(`add_<name>`) beside the function that runs it.

A composition root: the worker-side commands (`worker`, `cron`, `reconcile`, `reembed`) import
`enrichment/`; every import happens inside the command that needs it, so `automem --help` and the
frequent `automem worker --check` stay light.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from automem import docsgen, logs
from automem.cli import access, maintenance, project, run
from automem.cli.common import ROOT, Subparsers
from automem.cli.run import worker_registered
from automem.embedded import end_when_orphaned
from automem.errors import ConfigurationError

GENERATED = docsgen.GENERATED  # kept importable here for the tests and older scripts
__all__ = ["GENERATED", "ROOT", "build_parser", "main", "worker_registered"]

# In the order `automem --help` lists them.
COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    run.add_serve,
    run.add_worker,
    run.add_cron,
    maintenance.add_reconcile,
    maintenance.add_reembed,
    maintenance.add_backup,
    maintenance.add_restore,
    maintenance.add_import_automem,
    access.add_keys,
    access.add_tenants,
    project.add_settings,
    project.add_docs,
    project.add_bench,
    run.add_mcp,
    project.add_doctor,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="automem", description="Long-term memory service for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    for choice in sub._choices_actions:  # `automem CMD --help` opens with the line the overview shows
        sub.choices[choice.dest].description = sub.choices[choice.dest].description or choice.help
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    end_when_orphaned()  # a child of `automem serve` (worker, cron) ends with it
    logs.configure(os.environ.get("AUTOMEM_LOG_LEVEL", "INFO"), os.environ.get("AUTOMEM_LOG_FORMAT", "json"))
    try:
        return int(args.func(args))
    except ConfigurationError as exc:
        print(f"automem: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
