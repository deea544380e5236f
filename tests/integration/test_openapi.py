"""The OpenAPI document: valid 3.1, generated from the routes and the pydantic models, and
identical to the routes (a route without a description or a description without a route fails)."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from openapi_spec_validator import validate

from automem.openapi import OPERATIONS, build_spec, openapi_path, routes
from tests.conftest import Api


def test_every_route_is_described_and_every_description_is_a_route(app: Flask) -> None:
    served = routes(app)
    assert served - set(OPERATIONS) == set(), "routes missing from automem/openapi.py OPERATIONS"
    assert set(OPERATIONS) - served == set(), "OPERATIONS names routes the app does not serve"


def test_the_document_lists_exactly_the_served_methods(app: Flask) -> None:
    spec = build_spec(app)
    listed = {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops}
    expected = {(m, openapi_path(r)) for m, r in routes(app)}
    assert listed == expected


def test_the_document_is_valid_openapi_3_1(app: Flask) -> None:
    spec = build_spec(app)
    assert spec["openapi"] == "3.1.0"
    validate(spec)


def test_request_bodies_come_from_the_route_models(app: Flask) -> None:
    spec = build_spec(app)
    schemas = spec["components"]["schemas"]
    create = spec["paths"]["/memory"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create == {"$ref": "#/components/schemas/MemoryCreate"}
    assert "content" in schemas["MemoryCreate"]["required"]
    recall_params = {p["name"] for p in spec["paths"]["/recall"]["get"]["parameters"]}
    assert {"query", "limit", "tags", "time_query", "state_mode", "expand_entities"} <= recall_params
    by_tag = {p["name"] for p in spec["paths"]["/memory/by-tag"]["get"]["parameters"]}
    assert {"tags", "tag_mode", "tag_match", "limit", "offset"} <= by_tag
    path_params = spec["paths"]["/memory/{memory_id}"]["patch"]["parameters"]
    assert path_params[0] == {
        "name": "memory_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "format": "uuid"},
    }


def test_security_admin_and_media_types(app: Flask) -> None:
    spec = build_spec(app)
    assert spec["paths"]["/health"]["get"]["security"] == []
    reembed = spec["paths"]["/admin/reembed"]["post"]
    assert {"apiKey": [], "adminToken": []} in reembed["security"]
    assert "403" in reembed["responses"]
    assert set(spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == {"text/plain"}
    assert set(spec["paths"]["/backup"]["get"]["responses"]["200"]["content"]) == {"application/gzip"}
    assert set(spec["paths"]["/stream"]["get"]["responses"]["200"]["content"]) == {"text/event-stream"}
    viewer = spec["paths"]["/viewer/{subpath}"]["get"]
    assert viewer["security"] == [] and not [code for code in viewer["responses"] if code.startswith("2")]
    assert viewer["parameters"][0]["schema"] == {"type": "string"}  # a path, not a memory id
    assert set(spec["paths"]["/admin/restore"]["post"]["requestBody"]["content"]) == {"application/gzip"}


def _served(api: Api) -> dict[str, Any]:
    response = api.get("/openapi.json")
    assert response.status_code == 200
    return dict(response.get_json())


def test_openapi_route_serves_the_document(api: Api, client: FlaskClient) -> None:
    assert client.get("/openapi.json").status_code == 401
    body = _served(api)
    assert body["openapi"] == "3.1.0"
    assert "/recall" in body["paths"]
