"""Vector stores: the neutral interface and the factory that picks the configured adapter.

The adapters are imported inside `open_vector_store`, so importing this package never loads a
Qdrant client library that the configured backend does not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automem.stores.vectors.base import (
    PAYLOAD_INDEXES,
    RETIRED_INDEXES,
    Condition,
    Filter,
    HasId,
    IsNull,
    Match,
    Range,
    VectorHit,
    VectorPoint,
    VectorRecord,
    VectorStore,
)

if TYPE_CHECKING:
    from automem.settings import Settings

__all__ = [
    "PAYLOAD_INDEXES",
    "RETIRED_INDEXES",
    "Condition",
    "Filter",
    "HasId",
    "IsNull",
    "Match",
    "Range",
    "VectorHit",
    "VectorPoint",
    "VectorRecord",
    "VectorStore",
    "open_vector_store",
]


def open_vector_store(settings: Settings) -> VectorStore:
    """The vector store `settings` selects; the collection itself is made by `ensure_collection`."""
    if settings.resolved_vector_backend() == "edge":
        from automem.stores.vectors.qdrant_edge import Checkpoints, EdgeVectorStore

        return EdgeVectorStore(
            settings.edge_path(),
            settings.edge_vector_datatype,
            Checkpoints(settings.edge_checkpoint_writes, settings.edge_checkpoint_seconds),
        )

    from automem.stores.vectors.qdrant_server import QdrantVectorStore

    return QdrantVectorStore.from_settings(
        settings.qdrant_url,
        settings.qdrant_api_key,
        settings.qdrant_path,
        settings.qdrant_collection,
        settings.qdrant_timeout_seconds,
    )
