"""Embedding throughput of the shipped local model (all-MiniLM-L6-v2, int8 ONNX) on real memory
lengths: LongMemEval_S turns (paragraphs, median ~550 characters) and LoCoMo turns (one line).

Ways to run the same model over the same texts, in calls of --call-size texts (the embedding
job's EMBEDDING_BATCH_SIZE, and a smaller call):
- `before`: fastembed as the provider first used it (the tokenizer's 512-token limit, batches
  of 64 in arrival order, each padded to its longest text);
- `sorted, 256, runs of 32 texts`: length-sorted, cut at the 256 tokens the model was trained
  on (EMBEDDING_MAX_TOKENS=0), 32 texts a model run whatever their length;
- `sorted, ..., runs of N tokens`: the provider as shipped, each run as many length-sorted
  texts as fit N tokens once padded (EMBEDDING_BATCH_TOKENS; 1,024 by default), with the 512
  limit kept for comparison, and with the window cut to 192 and 128 tokens
  (EMBEDDING_MAX_TOKENS; their recall on LongMemEval is in benchmarks/recall_ablation.md).
Also reported: how close the 256-token vectors are to the 512-token ones (cosine), for the
texts longer than 256 tokens (the only ones the window changes), and how far the token runs
move vectors from runs of 32 texts (the int8 model quantises activations per run).

    python scripts/bench/embedding.py                 # benchmarks/embedding.{json,md}
    python scripts/bench/embedding.py --texts 300     # a quicker look
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from automem.embedding.fastembed import FastEmbedProvider
from scripts.bench import locomo
from scripts.bench.common import MODEL_DIR, ROOT, log, report_title, run_meta, write_report

DATA = ROOT.parent / "shared" / "data"
Embed = Callable[[Sequence[str]], list[list[float]]]
DEFAULT_WAY = "sorted, 256, runs of 1,024 tokens (default)"  # the provider as a user runs it


def longmemeval_turns() -> list[str]:
    questions = json.loads((DATA / "longmemeval" / "lme-s-dev.json").read_text())
    return [turn["content"] for q in questions for session in q["haystack_sessions"] for turn in session]


def locomo_turns() -> list[str]:
    out: list[str] = []
    for sample in locomo.load_dataset(DATA / "locomo" / "locomo-dev.json"):
        turns, _ = locomo.extract_turns(sample)
        out.extend(locomo.build_memory(t)["content"] for t in turns)
    return out


def before(batch_size: int = 64) -> Embed:
    """The provider's embedding until now: fastembed's defaults, texts in arrival order."""
    provider = FastEmbedProvider(model_dir=str(MODEL_DIR), max_tokens=512)
    model = provider._load()

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [a.astype(float).tolist() for a in model.embed(list(texts), batch_size=batch_size)]

    return embed


def runs_of_texts(count: int = 32) -> Embed:
    """The provider until the token budget: sorted by length, cut at 256 tokens, runs of `count`
    texts whatever their length."""
    model = FastEmbedProvider(model_dir=str(MODEL_DIR))._load()

    def embed(texts: Sequence[str]) -> list[list[float]]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        arrays = list(model.embed([texts[i] for i in order], batch_size=count))
        placed: list[Any] = [None] * len(texts)
        for position, array in zip(order, arrays, strict=True):
            placed[position] = array
        return [a.astype(float).tolist() for a in placed]

    return embed


def rate(embed: Embed, texts: list[str], call_size: int) -> float:
    embed(texts[:8])  # warm: the session and the tokenizer
    started = time.perf_counter()
    for start in range(0, len(texts), call_size):
        embed(texts[start : start + call_size])
    return len(texts) / (time.perf_counter() - started)


def window_effect(texts: list[str]) -> dict[str, Any]:
    """Cosine of each long text's 256-token vector to its 512-token vector."""
    short = FastEmbedProvider(model_dir=str(MODEL_DIR))
    tokenizer = short._load().model.tokenizer  # type: ignore[attr-defined]
    long_texts = [t for t in texts if len(tokenizer.encode(t).ids) >= 256]
    if not long_texts:
        return {"texts_over_256_tokens": 0}
    wide = FastEmbedProvider(model_dir=str(MODEL_DIR), max_tokens=512)
    return {
        "texts_over_256_tokens": len(long_texts),
        "share_of_texts": round(len(long_texts) / len(texts), 3),
        **cosine_summary(wide.embed, short.embed, long_texts),
    }


def cosine_summary(first: Embed, second: Embed, texts: list[str]) -> dict[str, float]:
    """Each text's cosine between two ways of embedding it, over calls of 256 texts."""
    a = np.array([v for start in range(0, len(texts), 256) for v in first(texts[start : start + 256])])
    b = np.array([v for start in range(0, len(texts), 256) for v in second(texts[start : start + 256])])
    cosines = (a * b).sum(axis=1)
    return {"cosine_p50": round(float(np.median(cosines)), 4), "cosine_min": round(float(cosines.min()), 4)}


def shipped(**options: Any) -> Embed:
    """The provider as shipped over the shipped model, with `options` changed."""
    return FastEmbedProvider(model_dir=str(MODEL_DIR), **options).embed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000, help="texts per corpus (a seeded sample)")
    parser.add_argument("--call-sizes", default="256,32", help="texts per embed call")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args()
    rng = random.Random(7)
    lme = longmemeval_turns()
    corpora = {
        "LongMemEval_S turns": lme,
        "LongMemEval_S turns of 500-700 chars": [t for t in lme if 500 <= len(t) <= 700],
        "LoCoMo turns": locomo_turns(),
    }
    corpora = {name: rng.sample(texts, min(args.texts, len(texts))) for name, texts in corpora.items()}
    ways: dict[str, Embed] = {
        "before (512, arrival order)": before(),
        "sorted, 256, runs of 32 texts": runs_of_texts(32),
        "sorted, 512, runs of 1,024 tokens": shipped(max_tokens=512),
        "sorted, 256, runs of 512 tokens": shipped(batch_tokens=512),
        "sorted, 256, runs of 2,048 tokens": shipped(batch_tokens=2048),
        DEFAULT_WAY: shipped(),
        "sorted, 192, runs of 1,024 tokens": shipped(max_tokens=192),
        "sorted, 128, runs of 1,024 tokens": shipped(max_tokens=128),
    }
    rows = []
    for corpus, texts in corpora.items():
        chars = sorted(len(t) for t in texts)
        for call_size in (int(c) for c in args.call_sizes.split(",")):
            for way, embed in ways.items():
                per_second = rate(embed, texts, call_size)
                log(f"{corpus} ({call_size}/call) {way}: {per_second:.1f}/s")
                rows.append(
                    {
                        "corpus": corpus,
                        "median_chars": chars[len(chars) // 2],
                        "call_size": call_size,
                        "way": way,
                        "texts_per_second": round(per_second, 1),
                    }
                )
    effect = {name: window_effect(texts) for name, texts in corpora.items()}
    moved = {
        name: cosine_summary(ways["sorted, 256, runs of 32 texts"], ways[DEFAULT_WAY], texts)
        for name, texts in corpora.items()
    }
    report = {
        "meta": run_meta("embedding.py", model=MODEL_DIR.name),
        "rows": rows,
        "window_effect": effect,
        "batch_effect": moved,
    }
    return write_report(args.out, "embedding", report, render)


def render(report: dict[str, Any]) -> str:
    meta, effect = report["meta"], report["window_effect"]
    lines = [
        report_title("Embedding throughput", meta),
        "",
        f"Command: `{meta['command']}`. Model: {meta['model']} (the shipped one), one process, "
        "onnxruntime's default threads. Texts per second over a seeded sample of each corpus.",
        "",
        "| corpus | median chars | texts per call | way | texts/s |",
        "|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['corpus']} | {r['median_chars']} | {r['call_size']} | {r['way']} "
            f"| {r['texts_per_second']} |"
        )
    lines += [
        "",
        "Texts the 256-token window changes (longer than 256 tokens), and how far it moves them:",
        "",
    ]
    for corpus, found in effect.items():
        if found.get("texts_over_256_tokens"):
            lines.append(
                f"- {corpus}: {found['texts_over_256_tokens']} ({found['share_of_texts']:.1%}); cosine of "
                f"their 256-token vector to the 512-token one: median {found['cosine_p50']}, least "
                f"{found['cosine_min']}."
            )
        else:
            lines.append(f"- {corpus}: none (every vector is unchanged).")
    lines += [
        "",
        "How far runs of 1,024 tokens move vectors from runs of 32 texts (cosine, calls of 256):",
        "",
    ]
    for corpus, found in report.get("batch_effect", {}).items():
        lines.append(f"- {corpus}: median {found['cosine_p50']}, least {found['cosine_min']}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
