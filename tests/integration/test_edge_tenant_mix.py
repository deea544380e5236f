"""The Edge shard leaves a lone tenant's condition out of a keyword search's IDF scope (the whole
scope when it is that tenant alone); this holds it to giving the scores the scope gives, whatever
sequence of writes, deletes and reopenings came before, with and without a tag in the scope;
and a search's filter without that condition, and without "active and valid now" while every
point is active and no validity bound lies on the wrong side of now, finds the same points with
the same scores, asked at moments before, at and after the bounds written.

The oracle is the same search with the scope written so that no shortcut recognises it (the
tenant condition twice), which Edge always evaluates as a corpus filter. This property found
that Edge's unscoped IDF keeps counting a deleted point until the shard is opened again
(write, delete, write the same point: 0.31 against 0.49), so a delete turns the shortcut off
for a tenant-only scope; a scope with a tag left in it is still a corpus filter, which counts
live points only."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from automem.stores.vectors import Filter, Match, Range, VectorPoint
from automem.stores.vectors.qdrant_edge import CHECKED_POINT_WEIGHT, EdgeVectorStore

_WORDS = ["alpha", "beta", "gamma", "delta"]
_TENANTS = ["a", "b", None]
_TAGS = [("x",), ("x", "y"), ("y",), ()]
_NOW = "2026-01-01T00:00:00+00:00"
_PAST, _FUTURE = "2025-01-01T00:00:00Z", "2027-01-01T00:00:00Z"
# The moments recall's filter is asked at: before, at and after every bound below.
_NOWS = ("2024-06-01T00:00:00Z", _NOW, "2026-06-01T00:00:00Z", "2028-01-01T00:00:00Z")
_ACTIVE: dict[str, object] = {"state": "active"}
# Mostly active and valid since the past (as the service writes a memory: t_valid its time), so
# that runs of writes keep the shortcut on before one turns it off.
_STATES: list[dict[str, object]] = [
    _ACTIVE,
    {"state": "active", "t_valid": _PAST},
    {"state": "active", "t_valid": "2025-06-01T02:00:00+02:00"},
    {"state": "deleted"},
    {},
    {"state": "active", "t_valid": _FUTURE},
    {"state": "active", "t_valid": _NOW},
    {"state": "active", "t_valid": "2026-01-01T01:00:00+01:00"},
    {"state": "active", "t_invalid": _PAST},
    {"state": "active", "t_invalid": _NOW},
    {"state": "active", "t_invalid": _FUTURE, "t_valid": None},
]
_SETS: list[dict[str, object]] = [
    {"state": "deleted"},
    {"state": "active"},
    {"t_invalid": _PAST},
    {"t_valid": _FUTURE},
    {"tenant": "b"},
]


def _id(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def _point(
    n: int,
    tenant: str | None,
    words: list[str],
    rev: int,
    tags: tuple[str, ...] = ("x",),
    state: dict[str, object] = _ACTIVE,
) -> VectorPoint:
    payload: dict[str, object] = {"rev": rev, "tag_prefixes": list(tags), **state}
    if tenant is not None:
        payload["tenant"] = tenant
    return VectorPoint(id=_id(n), vector=[1.0, 0.0, 0.0, 0.0], payload=payload, text=" ".join(words))


_write = st.tuples(
    st.just("write"),
    st.integers(0, 7),
    st.sampled_from(_TENANTS),
    st.lists(st.sampled_from(_WORDS), min_size=1),
    st.sampled_from(_TAGS),
    st.sampled_from(_STATES),
)
_set = st.tuples(st.just("set"), st.integers(0, 7), st.sampled_from(_SETS))
_delete = st.tuples(st.just("delete"), st.integers(0, 7))
_retag = st.tuples(st.just("retag"), st.integers(0, 7), st.sampled_from(_TENANTS))
_reopen = st.tuples(st.just("reopen"))
_ops = st.lists(st.one_of(_write, _write, _delete, _retag, _set, _reopen), max_size=12)


def _scores(store: EdgeVectorStore, flt: Filter, scope: Filter) -> list[tuple[str, float]]:
    hits = store.keyword_search("alpha gamma", 20, flt, scope)
    return sorted((h.id, round(h.score, 5)) for h in hits)


def _nearest(store: EdgeVectorStore, flt: Filter) -> list[str]:
    return sorted(h.id for h in store.search([1.0, 0.0, 0.0, 0.0], 20, flt))


def _current(disguised: bool, now: str = _NOW) -> tuple[tuple[Match, ...], tuple[Range | Filter, ...]]:
    """Recall's "active and valid now" conditions, or the same written so no shortcut sees them."""
    bounds = (Range("t_valid", gt=now, kind="datetime"), Range("t_invalid", lte=now, kind="datetime"))
    if disguised:
        return (Match("state", ("active", "active")),), (Filter(should=bounds),)
    return (Match("state", ("active",)),), bounds


def _check(store: EdgeVectorStore) -> None:
    for tenant in ("a", "b"):
        for tags in ((), (Match("tag_prefixes", ("x",)),)):
            for now in (None, *_NOWS):
                found = []
                for disguised in (False, True):
                    tenants = (Match("tenant", (tenant,)),) * (2 if disguised else 1)
                    active, bounds = _current(disguised, now) if now else ((), ())
                    flt = Filter(must=(*tenants, *tags, *active), must_not=bounds)
                    scope = Filter(must=(*tenants, *tags))
                    found.append((_scores(store, flt, scope), _nearest(store, flt)))
                assert found[0] == found[1], (tenant, tags, now)


@hypothesis_settings(max_examples=60, deadline=None)
@given(ops=_ops)
def test_a_lone_tenants_scores_match_the_scoped_search(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "shard")
        store = EdgeVectorStore(path)
        store.ensure_collection(4)
        revs: dict[int, int] = {}
        try:
            for op in ops:
                if op[0] == "write":
                    _, n, tenant, words, tags, state = op
                    revs[n] = revs.get(n, 0) + 1
                    store.upsert([_point(n, tenant, words, revs[n], tags, state)])
                elif op[0] == "set" and op[1] in revs:
                    store.set_payload_values([(_id(op[1]), revs[op[1]], op[2])])
                elif op[0] == "delete":
                    store.delete([_id(op[1])])
                elif op[0] == "retag" and op[1] in revs:
                    _, n, tenant = op
                    revs[n] += 1
                    store.overwrite_payloads([_point(n, tenant, ["alpha"], revs[n])])
                elif op[0] == "reopen":
                    store.close()
                    store = EdgeVectorStore(path)
                _check(store)
        finally:
            store.close()


def test_a_second_tenant_turns_the_scope_back_on(tmp_path: Path) -> None:
    """The example behind the property: alone, then joined, then after a reopen."""
    store = EdgeVectorStore(str(tmp_path / "shard"))
    store.ensure_collection(4)
    store.upsert([_point(n, "a", ["alpha", "beta"][: 1 + n % 2], 1) for n in range(4)])
    scope = Filter(must=(Match("tenant", ("a",)),))
    alone = _scores(store, scope, scope)
    store.upsert([_point(n, "b", ["alpha", "alpha"], 1) for n in range(10, 16)])
    _check(store)
    assert _scores(store, scope, scope) == alone
    store.close()
    store = EdgeVectorStore(str(tmp_path / "shard"))
    _check(store)
    store.close()


def test_an_inactive_or_bounded_point_turns_the_conditions_back_on(tmp_path: Path) -> None:
    """The example behind the states: every point active and unbounded, then one deleted by a
    partial payload write, then one written already expired, then a reopen."""
    store = EdgeVectorStore(str(tmp_path / "shard"))
    store.ensure_collection(4)
    store.upsert([_point(n, "a", ["alpha"], 1) for n in range(3)])
    active, bounds = _current(disguised=False)
    current = Filter(must=(Match("tenant", ("a",)), *active), must_not=bounds)
    assert _nearest(store, current) == [_id(0), _id(1), _id(2)]
    store.set_payload_values([(_id(1), 1, {"state": "deleted"})])
    assert _nearest(store, current) == [_id(0), _id(2)]
    store.upsert([_point(5, "a", ["alpha"], 1, state={"state": "active", "t_invalid": _PAST})])
    assert _nearest(store, current) == [_id(0), _id(2)]
    _check(store)
    store.close()
    store = EdgeVectorStore(str(tmp_path / "shard"))
    assert _nearest(store, current) == [_id(0), _id(2)]
    _check(store)
    store.close()


def test_an_exact_search_s_point_weight_follows_what_is_left_of_its_filter(tmp_path: Path) -> None:
    """A point costs 1.0 when the filter comes down to one condition on an indexed field once the
    conditions selecting every point are left out, and CHECKED_POINT_WEIGHT when anything is left
    to check per point: a second condition, a `should`, an exclusion, an unindexed field, or the
    tenant's and state's conditions once they no longer select every point."""
    store = EdgeVectorStore(str(tmp_path / "shard"))
    store.ensure_collection(4)
    valid = {"state": "active", "t_valid": _PAST}  # as the service writes: valid since its time
    store.upsert([_point(n, "a", ["alpha"], 1, state=valid) for n in range(3)])
    active, bounds = _current(disguised=False)
    tenant, tag = Match("tenant", ("a",)), Match("tag_prefixes", ("x",))
    recall = Filter(must=(tenant, tag, *active), must_not=bounds)
    week = Range("timestamp", gte=_PAST, lt=_FUTURE, kind="datetime")
    weights = {
        "recall's filter, one tag": recall,
        "a time range": Filter(must=(tenant, week, *active), must_not=bounds),
        "no condition left": Filter(must=(tenant, *active), must_not=bounds),
        "two tags, all of them": Filter(must=(tenant, tag, Match("tag_prefixes", ("y",)))),
        "a tag and a time range": Filter(must=(tag, week)),
        "a should": Filter(should=(tag,)),
        "an exclusion": Filter(must=(tag,), must_not=(Match("tag_prefixes", ("y",)),)),
        "an unindexed field": Filter(must=(Match("colour", ("red",)),)),
    }
    assert {name: store.exact_point_weight(flt) for name, flt in weights.items()} == {
        name: 1.0 if n < 3 else CHECKED_POINT_WEIGHT for n, name in enumerate(weights)
    }
    assert store.exact_point_weight(None) == 1.0
    store.set_payload_values([(_id(1), 1, {"state": "deleted"})])
    assert store.exact_point_weight(recall) == CHECKED_POINT_WEIGHT  # state = active is checked
    other = EdgeVectorStore(str(tmp_path / "other"))
    other.ensure_collection(4)
    other.upsert([_point(n, "a", ["alpha"], 1) for n in range(3)])
    assert other.exact_point_weight(recall) == 1.0
    other.upsert([_point(8, "a", ["alpha"], 1, state={"state": "active", "t_valid": _FUTURE})])
    assert other.exact_point_weight(recall) == CHECKED_POINT_WEIGHT  # valid from a later moment
    active, later = _current(disguised=False, now=_NOWS[-1])
    assert other.exact_point_weight(Filter(must=(tenant, tag, *active), must_not=later)) == 1.0
    other.upsert([_point(9, "b", ["alpha"], 1)])
    assert other.exact_point_weight(recall) == CHECKED_POINT_WEIGHT  # the tenant's is checked
    store.close()
    other.close()
