"""Backup archives: one gzip'd JSON-lines stream of the graph (memories, history, every other node,
every edge) and the vector points with their payloads.

Format `automem-backup`, version 1; one JSON object per line, in this order:

    {"kind": "header", "format": "automem-backup", "version": 1, "created_at": ..., "service_version": ...,
     "graph": ..., "embedding": {"provider", "model", "label", "dimension"}, "vector_backend": ...,
     "counts": {<label>: n, "edges": n, "vectors": n}}          (counts when the backup started)
    {"kind": "memory", "props": {every property but the embedding}, "embedding": [...] | null}
    {"kind": "event", "props": {...}}                           a history event (:MemoryEvent)
    {"kind": "node", "labels": [...], "props": {...}}           entities, patterns, consolidation runs
    {"kind": "edge", "type": ..., "from": {"label", "key"}, "to": {"label", "key"}, "props": {...}}
    {"kind": "vector", "id": ..., "vector": [...] | null, "payload": {...}}
    {"kind": "end", "counts": {"memory": n, "event": n, "node": n, "edge": n, "vector": n}}

Memory, event and node records may interleave; all of them come before the edges, the edges
before the vectors. The `end` record makes a truncated archive detectable even where the gzip
stream happens to end cleanly. The backup is read in pages while the service runs: it is not a
point-in-time snapshot (a memory written meanwhile may be missing, and an edge to it is skipped
at restore); quiesce writers for an exact copy.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import ValidationError
from tqdm import tqdm

from automem import __version__
from automem.errors import ConfigurationError, InvalidInput
from automem.models import StoredMemory
from automem.stores.graph_lifecycle import NODE_KEYS, checked_name
from automem.timeutil import now_iso
from automem.validation import (
    check_graph_float,
    check_property_key,
    check_storable,
    check_uuid,
    check_vector,
)

if TYPE_CHECKING:
    from automem.services import Services
    from automem.settings import Settings

log = logging.getLogger(__name__)

FORMAT = "automem-backup"
FORMAT_VERSION = 1
MEDIA_TYPE = "application/gzip"
NODE_WINDOW = 1000  # internal node ids per graph read
VECTOR_PAGE = 256
CHUNK = 1 << 20  # bytes per read of an upload or a file
_INFLATE_STEP = 1 << 20  # decompressed bytes per step: a small, highly compressed body cannot balloon
MAX_LINE = 16 << 20
_PHASES = {"header": 0, "memory": 1, "event": 1, "node": 1, "edge": 2, "vector": 3, "end": 4}
COUNTED = ("memory", "event", "node", "edge", "vector")
# The fields of each record kind (the header may carry more: it is informational). A record with
# any other field is refused, so a restore either takes every field of an archive or refuses it.
_FIELDS = {
    "memory": {"kind", "props", "embedding"},
    "event": {"kind", "props"},
    "node": {"kind", "labels", "props"},
    "edge": {"kind", "type", "from", "to", "props"},
    "vector": {"kind", "id", "vector", "payload"},
    "end": {"kind", "counts"},
}


# --- writing ----------------------------------------------------------------------------------------
def backup_header(svc: Services, tenant: str | None = None) -> dict[str, Any]:
    """The header record; read before streaming, so an unreachable store fails the request (503)
    instead of truncating a 200 response. With `tenant`, the archive holds that tenant only
    (its memories, history, entities and the edges between them, its vector points)."""
    if tenant is None:
        counts = svc.graph.graph_counts()
        counts["vectors"] = svc.vectors.count() if svc.vectors is not None else 0
    else:
        counts = {"Memory": svc.graph.tenant_usage(tenant)["memories"]}
    header = {
        "kind": "header",
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "created_at": now_iso(),
        "service_version": __version__,
        "graph": svc.graph.graph_name,
        "embedding": {
            "provider": svc.embedder.name,
            "model": svc.embedder.model,
            "label": svc.embedder.label,
            "dimension": svc.embedder.dimension,
        },
        "vector_backend": svc.vectors.backend if svc.vectors is not None else None,
        "counts": counts,
    }
    if tenant is not None:
        header["tenant"] = tenant
    return header


def archive_records(svc: Services, header: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every record of a backup, paging through the graph and the vector store."""
    yield header
    tenant = header.get("tenant")
    seen: Counter[str] = Counter()
    kept: set[tuple[str, Any]] = set()  # (label, key) of a tenant archive's nodes
    bound = svc.graph.node_id_bound()
    for low in range(0, bound, NODE_WINDOW):
        for labels, props in svc.graph.nodes_window(low, low + NODE_WINDOW):
            if tenant is not None and not _keep(labels, props, tenant, kept):
                continue
            record = _node_record(labels, props)
            if record is not None:
                seen[record["kind"]] += 1
                yield record
    for low in range(0, bound, NODE_WINDOW):
        for edge in svc.graph.edges_window(low, low + NODE_WINDOW):
            if tenant is not None and not {_end_key(edge["from"]), _end_key(edge["to"])} <= kept:
                continue
            seen["edge"] += 1
            yield {"kind": "edge", **edge}
    if svc.vectors is not None:
        for point in svc.vectors.iter_records(page=VECTOR_PAGE, with_vectors=True):
            if tenant is not None and point.payload.get("tenant") != tenant:
                continue
            seen["vector"] += 1
            yield {"kind": "vector", "id": point.id, "vector": point.vector, "payload": point.payload}
    yield {"kind": "end", "counts": {kind: seen[kind] for kind in COUNTED}}


def _keep(labels: list[str], props: dict[str, Any], tenant: str, kept: set[tuple[str, Any]]) -> bool:
    """Whether a tenant archive takes this node (remembering the endpoints its edges may use)."""
    if props.get("tenant") != tenant:
        return False
    label = labels[0] if labels else ""
    if label in NODE_KEYS:
        kept.add((label, props.get(NODE_KEYS[label])))
    return True


def _end_key(end: dict[str, Any]) -> tuple[str, Any]:
    return (str(end.get("label")), end.get("key"))


def _node_record(labels: list[str], props: dict[str, Any]) -> dict[str, Any] | None:
    if labels == ["Memory"]:
        embedding = props.pop("embedding", None)
        return {"kind": "memory", "props": props, "embedding": list(embedding) if embedding else None}
    if labels == ["MemoryEvent"]:
        return {"kind": "event", "props": props}
    if not labels:
        log.warning("backup skips a node without a label")
        return None
    return {"kind": "node", "labels": labels, "props": props}


def gzip_lines(records: Iterable[dict[str, Any]], flush_at: int = 1 << 16) -> Iterator[bytes]:
    """Records as gzip'd JSON lines, compressed as they come (nothing is held but one chunk).
    Level 1: vectors are most of an archive and barely compress; level 6 took 2.7x the time for
    an archive 7% smaller (5,000 memories with 384-d vectors)."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    pending = bytearray()
    for record in records:
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False, default=str) + "\n"
        pending += compressor.compress(line.encode())
        if len(pending) >= flush_at:
            yield bytes(pending)
            pending.clear()
    pending += compressor.flush()
    yield bytes(pending)


# --- reading ----------------------------------------------------------------------------------------
def invalid(message: str) -> InvalidInput:
    return InvalidInput(f"invalid backup archive: {message}", field="body", reason="invalid_archive")


def archive_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a gzip'd archive given as byte chunks; 400 `invalid_archive` for anything
    that is not one complete gzip stream (corrupt, truncated, trailing data) or has a huge line."""
    inflater = zlib.decompressobj(31)
    pending = b""
    for chunk in chunks:
        for data in _inflate(inflater, chunk):
            pending += data
            *lines, pending = pending.split(b"\n")
            yield from (line for line in lines if line.strip())
            if len(pending) > MAX_LINE:
                raise invalid(f"a line is longer than {MAX_LINE} bytes")
    if not inflater.eof:
        raise invalid("the gzip stream ends early (a truncated or incomplete archive)")
    if pending.strip():
        yield pending


def _inflate(inflater: Any, chunk: bytes) -> Iterator[bytes]:
    if inflater.eof:
        if chunk:
            raise invalid("data follows the end of the gzip stream")
        return
    try:
        yield inflater.decompress(chunk, _INFLATE_STEP)
        while inflater.unconsumed_tail:
            yield inflater.decompress(inflater.unconsumed_tail, _INFLATE_STEP)
    except zlib.error as exc:
        raise invalid(f"not a valid gzip stream ({exc})") from exc
    if inflater.eof and inflater.unused_data:
        raise invalid("data follows the end of the gzip stream")


def file_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


@dataclass
class ArchiveCheck:
    """Validates records in order; after `finish()` the archive is known to be complete,
    well-formed and self-consistent, so a restore can replace the store without discovering a
    problem half-way.

    With `settings` (a restore), every memory must pass the rules the API applies to a write
    (`automem.validation`, through `StoredMemory`) and the stored fields' own; ids are UUIDs and
    unique, node keys unique per label, every edge joins two nodes of the archive and every
    vector point belongs to one of its memories. Without (the CLI checking a download) only the
    form is checked."""

    settings: Settings | None = None
    header: dict[str, Any] | None = None
    counts: Counter[str] = field(default_factory=Counter)
    phase: int = -1
    ended: bool = False
    embeddings: int = 0  # memories carrying an embedding
    memory_ids: set[str] = field(default_factory=set)
    node_keys: dict[str, set[Any]] = field(default_factory=dict)
    point_ids: set[str] = field(default_factory=set)

    @property
    def dimension(self) -> int:
        return int((self.header or {})["embedding"]["dimension"])

    def record(self, number: int, line: bytes) -> dict[str, Any]:
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise invalid(f"line {number} is not JSON") from exc
        # A kind that is a list or an object cannot be looked up (unhashable): not a known kind either.
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("kind"), str)
            or record["kind"] not in _PHASES
        ):
            raise invalid(f"line {number} is not a record of a known kind")
        kind = str(record["kind"])
        if self.ended:
            raise invalid(f"line {number} follows the end record")
        if self.phase < 0 and kind != "header":
            raise invalid("the first line is not the header")
        if _PHASES[kind] < self.phase or (kind == "header" and self.phase >= 0):
            raise invalid(f"line {number}: a {kind} record out of order")
        self.phase = _PHASES[kind]
        unknown = set(record) - _FIELDS.get(kind, set(record))
        if unknown:
            raise invalid(f"line {number}: a {kind} record with unknown fields {sorted(unknown)}")
        try:
            getattr(self, f"_{kind}")(record)
        except (KeyError, TypeError, ValueError) as exc:
            raise invalid(f"line {number}: a malformed {kind} record ({exc})") from exc
        if kind in COUNTED:
            self.counts[kind] += 1
        return record

    def finish(self) -> None:
        if self.header is None:
            raise invalid("the archive is empty")
        if not self.ended:
            raise invalid("the end record is missing (a truncated archive)")

    def _header(self, record: dict[str, Any]) -> None:
        if record.get("format") != FORMAT:
            raise ValueError(f"format is {record.get('format')!r}, not {FORMAT!r}")
        version = record.get("version")
        if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
            raise invalid(f"format version {version!r}; this service reads version {FORMAT_VERSION}")
        dimension = record["embedding"]["dimension"]
        if not isinstance(dimension, int) or dimension < 1:
            raise ValueError("embedding.dimension must be a positive integer")
        self.header = record

    def _memory(self, record: dict[str, Any]) -> None:
        props = _properties(record["props"])
        memory_id = props.get("id")
        if not isinstance(memory_id, str) or check_uuid(memory_id) != memory_id:
            raise ValueError(f"props.id {memory_id!r} is not a UUID in its canonical form")
        if memory_id in self.memory_ids:
            raise ValueError(f"memory {memory_id} appears twice")
        self.memory_ids.add(memory_id)
        self._keyed("Memory", memory_id)
        if self.settings is not None:
            check_stored_memory(props, self.settings)
        self._vector_of(record.get("embedding"))
        self.embeddings += record.get("embedding") is not None

    def _event(self, record: dict[str, Any]) -> None:
        if not isinstance(_properties(record["props"]).get("memory_id"), str):
            raise ValueError("props.memory_id must be a string")

    def _node(self, record: dict[str, Any]) -> None:
        labels = record["labels"]
        if not isinstance(labels, list) or not labels or labels[0] not in _NODE_LABELS:
            raise ValueError(f"labels must start with one of {', '.join(_NODE_LABELS)}")
        for label in labels:
            checked_name(label)
        props = _properties(record["props"])
        key = props.get(NODE_KEYS[labels[0]])
        if not isinstance(key, str | int) or isinstance(key, bool):
            raise ValueError(f"a :{labels[0]} node needs its key property {NODE_KEYS[labels[0]]!r}")
        self._keyed(labels[0], key)

    def _keyed(self, label: str, key: Any) -> None:
        seen = self.node_keys.setdefault(label, set())
        if key in seen:
            raise ValueError(f"two :{label} nodes have the key {key!r}")
        seen.add(key)

    def _edge(self, record: dict[str, Any]) -> None:
        checked_name(record["type"])
        for end in ("from", "to"):
            ref = _mapping(record[end])
            if (
                set(ref) != {"label", "key"}
                or ref["label"] not in NODE_KEYS
                or not isinstance(ref["key"], str | int)
                or isinstance(ref["key"], bool)
            ):
                raise ValueError(f"{end} must name a node by label ({', '.join(NODE_KEYS)}) and key")
            if self.settings is not None and ref["key"] not in self.node_keys.get(ref["label"], ()):
                raise ValueError(f"{end} names :{ref['label']} {ref['key']!r}, which is not in the archive")
        _properties(record["props"])

    def _vector(self, record: dict[str, Any]) -> None:
        point_id = record["id"]
        if not isinstance(point_id, str):
            raise ValueError("id must be a string")
        if self.settings is not None and point_id not in self.memory_ids:
            raise ValueError(f"vector point {point_id!r} belongs to no memory of the archive")
        if point_id in self.point_ids:
            raise ValueError(f"vector point {point_id!r} appears twice")
        self.point_ids.add(point_id)
        check_storable(_mapping(record["payload"]), "payload")
        self._vector_of(record.get("vector"))

    def _end(self, record: dict[str, Any]) -> None:
        declared = _mapping(record["counts"])
        for kind in COUNTED:
            if int(declared.get(kind, 0)) != self.counts[kind]:
                raise invalid(
                    f"the end record counts {declared.get(kind, 0)} {kind} records; the archive "
                    f"holds {self.counts[kind]}"
                )
        self.ended = True

    def _vector_of(self, vector: Any) -> None:
        if vector is not None:
            try:
                check_vector(vector, self.dimension)
            except ValueError as exc:
                raise ValueError(f"a vector {exc}") from exc


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("expected an object")
    return value


_SCALARS = (str, int, float, bool)


def _properties(value: Any) -> dict[str, Any]:
    """Graph properties: identifier keys, scalars or lists of scalars (what FalkorDB can store),
    text and numbers the stores can hold."""
    props = _mapping(value)
    for key, item in props.items():
        check_property_key(key)
        if isinstance(item, list):
            if not all(isinstance(x, _SCALARS) for x in item):
                raise ValueError(f"property {key!r} holds a list of non-scalars")
        elif not isinstance(item, _SCALARS):
            raise ValueError(f"property {key!r} is not a scalar or a list of scalars")
        for number in item if isinstance(item, list) else [item]:
            check_graph_float(number, f"property {key!r}")
    check_storable(props, "props")
    return props


_STATES = ("active", "deleted", "archived")
# Labels of the nodes besides memories (memory records carry those).
_NODE_LABELS = tuple(label for label in NODE_KEYS if label != "Memory")
# A stored memory's fields as the API takes them: an archive's memory must pass the same rules.
_WRITABLE = (
    "content", "type", "confidence", "tags", "importance", "timestamp", "t_valid", "t_invalid",
    "updated_at", "last_accessed",
)  # fmt: skip


def check_stored_memory(props: dict[str, Any], settings: Settings) -> None:
    """A memory node's properties, held to the rules of a write through the API and to the stored
    fields' own (state, counters, tenant, metadata as JSON text of an object)."""
    if props.get("state") not in _STATES:
        raise ValueError(f"state {props.get('state')!r} is not one of {', '.join(_STATES)}")
    for counter in ("version", "rev"):
        value = props.get(counter)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{counter} must be a positive integer")
    if not isinstance(props.get("tenant"), str) or not props["tenant"]:
        raise ValueError("tenant must be a non-empty string")
    body = {name: props[name] for name in _WRITABLE if props.get(name) is not None}
    body["metadata"] = _metadata_object(props.get("metadata"))
    try:
        StoredMemory.model_validate(body, context={"settings": settings})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "memory"
        raise ValueError(f"{where}: {first.get('msg', 'invalid')}") from exc


def _metadata_object(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as exc:
        raise ValueError("metadata is not JSON text") from exc
    if not isinstance(value, dict):
        raise ValueError("metadata is not the JSON text of an object")
    return value


def checked_records(chunks: Iterable[bytes], check: ArchiveCheck | None = None) -> Iterator[dict[str, Any]]:
    """Validated records of an archive (raises 400 `invalid_archive` at the first problem)."""
    check = check or ArchiveCheck()
    for number, line in enumerate(archive_lines(chunks), 1):
        yield check.record(number, line)
    check.finish()


# --- the CLI's side: `automem backup` and `automem restore` talk to the running service ------------
def service_url(settings: Settings) -> str:
    host = settings.host if settings.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    return f"http://{host}:{settings.port}"


def admin_headers(settings: Settings) -> dict[str, str]:
    if not settings.admin_token:
        raise ConfigurationError("ADMIN_API_TOKEN is not set: backup and restore are admin routes")
    headers = {"X-Admin-Token": settings.admin_token}
    if settings.api_token:
        headers["X-API-Key"] = settings.api_token
    return headers


def _failure(response: httpx.Response) -> ConfigurationError:
    try:
        message = response.json().get("error") or response.text
    except ValueError:
        message = response.text
    return ConfigurationError(f"the service answered {response.status_code}: {message}")


@contextmanager
def _reaching(url: str) -> Iterator[None]:
    try:
        yield
    except httpx.TransportError as exc:
        raise ConfigurationError(
            f"cannot reach the service at {url} ({exc.__class__.__name__}); start it with `automem serve` "
            "or pass --url"
        ) from exc


def download_backup(url: str, headers: dict[str, str], output: Path | None) -> dict[str, Any]:
    """Stream GET /backup into `output` (`.part` until it is verified complete)."""
    timeout = httpx.Timeout(30.0, read=None)
    with _reaching(url), httpx.stream("GET", f"{url}/backup", headers=headers, timeout=timeout) as response:
        if response.status_code != 200:
            response.read()
            raise _failure(response)
        disposition = response.headers.get("Content-Disposition", "")
        name = disposition.split('filename="', 1)[-1].rstrip('"') if "filename=" in disposition else None
        target = output or Path(name or "automem-backup.jsonl.gz")
        partial = target.with_name(target.name + ".part")
        with (
            partial.open("wb") as handle,
            tqdm(unit="B", unit_scale=True, desc="backup", disable=None) as bar,
        ):
            for chunk in response.iter_bytes():
                handle.write(chunk)
                bar.update(len(chunk))
    check = ArchiveCheck()
    for _ in checked_records(file_chunks(partial), check):
        pass
    partial.replace(target)
    return {"file": str(target), "bytes": target.stat().st_size, "counts": dict(check.counts)}


def upload_restore(
    url: str, headers: dict[str, str], path: Path, replace: bool, vectors_from_graph: bool
) -> dict[str, Any]:
    """POST the archive to /admin/restore with a progress bar; the service's answer."""
    size = path.stat().st_size
    params = {
        "mode": "replace" if replace else "empty",
        "vectors": "graph" if vectors_from_graph else "archive",
    }
    bar = tqdm(total=size, unit="B", unit_scale=True, desc="restore", disable=None)

    def body() -> Iterator[bytes]:
        for chunk in file_chunks(path):
            bar.update(len(chunk))
            yield chunk
        bar.close()

    upload = {**headers, "Content-Type": MEDIA_TYPE, "Content-Length": str(size)}
    with _reaching(url):
        response = httpx.post(
            f"{url}/admin/restore",
            params=params,
            headers=upload,
            content=body(),
            timeout=httpx.Timeout(30.0, read=None),
        )
    if response.status_code != 200:
        raise _failure(response)
    result: dict[str, Any] = response.json()
    return result
