"""Deterministic feature-hashing embeddings: no model, no network, poor but non-zero semantics.

Used when no embedding model is available. Word unigrams carry topical overlap, character
trigrams tolerate inflections and typos ("jumps" / "jumped"). Features are hashed with blake2b
rather than Python's `hash()`, which is salted per process: vectors must be identical in every
process and across restarts, because they are stored.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import unicodedata
from collections.abc import Sequence

from automem.embedding.base import EmbeddingProvider

DEFAULT_DIMENSION = 384
MODEL_NAME = "feature-hash-v1"

_WORD = re.compile(r"\w+")
_NGRAM = 3
# Words dominate: a shared word says more than a shared trigram, which many unrelated words share.
_WORD_WEIGHT = 1.0
_NGRAM_WEIGHT = 0.5
# Part of the hash key, so changing the scheme changes every bucket (and should bump MODEL_NAME).
_PERSON = b"automem-fh-v1"
_EMPTY_FEATURE = "\x00empty"


@functools.lru_cache(maxsize=65_536)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    """Bucket index and sign of one feature; the sign bit keeps collisions unbiased."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, person=_PERSON).digest()
    value = int.from_bytes(digest, "little")
    sign = 1.0 if value >> 63 == 0 else -1.0
    return value % dimension, sign


def _normalise_text(text: str) -> str:
    # NFKC folds full-width and compatibility characters, so visually equal texts hash equally.
    return unicodedata.normalize("NFKC", text).lower()


def _features(text: str) -> list[tuple[str, float]]:
    words = _WORD.findall(_normalise_text(text))
    features = [(f"w:{word}", _WORD_WEIGHT) for word in words]
    for word in words:
        padded = f" {word} "  # word boundaries become part of the trigrams
        features += [(f"c:{padded[i : i + _NGRAM]}", _NGRAM_WEIGHT) for i in range(len(padded) - _NGRAM + 1)]
    return features


class HashEmbeddingProvider(EmbeddingProvider):
    """Signed feature hashing of words and character trigrams, L2-normalised."""

    name = "hash"

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        super().__init__(MODEL_NAME, dimension)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        # Empty text still needs a valid unit vector: a zero vector has no cosine (NaN).
        features = _features(text) or [(_EMPTY_FEATURE, 1.0)]
        vector = [0.0] * self.dimension
        for feature, weight in features:
            index, sign = _bucket(feature, self.dimension)
            vector[index] += sign * weight
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            # Colliding features of opposite sign can cancel out exactly; fall back to the empty vector.
            return self._vector("")
        return [v / norm for v in vector]
