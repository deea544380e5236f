"""The relationship registry: which edge types exist, which clients may author, what they carry."""

from __future__ import annotations

AUTHORABLE: dict[str, tuple[str, ...]] = {
    # type: extra properties copied from the associate body (besides strength)
    "RELATES_TO": (),
    "LEADS_TO": (),
    "OCCURRED_BEFORE": (),
    "PREFERS_OVER": ("context", "reason"),
    "EXEMPLIFIES": ("pattern_type", "confidence"),
    "CONTRADICTS": ("resolution", "reason"),
    "REINFORCES": ("observations",),
    "INVALIDATED_BY": ("reason", "timestamp"),
    "EVOLVED_INTO": ("confidence", "reason"),
    "DERIVED_FROM": ("transformation", "confidence"),
    "PART_OF": ("role", "context"),
}
SYSTEM = ("SIMILAR_TO", "PRECEDED_BY", "DISCOVERED", "MENTIONS")
ALL_TYPES = (*AUTHORABLE, *SYSTEM)
# Edges between two memories (MENTIONS goes from a memory to an :Entity node).
MEMORY_LINKS = tuple(t for t in ALL_TYPES if t != "MENTIONS")
# What clients see as relations (GET /graph/relations): DISCOVERED, consolidation's speculative
# links, stays internal as in AutoMem.
PUBLIC = tuple(t for t in MEMORY_LINKS if t != "DISCOVERED")
# (old)-[:INVALIDATED_BY|EVOLVED_INTO]->(new): old is replaced by new.
SUPERSEDING = ("INVALIDATED_BY", "EVOLVED_INTO")
DEFAULT_STRENGTH = 0.5
# AutoMem's older names for what consolidation now writes as DISCOVERED (with a `kind`).
LEGACY = {"EXPLAINS": "DISCOVERED", "SHARES_THEME": "DISCOVERED", "PARALLEL_CONTEXT": "DISCOVERED"}


def canonical_relation(name: str) -> str | None:
    upper = name.strip().upper()
    upper = LEGACY.get(upper, upper)
    return upper if upper in ALL_TYPES else None
