"""Browsing by tag: GET /memory/by-tag and the tag tree GET /tags."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem.api import change, respond, services, serving_read
from automem.auth import current_tenant, require_tenant_admin
from automem.models import ByTagQuery, TagsQuery, parse

bp = Blueprint("tags", __name__)


def _by_tag_query() -> ByTagQuery:
    args = request.args
    data: dict[str, object] = {"tags": args.getlist("tags") or args.getlist("tag")}
    for name in ("limit", "offset", "tag_mode", "tag_match"):
        if name in args:
            data[name] = args[name]
    # Repeated `tags=` values are list items; a single value may also be a comma list.
    tags = data["tags"]
    if isinstance(tags, list) and len(tags) == 1:
        data["tags"] = tags[0]
    return parse(ByTagQuery, data, services().settings)


@bp.get("/memory/by-tag")
def by_tag() -> tuple[Response, int]:
    serving_read()
    return respond(services().memories.by_tag(_by_tag_query(), current_tenant()))


@bp.delete("/memory/by-tag")
def delete_by_tag() -> tuple[Response, int]:
    """Soft-delete every memory under the tags (AutoMem's bulk delete, with the API key);
    `?preview=true` only counts; `?hard=true` purges at once and needs a tenant-admin key or
    the admin token."""
    if _flag("hard"):
        return _purge_by_tag()
    who = change(reason_arg="reason")
    memories = services().memories
    preview = _flag("preview")
    return respond(
        memories.delete_by_tag(_by_tag_query(), preview=preview, tenant=current_tenant(), change=who)
    )


@require_tenant_admin
def _purge_by_tag() -> tuple[Response, int]:
    who = change(admin=True, reason_arg="reason")
    memories = services().memories
    return respond(memories.delete_by_tag(_by_tag_query(), hard=True, tenant=current_tenant(), change=who))


def _flag(name: str) -> bool:
    return request.args.get(name, "").lower() in ("1", "true", "yes")


@bp.get("/tags")
def tag_tree() -> tuple[Response, int]:
    svc = services()
    query = parse(TagsQuery, dict(request.args), svc.settings)
    return respond(svc.memories.tag_tree(query.prefix, current_tenant()))
