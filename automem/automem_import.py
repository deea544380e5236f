"""`automem import-automem`: copy a running AutoMem's store into this service.

AutoMem's FalkorDB graph is the source of every field; its Qdrant collection, when given, only
of the vectors. Writes go through this service's HTTP API like any client's (POST /memory/batch
with AutoMem's ids, POST /associate for authored relations): the one write path validates,
normalises and queues embedding and enrichment, and in embedded mode the API process owns the
vector shard, so nothing here opens our stores. An import is re-runnable: before each batch,
POST /admin/existing says which ids and edges an earlier run stored, and those are skipped.
What AutoMem derived (SIMILAR_TO, PRECEDED_BY, DISCOVERED edges, entities, patterns, cluster
summaries) is counted, not copied: our enrichment and consolidation recompute it.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from tqdm import tqdm

from automem.automem_mapping import (
    Changes,
    MappedMemory,
    Refused,
    association,
    map_memory,
    relation_kind,
    usable_vector,
)
from automem.client import (
    Association,
    AutomemClient,
    AutomemClientError,
    BadRequestError,
    ConflictError,
    NewMemory,
    PayloadTooLargeError,
    RateLimitError,
    RelationKey,
)
from automem.errors import AutomemError, ConfigurationError, InvalidInput
from automem.models import MemoryCreate, parse
from automem.schemas import BatchResult
from automem.settings import Settings
from automem.stores.automem_source import AutoMemGraph, SourceEdge
from automem.stores.vectors.automem_source import AutoMemVectors

log = logging.getLogger(__name__)

T = TypeVar("T")

ASSOCIATE_BATCH = 500  # POST /associate's limit
LISTED = 50  # refused memories and warnings listed in the report (the rest are counted)
# The report's relation sections, each by type; always present so the report has one shape.
RELATION_OUTCOMES = (
    "created",  # written by POST /associate (with --dry-run: would be)
    "existing",  # an earlier run wrote it
    "failed",  # refused by the service (the warnings say why)
    "skipped_system",  # AutoMem's derived edges (SIMILAR_TO, PRECEDED_BY, DISCOVERED...): recomputed
    "skipped_unknown",  # types in no registry
    "skipped_endpoint_not_imported",  # an end was refused
    "skipped_merged_by_dedup",  # content dedup made both ends one memory, or two edges one
    "skipped_other_nodes",  # edges of entities, patterns and cluster summaries
)
_RATE_LIMIT_RETRIES = 10
_ITEM_FIELD = re.compile(r"^memories\[(\d+)\]")


@dataclass(frozen=True)
class ImportOptions:
    batch: int = 500  # memories per POST /memory/batch (and per existence check)
    dry_run: bool = False  # read, map and check existence; write nothing
    reembed: bool = False  # never send AutoMem's vectors: our workers embed every memory
    max_body_bytes: int = 1_048_576  # the service's request body limit (a 413 halves a batch anyway)
    window: int = 2000  # internal node ids per read of AutoMem's graph
    settings: Settings = field(default_factory=Settings)  # limits a dry run validates against


@dataclass
class Report:
    """What an import did; `as_dict()` is the JSON the command prints."""

    dry_run: bool
    source: dict[str, Any] = field(default_factory=dict)
    target: dict[str, Any] = field(default_factory=dict)
    memories: Counter[str] = field(default_factory=Counter)
    changes: Changes = field(default_factory=Changes)
    vectors: dict[str, Any] = field(default_factory=dict)
    relations: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    refused: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unlisted_warnings: int = 0
    error: str | None = None

    def warn(self, message: str) -> None:
        if len(self.warnings) < LISTED:
            self.warnings.append(message)
        else:
            self.unlisted_warnings += 1

    def refuse(self, source_id: Any, reason: str) -> None:
        self.memories["refused"] += 1
        if len(self.refused) < LISTED:
            self.refused.append({"id": source_id, "reason": reason})

    def as_dict(self) -> dict[str, Any]:
        memories = {k: self.memories[k] for k in ("read", "created", "existing", "deduplicated", "refused")}
        warnings = list(self.warnings)
        if self.unlisted_warnings:
            warnings.append(f"... and {self.unlisted_warnings} more warnings")
        out: dict[str, Any] = {
            "status": "failed" if self.error else "success",
            "dry_run": self.dry_run,
            "source": self.source,
            "target": self.target,
            "memories": memories,
            "mapping": {**dict(sorted(self.changes.counts.items())), "types": dict(self.changes.types)},
            "vectors": self.vectors,
            "relations": {kind: dict(sorted(self.relations[kind].items())) for kind in RELATION_OUTCOMES},
            "refused": self.refused,
            "warnings": warnings,
        }
        if self.error:
            out["error"] = self.error
        return out


class AutoMemImport:
    """One import run: memories first (so every relation finds both ends), then relations."""

    def __init__(
        self,
        graph: AutoMemGraph,
        vectors: AutoMemVectors | None,
        client: AutomemClient,
        options: ImportOptions,
        progress: bool | None = None,
    ) -> None:
        self.graph = graph
        self.vectors = vectors
        self.client = client
        self.options = options
        self.progress_disabled = None if progress is None else not progress  # None: only on a terminal
        self.report = Report(options.dry_run)
        self.id_map: dict[str, str] = {}  # AutoMem id -> our id (itself, or the duplicate's target)
        self.sent_relations: set[tuple[str, str, str]] = set()
        self.use_vectors = False
        self.dimension = 0

    def run(self) -> dict[str, Any]:
        """Import everything; the report (with `error` set when a failure stopped the run: what
        was written stays, and a re-run continues where it stopped)."""
        try:
            self._describe()
            bound = self.graph.node_id_bound()
            self._import_memories(bound)
            self._import_relations(bound)
        except (AutomemClientError, AutomemError, ConfigurationError) as exc:
            log.warning("import-automem stopped: %s", exc)
            self.report.error = f"{exc.__class__.__name__}: {exc}"
        except Exception as exc:  # a bug or a store's own error: the report still says how far it got
            log.exception("import-automem stopped")
            self.report.error = f"{exc.__class__.__name__}: {exc}"
        return self.report.as_dict()

    # --- what is where ----------------------------------------------------------------------------
    def _describe(self) -> None:
        counts = self.graph.label_counts()
        self.report.source = {"falkordb_graph": self.graph.graph_name, **counts}
        self.report.relations["skipped_other_nodes"].update(self.graph.other_edge_counts())
        health = self.client.health()
        self.dimension = health.embedding.dimension
        self.report.target = {"url": self.client.base_url, "embedding": health.embedding.model_dump()}
        self._vector_policy()

    def _vector_policy(self) -> None:
        """AutoMem's vectors are used when they have our dimension and --reembed was not given;
        otherwise they are left out and our workers embed each memory."""
        source = self.vectors
        info: dict[str, Any] = {"target_dimension": self.dimension}
        if source is not None:
            info |= {
                "collection": source.collection,
                "points": source.count(),
                "source_dimension": source.dimension,
            }
        if self.options.reembed:
            reason = "--reembed: every memory is embedded by this service's workers"
        elif source is None:
            reason = "no AutoMem Qdrant given (--qdrant-url or --qdrant-path): workers embed every memory"
        elif source.dimension != self.dimension:
            reason = (
                f"AutoMem's vectors have {source.dimension} dimensions, this service {self.dimension}: "
                "every memory is embedded by this service's workers"
            )
        else:
            reason = "same dimension: AutoMem's vectors are stored as given (--reembed if its model differs)"
            self.use_vectors = True
        self.report.vectors = {"policy": "used" if self.use_vectors else "re-embed", "reason": reason, **info}
        self.report.vectors.update({"used": 0, "missing": 0, "invalid": 0, "omitted": 0})

    # --- memories -------------------------------------------------------------------------------
    def _import_memories(self, bound: int) -> None:
        pending: list[MappedMemory] = []
        seen: set[str] = set()
        total = self.report.source.get("memories")
        with tqdm(total=total, desc="memories", unit="memory", disable=self.progress_disabled) as bar:
            for low in range(0, bound, self.options.window):
                for node in self.graph.memories_window(low, low + self.options.window):
                    self.report.memories["read"] += 1
                    bar.update()
                    mapped = self._mapped(node, seen)
                    if mapped is not None:
                        pending.append(mapped)
                    if len(pending) >= self.options.batch:
                        self._flush_memories(pending)
                        pending = []
            self._flush_memories(pending)

    def _mapped(self, node: dict[str, Any], seen: set[str]) -> MappedMemory | None:
        try:
            mapped = map_memory(node, self.report.changes)
        except Refused as exc:
            self.report.refuse(node.get("id"), str(exc))
            return None
        if mapped.id in seen:
            self.report.refuse(mapped.source_id, f"its id is another AutoMem memory's id ({mapped.id})")
            return None
        seen.add(mapped.id)
        return mapped

    def _flush_memories(self, pending: list[MappedMemory]) -> None:
        if not pending:
            return
        known = set(self._call(lambda: self.client.existing(ids=[m.id for m in pending])).ids)
        fresh = []
        for mapped in pending:
            if mapped.id in known:
                self._imported(mapped, mapped.id, "existing")
            else:
                fresh.append(mapped)
        self._attach_vectors(fresh)
        if self.options.dry_run:
            self._would_store(fresh)
            return
        for chunk in self._by_size(fresh):
            self._store(chunk)

    def _would_store(self, fresh: list[MappedMemory]) -> None:
        """A dry run validates with this machine's settings (the service's, when they share the
        environment); content dedup is the service's to find, so duplicates count as created."""
        for mapped in fresh:
            try:
                parse(MemoryCreate, mapped.item, self.options.settings)
            except InvalidInput as exc:
                self.report.refuse(mapped.source_id, exc.message)
                continue
            self._imported(mapped, mapped.id, "created")

    def _imported(self, mapped: MappedMemory, our_id: str, outcome: str) -> None:
        self.id_map[mapped.source_id] = our_id
        self.report.memories[outcome] += 1

    def _attach_vectors(self, fresh: list[MappedMemory]) -> None:
        counts = self.report.vectors
        if not self.use_vectors or self.vectors is None:
            counts["omitted"] += len(fresh)
            return
        found = self.vectors.vectors([m.source_id for m in fresh])
        for mapped in fresh:
            vector = found.get(mapped.id)
            if vector is None:
                counts["missing"] += 1  # no point in AutoMem's collection: our workers embed it
            elif usable_vector(vector, self.dimension):
                mapped.item["embedding"] = vector
                counts["used"] += 1
            else:
                counts["invalid"] += 1
                self.report.warn(f"memory {mapped.source_id}: AutoMem's vector is not finite; re-embedded")

    def _by_size(self, items: list[MappedMemory]) -> Iterator[list[MappedMemory]]:
        """Chunks whose JSON stays under the service's body limit (vectors make items large)."""
        budget = int(self.options.max_body_bytes * 0.9)
        chunk: list[MappedMemory] = []
        size = 0
        for mapped in items:
            n = len(json.dumps(mapped.item).encode()) + 1
            if chunk and size + n > budget:
                yield chunk
                chunk, size = [], 0
            chunk.append(mapped)
            size += n
        if chunk:
            yield chunk

    def _store(self, chunk: list[MappedMemory]) -> None:
        """POST /memory/batch. The service validates all or nothing, so an item it refuses (400
        naming `memories[i]`) is reported and the rest is sent again; a 413 halves the chunk."""
        while chunk:
            items = cast(list[NewMemory], [m.item for m in chunk])
            try:
                result = self._call(lambda: self.client.store_batch(items))  # noqa: B023 (called at once)
            except PayloadTooLargeError:
                if len(chunk) == 1:
                    self.report.refuse(chunk[0].source_id, "larger than the service's request body limit")
                    return
                half = len(chunk) // 2
                self._store(chunk[:half])
                self._store(chunk[half:])
                return
            except BadRequestError as exc:
                index = _item_index(exc.field)
                if index is None or index >= len(chunk):
                    raise
                self.report.refuse(chunk[index].source_id, exc.message)
                chunk = chunk[:index] + chunk[index + 1 :]
                continue
            except ConflictError as exc:
                chunk = self._without_taken(chunk, exc)
                continue
            self._record(chunk, result)
            return

    def _without_taken(self, chunk: list[MappedMemory], exc: ConflictError) -> list[MappedMemory]:
        """A 409 `duplicate_id`: an id was taken since the existence check (or is taken in another
        tenant). Skip what exists now; an id still refused is reported."""
        if exc.reason != "duplicate_id":
            raise exc
        known = set(self._call(lambda: self.client.existing(ids=[m.id for m in chunk])).ids)
        if not known:
            index = _item_index(exc.field)
            if index is None or index >= len(chunk):
                raise exc
            self.report.refuse(chunk[index].source_id, exc.message)
            return chunk[:index] + chunk[index + 1 :]
        for mapped in chunk:
            if mapped.id in known:
                self._imported(mapped, mapped.id, "existing")
        return [m for m in chunk if m.id not in known]

    def _record(self, chunk: list[MappedMemory], result: BatchResult) -> None:
        for mapped, item in zip(chunk, result.results, strict=True):
            if item.status == "created":
                self._imported(mapped, item.id, "created")
            elif item.status == "duplicate":
                self._imported(mapped, item.id, "deduplicated")  # item.id: the memory kept
            else:
                self._imported(mapped, mapped.id, "existing")

    # --- relations --------------------------------------------------------------------------------
    def _import_relations(self, bound: int) -> None:
        pending: list[dict[str, Any]] = []
        with tqdm(desc="relations", unit="edge", disable=self.progress_disabled) as bar:
            for low in range(0, bound, self.options.window):
                for edge in self.graph.memory_edges_window(low, low + self.options.window):
                    bar.update()
                    item = self._association(edge)
                    if item is not None:
                        pending.append(item)
                    if len(pending) >= ASSOCIATE_BATCH:
                        self._flush_relations(pending)
                        pending = []
            self._flush_relations(pending)

    def _association(self, edge: SourceEdge) -> dict[str, Any] | None:
        """The POST /associate item for an edge between memories, or None (counted) when it is
        AutoMem's derived structure, unknown, or an end was not imported."""
        rel_type = edge.type.strip().upper()
        kind = relation_kind(rel_type)
        skipped = self.report.relations
        if kind != "authorable":
            skipped[f"skipped_{kind}"][rel_type] += 1
            return None
        a, b = self.id_map.get(edge.source), self.id_map.get(edge.target)
        if a is None or b is None:
            skipped["skipped_endpoint_not_imported"][rel_type] += 1
            return None
        if a == b or (a, b, rel_type) in self.sent_relations:
            # Both ends became one memory, or another edge became this one (content dedup).
            skipped["skipped_merged_by_dedup"][rel_type] += 1
            return None
        self.sent_relations.add((a, b, rel_type))
        return association(rel_type, a, b, edge.props)

    def _flush_relations(self, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        keys: list[RelationKey] = [
            {"memory1_id": i["memory1_id"], "memory2_id": i["memory2_id"], "type": i["type"]} for i in items
        ]
        found = self._call(lambda: self.client.existing(relations=keys)).relations
        known = {(r.memory1_id, r.memory2_id, r.type) for r in found}
        fresh = []
        for item in items:
            if (item["memory1_id"], item["memory2_id"], item["type"]) in known:
                self.report.relations["existing"][item["type"]] += 1
            else:
                fresh.append(item)
        if self.options.dry_run:
            self.report.relations["created"].update(i["type"] for i in fresh)
        elif fresh:
            self._associate(fresh)

    def _associate(self, fresh: list[dict[str, Any]]) -> None:
        result = self._call(lambda: self.client.associate_many(cast(list[Association], fresh)))
        for ok in result.succeeded:
            self.report.relations["created"][str(ok.relation_type)] += 1
        for failed in result.failed:
            item = fresh[failed.index]
            self.report.relations["failed"][item["type"]] += 1
            self.report.warn(
                f"{item['type']} {item['memory1_id']} -> {item['memory2_id']} not created: {failed.reason}"
            )

    # --- calls ------------------------------------------------------------------------------------
    def _call(self, call: Callable[[], T]) -> T:
        """One API call, waiting out the service's rate limit (server mode limits writes per key)."""
        for _ in range(_RATE_LIMIT_RETRIES):
            try:
                return call()
            except RateLimitError as exc:
                time.sleep(exc.retry_after or 1.0)
        return call()


def _item_index(field_name: str | None) -> int | None:
    match = _ITEM_FIELD.match(field_name or "")
    return int(match.group(1)) if match else None
