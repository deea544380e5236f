"""Vector store on an embedded Qdrant Edge shard (`qdrant-edge-py`), one directory per collection.

A shard directory can be open in one process only: Edge takes an exclusive lock on its WAL, so a
second `EdgeShard.load` (from another process or another object in this one) fails with
`WouldBlock`. In embedded mode the API process owns the shard; everything else goes through it.

Semantics shared with `QdrantVectorStore` (the contract tests hold both to them):
- `IsNull` is Qdrant's `is_empty`: the field is absent, null or an empty list.
- `Match` on booleans is refused, because qdrant-edge-py 0.9 converts `True` to the integer 1,
  so a boolean match would silently find nothing.
- On a missing collection reads are empty, `delete` is a no-op and `upsert` raises.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import qdrant_edge as qe

from automem.errors import ConfigurationError, DimensionMismatch, ShardLocked
from automem.stores.vectors.base import (
    PAYLOAD_INDEXES,
    RETIRED_INDEXES,
    Condition,
    Filter,
    HasId,
    IsNull,
    Match,
    OrderedPoint,
    Range,
    VectorHit,
    VectorPoint,
    VectorRecord,
    VectorStore,
    as_moment,
    check_dimension,
    group_by_rev,
    latest_per_id,
    ordered_point,
    payload_selection,
)
from automem.stores.vectors.bm25 import SPARSE_NAME, Bm25Encoder

_SCHEMA_TYPES: dict[str, qe.PayloadSchemaType] = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "float": qe.PayloadSchemaType.Float,
    "datetime": qe.PayloadSchemaType.Datetime,
}

# Edge writes this file on create; it is the only place the shard's vector size is readable.
_CONFIG_FILE = "edge_config.json"
Datatype = Literal["float16", "float32"]
_DATATYPES: dict[str, qe.VectorStorageDatatype] = {
    "float16": qe.VectorStorageDatatype.Float16,
    "float32": qe.VectorStorageDatatype.Float32,
}
# What a float16 shard keeps of a unit vector's component or of a cosine (11 significant bits):
# vectors read back and scores are within this of the float32 ones.
HALF_PRECISION = 1e-3
log = logging.getLogger(__name__)


class _TenantMix:
    """The tenants the shard holds, as far as a search needs to know them: up to two values
    (None for a point without a tenant), or None until read from the shard.

    Why: while one tenant is alone in the shard, a condition on it selects every point, and
    Edge is faster without it: a keyword search's IDF scope that is that tenant alone costs twice
    an unscoped search, a tenant and tag scope several times the tag scope alone, with the same
    scores (a contract test holds them to it). The owner of the shard sees every write, so it
    adds each write's tenants here instead of asking the engine per search. After a delete the
    unscoped IDF still counts the deleted points until the shard is opened again (a corpus
    filter does not), so from then on a tenant-only scope is kept until `reset`."""

    def __init__(self) -> None:
        self.known: set[Any] | None = None
        self.deleted = False

    def reset(self) -> None:
        self.known, self.deleted = None, False

    def written(self, tenants: Sequence[Any]) -> None:
        # Unread: the next search reads the shard, these points in it. Two known: mixed for good.
        if self.known is not None and len(self.known) < 2:
            self.known.update(tenants)

    def only(self, shard: qe.EdgeShard, tenant: str) -> bool:
        """Whether every point of the shard is the tenant's. Deletes cannot add a tenant, so
        this holds after them too: a corpus filter left with its other conditions still
        counts live points only (unlike the unscoped statistics)."""
        if self.known is None:
            self.known = self._read(shard)
        return self.known == {tenant}

    @staticmethod
    def _read(shard: qe.EdgeShard) -> set[Any]:
        """An exact point count and the first two values of the tenant index's facet."""
        total = int(shard.count(qe.CountRequest(exact=True)))
        try:
            hits = shard.facet(qe.FacetRequest(key="tenant", limit=2, exact=True)).hits
        except Exception:  # no tenant index yet (a shard from before it): counted as a point
            return {None}  # without a tenant, which keeps every scope
        known: set[Any] = {hit.value for hit in hits}
        if sum(hit.count for hit in hits) < total:
            known.add(None)  # points without a tenant
        return known


VALIDITY_FIELDS = ("t_valid", "t_invalid")
_ACTIVE = Match("state", ("active",))
# An exact search whose filter comes down to one condition on an indexed field reads its points
# from the payload index and checks nothing more; with any further condition each of those
# points' payload is read and checked. At 1M (benchmarks/edge_scopes.md, float16 shard) one
# project's 50k points took 31.2 ms with the four conditions of a recall and 10.4 ms with the
# tag's alone; all of `slack`, 180 against 68 ms.
CHECKED_POINT_WEIGHT = 3.0


class _PointStates:
    """Whether any point of the shard is not active (its `state` is anything but "active", or
    absent), and the earliest and latest moment each validity bound (`t_valid`, `t_invalid`)
    holds among the points; None until read from the shard.

    Why: recall's filter asks for active points valid now (`state = active`, no `t_valid`
    after now, no `t_invalid` at or before it). Where every point is active, and no point's
    `t_valid` is later than now nor its `t_invalid` already past (the service sets `t_valid`
    to a memory's time, so nearly every point has one), these conditions select every point,
    yet Edge checks them point by point: an exact search of one project's 50k points in a 1M
    shard took 31 ms with them and the tenant's, 10 ms without (benchmarks/edge_scopes.md).
    Like the tenant mix, the owner updates this on every write; the flag once raised stays
    raised and a span only widens until the shard is opened again (deletes and state changes
    back to active do not narrow them), which only ever keeps a condition."""

    def __init__(self) -> None:
        self.inactive: bool | None = None
        self.spans: dict[str, _Span | None] | None = None

    def reset(self) -> None:
        self.inactive = self.spans = None

    def written(self, fields: Sequence[dict[str, Any]], whole: bool = True) -> None:
        """Payloads written: whole ones, or (`whole` False) the fields a partial write sets."""
        # Unread facts stay unread: the read counts the shard with these writes in it.
        for payload in fields:
            if self.inactive is False and (whole or "state" in payload) and payload.get("state") != "active":
                self.inactive = True
            if self.spans is not None:
                for field in VALIDITY_FIELDS:
                    self.spans[field] = _widened(self.spans[field], payload.get(field))

    def read(self, shard: qe.EdgeShard) -> tuple[bool, dict[str, _Span | None]]:
        """(inactive, spans), read from the shard once per opening."""
        if self.inactive is None:
            self.inactive = _counts_any(shard, Filter(must_not=(_ACTIVE,)))
        if self.spans is None:
            self.spans = {field: _span(shard, field) for field in VALIDITY_FIELDS}
        return self.inactive, self.spans


# The earliest and latest moment a payload field holds, in microseconds since the epoch (the
# unit of Edge's datetime index).
_Span = tuple[int, int]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EVERY_MOMENT: _Span = (-(2**62), 2**62)


def _micros(value: Any) -> int | None:
    """A datetime payload value as Edge orders it; None when absent or not a moment."""
    moment = as_moment(value)
    return None if moment is None else (moment - _EPOCH) // timedelta(microseconds=1)


def _widened(span: _Span | None, value: Any) -> _Span | None:
    """`span` widened to a value written; to every moment when the value is not one this
    parses (Edge might read it otherwise: its conditions stay)."""
    if value is None:
        return span
    micros = _micros(value)
    if micros is None:
        return _EVERY_MOMENT
    return (micros, micros) if span is None else (min(span[0], micros), max(span[1], micros))


def _span(shard: qe.EdgeShard, field: str) -> _Span | None:
    """The field's earliest and latest value among the points, from its payload index."""
    ends = []
    for descending in (False, True):
        records = _ordered_records(shard, None, field, descending, 1, False)
        if not records or records[0].order_value is None:
            return None
        ends.append(round(float(records[0].order_value)))
    return ends[0], ends[1]


def _ordered_records(
    shard: qe.EdgeShard, flt: Filter | None, key: str, descending: bool, limit: int, payload: bool | list[str]
) -> list[Any]:
    """The first `limit` points by `key`'s payload index (its value in each one's order_value)."""
    direction = qe.Direction.Desc if descending else qe.Direction.Asc
    order = qe.OrderBy(key=key, direction=direction)
    request = qe.ScrollRequest(limit=limit, filter=_filter(flt), with_payload=payload, order_by=order)
    records, _ = shard.scroll(request)
    return list(records)


def _selects_none(cond: Range, span: _Span | None) -> bool:
    """Whether a datetime range on a field matches no point whose value lies in `span` (a
    range never matches a point without the field)."""
    if span is None:
        return True
    low, high = span
    gt, gte, lt, lte = (_micros(bound) for bound in (cond.gt, cond.gte, cond.lt, cond.lte))
    return (
        (gt is not None and high <= gt)
        or (gte is not None and high < gte)
        or (lt is not None and low >= lt)
        or (lte is not None and low > lte)
    )


def _counts_any(shard: qe.EdgeShard, flt: Filter) -> bool:
    return int(shard.count(qe.CountRequest(exact=True, filter=_filter(flt)))) > 0


@dataclass(frozen=True)
class Checkpoints:
    """When the shard's owner flushes its segments (`EdgeVectorStore.checkpoint_if_due`): after
    `writes` points written since the last flush, or `seconds` after the first of them; 0 turns
    either off (the service's values: AUTOMEM_EDGE_CHECKPOINT_WRITES and _SECONDS). Edge appends
    every write to its write-ahead log and truncates the log only when the segments are flushed:
    unflushed, it grew by ~2.3 KB a point until the shard was closed, and a shard reopened after
    a crash replayed all of it (6 s for 100k points; 0.35 s after a flush)."""

    writes: int
    seconds: float

    def due(self, written: int, since: float) -> bool:
        if written <= 0:
            return False
        return (self.writes > 0 and written >= self.writes) or (self.seconds > 0 and since >= self.seconds)


def shard_config(
    dimension: int, datatype: Datatype, vector_memory: qe.Memory | None = qe.Memory.Cold
) -> qe.EdgeConfig:
    """The configuration of a new shard: cosine dense vectors of `datatype` and the keyword
    channel's sparse vectors. Cold dense vectors by default: a reloaded shard (every start of the
    API process) then keeps each vector file resident once, through its read-only mapping; with
    Edge's default placement the writable mapping is loaded too, and RSS counts the vectors twice
    (~1 KB a point; benchmarks/edge_residency.md). A segment keeps the placement it was made with;
    None is Edge's default (the benchmark's baseline)."""
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(
            size=dimension,
            distance=qe.Distance.Cosine,
            datatype=_DATATYPES[datatype],
            memory=vector_memory,
        ),
        sparse_vectors={SPARSE_NAME: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
    )


class EdgeVectorStore(VectorStore):
    """The shard at `path`, opened in the constructor when it exists (else by `ensure_collection`).

    After `close()` the next call opens the shard again, so a closed store stays usable."""

    backend = "edge"

    def __init__(
        self, path: str, datatype: Datatype = "float16", checkpoints: Checkpoints | None = None
    ) -> None:
        self.path = path
        self.datatype = datatype  # of the dense vectors of a shard created here (one on disk keeps its own)
        # Without checkpoints (scripts, tests) the shard is flushed on close only.
        self.checkpoints = checkpoints or Checkpoints(writes=0, seconds=0)
        self._unflushed = 0  # points written since the shard's segments were last flushed
        self._first_unflushed_at = 0.0
        self._shard: qe.EdgeShard | None = None
        self._dimension: int | None = None
        self.encoder = Bm25Encoder()
        # One lock for every shard call: parallel calls gain nothing (measured: 8 threads run
        # queries no faster than one), and the lock keeps close/drop from racing a running call.
        self._lock = threading.RLock()
        self._tenants = _TenantMix()
        self._states = _PointStates()
        with self._lock:
            self._open_existing()

    # --- lifecycle ------------------------------------------------------------------------------
    def _holds_shard(self) -> bool:
        return (Path(self.path) / _CONFIG_FILE).is_file()

    def _open_existing(self) -> qe.EdgeShard | None:
        """The open shard, loading it from disk if the path holds one (None when it does not)."""
        if self._shard is None and self._holds_shard():
            self._shard = self._load()
            self._dimension = self._read_config()
        return self._shard

    def _load(self) -> qe.EdgeShard:
        try:
            return qe.EdgeShard.load(self.path)
        except Exception as exc:  # Edge raises plain Exception for every failure
            if "WouldBlock" in str(exc):
                raise ShardLocked(
                    f"the Qdrant Edge shard at {self.path} is open in another process; in embedded "
                    "mode only the API process owns it; stop `automem serve` first or use the admin API"
                ) from exc
            raise ConfigurationError(f"cannot open the Qdrant Edge shard at {self.path}: {exc}") from exc

    def _config(self) -> dict[str, Any]:
        """The shard's configuration as Edge wrote it (see _CONFIG_FILE)."""
        config: dict[str, Any] = json.loads((Path(self.path) / _CONFIG_FILE).read_text())
        return config

    def _read_config(self) -> int:
        params = self._config().get("vectors", {}).get("")
        if not params:
            raise ConfigurationError(f"the Qdrant Edge shard at {self.path} has no default dense vector")
        if params.get("distance") != "Cosine":
            raise ConfigurationError(
                f"the Qdrant Edge shard at {self.path} uses {params.get('distance')} distance, not Cosine"
            )
        return int(params["size"])

    def _create(self, dimension: int) -> qe.EdgeShard:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        return qe.EdgeShard.create(self.path, shard_config(dimension, self.datatype))

    def _ensure_sparse(self, shard: qe.EdgeShard) -> None:
        """Shards created before the keyword channel lack the sparse vector: add it."""
        if SPARSE_NAME not in (self._config().get("sparse_vectors") or {}):
            shard.update(qe.UpdateOperation.create_sparse_vector(SPARSE_NAME, modifier=qe.Modifier.Idf))

    def ensure_collection(self, dimension: int) -> None:
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                shard = self._shard = self._create(dimension)
                self._dimension = dimension
            if self._dimension != dimension:
                raise DimensionMismatch(
                    f"the Qdrant Edge shard at {self.path} holds {self._dimension}-dimensional vectors, "
                    f"not {dimension}"
                )
            self._ensure_sparse(shard)
            self._ensure_indexes(shard)
            stored = self.stored_datatype()
            if stored != self.datatype:
                log.info(
                    "the Qdrant Edge shard at %s stores %s vectors; %s applies to a new shard "
                    "(a restore makes one: `automem backup`, then `automem restore`)",
                    self.path,
                    stored,
                    self.datatype,
                )

    def stored_datatype(self) -> str:
        """The dense vectors' type in the shard on disk (shards made before the setting: float32)."""
        return str(self._config().get("vectors", {}).get("", {}).get("datatype", "float32"))

    def _ensure_indexes(self, shard: qe.EdgeShard) -> None:
        existing = shard.info().payload_schema
        for name, kind in PAYLOAD_INDEXES.items():
            if name not in existing:
                shard.update(qe.UpdateOperation.create_field_index(name, _SCHEMA_TYPES[kind]))
        for name in RETIRED_INDEXES:
            if name in existing:
                shard.update(qe.UpdateOperation.delete_field_index(name))

    def payload_indexes(self) -> set[str]:
        """The payload fields the shard indexes."""
        with self._lock:
            shard = self._open_existing()
            return set(shard.info().payload_schema) if shard is not None else set()

    def dimension(self) -> int | None:
        with self._lock:
            self._open_existing()
            return self._dimension

    def drop(self) -> None:
        with self._lock:
            # Open it first: a shard another process holds raises here instead of being deleted.
            self._open_existing()
            self._release(flush=False)
            shutil.rmtree(self.path, ignore_errors=True)
            self._dimension = None

    def close(self) -> None:
        with self._lock:
            self._release(flush=True)

    def _release(self, flush: bool) -> None:
        self._tenants.reset()
        self._states.reset()
        if self._shard is not None:
            if flush:
                self._flush(self._shard)
            self._shard.close()
            self._shard = None
        self._unflushed = 0  # what a shard reopened replays is its own to flush

    def checkpoint_if_due(self) -> bool:
        with self._lock:
            since = time.monotonic() - self._first_unflushed_at
            if self._shard is None or not self.checkpoints.due(self._unflushed, since):
                return False
            self._flush(self._shard)
            return True

    def _flush(self, shard: qe.EdgeShard) -> None:
        shard.flush()
        self._unflushed = 0

    def _count_written(self, points: int) -> None:
        if not self._unflushed:
            self._first_unflushed_at = time.monotonic()
        self._unflushed += points

    # --- writes ---------------------------------------------------------------------------------
    def upsert(self, points: Sequence[VectorPoint], rewrite: bool = False) -> None:
        if not points:
            return
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                raise ConfigurationError(f"no Qdrant Edge shard at {self.path}; call ensure_collection first")
            for point in points:
                check_dimension(point.vector, self._dimension)
            # One conditional upsert per distinct rev (the condition is per operation): existing
            # points that fail it are skipped, new ones are inserted. All are built before the
            # first is applied, so a bad id fails the call without a partial write.
            operations = [
                qe.UpdateOperation.upsert_points(
                    [qe.Point(_uuid(p.id), self._vectors(p), p.payload) for p in group],
                    condition=_older_than(rev + 1 if rewrite else rev),  # revs are integers
                )
                for rev, group in group_by_rev(latest_per_id(points))
            ]
            # Writes are durable in the WAL without flush() (a killed process loses nothing), and a
            # flush per call costs ~9 ms, so segments are flushed by checkpoints and on close().
            self._written([p.payload for p in points])
            for operation in operations:
                shard.update(operation)

    def _vectors(self, point: VectorPoint) -> dict[str, Any]:
        vectors: dict[str, Any] = {}
        if point.vector is not None:
            vectors[""] = list(point.vector)
        if point.text:
            vectors.update(self._keyword_vector(point))
        return vectors

    def _keyword_vector(self, point: VectorPoint) -> dict[str, Any]:
        return {SPARSE_NAME: self.encoder.document(point.text or "", point.context)}

    def overwrite_payloads(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        latest = latest_per_id(points)
        payloads = [
            qe.UpdateOperation.overwrite_payload_by_filter(
                qe.Filter(must=[qe.HasIdCondition({_uuid(p.id)}), _older_than(p.rev)]), p.payload
            )
            for p in latest
        ]
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                return
            # Keyword vectors first: the payload's new rev would fail their guard. Edge refuses
            # to update a missing point's vectors, so only stored points are asked.
            for operation in self._keyword_updates(shard, [p for p in latest if p.text]):
                shard.update(operation)
            self._written([p.payload for p in latest])
            for operation in payloads:
                shard.update(operation)

    def _written(self, payloads: Sequence[dict[str, Any]], whole: bool = True) -> None:
        """Tell the shard's trackers what a write stores: whole payloads, or (`whole` False) the
        fields a partial write sets."""
        self._tenants.written([p.get("tenant") for p in payloads if whole or "tenant" in p])
        self._states.written(payloads, whole)
        self._count_written(len(payloads))

    def set_payload_values(self, values: Sequence[tuple[str, int, dict[str, Any]]]) -> None:
        operations = [
            qe.UpdateOperation.set_payload_by_filter(
                qe.Filter(must=[qe.HasIdCondition({_uuid(point_id)}), _rev_is(rev)]),
                fields,
            )
            for point_id, rev, fields in values
        ]
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                return
            self._written([f for _, _, f in values], whole=False)
            for operation in operations:
                shard.update(operation)

    def _keyword_updates(self, shard: Any, points: Sequence[VectorPoint]) -> list[Any]:
        if not points:
            return []
        found = shard.retrieve([_uuid(p.id) for p in points], with_payload=False, with_vector=False)
        stored = {str(r.id) for r in found}
        return [
            qe.UpdateOperation.update_vectors(
                [qe.PointVectors(_uuid(p.id), self._keyword_vector(p)) for p in group],
                condition=_older_than(rev),
            )
            for rev, group in group_by_rev([p for p in points if str(_uuid(p.id)) in stored])
        ]

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._lock:
            shard = self._open_existing()
            if shard is not None:
                self._tenants.deleted = True
                self._count_written(len(ids))
                shard.update(qe.UpdateOperation.delete_points([_uuid(i) for i in ids]))

    # --- reads ----------------------------------------------------------------------------------
    def retrieve(
        self, ids: Sequence[str], with_vectors: bool = False, fields: Sequence[str] | None = None
    ) -> list[VectorRecord]:
        if not ids:
            return []
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                return []
            records = shard.retrieve(
                [_uuid(i) for i in ids], with_payload=payload_selection(fields), with_vector=with_vectors
            )
        return [_record(r, with_vectors) for r in records]

    def search(
        self,
        vector: Sequence[float],
        limit: int,
        flt: Filter | None = None,
        score_threshold: float | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        dimension = self.dimension()
        if dimension is None or limit <= 0:
            return []
        check_dimension(vector, dimension)
        return self._run(
            lambda shard: qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(list(vector)),
                filter=_filter(self._simplified(shard, flt)),
                score_threshold=score_threshold,
                with_payload=with_payload,
            )
        )

    def keyword_search(
        self,
        text: str,
        limit: int,
        flt: Filter | None = None,
        idf_scope: Filter | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        query = self.encoder.query(text)
        if not query.indices or limit <= 0:
            return []
        return self._run(
            lambda shard: qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(query, using=SPARSE_NAME),
                filter=_filter(self._simplified(shard, flt)),
                params=self._idf_params(shard, idf_scope),
                with_payload=with_payload,
            )
        )

    def _run(self, request_for: Callable[[qe.EdgeShard], qe.QueryRequest]) -> list[VectorHit]:
        """The query `request_for` makes for the open shard, under one hold of the lock: the
        tenant mix it reads and the search see one state."""
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                return []
            hits = shard.query(request_for(shard))
        return _hits(hits)

    def _simplified(self, shard: qe.EdgeShard, flt: Filter | None) -> Filter | None:
        """`flt` without the conditions that select every point of the shard: the tenant's
        while it is alone (`_TenantMix`), `state = active` while every point is active and each
        validity exclusion no point's bound falls in (`_PointStates`). The same points,
        and Edge skips checks it would make per point: an exact search of one project's 50k
        points in a 1M shard, or a keyword search's IDF corpus, which gains far more
        (benchmarks/edge_scopes.md)."""
        if flt is None:
            return None
        tenant, rest = _split_tenant(flt)
        if tenant is None or not self._tenants.only(shard, tenant):
            rest = flt
        inactive, spans = self._states.read(shard)
        return _without_state_conditions(rest, active=not inactive, spans=spans)

    def exact_point_weight(self, flt: Filter | None) -> float:
        """1.0 when the filter, once `_simplified`, is at most one condition on an indexed
        field; else CHECKED_POINT_WEIGHT."""
        if flt is None:
            return 1.0
        with self._lock:
            shard = self._open_existing()
            rest = self._simplified(shard, flt) if shard is not None else flt
        return 1.0 if rest is None or _index_answers(rest) else CHECKED_POINT_WEIGHT

    def _idf_params(self, shard: qe.EdgeShard, idf_scope: Filter | None) -> qe.SearchParams | None:
        """The IDF corpus, without its tenant condition while that tenant is alone in the shard
        (a tag scope of half of 1M points: 60 ms with it, 7 ms without), and no corpus at all
        when nothing else is left and nothing was deleted since the shard opened (the unscoped
        statistics count deleted points until then; a corpus filter counts live ones)."""
        if idf_scope is None:
            return None
        corpus = self._simplified(shard, idf_scope)
        if corpus == Filter():
            if not self._tenants.deleted:
                return None
            corpus = idf_scope
        return qe.SearchParams(idf=qe.IdfParams(corpus=_filter(corpus)))

    def count(self, flt: Filter | None = None, exact: bool = True) -> int:
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                return 0
            return int(shard.count(qe.CountRequest(exact=exact, filter=_filter(flt))))

    def scroll(
        self,
        flt: Filter | None = None,
        limit: int = 256,
        offset: str | None = None,
        with_vectors: bool = False,
    ) -> tuple[list[VectorRecord], str | None]:
        with self._lock:
            shard = self._open_existing()
            if shard is None:
                return [], None
            request = qe.ScrollRequest(
                offset=_uuid(offset) if offset is not None else None,
                limit=limit,
                filter=_filter(flt),
                with_payload=True,
                with_vector=with_vectors,
            )
            records, next_offset = shard.scroll(request)
        page = [_record(r, with_vectors) for r in records]
        return page, (str(next_offset) if next_offset is not None else None)

    def ordered(self, flt: Filter | None, key: str, descending: bool, limit: int) -> list[OrderedPoint]:
        with self._lock:
            shard = self._open_existing()
            if shard is None or limit <= 0:
                return []
            records = _ordered_records(shard, flt, key, descending, limit, ["rev", "importance"])
        return [ordered_point(r.id, r.order_value, r.payload) for r in records]


# --- rev guard ------------------------------------------------------------------------------------
def _rev_is(rev: int) -> qe.FieldCondition:
    return qe.FieldCondition("rev", match=qe.MatchValue(rev))


def _older_than(rev: int) -> qe.Filter:
    """Condition a stored point must meet to be replaced: a lower rev (a missing rev counts as 0)."""
    older: list[Any] = [qe.FieldCondition("rev", range=qe.RangeFloat(lt=rev))]
    if rev > 0:
        older.append(qe.IsEmptyCondition("rev"))
    return qe.Filter(should=older)


# --- translation ----------------------------------------------------------------------------------
def _split_tenant(flt: Filter) -> tuple[str | None, Filter]:
    """The one tenant `flt` requires (a single tenant condition among its `must`, one value)
    and the filter without that condition; else None and `flt` unchanged."""
    tenants = [c for c in flt.must if isinstance(c, Match) and c.field == "tenant"]
    if len(tenants) != 1 or len(tenants[0].values) != 1 or not isinstance(tenants[0].values[0], str):
        return None, flt
    must = tuple(c for c in flt.must if c is not tenants[0])
    return tenants[0].values[0], Filter(must=must, should=flt.should, must_not=flt.must_not)


def _without_state_conditions(flt: Filter, active: bool, spans: dict[str, _Span | None]) -> Filter:
    """`flt` without its `state = active` condition (`active`) and without the exclusions by a
    validity bound that no point's value of that bound falls in (`spans`)."""
    must = tuple(c for c in flt.must if not (active and c == _ACTIVE))
    must_not = tuple(c for c in flt.must_not if not _excludes_nothing(c, spans))
    return Filter(must=must, should=flt.should, must_not=must_not)


def _excludes_nothing(cond: Condition, spans: dict[str, _Span | None]) -> bool:
    if not isinstance(cond, Range) or cond.kind != "datetime" or cond.field not in spans:
        return False
    return _selects_none(cond, spans[cond.field])


def _index_answers(flt: Filter) -> bool:
    """Whether a payload index selects exactly `flt`'s points, with nothing to check per point."""
    if flt.should or flt.must_not or len(flt.must) > 1:
        return False
    return all(isinstance(c, (Match, Range)) and c.field in PAYLOAD_INDEXES for c in flt.must)


def _hits(hits: Sequence[Any]) -> list[VectorHit]:
    return [VectorHit(id=str(h.id), score=float(h.score), payload=dict(h.payload or {})) for h in hits]


def _uuid(point_id: str) -> uuid.UUID:
    return uuid.UUID(point_id)


def _record(record: qe.Record, with_vectors: bool) -> VectorRecord:
    vector = _dense(record.vector) if with_vectors else None
    return VectorRecord(id=str(record.id), payload=dict(record.payload or {}), vector=vector)


def _dense(vector: Any) -> list[float] | None:
    if isinstance(vector, dict):  # a named-vector map; ours is the default ("") vector
        vector = vector.get("")
    return [float(x) for x in vector] if vector is not None else None


def _filter(flt: Filter | None) -> qe.Filter | None:
    if flt is None:
        return None
    # Empty clauses become None: "no constraint", never "match nothing".
    return qe.Filter(
        must=[_condition(c) for c in flt.must] or None,
        should=[_condition(c) for c in flt.should] or None,
        must_not=[_condition(c) for c in flt.must_not] or None,
    )


def _condition(cond: Condition) -> Any:
    if isinstance(cond, Filter):
        return _filter(cond)
    if isinstance(cond, Match):
        return _match(cond)
    if isinstance(cond, Range):
        return qe.FieldCondition(cond.field, range=_range(cond))
    if isinstance(cond, IsNull):
        return qe.IsEmptyCondition(cond.field)
    if isinstance(cond, HasId):
        return qe.HasIdCondition({_uuid(i) for i in cond.ids})
    raise TypeError(f"unsupported filter condition: {cond!r}")


def _match(cond: Match) -> Any:
    values = list(cond.values)
    if any(isinstance(v, bool) for v in values):
        raise ValueError(f"Match on booleans is not supported (field {cond.field!r})")
    if len(values) == 1:
        return qe.FieldCondition(cond.field, match=qe.MatchValue(values[0]))
    strings = [v for v in values if isinstance(v, str)]
    numbers = [v for v in values if isinstance(v, int)]
    if len(strings) == len(values) or len(numbers) == len(values):
        return qe.FieldCondition(cond.field, match=qe.MatchAny(strings or numbers))
    # MatchAny takes only one value type; mixed values become an OR of single matches.
    return qe.Filter(should=[qe.FieldCondition(cond.field, match=qe.MatchValue(v)) for v in values])


def _range(cond: Range) -> qe.RangeFloat | qe.RangeDateTime:
    if cond.kind == "datetime":
        return qe.RangeDateTime(gte=_iso(cond.gte), gt=_iso(cond.gt), lte=_iso(cond.lte), lt=_iso(cond.lt))
    return qe.RangeFloat(gte=_num(cond.gte), gt=_num(cond.gt), lte=_num(cond.lte), lt=_num(cond.lt))


def _iso(value: float | str | None) -> str | None:
    return None if value is None else str(value)


def _num(value: float | str | None) -> float | None:
    return None if value is None else float(value)
