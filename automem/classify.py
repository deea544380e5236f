"""Memory types and the regex classifier used on the request path.

The seven canonical types come from AutoMem. The classifier scores every type by how many of its
word-bounded patterns match and picks the best (earlier types win ties), unlike AutoMem's
first-match substring rules where "when" anywhere made a memory Context. No match: Context at
confidence 0.3, which marks it for LLM classification when an LLM is configured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MEMORY_TYPES = ("Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context")
DEFAULT_TYPE = "Context"
DEFAULT_CONFIDENCE = 0.3
EXPLICIT_TYPE_CONFIDENCE = 0.9

_CANONICAL = {t.lower(): t for t in MEMORY_TYPES}

_PATTERNS: dict[str, tuple[str, ...]] = {
    "Decision": (
        r"\bdecided (to|on|against)\b",
        r"\bchose\b",
        r"\bchosen\b",
        r"\bgoing with\b",
        r"\bopted (for|to)\b",
        r"\bwe will use\b",
        r"\bwill use\b",
        r"\bselected\b",
        r"\bpicked\b",
        r"\bsettled on\b",
        r"\bdecision\b",
        r"\bswitch(ed)? (to|from)\b",
    ),
    "Pattern": (
        r"\busually\b",
        r"\btypically\b",
        r"\btends? to\b",
        r"\bpattern\b",
        r"\brecurring\b",
        r"\bfrequently\b",
        r"\bconsistently\b",
        r"\bwhenever\b",
        r"\bkeeps? (happening|failing)\b",
    ),
    "Preference": (
        r"\bprefers?\b",
        r"\bpreferred\b",
        r"\bfavou?rite\b",
        r"\brather than\b",
        r"\binstead of\b",
        r"\blikes?\b.*\bbetter\b",
        r"\balways use\b",
        r"\bfavou?rs?\b",
        r"\bdislikes?\b",
        r"\bhates?\b",
    ),
    "Style": (
        r"\bstyle\b",
        r"\btone\b",
        r"\bformatt?(ed|ing)? (as|with)\b",
        r"\bnaming convention\b",
        r"\bconventions?\b",
        r"\bindentation\b",
        r"\bcamel ?case\b",
        r"\bsnake_case\b",
        r"\bwritten in\b",
    ),
    "Habit": (
        r"\bevery (day|morning|evening|week|time)\b",
        r"\bdaily\b",
        r"\bweekly\b",
        r"\bmonthly\b",
        r"\broutine\b",
        r"\bhabitually\b",
        r"\bhabit\b",
        r"\balways\b(?! use)",
    ),
    "Insight": (
        r"\brealized\b",
        r"\brealised\b",
        r"\bdiscovered\b",
        r"\blearned that\b",
        r"\bturns out\b",
        r"\bfigured out\b",
        r"\binsight\b",
        r"\broot cause\b",
        r"\blesson\b",
        r"\bunderstood\b",
    ),
    "Context": (
        r"\bduring\b",
        r"\bwhile working on\b",
        r"\bin the context of\b",
        r"\bat the time\b",
        r"\bbackground\b",
        r"\bcurrently\b",
        r"\bproject\b",
    ),
}
_COMPILED = {t: tuple(re.compile(p) for p in ps) for t, ps in _PATTERNS.items()}
# One alternation per type answers "does any of its patterns match?" in a single scan; the
# patterns are counted one by one only for the types that pass (the same count, ~6x faster).
_ANY = {t: re.compile("|".join(f"(?:{p})" for p in ps)) for t, ps in _PATTERNS.items()}


@dataclass(frozen=True)
class Classification:
    type: str
    confidence: float
    method: str  # "explicit", "regex" or "default"


def canonical_type(name: str) -> str | None:
    """The canonical spelling of a type name (case-insensitive), or None if it is not one of the 7."""
    return _CANONICAL.get(name.strip().lower())


def classify(content: str) -> Classification:
    text = content.lower()
    best_type, best_hits = DEFAULT_TYPE, 0
    for memory_type in MEMORY_TYPES:
        if not _ANY[memory_type].search(text):
            continue
        hits = sum(1 for pattern in _COMPILED[memory_type] if pattern.search(text))
        if hits > best_hits:
            best_type, best_hits = memory_type, hits
    if best_hits == 0:
        return Classification(DEFAULT_TYPE, DEFAULT_CONFIDENCE, "default")
    return Classification(best_type, min(0.95, 0.5 + 0.1 * best_hits), "regex")
