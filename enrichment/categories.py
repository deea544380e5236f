"""Category words: what kind of thing a memory's nouns name, from WordNet's hypernyms.

A question asks "What instruments does Melanie play?"; the memory says "playing my violin". The
words share nothing, and a short memory's vector is mostly about its other words. Enrichment
adds each noun's more general kinds (violin → bowed stringed instrument → stringed instrument →
musical instrument) to the memory's keyword document as a field of its own, so the keyword
channel finds the memory by the category a question names. Proper names get their instance
class (Spain → European country); a name WordNet does not list as an instance (most people's
names) gets nothing.

Only the most frequent sense of a word is used (WordNet lists senses by frequency), and only
kinds specific enough to say something: `CATEGORY_LEVELS` steps up from the word, none within
`CATEGORY_MIN_DEPTH` steps of WordNet's root ("entity", "object", "artifact", "act" say nothing).

The data is Princeton WordNet 3.0 as Debian's `wordnet-base` installs it (`WORDNET_DIR`,
default /usr/share/wordnet): each index file's lemmas are read once per process into a table of
their lines' offsets in the mapped file (~0.1 s and ~30 MB a worker; a binary search per word
cost a third of the enrichment time this takes), and data.noun is addressed by byte offset, so
only the synsets asked for are read.
"""

from __future__ import annotations

import logging
import mmap
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

# Steps up from a word's sense, and the least distance from WordNet's root a kind must have.
CATEGORY_LEVELS = 2
CATEGORY_MIN_DEPTH = 6
# The first words of each kind (WordNet lists a synset's most common name first; the rest are
# rarer synonyms: "bowed stringed instrument, string").
CATEGORY_SYNONYMS = 2
# At most this many category words for one memory (a long memory names many things).
CATEGORY_MAX_WORDS = 48

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
# Nouns' regular plurals, as WordNet's morphology applies them (irregular ones are in noun.exc).
_PLURALS = (
    ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
    ("ies", "y"), ("s", ""),
)  # fmt: skip
# Verbs' inflections, to find a word's verb lemma ("playing" -> "play").
_VERB_ENDINGS = (
    ("ies", "y"), ("es", "e"), ("es", ""), ("s", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")
)  # fmt: skip
# Function words and conversational filler that WordNet also lists as nouns ("yes", "way").
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """a an and are as at be but by for from had has have he her hers him his i if in into is it
        its me my no not of on or our ours she so than that the their them then there these they
        this those to us was we were what when where which who whom why will with would you your
        yours yes yeah oh hey hi wow thanks thank okay ok lot lots thing things way time times day
        days one ones kind sort bit""",
    )
)


@dataclass(frozen=True)
class Synset:
    words: tuple[str, ...]
    hypernyms: tuple[int, ...]  # "@"
    instance_of: tuple[int, ...]  # "@i"


class WordNet:
    """Nouns of a WordNet 3.0 database directory (index.noun, data.noun, noun.exc)."""

    def __init__(self, root: Path) -> None:
        self._index = _Index(root / "index.noun")
        self._data = _mapped(root / "data.noun")
        self._exceptions = _exceptions(root / "noun.exc")
        # Other parts of speech, to tell a noun from a word more often used as a verb or adjective.
        others = [root / "index.verb", root / "index.adj"]
        self._others = [_Index(path) for path in others if path.is_file()]
        verb_exceptions = root / "verb.exc"
        self._verb_exceptions = _exceptions(verb_exceptions) if verb_exceptions.is_file() else {}
        # Most word pairs of a text are no noun: a pair is looked up only when its first word
        # starts one of WordNet's multi-word nouns (or an irregular form of one).
        self.pair_starts = frozenset(
            [lemma.split("_", 1)[0] for lemma in self._index.lemmas() if "_" in lemma]
            + [form.split("_", 1)[0] for form in self._exceptions if "_" in form]
        )
        # A memory's words repeat across memories: each is looked up once per process.
        self.first_sense = lru_cache(maxsize=1 << 17)(self._first_sense)
        self.synset = lru_cache(maxsize=1 << 16)(self._read_synset)
        self.depth = lru_cache(maxsize=1 << 16)(self._depth)

    def _first_sense(self, word: str) -> int | None:
        """The offset of the most frequent noun sense of `word` (any inflection), or None when
        `word` is no noun, or is more often a verb or an adjective (by the number of senses
        WordNet's tagged corpus saw of each: "play", "young", "cool" are left out)."""
        word = word.lower()
        for lemma in self._lemmas(word):
            fields = self._index.fields(lemma)
            if fields is None:
                continue
            if _tagged(fields) < self._tagged_otherwise(word):
                return None
            return int(fields[-int(fields[2])])
        return None

    def _tagged_otherwise(self, word: str) -> int:
        most = 0
        for index in self._others:
            for lemma in self._verb_lemmas(word):
                fields = index.fields(lemma)
                if fields is not None:
                    most = max(most, _tagged(fields))
                    break
        return most

    def _verb_lemmas(self, word: str) -> Iterable[str]:
        return _base_forms(word, self._verb_exceptions, _VERB_ENDINGS)

    def _lemmas(self, word: str) -> Iterable[str]:
        return _base_forms(word, self._exceptions, _PLURALS)

    def _read_synset(self, offset: int) -> Synset:
        end = self._data.find(b"\n", offset)
        fields = self._data[offset:end].split(b" | ", 1)[0].split()
        count = int(fields[3], 16)
        words = tuple(fields[4 + 2 * i].decode().lower() for i in range(count))
        at = 4 + 2 * count
        pointers = int(fields[at])
        hypernyms: list[int] = []
        instances: list[int] = []
        for i in range(pointers):
            symbol, target, pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
            if pos != b"n":
                continue
            if symbol == b"@":
                hypernyms.append(int(target))
            elif symbol == b"@i":
                instances.append(int(target))
        return Synset(words, tuple(hypernyms), tuple(instances))

    def _depth(self, offset: int) -> int:
        """Least number of steps up to a root."""
        s = self.synset(offset)
        up = s.hypernyms + s.instance_of
        return 0 if not up else 1 + min(self.depth(o) for o in up)


def category_words(
    text: str,
    wordnet: WordNet,
    levels: int = CATEGORY_LEVELS,
    min_depth: int = CATEGORY_MIN_DEPTH,
    max_words: int = CATEGORY_MAX_WORDS,
) -> list[str]:
    """The kinds `text`'s nouns belong to, as words ("musical instrument"), most specific first
    for each noun; never a word of the text itself."""
    own = {w.lower() for w in _WORD.findall(text)}
    found: dict[str, None] = {}
    for offset in _senses(text, wordnet):
        for kind in _kinds(wordnet, offset, levels, min_depth):
            for word in wordnet.synset(kind).words[:CATEGORY_SYNONYMS]:
                name = word.replace("_", " ")
                if name not in own:
                    found.setdefault(name, None)
        if len(found) >= max_words:
            break
    return list(found)[:max_words]


def _senses(text: str, wordnet: WordNet) -> Iterable[int]:
    """The first sense of each noun of `text`: lower-case words as common nouns, capitalised
    words inside a sentence as names (only when WordNet lists that name as an instance)."""
    seen: set[int] = set()
    matches = list(_WORD.finditer(text))
    for i, match in enumerate(matches):
        word, lower = match.group(), match.group().lower()
        if lower in _STOPWORDS or len(lower) < 3:
            continue
        label = text[match.end() : match.end() + 1] == ":"  # "John: ..." names a speaker
        is_name = word[0].isupper() and (label or not _starts_sentence(text, match.start()))
        offsets = []
        if i + 1 < len(matches) and lower in wordnet.pair_starts:  # "martial arts", "East Coast"
            offsets.append(wordnet.first_sense(f"{lower}_{matches[i + 1].group().lower()}"))
        offsets.append(wordnet.first_sense(lower))
        for offset in offsets:
            if offset is None or offset in seen:
                continue
            if is_name != bool(wordnet.synset(offset).instance_of):
                continue
            seen.add(offset)
            yield offset


def _starts_sentence(text: str, at: int) -> bool:
    """Whether the word at `at` opens a sentence: the last character before it, spaces, quotes
    and brackets aside, ends one (or there is none). Read backwards from the word, not by
    copying the text before it, which made a long memory's capitalised words quadratic."""
    i = at - 1
    while i >= 0 and text[i] in " \t\"'(":
        i -= 1
    return i < 0 or text[i] in ".!?:;\n"


def _kinds(wordnet: WordNet, offset: int, levels: int, min_depth: int) -> Iterable[int]:
    """Hypernyms of `offset` up to `levels` steps (an instance's class counts as one step),
    breadth first, deep enough in the hierarchy to be specific."""
    s = wordnet.synset(offset)
    frontier = list(s.instance_of or s.hypernyms)
    for _ in range(levels):
        following: list[int] = []
        for kind in frontier:
            if wordnet.depth(kind) >= min_depth:
                yield kind
                following.extend(wordnet.synset(kind).hypernyms)
        frontier = following


def _base_forms(word: str, exceptions: dict[str, str], endings: tuple[tuple[str, str], ...]) -> Iterable[str]:
    """`word` and the forms WordNet's morphology would try for it: an irregular form's base from
    the exception list, then each regular ending replaced."""
    yield word
    if word in exceptions:
        yield exceptions[word]
    for suffix, ending in endings:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            yield word[: -len(suffix)] + ending


def _tagged(fields: list[bytes]) -> int:
    """tagsense_cnt: how many of the lemma's senses the tagged corpus saw (before the offsets)."""
    return int(fields[-int(fields[2]) - 1])


class _Index:
    """A WordNet index file (one line per lemma: `lemma pos counts ... offsets`): each lemma's
    line found through a table of offsets into the mapped file."""

    def __init__(self, path: Path) -> None:
        self._map = _mapped(path)
        self._at: dict[str, int] = {}
        at = 0
        for line in iter(self._map.readline, b""):
            if not line.startswith(b"  "):  # the licence header
                self._at[line[: line.find(b" ")].decode()] = at
            at += len(line)

    def fields(self, lemma: str) -> list[bytes] | None:
        """The fields of `lemma`'s line, or None when it has none."""
        at = self._at.get(lemma)
        if at is None:
            return None
        end = self._map.find(b"\n", at)
        return self._map[at : end if end >= 0 else len(self._map)].split()

    def lemmas(self) -> Iterable[str]:
        return self._at.keys()


def _mapped(path: Path) -> mmap.mmap:
    with path.open("rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _exceptions(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = parts[1]
    return out


@lru_cache(maxsize=4)
def load(directory: str) -> WordNet | None:
    """The WordNet at `directory`, once per process; None (category words off) when it is not
    there."""
    if not directory:
        return None
    root = Path(directory)
    if not (root / "index.noun").is_file() or not (root / "data.noun").is_file():
        log.warning("no WordNet noun database in %s: category words are off", directory)
        return None
    return WordNet(root)
