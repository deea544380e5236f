"""Query-side entities: the entities a query names, linked to the tenant's `:Entity` nodes.

Enrichment extracts entities from memories with context rules (automem's worker side); a query
is too short for those rules, so it is linked the other way round: every run of one to three
words of the query is folded to a slug the way entity slugs are ("Next.js" -> "next-js",
"José Ruiz" -> "jose-ruiz") and looked up among the tenant's entity slugs, of any kind. What
exists is what the query names. Runs that start or end with a common word ("the", "did",
"what") are not looked up.

A linked entity is weighted by how specific it is, 1 / (1 + ln mentions) (the measure graph
expansion uses): a project or tool mentioned by three memories is strong evidence, a person
mentioned in half the store is weak. It acts twice:
- as a prior: a candidate that mentions it (its `entity:<kind>:<slug>` tag) gains ENTITY_WEIGHT x
  specificity in the final score (fusion.final_scores);
- as a channel: the memories of a rare entity (at most RARE_MENTIONS) join the candidates with
  LINK_WEIGHT x specificity as graph evidence, so a memory that names what was asked about is
  found even when its words and vector are far from the question's.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from automem.recall.fusion import CandidatePool
from automem.tags import ENTITY_TAG_PREFIX

MAX_WORDS = 3  # longest run of query words looked up as one name
RARE_MENTIONS = 20  # an entity mentioned at most this often brings its memories in
PER_ENTITY = 10  # memories one rare entity brings in, newest first
LINK_WEIGHT = 0.6  # the evidence a rare entity's memory inherits, times its specificity

_WORD = re.compile(r"[^\W_](?:[\w.+#'\u2019-]*[\w+#])?")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# An English possessive or "is"/"has" contraction ending a word: "Melanie's kids" names Melanie
# (enrichment reads the possessive as its own token, so the slug it writes is "melanie").
_POSSESSIVE = re.compile(r"['\u2019]s?$", re.IGNORECASE)
# Words that name nothing on their own (question words, auxiliaries, pronouns, determiners,
# prepositions): no name starts or ends with one.
_COMMON_WORDS = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves ever also like get got go went made
    make many much one ones thing things time times way ways yes
"""
COMMON = frozenset(_COMMON_WORDS.split())


@dataclass(frozen=True)
class LinkedEntity:
    key: str
    kind: str
    slug: str
    name: str
    mentions: int
    memories: list[str] = field(default_factory=list)

    @property
    def tag(self) -> str:
        return f"{ENTITY_TAG_PREFIX}{self.kind}:{self.slug}"

    @property
    def specificity(self) -> float:
        return specificity(self.mentions)


def specificity(mentions: int) -> float:
    """1 for an entity one memory mentions, falling slowly as more do."""
    return 1.0 / (1.0 + math.log(max(1, mentions)))


def fold(text: str) -> str:
    """A name as entity slugs spell it: no case, accents or separators."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _NON_ALNUM.sub("-", ascii_text.lower()).strip("-")


def query_slugs(text: str, max_words: int = MAX_WORDS) -> list[str]:
    """The slugs of every run of up to `max_words` words that neither starts nor ends with a
    common word."""
    words = [_POSSESSIVE.sub("", word) for word in _WORD.findall(text)]
    slugs: dict[str, None] = {}
    for start in range(len(words)):
        for size in range(1, max_words + 1):
            run = words[start : start + size]
            if len(run) < size or run[0].lower() in COMMON or run[-1].lower() in COMMON:
                continue  # a name neither starts nor ends with a common word
            slug = fold(" ".join(run))
            if len(slug) >= 2:
                slugs[slug] = None
    return list(slugs)


def entity_tags(linked: Sequence[LinkedEntity]) -> dict[str, float]:
    """entity tag -> specificity, the prior fusion.final_scores applies."""
    return {e.tag: e.specificity for e in linked}


def admit_linked(pool: CandidatePool, linked: Sequence[LinkedEntity]) -> dict[str, float]:
    """Bring the memories of rare linked entities into the pool, with LINK_WEIGHT x specificity
    as relevance where that is more than they have; the entity tags for the final prior."""
    for entity in linked:
        value = LINK_WEIGHT * entity.specificity
        for memory_id in entity.memories:
            candidate = pool.get(memory_id)
            if value > candidate.components.get("relevance", 0.0):
                candidate.components["relevance"] = value
            candidate.components["entity_link"] = round(
                max(value, candidate.components.get("entity_link", 0.0)), 4
            )
    return entity_tags(linked)


def named_tags(pool: CandidatePool, slugs: frozenset[str]) -> frozenset[str]:
    """The tags of the pool's read memories that the query names: a tag whose last part, folded
    as entity slugs are (`speaker:Melanie` -> "melanie"), is one of the query's `slugs`
    (`query_slugs`). Entity tags are left to entity linking, which weighs them by specificity."""
    if not slugs:
        return frozenset()
    found = set()
    for candidate in pool.values():
        for tag in candidate.doc.tags if candidate.doc is not None else ():
            if not tag.startswith(ENTITY_TAG_PREFIX) and fold(tag.rsplit(":", 1)[-1]) in slugs:
                found.add(tag)
    return frozenset(found)
