"""Questions with two parts: the parts a recall searches for besides the whole question.

A question that asks about two things ("Which did I buy first, the desk or the lamp?", "Did the
migration finish before the audit started?", "What do Alice and Bob both use?") is answered by
two memories that rarely resemble each other, and the whole question's embedding sits between
them. Each part is searched as well, and a memory found by any of them ranks by its best
relevance (recall.engine). The rules read English structure only, never vocabulary of a
domain:

- a choice between two options after a comma: "..., the A or the B?" -> A, B;
- a comparison: "A, compared to B" / "A compared with B" / "A versus B" -> A, B;
- two events in order, in a question about their order or the time between them ("Did/Was/
  ... A before/after B?", "How long/many days/weeks/months ... A before/after B?") -> A, B,
  without the words that ask ("How many days did it take for me to find a flat after I moved?"
  -> "find a flat", "I moved"): they describe neither event, and a part searched with them
  resembles every memory that talks about days or taking;
- two people doing the same thing: "Name1 and Name2 both ..." / "both Name1 and Name2 ..." ->
  the question once with each name.

Anything else has no parts (an empty list): the question is searched whole, as before.
"""

from __future__ import annotations

import re

MIN_PART_WORDS = 2  # a part shorter than this says too little to search for, unless it is a name

_CHOICE = re.compile(r"^(?P<head>.+?),\s*(?P<a>[^,]+?)\s*,?\s+or\s+(?P<b>[^,]+?)\s*\??\s*$", re.I)
_COMPARED = re.compile(r"^(?P<a>.+?),?\s+(?:compared (?:to|with)|versus|vs\.?)\s+(?P<b>.+?)\s*\??\s*$", re.I)
_ORDERED = re.compile(
    r"^(?P<a>(?:did|was|were|is|are|has|had|have|do|does|how (?:long|many (?:days|weeks|months|years)))\b.+?)"
    r"\s+(?:before|after)\s+(?P<b>.+?)\s*\??\s*$",
    re.I,
)
# What asks, not what happened: the question's lead before the first of two ordered events.
_LEAD = re.compile(
    r"^(?:how (?:long|many \w+)\s+)?(?:did|was|were|is|are|has|had|have|do|does)\s+"
    r"(?:it\s+take\s+(?:(?:for\s+)?(?:me|us|you|him|her|them)\s+)?to\s+)?",
    re.I,
)
_NAME = r"[A-Z][\w'\u2019-]*"
_BOTH = re.compile(rf"\b(?:both\s+)?(?P<x>{_NAME})\s+and\s+(?P<y>{_NAME})(?P<both>\s+both)?\b")


def question_parts(text: str) -> list[str]:
    """The two parts of a two-part question, or [] (see the module doc)."""
    question = " ".join(text.split())
    if not question:
        return []
    for rule in (_choice, _compared, _ordered, _both):
        parts = rule(question)
        if parts and all(_searchable(p) for p in parts):
            return parts
    return []


def _searchable(part: str) -> bool:
    """Two words or more, or one name: quoted, or capitalised and longer than an initial."""
    if len(part.split()) >= MIN_PART_WORDS:
        return True
    bare = part.strip("'\"\u2018\u2019\u201c\u201d")
    return len(bare) >= 3 and (bare != part or bare[0].isupper())


def _choice(question: str) -> list[str] | None:
    match = _CHOICE.match(question)
    if match is None:
        return None
    return [_clean(match["a"]), _clean(match["b"])]


def _compared(question: str) -> list[str] | None:
    match = _COMPARED.match(question)
    if match is None:
        return None
    return [_clean(match["a"]), _clean(match["b"])]


def _ordered(question: str) -> list[str] | None:
    match = _ORDERED.match(question)
    if match is None:
        return None
    return [_clean(_LEAD.sub("", match["a"], count=1)), _clean(match["b"])]


def _both(question: str) -> list[str] | None:
    match = _BOTH.search(question)
    if match is None or not (match["both"] or match.group(0).lower().startswith("both ")):
        return None
    span = match.span()
    trailing = match["both"] or ""
    return [
        _clean(question[: span[0]] + name + trailing.replace("both", "") + question[span[1] :])
        for name in (match["x"], match["y"])
    ]


def _clean(part: str) -> str:
    return " ".join(part.strip(" ,;:?!").split())
