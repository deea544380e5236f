"""Each sequence scope's time range, kept in the graph so the sequence lookup knows when a side of
a memory has nothing beyond a window (Cypher fragments and their parameters; `graph.py` runs them).

`(:SeqScope {tenant, scope, lo, hi})` holds the smallest and the largest TIME_KEY any memory of
the scope was ever given. Every statement that creates a memory or moves one in time, scope or
tenant raises them in the same statement (atomic with the write), and so do the statements that
write `seq_scope` again as they derive it (enrichment, an entity merge: a store written under an
older scope rule moves there); nothing lowers them, so a
deleted or moved memory leaves the range wider than the scope, which costs a lookup one window
more but never gives a wrong neighbour. Without them, the newest memory of a scope (every
memory an agent writes as it happens) found nothing after it in the hour and day windows and
fell through to a scan of its whole scope (docs/performance.md).

The ranges are derived: backups and node counts leave them out, a restore makes them again, and
a store written before them gets them from one pass over its memories (`MIGRATE`), after which
the marker node (`MARKER`) says they are complete. A process trusts them only once it has seen
the marker: a range made by a write into an older store covers that write alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from automem.stores.time_key import TIME_KEY

SCOPE_LABEL = "SeqScope"
# A range's `scope` is the memory's `seq_scope` behind this mark: the untagged stream's scope is
# '', and FalkorDB's range index does not find '' (a MERGE on it made a second node each time).
_MARK = "~"
_KEY_OF_M = f"'{_MARK}' + coalesce(m.seq_scope, '')"
MARKER = f"MATCH (s:{SCOPE_LABEL} {{marker: 'complete'}}) RETURN count(s)"

_WIDEN = """
SET {s}.lo = CASE WHEN {s}.lo IS NULL OR {lo} < {s}.lo THEN {lo} ELSE {s}.lo END,
    {s}.hi = CASE WHEN {s}.hi IS NULL OR {hi} > {s}.hi THEN {hi} ELSE {s}.hi END
"""

# Put before a statement's own clauses: widens the ranges of `$scope_spans` (rows of
# `spans_of`) and leaves one row with `new_scopes`, the range nodes it created (so a caller that
# checks its created-node count can count them).
RAISE_FROM_SPANS = (
    f"""
UNWIND $scope_spans AS b
MERGE (s:{SCOPE_LABEL} {{tenant: b.tenant, scope: b.scope}})
WITH b, s, s.hi IS NULL AS new
"""
    + _WIDEN.format(s="s", lo="b.lo", hi="b.hi")
    + """
WITH sum(CASE WHEN new THEN 1 ELSE 0 END) AS new_scopes
"""
)

# Widens the range of memory `m`'s scope to its time (MERGE + SET, one clause each).
_RANGE_OF_M = f"""
        MERGE (sb:{SCOPE_LABEL} {{tenant: m.tenant, scope: {_KEY_OF_M}}})
""" + _WIDEN.format(s="sb", lo=f"m.{TIME_KEY}", hi=f"m.{TIME_KEY}")
# Inside a statement that has just changed memory `m`: widens its scope's range to its time.
RAISE_FROM_MEMORY = "\n        WITH *" + _RANGE_OF_M
# The same, in a statement that rewrites `seq_scope` as it derives it (enrichment): only when
# the scope moved from `was_scope`, which the statement read before its SET. Derived scopes
# match the stored ones unless the rule changed since the memory was written.
RAISE_IF_SCOPE_MOVED = (
    "\n        FOREACH (_ IN CASE WHEN was_scope <> coalesce(m.seq_scope, '') THEN [1] ELSE [] END |"
    + _RANGE_OF_M
    + ")\n"
)
# Props whose change can move a memory out of its scope's range.
MOVING_PROPS = frozenset({"timestamp", "seq_scope", "tenant"})

# The ranges of a store written before them, from its memories (idempotent), then the marker.
MIGRATE = (
    f"""
MATCH (m:Memory) WHERE m.{TIME_KEY} IS NOT NULL
WITH m.tenant AS tenant, {_KEY_OF_M} AS scope, min(m.{TIME_KEY}) AS lo,
     max(m.{TIME_KEY}) AS hi
MERGE (s:{SCOPE_LABEL} {{tenant: tenant, scope: scope}})
"""
    + _WIDEN.format(s="s", lo="lo", hi="hi")
    + "RETURN count(s)"
)
SET_MARKER = f"MERGE (:{SCOPE_LABEL} {{marker: 'complete'}})"

# A part of the sequence lookup's first query (its columns): the scope's range, one row or none.
RANGE_PART = (
    f"MATCH (s:{SCOPE_LABEL} {{tenant: $tenant, scope: $scope_key}}) "
    "RETURN 'range' AS side, [s.lo, s.hi] AS id"
)


def spans_of(props_rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """{tenant, scope, lo, hi} per scope of these memory property maps (TIME_KEY already set)."""
    spans: dict[tuple[str, str], list[int]] = {}
    for props in props_rows:
        at = props.get(TIME_KEY)
        if at is None:
            continue
        key = (str(props.get("tenant")), scope_key(props.get("seq_scope")))
        span = spans.setdefault(key, [at, at])
        span[0], span[1] = min(span[0], at), max(span[1], at)
    return [{"tenant": t, "scope": s, "lo": lo, "hi": hi} for (t, s), (lo, hi) in spans.items()]


def scope_key(seq_scope: str | None) -> str:
    """The `scope` of the range of memories whose `seq_scope` is this."""
    return _MARK + (seq_scope or "")


def nothing_beyond(op: str, at: int, span: timedelta, scope_range: tuple[int, int]) -> bool:
    """Whether the scope's range ends inside the window `span` on side `op` of `at` (so the
    window, already searched, held every memory of the scope on that side)."""
    reach = int(span.total_seconds() * 1_000_000)
    lo, hi = scope_range
    return hi <= at + reach if op == ">" else lo >= at - reach
