"""The recall request: one pydantic model for GET query strings and POST JSON bodies."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from werkzeug.datastructures import MultiDict

from automem.classify import MEMORY_TYPES, canonical_type
from automem.models import EmbeddingField, _Body, _settings, at_most, check_embedding, check_tags
from automem.tags import normalize_tags, split_tag_input

# Query-string aliases AutoMem clients send, mapped to our field names.
ALIASES = {
    "time": "time_query",
    "order_by": "sort",
    "expand": "expand_relations",
    "expand_associations": "expand_relations",
    "entity_expansion": "expand_entities",
    "relation_expansion_limit": "expansion_limit",
    "type": "types",
}
LIST_FIELDS = ("tags", "exclude_tags", "context_tags", "types")


class RecallQuery(_Body):
    query: str = ""
    embedding: EmbeddingField = None
    limit: int = Field(5, ge=1)
    tags: list[str] = []
    tag_mode: Literal["any", "all"] = "any"
    tag_match: Literal["prefix", "exact"] = "prefix"
    exclude_tags: list[str] = []
    context_tags: list[str] = []
    types: list[str] = []
    time_query: str | None = None
    start: str | None = None
    end: str | None = None
    sort: Literal["score", "time_desc", "time_asc"] = "score"
    state_mode: Literal["current", "history"] = "current"
    min_score: float = Field(0.0, ge=0.0, le=1.0)
    expand_relations: bool = True
    expand_entities: bool = True
    relation_limit: int = Field(5, ge=0, le=200)
    expansion_limit: int = Field(25, ge=0, le=500)
    expand_min_importance: float = Field(0.0, ge=0.0, le=1.0)
    expand_min_strength: float = Field(0.0, ge=0.0, le=1.0)

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: Any) -> str:
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ValueError("query must be a string")
        text = value.strip()
        return "" if text == "*" else text

    @field_validator("embedding")
    @classmethod
    def _embedding(cls, value: Any) -> list[float] | None:
        return check_embedding(value)

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int, info: ValidationInfo) -> int:
        return at_most(value, _settings(info).recall_max_limit, "limit")

    @field_validator("tags", "exclude_tags", "context_tags", mode="before")
    @classmethod
    def _tag_lists(cls, value: Any, info: ValidationInfo) -> list[str]:
        return [] if value is None else check_tags(_joined(value), _settings(info))

    @field_validator("types", mode="before")
    @classmethod
    def _types(cls, value: Any) -> list[str]:
        if value is None:
            return []
        strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not (isinstance(value, str) or strings):
            raise ValueError("types must be an array of strings or a comma-separated string")
        names = normalize_tags(split_tag_input(_joined(value)))
        out = []
        for name in names:
            canonical = canonical_type(name)
            if canonical is None:
                raise ValueError(f"unknown type {name!r}; use one of {', '.join(MEMORY_TYPES)}")
            out.append(canonical)
        return out

    @model_validator(mode="after")
    def _sort_default(self) -> RecallQuery:
        # A time window without a query lists newest first, like AutoMem.
        if (
            (self.time_query or self.start or self.end)
            and not self.query
            and self.embedding is None
            and "sort" not in self.model_fields_set
        ):
            self.sort = "time_desc"
        return self


def _joined(value: Any) -> Any:
    """A list of comma strings stays a list of items; each item may itself be a comma list."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [part for item in value for part in item.split(",")]
    return value


def query_args(args: MultiDict[str, str]) -> dict[str, Any]:
    """A GET query string as the dict RecallQuery validates (lists from repeats or commas)."""
    data: dict[str, Any] = {}
    for key in args:
        name = ALIASES.get(key, key)
        values = args.getlist(key)
        if name in LIST_FIELDS:
            data.setdefault(name, []).extend(values)
        else:
            data[name] = values[-1]  # pydantic parses "true"/"0"/"12" into bools and numbers
    return data


def body_args(body: dict[str, Any]) -> dict[str, Any]:
    return {ALIASES.get(key, key): value for key, value in body.items()}
