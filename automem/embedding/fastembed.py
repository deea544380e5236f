"""Local ONNX embeddings through fastembed, fully offline when given a model directory.

fastembed only loads models it has a description of (dimension, pooling, ONNX file name). A
directory holding one of its known models is loaded with `specific_model_path`; a directory with
an unknown model is registered as a custom model (mean pooling, normalised, dimension from
config.json's hidden_size), the usual recipe for sentence-transformers exports.

`fastembed` is imported lazily: it pulls in onnxruntime and tokenizers, which the hash and openai
providers, and `automem --help`, should not pay for.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from automem.embedding.base import EmbeddingError, EmbeddingProvider
from automem.errors import ConfigurationError

if TYPE_CHECKING:
    from fastembed import TextEmbedding

log = logging.getLogger(__name__)

#: fastembed's own default, used when a model is fetched by name
DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
#: what an unnamed model directory is assumed to hold (the offline model shipped beside the repo)
DEFAULT_DIR_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_ONNX_CANDIDATES = ("model.onnx", "onnx/model.onnx")
_REQUIRED_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
# The windows models were trained on, when the directory does not say (sentence-transformers
# writes it to sentence_bert_config.json; tokenizer_config.json often holds the position limit
# instead, 512 for MiniLM, which reads twice as many tokens as it learnt from, at 4x the cost).
TRAINED_WINDOWS = {
    "sentence-transformers/all-minilm-l6-v2": 256,
    "sentence-transformers/all-minilm-l12-v2": 256,
}
# fastembed keeps custom models in a class-level list and refuses duplicates.
_registry_lock = threading.Lock()


def _supported_description(model_name: str) -> Any | None:
    from fastembed import TextEmbedding

    for description in TextEmbedding._list_supported_models():
        if description.model.lower() == model_name.lower():
            return description
    return None


def _cache_dir(cache_dir: str | None) -> Path:
    # The same rule as fastembed's define_cache_dir, minus its mkdir: checking must not write.
    if cache_dir:
        return Path(cache_dir)
    default = os.path.join(tempfile.gettempdir(), "fastembed_cache")
    return Path(os.getenv("FASTEMBED_CACHE_PATH", default))


def onnx_file(model_dir: Path, preferred: str | None = None) -> str | None:
    """The ONNX file of a model directory, relative to it."""
    candidates = ((preferred,) if preferred else ()) + _ONNX_CANDIDATES
    return next((name for name in candidates if (model_dir / name).is_file()), None)


def missing_model_files(model_dir: Path) -> list[str]:
    """What a local ONNX model directory lacks of what fastembed loads (the model, the tokenizer)."""
    missing = [name for name in _REQUIRED_TOKENIZER_FILES if not (model_dir / name).is_file()]
    if onnx_file(model_dir) is None:
        missing.insert(0, "model.onnx")
    return missing


def _hidden_size(model_dir: Path) -> int | None:
    try:
        config = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError):
        return None
    # Architectures name their width differently (BERT: hidden_size, T5: d_model, DistilBERT: dim).
    for key in ("hidden_size", "d_model", "dim"):
        if isinstance(config.get(key), int):
            return int(config[key])
    return None


def _in_cache(description: Any, cache_dir: Path) -> bool:
    if description.sources.hf:
        folder = "models--" + description.sources.hf.replace("/", "--")
        # Case-insensitive: older fastembed versions cached some repos with a different casing.
        for entry in cache_dir.glob("models--*"):
            if entry.name.lower() == folder.lower() and any(
                entry.glob(f"snapshots/*/{description.model_file}")
            ):
                return True
    legacy = cache_dir / f"fast-{description.model.split('/')[-1]}"
    return (legacy / description.model_file).is_file()


def fastembed_available(model_name: str | None, model_dir: str | None, cache_dir: str | None = None) -> bool:
    """Whether a model can be loaded without network: a usable directory or a cached named model."""
    if model_dir:
        path = Path(model_dir)
        return onnx_file(path) is not None and (path / "tokenizer.json").is_file()
    try:
        description = _supported_description(model_name or DEFAULT_MODEL)
    except ImportError:
        return False
    return description is not None and _in_cache(description, _cache_dir(cache_dir))


def _check_model_dir(model_dir: Path) -> None:
    if not model_dir.is_dir():
        raise ConfigurationError(
            f"AUTOMEM_EMBEDDING_MODEL_DIR={model_dir} is not a directory; point it at a model "
            "directory (model.onnx + tokenizer files) or unset it"
        )
    missing = missing_model_files(model_dir)
    if missing:
        raise ConfigurationError(
            f"the model directory {model_dir} lacks {', '.join(missing)}; export the model to ONNX "
            "with its tokenizer files, or unset AUTOMEM_EMBEDDING_MODEL_DIR"
        )


def _register_custom_model(model_name: str, model_dir: Path) -> int:
    """Teach fastembed an unknown directory model; returns its dimension."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    dimension = _hidden_size(model_dir)
    if dimension is None:
        raise ConfigurationError(
            f"{model_name} is not a model fastembed knows, and {model_dir}/config.json has no "
            "hidden_size to take its dimension from; set EMBEDDING_MODEL to the fastembed name "
            "of the directory's model"
        )
    TextEmbedding.add_custom_model(
        model=model_name,
        pooling=PoolingType.MEAN,
        normalization=True,
        # Never fetched: specific_model_path short-circuits the download; fastembed wants a source.
        sources=ModelSource(hf=model_name),
        dim=dimension,
        model_file=onnx_file(model_dir) or "model.onnx",
    )
    return dimension


def _dir_model_dimension(model_name: str, model_dir: Path) -> int:
    """Dimension of a directory model, registering it with fastembed when it is unknown."""
    with _registry_lock:
        description = _supported_description(model_name)
        if description is None:
            return _register_custom_model(model_name, model_dir)
    if not (model_dir / description.model_file).is_file():
        raise ConfigurationError(
            f"fastembed loads {model_name} from {description.model_file}, which {model_dir} lacks; "
            f"rename the ONNX file or set EMBEDDING_MODEL to a name for a custom model"
        )
    hidden = _hidden_size(model_dir)
    if hidden is not None and hidden != description.dim:
        # Not fatal (some models project their output), but usually a wrong EMBEDDING_MODEL.
        log.warning(
            "%s has hidden_size %d but %s is %d-dimensional; is EMBEDDING_MODEL right?",
            model_dir,
            hidden,
            model_name,
            description.dim,
        )
    return int(description.dim)


def _named_model_dimension(model_name: str) -> int:
    description = _supported_description(model_name)
    if description is None:
        raise ConfigurationError(
            f"fastembed does not know the model {model_name}; choose one of "
            "TextEmbedding.list_supported_models(), or export it to ONNX and set "
            "AUTOMEM_EMBEDDING_MODEL_DIR"
        )
    return int(description.dim)


class FastEmbedProvider(EmbeddingProvider):
    """fastembed's TextEmbedding, loaded on the first embed; the dimension is known before that."""

    name = "fastembed"

    def __init__(
        self,
        model_name: str | None = None,
        model_dir: str | None = None,
        *,
        cache_dir: str | None = None,
        threads: int | None = None,
        batch_tokens: int = 1024,
        max_tokens: int = 0,
    ) -> None:
        name = model_name or (DEFAULT_DIR_MODEL if model_dir else DEFAULT_MODEL)
        self.model_dir = str(Path(model_dir).expanduser().resolve()) if model_dir else None
        if self.model_dir:
            # Belt and braces: nothing may reach the hub when the model is on disk.
            os.environ["HF_HUB_OFFLINE"] = "1"
            _check_model_dir(Path(self.model_dir))
            dimension = _dir_model_dimension(name, Path(self.model_dir))
        else:
            dimension = _named_model_dimension(name)
        super().__init__(name, dimension)
        self._cache_dir = cache_dir
        self._threads = threads
        self._batch_tokens = batch_tokens
        self.max_tokens = max_tokens or _trained_window(name, self.model_dir)
        self._model: TextEmbedding | None = None
        self._load_lock = threading.Lock()
        # One inference at a time: onnxruntime already spreads one run over all cores, so
        # concurrent runs only contend, and the tokenizer is not shared across threads.
        self._run_lock = threading.Lock()

    def _load(self) -> TextEmbedding:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._construct()
        return self._model

    def _construct(self) -> TextEmbedding:
        from fastembed import TextEmbedding

        kwargs: dict[str, Any] = {}
        if self.model_dir:
            kwargs = {"specific_model_path": self.model_dir, "local_files_only": True}
        try:
            model = TextEmbedding(self.model, cache_dir=self._cache_dir, threads=self._threads, **kwargs)
        except Exception as exc:  # fastembed raises ValueError, OSError, onnxruntime errors...
            where = self.model_dir or "fastembed's cache (or the network)"
            raise EmbeddingError(f"cannot load the embedding model {self.model} from {where}: {exc}") from exc
        if self.max_tokens:
            _limit_window(model, self.max_tokens)
        return model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        try:
            with self._run_lock:
                lengths = _token_lengths(model, texts)
                arrays: list[Any] = [None] * len(texts)
                for batch in plan_batches(lengths, self._batch_tokens):
                    run = model.embed([texts[i] for i in batch], batch_size=len(batch))
                    for position, array in zip(batch, run, strict=True):
                        arrays[position] = array
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self.model} failed: {exc}") from exc
        vectors = [array.astype(float).tolist() for array in arrays]
        if len(vectors) != len(texts) or any(len(v) != self.dimension for v in vectors):
            raise EmbeddingError(
                f"{self.model} returned vectors that do not match its dimension {self.dimension}"
            )
        return vectors


def plan_batches(lengths: Sequence[int], token_budget: int) -> list[list[int]]:
    """The texts' positions in model runs: shortest first, each run as many texts of similar
    length as fit `token_budget` tokens once padded to its longest (a longer text alone when it
    exceeds the budget by itself).

    A run pads every text to its longest, so sorting by length wastes nothing on padding; the
    budget keeps a run's activations cache-sized: on this machine's cores the shipped model ran
    ~1.5x more paragraphs a second in runs of ~1,024 tokens than in runs of 32 paragraphs (~5,000
    tokens), and as fast as with 512 (docs/performance.md, "Embedding throughput").
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    for position in order:
        # Sorted: this text is the longest of the run it would join.
        if batches and (len(batches[-1]) + 1) * lengths[position] <= token_budget:
            batches[-1].append(position)
        else:
            batches.append([position])
    return batches


def _token_lengths(model: TextEmbedding, texts: Sequence[str]) -> list[int]:
    """Each text's tokens as the model will read it (cut at the window); characters / 4 when this
    fastembed version hides its tokenizer."""
    tokenizer = _tokenizer(model)
    if tokenizer is None:
        return [len(text) // 4 + 1 for text in texts]
    return [sum(encoding.attention_mask) for encoding in tokenizer.encode_batch(list(texts))]


def _tokenizer(model: TextEmbedding) -> Any | None:
    """fastembed's tokenizers.Tokenizer of the loaded model (not public API: None if hidden)."""
    return getattr(getattr(model, "model", None), "tokenizer", None)


def _trained_window(model_name: str, model_dir: str | None) -> int:
    """The window the model was trained on, when known (0: leave the tokenizer's limit)."""
    if model_dir:
        try:
            config = json.loads((Path(model_dir) / "sentence_bert_config.json").read_text())
            if isinstance(config.get("max_seq_length"), int) and config["max_seq_length"] > 0:
                return int(config["max_seq_length"])
        except (OSError, ValueError):
            pass
    return TRAINED_WINDOWS.get(model_name.lower(), 0)


def _limit_window(model: TextEmbedding, max_tokens: int) -> None:
    """Cut texts at `max_tokens` tokens (fastembed sets the tokenizer's limit from its config);
    never above the limit the tokenizer already has (the model's positions)."""
    tokenizer = _tokenizer(model)
    if tokenizer is None:
        log.warning("cannot set the embedding window: this fastembed version hides its tokenizer")
        return
    truncation = tokenizer.truncation or {}
    limit = min(max_tokens, int(truncation.get("max_length") or max_tokens))
    tokenizer.enable_truncation(
        max_length=limit,
        stride=int(truncation.get("stride") or 0),
        strategy=truncation.get("strategy") or "longest_first",
        direction=truncation.get("direction") or "right",
    )
