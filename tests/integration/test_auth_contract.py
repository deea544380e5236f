"""Auth over every route the app serves (taken from the URL map, described in automem/openapi.py):
no key or a wrong key → 401 except on public routes; admin routes → 401 with a user key (AutoMem's status)."""

from __future__ import annotations

import re
import uuid

from flask import Flask
from flask.testing import FlaskClient

from automem.openapi import OPERATIONS, routes
from tests.conftest import API_TOKEN


def _path(rule: str) -> str:
    """A concrete URL for a Flask rule: every `<converter:name>` gets a value its converter
    accepts, so routes other branches add (`<int:n>`, `<job_id>`) are reached too."""
    samples = {"int": "1", "float": "1.5", "path": "a/b"}
    return re.sub(
        r"<(?:(\w+)(?:\([^)]*\))?:)?\w+>", lambda m: samples.get(m.group(1) or "", str(uuid.uuid4())), rule
    )


def _call(client: FlaskClient, method: str, rule: str, headers: dict[str, str]) -> int:
    kwargs = {"json": {}} if method in ("POST", "PATCH", "PUT") else {}
    return int(client.open(_path(rule), method=method, headers=headers, **kwargs).status_code)


def test_every_non_public_route_rejects_a_missing_or_wrong_key(app: Flask, client: FlaskClient) -> None:
    checked = 0
    for method, rule in sorted(routes(app)):
        op = OPERATIONS[(method, rule)]
        missing = _call(client, method, rule, {})
        wrong = _call(client, method, rule, {"X-API-Key": "not-the-key"})
        if op.public:
            assert missing != 401 and wrong != 401, (method, rule)
            continue
        assert (missing, wrong) == (401, 401), (method, rule)
        checked += 1
    assert checked >= 25


def test_admin_routes_reject_a_user_key(app: Flask, client: FlaskClient) -> None:
    user = {"X-API-Key": API_TOKEN}
    admin_routes = [(m, r) for (m, r), op in OPERATIONS.items() if op.admin]
    assert len(admin_routes) >= 5
    for method, rule in admin_routes:
        response = client.open(
            _path(rule), method=method, headers=user, json={} if method == "POST" else None
        )
        assert response.status_code == 401, (method, rule)
        assert response.get_json()["reason"] == "admin_required"
        wrong_admin = client.open(
            _path(rule),
            method=method,
            headers={**user, "X-Admin-Token": "nope"},
            json={} if method == "POST" else None,
        )
        assert wrong_admin.status_code == 401, (method, rule)


def test_concrete_paths_reach_their_routes(app: Flask) -> None:
    """Every rule's sample URL is routed to that rule (not a 404), whatever its converters."""
    adapter = app.url_map.bind("localhost")
    for method, rule in routes(app):
        matched, _ = adapter.match(_path(rule), method=method, return_rule=True)
        assert matched.rule == rule, (method, rule, matched.rule)
    assert _path("/x/<int:n>/<path:p>/<job_id>").startswith("/x/1/a/b/")
