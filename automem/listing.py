"""Ordered listings (GET /memory/by-tag, recall without a query) from the vector store's
payload indexes, confirmed against the graph.

Sorting the matches in the graph makes FalkorDB read every matching node: 12 ms for a tag on 5k
of 100k memories, 43 ms for one on 40k. The vector store walks its importance or timestamp
index instead and stops after the page (~0.2 ms). The store orders by one field and leaves ties
in any order, so the exact order (e.g. importance desc, timestamp desc, id asc) is rebuilt from
the page's boundary: every point before the boundary value is already in the page, and the
boundary's ties are listed by the next field, down to the id.

The importance order walks `rank` instead where every point carries it: a payload field of
importance plus RANK_SPAN times the timestamp's place in [1970, 2170), so one walk orders a
memory's importance and time together and the page's boundary rarely ties (a tie of
importances took a second walk by time: 0.6-0.8 of the 1.0-1.3 ms of index work at 100k).
Importances closer than RANK_SPAN could cross; the page is checked by one count (see
`_ranked_top`) and walked the exact way when they do.

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
    ordered_point,
    payload_matches,
)
from automem.timeutil import format_utc, parse_iso
from automem.validation import UNIT_DECIMALS

Order = Literal["importance", "time_desc", "time_asc"]
SortKey = tuple[str, bool]  # payload field, descending

ORDERS: dict[str, tuple[SortKey, ...]] = {
    "importance": (("importance", True), ("timestamp", True)),
    "time_desc": (("timestamp", True),),
    "time_asc": (("timestamp", False),),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# A rank's time part spans RANK_SPAN: smaller than any two importances a client sends differ by
# (they are sent with a few decimals), large enough that a rank kept to 15 decimal places (what
# the vector store reads back exactly: automem.validation.UNIT_DECIMALS) still tells timestamps
# ~6.3 s apart (1e-15 of RANK_SPAN's 200 years; equal ranks are settled by the exact keys).
RANK_SPAN = 1e-6
_RANK_START, _RANK_SECONDS = 0.0, 200 * 365.25 * 86400.0  # [1970, 2170); outside: the ends

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


def rank_of(importance: float | None, timestamp: str | None) -> float | None:
    """The `rank` payload of a memory: its importance, then its time within RANK_SPAN. None
    without an importance (such a point is in no importance walk) or a readable timestamp (one
    stored before validation: its place among the times is its text's, which a rank cannot
    follow; while any point lacks a rank, listings walk the exact way)."""
    if importance is None or not timestamp:
        return None
    try:
        seconds = parse_iso(timestamp).timestamp()
    except ValueError:
        return None
    place = min(max((seconds - _RANK_START) / _RANK_SECONDS, 0.0), 1.0)
    return round(float(importance) + RANK_SPAN * place, UNIT_DECIMALS)


def top_points(
    store: VectorStore, flt: Filter, order: Order, count: int, ranked: bool = False
) -> list[OrderedPoint]:
    """The first `count` points matching `flt` in `order`, then by id, each with its payload's
    `rev` (membership is exact; `sort_exactly` puts them in order once their memories are read).
    `ranked`: every point with an importance carries its `rank` (see the module doc)."""
    if ranked and order == "importance" and (page := _ranked_top(store, flt, count)) is not None:
        return page
    return _top(store, flt, ORDERS[order], count)


def _ranked_top(store: VectorStore, flt: Filter, count: int) -> list[OrderedPoint] | None:
    """The first `count` by importance and time, walked by rank; None when importances closer
    than RANK_SPAN may have crossed the page's edge.

    A rank is never below its importance and grows with both keys, so a point left out that
    belongs before a page member has an importance above the page's lowest and a rank (hence an
    importance) at most the last rank taken (equal ranks are settled by the exact keys): when
    the filter has no point in that importance range beyond the page's own, the page is exact."""
    if count <= 0:
        return []
    page = store.ordered(flt, "rank", True, count + 1)
    if len(page) <= count:
        return page  # every ranked point of the filter
    last = page[count - 1].value
    if page[count].value == last:
        before = [p for p in page[:count] if p.value != last]
        ties = Filter(must=(flt, Range("rank", gte=last, lte=last)))
        page = before + _top(store, ties, ORDERS["importance"], count - len(before))
    else:
        page = page[:count]
    importances = [p.importance for p in page if p.importance is not None]
    if len(importances) < len(page):
        return None
    lowest = min(importances)
    inside = sum(1 for i in importances if lowest < i <= last)
    closer = Filter(must=(flt, Range("importance", gt=lowest, lte=last)))
    return page if store.count(closer) <= inside else None


def _top(store: VectorStore, flt: Filter, keys: Sequence[SortKey], count: int) -> list[OrderedPoint]:
    if count <= 0:
        return []
    if not keys:
        records, _ = store.scroll(flt, limit=count)  # the stores scroll in id order
        return [ordered_point(r.id, 0.0, r.payload) for r in records]
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
    ranked: bool = False,
) -> list[MemoryRecord] | None:
    """The first `count` memories of `flt` in `order`, read from the graph; None when a listed
    point's payload lags its memory, or the page lies beyond INDEX_PAGE_LIMIT (the caller then
    asks the graph to sort). `waiting`: memories whose points may lag the graph, placed by
    their graph state (`payload_of`: the payload the vector store will hold for a memory);
    `ranked`: see `top_points`."""
    late = set(waiting)
    if count + len(late) > INDEX_PAGE_LIMIT:
        return None
    # The true first `count` that are not late are among the index's first `count` + len(late).
    walked = [p for p in top_points(store, flt, order, count + len(late), ranked) if p.id not in late]
    revs = {p.id: p.rev for p in walked}
    if not revs and not late:
        return []
    docs = {d.id: d for d in graph.recall_memories([*revs, *late])}
    if any(i not in docs or docs[i].rev != rev for i, rev in revs.items()):
        return None
    placed = [doc for i in late if (doc := docs.get(i)) and payload_matches(flt, i, payload_of(doc))]
    return sort_exactly([docs[i] for i in revs] + placed, order)[:count]
