"""Dashboard benchmark: page weight and server time of every /ui/ page, and screenshots.

Starts an embedded FalkorDB and the app in this process (the real stores; hash embeddings, no
model time), stores the LoCoMo dev conversations (one memory per turn, tagged by conversation
and speaker), runs the background jobs over them (entities, links) unless --no-enrich, then
fills the store up to --size memories with the load benchmark's synthetic corpus. Each page is
requested --rounds times through the app (server time: no network), and its transfer weight is
the HTML plus every file it loads (stylesheet, icon, script), gzip'd as a proxy would send them.
With --screenshots DIR, every page is photographed at 1280 px in Debian's chromium (Playwright).

    python scripts/bench/dashboard.py --size 100000              # figures at 100k
    python scripts/bench/dashboard.py --size 0 --screenshots docs/screenshots
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from automem.app import create_app, stop_app
from automem.embedded import EmbeddedFalkorDB
from enrichment.context import use_services
from enrichment.worker import run_burst
from scripts.bench import locomo
from scripts.bench.common import ROOT, git_commit, log, machine_info, percentiles, report_title
from scripts.bench.load import Corpus
from tests.conftest import API_TOKEN, make_settings

DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
TARGETS = {
    "page of 50 memories, server p50 (ms)": 200,
    "tag tree, server p50 (ms)": 1000,
    "first load (KB)": 300,
}


def fill(api: Any, size: int, enrich: bool, services: Any) -> dict[str, Any]:
    started = time.perf_counter()
    samples = locomo.load_dataset(DATA)
    stored = 0
    for sample in samples:
        turns, _ = locomo.extract_turns(sample)
        bodies = [locomo.build_memory(t) for t in turns]
        for start in range(0, len(bodies), 500):
            response = api.post(
                "/memory/batch", json={"memories": bodies[start : start + 500]}, headers=_auth()
            )
            assert response.status_code == 201, response.get_json()
            stored += len(bodies[start : start + 500])
    log(f"stored {stored} LoCoMo turns")
    if enrich:
        use_services(services)
        run_burst(services)
        log("enrichment done")
    corpus = Corpus()
    for start in range(stored, size, 200):  # 200 memories with vectors fit the body limit
        batch = [corpus.memory(n) for n in range(start, min(size, start + 200))]
        response = api.post("/memory/batch", json={"memories": batch}, headers=_auth())
        assert response.status_code == 201, response.get_json()
        if start % 10_000 < 200:
            log(f"  {start + len(batch)} memories")
    return {
        "locomo_turns": stored,
        "total": max(size, stored),
        "seconds": round(time.perf_counter() - started, 1),
    }


def _auth() -> dict[str, str]:
    return {"X-API-Key": API_TOKEN}


def pages(api: Any) -> dict[str, str]:
    listing = api.get("/memory/by-tag?tags=locomo&limit=1", headers=_auth()).get_json()
    memory_id = listing["memories"][0]["id"] if listing["memories"] else ""
    found = api.get("/entities?limit=1", headers=_auth()).get_json().get("entities") or [{}]
    entity = found[0].get("slug", "none")
    return {
        "overview": "/ui/",
        "tags": "/ui/tags",
        "tags-drilled": "/ui/tags?prefix=locomo:conv-26",
        "memories": "/ui/memories",
        "memories-filtered": "/ui/memories?importance=0.6&offset=50",
        "memory": f"/ui/memory/{memory_id}",
        "search": "/ui/search?q=adoption+agency+interview",
        "graph": f"/ui/graph?memory={memory_id}&depth=2",
        "snapshot": "/ui/graph",
        "entities": "/ui/entities",
        "entity": f"/ui/entity/{entity}",
        "ops": "/ui/ops",
    }


def measure(app: Any, paths: dict[str, str], rounds: int) -> dict[str, Any]:
    client = app.test_client()
    client.post("/ui/sign-in", data={"api_key": API_TOKEN})
    out = {}
    for name, path in paths.items():
        samples, body = [], b""
        for _ in range(rounds):
            started = time.perf_counter()
            response = client.get(path)
            samples.append(time.perf_counter() - started)
            body = response.data
            assert response.status_code == 200, (path, response.status_code, body[:300])
        out[name] = {
            "path": path,
            "html_bytes": len(body),
            "assets": _assets(body),
            "transfer_kb_gzip": round(_transfer(client, body) / 1024, 1),
        } | percentiles(samples)
        log(f"  {name}: p50 {out[name]['p50_ms']} ms, {out[name]['transfer_kb_gzip']} KB")
    return out


def _assets(html: bytes) -> list[str]:
    """The files of the dashboard a page loads (stylesheet, icon, script)."""
    return sorted(set(re.findall(r'(?:href|src)="(/ui/static/[^"]+)"', html.decode())))


def _transfer(client: Any, html: bytes) -> int:
    """Bytes a first visit transfers: the page and every file it loads, gzip'd as a proxy would."""
    return len(gzip.compress(html)) + sum(len(gzip.compress(client.get(a).data)) for a in _assets(html))


def screenshots(app: Any, paths: dict[str, str], target: Path) -> list[str]:
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    target.mkdir(parents=True, exist_ok=True)
    taken = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=shutil.which("chromium"), args=["--no-sandbox"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(base + "/ui/sign-in")
            page.screenshot(path=str(target / "sign-in.png"))
            page.fill("#api_key", API_TOKEN)
            page.click("button[type=submit]")
            for name, path in paths.items():
                page.goto(base + path)
                page.screenshot(path=str(target / f"{name}.png"))
                taken.append(name)
            browser.close()
    finally:
        server.shutdown()
    return taken


def render(report: dict[str, Any]) -> str:
    meta, pages_ = report["meta"], report["pages"]
    lines = [
        report_title("Dashboard pages", meta),
        "",
        f"Command: `{meta['command']}`. Store: {report['store']['total']:,} memories "
        f"({report['store']['locomo_turns']:,} LoCoMo turns{', enriched' if meta['enriched'] else ''}, "
        "the rest the load benchmark's synthetic corpus). Server time through the app in-process (no "
        "network), over the rounds given; transfer = the page's HTML plus every file it loads "
        "(stylesheet, icon; the operations page's live-feed script), gzip'd.",
        "",
        "| page | path | p50 ms | p95 ms | HTML bytes | transfer KB (gzip) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in pages_.items():
        cells = [f"`{r['path']}`", r["p50_ms"], r["p95_ms"], f"{r['html_bytes']:,}", r["transfer_kb_gzip"]]
        lines.append(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "| target | goal | measured |", "|---|---|---|"]
    heaviest = max(r["transfer_kb_gzip"] for r in pages_.values())
    measured = [pages_["tags-drilled"]["p50_ms"], pages_["tags"]["p50_ms"], heaviest]
    lines += [f"| {k} | {v} | {m} |" for (k, v), m in zip(TARGETS.items(), measured, strict=True)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in the store (LoCoMo first)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-enrich", action="store_true", help="skip enriching the LoCoMo turns")
    parser.add_argument("--screenshots", help="directory for a 1280 px screenshot of every page")
    parser.add_argument("--out", default=str(ROOT / "benchmarks"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="automem-ui-bench-"))
    server = EmbeddedFalkorDB(work / "falkordb", appendfsync="no")
    server.start()
    settings = make_settings(server.url, work / "data", rate_limit_per_minute=0)
    app = create_app(settings, start_vector_drain=False)
    try:
        api, services = app.test_client(), app.extensions["automem"]
        store = fill(api, args.size, not args.no_enrich, services)
        paths = pages(api)
        results = measure(app, paths, args.rounds)
        shots = screenshots(app, paths, Path(args.screenshots)) if args.screenshots else []
    finally:
        stop_app(app)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python scripts/bench/dashboard.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "git_commit": git_commit(),
        "machine": machine_info(),
        "enriched": not args.no_enrich,
    }
    report = {"meta": meta, "store": store, "pages": results, "screenshots": shots}
    out = Path(args.out)
    (out / "dashboard.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "dashboard.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
