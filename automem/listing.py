"""Ordered listings (GET /memory/by-tag, recall without a query) from the vector store's
payload indexes, confirmed against the graph.

Sorting the matches in the graph makes FalkorDB read every matching node: 12 ms for a tag on 5k
of 100k memories, 43 ms for one on 40k. The vector store walks its importance or timestamp
index instead and stops after the page (~0.2 ms). The store orders by one field and leaves ties
in any order, so the exact order (e.g. importance desc, timestamp desc, id asc) is rebuilt from
the page's boundary: every point before the boundary value is already in the page, and the
boundary's ties are listed by the next field, down to the id.

The index answers for every memory but those with handed-off writes still waiting for the
owner (`VectorSync.waiting_ids`; while the worker enriches, a few always wait): the walk goes
that many points further, those memories are read from the graph with the page and put in
their place if they match (`payload_matches` over the payload they will have), and every other
listed point's payload must carry its memory's `rev`. Otherwise the caller asks the graph.
The memories themselves are always read from the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any, Literal

from automem.record import MemoryRecord
from automem.stores.graph import GraphStore
from automem.stores.vectors.base import (
    PAYLOAD_INDEXES,
    Condition,
    Filter,
    Match,
    OrderedPoint,
    Range,
    VectorStore,
    payload_matches,
    payload_rev,
)
from automem.timeutil import format_utc

Order = Literal["importance", "time_desc", "time_asc"]
SortKey = tuple[str, bool]  # payload field, descending

ORDERS: dict[str, tuple[SortKey, ...]] = {
    "importance": (("importance", True), ("timestamp", True)),
    "time_desc": (("timestamp", True),),
    "time_asc": (("timestamp", False),),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# The index walk reads every point before the page; deeper pages are cheaper to skip in the graph.
INDEX_PAGE_LIMIT = 10_000
# Memories with hand-offs waiting that a listing reads from the graph and places itself; with more
# waiting (a restore or a bulk import being applied) the graph sorts.
WAITING_LIMIT = 256


def tag_filter(
    tenant: str, tags: Sequence[str], mode: Literal["any", "all"], match: Literal["prefix", "exact"]
) -> Filter:
    """Active memories of the tenant carrying the tags (the by-tag selection)."""
    field = "tag_prefixes" if match == "prefix" else "tags"
    must: list[Condition] = [Match("tenant", (tenant,)), Match("state", ("active",))]
    if mode == "any":
        must.append(Match(field, tuple(tags)))
    else:
        must.extend(Match(field, (tag,)) for tag in tags)
    return Filter(must=tuple(must))


def top_points(store: VectorStore, flt: Filter, order: Order, count: int) -> list[OrderedPoint]:
    """The first `count` points matching `flt` in `order`, then by id, each with its payload's
    `rev` (membership is exact; `sort_exactly` puts them in order once their memories are read)."""
    return _top(store, flt, ORDERS[order], count)


def _top(store: VectorStore, flt: Filter, keys: Sequence[SortKey], count: int) -> list[OrderedPoint]:
    if count <= 0:
        return []
    if not keys:
        records, _ = store.scroll(flt, limit=count)  # the stores scroll in id order
        return [OrderedPoint(r.id, 0.0, payload_rev(r.payload)) for r in records]
    (field, descending), rest = keys[0], keys[1:]
    # One point past the page says whether the boundary value's ties go on beyond it: mostly they
    # do not, and the page is settled by this one walk (a second filtered query costs 0.3-0.5 ms).
    page = store.ordered(flt, field, descending, count + 1)
    if len(page) <= count or page[count].value != page[count - 1].value:
        return page[:count]
    boundary = page[count - 1].value
    before = [p for p in page[:count] if p.value != boundary]
    ties = Filter(must=(flt, _equal_to(field, boundary)))
    return before + _top(store, ties, rest, count - len(before))


def _equal_to(field: str, order_value: float) -> Range:
    if PAYLOAD_INDEXES[field] == "datetime":  # order values of datetimes are epoch microseconds
        moment = format_utc(_EPOCH + timedelta(microseconds=int(order_value)))
        return Range(field, gte=moment, lte=moment, kind="datetime")
    return Range(field, gte=order_value, lte=order_value)


def sort_exactly(docs: Sequence[MemoryRecord], order: Order) -> list[MemoryRecord]:
    """Sorted by the order's fields, then by id ascending (stable sorts, least significant first;
    stored times share one format, so they sort as strings)."""
    out = sorted(docs, key=lambda d: d.id)
    for field, descending in reversed(ORDERS[order]):
        out.sort(key=attrgetter(field), reverse=descending)
    return out


def listed_docs(
    graph: GraphStore,
    store: VectorStore,
    flt: Filter,
    order: Order,
    count: int,
    *,
    waiting: Sequence[str],
    payload_of: Callable[[MemoryRecord], dict[str, Any]],
) -> list[MemoryRecord] | None:
    """The first `count` memories of `flt` in `order`, read from the graph; None when a listed
    point's payload lags its memory, or the page lies beyond INDEX_PAGE_LIMIT (the caller then
    asks the graph to sort). `waiting`: memories whose points may lag the graph, placed by
    their graph state (`payload_of`: the payload the vector store will hold for a memory)."""
    late = set(waiting)
    if count + len(late) > INDEX_PAGE_LIMIT:
        return None
    # The true first `count` that are not late are among the index's first `count` + len(late).
    walked = [p for p in top_points(store, flt, order, count + len(late)) if p.id not in late]
    revs = {p.id: p.rev for p in walked}
    if not revs and not late:
        return []
    docs = {d.id: d for d in graph.get_memories([*revs, *late], view="recall")}
    if any(i not in docs or docs[i].rev != rev for i, rev in revs.items()):
        return None
    placed = [doc for i in late if (doc := docs.get(i)) and payload_matches(flt, i, payload_of(doc))]
    return sort_exactly([docs[i] for i in revs] + placed, order)[:count]
