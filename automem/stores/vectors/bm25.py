"""BM25 term weights for the keyword channel, stored as a sparse vector beside the dense one.

Document weights come from Qdrant Edge's own BM25 model (tokenizer, English stopwords, term
frequency saturation `k` and length normalisation against `avg_len`); the collection's sparse
vector applies IDF at query time, over the query's own scope when the adapter is given one.
Measured on LoCoMo (benchmarks/bm25_backends.md): English stopwords and stemming on, the event
date indexed as words, and mild length normalisation for short memories (the model's default
`avg_len` of 256 tokens) were best; FalkorDB's full-text index ranked far worse (RediSearch's
TFIDF scorer, not BM25) and can only filter after matching.
"""

from __future__ import annotations

import threading

import qdrant_edge as qe

SPARSE_NAME = "bm25"

# A memory's own words and its retrieval context (the start of the memory it follows) are two
# fields of one document, weighted BM25F-style: term frequencies and lengths add up with these
# weights before saturation. Own words count twice, so a reply found through the turn it answers
# still ranks below that turn for the turn's own words (at 1:1 LoCoMo's first evidence fell from
# rank ~2 to ~3; benchmarks/recall_ablation.md).
OWN_WORDS_WEIGHT = 2


class Bm25Encoder:
    def __init__(self, k: float = 1.2, b: float = 0.75, avg_len: float = 256.0) -> None:
        # English stopwords and Snowball stemming: the model's defaults for "english".
        self._model = qe.Bm25(qe.Bm25Config(k=k, b=b, avg_len=avg_len, language="english"))
        self._lock = threading.Lock()  # the model is not documented as thread-safe

    def document(self, text: str, context: str = "") -> qe.SparseVector:
        """Term weights of a memory's keyword text, with its retrieval context as a second field
        of weight 1 against OWN_WORDS_WEIGHT (the model takes text only: the weight is written
        as repetition, which adds term frequencies and length exactly as BM25F does)."""
        if context:
            text = "\n".join([text] * OWN_WORDS_WEIGHT + [context])
        with self._lock:
            return self._model.embed_document(text)

    def query(self, text: str) -> qe.SparseVector:
        with self._lock:
            return self._model.embed_query(text)
