"""AutoMem-compatible long-term memory service: FalkorDB graph, Qdrant vectors, RQ workers."""

__version__ = "0.1.0"
