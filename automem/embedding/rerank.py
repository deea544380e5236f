"""Optional cross-encoder re-ranking of recall's best candidates (fastembed's TextCrossEncoder).

Off unless RECALL_RERANK_MODEL_DIR names a local directory holding a cross-encoder exported to
ONNX (`model.onnx` or `onnx/model.onnx`, with `tokenizer.json` and `tokenizer_config.json`):
nothing is ever downloaded. RECALL_RERANK_MODEL says which model it is; a name fastembed does not
know is registered as a custom cross-encoder (its first output's first column is the logit).

A cross-encoder reads the query and a memory together, so it sees what a bi-encoder's two
separate vectors cannot (which words answer which), at the price of one model run per pair.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from automem.embedding.base import EmbeddingError
from automem.embedding.fastembed import missing_model_files, onnx_file
from automem.errors import ConfigurationError
from automem.settings import Settings

if TYPE_CHECKING:
    from fastembed.rerank.cross_encoder import TextCrossEncoder

_registry_lock = threading.Lock()


class CrossEncoderReranker:
    """Relevance of memories to a query, as probabilities (the logit's sigmoid), from a local
    cross-encoder; the model loads on first use and runs one batch at a time."""

    def __init__(self, model: str, model_dir: str, threads: int | None = None) -> None:
        self.model = model
        self.model_dir = model_dir
        self._threads = threads
        self._encoder: TextCrossEncoder | None = None
        self._lock = threading.Lock()

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        with self._lock:
            encoder = self._load()
            try:
                logits = list(encoder.rerank(query, list(texts), batch_size=len(texts)))
            except Exception as exc:  # onnxruntime and tokenizer errors have no common base
                raise EmbeddingError(f"re-ranking with {self.model} failed: {exc}") from exc
        return [_sigmoid(float(x)) for x in logits]

    def _load(self) -> TextCrossEncoder:
        if self._encoder is None:
            from fastembed.rerank.cross_encoder import TextCrossEncoder

            _known_or_registered(self.model, Path(self.model_dir))
            try:
                self._encoder = TextCrossEncoder(
                    self.model,
                    threads=self._threads,
                    specific_model_path=self.model_dir,
                    local_files_only=True,
                )
            except Exception as exc:  # fastembed raises ValueError, OSError, onnxruntime errors
                raise EmbeddingError(
                    f"cannot load the re-ranking model {self.model} from {self.model_dir}: {exc}"
                ) from exc
        return self._encoder


def open_reranker(settings: Settings) -> CrossEncoderReranker | None:
    """The configured re-ranker, or None when RECALL_RERANK_MODEL_DIR is unset. The directory is
    checked here (a start-up error names what is missing); the model loads on first use."""
    if not settings.recall_rerank_model_dir:
        return None
    model_dir = Path(settings.recall_rerank_model_dir)
    missing = missing_model_files(model_dir)
    if missing:
        raise ConfigurationError(
            f"RECALL_RERANK_MODEL_DIR={model_dir} lacks {', '.join(missing)}; it must hold a "
            "cross-encoder exported to ONNX: tokenizer.json, tokenizer_config.json and model.onnx "
            "(or onnx/model.onnx)"
        )
    return CrossEncoderReranker(settings.recall_rerank_model, str(model_dir))


def _known_or_registered(model: str, model_dir: Path) -> None:
    """fastembed loads only models it has a description of: teach it an unknown name."""
    from fastembed.common.model_description import ModelSource
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    with _registry_lock:
        known = {d.model.lower(): d for d in TextCrossEncoder._list_supported_models()}
        description: Any = known.get(model.lower())
        if description is None:
            # Never fetched: specific_model_path short-circuits the download; fastembed wants a source.
            TextCrossEncoder.add_custom_model(
                model=model, sources=ModelSource(hf=model), model_file=onnx_file(model_dir) or "model.onnx"
            )
        elif not (model_dir / description.model_file).is_file():
            raise ConfigurationError(
                f"fastembed loads {model} from {description.model_file}, which {model_dir} lacks; "
                "move the ONNX file there or set RECALL_RERANK_MODEL to another name"
            )


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
