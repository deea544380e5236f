"""Browsing by tag: GET /memory/by-tag and the tag tree GET /tags."""

from __future__ import annotations

from flask import Blueprint, Response, request

from automem.api import respond, services
from automem.models import ByTagQuery, TagsQuery, parse

bp = Blueprint("tags", __name__)


@bp.get("/memory/by-tag")
def by_tag() -> tuple[Response, int]:
    svc = services()
    args = request.args
    data: dict[str, object] = {"tags": args.getlist("tags") or args.getlist("tag")}
    for name in ("limit", "offset", "tag_mode", "tag_match"):
        if name in args:
            data[name] = args[name]
    # Repeated `tags=` values are list items; a single value may also be a comma list.
    tags = data["tags"]
    if isinstance(tags, list) and len(tags) == 1:
        data["tags"] = tags[0]
    query = parse(ByTagQuery, data, svc.settings)
    return respond(svc.memories.by_tag(query))


@bp.get("/tags")
def tag_tree() -> tuple[Response, int]:
    svc = services()
    query = parse(TagsQuery, dict(request.args), svc.settings)
    return respond(svc.memories.tag_tree(query.prefix))
