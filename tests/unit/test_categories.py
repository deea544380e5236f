"""Category words from WordNet (Debian's wordnet-base, as `.ci/run` installs it): the kinds a
memory's nouns name, for the keyword index."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from automem.settings import Settings
from enrichment.categories import CATEGORY_MAX_WORDS, WordNet, category_words, load

WORDNET_DIR = Settings.model_fields["wordnet_dir"].default


@pytest.fixture(scope="module")
def wordnet() -> WordNet:
    found = load(WORDNET_DIR)
    assert found is not None, f"no WordNet at {WORDNET_DIR}: apt-get install wordnet-base"
    return found


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Melanie: I unwind by playing my violin.", "stringed instrument"),
        ("Yeah, I play clarinet! Started when I was young.", "reed instrument"),
        ("Two violins and a cello.", "stringed instrument"),  # a plural
        ("Last year I took a solo trip and took this pic in Spain.", "european country"),  # a name
        ("John: I'm off to do some taekwondo!", "martial art"),
        ("I went to the shelter with my dog.", "domestic animal"),
    ],
)
def test_a_noun_brings_the_kinds_it_belongs_to(wordnet: WordNet, text: str, kind: str) -> None:
    assert kind in category_words(text, wordnet)


def test_words_more_often_verbs_or_adjectives_bring_nothing(wordnet: WordNet) -> None:
    # "play" (a theatre play), "young" (young animals), "cool" (coldness) as nouns are rarer
    # than as the verb and adjectives the sentence uses.
    assert category_words("We play it cool when we are young.", wordnet) == []


def test_a_speakers_name_and_a_sentence_start_are_not_common_nouns(wordnet: WordNet) -> None:
    # "john" is first a toilet in WordNet: as a speaker's label it is a name, which WordNet
    # does not list as an instance of anything, so it brings nothing.
    assert category_words("John: hello there.", wordnet) == []
    # "Spain" opening a sentence is still only a name when WordNet says so (an instance).
    assert "european country" not in category_words("Spain is lovely.", wordnet)


def test_two_word_names_are_looked_up_whole(wordnet: WordNet) -> None:
    assert "martial art" not in category_words("He paints.", wordnet)
    assert "self-defense" in category_words("She studies martial arts.", wordnet)


def test_every_index_line_is_found_by_its_lemma(wordnet: WordNet) -> None:
    # The offset table against a plain reading of the file: each lemma's own line, nothing for
    # a word that has none, and each multi-word lemma's first word among the pair starts (a
    # pair is looked up only then).
    lines = [
        line.split()
        for line in (Path(WORDNET_DIR) / "index.noun").read_bytes().splitlines()
        if not line.startswith(b"  ")
    ]
    index = wordnet._index
    assert all(index.fields(fields[0].decode()) == fields for fields in lines)
    assert index.fields("violinx") is None and index.fields("") is None
    assert all(f[0].decode().split("_")[0] in wordnet.pair_starts for f in lines if b"_" in f[0])
    assert "my" not in wordnet.pair_starts and "martial" in wordnet.pair_starts


def test_a_load_without_a_database_is_off(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert load(str(tmp_path)) is None
    assert "category words are off" in caplog.text
    assert load("") is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii"), max_size=400))
def test_any_text_gives_new_words_only_and_a_bounded_number(text: str) -> None:
    wordnet = load(WORDNET_DIR)
    assert wordnet is not None
    found = category_words(text, wordnet)
    assert len(found) <= CATEGORY_MAX_WORDS
    assert len(found) == len(set(found))
    own = {w.lower() for w in text.replace("-", " ").split()}
    assert not [word for word in found if " " not in word and word in own]
