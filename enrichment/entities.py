"""Rule-based entity extraction: people, tools, projects, organisations and places in memory text.

No model is available offline, so extraction is a fixed cascade of rules over one tokenisation.
Each pass claims the tokens it names, so a later, weaker pass cannot reuse them under another kind;
the order is the precedence:

1. inline code in backticks (tools); code blocks, URLs, e-mails and paths are masked out
2. speaker prefixes of transcript lines ("Alice: ...")
3. explicit declarations ("project Apollo", "the X repo", "a library called X")
4. names built on a suffix or head word ("Acme Corp", "University of X", "Central Park")
5. the curated vocabulary of tools, companies and places, with context checks for words that are
   also ordinary English words or given names
6. technology-shaped tokens (CamelCase, Next.js, gpt-4o) and unknown names after "using", "vs" ...
7. employers ("works at X", "CEO of X")
8. people, only with supporting context (title, possessive, "with X", "X said", two-part names)

Every candidate then passes quality gates (stoplists, length, shape) before it is kept. Salience:
speakers first, then explicit declarations, then everything else by first occurrence.

Ambiguities resolved by fixed rules:

* A lone word is not a person when it is a tool name and the text is technical (a technical word
  such as "deployed" or "cluster", or any tool found), nor when it opens a sentence and looks plural
  ("Benchmarks ran ...": ends in "s", not a known given name) unless a speech verb follows
  ("Jones said") or a possessive names kin or a role ("Jones's wife"). Plural work nouns
  ("Builds", "Migrations") are never name words.
* Unknown capitalised words lean organisation in company frames: "joined X", "works for X", "the team
  at X", "Priya Shah from X", "a contract with X", "acquired by X"; so do invented names fused with
  a business ending ("Initech", "Globalsoft").
* A vendor that shares its product's name (Datadog, Stripe, GitLab ...) is a tool by default ("we use
  Datadog", "deployed on Cloudflare") and an organisation in a company context: the frames above,
  "at X", or a company verb or noun after it ("Stripe announced", "the Datadog team").
* "the X repo/repository/codebase/project" and "project X" make X a project even when X is a city:
  the declaration claims the words, so "the Berlin repo" is the project only, never also the place.
  Other heads ("the Paris office", "the Berlin cluster", "the Paris service") are not declarations,
  so the gazetteer makes X a place. A separate "in Berlin" elsewhere is still the place.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from automem.tags import ENTITY_KINDS
from enrichment import vocabulary as vocab

KINDS = ENTITY_KINDS  # the core lists them: its entity routes check tags against them

SPEAKER, EXPLICIT, MENTION = 0, 1, 2  # salience ranks: lower sorts first


@dataclass(frozen=True)
class Entity:
    kind: str
    name: str
    slug: str

    @property
    def tag(self) -> str:
        return f"entity:{self.kind}:{self.slug}"


# --- slugs ------------------------------------------------------------------------------------

# Letters NFKD leaves alone although they have a conventional ascii spelling.
_ASCII_FOLD = str.maketrans(
    {
        "ß": "ss",
        "ø": "o",
        "Ø": "O",
        "æ": "ae",
        "Æ": "AE",
        "ł": "l",
        "Ł": "L",
        "đ": "d",
        "Đ": "D",
        "þ": "th",
        "Þ": "Th",
        "œ": "oe",
        "Œ": "OE",
        "\u2018": "'",
        "\u2019": "'",
    }
)
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def slugify(name: str) -> str:
    folded = unicodedata.normalize("NFKD", name.translate(_ASCII_FOLD))
    ascii_name = folded.encode("ascii", "ignore").decode("ascii").lower()
    return _NON_ALNUM.sub("-", ascii_name).strip("-")


@lru_cache(maxsize=8192)  # vocabulary names and frequent people recur across memories
def _entity_slug(name: str) -> str:
    return vocab.SLUG_OVERRIDES.get(name) or slugify(name)


# --- lexicon ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    kind: str
    display: str
    flag: str


def _build_lexicon() -> dict[str, tuple[_Entry, ...]]:
    lexicon: dict[str, list[_Entry]] = {}
    for kind, table in (("tool", vocab.TOOLS), ("organization", vocab.COMPANIES), ("place", vocab.PLACES)):
        for alias, (display, flag) in table.items():
            lexicon.setdefault(alias, []).append(_Entry(kind, display, flag))
    # A vendor sharing its product's name is also a company; context picks one (see _choose_entry).
    for alias in vocab.PRODUCT_COMPANIES:
        entries = lexicon.get(alias, [])
        tool = next((e for e in entries if e.kind == "tool"), None)
        if tool is not None and not any(e.kind == "organization" for e in entries):
            entries.append(_Entry("organization", tool.display, tool.flag))
    return {alias: tuple(entries) for alias, entries in lexicon.items()}


_LEXICON = _build_lexicon()
_MULTI_FIRST = frozenset(alias.split()[0] for alias in _LEXICON if " " in alias)
_MAX_NGRAM = max(len(alias.split()) for alias in _LEXICON)
# Unambiguous tool and company names: these words are never part of a person's name.
_FIRM_THINGS = frozenset(
    alias for alias, entries in _LEXICON.items() if any(e.flag == "" and e.kind != "place" for e in entries)
)
_FIRM_PLACES = frozenset(
    alias for alias, entries in _LEXICON.items() if any(e.flag == "" and e.kind == "place" for e in entries)
)
# Every tool alias, firm or not: in a technical text none of them is a person ("Kafka said ...").
_TOOL_ALIASES = frozenset(
    alias for alias, entries in _LEXICON.items() if any(e.kind == "tool" for e in entries)
)


# Words that can never be part of a person's name, capitalised or not.
_NOT_NAME_WORDS = frozenset().union(
    vocab.STOPWORDS,
    vocab.COMMON_WORDS,
    vocab.COMMON_NOUNS,
    vocab.TITLES,
    vocab.PERSON_TRIGGERS,
    vocab.GREETINGS,
    vocab.PERSON_VERBS,
    vocab.TOOL_TRIGGERS,
    vocab.RELATIONS,
    vocab.SWITCH_VERBS,
    vocab.WRITTEN_VERBS,
    vocab.BUILT_VERBS,
    vocab.EMPLOYMENT_WORDS,
    vocab.LEADER_WORDS,
    vocab.PLACE_PREPOSITIONS,
    vocab.CALLERS,
    vocab.TALK_VERBS,
    _FIRM_THINGS,
)


def _pick(entries: Iterable[_Entry], prefer: str) -> _Entry | None:
    entries = tuple(entries)
    return next((e for e in entries if e.kind == prefer), entries[0] if entries else None)


# --- masking ----------------------------------------------------------------------------------

_NOISE = re.compile(
    r"```.*?(?:```|\Z)"  # fenced code block
    r"|`(?P<code>[^`\n]{1,80})`"  # inline code
    r"|\b(?:https?://|www\.)\S+"  # URL
    r"|\b[\w.+-]+@[\w-]+\.[\w.-]+"  # e-mail
    r"|(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+"  # file path
    r"|<[^<>\n]{1,80}>"  # HTML tag
    r"|\b[\w.]+\([^()\n]{0,80}\)",  # function call
    re.DOTALL,
)
_NOISE_HINTS = frozenset("`/@<(")


def _mask_noise(text: str) -> tuple[str, list[tuple[int, str]]]:
    """Blank out code, URLs and paths (keeping offsets); return inline code spans separately."""
    if not _NOISE_HINTS.intersection(text):
        return text, []
    spans: list[tuple[int, str]] = []
    parts: list[str] = []
    last = 0
    for m in _NOISE.finditer(text):
        if m.group("code") is not None:
            spans.append((m.start("code"), m.group("code").strip()))
        parts.append(text[last : m.start()])
        parts.append(" " * (m.end() - m.start()))
        last = m.end()
    parts.append(text[last:])
    return "".join(parts), spans


# --- tokens -----------------------------------------------------------------------------------

# Words may carry inner dots, plus signs, hashes, apostrophes and hyphens ("Next.js", "C++",
# "O'Brien", "gpt-4o") but never end in punctuation other than + or #.
_TOKEN = re.compile(r"\.NET\b|[^\W_](?:[\w.+#'\u2019-]*[\w+#])?")
_BOUNDARY_CHARS = frozenset('.!?:;\n"“”()[]*#>•|')
_NAME_SHAPE = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
_NAME_PREFIX = re.compile(r"(?:Mc|Mac|O'|De|Di|Da|La|Le|Du|Van|Von)[A-Z]")


class _Tok:
    __slots__ = (
        "cap",
        "claimed",
        "end",
        "gap",
        "initial",
        "joined",
        "kind",
        "low",
        "name_like",
        "poss",
        "start",
        "text",
    )

    def __init__(self, text: str, start: int, gap: str, initial: bool, poss: bool) -> None:
        self.text = text
        self.low = text.lower()
        if "\u2019" in text:
            self.low = self.low.replace("\u2019", "'")
        self.start = start
        self.end = start + len(text)
        self.gap = gap
        self.initial = initial
        # Same phrase as the previous word: only spaces between, or an abbreviation's dot ("Dr. Li").
        self.joined = not initial and (gap == " " or gap.strip(" \t") in ("", "."))
        self.poss = poss
        self.cap = text[0].isupper()
        self.name_like = self.cap and _NAME_SHAPE.fullmatch(text) is not None and _title_cased(text)
        self.claimed = False
        self.kind = ""  # the kind of the entity that claimed this word


def _title_cased(word: str) -> bool:
    """ "Anna", "O'Brien", "Jean-Luc", "McDonald"; not "DIYs" or "NASA"."""
    inner = [k for k, c in enumerate(word) if k and c.isupper()]
    if not inner:
        return True
    return all(word[k - 1] in "-'\u2019" for k in inner) or _NAME_PREFIX.match(word) is not None


def _starts_sentence(gap: str, prev: _Tok | None) -> bool:
    if prev is None:
        return True
    if gap == " " or not _BOUNDARY_CHARS.intersection(gap):
        return False
    if "\n" in gap or set(gap) - {".", " ", "\t"}:
        return True
    # A lone dot after "Dr" or an initial ("J. Smith") does not end the sentence.
    return not (prev.low in vocab.ABBREVIATIONS or (len(prev.text) == 1 and prev.cap))


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    prev: _Tok | None = None
    prev_end = 0
    for m in _TOKEN.finditer(text):
        start, end = m.span()
        raw, poss = m.group(), False
        if raw[-1] in "sS" and len(raw) > 2 and raw[-2] in "'\u2019":
            raw, poss = raw[:-2], True
        gap = text[prev_end:start]
        prev = _Tok(raw, start, gap, gap != " " and _starts_sentence(gap, prev), poss)
        toks.append(prev)
        prev_end = end
    return toks


class _Doc:
    """The masked text, its tokens and the claims passes make on them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()
        self.toks = _tokenize(text)
        self.starts = [t.start for t in self.toks]
        self.lower_words = frozenset(t.low for t in self.toks if not t.cap)
        # Most passes only look at capitalised or oddly shaped words; plain lowercase words are skipped.
        self.marked = [i for i, t in enumerate(self.toks) if not (t.text.islower() and t.text.isalpha())]
        self.title_case = _is_title_case(self.toks)
        # Technical text: a technical word anywhere, or (set by the vocabulary pass) a firm tool name.
        self.tech = any(t.low in vocab.TECH_WORDS for t in self.toks)

    def low(self, i: int) -> str:
        return self.toks[i].low if 0 <= i < len(self.toks) else ""

    def span(self, start: int, end: int) -> range:
        return range(bisect_left(self.starts, start), bisect_left(self.starts, end))

    def free(self, idx: range) -> bool:
        return all(not self.toks[i].claimed for i in idx)

    def claim(self, idx: range, kind: str) -> None:
        for i in idx:
            self.toks[i].claimed = True
            self.toks[i].kind = kind

    def words(self, idx: range) -> str:
        return self.text[self.toks[idx.start].start : self.toks[idx.stop - 1].end]

    def continues(self, i: int) -> bool:
        """Token i exists and follows the previous one within a phrase."""
        return 0 < i < len(self.toks) and self.toks[i].joined

    def key(self, idx: range) -> str:
        return " ".join(self.toks[i].low for i in idx)


def _is_title_case(toks: list[_Tok]) -> bool:
    """Headings ("Quarterly Planning Review") capitalise every word, so capitals prove nothing."""
    words = [t for t in toks if t.text[0].isalpha()]
    return len(words) >= 3 and sum(t.cap for t in words) >= 0.8 * len(words)


# --- quality gates ----------------------------------------------------------------------------

_MAX_WORDS = {"organization": 6}
_ENV_VAR = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_NUMERIC = re.compile(
    r"(?i)[\d.,:/\s-]+(?:st|nd|rd|th|am|pm|ms|s|m|h|hrs?|mins?|d|days?|wks?|weeks?|mo|months?|y|yrs?"
    r"|k|kb|mb|gb|tb|%)?|[qh][1-4]|fy\d{2,4}|v\d+(?:\.\d+)*"
)
_TICKET = re.compile(r"[A-Z]{2,}-\d{2,}")
_CODE_CHARS = frozenset('()[]{}<>=/\\|;$%^*~@`"')


def _passes_gates(kind: str, name: str, vetted: bool) -> bool:
    """Reject junk. Vetted names come from the vocabulary, so only shape checks apply to them."""
    words = name.split()
    if len(words) > _MAX_WORDS.get(kind, 4) or _looks_like_code(name, kind):
        return False
    if vetted:
        return True
    letters = sum(c.isalpha() for c in name)
    if letters < (3 if kind == "person" else 2) or not name[0].isalnum():
        return False
    lows = [w.lower() for w in words]
    if " ".join(lows) in vocab.STOPWORDS or (kind == "person" and not _person_words_ok(words, lows)):
        return False
    return not name.endswith(("Error", "Exception", "Warning"))


def _looks_like_code(name: str, kind: str) -> bool:
    if _CODE_CHARS.intersection(name) or "__" in name or "::" in name:
        return True
    if _ENV_VAR.fullmatch(name) or _NUMERIC.fullmatch(name) or _TICKET.fullmatch(name):
        return True
    return kind != "project" and "_" in name


_NOT_NAME_ENDINGS = ("ently", "antly", "ously", "ally", "ately", "ively", "fully", "lessly", "ingly")


def _person_words_ok(words: list[str], lows: list[str]) -> bool:
    if any(c.isdigit() for w in words for c in w):
        return False
    # Gerunds and adverbs ("Painting", "Becoming Nicole", "Recently") are not names.
    if (len(lows[0]) > 5 and lows[0].endswith("ing")) or lows[-1].endswith(_NOT_NAME_ENDINGS):
        return False
    if any(w.endswith(vocab.CLASS_SUFFIXES) for w in words):
        return False
    # A tool or company name is never also a person; a firm place makes a team or region name.
    return not any(low in vocab.STOPWORDS or low in _FIRM_THINGS or low in _FIRM_PLACES for low in lows)


# --- accepted entities ------------------------------------------------------------------------


class _Found:
    """Accepted entities keyed by (kind, slug), each with its best (rank, position) and name."""

    def __init__(self) -> None:
        self.best: dict[tuple[str, str], tuple[int, int, str]] = {}

    def add(self, kind: str, name: str, pos: int, rank: int = MENTION, vetted: bool = False) -> bool:
        name = " ".join(name.split())
        if not name or not _passes_gates(kind, name, vetted):
            return False
        slug = _entity_slug(name)
        if not slug:
            return False
        old = self.best.get((kind, slug))
        if old is None or (rank, pos) < old[:2]:
            self.best[(kind, slug)] = (rank, pos, name)
        return True

    def ranked(self, limit: int) -> list[Entity]:
        self._drop_shadowed_persons()
        order = sorted(self.best.items(), key=lambda item: item[1][:2])
        return [Entity(kind, name, slug) for (kind, slug), (_, _, name) in order[:limit]]

    def _drop_shadowed_persons(self) -> None:
        """Drop a person named like another kind, or a first/last name of a fuller name found too."""
        others = {slug for kind, slug in self.best if kind != "person"}
        full = [slug for kind, slug in self.best if kind == "person" and "-" in slug]
        for kind, slug in list(self.best):
            if kind != "person":
                continue
            fuller = [f for f in full if slug in (f.split("-")[0], f.split("-")[-1])]
            if slug in others or fuller:
                rank, pos, _ = self.best.pop((kind, slug))
                # A fuller name still standing inherits the earlier salience (one named like
                # another kind may have gone already, in either order).
                for f in [name for name in fuller if ("person", name) in self.best]:
                    r, p, name = self.best[("person", f)]
                    self.best[("person", f)] = (*min((r, p), (rank, pos)), name)


def _add_span(doc: _Doc, found: _Found, kind: str, idx: range, rank: int = MENTION) -> bool:
    if not idx or not doc.free(idx):
        return False
    if not found.add(kind, doc.words(idx), doc.toks[idx.start].start, rank):
        return False
    doc.claim(idx, kind)
    return True


def _add_entry(doc: _Doc, found: _Found, entry: _Entry, idx: range, rank: int = MENTION) -> None:
    if doc.free(idx) and found.add(entry.kind, entry.display, doc.toks[idx.start].start, rank, vetted=True):
        doc.claim(idx, entry.kind)


# --- pass 1: inline code ----------------------------------------------------------------------

_CODE_NAME = re.compile(r"[A-Za-z][\w.+#-]{0,39}")
_FILE_LIKE = re.compile(
    r"(?i).+\.(?:py|ts|tsx|jsx|json|ya?ml|toml|md|txt|cfg|ini|lock|sh|go|rs|java|rb|html|css|env|csv|sql)"
)


def _code_tools(spans: list[tuple[int, str]], found: _Found) -> None:
    """`redis-cli`, `FastAPI`: backticks mark a technical name, unless the content is plain code."""
    for pos, code in spans:
        entry = _pick(_LEXICON.get(code.lower(), ()), "tool")
        if entry is not None:
            found.add(entry.kind, entry.display, pos, EXPLICIT, vetted=True)
        elif _code_is_name(code):
            found.add("tool", code, pos, EXPLICIT)


def _code_is_name(code: str) -> bool:
    if not _CODE_NAME.fullmatch(code) or _FILE_LIKE.fullmatch(code) or _is_code_identifier(code):
        return False
    if "." in code and not _DOTTED.fullmatch(code):
        return False  # attribute access such as `self.config`
    low = code.lower()
    return low not in vocab.STOPWORDS and low not in vocab.COMMON_WORDS and low not in vocab.CODE_WORDS


def _is_code_identifier(word: str) -> bool:
    """camelCase with a verb-like prefix ("getUser", "useState") is code, not a product."""
    m = re.match(r"[a-z]+(?=[A-Z])", word)
    return m is not None and (m.group() in vocab.CODE_PREFIXES or len(m.group()) > 2)


# --- pass 2: speakers -------------------------------------------------------------------------

_SPEAKER = re.compile(
    r"(?m)^[ \t>*•-]*(?:\[[^\]\n]{0,40}\][ \t]*|\(?\d{1,2}:\d{2}(?::\d{2})?\)?[ \t]*)?"
    r"(?P<name>[^\W\d_][\w'\u2019.-]*(?:[ \t]+[^\W\d_][\w'\u2019.-]*){0,2})[ \t]*:(?=[ \t]|$)"
)


def _speakers(doc: _Doc, found: _Found) -> None:
    if ":" not in doc.text:
        return
    for m in _SPEAKER.finditer(doc.text):
        idx = doc.span(m.start("name"), m.end("name"))
        while idx and doc.toks[idx.start].low in vocab.TITLES:
            idx = range(idx.start + 1, idx.stop)  # "Dr. Lee:" speaks as Lee
        if not idx or not doc.free(idx):
            continue
        entry = _pick(_LEXICON.get(doc.key(idx), ()), "tool")
        if entry is not None and entry.flag != vocab.NAME_LIKE:
            _add_entry(doc, found, entry, idx, SPEAKER)
        elif all(_speaker_word(doc.toks[i]) for i in idx):
            _add_span(doc, found, "person", idx, SPEAKER)


def _speaker_word(tok: _Tok) -> bool:
    return tok.name_like and tok.low not in vocab.STOPWORDS and tok.low not in vocab.COMMON_WORDS


# --- pass 3: explicit declarations ------------------------------------------------------------

_CAPS = r"[A-Z][\w.+-]*(?:[ \t]+[A-Z][\w.+-]*){0,2}"
_IDENT = r"[a-z0-9]+(?:[-_.][a-z0-9]+)+"
_QUOTED = r"[\"“'](?P<quoted>[^\"“”'\n]{2,40})[\"”']"
_PROJECT_PATTERNS = (
    re.compile(
        rf"\b[Pp]roject[ \t]+(?:(?:called|named|codenamed)[ \t]+)?(?:{_QUOTED}|(?P<name>{_CAPS}|{_IDENT}))"
    ),
    re.compile(
        rf"\b(?i:the|our|my|their|his|her|this|that|a|an)[ \t]+(?:{_QUOTED}|(?P<name>{_CAPS}|{_IDENT}))"
        r"[ \t]+(?:project|repo|repository|codebase)\b"
    ),
    re.compile(r"\b(?:repo|repository)[ \t]+(?P<name>[\w.-]+/[\w.-]+)(?P<quoted>)"),
)
_NAMED = re.compile(
    rf"\b(?P<head>{'|'.join(vocab.NAMED_HEADS)})[ \t]+(?:called|named|codenamed)[ \t]+"
    rf"(?:{_QUOTED}|(?P<name>{_CAPS}|{_IDENT}|[a-z][\w.-]+))"
)


def _declarations(doc: _Doc, found: _Found) -> None:
    if "project" in doc.lowered or "repo" in doc.lowered or "codebase" in doc.lowered:
        for pattern in _PROJECT_PATTERNS:
            for m in pattern.finditer(doc.text):
                _declared(doc, found, m, "project")
    if "called" in doc.lowered or "named" in doc.lowered:
        for m in _NAMED.finditer(doc.text):
            _declared(doc, found, m, vocab.NAMED_HEADS[m.group("head")])


def _declared(doc: _Doc, found: _Found, m: re.Match[str], kind: str) -> None:
    quoted = bool(m.group("quoted"))
    group = "quoted" if quoted else "name"
    idx = doc.span(m.start(group), m.end(group))
    key = doc.key(idx) if idx else ""
    if kind == "project" and any(e.kind != "place" for e in _LEXICON.get(key, ())):
        return  # "the React project" describes a project rather than naming it
    if not quoted and len(idx) == 1 and (key in vocab.STOPWORDS or key in vocab.COMMON_WORDS):
        return
    _add_span(doc, found, kind, idx, EXPLICIT)


# --- pass 4: names built on a suffix or head word ---------------------------------------------

_JOINERS = frozenset({"of", "and", "for", "the", "&"})


def _suffix_kind(tok: _Tok) -> str | None:
    if not tok.cap:
        return None
    word = tok.low.rstrip(".")
    if word in vocab.ORG_SUFFIXES or word in vocab.ORG_OF_HEADS:
        return "organization"
    return "place" if word in vocab.PLACE_SUFFIXES else None


def _suffixed_names(doc: _Doc, found: _Found) -> None:
    for i in doc.marked:
        tok = doc.toks[i]
        if not tok.cap or tok.claimed:
            continue
        kind = _suffix_kind(tok)
        if kind is None and tok.low not in vocab.PLACE_PREFIXES:
            continue
        if doc.continues(i + 1) and _suffix_kind(doc.toks[i + 1]):
            continue  # "Salt Lake City": let the last suffix take the whole name
        if not (kind and _suffixed(doc, found, i, kind)) and tok.cap and tok.low in vocab.PLACE_PREFIXES:
            _prefixed_place(doc, found, i)


def _suffixed(doc: _Doc, found: _Found, i: int, kind: str) -> bool:
    start = _name_start_before(doc, i)
    stop = i + 1
    if kind == "organization" and doc.toks[i].low in vocab.ORG_OF_HEADS:
        stop = _of_tail(doc, i)
    if start == i and stop == i + 1:
        return False  # a bare "University" or "Park" names nothing
    if kind == "place" and doc.low(stop) in vocab.PERSON_VERBS:
        return False  # "Jimin Park said": a surname, not a park
    return _add_span(doc, found, kind, range(start, stop))


def _name_start_before(doc: _Doc, i: int) -> int:
    """Walk back over the capitalised words (and inner "of"/"and") of the same phrase."""
    start, j = i, i - 1
    while j >= 0 and i - j <= 5 and doc.continues(j + 1) and not doc.toks[j].claimed:
        tok = doc.toks[j]
        if tok.cap and not tok.poss:
            start = j
        elif tok.low not in _JOINERS or j == 0 or not doc.toks[j - 1].cap:
            break
        j -= 1
    while start < i and (doc.toks[start].low in vocab.STOPWORDS or doc.toks[start].low in _JOINERS):
        start += 1  # "The Acme Corp", "Yesterday Acme Corp"
    return start


def _of_tail(doc: _Doc, i: int) -> int:
    """End of an "of" tail as in "University of New Mexico": up to three capitalised words."""
    if doc.low(i + 1) != "of" or not doc.continues(i + 1):
        return i + 1
    stop = i + 2
    while stop - i <= 4 and doc.continues(stop) and doc.toks[stop].cap and not doc.toks[stop].claimed:
        stop += 1
    return stop if stop > i + 2 else i + 1


def _prefixed_place(doc: _Doc, found: _Found, i: int) -> None:
    """ "Lake Tahoe", "Mount Rainier"."""
    stop = i + 1
    while stop - i <= 2 and doc.continues(stop) and doc.toks[stop].name_like:
        stop += 1
    if stop > i + 1:
        _add_span(doc, found, "place", range(i, stop))


# --- pass 5: vocabulary -----------------------------------------------------------------------


def _vocabulary(doc: _Doc, found: _Found) -> None:
    matches = list(_lexicon_matches(doc))
    # Firm tool names make a technical context in which "Ruby" or "Spring" is a tool too.
    tech = doc.tech or any(e.kind == "tool" and e.flag == "" for _, entries in matches for e in entries)
    doc.tech = tech
    for idx, entries in matches:
        entry = _choose_entry(doc, idx, entries, tech)
        if entry is not None:
            _add_entry(doc, found, entry, idx)


def _lexicon_matches(doc: _Doc) -> Iterator[tuple[range, tuple[_Entry, ...]]]:
    """Longest vocabulary matches, left to right, over unclaimed words of one phrase."""
    toks, i = doc.toks, 0
    while i < len(toks):
        if toks[i].low not in _MULTI_FIRST:
            entries = _LEXICON.get(toks[i].low)
            if entries and not toks[i].claimed:
                yield range(i, i + 1), entries
            i += 1
            continue
        for n in range(min(_MAX_NGRAM, len(toks) - i), 0, -1):
            idx = range(i, i + n)
            entries = _LEXICON.get(doc.key(idx))
            if entries and doc.free(idx) and all(doc.continues(k) for k in idx[1:]):
                yield idx, entries
                i += n - 1
                break
        i += 1


def _choose_entry(doc: _Doc, idx: range, entries: tuple[_Entry, ...], tech: bool) -> _Entry | None:
    accepted = [e for e in entries if _entry_fits(doc, idx, e, tech)]
    if len(accepted) > 1 and _company_context(doc, idx):
        return _pick(accepted, "organization")  # "joined Oracle" is the company, not the database
    return _pick(accepted, "tool")


def _company_context(doc: _Doc, idx: range) -> bool:
    """ "joined Oracle", "works for Stripe", "a contract with GitLab", "Stripe announced", "the
    Datadog team": a company acting as one, rather than its product in use."""
    return _employer_before(doc, idx.start) or (
        doc.low(idx.stop) in vocab.ORG_VERBS or doc.low(idx.stop) in vocab.ORG_NOUNS
    )


def _employer_before(doc: _Doc, i: int) -> bool:
    """The words before position i make it an employer or a party to a deal."""
    prev, prev2 = doc.low(i - 1), doc.low(i - 2)
    if prev in vocab.ORG_CONTEXT:
        return True
    if prev == "for":
        return prev2 in vocab.EMPLOYMENT_WORDS  # "works for X"
    if prev == "with":
        return prev2 in vocab.DEAL_WORDS  # "a contract with X"
    if prev == "by":
        return prev2 in vocab.ACQUIRED_WORDS  # "acquired by X"
    return prev == "from" and _person_before_from(doc, i)


def _person_before_from(doc: _Doc, i: int) -> bool:
    """ "Met Priya Shah from X", "met Priya from X", "the folks from X": people come from companies."""
    if i < 3 or not doc.continues(i - 1):
        return False
    before, before2 = doc.toks[i - 2], doc.toks[i - 3]
    if before.low in vocab.GROUP_WORDS:
        return True
    if not (before.name_like and before.low not in _NOT_NAME_WORDS and doc.continues(i - 2)):
        return False
    two_word_name = before2.name_like and before2.low not in _NOT_NAME_WORDS and not before.initial
    return two_word_name or before2.low in vocab.PERSON_TRIGGERS


def _entry_fits(doc: _Doc, idx: range, entry: _Entry, tech: bool) -> bool:
    tok = doc.toks[idx.start]
    cap = any(c.isupper() for c in tok.text)
    if entry.kind == "tool":
        return _tool_fits(doc, idx, entry.flag, cap, tech)
    if entry.kind == "organization":
        return _org_fits(doc, idx, entry.flag, cap)
    return _place_fits(doc, idx, entry.flag, cap)


def _tool_fits(doc: _Doc, idx: range, flag: str, cap: bool, tech: bool) -> bool:
    if flag == "":
        return True
    triggered = _tool_triggered(doc, idx.start)
    if flag == vocab.NAME_LIKE:
        return (triggered or (tech and cap)) and not _person_context(doc, idx)
    mid_sentence = cap and not doc.toks[idx.start].initial
    return triggered or (cap and (tech or mid_sentence) and not _inside_name(doc, idx))


def _org_fits(doc: _Doc, idx: range, flag: str, cap: bool) -> bool:
    employer = _company_context(doc, idx)
    if flag == vocab.NAME_LIKE:
        return cap and employer
    if flag == vocab.AMBIGUOUS:
        mid_sentence = cap and not doc.toks[idx.start].initial
        return cap and (employer or (mid_sentence and not _inside_name(doc, idx)))
    return employer or (cap and not _inside_name(doc, idx))


def _place_fits(doc: _Doc, idx: range, flag: str, cap: bool) -> bool:
    prep = doc.low(idx.start - 1) in vocab.PLACE_PREPOSITIONS
    if flag:
        beside_place = _followed_by_place(doc, idx.stop) or _after_place(doc, idx.start)
        return cap and (prep or beside_place) and not _person_context(doc, idx)
    if not cap:
        return prep  # "moved to lisbon"
    return len(idx) > 1 or not _inside_name(doc, idx)


def _followed_by_place(doc: _Doc, j: int) -> bool:
    """ "Austin, Texas": a comma and a firm place name right after."""
    return j < len(doc.toks) and doc.toks[j].gap.strip() == "," and doc.toks[j].low in _FIRM_PLACES


def _after_place(doc: _Doc, i: int) -> bool:
    """ "Seattle, Washington": a firm place name and a comma right before."""
    return i > 0 and doc.toks[i].gap.strip() == "," and doc.toks[i - 1].low in _FIRM_PLACES


def _inside_name(doc: _Doc, idx: range) -> bool:
    """The match sits beside an unknown capitalised word, as in "Paris Hilton" or "Taylor Swift"."""
    before = idx.start - 1 if doc.continues(idx.start) else -1
    after = idx.stop if doc.continues(idx.stop) else -1
    return any(j >= 0 and _unknown_name_word(doc.toks[j]) for j in (before, after))


def _unknown_name_word(tok: _Tok) -> bool:
    low = tok.low
    return (
        tok.name_like
        and not tok.claimed
        and low not in vocab.STOPWORDS
        and low not in vocab.COMMON_WORDS
        and low not in _LEXICON
        and _suffix_kind(tok) is None
    )


def _person_context(doc: _Doc, idx: range) -> bool:
    """Signs the word is a person: "Ruby said", "Jordan's", "Jordan Peterson"."""
    return _possessive(doc, idx) or doc.low(idx.stop) in vocab.PERSON_VERBS or _inside_name(doc, idx)


def _tool_triggered(doc: _Doc, i: int) -> bool:
    """ "using X", "X vs Y", "switched to X", "written in X", "built with X", "instead of X"."""
    prev, prev2 = doc.low(i - 1), doc.low(i - 2)
    if prev in vocab.TOOL_TRIGGERS or doc.low(i + 1) in ("vs", "versus"):
        return True
    if prev in ("to", "from"):
        return prev2 in vocab.SWITCH_VERBS
    if prev == "in":
        return prev2 in vocab.WRITTEN_VERBS
    if prev in ("with", "on"):
        return prev2 in vocab.BUILT_VERBS
    return prev == "of" and prev2 == "instead"


# --- pass 6: technology-shaped tokens and triggered names -------------------------------------

_CAMEL = re.compile(r"(?:[A-Z][a-z0-9]+[A-Z]|[A-Z]{2,}[a-z]{2,}|[a-z]{1,2}[A-Z])[\w.+#-]*")
_DOTTED = re.compile(r"[A-Z][A-Za-z0-9]*\.(?:js|ts|io|IO|ai|AI|net|NET|rs|py|jl|dev|app|so|com|sh)")
_VERSIONED = re.compile(r"(?P<prefix>[A-Za-z]{2,})-\d+(?:\.\d+)*[a-z]?(?:-[A-Za-z0-9]+)*")


def _tool_shapes(doc: _Doc, found: _Found) -> None:
    for i in doc.marked:
        tok = doc.toks[i]
        if tok.claimed:
            continue
        if _tool_shaped(tok.text):
            _add_span(doc, found, "tool", range(i, i + 1))
        elif tok.cap and _tool_triggered(doc, i):
            _triggered_tool(doc, found, i)


def _tool_shaped(word: str) -> bool:
    if _DOTTED.fullmatch(word):
        return True
    m = _VERSIONED.fullmatch(word)
    if m:
        return m.group("prefix").lower() not in vocab.VERSION_STOP
    if not _CAMEL.fullmatch(word) or _NAME_PREFIX.match(word) or _is_code_identifier(word):
        return False
    return not word.endswith(vocab.CLASS_SUFFIXES) and word.lower() not in vocab.STOPWORDS


def _triggered_tool(doc: _Doc, found: _Found, i: int) -> None:
    """ "using Zorblax", "migrated from Foo Bar": an unknown capitalised run after a tool trigger."""
    tok = doc.toks[i]
    if tok.poss or tok.low in vocab.STOPWORDS or tok.low in vocab.COMMON_WORDS:
        return
    stop = i + 1
    while stop - i < 3 and doc.continues(stop) and _org_word(doc.toks[stop]) and not doc.toks[stop - 1].poss:
        stop += 1
    _add_span(doc, found, "tool", range(i, stop))


# --- pass 7: employers ------------------------------------------------------------------------


def _employers(doc: _Doc, found: _Found) -> None:
    """ "works at Initech", "joined Hooli", "the team at Globex", "Priya from Initech", "a contract
    with Initrode", "CEO of Pied Piper"; and invented company names by shape ("Initech")."""
    for i in doc.marked:
        tok = doc.toks[i]
        if not _org_word(tok):
            continue
        if _org_frame(doc, i) or _company_shaped(tok):
            stop = i + 1
            while stop - i < 4 and doc.continues(stop) and _org_word(doc.toks[stop]):
                stop += 1
            _add_span(doc, found, "organization", range(i, stop))


def _org_word(tok: _Tok) -> bool:
    return tok.cap and not tok.claimed and tok.low not in vocab.STOPWORDS


def _org_frame(doc: _Doc, i: int) -> bool:
    prev, prev2 = doc.low(i - 1), doc.low(i - 2)
    if prev == "at" and prev2 in vocab.EMPLOYMENT_WORDS:
        return True  # "works at X", "a job at Door Dash"
    if prev == "of" and prev2 in vocab.LEADER_WORDS:
        return True  # "CEO of X"
    tok = doc.toks[i]
    # The looser frames below only take a plain unknown word: the vocabulary decides known names.
    if not tok.name_like or tok.low in _LEXICON or tok.low in _NOT_NAME_WORDS:
        return False
    if prev == "at":
        return prev2 in vocab.GROUP_WORDS  # "the team at X"
    if prev in ("joined", "joining"):
        # "joined Priya for dinner" / "joined Sam and Ana" join people, not a company.
        return doc.low(i + 1) not in ("for", "and", "on", "with", "in") and not tok.poss
    return _employer_before(doc, i)


def _company_shaped(tok: _Tok) -> bool:
    """An invented company name fused from a stem and a business ending: "Initech", "Globalsoft"."""
    low = tok.low
    return (
        tok.name_like
        and low not in _LEXICON
        and any(low.endswith(end) and len(low) >= len(end) + 3 for end in vocab.COMPANY_ENDINGS)
    )


# --- pass 8: people ---------------------------------------------------------------------------


def _persons(doc: _Doc, found: _Found) -> None:
    doc.tech = doc.tech or any(t.kind == "tool" for t in doc.toks)  # "written in Helm with Kafka"
    resume = 0
    for i in doc.marked:
        if i < resume or not _name_part(doc.toks[i]):
            continue
        resume = _name_run(doc, i)
        idx = _drop_interjection(doc, range(i, resume))
        if _person_evidence(doc, idx):
            _add_span(doc, found, "person", idx)


def _drop_interjection(doc: _Doc, idx: range) -> range:
    """ "Woah Joanna, ..." opens with an interjection and a vocative, not a two-word name."""
    if len(idx) == 2 and doc.toks[idx.start].initial and _clause_ends_after(doc, idx.stop - 1):
        return range(idx.start + 1, idx.stop)
    return idx


def _clause_ends_after(doc: _Doc, i: int) -> bool:
    rest = doc.text[doc.toks[i].end : doc.toks[i].end + 2].strip()
    return rest == "" or rest[0] in ",!?."


def _name_part(tok: _Tok) -> bool:
    return tok.name_like and not tok.claimed and tok.low not in _NOT_NAME_WORDS and _suffix_kind(tok) is None


def _name_run(doc: _Doc, i: int) -> int:
    """End of the name starting at i: up to three name words, with particles and initials between."""
    stop, names = i + 1, 1
    while names < 3 and doc.continues(stop) and not doc.toks[stop - 1].poss:
        tok = doc.toks[stop]
        if tok.low in vocab.NAME_PARTICLES or (len(tok.text) == 1 and tok.cap):
            if not (doc.continues(stop + 1) and _name_part(doc.toks[stop + 1])):
                break
            stop += 1  # "Ludwig van Beethoven", "John F. Kennedy"
        elif not _name_part(tok):
            break
        stop, names = stop + 1, names + 1
    return stop


def _person_evidence(doc: _Doc, idx: range) -> bool:
    if doc.low(idx.start - 1) in ("the", "a", "an"):
        return False  # "the Minnesota Wolves", "a Pot Pie": names of things
    if len(idx) == 1 and not _single_name_possible(doc, idx):
        return False
    if len(idx) > 1 and not doc.title_case and not _in_capitalised_phrase(doc, idx):
        return True  # "Jane Doe": two name-like words that are not common words
    if _possessive(doc, idx) or doc.low(idx.stop) in vocab.PERSON_VERBS or _introduced(doc, idx.start):
        return True
    # Weakest evidence; reject words the text also uses in lowercase, as ordinary words.
    weak = _accompanied(doc, idx.start) or _vocative(doc, idx.start)
    return len(idx) == 1 and weak and doc.toks[idx.start].low not in doc.lower_words


def _single_name_possible(doc: _Doc, idx: range) -> bool:
    """A lone word that is a tool name in a technical text, or a plural noun opening a sentence
    ("Benchmarks ran ..."), is a person only on strong evidence: a speech verb or a possessive
    followed by a kin or role word ("Jenkins's wife")."""
    tok = doc.toks[idx.start]
    tool = doc.tech and tok.low in _TOOL_ALIASES
    plural = tok.initial and _plural_shaped(tok.low)
    if not (tool or plural):
        return True
    if tool:
        return False
    if tok.poss:
        return doc.low(idx.stop) in vocab.RELATIONS
    return doc.low(idx.stop) in vocab.SPEECH_VERBS


def _plural_shaped(low: str) -> bool:
    return (
        len(low) > 3
        and low.endswith("s")
        and not low.endswith(("ss", "us", "is", "'s"))
        and low not in vocab.GIVEN_NAMES_S
    )


def _in_capitalised_phrase(doc: _Doc, idx: range) -> bool:
    """ "Chicken Pot Pie": a capitalised word mid-sentence right before makes it a title."""
    prev = doc.toks[idx.start - 1] if doc.continues(idx.start) else None
    return prev is not None and prev.cap and not prev.initial and prev.low not in vocab.TITLES


def _possessive(doc: _Doc, idx: range) -> bool:
    """ "Melanie's": but not "Yoga's been" (is/has) nor "Philosopher's Stone" (a title)."""
    if not doc.toks[idx.stop - 1].poss or idx.stop >= len(doc.toks):
        return doc.toks[idx.stop - 1].poss
    nxt = doc.toks[idx.stop]
    return not nxt.cap and nxt.low not in vocab.CONTRACTION_FOLLOWERS


def _vocative(doc: _Doc, i: int) -> bool:
    """A name addressed directly: "that's cool, Caroline!" or "Woah Joanna, ..."."""
    tok = doc.toks[i]
    if tok.initial or tok.poss:
        return False
    if tok.gap.strip() == ",":
        rest = doc.text[tok.end : tok.end + 2].strip()
        return rest == "" or rest[0] in "!?."
    opener = doc.toks[i - 1]
    return (
        opener.initial and opener.low in vocab.STOPWORDS and doc.continues(i) and _clause_ends_after(doc, i)
    )


def _introduced(doc: _Doc, i: int) -> bool:
    """A title, relation, greeting or verb right before: "Dr. Lee", "my friend Ana", "told Sam"."""
    prev, prev2 = doc.low(i - 1), doc.low(i - 2)
    if not doc.continues(i):
        # Only a greeting may be separated by a comma: "thanks, Bob".
        return prev in vocab.GREETINGS and doc.toks[i].gap.strip() == "," and not doc.toks[i].initial
    if (
        prev in vocab.TITLES
        or prev in vocab.RELATIONS
        or prev in vocab.GREETINGS
        or prev in vocab.PERSON_TRIGGERS
    ):
        return True
    if prev == "you":
        return prev2 == "thank"
    if prev == "called":
        return prev2 in vocab.CALLERS
    return prev == "to" and prev2 in vocab.TALK_VERBS


_COMPANIONS = frozenset({"i", "me", "you", "him", "her", "us", "them"})


def _accompanied(doc: _Doc, i: int) -> bool:
    """Named alongside someone: "with Bob", "me and Bob", "Alice and Bob", "Bob and I"."""
    prev = doc.low(i - 1) if doc.continues(i) else ""
    if prev == "with":
        return True
    if prev == "and" and i >= 2:
        return _companion(doc, i - 2, pair_start=i - 2)
    if doc.low(i + 1) == "and" and doc.continues(i + 1) and doc.continues(i + 2):
        return _companion(doc, i + 2, pair_start=i)
    return False


def _companion(doc: _Doc, j: int, pair_start: int) -> bool:
    """The other side of "X and Y" is a person, a pronoun or kin, or an unknown name; two unknown
    names after "to"/"in"/"using" are more likely things or places ("moved to Nomad and Consul")."""
    tok = doc.toks[j]
    if tok.kind == "person" or tok.low in _COMPANIONS or tok.low in vocab.RELATIONS:
        return True
    return _name_part(tok) and doc.low(pair_start - 1) not in vocab.THING_PREPOSITIONS


# --- entry point ------------------------------------------------------------------------------

_PASSES = (_speakers, _declarations, _suffixed_names, _vocabulary, _tool_shapes, _employers, _persons)


def extract_entities(text: str, *, limit: int = 12) -> list[Entity]:
    """Entities mentioned in text, most salient first, deduplicated by (kind, slug), at most `limit`."""
    if limit <= 0 or not text or text.isspace():
        return []
    found = _Found()
    masked, code_spans = _mask_noise(text)
    _code_tools(code_spans, found)
    doc = _Doc(masked)
    for extract in _PASSES:
        extract(doc, found)
    return found.ranked(limit)
