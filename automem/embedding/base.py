"""The embedding-provider interface."""

from __future__ import annotations

import abc
from collections.abc import Sequence


class EmbeddingError(Exception):
    """A provider failed to embed (network, quota, bad model); jobs retry, the API answers 503."""


class EmbeddingProvider(abc.ABC):
    """Turns texts into fixed-dimension float vectors."""

    #: short provider name: "openai", "fastembed" or "hash"
    name: str = "abstract"

    def __init__(self, model: str, dimension: int) -> None:
        self.model = model
        self.dimension = dimension

    @property
    def label(self) -> str:
        """`provider:model`, stored beside each embedding so a model change is detectable."""
        return f"{self.name}:{self.model}"

    @abc.abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, each of length `self.dimension`."""

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]

    def flush(self) -> None:
        """Write out what the provider keeps in the process (its usage counts); nothing here."""
        return None
