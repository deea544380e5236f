"""Embedding providers: hash, openai (against a local stub), fastembed, and the selection rules."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from automem.embedding import HASH_FALLBACK_WARNING, EmbeddingError, build_provider
from automem.embedding.fastembed import FastEmbedProvider, fastembed_available
from automem.embedding.hashing import HashEmbeddingProvider
from automem.embedding.openai import EmbeddingAPIError, OpenAIEmbeddingProvider
from automem.errors import ConfigurationError
from automem.settings import Settings, registry
from tests.stubs.openai_stub import OpenAIStub

REPO = Path(__file__).resolve().parents[2]
MODEL_DIR = Path(__file__).resolve().parents[3] / "shared/models/all-MiniLM-L6-v2-onnx-int8"


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No setting, and no model cached by the developer, may leak in from the shell."""
    for entry in registry():
        for env in (entry.env, *entry.aliases):
            monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed-cache"))
    # FastEmbedProvider sets this for a model dir; pinning it here lets monkeypatch undo that.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def fake_model_dir(path: Path, hidden_size: int = 384) -> Path:
    """Enough of a model directory for selection and dimension checks, which never load the model."""
    path.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json"):
        (path / name).write_text("{}")
    (path / "config.json").write_text(json.dumps({"hidden_size": hidden_size}))
    return path


# --- hash --------------------------------------------------------------------------------------


def test_hash_dimension_label_and_unit_length() -> None:
    provider = HashEmbeddingProvider()
    assert provider.dimension == 384
    assert provider.label == "hash:feature-hash-v1"
    vectors = provider.embed(["Hello world", "Ünïcödé text with numbers 42", "x"])
    assert all(len(v) == 384 for v in vectors)
    assert all(math.isclose(norm(v), 1.0, rel_tol=1e-9) for v in vectors)
    assert len(HashEmbeddingProvider(64).embed_one("short")) == 64


def test_hash_empty_text_gives_a_fixed_unit_vector() -> None:
    provider = HashEmbeddingProvider()
    empty, blank, punctuation = provider.embed(["", "   \n\t", "?!"])
    assert empty == blank == punctuation
    assert all(math.isfinite(x) for x in empty)
    assert math.isclose(norm(empty), 1.0)


def test_hash_similar_texts_are_closer_than_unrelated_ones() -> None:
    provider = HashEmbeddingProvider()
    base = provider.embed_one("The quick brown fox jumps over the lazy dog")
    similar = provider.embed_one("A quick brown fox jumped over a lazy dog")
    unrelated = provider.embed_one("Quarterly revenue grew five percent in Europe")
    assert cosine(base, similar) > 0.5
    assert cosine(base, similar) > cosine(base, unrelated) + 0.3
    assert provider.embed_one("Deploy FAILED") == provider.embed_one("deploy failed")


def test_hash_is_identical_across_processes() -> None:
    texts = ["deterministic across processes", "PostgreSQL connection pool exhausted", ""]
    script = (
        "import json, sys\n"
        "from automem.embedding.hashing import HashEmbeddingProvider\n"
        "print(json.dumps(HashEmbeddingProvider(256).embed(json.loads(sys.argv[1]))))\n"
    )
    expected = HashEmbeddingProvider(256).embed(texts)
    for seed in ("1", "12345"):  # Python's str hash differs per seed; ours must not
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        out = subprocess.run(
            [sys.executable, "-c", script, json.dumps(texts)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert json.loads(out.stdout) == expected


def test_hash_rejects_a_non_positive_dimension() -> None:
    with pytest.raises(ValueError):
        HashEmbeddingProvider(0)


# --- openai against the stub -------------------------------------------------------------------


def openai_provider(stub: OpenAIStub, **kwargs: Any) -> OpenAIEmbeddingProvider:
    return OpenAIEmbeddingProvider(api_key="test-key", base_url=stub.base_url, timeout=5.0, **kwargs)


def test_openai_batches_and_keeps_order(stub: OpenAIStub) -> None:
    provider = openai_provider(stub, dimensions=16)
    texts = [f"text number {i}" for i in range(600)]
    vectors = provider.embed(texts)
    calls = stub.requests_to("/embeddings")
    assert [len(c.body["input"]) for c in calls] == [256, 256, 88]
    assert vectors[0] == pytest.approx(OpenAIStub.vector_for("text number 0", 16))
    assert vectors[599] == pytest.approx(OpenAIStub.vector_for("text number 599", 16))
    assert calls[0].headers["authorization"] == "Bearer test-key"
    assert calls[0].body["encoding_format"] == "float"


def test_openai_passes_dimensions_only_when_set(stub: OpenAIStub) -> None:
    sized = openai_provider(stub, dimensions=64)
    assert sized.dimension == 64
    assert len(sized.embed_one("hello")) == 64
    assert stub.requests[-1].body["dimensions"] == 64

    native = openai_provider(stub)  # text-embedding-3-small: the table knows 1536, no probe
    assert native.dimension == 1536
    assert len(stub.requests) == 1
    assert len(native.embed_one("hello")) == 1536
    assert "dimensions" not in stub.requests[-1].body
    assert native.label == "openai:text-embedding-3-small"


def test_openai_probes_the_dimension_of_an_unknown_model_once(stub: OpenAIStub) -> None:
    provider = openai_provider(stub, model="nomic-embed-text")
    assert stub.requests == []  # construction never calls out
    assert provider.dimension == stub.dimension
    assert provider.dimension == stub.dimension
    assert len(stub.requests) == 1


def test_openai_first_embed_settles_an_unknown_dimension(stub: OpenAIStub) -> None:
    provider = openai_provider(stub, model="local-model")
    provider.embed(["a", "b"])
    assert provider.dimension == stub.dimension
    assert len(stub.requests) == 1


def test_openai_sends_blank_for_empty_text(stub: OpenAIStub) -> None:
    openai_provider(stub, dimensions=8).embed(["", "x"])
    assert stub.requests[-1].body["input"] == [" ", "x"]


@pytest.mark.parametrize(
    ("status", "retryable"), [(429, True), (500, True), (503, True), (400, False), (401, False), (404, False)]
)
def test_openai_errors_map_to_embedding_error(stub: OpenAIStub, status: int, retryable: bool) -> None:
    provider = openai_provider(stub, dimensions=8, max_retries=0)
    stub.fail_next(status)
    with pytest.raises(EmbeddingError) as caught:
        provider.embed(["x"])
    assert isinstance(caught.value, EmbeddingAPIError)
    assert caught.value.status_code == status
    assert caught.value.retryable is retryable
    assert str(status) in str(caught.value)
    assert "test-key" not in str(caught.value)


def test_openai_client_retries_are_bounded(stub: OpenAIStub) -> None:
    provider = openai_provider(stub, dimensions=8, max_retries=2)
    stub.fail_next(500, 1)
    assert len(provider.embed_one("recovers")) == 8
    stub.reset()
    stub.fail_next(429, 5)
    with pytest.raises(EmbeddingAPIError):
        provider.embed_one("gives up")
    assert len(stub.requests) == 3  # the first try and two retries, then the job's retries take over


def test_openai_connection_error_is_retryable() -> None:
    with OpenAIStub() as stub:
        base_url = stub.base_url
    provider = OpenAIEmbeddingProvider(
        api_key="k", base_url=base_url, dimensions=8, timeout=2.0, max_retries=0
    )
    with pytest.raises(EmbeddingAPIError) as caught:
        provider.embed(["x"])
    assert caught.value.retryable is True
    assert caught.value.status_code is None


def test_stub_chat_completions_and_auth() -> None:
    with OpenAIStub(api_key="secret", chat_reply={"summary": "short"}) as stub:
        client = openai.OpenAI(api_key="secret", base_url=stub.base_url, max_retries=0)
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert json.loads(reply.choices[0].message.content or "") == {"summary": "short"}
        stub.chat_reply = "plain text"
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "plain text"
        assert stub.requests_to("/chat/completions")[0].body["messages"][0]["content"] == "hi"
        wrong = openai.OpenAI(api_key="wrong", base_url=stub.base_url, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            wrong.embeddings.create(model="m", input="x")


def test_stub_answers_base64_embeddings_like_openai() -> None:
    with OpenAIStub() as stub:
        client = openai.OpenAI(api_key="k", base_url=stub.base_url, max_retries=0)
        result = client.embeddings.create(model="m", input="hello", dimensions=12)  # base64 by default
        assert result.data[0].embedding == pytest.approx(OpenAIStub.vector_for("hello", 12), abs=1e-6)


# --- fastembed without loading a model ---------------------------------------------------------


def test_fastembed_dimension_is_known_without_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    provider = FastEmbedProvider(None, str(fake_model_dir(tmp_path / "model")))
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # a model dir means: never ask the hub
    assert provider.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert provider.dimension == 384
    assert provider.label == "fastembed:sentence-transformers/all-MiniLM-L6-v2"


def test_fastembed_registers_an_unknown_directory_model(tmp_path: Path) -> None:
    model_dir = fake_model_dir(tmp_path / "tiny", hidden_size=256)
    provider = FastEmbedProvider("acme/tiny-encoder-test", str(model_dir))
    assert provider.dimension == 256
    # A second provider for the same model must not trip fastembed's duplicate check.
    assert FastEmbedProvider("acme/tiny-encoder-test", str(model_dir)).dimension == 256


def test_fastembed_rejects_an_incomplete_directory(tmp_path: Path) -> None:
    model_dir = tmp_path / "broken"
    model_dir.mkdir()
    (model_dir / "model.onnx").write_text("")
    with pytest.raises(ConfigurationError, match=r"tokenizer\.json"):
        FastEmbedProvider(None, str(model_dir))
    with pytest.raises(ConfigurationError, match="not a directory"):
        FastEmbedProvider(None, str(tmp_path / "missing"))


def test_fastembed_rejects_an_unknown_model_name() -> None:
    with pytest.raises(ConfigurationError, match="does not know"):
        FastEmbedProvider("acme/not-a-fastembed-model", None)


def test_fastembed_available(tmp_path: Path) -> None:
    assert fastembed_available(None, str(fake_model_dir(tmp_path / "model")))
    (tmp_path / "empty").mkdir()
    assert not fastembed_available(None, str(tmp_path / "empty"))
    assert not fastembed_available(None, None)  # the cache is an empty temp dir
    snapshot = tmp_path / "fastembed-cache/models--Qdrant--bge-small-en-v1.5-onnx-Q/snapshots/abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "model_optimized.onnx").write_text("")
    assert fastembed_available(None, None)
    assert fastembed_available("BAAI/bge-small-en-v1.5", None)
    assert not fastembed_available("sentence-transformers/all-MiniLM-L6-v2", None)
    assert not fastembed_available("acme/unknown", None)


# --- build_provider ----------------------------------------------------------------------------


def test_auto_prefers_openai_when_a_key_is_set(tmp_path: Path) -> None:
    settings = Settings(openai_api_key="sk-test", embedding_model_dir=str(fake_model_dir(tmp_path / "m")))
    provider, warnings = build_provider(settings)
    assert isinstance(provider, OpenAIEmbeddingProvider)
    assert provider.dimension == 1536
    assert warnings == []


def test_auto_passes_vector_size_to_openai_as_dimensions(stub: OpenAIStub) -> None:
    settings = Settings(openai_api_key="sk-test", openai_base_url=stub.base_url, vector_size=256)
    provider, _ = build_provider(settings)
    assert provider.dimension == 256
    provider.embed_one("x")
    assert stub.requests[-1].body["dimensions"] == 256


def test_auto_uses_fastembed_with_a_model_dir(tmp_path: Path) -> None:
    provider, warnings = build_provider(Settings(embedding_model_dir=str(fake_model_dir(tmp_path / "m"))))
    assert isinstance(provider, FastEmbedProvider)
    assert provider.dimension == 384
    assert warnings == []


def test_auto_falls_back_to_hash_with_a_warning() -> None:
    provider, warnings = build_provider(Settings())
    assert isinstance(provider, HashEmbeddingProvider)
    assert provider.dimension == 384
    assert warnings == [HASH_FALLBACK_WARNING]
    assert "hash provider" in warnings[0]
    sized, _ = build_provider(Settings(vector_size=128))
    assert sized.dimension == 128


def test_auto_with_an_unusable_model_dir_fails_instead_of_hashing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigurationError, match=r"model\.onnx"):
        build_provider(Settings(embedding_model_dir=str(tmp_path / "empty")))


def test_explicit_hash_has_no_warning() -> None:
    provider, warnings = build_provider(Settings(embedding_provider="hash", openai_api_key="sk-test"))
    assert isinstance(provider, HashEmbeddingProvider)
    assert warnings == []


def test_fastembed_vector_size_mismatch_is_a_configuration_error(tmp_path: Path) -> None:
    model_dir = str(fake_model_dir(tmp_path / "m"))
    with pytest.raises(ConfigurationError, match="VECTOR_SIZE=768"):
        build_provider(
            Settings(embedding_provider="fastembed", embedding_model_dir=model_dir, vector_size=768)
        )
    provider, _ = build_provider(
        Settings(embedding_provider="fastembed", embedding_model_dir=model_dir, vector_size=384)
    )
    assert provider.dimension == 384


def test_explicit_openai_needs_a_key_or_a_base_url(stub: OpenAIStub) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        build_provider(Settings(embedding_provider="openai"))
    settings = Settings(
        embedding_provider="openai", openai_base_url=stub.base_url, embedding_model="nomic-embed-text"
    )
    provider, warnings = build_provider(settings)
    assert provider.dimension == stub.dimension  # probed
    assert stub.requests[-1].headers["authorization"] == "Bearer not-needed"
    assert warnings == []


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDING_PROVIDER", "hash")
    monkeypatch.setenv("QDRANT_VECTOR_SIZE", "96")
    provider, _ = build_provider(Settings())
    assert provider.label == "hash:feature-hash-v1"
    assert provider.dimension == 96


# --- the real offline model --------------------------------------------------------------------

needs_model = pytest.mark.skipif(
    not (MODEL_DIR / "model.onnx").is_file(), reason=f"offline ONNX model not found at {MODEL_DIR}"
)


@pytest.fixture(scope="module")
def minilm() -> Iterator[FastEmbedProvider]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")  # restored after the module, like clean_env does
        yield FastEmbedProvider(None, str(MODEL_DIR))


@pytest.mark.semantic
@needs_model
def test_real_model_semantics(minilm: FastEmbedProvider) -> None:
    assert minilm.dimension == 384
    cat, kitten, revenue = minilm.embed(
        ["The cat sat on the mat", "A kitten is sitting on a rug", "Quarterly revenue grew 5%"]
    )
    assert all(type(x) is float for x in cat)
    assert all(len(v) == 384 and math.isclose(norm(v), 1.0, abs_tol=1e-5) for v in (cat, kitten, revenue))
    assert cosine(cat, kitten) > cosine(cat, revenue) + 0.3
    assert minilm.embed([]) == []


@pytest.mark.semantic
@needs_model
def test_real_model_is_thread_safe(minilm: FastEmbedProvider) -> None:
    texts = [f"sentence {i} about databases and caches" for i in range(8)]
    expected = minilm.embed(texts)
    results: list[list[list[float]]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(minilm.embed(texts))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for result in results:
        assert all(cosine(a, b) > 0.9999 for a, b in zip(result, expected, strict=True))


@pytest.mark.semantic
@needs_model
def test_real_model_as_a_custom_model_matches_the_builtin(minilm: FastEmbedProvider) -> None:
    """The add_custom_model path (mean pooling, normalised) gives the same vectors as fastembed's own."""
    custom = FastEmbedProvider("local/minilm-int8-custom", str(MODEL_DIR))
    assert custom.dimension == 384
    text = "Custom registration must not change the vectors"
    assert cosine(custom.embed_one(text), minilm.embed_one(text)) > 0.9999


# --- fastembed with the shipped model: the window and length-sorted batches ---------------------
WORDS = st.sampled_from(
    ["memory", "alpha", "deploy", "the", "team", "chose", "Kotlin", "noon", "review", "of", "a"]
)


def test_fastembed_reads_the_window_the_model_was_trained_on(tmp_path: Path) -> None:
    assert FastEmbedProvider(None, str(fake_model_dir(tmp_path / "m"))).max_tokens == 256
    assert FastEmbedProvider(None, str(fake_model_dir(tmp_path / "m")), max_tokens=512).max_tokens == 512
    described = fake_model_dir(tmp_path / "st")
    (described / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    assert FastEmbedProvider("acme/st-encoder-test", str(described)).max_tokens == 128
    unknown = fake_model_dir(tmp_path / "other")
    assert FastEmbedProvider("acme/other-encoder-test", str(unknown)).max_tokens == 0  # the tokenizer's


@pytest.mark.semantic
@needs_model
def test_fastembed_cuts_texts_at_the_window(minilm: FastEmbedProvider) -> None:
    """Words past the 256th token change nothing; with a 512 window they do."""
    head = " ".join(["the team reviews every deploy before noon"] * 40)  # ~280 tokens
    longer = head + " and then everyone goes to lunch together at the Italian place"
    short_head, short_longer = minilm.embed([head, longer])
    assert short_head == pytest.approx(short_longer, abs=1e-6)
    wide = FastEmbedProvider(None, str(MODEL_DIR), max_tokens=512)
    wide_head, wide_longer = wide.embed([head, longer])
    assert cosine(wide_head, wide_longer) < 0.9999


@pytest.mark.semantic
@needs_model
@examples(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.lists(WORDS, min_size=1, max_size=60).map(" ".join), min_size=1, max_size=12),
    seed=st.randoms(use_true_random=False),
)
def test_fastembed_sorted_batches_answer_in_the_callers_order(
    minilm: FastEmbedProvider, texts: list[str], seed: Any
) -> None:
    """Sorting by length into batches is invisible to the caller: any order of the same texts
    gets the same vector for each text, and each is the text's own (near its vector alone: the
    int8 model quantizes activations per batch, so a batch moves a vector slightly, as before:
    cosine 0.944 for a lone 'of' was seen)."""
    together = minilm.embed(texts)
    order = list(range(len(texts)))
    seed.shuffle(order)
    shuffled = minilm.embed([texts[i] for i in order])
    for position, i in enumerate(order):
        assert cosine(shuffled[position], together[i]) > 0.9999
    for text, vector in zip(texts, together, strict=True):
        assert cosine(vector, minilm.embed_one(text)) > 0.9


@pytest.mark.semantic
@needs_model
def test_fastembed_runs_of_one_token_give_each_text_its_lone_vector() -> None:
    """EMBEDDING_BATCH_TOKENS=1 runs every text alone: its vector is the one it gets by itself,
    whatever else the call holds (the default's runs of ~1,024 tokens move it a little)."""
    alone = FastEmbedProvider(None, str(MODEL_DIR), batch_tokens=1)
    texts = ["of", "the team chose Kotlin", "a review of every deploy before noon, as agreed"]
    together = alone.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        assert vector == alone.embed_one(text)
