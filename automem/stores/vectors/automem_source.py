"""Read-only access to an AutoMem Qdrant collection, the vector source of `automem import-automem`.

AutoMem keeps one point per memory (point id = memory UUID) with one unnamed dense vector of
`VECTOR_SIZE` dimensions, cosine distance (reference §3.2). Its payload copies graph fields and
is not read: the graph is the source of every field, Qdrant only of the vectors. A server
(`url`) or qdrant-client's local mode (`path`, a copy on disk; the tests' stand-in for a server).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from automem.errors import ConfigurationError


class AutoMemVectors:
    """One AutoMem collection; `vector_name` is "" for the unnamed vector AutoMem writes."""

    def __init__(self, client: QdrantClient, collection: str) -> None:
        self.client = client
        self.collection = collection
        self.vector_name, self.dimension = self._vector_params()

    @classmethod
    def open(
        cls,
        collection: str,
        url: str | None = None,
        path: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
    ) -> AutoMemVectors:
        if path:
            client = QdrantClient(path=path)
        elif url:
            client = QdrantClient(url=url, api_key=api_key, timeout=math.ceil(timeout))
        else:
            raise ConfigurationError("AutoMem's Qdrant needs a URL or a local path")
        try:
            return cls(client, collection)
        except Exception:
            client.close()
            raise

    def _vector_params(self) -> tuple[str, int]:
        if not self.client.collection_exists(self.collection):
            raise ConfigurationError(f"no collection {self.collection!r} in AutoMem's Qdrant")
        vectors = self.client.get_collection(self.collection).config.params.vectors
        if isinstance(vectors, dict):  # named vectors: the unnamed one, else the only one
            if "" in vectors:
                return "", int(vectors[""].size)
            if len(vectors) == 1:
                name, params = next(iter(vectors.items()))
                return name, int(params.size)
            raise ConfigurationError(
                f"the collection {self.collection!r} has several named vectors ({', '.join(vectors)})"
            )
        if vectors is None:
            raise ConfigurationError(f"the collection {self.collection!r} has no dense vector")
        return "", int(vectors.size)

    def count(self) -> int:
        return int(self.client.count(self.collection, exact=True).count)

    def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these memory ids (absent ones are left out); ids that are not
        UUIDs cannot be Qdrant point ids and are skipped."""
        wanted = [i for i in ids if _is_uuid(i)]
        if not wanted:
            return {}
        selector: bool | list[str] = [self.vector_name] if self.vector_name else True
        records = self.client.retrieve(self.collection, ids=wanted, with_vectors=selector, with_payload=False)
        found: dict[str, list[float]] = {}
        for record in records:
            vector = _dense(record.vector, self.vector_name)
            if vector is not None:
                found[str(uuid.UUID(str(record.id)))] = vector
        return found

    def close(self) -> None:
        self.client.close()


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return False
    return True


def _dense(vector: Any, name: str) -> list[float] | None:
    if isinstance(vector, dict):
        vector = vector.get(name)
    if isinstance(vector, qm.SparseVector) or vector is None:
        return None
    return [float(x) for x in vector]
