"""Commands about the project itself: settings, docs, bench, doctor."""

from __future__ import annotations

import argparse
import json
import logging
import runpy
import sys

from automem import docsgen
from automem.cli.common import ROOT, Subparsers
from automem.errors import ConfigurationError
from automem.settings import load_settings

BENCHMARKS = {
    "locomo": "locomo.py",
    "longmemeval": "longmemeval.py",
    "bm25": "bm25_backends.py",
    "enrichment": "enrichment.py",
    "load": "load.py",
    "api-threads": "api_threads.py",
    "aof": "aof_durability.py",
    "dashboard": "dashboard.py",
    "embedding": "embedding.py",
    "vector-layout": "vector_layout.py",
    "vector-engines": "vector_engines.py",
    "vector-index-growth": "vector_index_growth.py",
    "graph-write": "graph_write.py",
    "store-memory": "store_memory.py",
    "edge-residency": "edge_residency.py",
    "edge-scopes": "edge_scopes.py",
    "walks": "walks.py",
    "sequence": "sequence.py",
    "setting-ab": "setting_ab.py",
}


def add_settings(sub: Subparsers) -> None:
    st = sub.add_parser("settings", help="show settings (secrets masked); --write/--check as `automem docs`")
    st.add_argument("--write", action="store_true", help="same as `automem docs --write`")
    st.add_argument("--check", action="store_true", help="same as `automem docs --check`")
    st.set_defaults(func=settings_command)


def settings_command(args: argparse.Namespace) -> int:
    if args.write or args.check:
        return docs_command(args)
    print(json.dumps(load_settings().redacted(), indent=2, default=str))
    return 0


def add_docs(sub: Subparsers) -> None:
    docs = sub.add_parser(
        "docs",
        help="regenerate (--write) or check (--check, the default) the files generated from the settings "
        "registry and the OpenAPI document: docs/, .env.example, README table, Helm values and schema",
    )
    mode = docs.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write every generated file")
    mode.add_argument("--check", action="store_true", help="exit 1 when a generated file is stale (default)")
    docs.set_defaults(func=docs_command)


def docs_command(args: argparse.Namespace) -> int:
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


def add_bench(sub: Subparsers) -> None:
    bench = sub.add_parser(
        "bench",
        help="run a benchmark: locomo (recall quality), longmemeval (session and turn recall on "
        "LongMemEval_S haystacks, ingest and drain time), load (speed and memory at 10k/100k; "
        "--tenants), api-threads, bm25, enrichment, aof (durability), dashboard (page weight, "
        "server time, screenshots), embedding (texts/s of the local model on real memory "
        "lengths), vector-layout (graph writes and searches with the embedding on the memory or "
        "its own node), vector-engines (where the nearest-neighbour search could run: FalkorDB's "
        "HNSW, Edge exact, Edge's own HNSW; speed, recall, memory), vector-index-growth "
        "(FalkorDB's memory while its vector index grows: the transient copies above its resident "
        "memory), graph-write (the graph's share of the batch path with and without its vector "
        "index: embedded mode against server mode), store-memory (what a kept store holds in "
        "FalkorDB and in the Edge shard, per memory), edge-scopes (what the conditions that "
        "select every point of a one-tenant store, its tenant and active-and-valid-now, cost "
        "the Edge shard's keyword and exact searches), "
        "walks (one pass over every memory: vector repair, reconcile, decay; at 10k, 100k, 1M), "
        "sequence (enrichment's sequence lookup for a memory written as it happens, with and "
        "without the scopes' time ranges), setting-ab (one setting's values in turn on one store: "
        "recall and single writes)",
    )
    bench.add_argument("name", choices=sorted(BENCHMARKS))
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="arguments of the benchmark (see its --help)")
    bench.set_defaults(func=bench_command)


def bench_command(args: argparse.Namespace) -> int:
    """Run a benchmark script of scripts/bench (a source checkout) with the remaining arguments."""
    script = ROOT / "scripts" / "bench" / BENCHMARKS[args.name]
    if not script.exists():
        raise ConfigurationError(f"{script} not found: benchmarks run from a source checkout")
    sys.argv = [str(script), *args.rest]
    sys.path.insert(0, str(ROOT))
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        return exit_status(exc)
    return 0


def exit_status(exc: SystemExit) -> int:
    """A benchmark's SystemExit as a status: a message (`SystemExit("automem serve exited ...")`)
    is printed and fails the command, as the interpreter itself would."""
    if isinstance(exc.code, str):
        print(exc.code, file=sys.stderr)
        return 1
    return int(exc.code or 0)


def add_doctor(sub: Subparsers) -> None:
    doc = sub.add_parser(
        "doctor",
        help="check the configuration, API token setup, embedding provider and dimensions, FalkorDB/"
        "Redis/Qdrant connectivity, the running service, graph-vector drift and failed jobs; "
        "exit status 1 when a check fails",
    )
    doc.add_argument("--json", action="store_true", help="print the checks as JSON")
    doc.add_argument("--endpoint", help="service URL (default $AUTOMEM_ENDPOINT or http://127.0.0.1:8001)")
    doc.add_argument("--no-service", action="store_true", help="skip the checks through the running service")
    doc.set_defaults(func=doctor_command)


def doctor_command(args: argparse.Namespace) -> int:
    from automem import doctor

    logging.getLogger("httpx").setLevel(logging.WARNING)
    checks = doctor.run(
        {"client_endpoint": args.endpoint} if args.endpoint else {}, service=not args.no_service
    )
    text, status = doctor.report(checks, args.json)
    print(text)
    return status
