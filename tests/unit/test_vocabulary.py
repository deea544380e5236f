"""The entity-extraction word lists in enrichment/data: shipped, well-formed and loaded as written."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections import defaultdict
from importlib.resources import files
from pathlib import Path

import pytest

from enrichment import vocabulary as vocab
from enrichment.entities import KINDS

DATA = files("enrichment") / "data"
TABLES = ("TOOLS", "COMPANIES", "PLACES")
WORD_LISTS = (
    "PRODUCT_COMPANIES", "ORG_SUFFIXES", "ORG_OF_HEADS", "PLACE_SUFFIXES", "PLACE_PREFIXES", "STOPWORDS",
    "COMMON_WORDS", "COMMON_NOUNS", "GIVEN_NAMES_S", "SPEECH_VERBS", "TECH_WORDS", "CLASS_SUFFIXES",
    "PERSON_VERBS", "PERSON_TRIGGERS", "GREETINGS", "THING_PREPOSITIONS", "CALLERS", "TALK_VERBS", "TITLES",
    "RELATIONS", "CONTRACTION_FOLLOWERS", "ABBREVIATIONS", "NAME_PARTICLES", "TOOL_TRIGGERS", "SWITCH_VERBS",
    "WRITTEN_VERBS", "BUILT_VERBS", "PLACE_PREPOSITIONS", "EMPLOYMENT_WORDS", "LEADER_WORDS", "ORG_CONTEXT",
    "DEAL_WORDS", "ACQUIRED_WORDS", "GROUP_WORDS", "ORG_VERBS", "ORG_NOUNS", "COMPANY_ENDINGS",
    "CODE_PREFIXES", "CODE_WORDS", "VERSION_STOP",
)  # fmt: skip
HEADS = "NAMED_HEADS"
ALL = (*TABLES, *WORD_LISTS, HEADS)
# The loader skips any line starting with "#"; the files only use "# text" and a bare "#", so a stray
# "#word" entry fails here instead of vanishing as a comment.
COMMENT = re.compile(r"#(?: |$)")


def _file(name: str) -> str:
    return f"{name.lower()}.txt"


def _text(name: str) -> str:
    return (DATA / _file(name)).read_text(encoding="utf-8")


def _entries(name: str) -> list[str]:
    """Non-comment, non-blank lines of a data file, checking the comment style on the way."""
    lines = []
    for raw in _text(name).splitlines():
        line = raw.strip()
        if line.startswith("#"):
            assert COMMENT.match(line), f"{_file(name)}: {line!r} looks like an entry, not a comment"
        elif line:
            lines.append(line)
    return lines


def test_data_files_ship_with_the_package() -> None:
    assert DATA.is_dir()
    shipped = {entry.name for entry in DATA.iterdir() if entry.name.endswith(".txt")}
    assert shipped == {_file(name) for name in ALL}
    for name in ALL:
        assert (DATA / _file(name)).is_file()


def test_package_data_globs_cover_every_file() -> None:
    """A wheel or sdist only carries the files that [tool.setuptools.package-data] names."""
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["enrichment"]
    for name in ALL:
        assert any(fnmatch.fnmatch(f"data/{_file(name)}", pattern) for pattern in globs), _file(name)


@pytest.mark.parametrize("name", ALL)
def test_each_file_has_a_header_and_entries(name: str) -> None:
    text = _text(name)
    assert text.startswith(f"# {name}: "), "the header names the constant the file feeds"
    assert "Format:" in text.split("\n\n", 1)[0]
    assert _entries(name)


@pytest.mark.parametrize("name", TABLES)
def test_tables_have_no_empty_or_conflicting_alias(name: str) -> None:
    displays: dict[str, set[str]] = defaultdict(set)
    for line in _entries(name):
        display, _, rest = line.partition(":")
        assert display.strip(), line
        aliases = [a.strip() for a in rest.split(",")]
        assert all(a.lstrip("~@") for a in aliases if a), f"empty alias in {line!r}"
        assert all(aliases) or aliases == [""], f"stray comma in {line!r}"
        for alias in [a for a in aliases if a] + [display.strip().lower()]:
            displays[alias.lstrip("~@")].add(display.strip())
    conflicts = {alias: names for alias, names in displays.items() if len(names) > 1}
    assert conflicts == {}

    table = getattr(vocab, name)
    assert table == vocab._parse_table(_text(name))
    assert set(table) == set(displays)
    assert all(alias and display and flag in ("", vocab.AMBIGUOUS, vocab.NAME_LIKE)
               for alias, (display, flag) in table.items())  # fmt: skip


def test_tables_keep_flags_and_unicode() -> None:
    assert vocab.TOOLS["go"] == ("Go", "~")
    assert vocab.TOOLS["golang"] == ("Go", "")
    assert vocab.TOOLS["c#"] == ("C#", "")
    assert vocab.PLACES["jordan"] == ("Jordan", "@")
    assert vocab.PLACES["bogotá"] == vocab.PLACES["bogota"] == ("Bogotá", "")
    assert vocab.PLACES["washington dc"] == ("Washington, D.C.", "")
    assert vocab.COMPANIES["alphabet"] == ("Google", "~")


def test_loading_is_deterministic() -> None:
    for name in TABLES:
        first, second = vocab._parse_table(_text(name)), vocab._parse_table(_text(name))
        assert list(first.items()) == list(second.items()) == list(getattr(vocab, name).items())
    assert list(vocab._parse_heads(_text(HEADS)).items()) == list(vocab.NAMED_HEADS.items())


@pytest.mark.parametrize("name", WORD_LISTS)
def test_word_lists_load_as_written(name: str) -> None:
    words = [word for line in _entries(name) for word in line.split()]
    assert not any(word.startswith("#") for word in words)
    loaded = getattr(vocab, name)
    assert isinstance(loaded, tuple if name in ("CLASS_SUFFIXES", "COMPANY_ENDINGS") else frozenset)
    assert set(loaded) == set(words)


def test_named_heads_map_to_entity_kinds() -> None:
    assert vocab.NAMED_HEADS["repo"] == "project"
    assert vocab.NAMED_HEADS["library"] == "tool"
    assert set(vocab.NAMED_HEADS.values()) <= set(KINDS)
    assert all(head and " " not in head for head in vocab.NAMED_HEADS)


@pytest.mark.parametrize(
    "text",
    [": js", "Foo: ~", "Foo: bar, @", "Go: go\nGolang: go", "Spring: ~spring\nSpring Boot: spring"],
)
def test_malformed_tables_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        vocab._parse_table(text)


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# header: not an entry\n\nC#: csharp\n  # indented comment\nGo: ~go\n"
    assert vocab._parse_table(text) == {"csharp": ("C#", ""), "c#": ("C#", ""), "go": ("Go", "~")}
    assert vocab._parse_words("# a b\nc d\n\n  e\n") == frozenset("cde")
