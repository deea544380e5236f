"""Tenant isolation as a stateful property (hypothesis's rule-based state machine), on real stores.

Three tenants, each with a read, a write and a tenant-admin key. Random steps: stores, updates,
deletes, recoveries, associations (within and across tenants), recalls, by-tag listings, tag
trees, related lookups, history reads, graph views, exports and re-imports of them, and probes
of another tenant's
memories with every key of a tenant. After every step:

- no response to a key of tenant A contains an id, the content marker or a tag of B or C;
- every tenant's memories are exactly what the model says (a request of A never changed B or C):
  ids, content, tags and state, read back with the tenant's own key.

Bounded for CI: PROPERTY_EXAMPLES (default 8) runs of up to TENANT_STEPS (default 25) steps.
`make properties` runs a long pass; with TENANT_SUMMARY=path the counts are written there.
"""

from __future__ import annotations

import gzip
import json
import os
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from tests.conftest import Api
from tests.tenancy import create_tenant, mint

EXAMPLES = int(os.environ.get("PROPERTY_EXAMPLES", "8"))
STEPS = int(os.environ.get("TENANT_STEPS", "25"))
SUMMARY = os.environ.get("TENANT_SUMMARY")
TALLY: Counter[str] = Counter()
MILLIS: Counter[str] = Counter()
pytestmark = pytest.mark.properties

WORDS = ["billing", "deploy", "Postgres", "Alice", "Berlin", "retro", "vault", "Ünïcödé", "日本語"]
tenant_index = st.integers(min_value=0, max_value=2)
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
subtags = st.lists(
    st.sampled_from(["ops", "db", "people:alice", "slack:channel:general"]), min_size=1, max_size=2
)


class Tenant:
    def __init__(self, client: FlaskClient, name: str) -> None:
        create_tenant(client, name)
        self.name = name
        self.read, self.write, self.admin = (
            Api(client, mint(client, name, s)["key"]) for s in ("read", "write", "tenant-admin")
        )
        self.marker = f"<<{name}>>"
        self.tag_root = f"{name}-tag"
        self.memories: dict[str, dict[str, Any]] = {}  # id -> {content, tags, state}


class TenantIsolation(RuleBasedStateMachine):
    client: FlaskClient  # set by the test

    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        run = uuid.uuid4().hex[:6]
        self.tenants = [Tenant(self.client, f"iso{run}-{x}") for x in "abc"]

    # --- a call, checked for leaks ---------------------------------------------------------------
    def call(self, tenant: Tenant, api: Api, method: str, path: str, echoed: str = "", **kwargs: Any) -> Any:
        """`echoed`: what the caller itself sent and the answer repeats (a tag asked for)."""
        started = time.perf_counter()
        response = api._call(method, path, **kwargs)
        label = f"{method} {path.split('?')[0].split('/')[1]}"
        MILLIS[label] += (time.perf_counter() - started) * 1000
        raw = response.get_data()
        text = (gzip.decompress(raw) if path == "/backup" else raw).decode()
        if echoed:
            text = text.replace(echoed, "")
        for other in self.tenants:
            if other is tenant:
                continue
            leaked = [s for s in (other.marker, other.tag_root, *other.memories) if s in text]
            assert not leaked, f"{method} {path} by {tenant.name} shows {other.name}'s {leaked[:3]}"
        TALLY[label] += 1
        return response

    def owner(self, memory_id: str) -> Tenant:
        return next(t for t in self.tenants if memory_id in t.memories)

    # --- writes ----------------------------------------------------------------------------------
    @rule(target=memories, t=tenant_index, text=words, tags=subtags)
    def store(self, t: int, text: str, tags: list[str]) -> str:
        tenant = self.tenants[t]
        content = f"{tenant.marker} {text} {len(tenant.memories)}"
        full_tags = [f"{tenant.tag_root}:{tag}" for tag in tags]
        response = self.call(
            tenant, tenant.write, "POST", "/memory", json={"content": content, "tags": full_tags}
        )
        assert response.status_code == 201, response.get_json()
        memory_id = str(response.get_json()["memory_id"])
        tenant.memories[memory_id] = {"content": content, "tags": sorted(set(full_tags)), "state": "active"}
        return memory_id

    @rule(memory_id=memories, text=words)
    def update(self, memory_id: str, text: str) -> None:
        tenant = self.owner(memory_id)
        held = tenant.memories[memory_id]
        content = f"{tenant.marker} {text} updated"
        response = self.call(tenant, tenant.write, "PATCH", f"/memory/{memory_id}", json={"content": content})
        if held["state"] == "active":
            assert response.status_code == 200, response.get_json()
            held["content"] = content
        else:
            assert response.status_code == 404

    @rule(memory_id=memories)
    def delete(self, memory_id: str) -> None:
        tenant = self.owner(memory_id)
        held = tenant.memories[memory_id]
        response = self.call(tenant, tenant.write, "DELETE", f"/memory/{memory_id}")
        assert response.status_code == (200 if held["state"] == "active" else 404)
        held["state"] = "deleted"

    @rule(memory_id=memories)
    def recover(self, memory_id: str) -> None:
        tenant = self.owner(memory_id)
        held = tenant.memories[memory_id]
        response = self.call(tenant, tenant.write, "POST", f"/memory/{memory_id}/recover")
        assert response.status_code == (200 if held["state"] == "deleted" else 409)
        held["state"] = "active"

    @rule(a=memories, b=memories, by=tenant_index)
    def associate(self, a: str, b: str, by: int) -> None:
        tenant = self.tenants[by]
        body = {"memory1_id": a, "memory2_id": b, "type": "RELATES_TO"}
        response = self.call(tenant, tenant.write, "POST", "/associate", json=body)
        mine = a in tenant.memories and b in tenant.memories
        active = mine and all(tenant.memories[i]["state"] == "active" for i in (a, b))
        if a == b:
            assert response.status_code == 400
        elif active:
            assert response.status_code == 201, response.get_json()
        else:
            assert response.status_code == 404, response.get_json()

    # --- reads -----------------------------------------------------------------------------------
    @rule(memory_id=memories, by=tenant_index)
    def probe(self, memory_id: str, by: int) -> None:
        """Every key of a tenant at another tenant's memory: 404, and nothing changes."""
        tenant = self.tenants[by]
        if memory_id in tenant.memories:
            return
        for api in (tenant.read, tenant.write, tenant.admin):
            for method, path, body in (
                ("GET", f"/memory/{memory_id}", None),
                ("GET", f"/memory/{memory_id}/history", None),
                ("GET", f"/memories/{memory_id}/related", None),
                ("GET", f"/graph/neighbors/{memory_id}", None),
                ("PATCH", f"/memory/{memory_id}", {"content": "overwritten"}),
                ("POST", f"/memory/{memory_id}/recover", None),
                ("DELETE", f"/memory/{memory_id}", None),
                ("DELETE", f"/memory/{memory_id}?hard=true", None),
            ):
                # The 404 names the id asked for (as for an id that never existed): an echo.
                response = self.call(tenant, api, method, path, echoed=memory_id, json=body)
                assert response.status_code in (403, 404), (method, path, response.status_code)

    @rule(t=tenant_index, text=words)
    def recall(self, t: int, text: str) -> None:
        tenant = self.tenants[t]
        response = self.call(tenant, tenant.read, "GET", f"/recall?query={text}&limit=20")
        assert response.status_code == 200

    @rule(t=tenant_index, of=tenant_index, tag=st.sampled_from(["ops", "db", "people", "slack"]))
    def by_tag(self, t: int, of: int, tag: str) -> None:
        """Any tenant's tag names, asked by this one: only its own memories come back."""
        tenant = self.tenants[t]
        wanted = f"{self.tenants[of].tag_root}:{tag}"
        path = f"/memory/by-tag?tags={wanted}&tag_match=prefix"
        response = self.call(tenant, tenant.read, "GET", path, echoed=wanted)
        assert response.status_code == 200
        if of != t:
            assert response.get_json()["memories"] == []

    @rule(t=tenant_index)
    def views(self, t: int) -> None:
        tenant = self.tenants[t]
        for path in ("/tags", "/graph/snapshot", "/graph/stats", "/analyze", "/startup-recall", "/entities"):
            assert self.call(tenant, tenant.read, "GET", path).status_code == 200, path

    @rule(memory_id=memories)
    def own_lookups(self, memory_id: str) -> None:
        tenant = self.owner(memory_id)
        for path in (f"/memory/{memory_id}/history", f"/memories/{memory_id}/related"):
            assert self.call(tenant, tenant.read, "GET", path).status_code in (200, 404)

    @rule(t=tenant_index)
    def export(self, t: int) -> None:
        tenant = self.tenants[t]
        response = self.call(tenant, tenant.admin, "GET", "/backup")
        assert response.status_code == 200

    @rule(t=tenant_index, mode=st.sampled_from(["decay", "creative", "cluster", "forget", "full"]))
    def consolidation_preview(self, t: int, mode: str) -> None:
        tenant = self.tenants[t]
        body = {"mode": mode, "dry_run": True}
        assert self.call(tenant, tenant.write, "POST", "/consolidate", json=body).status_code == 200
        assert self.call(tenant, tenant.read, "GET", "/consolidate/status").status_code == 200

    @rule(t=tenant_index)
    def reimport(self, t: int) -> None:
        """The tenant's own export imported over it (mode=replace): nothing of it changes, and no
        other tenant either (the invariant checks both)."""
        tenant = self.tenants[t]
        archive = self.call(tenant, tenant.admin, "GET", "/backup").data
        headers = {"Content-Type": "application/gzip"}
        response = self.call(
            tenant, tenant.admin, "POST", "/admin/restore?mode=replace", data=archive, headers=headers
        )
        assert response.status_code == 200, response.get_json()

    # --- the model -------------------------------------------------------------------------------
    @invariant()
    def every_tenant_holds_what_the_model_says(self) -> None:
        for tenant in self.tenants:
            path = f"/memory/by-tag?tags={tenant.tag_root}&tag_match=prefix&limit=1000"
            listed = self.call(tenant, tenant.read, "GET", path).get_json()["memories"]
            active = {i: m for i, m in tenant.memories.items() if m["state"] == "active"}
            assert {m["id"] for m in listed} == set(active)
            for item in listed:
                held = active[item["id"]]
                assert item["content"] == held["content"]
                assert sorted(set(item["tags"])) == held["tags"]


def test_no_key_of_one_tenant_sees_or_changes_another(client: FlaskClient) -> None:
    TenantIsolation.client = client
    started = time.monotonic()
    run_state_machine_as_test(
        TenantIsolation,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            # No shrinking: a failing run is printed as it happened (shrinking re-runs whole
            # store histories for minutes).
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    print({k: f"{TALLY[k]} x {MILLIS[k] / TALLY[k]:.1f} ms" for k in sorted(TALLY)})
    if SUMMARY:
        report = {
            "examples": EXAMPLES,
            "steps_per_example": STEPS,
            "seconds": round(time.monotonic() - started, 1),
            "requests_checked": sum(TALLY.values()),
            "requests_by_route": dict(sorted(TALLY.items())),
        }
        Path(SUMMARY).write_text(json.dumps(report, indent=2) + "\n")
