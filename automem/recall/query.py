"""The recall request: one pydantic model for GET query strings and POST JSON bodies.

AutoMem's clients send its parameter names and aliases and rely on its leniency: numbers out of
range are clamped into it, a word it does not know for `tag_mode`, `tag_match` or `sort` falls
back to the default, and options it has that this service does not (`recency_bias`,
`adaptive_floor`, `context`, `language`, ...) are accepted and ignored. Only what would change the
answer's meaning (a bad `state_mode`, date or embedding) is a 400, as in AutoMem.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from werkzeug.datastructures import MultiDict

from automem.classify import MEMORY_TYPES, canonical_type
from automem.models import (
    EmbeddingField,
    _Body,
    _settings,
    check_embedding,
    check_tags,
    clamp_int,
    clamp_unit,
)
from automem.tags import normalize_tags, split_tag_input
from automem.timeutil import parse_iso

# Query-string aliases AutoMem clients send, mapped to our field names.
ALIASES = {
    "time": "time_query",
    "order_by": "sort",
    "expand": "expand_relations",
    "expand_associations": "expand_relations",
    "entity_expansion": "expand_entities",
    "relation_expansion_limit": "expansion_limit",
    "type": "types",
    "query_list": "queries",
}
LIST_FIELDS = ("tags", "exclude_tags", "context_tags", "types", "queries")
# A page deeper than this is better asked of by-tag or an export: recall reads every result before it.
MAX_RECALL_OFFSET = 10_000
SORTS = ("score", "time_desc", "time_asc", "updated_desc", "updated_asc")
Sort = Literal["score", "time_desc", "time_asc", "updated_desc", "updated_asc"]


class RecallQuery(_Body):
    query: str = ""
    queries: list[str] = Field([], description="several queries, each run alone, merged (AutoMem's)")
    per_query_limit: int | None = Field(None, description="results per query of `queries`; default: limit")
    embedding: EmbeddingField = None
    limit: int = Field(5, description="clamped to 1..RECALL_MAX_LIMIT")
    tags: list[str] = []
    tag_mode: Literal["any", "all"] = "any"
    tag_match: Literal["prefix", "exact"] = "prefix"
    exclude_tags: list[str] = []
    context_tags: list[str] = []
    types: list[str] = []
    time_query: str | None = None
    start: str | None = None
    end: str | None = None
    reference_time: str | None = Field(
        None,
        description="ISO 8601 moment that relative times (time_query, a time the query names) are "
        "resolved against; default: now",
    )
    sort: Sort = "score"
    state_mode: Literal["current", "history"] = "current"
    current_only: bool | None = Field(None, description="AutoMem's older switch; wins over state_mode")
    min_score: float = Field(0.0, description="clamped to 0..1")
    min_importance: float = Field(0.0, description="only memories at least this important; clamped to 0..1")
    offset: int = Field(0, description=f"results to skip (the next page); clamped to 0..{MAX_RECALL_OFFSET}")
    expand_relations: bool = True
    expand_entities: bool = True
    relation_limit: int = Field(5, description="clamped to 0..200")
    expansion_limit: int = Field(25, description="clamped to 0..500")
    expand_min_importance: float = Field(0.0, description="clamped to 0..1")
    expand_min_strength: float = Field(0.0, description="clamped to 0..1")

    @field_validator("tag_mode", "tag_match", "sort", mode="before")
    @classmethod
    def _known_word(cls, value: Any, info: ValidationInfo) -> Any:
        """AutoMem reads an unknown word as the default."""
        allowed = {"tag_mode": ("any", "all"), "tag_match": ("prefix", "exact"), "sort": SORTS}
        default = {"tag_mode": "any", "tag_match": "prefix", "sort": "score"}
        name = str(info.field_name)
        word = value.strip().lower() if isinstance(value, str) else value
        return word if word in allowed[name] else default[name]

    @field_validator("relation_limit", "expansion_limit", mode="before")
    @classmethod
    def _clamped_count(cls, value: Any, info: ValidationInfo) -> int:
        high, default = (200, 5) if info.field_name == "relation_limit" else (500, 25)
        return clamp_int(value, 0, high, default)

    @field_validator("per_query_limit", mode="before")
    @classmethod
    def _per_query(cls, value: Any, info: ValidationInfo) -> int | None:
        return None if value is None else clamp_int(value, 1, _settings(info).recall_max_limit, 5)

    @field_validator("offset", mode="before")
    @classmethod
    def _offset(cls, value: Any) -> int:
        return clamp_int(value, 0, MAX_RECALL_OFFSET, 0)

    @field_validator(
        "min_score", "min_importance", "expand_min_importance", "expand_min_strength", mode="before"
    )
    @classmethod
    def _unit(cls, value: Any) -> float:
        return clamp_unit(value)

    @field_validator("current_only", mode="before")
    @classmethod
    def _current_only(cls, value: Any) -> bool | None:
        """AutoMem: an unparseable value means true."""
        if value is None or isinstance(value, bool):
            return value
        return str(value).strip().lower() not in ("false", "0", "no", "off")

    @field_validator("queries", mode="before")
    @classmethod
    def _queries(cls, value: Any) -> list[str]:
        if value is None:
            return []
        items = _joined(value) if isinstance(value, list) else str(value).split(",")
        if not all(isinstance(item, str) for item in items):
            raise ValueError("queries must be strings")
        return [item.strip() for item in items if item.strip()][:20]

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: Any) -> str:
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ValueError("query must be a string")
        text = value.strip()
        return "" if text == "*" else text

    @field_validator("reference_time", mode="before")
    @classmethod
    def _reference_time(cls, value: Any) -> str | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            raise ValueError("reference_time must be an ISO 8601 date or timestamp")
        try:
            parse_iso(value)
        except ValueError as exc:
            raise ValueError(f"reference_time must be an ISO 8601 date or timestamp, got {value!r}") from exc
        return value.strip()

    @field_validator("embedding")
    @classmethod
    def _embedding(cls, value: Any) -> list[float] | None:
        return check_embedding(value)

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: Any, info: ValidationInfo) -> int:
        return clamp_int(value, 1, _settings(info).recall_max_limit, 5)

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

    @property
    def gives_window(self) -> bool:
        """Whether the request gives a time window of its own (time_query, start or end)."""
        return bool(self.time_query or self.start or self.end)

    @model_validator(mode="after")
    def _current_only_wins(self) -> RecallQuery:
        if self.current_only is not None:
            self.state_mode = "current" if self.current_only else "history"
        return self

    @model_validator(mode="after")
    def _sort_default(self) -> RecallQuery:
        # A time window without a query lists newest first, like AutoMem.
        if (
            self.gives_window
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
