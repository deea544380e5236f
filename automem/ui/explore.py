"""The dashboard's graph and entity pages: a memory's neighbourhood or a sampled snapshot drawn
as SVG, the entity list, an entity's memories, and merging (tenant-admin or admin)."""

from __future__ import annotations

from typing import Any

from flask import Response, redirect, request

from automem import entities, graphview
from automem.auth import current_tenant
from automem.models import parse, parse_uuid
from automem.tenants import Scope
from automem.ui import bp, page, require, services, who
from automem.ui.graphsvg import HEIGHT, WIDTH, layout


@bp.get("/graph")
def graph() -> str:
    svc = services()
    memory_id = request.args.get("memory", "").strip()
    if memory_id:
        memory_id = parse_uuid(memory_id, "memory")
        depth = request.args.get("depth", "1")
        query = parse(graphview.NeighborsQuery, {"depth": depth, "include_semantic": "false"}, svc.settings)
        found = graphview.neighbors(svc.graph, svc.similar, svc.settings, current_tenant(), memory_id, query)
        nodes = [found["center"], *found["graph_neighbors"]]
        title = "Neighbourhood"
    else:
        args = {"limit": request.args.get("limit", "150")}
        query_s = parse(graphview.SnapshotQuery, args, svc.settings)
        found = graphview.snapshot(svc.graph, svc.settings, current_tenant(), query_s)
        nodes, memory_id, title = found["nodes"], "", "Graph"
    placed, lines = layout(nodes, found["edges"], memory_id or None)
    return page(
        "graph.html",
        title=title,
        nodes=placed,
        edges=lines,
        width=WIDTH,
        height=HEIGHT,
        memory_id=memory_id,
        depth=request.args.get("depth", "1"),
        legend=_legend(nodes, found["edges"]),
        stats=found.get("stats"),
    )


def _legend(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {
        "types": {str(n.get("type")): str(n.get("color")) for n in nodes},
        "relations": {str(e.get("type")): str(e.get("color")) for e in edges},
    }


@bp.get("/entities")
def entity_list() -> str:
    svc = services()
    query = parse(
        entities.EntitiesQuery, {"limit": 200, "category": request.args.get("kind") or None}, svc.settings
    )
    found = entities.list_entities(svc.graph, current_tenant(), query)
    return page(
        "entities.html", title="Entities", entities=found["entities"], kind=request.args.get("kind", "")
    )


@bp.get("/entity/<slug>")
def entity(slug: str) -> str:
    svc = services()
    query = parse(
        entities.EntityQuery,
        {"memory_limit": 100, "category": request.args.get("kind") or None},
        svc.settings,
    )
    found = entities.get_entity(svc.graph, current_tenant(), slug, query)
    return page("entity.html", title=f"Entity: {found['entity']['name']}", found=found)


@bp.post("/entity/<slug>/merge")
def merge(slug: str) -> Response:
    require(Scope.TENANT_ADMIN)
    svc = services()
    body = parse(
        entities.EntityMergeBody, {"merge_into": request.form.get("merge_into", "").strip()}, svc.settings
    )
    result = entities.merge(svc, current_tenant(), slug, body, who())
    survivor = result["entity"]["slug"]
    return redirect(f"/ui/entity/{survivor}", code=303)  # type: ignore[return-value]
