"""A graph drawn on the server: positions from networkx's force-directed layout, the picture as
SVG shapes the template writes out (links around circles: click to open a memory). No script
reaches the browser, so the dashboard's CSP can keep forbidding every script."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

WIDTH, HEIGHT, MARGIN = 1000, 640, 40


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    color: str
    radius: float
    x: float
    y: float
    center: bool


@dataclass(frozen=True)
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    color: str
    type: str


def layout(
    nodes: Sequence[dict[str, Any]], edges: Sequence[dict[str, Any]], center: str | None = None
) -> tuple[list[Node], list[Edge]]:
    """Nodes {id, content, color, radius} and edges {source, target, color, type} placed in a
    WIDTH x HEIGHT box (the same picture for the same graph: the layout is seeded)."""
    graph = nx.Graph()
    graph.add_nodes_from(n["id"] for n in nodes)
    known = set(graph.nodes)
    drawn = [e for e in edges if e["source"] in known and e["target"] in known]
    graph.add_edges_from((e["source"], e["target"]) for e in drawn)
    fixed = {center: (0.0, 0.0)} if center in known else None
    positions = (
        nx.spring_layout(graph, seed=7, pos=fixed, fixed=list(fixed) if fixed else None) if known else {}
    )
    place = _scaler(positions)
    placed = {
        n["id"]: Node(
            id=n["id"],
            label=str(n.get("content") or "")[:120],
            color=str(n.get("color") or "#888888"),
            radius=round(6 + 6 * float(n.get("radius") or 1.0), 1),
            x=place(positions[n["id"]])[0],
            y=place(positions[n["id"]])[1],
            center=n["id"] == center,
        )
        for n in nodes
    }
    lines = [
        Edge(
            placed[e["source"]].x,
            placed[e["source"]].y,
            placed[e["target"]].x,
            placed[e["target"]].y,
            str(e.get("color") or "#999999"),
            str(e.get("type") or ""),
        )
        for e in drawn
    ]
    return list(placed.values()), lines


def _scaler(positions: dict[Any, Any]) -> Any:
    xs = [float(p[0]) for p in positions.values()] or [0.0]
    ys = [float(p[1]) for p in positions.values()] or [0.0]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0

    def place(point: Any) -> tuple[float, float]:
        x = MARGIN + (float(point[0]) - min(xs)) / span_x * (WIDTH - 2 * MARGIN)
        y = MARGIN + (float(point[1]) - min(ys)) / span_y * (HEIGHT - 2 * MARGIN)
        return round(x, 1), round(y, 1)

    return place
