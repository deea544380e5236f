"""`automem keys` and `automem tenants`: the admin's side of tenants and scoped keys, over HTTP
with ADMIN_API_TOKEN (the running service does the work; see docs/security.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import httpx

from automem.cli.common import VIA_API, Subparsers
from automem.errors import ConfigurationError
from automem.settings import load_settings


def add_keys(sub: Subparsers) -> None:
    keys = sub.add_parser(
        "keys",
        help="mint, list and revoke API keys of tenants (POST|GET /admin/keys, DELETE /admin/keys/ID)",
        description="The secret of a new key is printed once and stored only as a hash. " + VIA_API,
    )
    keys.add_argument("--url", help="the service's base URL (default http://127.0.0.1:$PORT)")
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="mint a key (prints its secret once)")
    create.add_argument("--tenant", default="default", help="the key's tenant (default: default)")
    create.add_argument("--scope", required=True, choices=("read", "write", "tenant-admin"))
    create.add_argument("--name", help="a label for people")
    create.add_argument("--expires", dest="expires_at", help="ISO 8601 time after which the key is refused")
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant", help="only this tenant's keys")
    revoke = actions.add_parser("revoke", help="revoke a key (refused everywhere within a second)")
    revoke.add_argument("id", help="the key's id (from `automem keys list`)")
    keys.set_defaults(func=keys_command)


def keys_command(args: argparse.Namespace) -> int:
    if args.action == "create":
        body = {k: getattr(args, k) for k in ("tenant", "scope", "name", "expires_at") if getattr(args, k)}
        _print(_call(args, "POST", "/admin/keys", json=body))
    elif args.action == "list":
        _print(_call(args, "GET", "/admin/keys", params={"tenant": args.tenant} if args.tenant else None))
    else:
        _print(_call(args, "DELETE", f"/admin/keys/{args.id}"))
    return 0


def add_tenants(sub: Subparsers) -> None:
    tenants = sub.add_parser(
        "tenants",
        help="create, list, show, limit and delete tenants (/admin/tenants)",
        description="Deleting a tenant erases every memory, edge, history event, vector, entity and key "
        "of it and prints a receipt. " + VIA_API,
    )
    tenants.add_argument("--url", help="the service's base URL (default http://127.0.0.1:$PORT)")
    actions = tenants.add_subparsers(dest="action", required=True)
    for name, text in (("create", "create a tenant"), ("limit", "set a tenant's limits (0 removes one)")):
        action = actions.add_parser(name, help=text)
        action.add_argument("name")
        action.add_argument("--max-memories", type=int)
        action.add_argument("--max-content-bytes", type=int)
        action.add_argument("--writes-per-minute", type=int)
    actions.add_parser("list", help="tenants with their limits and usage")
    actions.add_parser("show", help="one tenant's limits and usage").add_argument("name")
    delete = actions.add_parser("delete", help="erase a tenant and everything of it")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    tenants.set_defaults(func=tenants_command)


_LIMITS = ("max_memories", "max_content_bytes", "writes_per_minute")


def tenants_command(args: argparse.Namespace) -> int:
    if args.action == "create":
        limits = {k: getattr(args, k) for k in _LIMITS if getattr(args, k)}
        _print(_call(args, "POST", "/admin/tenants", json={"name": args.name, **limits}))
    elif args.action == "limit":
        changes = {k: getattr(args, k) or None for k in _LIMITS if getattr(args, k) is not None}
        _print(_call(args, "PATCH", f"/admin/tenants/{args.name}", json=changes))
    elif args.action == "list":
        _print(_call(args, "GET", "/admin/tenants"))
    elif args.action == "show":
        _print(_call(args, "GET", f"/admin/tenants/{args.name}"))
    else:
        if not args.yes and input(f"erase tenant {args.name} and all of its memories? [y/N] ").lower() != "y":
            return 1
        _print(_call(args, "DELETE", f"/admin/tenants/{args.name}"))
    return 0


def _call(args: argparse.Namespace, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    from automem.backup import service_url

    settings = load_settings()
    if not settings.admin_token:
        raise ConfigurationError("ADMIN_API_TOKEN is not set: keys and tenants are managed with it")
    url = (args.url or service_url(settings)).rstrip("/")
    headers = {"X-Admin-Token": settings.admin_token}
    try:
        response = httpx.request(method, url + path, headers=headers, timeout=300, **kwargs)
    except httpx.TransportError as exc:
        raise ConfigurationError(f"cannot reach the service at {url} ({exc.__class__.__name__})") from exc
    body: dict[str, Any] = response.json()
    if response.status_code >= 400:
        raise ConfigurationError(f"the service answered {response.status_code}: {body.get('message')}")
    return body


def _print(body: dict[str, Any]) -> None:
    print(json.dumps(body, indent=2, ensure_ascii=False))
