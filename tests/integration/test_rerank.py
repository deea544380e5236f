"""Optional cross-encoder re-ranking, through fastembed and onnxruntime, with a toy model.

No real cross-encoder can be fetched here, so the model is built for the test: the shared
MiniLM's tokenizer files and an ONNX graph whose logit counts one word's tokens in the
(query, memory) pair. Everything else (fastembed's loading and tokenising, onnxruntime, the
recall pipeline) is the real thing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from automem.embedding.rerank import CrossEncoderReranker, open_reranker
from automem.errors import ConfigurationError
from automem.settings import Settings
from tests.conftest import MODEL_DIR, Api
from tests.integration.test_recall_api import contents, recall, store

onnx = pytest.importorskip("onnx")

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
MARKER = "zebra"


def _token_id(word: str) -> int:
    vocab = json.loads((MODEL_DIR / "tokenizer.json").read_text())["model"]["vocab"]
    return int(vocab[word])


def write_toy_cross_encoder(target: Path, *, broken: bool = False) -> Path:
    """A cross-encoder whose logit is 6 x (how often MARKER occurs in the pair) - 3."""
    from onnx import TensorProto, helper

    target.mkdir(parents=True)
    for name in TOKENIZER_FILES:
        shutil.copy(MODEL_DIR / name, target / name)
    if broken:
        (target / "model.onnx").write_bytes(b"not an onnx model")
        return target
    batch_by_tokens = ["batch", "tokens"]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, batch_by_tokens)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["marker"],
            value=helper.make_tensor("m", TensorProto.INT64, [], [_token_id(MARKER)]),
        ),
        helper.make_node("Equal", ["input_ids", "marker"], ["is_marker"]),
        helper.make_node("Cast", ["is_marker"], ["hits"], to=TensorProto.FLOAT),
        helper.make_node(
            "Constant", [], ["axis"], value=helper.make_tensor("a", TensorProto.INT64, [1], [1])
        ),
        helper.make_node("ReduceSum", ["hits", "axis"], ["count"], keepdims=1),
        helper.make_node(
            "Constant", [], ["six"], value=helper.make_tensor("s", TensorProto.FLOAT, [], [6.0])
        ),
        helper.make_node(
            "Constant", [], ["three"], value=helper.make_tensor("t", TensorProto.FLOAT, [], [3.0])
        ),
        helper.make_node("Mul", ["count", "six"], ["scaled"]),
        helper.make_node("Sub", ["scaled", "three"], ["logits"]),
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    graph = helper.make_graph(nodes, "toy_cross_encoder", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(target / "model.onnx"))
    return target


@pytest.fixture
def toy_model(tmp_path: Path) -> Path:
    return write_toy_cross_encoder(tmp_path / "toy-reranker")


@pytest.fixture
def settings(settings: Settings, toy_model: Path) -> Settings:
    """The app of this module re-ranks with the toy model."""
    return settings.model_copy(
        update={"recall_rerank_model_dir": str(toy_model), "recall_rerank_model": "test/toy-reranker"}
    )


def fused(app: Flask, api: Api, **params: Any) -> dict[str, Any]:
    """The same recall without the re-ranker."""
    engine = app.extensions["automem.recall"]
    reranker, engine.reranker = engine.reranker, None
    try:
        return recall(api, **params)
    finally:
        engine.reranker = reranker


def test_the_reranker_scores_pairs_as_probabilities(toy_model: Path) -> None:
    reranker = CrossEncoderReranker("test/toy-reranker", str(toy_model))
    plain, marked = reranker.scores("which animal", ["a horse in a field", f"a {MARKER} in a field"])
    assert 0.0 < plain < 0.1 < 0.9 < marked < 1.0
    assert reranker.scores("anything", []) == []


def _memories(api: Api, jobs: Any) -> None:
    store(api, "Deploy checklist for the api service, step by step")
    store(api, "Deploy checklist api service notes")
    store(api, f"A {MARKER} sticker marks the deploy laptop")
    jobs()


def test_recall_orders_the_best_candidates_by_the_cross_encoder(app: Flask, api: Api, jobs: Any) -> None:
    _memories(api, jobs)
    query = "deploy checklist api service"
    before = fused(app, api, query=query, limit=3)
    assert MARKER not in contents(before)[0]
    reranked = recall(api, query=query, limit=3)
    assert MARKER in contents(reranked)[0]
    assert sorted(contents(reranked)) == sorted(contents(before))
    top = reranked["results"][0]
    assert top["score_components"]["rerank"] > 0.9
    scores = [r["final_score"] for r in reranked["results"]]
    assert scores == sorted(scores, reverse=True)
    assert "rerank" in reranked["timings_ms"] and "rerank" not in before["timings_ms"]


def test_listings_and_time_sorted_recalls_are_not_reranked(api: Api, jobs: Any) -> None:
    _memories(api, jobs)
    for params in ({"limit": 3}, {"query": "deploy checklist", "sort": "time_desc", "limit": 3}):
        body = recall(api, **params)
        assert "rerank" not in body["timings_ms"], params


def test_a_model_that_fails_leaves_the_fused_order_and_says_so(
    app: Flask, api: Api, jobs: Any, tmp_path: Path
) -> None:
    _memories(api, jobs)
    before = fused(app, api, query="deploy checklist api service", limit=3)
    broken = write_toy_cross_encoder(tmp_path / "broken", broken=True)
    app.extensions["automem.recall"].reranker = CrossEncoderReranker("test/broken-reranker", str(broken))
    body = recall(api, query="deploy checklist api service", limit=3)
    assert body["degraded"] == ["rerank"]
    assert contents(body) == contents(before)


def test_a_model_directory_without_its_files_is_a_configuration_error(
    settings: Settings, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigurationError, match=r"tokenizer\.json.*model\.onnx"):
        open_reranker(settings.model_copy(update={"recall_rerank_model_dir": str(empty)}))
    assert open_reranker(settings.model_copy(update={"recall_rerank_model_dir": None})) is None
