"""Embedding providers and the rule that picks one from the settings.

Provider modules are imported inside `build_provider`: openai and fastembed are slow to import,
and a process only ever needs one of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from automem.embedding.base import EmbeddingError, EmbeddingProvider
from automem.errors import ConfigurationError

if TYPE_CHECKING:
    from automem.settings import Settings

__all__ = ["HASH_FALLBACK_WARNING", "EmbeddingError", "EmbeddingProvider", "build_provider"]

HASH_FALLBACK_WARNING = (
    "no embedding model available: using the hash provider; semantic recall quality is poor. "
    "Set AUTOMEM_EMBEDDING_MODEL_DIR or OPENAI_API_KEY."
)
# Local OpenAI-compatible servers ignore the key, but the client insists on one.
PLACEHOLDER_API_KEY = "not-needed"


def build_provider(settings: Settings) -> tuple[EmbeddingProvider, list[str]]:
    """The configured provider and the warnings to show in /health."""
    choice = _auto_choice(settings) if settings.embedding_provider == "auto" else settings.embedding_provider
    if choice == "openai":
        return _build_openai(settings), []
    if choice == "fastembed":
        return _build_fastembed(settings), []
    warnings = [HASH_FALLBACK_WARNING] if settings.embedding_provider == "auto" else []
    return _build_hash(settings), warnings


def _auto_choice(settings: Settings) -> str:
    from automem.embedding.fastembed import fastembed_available

    if settings.openai_api_key:
        return "openai"
    if fastembed_available(settings.embedding_model, settings.embedding_model_dir):
        return "fastembed"
    if settings.embedding_model_dir:
        # A model directory was asked for: falling back to hash vectors would fill the store
        # with embeddings that must all be redone, so fail (the provider names what is missing).
        return "fastembed"
    return "hash"


def _build_openai(settings: Settings) -> EmbeddingProvider:
    from automem.embedding.openai import DEFAULT_MODEL, OpenAIEmbeddingProvider

    api_key = settings.openai_api_key
    if not api_key:
        if not settings.openai_base_url:
            raise ConfigurationError(
                "EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a local "
                "OpenAI-compatible server that takes no key"
            )
        api_key = PLACEHOLDER_API_KEY
    return OpenAIEmbeddingProvider(
        api_key=api_key,
        base_url=settings.openai_base_url,
        model=settings.embedding_model or DEFAULT_MODEL,
        dimensions=settings.vector_size if settings.vector_size > 0 else None,
        timeout=settings.embedding_timeout_seconds,
    )


def _build_fastembed(settings: Settings) -> EmbeddingProvider:
    from automem.embedding.fastembed import FastEmbedProvider

    provider = FastEmbedProvider(
        settings.embedding_model,
        settings.embedding_model_dir,
        batch_tokens=settings.embedding_batch_tokens,
        max_tokens=settings.embedding_max_tokens,
    )
    if settings.vector_size and settings.vector_size != provider.dimension:
        raise ConfigurationError(
            f"VECTOR_SIZE={settings.vector_size}, but the fastembed model {provider.model} produces "
            f"{provider.dimension}-dimensional vectors (fastembed cannot change that); set "
            f"VECTOR_SIZE=0 or {provider.dimension}, or choose a model with {settings.vector_size} "
            "dimensions"
        )
    return provider


def _build_hash(settings: Settings) -> EmbeddingProvider:
    from automem.embedding.hashing import DEFAULT_DIMENSION, HashEmbeddingProvider

    return HashEmbeddingProvider(settings.vector_size or DEFAULT_DIMENSION)
