"""Authentication on every route, the admin token, and the loopback rule."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from automem.app import check_bind_allowed
from automem.auth import is_public
from automem.errors import ConfigurationError
from tests.conftest import API_TOKEN, make_settings
from tests.integration.test_auth_contract import _path as concrete_path

ROUTES = [
    ("POST", "/memory"),
    ("POST", "/memory/batch"),
    ("GET", f"/memory/{uuid.uuid4()}"),
    ("PATCH", f"/memory/{uuid.uuid4()}"),
    ("DELETE", f"/memory/{uuid.uuid4()}"),
    ("GET", "/memory/by-tag?tags=a"),
    ("GET", "/tags"),
    ("GET", "/recall?query=x"),
]


def every_protected_route(app: Flask) -> list[tuple[str, str]]:
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or is_public(rule.rule):  # /health, /metrics, /viewer
            continue
        path = concrete_path(rule.rule)
        routes.extend((method, path) for method in sorted(rule.methods - {"HEAD", "OPTIONS"}))
    return routes


def test_every_route_rejects_missing_or_wrong_key(app: Flask, client: FlaskClient) -> None:
    routes = every_protected_route(app)
    assert len(routes) > 20
    for method, path in routes:
        for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
            response = client.open(path, method=method, headers=headers, json={})
            assert response.status_code == 401, (method, path, headers)
            body = response.get_json()
            assert body == {
                "status": "error",
                "code": 401,
                "message": body["message"],
                "error": body["message"],
                "reason": "unauthorized",
            }


@pytest.mark.parametrize("style", ["header", "bearer", "query"])
def test_token_styles_accepted(client: FlaskClient, style: str) -> None:
    headers, url = {}, "/tags"
    if style == "header":
        headers = {"X-API-Key": API_TOKEN}
    elif style == "bearer":
        headers = {"Authorization": f"bearer {API_TOKEN}"}
    else:
        url = f"/tags?api_key={API_TOKEN}"
    assert client.get(url, headers=headers).status_code == 200


def test_health_is_public(client: FlaskClient) -> None:
    assert client.get("/health").status_code == 200


def test_query_token_can_be_disabled(falkordb_server, redis_conn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from automem.app import create_app, stop_app

    app = create_app(
        make_settings(falkordb_server.url, tmp_path, allow_query_token=False), start_vector_drain=False
    )
    try:
        assert app.test_client().get(f"/tags?api_key={API_TOKEN}").status_code == 401
    finally:
        stop_app(app)


def test_admin_disabled_without_admin_token(falkordb_server, redis_conn, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from automem.app import create_app, stop_app

    app = create_app(make_settings(falkordb_server.url, tmp_path, admin_token=None), start_vector_drain=False)
    try:
        response = app.test_client().delete(
            f"/memory/{uuid.uuid4()}?hard=true", headers={"X-API-Key": API_TOKEN, "X-Admin-Token": "x"}
        )
        assert response.status_code == 403 and response.get_json()["reason"] == "admin_disabled"
    finally:
        stop_app(app)


def test_no_token_only_binds_loopback(tmp_path: Path) -> None:
    settings = make_settings("redis://127.0.0.1:1", tmp_path, api_token=None)
    check_bind_allowed(settings, "127.0.0.1")
    check_bind_allowed(settings, "localhost")
    with pytest.raises(ConfigurationError, match="AUTOMEM_API_TOKEN"):
        check_bind_allowed(settings, "0.0.0.0")
    check_bind_allowed(make_settings("redis://127.0.0.1:1", tmp_path), "0.0.0.0")
    for address in ("::", "10.0.0.7", "127.example.com"):
        with pytest.raises(ConfigurationError):
            check_bind_allowed(settings, address)
    for address in ("::1", "[::1]", "127.0.0.2", "::ffff:127.0.0.1"):
        check_bind_allowed(settings, address)


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--host", "0.0.0.0"], {}),
        ([], {"AUTOMEM_HOST": "::"}),
        (["--host", "0.0.0.0"], {"AUTOMEM_API_TOKEN": ""}),
    ],
)
def test_serve_refuses_a_public_address_without_a_token(
    tmp_path: Path, argv: list[str], env: dict[str, str]
) -> None:
    """Through the real CLI: exit code 2, the reason and the fix on stderr, nothing started."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AUTOMEM_", "FALKORDB_", "QDRANT_"))}
    data = tmp_path / "data"
    result = subprocess.run(
        [sys.executable, "-m", "automem", "serve", "--data-dir", str(data), *argv],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "refusing to bind" in result.stderr and "AUTOMEM_API_TOKEN" in result.stderr
    assert not data.exists()  # no FalkorDB was started
