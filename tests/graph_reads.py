"""Recording the read queries a graph store sends (`GraphStore._ro` and `_ro_bare`), for tests
that check how many reads an operation makes or what a read's statement says."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from automem.stores.graph import GraphStore

Sent = list[tuple[str, dict[str, Any] | None]]


@contextmanager
def recorded_reads(graph: GraphStore) -> Iterator[Sent]:
    """Every (cypher, params) read while the block runs, compact or bare; the reads still answer."""
    sent: Sent = []
    read, read_bare = graph._ro, graph._ro_bare

    def recording(cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        sent.append((cypher, params))
        return read(cypher, params)

    def recording_bare(cypher: str, params: dict[str, Any], readers: Any) -> list[list[Any]]:
        sent.append((cypher, params))
        return read_bare(cypher, params, readers)

    graph._ro = recording  # type: ignore[method-assign]
    graph._ro_bare = recording_bare  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        del graph._ro
        del graph._ro_bare
