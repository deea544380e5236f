"""Tenants and keys (the global admin token alone): POST|GET /admin/keys, DELETE
/admin/keys/<id>, POST|GET /admin/tenants, GET|PATCH|DELETE /admin/tenants/<name>."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem import tenant_admin
from automem.api import json_body, respond, services
from automem.auth import require_admin
from automem.models import KeyCreate, TenantCreate, TenantUpdate, parse
from automem.tenants import KeyRing, Scope, check_tenant_name

bp = Blueprint("tenants", __name__)


def _keys() -> KeyRing:
    keys = services().keys
    if keys is None:
        raise RuntimeError("keys are not wired into this process")
    return keys


@bp.post("/admin/keys")
@require_admin
def create_key() -> tuple[Response, int]:
    body = parse(KeyCreate, json_body(), services().settings)
    tenant = check_tenant_name(body.tenant)
    minted = _keys().mint(tenant, Scope(body.scope), body.name, body.expires_at)
    return respond({"status": "success", **minted}, 201)


@bp.get("/admin/keys")
@require_admin
def list_keys() -> tuple[Response, int]:
    tenant = request.args.get("tenant")
    if tenant is not None:
        check_tenant_name(tenant)
    keys = _keys().listing(tenant)
    return respond({"status": "success", "count": len(keys), "keys": keys})


@bp.delete("/admin/keys/<key_id>")
@require_admin
def revoke_key(key_id: str) -> tuple[Response, int]:
    return respond({"status": "success", "revoked": True, "key": _keys().revoke(key_id)})


@bp.post("/admin/tenants")
@require_admin
def create_tenant() -> tuple[Response, int]:
    body = parse(TenantCreate, json_body(), services().settings)
    limits = body.model_dump(exclude={"name"})
    return respond({"status": "success", "tenant": tenant_admin.create(services(), body.name, limits)}, 201)


@bp.get("/admin/tenants")
@require_admin
def list_tenants() -> tuple[Response, int]:
    tenants = tenant_admin.listing(services())
    return respond({"status": "success", "count": len(tenants), "tenants": tenants})


@bp.get("/admin/tenants/<name>")
@require_admin
def get_tenant(name: str) -> tuple[Response, int]:
    check_tenant_name(name, "name")
    return respond({"status": "success", "tenant": tenant_admin.describe(services(), name)})


@bp.patch("/admin/tenants/<name>")
@require_admin
def update_tenant(name: str) -> tuple[Response, int]:
    check_tenant_name(name, "name")
    body = parse(TenantUpdate, json_body(), services().settings)
    changes = {k: getattr(body, k) for k in body.model_fields_set}
    return respond({"status": "success", "tenant": tenant_admin.update(services(), name, changes)})


@bp.delete("/admin/tenants/<name>")
@require_admin
def delete_tenant(name: str) -> tuple[Response, int]:
    check_tenant_name(name, "name")
    return respond(tenant_admin.erase(services(), name))
