"""The dashboard (/ui/) in a real headless browser: Debian's chromium driven by Playwright
(`executable_path`, no browser download), against the app served over HTTP on the real embedded
stack.

Every test records the URLs the browser asked for (the key must be in none of them), every
dialog and every console error (hostile content must run nothing). With UI_SCREENSHOTS=dir the
pages are photographed at 1280 px.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Page, sync_playwright

from enrichment import enrich as enrichment_jobs
from tests.conftest import ADMIN_TOKEN, API_TOKEN, Api

pytestmark = pytest.mark.browser

SHOTS = os.environ.get("UI_SCREENSHOTS")
HOSTILE = [
    "<script>window.__pwned = 'script'</script> a memory that tries a script tag",
    "<img src=x onerror=\"window.__pwned='img'\"> a memory with an image that errors",
    "javascript:window.__pwned='link' — a memory that is a javascript: link",
    '"><svg onload="window.__pwned=\'svg\'"> a memory that breaks out of an attribute',
]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it)")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Module-scoped: Playwright's sync API runs an event loop in this thread until it stops,
    which later tests calling asyncio.run() (the MCP server, the async SDK) cannot share."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=_chromium(), headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


class Watched:
    """A page with what it did recorded: URLs asked for, dialogs, console errors."""

    def __init__(self, page: Page, base: str) -> None:
        self.page, self.base = page, base
        self.urls: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.urls.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)

    def go(self, path: str) -> Any:
        return self.page.goto(self.base + path)

    def sign_in(self, key: str = API_TOKEN, navigate: bool = True, admin: str = "") -> None:
        if navigate:
            self.go("/ui/sign-in")
        self.page.fill("#api_key", key)
        if admin:
            self.page.fill("#admin_token", admin)
        self.page.click("button[type=submit]")

    def shot(self, name: str) -> None:
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)

    def assert_nothing_ran(self, key: str = API_TOKEN) -> None:
        assert self.dialogs == []
        assert self.page.evaluate("() => window.__pwned === undefined")
        assert not [u for u in self.urls if key in u], "the key appeared in a URL"


@pytest.fixture
def ui(browser: Browser, live_url: str) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watched = Watched(context.new_page(), live_url)
    yield watched
    context.close()


def _store(api: Api, content: str, **fields: Any) -> str:
    response = api.post("/memory", json={"content": content, **fields})
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


def test_sign_in_refuses_a_wrong_key_and_keeps_the_key_out_of_urls(ui: Watched) -> None:
    response = ui.go("/ui/tags")
    assert ui.page.url.startswith(ui.base + "/ui/sign-in")
    assert response is not None
    ui.sign_in("not-the-key", navigate=False)
    assert ui.page.locator("[role=alert]").inner_text().startswith("that key")
    ui.shot("sign-in")
    ui.page.fill("#api_key", API_TOKEN)
    ui.page.click("button[type=submit]")
    assert ui.page.url == ui.base + "/ui/tags"
    assert "tenant default" in ui.page.locator("header").inner_text()
    ui.page.click("text=Sign out")
    ui.go("/ui/tags")
    assert ui.page.url.startswith(ui.base + "/ui/sign-in")
    ui.assert_nothing_ran()


def test_tags_drill_down_to_a_memory_and_edit_it(ui: Watched, api: Api) -> None:
    memory_id = _store(
        api, "Standup moved to 10:00 for the whole team", tags=["slack:channel:general"], importance=0.7
    )
    _store(api, "Deploys need two approvals", tags=["slack:channel:ops", "project-x"])
    ui.sign_in()
    ui.go("/ui/tags")
    ui.shot("tags")
    ui.page.click("a.tag >> text=slack")
    ui.page.click("a.tag >> text=slack:channel")
    ui.page.click("a.tag >> text=slack:channel:general")
    ui.shot("tags-drilled")
    ui.page.click("text=Standup moved to 10:00")
    assert ui.page.url == f"{ui.base}/ui/memory/{memory_id}"
    ui.shot("memory")
    ui.page.fill("#content", "Standup moved to 10:30 for the whole team")
    ui.page.click("text=Save")
    assert "10:30" in ui.page.locator(".content").inner_text()
    history = ui.page.locator(".history").inner_text()
    assert "modified" in history and "created" in history
    assert (
        api.get(f"/memory/{memory_id}").get_json()["memory"]["content"].endswith("10:30 for the whole team")
    )
    ui.assert_nothing_ran()


def test_an_edit_after_another_clients_change_is_shown_as_a_conflict(ui: Watched, api: Api) -> None:
    memory_id = _store(api, "The office closes at 18:00")
    ui.sign_in()
    ui.go(f"/ui/memory/{memory_id}")
    assert (
        api.patch(f"/memory/{memory_id}", json={"content": "The office closes at 19:00"}).status_code == 200
    )
    ui.page.fill("#content", "The office closes at 17:00")
    ui.page.click("text=Save")
    assert "changed since you opened it" in ui.page.locator("[role=alert]").inner_text()
    assert "19:00" in ui.page.locator(".content").inner_text()
    assert api.get(f"/memory/{memory_id}").get_json()["memory"]["content"] == "The office closes at 19:00"
    ui.assert_nothing_ran()


def test_delete_and_recover(ui: Watched, api: Api) -> None:
    memory_id = _store(api, "A memory to delete and bring back")
    ui.sign_in()
    ui.go(f"/ui/memory/{memory_id}")
    ui.page.click("button.danger")
    assert "deleted" in ui.page.locator(".notice").inner_text()
    assert api.get(f"/memory/{memory_id}").status_code == 404
    ui.page.click("text=Recover")
    assert ui.page.locator(".content").inner_text() == "A memory to delete and bring back"
    assert api.get(f"/memory/{memory_id}").status_code == 200
    ui.assert_nothing_ran()


def test_search_shows_how_each_memory_was_found(ui: Watched, api: Api, jobs: Any) -> None:
    _store(api, "We chose PostgreSQL for its transactions", tags=["project-db"])
    _store(api, "Lunch is at noon")
    jobs()
    ui.sign_in()
    ui.go("/ui/search")
    ui.page.fill("#q", "PostgreSQL transactions")
    ui.page.click("button:has-text('Search')")
    results = ui.page.locator("ol.results").inner_text()
    assert "We chose PostgreSQL" in results and "found by" in results
    ui.shot("search")
    ui.assert_nothing_ran()


def test_hostile_content_runs_nothing_anywhere(ui: Watched, api: Api) -> None:
    ids = [
        _store(api, text, tags=["xss:<b>bold</b>"], metadata={"<script>": "<img src=x onerror=alert(1)>"})
        for text in HOSTILE
    ]
    ui.sign_in()
    for path in [
        "/ui/",
        "/ui/tags?prefix=xss",
        "/ui/memories",
        "/ui/search?q=memory",
        *[f"/ui/memory/{i}" for i in ids],
    ]:
        ui.go(path)
        assert ui.page.locator("main").inner_text()  # the page rendered
    ui.go(f"/ui/memory/{ids[0]}")
    assert ui.page.locator(".content").inner_text().startswith("<script>window.__pwned")  # shown as text
    ui.go(f"/ui/memory/{ids[1]}")
    assert "<img src=x onerror" in ui.page.locator(".content").inner_text()
    assert "<script>" in ui.page.locator(".metadata").inner_text()
    ui.assert_nothing_ran()
    assert ui.errors == []


def test_the_operations_page_and_the_viewer_redirect(ui: Watched) -> None:
    ui.sign_in()
    ui.go("/viewer/")
    assert ui.page.url == ui.base + "/ui/"
    ui.shot("overview")
    ui.go("/ui/ops")
    assert "Background work" in ui.page.locator("main").inner_text()
    ui.shot("ops")
    ui.go("/ui/memories")
    ui.shot("memories")
    ui.assert_nothing_ran()


def test_the_page_is_usable_at_390_px(browser: Browser, live_url: str, api: Api) -> None:
    _store(api, "A memory to read on a phone", tags=["mobile"])
    context = browser.new_context(viewport={"width": 390, "height": 800})
    watched = Watched(context.new_page(), live_url)
    try:
        watched.sign_in()
        watched.go("/ui/tags?prefix=mobile")
        width = watched.page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways ({width} px)"
        watched.page.keyboard.press("Tab")
        focused = watched.page.evaluate("() => document.activeElement.textContent")
        assert focused == "Skip to content"
    finally:
        context.close()


def test_the_graph_view_draws_a_neighbourhood_and_a_click_opens_a_memory(
    ui: Watched, api: Api, jobs: Any
) -> None:
    first = _store(api, "Alice Johnson leads the payments team", type="Context")
    second = _store(api, "Alice Johnson prefers Kotlin for services", type="Preference")
    link = {"memory1_id": first, "memory2_id": second, "type": "RELATES_TO"}
    assert api.post("/associate", json=link).status_code == 201
    jobs()
    ui.sign_in()
    ui.go(f"/ui/graph?memory={first}")
    assert ui.page.locator("svg circle").count() >= 2
    assert ui.page.locator("svg line").count() >= 1
    ui.shot("graph")
    ui.page.locator(f"a.node[href='/ui/memory/{second}']").click()
    assert ui.page.url == f"{ui.base}/ui/memory/{second}"
    ui.go("/ui/graph")
    assert ui.page.locator("svg circle").count() >= 2
    ui.go("/ui/entities")
    ui.shot("entities")
    ui.page.locator("table.list a", has_text="Alice Johnson").first.click()
    assert "payments team" in ui.page.locator("main").inner_text()
    ui.shot("entity")
    ui.assert_nothing_ran()


def test_the_live_feed_shows_new_memories_and_runs_none_of_their_text(ui: Watched, api: Api) -> None:
    ui.sign_in()
    ui.go("/ui/ops")
    status = ui.page.locator("#feed-status")
    status.filter(has_text="connected").wait_for(timeout=10_000)
    first = _store(api, HOSTILE[0], tags=["<img src=x onerror=\"window.__pwned='tag'\">"])
    second = _store(api, "A memory the feed announces", importance=0.9)
    feed = ui.page.locator("#feed")
    feed.locator(f"a[href='/ui/memory/{second}']").wait_for(timeout=10_000)
    assert feed.locator(f"a[href='/ui/memory/{first}']").count() == 1
    assert "memory.stored" in feed.inner_text()
    ui.shot("ops-live")
    feed.locator(f"a[href='/ui/memory/{second}']").click()
    assert ui.page.url == f"{ui.base}/ui/memory/{second}"
    ui.assert_nothing_ran()
    assert ui.errors == []


def test_the_memory_list_filters_by_importance_and_pages(ui: Watched, api: Api) -> None:
    memories = [
        {
            "content": f"Paged memory number {n}",
            "importance": 0.9 if n % 4 == 0 else 0.3,
            "timestamp": f"2025-03-01T00:{n:02d}:00Z",
        }
        for n in range(60)
    ]
    assert api.post("/memory/batch", json={"memories": memories}).status_code == 201
    ui.sign_in()
    ui.go("/ui/memories")
    first_page = ui.page.locator("li.memory").all_inner_texts()
    assert len(first_page) == 50 and "Paged memory number 59" in first_page[0]
    # all_inner_texts() and count() do not wait: each reads the page the click loaded, once loaded.
    with ui.page.expect_navigation():
        ui.page.click("a[rel=next]")
    assert "offset=50" in ui.page.url
    second_page = ui.page.locator("li.memory").all_inner_texts()
    assert len(second_page) == 10 and "Paged memory number 9" in second_page[0]
    assert ui.page.locator("a[rel=next]").count() == 0
    with ui.page.expect_navigation():
        ui.page.click("a[rel=prev]")
    assert ui.page.locator("li.memory").all_inner_texts() == first_page
    ui.page.fill("#importance", "0.8")
    with ui.page.expect_navigation():
        ui.page.click("button:has-text('Filter')")
    important = ui.page.locator("li.memory").all_inner_texts()
    assert len(important) == 15 and all("importance 0.90" in text for text in important)
    ui.assert_nothing_ran()


def test_failed_jobs_are_requeued_and_chosen_memories_re_enriched(
    ui: Watched, api: Api, jobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = _store(api, "Eve maintains the Terraform modules")

    def broken(*_: Any, **__: Any) -> Any:
        raise redis.exceptions.ConnectionError("extractor exploded")  # fails the whole job

    monkeypatch.setattr(enrichment_jobs, "derive", broken)
    jobs()
    monkeypatch.undo()
    admin = {"X-Admin-Token": ADMIN_TOKEN}

    def failed_jobs() -> int:
        queues = api.get("/admin/jobs", headers=admin).get_json()["queues"]
        return sum(q["failed"] for q in queues.values())

    assert failed_jobs() == 1
    ui.sign_in(admin=ADMIN_TOKEN)
    ui.go("/ui/ops")
    assert "extractor exploded" in ui.page.locator("main").inner_text()
    ui.page.click("button:has-text('Requeue failed jobs')")
    assert ui.page.locator("[role=status]").first.inner_text() == "Requeued 1 failed jobs."
    assert failed_jobs() == 0
    jobs()
    assert api.get(f"/memory/{chosen}").get_json()["memory"]["enriched"] is True
    ui.go("/ui/memories")
    ui.page.check(f"input[name=ids][value='{chosen}']")
    ui.page.click("button:has-text('Re-enrich the chosen memories')")
    assert ui.page.url.startswith(ui.base + "/ui/memories")
    assert ui.page.locator("[role=status]").first.inner_text() == "Queued 1 memories for enrichment."
    assert api.get("/enrichment/status").get_json()["queue_size"] >= 1
    ui.assert_nothing_ran()
