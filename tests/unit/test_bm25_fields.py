"""The keyword document of a memory with a retrieval context: two fields, BM25F-style, the
memory's own words weighing OWN_WORDS_WEIGHT times its context's."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from automem.stores.vectors.bm25 import OWN_WORDS_WEIGHT, Bm25Encoder

ENCODER = Bm25Encoder()
# Distinct content words (no stopwords, unchanged by the stemmer's rules for these spellings).
WORDS = ["camping", "lake", "guitar", "museum", "volcano", "recipe", "marathon", "painting"]


def _weights(text: str, context: str = "") -> dict[int, float]:
    vector = ENCODER.document(text, context)
    return dict(zip(vector.indices, vector.values, strict=True))


def _term(word: str) -> int:
    [index] = ENCODER.query(word).indices
    return int(index)


@given(st.lists(st.sampled_from(WORDS), min_size=2, max_size=6, unique=True))
def test_an_own_word_outweighs_the_same_count_of_a_context_word(words: list[str]) -> None:
    own, other = words[0], words[1]
    weights = _weights(" ".join([own, *words[2:]]), " ".join([other, *words[2:]]))
    assert weights[_term(own)] > weights[_term(other)]


def test_the_weights_are_those_of_the_fields_written_out() -> None:
    text, context = "Alice: have you been camping this summer?", "Bob: twice, the lake was freezing"
    assert OWN_WORDS_WEIGHT >= 2
    written_out = "\n".join([text] * OWN_WORDS_WEIGHT + [context])
    assert _weights(text, context) == _weights(written_out)
