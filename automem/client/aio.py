"""The asynchronous client (httpx.AsyncClient); the same methods as `AutomemClient`, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar, Unpack

import httpx

from automem.client import _calls as calls
from automem.client._calls import (
    Association,
    AssociationProps,
    MemoryFields,
    NewMemory,
    RecallParams,
    RelationKey,
    RestoreMode,
    RestoreVectors,
    TagMatch,
    TagMode,
    UpdateFields,
)
from automem.client._core import (
    DEFAULT_TIMEOUT,
    Attempts,
    Base,
    Call,
    RetryPolicy,
    archive_bytes,
    failure,
    outcome,
)
from automem.client._core import transport_error as _transport_error
from automem.schemas import (
    AnalyzeResponse,
    AssociateBatchResult,
    AssociateResult,
    BatchResult,
    ByTagResponse,
    ConsolidateResult,
    ConsolidationStatus,
    DeleteByTagResult,
    DeleteResult,
    EnrichmentStatus,
    ExistingResult,
    HealthResponse,
    HistoryResponse,
    JobsResponse,
    Memory,
    RecallResponse,
    RecoverResult,
    ReembedProgress,
    ReembedStarted,
    RelatedResponse,
    ReprocessResult,
    RestoreResult,
    StartupRecallResponse,
    StoreResult,
    SyncResult,
    TagsResponse,
)

T = TypeVar("T")


class AsyncAutomemClient(Base):
    """The asynchronous client of the automem HTTP API; see `AutomemClient` for the contract.

        async with AsyncAutomemClient("http://127.0.0.1:8001", api_key="...") as mem:
            stored = await mem.store("Chose PostgreSQL for ACID", tags=["db"], importance=0.9)
            found = await mem.recall("database decisions", limit=5)

    Errors raise the `automem.client.errors` tree. Network errors and 5xx answers are retried
    (`retry`, default 3 retries after 0.5, 1 and 2 s), 4xx never; `timeout` (25 s) bounds a
    whole call, retries included. Writes that could repeat an effect on a retry carry an
    Idempotency-Key, so a retried store never stores twice.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8001",
        api_key: str | None = None,
        *,
        admin_token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, admin_token, timeout, retry)
        self._http = httpx.AsyncClient(base_url=self.base_url, transport=transport, timeout=timeout)

    @classmethod
    def from_env(cls, **overrides: Any) -> AsyncAutomemClient:
        """A client configured by the settings registry: AUTOMEM_ENDPOINT, AUTOMEM_API_KEY (else
        AUTOMEM_API_TOKEN), ADMIN_API_TOKEN, AUTOMEM_CLIENT_TIMEOUT_SECONDS, AUTOMEM_CLIENT_RETRIES."""
        from automem.client import settings_kwargs

        return cls(**{**settings_kwargs(), **overrides})

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncAutomemClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # --- sending ------------------------------------------------------------------------------
    async def _open(self, call: Call[Any]) -> httpx.Response:
        """Send with retries; the answer (not yet read when streaming) or the error raised."""
        attempts = Attempts(self.retry, self.timeout)
        headers = self._headers(call)  # once: every attempt carries the same Idempotency-Key
        while True:
            try:
                request = self._request(self._http, call, headers, attempts.remaining())
                response = await self._http.send(request, stream=call.stream)
            except httpx.TransportError as exc:
                await asyncio.sleep(attempts.next_delay(_transport_error(exc)))
                continue
            if call.stream and response.status_code >= 400:
                await response.aread()
            error = failure(call, response)
            if error is None:
                return response
            await response.aclose()
            await asyncio.sleep(attempts.next_delay(error))

    async def _run(self, call: Call[T]) -> T:
        response = await self._open(call)
        try:
            return outcome(call, response)
        finally:
            await response.aclose()

    # --- memories -----------------------------------------------------------------------------
    async def store(
        self, content: str, *, idempotency_key: str | None = None, **fields: Unpack[MemoryFields]
    ) -> StoreResult:
        """POST /memory. Identical content already stored answers `deduplicated=True`."""
        return await self._run(calls.store(content, fields, idempotency_key))

    async def store_batch(
        self, memories: Sequence[NewMemory], *, idempotency_key: str | None = None
    ) -> BatchResult:
        """POST /memory/batch: up to 1000, all validated before any is written."""
        return await self._run(calls.store_batch(memories, idempotency_key))

    async def get(self, memory_id: str) -> Memory:
        return (await self._run(calls.get(memory_id))).memory

    async def update(
        self, memory_id: str, *, idempotency_key: str | None = None, **fields: Unpack[UpdateFields]
    ) -> Memory:
        """PATCH /memory/<id>: metadata is merged (a None value removes a key); `if_version`
        makes a concurrent change a ConflictError instead of a lost update."""
        return (await self._run(calls.update(memory_id, fields, idempotency_key))).memory

    async def delete(
        self, memory_id: str, *, if_version: int | None = None, hard: bool = False, reason: str | None = None
    ) -> DeleteResult:
        """Soft delete (recoverable for RETENTION_DAYS); `hard=True` purges now (admin token);
        `reason` is recorded in the memory's history."""
        return await self._run(calls.delete(memory_id, if_version, hard, reason))

    async def recover(self, memory_id: str, *, reason: str | None = None) -> RecoverResult:
        return await self._run(calls.recover(memory_id, reason))

    async def history(self, memory_id: str, *, limit: int = 50, before: int | None = None) -> HistoryResponse:
        """The audit trail, newest first; pass the last event's `rev` as `before` for the next page."""
        return await self._run(calls.history(memory_id, limit, before))

    # --- tags and recall ----------------------------------------------------------------------
    async def recall(self, query: str | None = None, **params: Unpack[RecallParams]) -> RecallResponse:
        return await self._run(calls.recall(query, params))

    async def by_tag(
        self,
        tags: Sequence[str] | str,
        *,
        limit: int = 50,
        offset: int = 0,
        tag_mode: TagMode = "any",
        tag_match: TagMatch = "prefix",
    ) -> ByTagResponse:
        return await self._run(calls.by_tag(tags, limit, offset, tag_mode, tag_match))

    async def delete_by_tag(
        self,
        tags: Sequence[str] | str,
        *,
        tag_mode: TagMode = "any",
        tag_match: TagMatch = "prefix",
        preview: bool = False,
        hard: bool = False,
        reason: str | None = None,
    ) -> DeleteByTagResult:
        """Soft-delete every memory under the tags (`preview`: only count them; `hard`: purge at
        once, with the admin token)."""
        return await self._run(calls.delete_by_tag(tags, tag_mode, tag_match, preview, hard, reason))

    async def tags(self, prefix: str | None = None) -> TagsResponse:
        return await self._run(calls.tags(prefix))

    async def startup_recall(self, *, limit: int = 10, rules_limit: int = 5) -> StartupRecallResponse:
        return await self._run(calls.startup_recall(limit, rules_limit))

    async def analyze(self) -> AnalyzeResponse:
        return await self._run(calls.analyze())

    # --- relationships ------------------------------------------------------------------------
    async def associate(
        self,
        memory1_id: str,
        memory2_id: str,
        type: str = "RELATES_TO",
        strength: float = 0.5,
        **props: Unpack[AssociationProps],
    ) -> AssociateResult:
        return await self._run(calls.associate(memory1_id, memory2_id, type, strength, props))

    async def associate_many(self, associations: Sequence[Association]) -> AssociateBatchResult:
        """Up to 500 edges; `failed` lists the ones that were not written and why."""
        return await self._run(calls.associate_many(associations))

    async def related(
        self,
        memory_id: str,
        *,
        relationship_types: Sequence[str] | None = None,
        max_depth: int = 1,
        limit: int = 5,
    ) -> RelatedResponse:
        return await self._run(calls.related(memory_id, relationship_types, max_depth, limit))

    # --- operations ---------------------------------------------------------------------------
    async def health(self) -> HealthResponse:
        """GET /health; a 503 (graph unreachable) is returned as a report, not raised."""
        return await self._run(calls.health())

    async def enrichment_status(self) -> EnrichmentStatus:
        return await self._run(calls.enrichment_status())

    async def reprocess(
        self, ids: Sequence[str] | None = None, *, all: bool = False, failed: bool = False
    ) -> ReprocessResult:
        return await self._run(calls.reprocess(ids, all, failed))

    async def jobs(self) -> JobsResponse:
        return await self._run(calls.jobs())

    async def sync_vectors(self, *, all: bool = False) -> SyncResult:
        return await self._run(calls.sync_vectors(all))

    async def existing(
        self, ids: Sequence[str] = (), relations: Sequence[RelationKey] = ()
    ) -> ExistingResult:
        """POST /admin/existing: which of these memory ids (up to 1000) and edges (up to 1000)
        already exist; importers skip them."""
        return await self._run(calls.existing(ids, relations))

    async def reembed(self, mode: Literal["missing", "all"] = "missing") -> ReembedStarted:
        return await self._run(calls.reembed(mode))

    async def reembed_progress(self) -> ReembedProgress:
        return await self._run(calls.reembed_progress())

    async def consolidate(self, mode: str = "full", *, dry_run: bool = True) -> ConsolidateResult:
        return await self._run(calls.consolidate(mode, dry_run))

    async def consolidation_status(self) -> ConsolidationStatus:
        return await self._run(calls.consolidation_status())

    async def backup(self, destination: str | Path | BinaryIO) -> int:
        """Stream GET /backup into a file (path or binary file object); the bytes written."""
        call = calls.backup()
        response = await self._open(call)
        try:
            outcome(call, response)
            if isinstance(destination, str | Path):
                with open(destination, "wb") as out:
                    return await _copy(response, out)
            return await _copy(response, destination)
        finally:
            await response.aclose()

    async def restore(
        self,
        archive: str | Path | bytes | BinaryIO,
        *,
        mode: RestoreMode = "empty",
        vectors: RestoreVectors = "archive",
    ) -> RestoreResult:
        """POST /admin/restore: rebuild the store from a backup archive. `mode="replace"` wipes a
        store that holds memories first; `vectors="graph"` rebuilds the points from the graph."""
        return await self._run(calls.restore(archive_bytes(archive), mode, vectors))

    async def metrics(self) -> str:
        return await self._run(calls.metrics())

    async def openapi(self) -> dict[str, Any]:
        return await self._run(calls.openapi())


async def _copy(response: httpx.Response, out: BinaryIO) -> int:
    total = 0
    async for chunk in response.aiter_bytes():
        out.write(chunk)
        total += len(chunk)
    return total
