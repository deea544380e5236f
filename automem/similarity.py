"""Memories alike by embedding: enrichment's SIMILAR_TO links and the graph view's semantic
neighbours ask here, and here picks who answers.

The graph's HNSW index answers where the graph keeps one (GRAPH_VECTOR_INDEX). Embedded mode
keeps it: the Qdrant Edge shard answers only the API process that owns it, and the worker links
similar memories. A Qdrant server answers every process, so server mode leaves the index out of
FalkorDB and asks the vector store, which indexes the same vectors anyway (docs/performance.md,
"Server mode without the graph's vector index").
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

from automem.errors import ConfigurationError
from automem.settings import Settings
from automem.stores.graph import GraphStore
from automem.stores.vectors import Filter, HasId, Match, VectorStore

# memory id -> (similar memory id, cosine similarity), best first
Neighbours = dict[str, list[tuple[str, float]]]


class SimilarMemories(abc.ABC):
    """Up to k active memories of the same tenant whose embedding has cosine similarity of at
    least `min_similarity` with a memory's, best first; the memory itself is never among them."""

    # What answers, as GET /graph/neighbors reports it (`meta.semantic_source`).
    source: str = "abstract"

    @abc.abstractmethod
    def of(self, memory_ids: Sequence[str], k: int, min_similarity: float) -> Neighbours:
        """The similar memories of each of these memories (an id without a vector: none)."""

    def one(self, memory_id: str, k: int, min_similarity: float) -> list[tuple[str, float]]:
        return self.of([memory_id], k, min_similarity)[str(memory_id)]


@dataclass
class GraphSimilar(SimilarMemories):
    """From the graph's HNSW index, all memories in one query."""

    graph: GraphStore
    source: str = "graph_vector_index"

    def of(self, memory_ids: Sequence[str], k: int, min_similarity: float) -> Neighbours:
        return self.graph.similar_memories_of(memory_ids, k, min_similarity)


@dataclass
class VectorStoreSimilar(SimilarMemories):
    """From the vector store: the memories' points are read with their vectors and tenants,
    then their nearest are searched, in one batch, with the conditions the graph's query applies
    (same tenant, active, not itself). The store holds what the graph holds once the sync has
    written it, so callers ask after the sync (the embedding job writes its points first)."""

    vectors: VectorStore
    source: str = "vector_store"

    def of(self, memory_ids: Sequence[str], k: int, min_similarity: float) -> Neighbours:
        found: Neighbours = {str(i): [] for i in memory_ids}
        if not found:
            return found
        records = [
            r
            for r in self.vectors.retrieve(list(found), with_vectors=True, fields=["tenant"])
            if r.vector is not None and r.payload.get("tenant") is not None
        ]
        requests = [(r.vector or [], _neighbour_filter(r.id, str(r.payload["tenant"]))) for r in records]
        for record, hits in zip(records, self.vectors.search_many(requests, k, min_similarity), strict=True):
            found[record.id] = [(h.id, h.score) for h in hits]
        return found


def _neighbour_filter(memory_id: str, tenant: str) -> Filter:
    """What the graph's query asks of a neighbour: the same tenant, active, not the memory."""
    return Filter(
        must=(Match("tenant", (tenant,)), Match("state", ("active",))),
        must_not=(HasId((memory_id,)),),
    )


def similar_memories(settings: Settings, graph: GraphStore, vectors: VectorStore | None) -> SimilarMemories:
    """Who answers in this process: the graph's index where the graph keeps one, else the vector
    store (which every process of server mode holds)."""
    if settings.graph_vector_index_wanted():
        return GraphSimilar(graph)
    if vectors is None:
        raise ConfigurationError(
            "GRAPH_VECTOR_INDEX is off and this process holds no vector store to find similar memories in"
        )
    return VectorStoreSimilar(vectors)
