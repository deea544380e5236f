"""Vector store on a Qdrant server collection, or on qdrant-client's local mode (`QDRANT_PATH`).

Semantics shared with `EdgeVectorStore` (the contract tests hold both to them):
- `IsNull` is Qdrant's `is_empty`: the field is absent, null or an empty list.
- `Match` on booleans is refused, because Qdrant Edge cannot match them (see `qdrant_edge`).
- On a missing collection reads are empty, `delete` is a no-op and `upsert` raises.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import UnexpectedResponse

from automem.errors import ConfigurationError, DimensionMismatch
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
    check_dimension,
    group_by_rev,
    latest_per_id,
    ordered_point,
    payload_selection,
)
from automem.stores.vectors.bm25 import SPARSE_NAME, Bm25Encoder

T = TypeVar("T")

_SCHEMA_TYPES: dict[str, qm.PayloadSchemaType] = {
    "keyword": qm.PayloadSchemaType.KEYWORD,
    "float": qm.PayloadSchemaType.FLOAT,
    "datetime": qm.PayloadSchemaType.DATETIME,
}

# Points per request: keeps one request of large embeddings well under the server's body limit.
_WRITE_CHUNK = 128


class _CollectionMissing(Exception):
    """Internal: the collection does not exist (server 404, or local mode's ValueError)."""


class QdrantVectorStore(VectorStore):
    backend = "qdrant"

    def __init__(self, client: QdrantClient, collection: str) -> None:
        self.client = client
        self.collection = collection
        self._dimension: int | None = None
        self.encoder = Bm25Encoder()
        options = client.init_options
        self._local = options.get("path") is not None or options.get("location") == ":memory:"
        # Local mode is plain Python state with no locking of its own; the server needs none.
        self._lock: AbstractContextManager[Any] = threading.RLock() if self._local else nullcontext()

    @classmethod
    def from_settings(
        cls, url: str | None, api_key: str | None, path: str | None, collection: str, timeout: float
    ) -> QdrantVectorStore:
        if path:
            return cls(QdrantClient(path=path), collection)
        if not url:
            raise ConfigurationError("the qdrant vector backend needs QDRANT_URL or QDRANT_PATH")
        # The client takes whole seconds (it rounds up itself; ceil keeps the int type honest).
        client = QdrantClient(url=url, api_key=api_key, timeout=math.ceil(timeout))
        return cls(client, collection)

    # --- plumbing -------------------------------------------------------------------------------
    @contextmanager
    def _call(self) -> Iterator[None]:
        """Serialise local-mode calls and turn 'collection not found' into `_CollectionMissing`."""
        with self._lock:
            try:
                yield
            except UnexpectedResponse as exc:
                if exc.status_code == 404:
                    self._dimension = None
                    raise _CollectionMissing() from exc
                raise
            except ValueError as exc:  # local mode's only signal for a missing collection
                if "not found" in str(exc):
                    self._dimension = None
                    raise _CollectionMissing() from exc
                raise

    def _read_or(self, default: T, read: Callable[[], T]) -> T:
        try:
            with self._call():
                return read()
        except _CollectionMissing:
            return default

    # --- lifecycle ------------------------------------------------------------------------------
    def ensure_collection(self, dimension: int) -> None:
        with self._lock:
            if not self.client.collection_exists(self.collection):
                self._create(dimension)
            existing = self.dimension()
            if existing != dimension:
                raise DimensionMismatch(
                    f"the Qdrant collection {self.collection!r} holds {existing}-dimensional vectors, "
                    f"not {dimension}"
                )
            self._ensure_sparse()
            self._ensure_indexes()

    def _ensure_sparse(self) -> None:
        """Collections created before the keyword channel lack the sparse vector: add it."""
        sparse = self.client.get_collection(self.collection).config.params.sparse_vectors or {}
        if SPARSE_NAME not in sparse:
            self.client.update_collection(
                self.collection,
                sparse_vectors_config={SPARSE_NAME: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
            )

    def _create(self, dimension: int) -> None:
        params = qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)
        sparse = {SPARSE_NAME: qm.SparseVectorParams(modifier=qm.Modifier.IDF)}
        try:
            self.client.create_collection(
                self.collection, vectors_config=params, sparse_vectors_config=sparse
            )
        except UnexpectedResponse as exc:
            # Another process created it between our check and our create: fine, it is checked next.
            if exc.status_code != 409:
                raise

    def _ensure_indexes(self) -> None:
        if self._local:  # local mode ignores payload indexes and warns on every one
            return
        existing = self.client.get_collection(self.collection).payload_schema
        for name, kind in PAYLOAD_INDEXES.items():
            if name not in existing:
                self.client.create_payload_index(self.collection, name, field_schema=_SCHEMA_TYPES[kind])
        for name in RETIRED_INDEXES:
            if name in existing:
                self.client.delete_payload_index(self.collection, name)

    def dimension(self) -> int | None:
        if self._dimension is None:
            self._dimension = self._read_or(None, self._read_dimension)
        return self._dimension

    def _read_dimension(self) -> int:
        vectors = self.client.get_collection(self.collection).config.params.vectors
        if isinstance(vectors, dict):
            vectors = vectors.get("")
        if vectors is None:
            raise ConfigurationError(f"the Qdrant collection {self.collection!r} has no default vector")
        if vectors.distance != qm.Distance.COSINE:
            raise ConfigurationError(
                f"the Qdrant collection {self.collection!r} uses {vectors.distance} distance, not Cosine"
            )
        return int(vectors.size)

    def drop(self) -> None:
        with self._lock:
            self.client.delete_collection(self.collection)
            self._dimension = None

    def close(self) -> None:
        with self._lock:
            self.client.close()

    # --- writes ---------------------------------------------------------------------------------
    def upsert(self, points: Sequence[VectorPoint], rewrite: bool = False) -> None:
        if not points:
            return
        dimension = self.dimension()
        if dimension is None:
            raise ConfigurationError(
                f"no Qdrant collection {self.collection!r}; call ensure_collection first"
            )
        for point in points:
            check_dimension(point.vector, dimension)
        unique = latest_per_id(points)
        for start in range(0, len(unique), _WRITE_CHUNK):
            self._write_guarded(unique[start : start + _WRITE_CHUNK], rewrite)

    def _write_guarded(self, points: Sequence[VectorPoint], rewrite: bool) -> None:
        # One conditional upsert per distinct rev (the condition is per operation), all in one
        # request; existing points that fail the condition are skipped, new ones are inserted.
        operations: list[qm.UpdateOperation] = [
            qm.UpsertOperation(
                upsert=qm.PointsList(
                    points=[
                        qm.PointStruct(id=_uuid(p.id), vector=self._vectors(p), payload=p.payload)
                        for p in group
                    ],
                    update_filter=_older_than(rev + 1 if rewrite else rev),  # revs are integers
                )
            )
            for rev, group in group_by_rev(points)
        ]
        try:
            with self._call():
                self.client.batch_update_points(self.collection, operations, wait=True)
        except _CollectionMissing as exc:
            raise ConfigurationError(f"the Qdrant collection {self.collection!r} is gone") from exc

    def _vectors(self, point: VectorPoint) -> dict[str, Any]:
        vectors: dict[str, Any] = {}
        if point.vector is not None:
            vectors[""] = list(point.vector)
        if point.text:
            vectors.update(self._keyword_vector(point))
        return vectors

    def overwrite_payloads(self, points: Sequence[VectorPoint]) -> None:
        latest = latest_per_id(points)
        # Keyword vectors first (the payload's new rev would fail their guard), only for stored
        # points: updating a missing point's vectors is an error, where a payload filter is not.
        operations: list[qm.UpdateOperation] = self._keyword_updates([p for p in latest if p.text])
        operations += [
            qm.OverwritePayloadOperation(
                overwrite_payload=qm.SetPayload(
                    payload=p.payload,
                    filter=qm.Filter(must=[qm.HasIdCondition(has_id=[_uuid(p.id)]), _older_than(p.rev)]),
                )
            )
            for p in latest
        ]
        if operations:
            self._read_or(
                None, lambda: self.client.batch_update_points(self.collection, operations, wait=True)
            )

    def set_payload_values(self, values: Sequence[tuple[str, int, dict[str, Any]]]) -> None:
        operations: list[qm.UpdateOperation] = [
            qm.SetPayloadOperation(
                set_payload=qm.SetPayload(
                    payload=fields,
                    filter=qm.Filter(
                        must=[
                            qm.HasIdCondition(has_id=[_uuid(point_id)]),
                            qm.FieldCondition(key="rev", match=qm.MatchValue(value=rev)),
                        ]
                    ),
                )
            )
            for point_id, rev, fields in values
        ]
        if operations:
            self._read_or(
                None, lambda: self.client.batch_update_points(self.collection, operations, wait=True)
            )

    def _keyword_updates(self, points: Sequence[VectorPoint]) -> list[qm.UpdateOperation]:
        if not points:
            return []
        stored = {r.id for r in self.retrieve([p.id for p in points], fields=["rev"])}
        return [
            qm.UpdateVectorsOperation(
                update_vectors=qm.UpdateVectors(
                    points=[qm.PointVectors(id=_uuid(p.id), vector=self._keyword_vector(p)) for p in group],
                    update_filter=_older_than(rev),
                )
            )
            for rev, group in group_by_rev([p for p in points if _uuid(p.id) in stored])
        ]

    def _keyword_vector(self, point: VectorPoint) -> dict[str, Any]:
        weights = self.encoder.document(point.text or "", point.context)
        return {SPARSE_NAME: qm.SparseVector(indices=list(weights.indices), values=list(weights.values))}

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        selector = qm.PointIdsList(points=[_uuid(i) for i in ids])
        self._read_or(None, lambda: self.client.delete(self.collection, points_selector=selector, wait=True))

    # --- reads ----------------------------------------------------------------------------------
    def retrieve(
        self, ids: Sequence[str], with_vectors: bool = False, fields: Sequence[str] | None = None
    ) -> list[VectorRecord]:
        if not ids:
            return []
        records = self._read_or(
            None,
            lambda: self.client.retrieve(
                self.collection,
                [_uuid(i) for i in ids],
                with_payload=payload_selection(fields),
                with_vectors=with_vectors,
            ),
        )
        return [_record(r, with_vectors) for r in records or []]

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
        return self._query(
            query=list(vector),
            query_filter=_filter(flt),
            limit=limit,
            score_threshold=score_threshold,
            with_payload=with_payload,
        )

    def search_many(
        self,
        requests: Sequence[tuple[Sequence[float], Filter | None]],
        limit: int,
        score_threshold: float | None,
    ) -> list[list[VectorHit]]:
        dimension = self.dimension()
        if dimension is None or limit <= 0 or not requests:
            return [[] for _ in requests]
        batch = []
        for vector, flt in requests:
            check_dimension(vector, dimension)
            batch.append(
                qm.QueryRequest(
                    query=list(vector),
                    filter=_filter(flt),
                    limit=limit,
                    score_threshold=score_threshold,
                    with_payload=False,
                )
            )
        responses = self._read_or(
            None, lambda: self.client.query_batch_points(self.collection, requests=batch)
        )
        if responses is None:
            return [[] for _ in requests]
        return [_hits(r) for r in responses]

    def _query(self, **request: Any) -> list[VectorHit]:
        response = self._read_or(None, lambda: self.client.query_points(self.collection, **request))
        return [] if response is None else _hits(response)

    def keyword_search(
        self,
        text: str,
        limit: int,
        flt: Filter | None = None,
        idf_scope: Filter | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        weights = self.encoder.query(text)
        if not weights.indices or limit <= 0:
            return []
        query = qm.SparseVector(indices=list(weights.indices), values=list(weights.values))
        corpus = _filter(idf_scope)
        params = qm.SearchParams(idf=qm.IdfCorpusParams(corpus=corpus)) if corpus else None
        return self._query(
            query=query,
            using=SPARSE_NAME,
            query_filter=_filter(flt),
            search_params=params,
            limit=limit,
            with_payload=with_payload,
        )

    def count(self, flt: Filter | None = None, exact: bool = True) -> int:
        result = self._read_or(
            None, lambda: self.client.count(self.collection, count_filter=_filter(flt), exact=exact)
        )
        return 0 if result is None else int(result.count)

    def scroll(
        self,
        flt: Filter | None = None,
        limit: int = 256,
        offset: str | None = None,
        with_vectors: bool = False,
    ) -> tuple[list[VectorRecord], str | None]:
        page = self._read_or(
            None,
            lambda: self.client.scroll(
                self.collection,
                scroll_filter=_filter(flt),
                limit=limit,
                offset=_uuid(offset) if offset is not None else None,
                with_payload=True,
                with_vectors=with_vectors,
            ),
        )
        if page is None:
            return [], None
        records, next_offset = page
        page_records = [_record(r, with_vectors) for r in records]
        return page_records, (str(next_offset) if next_offset is not None else None)

    def ordered(self, flt: Filter | None, key: str, descending: bool, limit: int) -> list[OrderedPoint]:
        if limit <= 0:
            return []
        direction = qm.Direction.DESC if descending else qm.Direction.ASC
        page = self._read_or(
            None,
            lambda: self.client.scroll(
                self.collection,
                scroll_filter=_filter(flt),
                limit=limit,
                with_payload=["rev", "importance"],
                order_by=qm.OrderBy(key=key, direction=direction),
            ),
        )
        if page is None:
            return []
        return [ordered_point(r.id, r.order_value, r.payload) for r in page[0]]


# --- rev guard ------------------------------------------------------------------------------------
def _older_than(rev: int) -> qm.Filter:
    """Condition a stored point must meet to be replaced: a lower rev (a missing rev counts as 0)."""
    older: list[qm.Condition] = [qm.FieldCondition(key="rev", range=qm.Range(lt=rev))]
    if rev > 0:
        older.append(qm.IsEmptyCondition(is_empty=qm.PayloadField(key="rev")))
    return qm.Filter(should=older)


# --- translation ----------------------------------------------------------------------------------
def _uuid(point_id: str) -> str:
    """The canonical UUID string: validates the id the same way the Edge adapter does."""
    return str(uuid.UUID(point_id))


def _hits(response: qm.QueryResponse) -> list[VectorHit]:
    return [
        VectorHit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in response.points
    ]


def _record(record: qm.Record, with_vectors: bool) -> VectorRecord:
    vector = _dense(record.vector) if with_vectors else None
    return VectorRecord(id=str(record.id), payload=dict(record.payload or {}), vector=vector)


def _dense(vector: Any) -> list[float] | None:
    if isinstance(vector, dict):  # a named-vector map; ours is the default ("") vector
        vector = vector.get("")
    return [float(x) for x in vector] if vector is not None else None


def _filter(flt: Filter | None) -> qm.Filter | None:
    if flt is None:
        return None
    # Empty clauses become None: "no constraint", never "match nothing".
    return qm.Filter(
        must=[_condition(c) for c in flt.must] or None,
        should=[_condition(c) for c in flt.should] or None,
        must_not=[_condition(c) for c in flt.must_not] or None,
    )


def _condition(cond: Condition) -> qm.Condition:
    if isinstance(cond, Filter):
        return _filter(cond) or qm.Filter()
    if isinstance(cond, Match):
        return _match(cond)
    if isinstance(cond, Range):
        return qm.FieldCondition(key=cond.field, range=_range(cond))
    if isinstance(cond, IsNull):
        return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=cond.field))
    if isinstance(cond, HasId):
        return qm.HasIdCondition(has_id=[_uuid(i) for i in cond.ids])
    raise TypeError(f"unsupported filter condition: {cond!r}")


def _match(cond: Match) -> qm.Condition:
    values = list(cond.values)
    if any(isinstance(v, bool) for v in values):
        raise ValueError(f"Match on booleans is not supported (field {cond.field!r})")
    if len(values) == 1:
        return qm.FieldCondition(key=cond.field, match=qm.MatchValue(value=values[0]))
    strings = [v for v in values if isinstance(v, str)]
    numbers = [v for v in values if isinstance(v, int)]
    if len(strings) == len(values) or len(numbers) == len(values):
        return qm.FieldCondition(key=cond.field, match=qm.MatchAny(any=strings or numbers))
    # MatchAny takes only one value type; mixed values become an OR of single matches.
    return qm.Filter(should=[qm.FieldCondition(key=cond.field, match=qm.MatchValue(value=v)) for v in values])


def _range(cond: Range) -> qm.Range | qm.DatetimeRange:
    if cond.kind == "datetime":
        return qm.DatetimeRange(gte=cond.gte, gt=cond.gt, lte=cond.lte, lt=cond.lt)  # type: ignore[arg-type]
    return qm.Range(gte=_num(cond.gte), gt=_num(cond.gt), lte=_num(cond.lte), lt=_num(cond.lt))


def _num(value: float | str | None) -> float | None:
    return None if value is None else float(value)
