"""The tools' argument types and structured outputs: what MCP clients see as input and output
schemas. The Literal enums mirror the registries (tests hold them equal), so a model is told the
7 memory types and the 11 authorable relationships before it calls."""

# No `from __future__ import annotations`: these aliases are read at runtime by pydantic when the
# server builds the tools' schemas.
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, Field

MemoryTypeName = Literal["Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context"]
RelationName = Literal[
    "RELATES_TO",
    "LEADS_TO",
    "OCCURRED_BEFORE",
    "PREFERS_OVER",
    "EXEMPLIFIES",
    "CONTRADICTS",
    "REINFORCES",
    "INVALIDATED_BY",
    "EVOLVED_INTO",
    "DERIVED_FROM",
    "PART_OF",
]
# AutoMem's recall_memory `format`: one text block, a block per memory, a block per memory with
# every field, or the structured result as JSON text.
RecallFormat = Literal["text", "items", "detailed", "json"]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
IsoTime = Annotated[str, Field(description="ISO 8601 date-time, e.g. 2025-01-31T14:00:00Z")]
Tags = Annotated[list[str], Field(description="tags; hierarchical with : or / (e.g. project:alpha)")]


# --- content limits in the schema -----------------------------------------------------------------
@dataclass(frozen=True)
class LimitedText:
    """Marks a text argument whose schema states the content limits. The limits are settings,
    while a tool's signature is fixed at import, so the signature carries this marker and the
    server swaps in the real constraint (`with_limits`) when it registers the tool."""

    description: str  # may name {soft} and {hard}
    min_length: int | None = None

    def field(self, hard: int, soft: int) -> Any:
        extra: dict[str, Any] = {"maxLength": hard}
        if self.min_length is not None:
            extra["minLength"] = self.min_length
        return Field(description=self.description.format(hard=hard, soft=soft), json_schema_extra=extra)


def with_limits(annotation: Any, hard: int, soft: int) -> Any:
    """`annotation` with a LimitedText marker replaced by the schema constraint it stands for;
    any other annotation unchanged."""
    if get_origin(annotation) is not Annotated:
        return annotation
    base, *extras = get_args(annotation)
    markers = [extra for extra in extras if isinstance(extra, LimitedText)]
    if not markers:
        return annotation
    return Annotated[base, markers[0].field(hard, soft)]


NewContent = Annotated[
    str,
    LimitedText(
        "The memory: one idea with its context and why. Target 150-300 characters; "
        "over {soft} the service may summarise it; over {hard} it is rejected.",
        min_length=1,
    ),
]
ReplacementContent = Annotated[str | None, LimitedText("new content (replaces the old)")]


# --- batch input ----------------------------------------------------------------------------------
class AssociationInput(BaseModel):
    """One item of associate_memories' `associations` (AutoMem's batch mode)."""

    memory1_id: str = Field(description="the source memory")
    memory2_id: str = Field(description="the target memory")
    type: RelationName = "RELATES_TO"
    strength: Unit = 0.5
    reason: str | None = None
    context: str | None = None
    confidence: Unit | None = None
    pattern_type: str | None = None
    resolution: str | None = None
    observations: str | None = None
    transformation: str | None = None
    role: str | None = None
    timestamp: str | None = None


# --- structured outputs ---------------------------------------------------------------------------
class StoreOutput(BaseModel):
    memory_id: str
    message: str
    deduplicated: bool
    type: str | None = None
    confidence: float | None = None
    summarized: bool | None = None
    original_length: int | None = None
    summarized_length: int | None = None
    size_warning: bool = False


class RelationOutput(BaseModel):
    type: str
    direction: str
    memory_id: str
    content: str | None = None


class RecalledMemory(BaseModel):
    memory_id: str
    content: str | None
    type: str | None = None
    tags: list[str] = []
    importance: float | None = None
    timestamp: str | None = None
    score: float | None = None
    match_type: str | None = None
    relations: list[RelationOutput] = []


class RecallOutput(BaseModel):
    count: int
    results: list[RecalledMemory]
    has_more: bool | None = None


class UpdateOutput(BaseModel):
    memory_id: str
    version: int | None
    message: str


class DeleteOutput(BaseModel):
    memory_id: str
    deleted: bool
    message: str


class AssociationFailure(BaseModel):
    index: int
    reason: str | None = None
    field: str | None = None


class AssociateOutput(BaseModel):
    """One link (the pair, type and strength) or a batch (the counts and what failed)."""

    memory1_id: str | None = None
    memory2_id: str | None = None
    relation_type: str | None = None
    strength: float | None = None
    message: str
    created_count: int | None = None
    failed_count: int | None = None
    failed: list[AssociationFailure] = []


class HealthOutput(BaseModel):
    status: str
    endpoint: str
    falkordb: str | None = None
    qdrant: str | None = None
    memory_count: int | None = None
    vector_count: int | None = None
    drift: dict[str, int] | None = None
    embedding: dict[str, Any] | None = None
    warnings: list[str] = []
    error: str | None = None
