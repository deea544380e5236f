"""What the conditions that select every point cost a one-tenant store's Edge searches.

Recall sends every Edge search the tenant's condition (in the filter, and in the keyword
search's IDF scope beside the tag scope) and "active and valid now" (`state = active`, and no
`t_valid` after now or `t_invalid` before it). In a store of one tenant whose memories are all
active and valid since their time (as the service writes them), these conditions select every
point. This times each search as it was sent before (the conditions kept) and as the shard
sends it now (`EdgeVectorStore` leaves out the tenant's condition while the tenant is alone,
`state = active` while no point is inactive, and each validity exclusion no point's bound falls
in), on a shard of N memories of the load benchmark's corpus
(its words, tags and 384-d vectors), for the two tag scopes of the load benchmark's tag-prefix
recall: all of `slack` (half the store) and one project (a twentieth). Both forms return the
same points and scores (tests/integration/test_edge_tenant_mix.py); the report checks it on
every query too.

    python scripts/bench/edge_scopes.py --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import qdrant_edge as qe

from automem.record import MemoryRecord
from automem.stores.recall_filter import RecallFilter
from automem.stores.vectors.base import Filter, VectorHit, VectorPoint
from automem.stores.vectors.bm25 import SPARSE_NAME
from automem.stores.vectors.qdrant_edge import EdgeVectorStore, _filter, _hits
from automem.vectorsync import keyword_text, payload_for
from scripts.bench.common import ROOT, log, progress, report_title, run_meta, write_report
from scripts.bench.load import PROJECTS, Corpus

NOW = "2026-01-01T00:00:00+00:00"
QUERIES = 40
BATCH = 2000
LIMIT = 60  # RECALL_CANDIDATES: what each channel asks for


def point(corpus: Corpus, n: int) -> VectorPoint:
    """The load corpus's memory `n` as the service writes its point (its payload, its words)."""
    m = corpus.memory(n)
    fields = ("content", "type", "tags", "importance", "timestamp")
    # Valid from its time, as the service writes a memory (POST /memory: t_valid defaults to it).
    props = {"id": str(uuid.UUID(int=n + 1)), "t_valid": m["timestamp"], **{k: m[k] for k in fields}}
    doc = MemoryRecord.from_props(props)
    return VectorPoint(doc.id, m["embedding"], payload_for(doc), keyword_text(doc.content, doc.timestamp))


def build(path: Path, size: int) -> EdgeVectorStore:
    store = EdgeVectorStore(str(path))
    store.ensure_collection(384)
    corpus = Corpus()
    bar = progress(size, f"shard of {size:,}")
    for start in range(0, size, BATCH):
        store.upsert([point(corpus, n) for n in range(start, min(size, start + BATCH))])
        bar.update(min(BATCH, size - start))
    bar.close()
    return store


def scope_filter(tag: str) -> RecallFilter:
    """Recall's filter for one tag prefix of the default tenant, valid now (its defaults)."""
    return RecallFilter(tenant="default", now=NOW, tags=(tag,))


def kept_keyword(store: EdgeVectorStore, text: str, flt: RecallFilter) -> list[VectorHit]:
    """The keyword search as sent before: every condition in the filter and the IDF corpus."""
    assert store._shard is not None
    request = qe.QueryRequest(
        limit=LIMIT,
        query=qe.Query.Nearest(store.encoder.query(text), using=SPARSE_NAME),
        filter=_filter(flt.vector_filter()),
        params=qe.SearchParams(idf=qe.IdfParams(corpus=_filter(flt.idf_scope()))),
        with_payload=False,
    )
    return _hits(store._shard.query(request))


def kept_nearest(store: EdgeVectorStore, vector: list[float], flt: RecallFilter) -> list[VectorHit]:
    """The exact vector search as sent before: every condition in the filter."""
    assert store._shard is not None
    request = qe.QueryRequest(
        limit=LIMIT, query=qe.Query.Nearest(vector), filter=_filter(flt.vector_filter()), with_payload=False
    )
    return _hits(store._shard.query(request))


def timed(
    call: Callable[[dict[str, Any]], list[VectorHit]], queries: list[dict[str, Any]]
) -> tuple[dict[str, float], list[list[VectorHit]]]:
    samples, answers = [], []
    for query in queries:
        start = time.perf_counter()
        answers.append(call(query))
        samples.append((time.perf_counter() - start) * 1000)
    ordered = sorted(samples)
    p50, p95 = round(statistics.median(ordered), 2), round(ordered[int(0.95 * len(ordered))], 2)
    return {"p50_ms": p50, "p95_ms": p95}, answers


def same(a: list[VectorHit], b: list[VectorHit]) -> bool:
    """The same scores in the same order (ties may list their ids in either order)."""
    return len(a) == len(b) and all(abs(x.score - y.score) <= 1e-5 for x, y in zip(a, b, strict=True))


def compare(
    row: dict[str, Any],
    name: str,
    kept: Callable[[dict[str, Any]], list[VectorHit]],
    left_out: Callable[[dict[str, Any]], list[VectorHit]],
    queries: list[dict[str, Any]],
) -> None:
    for _ in range(2):  # warm-up
        kept(queries[0])
        left_out(queries[0])
    row[f"{name}, condition kept"], before = timed(kept, queries)
    row[f"{name}, condition left out"], after = timed(left_out, queries)
    row[f"{name} answers equal"] = all(same(a, b) for a, b in zip(before, after, strict=True))


def measure(store: EdgeVectorStore) -> dict[str, Any]:
    corpus = Corpus()
    queries = [corpus.query(n) for n in range(QUERIES)]
    out: dict[str, Any] = {"points": store.count()}
    for name, tag in (("slack", "slack"), ("one project", PROJECTS[0])):
        flt = scope_filter(tag)
        vf, scope = flt.vector_filter(), flt.idf_scope()
        row: dict[str, Any] = {
            "share": round(store.count(Filter(must=vf.must), exact=False) / out["points"], 3)
        }
        compare(
            row,
            "keyword",
            partial(lambda q, f: kept_keyword(store, q["query"], f), f=flt),
            partial(
                lambda q, f, s: store.keyword_search(q["query"], LIMIT, f, s, with_payload=False),
                f=vf,
                s=scope,
            ),
            queries,
        )
        compare(
            row,
            "vector",
            partial(lambda q, f: kept_nearest(store, q["embedding"], f), f=flt),
            partial(lambda q, f: store.search(q["embedding"], LIMIT, f, with_payload=False), f=vf),
            queries,
        )
        out[name] = row
    return out


def render(report: dict[str, Any]) -> str:
    lines = [
        report_title(
            "Conditions that select every point, in a one-tenant Edge shard's searches", report["meta"]
        ),
        "",
        f"Command: `{report['meta']['command']}`. {QUERIES} load-benchmark queries a row, limit {LIMIT}, "
        "p50 / p95 ms, in one process with the shard (no service).",
        "",
        "| points | scope (share) | keyword: kept | keyword: left out | exact vector: kept "
        "| exact vector: left out | same answers |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in report["sizes"]:
        for name in ("slack", "one project"):
            row = size[name]

            def cell(key: str, row: dict[str, Any] = row) -> str:
                return f"{row[key]['p50_ms']} / {row[key]['p95_ms']}"

            equal = "yes" if row["keyword answers equal"] and row["vector answers equal"] else "**no**"
            lines.append(
                f"| {size['points']:,} | {name} ({row['share']}) | {cell('keyword, condition kept')} | "
                f"{cell('keyword, condition left out')} | {cell('vector, condition kept')} | "
                f"{cell('vector, condition left out')} | {equal} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args()
    sizes = []
    for size in (int(s) for s in args.sizes.split(",")):
        tmp = Path(tempfile.mkdtemp(prefix="edge_scopes_"))
        try:
            store = build(tmp / "shard", size)
            log(f"measuring {size:,}")
            sizes.append(measure(store))
            store.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    report = {"meta": run_meta("edge_scopes.py"), "sizes": sizes}
    return write_report(args.out, "edge_scopes", report, render)


if __name__ == "__main__":
    raise SystemExit(main())
