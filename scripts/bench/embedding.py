"""Embedding throughput of the shipped local model (all-MiniLM-L6-v2, int8 ONNX) on real memory
lengths: LongMemEval_S turns (paragraphs, median ~550 characters) and LoCoMo turns (one line).

Three ways to run the same model over the same texts, in calls of --call-size texts (the
embedding job's EMBEDDING_BATCH_SIZE, and a larger call):
- `before`: fastembed as the provider used it until now (the tokenizer's 512-token limit,
  batches in arrival order, each padded to its longest text);
- `sorted, 512`: the provider with length-sorted batches, the 512 limit kept;
- `sorted, 256 (default)`: the provider as shipped: length-sorted, cut at the 256 tokens the
  model was trained on (EMBEDDING_MAX_TOKENS=0).
Also reported: how close the 256-token vectors are to the 512-token ones (cosine), for the
texts longer than 256 tokens (the only ones the window changes).

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
from scripts.bench.common import MODEL_DIR, ROOT, log, run_meta, write_report

DATA = ROOT.parent / "shared" / "data"
Embed = Callable[[Sequence[str]], list[list[float]]]


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
    a = np.array(FastEmbedProvider(model_dir=str(MODEL_DIR), max_tokens=512).embed(long_texts))
    b = np.array(short.embed(long_texts))
    cosines = (a * b).sum(axis=1)
    return {
        "texts_over_256_tokens": len(long_texts),
        "share_of_texts": round(len(long_texts) / len(texts), 3),
        "cosine_p50": round(float(np.median(cosines)), 4),
        "cosine_min": round(float(cosines.min()), 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000, help="texts per corpus (a seeded sample)")
    parser.add_argument("--call-sizes", default="32,256", help="texts per embed call")
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
        "sorted, 512": FastEmbedProvider(model_dir=str(MODEL_DIR), max_tokens=512).embed,
        "sorted, 256 (default)": FastEmbedProvider(model_dir=str(MODEL_DIR)).embed,
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
    report = {"meta": run_meta("embedding.py", model=MODEL_DIR.name), "rows": rows, "window_effect": effect}
    return write_report(args.out, "embedding", report, render)


def render(report: dict[str, Any]) -> str:
    meta, effect = report["meta"], report["window_effect"]
    lines = [
        f"# Embedding throughput ({meta['date']}, {meta['machine']['cores']} cores, "
        f"commit {meta['git_commit']})",
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
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
