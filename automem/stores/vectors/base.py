"""The vector-store interface shared by the Qdrant Edge and Qdrant server adapters.

Filters are written in a small backend-neutral form (`Match`, `Range`, `IsNull`, `Filter`) that
each adapter translates into its own client's models, so recall code never imports a Qdrant
package. Every point carries a `rev` in its payload: the graph's revision counter for that
memory. `upsert` never replaces a point whose stored `rev` is equal or newer, so a slow writer
holding an old snapshot of the graph can never overwrite a newer one (a forced repair rewrites
points of the same `rev`, never newer ones).
"""

from __future__ import annotations

import abc
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

from automem.errors import DimensionMismatch
from automem.timeutil import parse_iso


@dataclass(frozen=True)
class Match:
    """Payload `field` equals any of `values` (for list fields: any element equals any value)."""

    field: str
    values: tuple[str | int | bool, ...]


@dataclass(frozen=True)
class Range:
    """Numeric (`kind="float"`) or ISO-8601 datetime (`kind="datetime"`) range on a payload field."""

    field: str
    gte: float | str | None = None
    gt: float | str | None = None
    lte: float | str | None = None
    lt: float | str | None = None
    kind: Literal["float", "datetime"] = "float"


@dataclass(frozen=True)
class IsNull:
    """Payload `field` is null or absent."""

    field: str


@dataclass(frozen=True)
class HasId:
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Filter:
    """All of `must`, at least one of `should` (when given), none of `must_not`."""

    must: tuple[Condition, ...] = ()
    should: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()


Condition = Match | Range | IsNull | HasId | Filter


def payload_matches(flt: Filter, point_id: str, payload: Mapping[str, Any]) -> bool:
    """Whether a point with this id and payload passes `flt`, decided as the engines decide it
    (for a payload the vector store does not hold yet: see `automem.listing`). A condition on a
    list field holds when one element meets it; an absent or null field meets no Match or Range."""
    return (
        all(_meets(c, point_id, payload) for c in flt.must)
        and (not flt.should or any(_meets(c, point_id, payload) for c in flt.should))
        and not any(_meets(c, point_id, payload) for c in flt.must_not)
    )


def _meets(cond: Condition, point_id: str, payload: Mapping[str, Any]) -> bool:
    if isinstance(cond, Filter):
        return payload_matches(cond, point_id, payload)
    if isinstance(cond, HasId):
        return point_id in cond.ids
    value = payload.get(cond.field)
    values = value if isinstance(value, list) else [] if value is None else [value]
    if isinstance(cond, IsNull):  # Qdrant's is_empty
        return not values
    if isinstance(cond, Match):
        return any(v in cond.values for v in values)
    return any(_in_range(cond, v) for v in values)


def _in_range(cond: Range, value: Any) -> bool:
    convert = as_moment if cond.kind == "datetime" else _as_number
    at = convert(value)
    bounds = (
        (cond.gte, operator.ge),
        (cond.gt, operator.gt),
        (cond.lte, operator.le),
        (cond.lt, operator.lt),
    )
    return at is not None and all(
        bound is None or ((limit := convert(bound)) is not None and compare(at, limit))
        for bound, compare in bounds
    )


def as_moment(value: Any) -> datetime | None:
    try:
        return parse_iso(str(value))
    except ValueError:
        return None


def _as_number(value: Any) -> float | None:
    return None if isinstance(value, bool) or not isinstance(value, int | float) else float(value)


@dataclass(frozen=True)
class VectorPoint:
    """One memory: its dense vector (None until embedded), the text its keyword index holds and
    the second field indexed beside it at a lower weight (bm25.OWN_WORDS_WEIGHT): the retrieval
    context and the category words (vectorsync.second_field)."""

    id: str
    vector: list[float] | None
    payload: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    context: str = ""

    @property
    def rev(self) -> int:
        return int(self.payload.get("rev", 0))


@dataclass(frozen=True)
class VectorHit:
    id: str
    score: float
    payload: dict[str, Any]


class OrderedPoint(NamedTuple):
    """A point of an ordered walk: its id, its order value, its payload's `rev` (-1 if none) and
    `importance` (None if none; the ranked walk checks its page with it)."""

    id: str
    value: float
    rev: int
    importance: float | None = None


def ordered_point(point_id: Any, value: Any, payload: Mapping[str, Any] | None) -> OrderedPoint:
    importance = (payload or {}).get("importance")
    return OrderedPoint(
        str(point_id),
        float(value or 0),
        payload_rev(payload),
        None if importance is None else float(importance),
    )


def payload_rev(payload: Mapping[str, Any] | None) -> int:
    """A payload's `rev`, -1 when it has none."""
    rev = (payload or {}).get("rev")
    return int(rev) if rev is not None else -1


@dataclass(frozen=True)
class VectorRecord:
    id: str
    payload: dict[str, Any]
    vector: list[float] | None = None


# Payload fields recall filters on and listings order by, with the index each backend builds for
# them. `rev` is read per point (the rev guard's conditions name the point's id), never searched.
PAYLOAD_INDEXES: dict[str, Literal["keyword", "float", "datetime"]] = {
    "tags": "keyword",
    "tag_prefixes": "keyword",
    "type": "keyword",
    "state": "keyword",
    "tenant": "keyword",
    "timestamp": "datetime",
    "t_valid": "datetime",
    "t_invalid": "datetime",
    "importance": "float",
    "rank": "float",
}
# Indexes earlier versions built and stores drop when they open: `rev`'s took ~0.3 KB of the
# Edge-owning process's memory a point, and made every point write update it.
RETIRED_INDEXES = ("rev",)


def payload_selection(fields: Sequence[str] | None) -> bool | list[str]:
    """What the engines' `with_payload` takes: the whole payload, or only these fields."""
    return True if fields is None else list(fields)


class VectorStore(abc.ABC):
    """One collection of memory vectors. Implementations: `EdgeVectorStore`, `QdrantVectorStore`."""

    backend: str = "abstract"

    @abc.abstractmethod
    def ensure_collection(self, dimension: int) -> None:
        """Create the collection (cosine distance) and payload indexes if missing.

        Raises `DimensionMismatch` when it exists with another dimension."""

    @abc.abstractmethod
    def dimension(self) -> int | None:
        """The collection's vector dimension, or None when it does not exist."""

    @abc.abstractmethod
    def upsert(self, points: Sequence[VectorPoint], rewrite: bool = False) -> None:
        """Insert or replace points; a stored point with `rev` >= the new point's `rev` is kept
        (`rewrite`: only a newer one, so a point of the same rev is written again in the
        current shape: a forced repair)."""

    @abc.abstractmethod
    def overwrite_payloads(self, points: Sequence[VectorPoint]) -> None:
        """Replace the payloads of existing points, and the keyword vector of those that carry
        `text` (with `context`), keeping their dense vectors (`vector` is ignored), under the
        same rev guard as `upsert`; a missing point stays missing. What enrichment changes (tags,
        resolved dates, category words) reaches the keyword index without the dense vector
        being read back from the graph."""

    @abc.abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Remove points unconditionally (purge)."""

    @abc.abstractmethod
    def retrieve(
        self, ids: Sequence[str], with_vectors: bool = False, fields: Sequence[str] | None = None
    ) -> list[VectorRecord]:
        """The stored points among `ids` (missing ids are skipped), in no particular order;
        `fields`: only these payload fields (a whole payload copies the memory's content)."""

    @abc.abstractmethod
    def search(
        self,
        vector: Sequence[float],
        limit: int,
        flt: Filter | None = None,
        score_threshold: float | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        """Nearest points by cosine similarity, best first, with the filter applied in the engine
        (`with_payload=False`: ids and scores only, an empty payload)."""

    def search_many(
        self,
        requests: Sequence[tuple[Sequence[float], Filter | None]],
        limit: int,
        score_threshold: float | None,
    ) -> list[list[VectorHit]]:
        """`search` of each (vector, filter), ids and scores only, in order: one round trip to a
        server for them all where the engine takes a batch."""
        return [self.search(v, limit, f, score_threshold, with_payload=False) for v, f in requests]

    @abc.abstractmethod
    def keyword_search(
        self,
        text: str,
        limit: int,
        flt: Filter | None = None,
        idf_scope: Filter | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        """BM25 matches of `text`, best first, filtered in the engine; IDF is computed over the
        points matching `idf_scope` (the whole collection when None)."""

    @abc.abstractmethod
    def count(self, flt: Filter | None = None, exact: bool = True) -> int:
        """Number of points matching the filter; `exact=False`: the engine's estimate from its
        payload indexes (constant time, where the exact count is linear in the matches; may be
        off when several conditions combine)."""

    def exact_point_weight(self, flt: Filter | None) -> float:
        """What one point of an exact search under `flt` costs, relative to a point the
        engine's payload index selects with nothing left to check (1.0). Recall weighs the
        exact search against the graph's HNSW index with it (`RecallEngine._index_candidates`);
        only the Edge shard is searched exactly, so other backends keep 1.0."""
        return 1.0

    @abc.abstractmethod
    def scroll(
        self,
        flt: Filter | None = None,
        limit: int = 256,
        offset: str | None = None,
        with_vectors: bool = False,
    ) -> tuple[list[VectorRecord], str | None]:
        """One page of points in id order and the offset of the next page (None at the end)."""

    @abc.abstractmethod
    def ordered(self, flt: Filter | None, key: str, descending: bool, limit: int) -> list[OrderedPoint]:
        """Up to `limit` points matching `flt`, in the order of payload field `key` (one with a
        float or datetime index; a datetime's order value is its epoch time in microseconds).
        Points lacking the field are left out; the order among equal values is unspecified.
        Of the payload only `rev` and `importance` are read (listings check them: read along the
        walk `rev` cost ~0.15 ms, a separate read 0.35 ms; whole payloads cost far more)."""

    @abc.abstractmethod
    def set_payload_values(self, values: Sequence[tuple[str, int, dict[str, Any]]]) -> None:
        """Add the (id, rev, fields) `fields` to each point whose stored `rev` is still `rev`
        (a point rewritten since keeps its newer payload); other fields stay as they are."""

    @abc.abstractmethod
    def drop(self) -> None:
        """Delete the whole collection (used by rebuilds)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Flush and release the store (for Edge: the shard's WAL lock)."""

    def checkpoint_if_due(self) -> bool:
        """Flush what was written since the last checkpoint if enough was (the Edge shard: its
        segments, so its write-ahead log can be truncated); whether it flushed. A Qdrant server
        or local mode persists on its own: never due."""
        return False

    def iter_records(
        self, flt: Filter | None = None, page: int = 512, with_vectors: bool = False
    ) -> Iterator[VectorRecord]:
        offset: str | None = None
        while True:
            records, offset = self.scroll(flt, limit=page, offset=offset, with_vectors=with_vectors)
            yield from records
            if offset is None:
                return


# --- shared by the adapters ------------------------------------------------------------------
def latest_per_id(points: Sequence[VectorPoint]) -> list[VectorPoint]:
    """One point per id: the highest rev, the first among equals (as sequential writes would keep).

    Deduplicated up front because how one operation treats an id twice is engine-specific."""
    latest: dict[str, VectorPoint] = {}
    for point in points:
        kept = latest.get(point.id)
        if kept is None or point.rev > kept.rev:
            latest[point.id] = point
    return list(latest.values())


def group_by_rev(points: Sequence[VectorPoint]) -> list[tuple[int, list[VectorPoint]]]:
    """Points by rev, lowest first: the conditional upsert's condition is per operation."""
    groups: dict[int, list[VectorPoint]] = {}
    for point in points:
        groups.setdefault(point.rev, []).append(point)
    return sorted(groups.items())


def check_dimension(vector: Sequence[float] | None, dimension: int | None) -> None:
    if vector is not None and len(vector) != dimension:
        raise DimensionMismatch(
            f"vector of dimension {len(vector)} for a collection of dimension {dimension}"
        )
