"""Embeddings from OpenAI or any OpenAI-compatible endpoint (Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import openai

from automem.embedding.base import EmbeddingError, EmbeddingProvider

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# OpenAI accepts up to 2048 inputs per request; local servers often choke far earlier.
MAX_INPUTS_PER_REQUEST = 256
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_PROBE_TEXT = "dimension probe"


class EmbeddingAPIError(EmbeddingError):
    """A remote embedding call failed; `retryable` tells the job whether another attempt can help."""

    def __init__(self, message: str, *, status_code: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = retryable


def _is_retryable_status(status: int) -> bool:
    # 408/409 are what OpenAI's own client retries besides rate limits and server errors.
    return status in (408, 409, 429) or status >= 500


def _wrap_error(exc: openai.OpenAIError, base_url: str) -> EmbeddingAPIError:
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return EmbeddingAPIError(
            f"embedding request to {base_url} failed with HTTP {status}: {exc.message}",
            status_code=status,
            retryable=_is_retryable_status(status),
        )
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return EmbeddingAPIError(f"cannot reach the embedding endpoint {base_url}: {exc}", retryable=True)
    return EmbeddingAPIError(f"embedding request to {base_url} failed: {exc}")


def _chunks(texts: Sequence[str], size: int) -> list[list[str]]:
    return [list(texts[i : i + size]) for i in range(0, len(texts), size)]


class OpenAIEmbeddingProvider(EmbeddingProvider):
    """Calls POST {base_url}/embeddings; the dimension is known up front or probed once."""

    name = "openai"

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        model: str = DEFAULT_MODEL,
        dimensions: int | None = None,
        timeout: float = 30.0,
        *,
        max_retries: int = 2,
        batch_size: int = MAX_INPUTS_PER_REQUEST,
    ) -> None:
        self._dimension: int | None = None
        self._requested_dimensions = dimensions if dimensions else None
        self._batch_size = max(1, min(batch_size, MAX_INPUTS_PER_REQUEST))
        self._probe_lock = threading.Lock()
        # An explicit URL, so the client does not silently pick up OPENAI_BASE_URL on its own.
        self.base_url = base_url or DEFAULT_BASE_URL
        # Few retries: the embedding job has its own, longer-spaced retries on top.
        self._client = openai.OpenAI(
            api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=max_retries
        )
        super().__init__(model, self._requested_dimensions or KNOWN_DIMENSIONS.get(model, 0))

    @property
    def dimension(self) -> int:
        """The vector length; an unknown model is asked once, on first use."""
        if self._dimension is None:
            with self._probe_lock:
                if self._dimension is None:
                    self._dimension = len(self._request([_PROBE_TEXT])[0])
        return self._dimension

    @dimension.setter
    def dimension(self, value: int) -> None:
        # 0 means "not known yet": the base class assigns it before any request is possible.
        self._dimension = value or None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for chunk in _chunks(texts, self._batch_size):
            vectors += self._request(chunk)
        self._check_lengths(vectors)
        return vectors

    def _request(self, texts: list[str]) -> list[list[float]]:
        # OpenAI rejects empty strings; a blank is the closest input that still gets a vector.
        inputs = [text if text.strip() else " " for text in texts]
        extra: dict[str, Any] = {}
        if self._requested_dimensions:
            extra["dimensions"] = self._requested_dimensions
        try:
            response = self._client.embeddings.create(
                model=self.model, input=inputs, encoding_format="float", **extra
            )
        except openai.OpenAIError as exc:
            raise _wrap_error(exc, self.base_url) from exc
        return self._vectors_in_order(response, len(inputs))

    def _vectors_in_order(self, response: Any, expected: int) -> list[list[float]]:
        data = sorted(response.data or [], key=lambda item: item.index)
        if len(data) != expected:
            raise EmbeddingAPIError(f"{self.base_url} returned {len(data)} embeddings for {expected} inputs")
        try:
            vectors = [[float(v) for v in item.embedding] for item in data]
        except (TypeError, ValueError) as exc:
            raise EmbeddingAPIError(f"{self.base_url} returned malformed embeddings: {exc}") from exc
        if any(not v for v in vectors):
            raise EmbeddingAPIError(f"{self.base_url} returned an empty embedding")
        return vectors

    def _check_lengths(self, vectors: list[list[float]]) -> None:
        if not vectors:
            return
        if self._dimension is None:
            # The first real answer settles an unknown dimension, which saves the probe call.
            self._dimension = len(vectors[0])
        bad = {len(v) for v in vectors if len(v) != self._dimension}
        if bad:
            raise EmbeddingAPIError(
                f"model {self.model} at {self.base_url} returned vectors of length {sorted(bad)}, "
                f"expected {self._dimension}"
            )
