"""Pydantic models for request bodies and query strings.

Limits that depend on settings (content length, tag and metadata limits) are read from the
validation context, so one model serves every configuration: `Model.model_validate(data,
context={"settings": settings})`. `parse()` turns a pydantic error into `InvalidInput` naming
the field at fault.
"""

from __future__ import annotations

import json
import math
import uuid
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from automem.classify import MEMORY_TYPES, canonical_type
from automem.errors import InvalidInput
from automem.relations import ALL_TYPES, AUTHORABLE, canonical_relation
from automem.settings import Settings
from automem.tags import normalize_tags, split_tag_input
from automem.validation import (
    as_unit_float,
    check_storable,
    check_tag,
    check_time,
    check_validity,
    check_vector,
    visible,
)

M = TypeVar("M", bound=BaseModel)

UnitFloat = Annotated[StrictFloat | StrictInt, Field(ge=0.0, le=1.0), AfterValidator(as_unit_float)]


def _settings(info: ValidationInfo) -> Settings:
    context = info.context or {}
    settings = context.get("settings")
    if not isinstance(settings, Settings):
        raise RuntimeError("validation context needs the settings")
    return settings


def _iso(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date-time string")
    return check_time(value)


IsoTime = Annotated[
    str | None,
    BeforeValidator(_iso),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}),
]

# Fields validated by hand (they accept several shapes) described for the OpenAPI document; the
# limits shown are the defaults of their settings.
ContentField = Annotated[
    Any, WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 2000, "description": "trimmed"})
]
TagsField = Annotated[
    Any,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 50},
                {"type": "string", "description": "comma-separated"},
                {"type": "null"},
            ]
        }
    ),
]
EmbeddingField = Annotated[
    Any,
    WithJsonSchema(
        {
            "anyOf": [{"type": "array", "items": {"type": "number"}, "minItems": 1}, {"type": "null"}],
            "description": "the configured embedding dimension",
        }
    ),
]


def _json_depth(value: Any, depth: int = 1) -> int:
    if isinstance(value, dict):
        return max([depth, *(_json_depth(v, depth + 1) for v in value.values())])
    if isinstance(value, list):
        return max([depth, *(_json_depth(v, depth + 1) for v in value)])
    return depth - 1 if depth > 1 else depth


def check_metadata(value: dict[str, Any], settings: Settings) -> dict[str, Any]:
    check_storable(value, "metadata")
    encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if len(encoded.encode()) > settings.max_metadata_bytes:
        raise ValueError(f"metadata is larger than {settings.max_metadata_bytes} bytes as JSON")
    if _json_depth(value) > settings.max_metadata_depth:
        raise ValueError(f"metadata is nested deeper than {settings.max_metadata_depth} levels")
    return value


def check_tags(value: Any, settings: Settings) -> list[str]:
    if isinstance(value, list) and not all(isinstance(t, str) for t in value):
        raise ValueError("tags must be strings")
    if not isinstance(value, str | list):
        raise ValueError("tags must be an array of strings or a comma-separated string")
    tags = normalize_tags(split_tag_input(value))
    if len(tags) > settings.max_tags:
        raise ValueError(f"at most {settings.max_tags} tags are allowed")
    return [check_tag(tag, settings.max_tag_length) for tag in tags]


def clamp_int(value: Any, low: int, high: int, default: int) -> int:
    """AutoMem's reading of a numeric parameter: out of range is clamped into it, and a value that
    is not a number is the default (AutoMem answers, it does not refuse)."""
    if isinstance(value, bool):
        return default
    try:
        number = int(float(value)) if isinstance(value, str) else int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return max(low, min(high, number))


def clamp_unit(value: Any, default: float = 0.0) -> float:
    """A 0..1 parameter read the AutoMem way: clamped, and the default when not a number."""
    if isinstance(value, bool):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(number) else max(0.0, min(1.0, number))


def at_most(value: int, limit: int, name: str) -> int:
    if value > limit:
        raise ValueError(f"{name} must be at most {limit}")
    return value


def check_dimension(embedding: list[float] | None, dimension: int, field: str = "embedding") -> None:
    """400 for a client embedding of another size than the service's vectors. The wording is
    AutoMem's ("exactly N values"): its clients parse N from it to adapt."""
    if embedding is not None and len(embedding) != dimension:
        raise InvalidInput(
            f"Embedding must contain exactly {dimension} values (got {len(embedding)})", field=field
        )


def check_embedding(value: Any) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = [float(v) for v in value.split(",") if v.strip()]
        except ValueError as exc:
            raise ValueError("embedding must be an array of numbers") from exc
    try:
        return check_vector(value)
    except ValueError as exc:
        raise ValueError(f"embedding {exc}") from exc


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class _MemoryFields(_Body):
    """Fields shared by create and update."""

    VALID_FROM_EVENT_TIME: ClassVar[bool] = False

    type: StrictStr | None = None
    confidence: UnitFloat | None = None
    importance: UnitFloat | None = None
    tags: TagsField = None
    metadata: dict[str, Any] | None = None
    timestamp: IsoTime = None
    t_valid: IsoTime = None
    t_invalid: IsoTime = None
    updated_at: IsoTime = None
    last_accessed: IsoTime = None
    embedding: EmbeddingField = None

    @field_validator("type")
    @classmethod
    def _type(cls, value: str | None) -> str | None:
        if value is None:
            return None
        canonical = canonical_type(value)
        if canonical is None:
            raise ValueError(f"unknown type {value!r}; use one of {', '.join(MEMORY_TYPES)}")
        return canonical

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: Any, info: ValidationInfo) -> list[str] | None:
        return None if value is None else check_tags(value, _settings(info))

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        return None if value is None else check_metadata(value, _settings(info))

    @field_validator("embedding")
    @classmethod
    def _embedding(cls, value: Any) -> list[float] | None:
        return check_embedding(value)

    @field_validator("t_invalid")
    @classmethod
    def _after_t_valid(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A validity interval ends after it starts; a new memory's starts at its event time
        unless given (an update's is checked against the stored one by the memory service)."""
        start = info.data.get("t_valid")
        if start is None and cls.VALID_FROM_EVENT_TIME:
            start = info.data.get("timestamp")
        check_validity(start, value)
        return value


def _content(value: Any, info: ValidationInfo) -> str:
    if not isinstance(value, str):
        raise ValueError("content must be a string")
    text = visible(value)
    if not text:
        raise ValueError("content must not be empty (whitespace and zero-width characters alone are)")
    limit = _settings(info).content_hard_limit
    if len(text) > limit:
        raise ValueError(
            f"content is {len(text)} characters; the limit is {limit}. Split it into smaller memories"
        )
    return text


class MemoryCreate(_MemoryFields):
    VALID_FROM_EVENT_TIME: ClassVar[bool] = True

    content: ContentField
    id: StrictStr | None = None

    @field_validator("content")
    @classmethod
    def _content(cls, value: Any, info: ValidationInfo) -> str:
        return _content(value, info)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return None if value is None else parse_uuid(value, "id")


class StoredMemory(MemoryCreate):
    """A memory as a backup holds it: its interval is the stored one. A stored memory without
    t_valid has an unknown start (a fact that had ended before it was written, see
    MemoryService), which its event time does not stand in for."""

    VALID_FROM_EVENT_TIME: ClassVar[bool] = False


class MemoryUpdate(_MemoryFields):
    content: Annotated[
        Any, WithJsonSchema({"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]})
    ] = None
    if_version: StrictInt | None = None
    reason: StrictStr | None = Field(default=None, description="why: recorded in the memory's history")

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        limit = _settings(info).max_reason_length
        if len(value.strip()) > limit:
            raise ValueError(f"at most {limit} characters")
        return value.strip() or None

    @field_validator("content")
    @classmethod
    def _content(cls, value: Any, info: ValidationInfo) -> str | None:
        return None if value is None else _content(value, info)


class BatchCreate(_Body):
    # Items are validated one by one as MemoryCreate, so an error names `memories[i].field`.
    memories: Annotated[
        list[dict[str, Any]],
        WithJsonSchema(
            {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                    "type": "object",
                    "required": ["content"],
                    "properties": {"content": {"type": "string", "minLength": 1, "maxLength": 2000}},
                },
            }
        ),
    ]

    @field_validator("memories")
    @classmethod
    def _size(cls, value: list[dict[str, Any]], info: ValidationInfo) -> list[dict[str, Any]]:
        limit = _settings(info).batch_max
        if not value:
            raise ValueError("memories must not be empty")
        if len(value) > limit:
            raise ValueError(f"at most {limit} memories per batch")
        return value


# Deeper than any listing a client pages through, and within every store's integer range.
MAX_OFFSET = 1_000_000_000


class ByTagQuery(_Body):
    tags: list[str]
    # As AutoMem: out-of-range values are clamped (limit to 1..BY_TAG_MAX_LIMIT), not refused.
    limit: Annotated[
        int,
        WithJsonSchema({"type": "integer", "default": 50, "description": "clamped to 1..BY_TAG_MAX_LIMIT"}),
    ] = 50
    offset: Annotated[
        int, WithJsonSchema({"type": "integer", "default": 0, "description": f"clamped to 0..{MAX_OFFSET}"})
    ] = 0
    tag_mode: Literal["any", "all"] = "any"
    tag_match: Literal["prefix", "exact"] = "prefix"

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any, info: ValidationInfo) -> list[str]:
        tags = check_tags(value, _settings(info))
        if not tags:
            raise ValueError("at least one tag is required")
        return tags

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: Any, info: ValidationInfo) -> int:
        return clamp_int(value, 1, _settings(info).by_tag_max_limit, 50)

    @field_validator("offset", mode="before")
    @classmethod
    def _offset(cls, value: Any) -> int:
        return clamp_int(value, 0, MAX_OFFSET, 0)


class RelatedQuery(_Body):
    """GET /memories/<id>/related, read as AutoMem reads it: unknown relationship names are left
    out (none left: the authorable types), AutoMem's older names map to DISCOVERED, and
    max_depth and limit are clamped."""

    relationship_types: Annotated[
        list[str], WithJsonSchema({"type": "string", "description": "comma list of edge types"})
    ] = Field(default_factory=list, validate_default=True)
    max_depth: int = Field(1, description="clamped to 1..3")
    # No default in the schema: it is RECALL_RELATION_LIMIT, filled in from the settings.
    limit: Annotated[
        int, WithJsonSchema({"type": "integer", "description": "clamped to 1..200; RECALL_RELATION_LIMIT"})
    ] = Field(default_factory=lambda: None, validate_default=True)

    @field_validator("relationship_types", mode="before")
    @classmethod
    def _types(cls, value: Any) -> list[str]:
        names = value.split(",") if isinstance(value, str) else (value or [])
        known = [canonical_relation(str(n)) for n in names if str(n).strip()]
        chosen = list(dict.fromkeys(t for t in known if t))
        return chosen or list(AUTHORABLE)

    @field_validator("max_depth", mode="before")
    @classmethod
    def _depth(cls, value: Any) -> int:
        return clamp_int(value, 1, 3, 1)

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: Any, info: ValidationInfo) -> int:
        default = _settings(info).recall_relation_limit
        return default if value is None else clamp_int(value, 1, 200, default)


class TagsQuery(_Body):
    prefix: str | None = None


class HistoryQuery(_Body):
    """GET /memory/<id>/history: newest first; `before` is the `rev` cursor of the next page."""

    limit: int = Field(50, ge=1, le=200)
    before: int | None = Field(default=None, ge=1, description="return events with rev below this")


class RestoreQuery(_Body):
    """POST /admin/restore: the archive is the request body (gzip'd JSON lines from GET /backup)."""

    mode: Literal["empty", "replace"] = Field(
        "empty",
        description="empty: refuse a store holding anything; replace: wipe graph, vectors and queues first",
    )
    vectors: Literal["archive", "graph"] = Field(
        "archive", description="archive: the archive's points; graph: rebuild every point from the graph"
    )
    tenant: StrictStr | None = Field(
        default=None,
        description="import into this tenant only (a tenant-admin key: its own, with an archive of it); "
        "mode then applies to the tenant",
    )


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return False
    return True


def parse_uuid(value: str, field: str) -> str:
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError) as exc:
        raise InvalidInput(f"{field} must be a UUID", field=field) from exc


def _field_of(error: Any) -> str:
    # Only the top-level field: deeper parts of `loc` name pydantic's union branches, not fields.
    loc = error.get("loc", ())
    return str(loc[0]) if loc else "body"


def parse(model: type[M], data: Any, settings: Settings, field_prefix: str = "") -> M:
    """Validate `data` into `model` or raise InvalidInput naming the first field at fault."""
    if not isinstance(data, dict):
        raise InvalidInput("the request body must be a JSON object", field=field_prefix.rstrip(".") or "body")
    try:
        return model.model_validate(data, context={"settings": settings})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = field_prefix + _field_of(first)
        message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        raise InvalidInput(f"{field}: {message}", field=field) from exc


class ReprocessBody(_Body):
    """POST /enrichment/reprocess: re-enrich some ids (a list or, as AutoMem takes them, a comma
    string; also `?ids=`), every memory, and/or requeue failed jobs."""

    ids: Annotated[
        list[StrictStr] | None,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "array", "items": {"type": "string"}, "maxItems": 1000},
                    {"type": "string", "description": "comma-separated"},
                    {"type": "null"},
                ]
            }
        ),
    ] = None
    all: StrictBool = False
    failed: StrictBool = False

    @field_validator("ids", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("ids")
    @classmethod
    def _bounded(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else value[: at_most(len(value), 1000, "ids")]

    @model_validator(mode="after")
    def _something_to_do(self) -> ReprocessBody:
        if not (self.ids or self.all or self.failed):
            raise ValueError("give `ids`, `all: true` or `failed: true`")
        return self


# POST /consolidate: a dry run (the default) answers in the request; a real run is queued.
class ConsolidateRequest(_Body):
    mode: Literal["decay", "creative", "cluster", "forget", "full", "identity"] = "full"
    dry_run: StrictBool = True

    @field_validator("mode", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class SyncBody(_Body):
    """POST /admin/sync: repair vectors that lag the graph, or (`all`) rewrite every point;
    `dry_run` only reports. AutoMem's `batch_size` is accepted (pages are sized by the server)."""

    all: StrictBool = False
    dry_run: StrictBool = False
    batch_size: int | None = Field(default=None, description="accepted for AutoMem clients; not needed")


MAX_REEMBED_LIMIT = 1_000_000_000


class ReembedBody(_Body):
    """POST /admin/reembed: `missing` (default) re-embeds memories lacking a current vector of
    the configured model, `all` re-embeds every memory. AutoMem's fields: `force` (re-embed every
    memory, as `all`), `limit` (at most this many memories) and `batch_size` (memories per
    embedding job, at most 100)."""

    mode: Literal["missing", "all"] = "missing"
    force: StrictBool = False
    limit: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1, le=100)

    @field_validator("batch_size", mode="before")
    @classmethod
    def _batch(cls, value: Any) -> Any:
        # AutoMem clamps its batch size to 100 rather than refusing a larger one.
        return None if value is None else clamp_int(value, 1, 100, 32)

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: Any) -> Any:
        # Any larger limit means "every memory"; one beyond 64 bits could not even be echoed back.
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_REEMBED_LIMIT:
            return MAX_REEMBED_LIMIT
        return value

    @property
    def every(self) -> bool:
        return self.mode == "all" or self.force


class RelationKey(_Body):
    """An edge named by its endpoints and type (any type of the registry, system ones too)."""

    model_config = ConfigDict(extra="forbid")

    memory1_id: StrictStr
    memory2_id: StrictStr
    type: StrictStr

    @field_validator("memory1_id", "memory2_id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        return _uuid_value(value)

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        name = canonical_relation(value)
        if name is None:
            raise ValueError(f"unknown relationship type {value!r}; use one of {', '.join(ALL_TYPES)}")
        return name


class ExistingQuery(_Body):
    """POST /admin/existing: which of these memory ids and edges already exist. Importers ask
    before writing, so a re-run skips what an earlier run stored (POST /memory/batch refuses a
    whole batch naming a taken id)."""

    model_config = ConfigDict(extra="forbid")

    ids: list[StrictStr] = Field(default_factory=list, max_length=1000)
    relations: list[RelationKey] = Field(default_factory=list, max_length=1000)

    @field_validator("ids")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        return [_uuid_value(i) for i in value]


def _uuid_value(value: str) -> str:
    """The canonical UUID string; ValueError (a 400 naming the field) for anything else."""
    try:
        return str(uuid.UUID(value))
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a UUID") from exc


# --- tenants and keys (automem.tenants; the admin's routes) --------------------------------------
Limit = Annotated[int | None, Field(default=None, ge=1, le=2**62, description="unset or null: unlimited")]


class KeyCreate(_Body):
    """POST /admin/keys: a key of `tenant` with `scope`."""

    model_config = ConfigDict(extra="forbid")

    tenant: StrictStr = Field(description="an existing tenant (`default` always exists)")
    scope: Literal["read", "write", "tenant-admin"]
    name: StrictStr | None = Field(default=None, max_length=200, description="a label for people")
    expires_at: IsoTime = None


class TenantCreate(_Body):
    """POST /admin/tenants: a tenant and its limits."""

    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field(description="1-63 of a-z, 0-9, '-', '_'")
    max_memories: Limit = None
    max_content_bytes: Limit = None
    writes_per_minute: Limit = None


class TenantUpdate(_Body):
    """PATCH /admin/tenants/<name>: set limits (null removes one)."""

    model_config = ConfigDict(extra="forbid")

    max_memories: Limit = None
    max_content_bytes: Limit = None
    writes_per_minute: Limit = None
