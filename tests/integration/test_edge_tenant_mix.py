"""The Edge shard leaves a lone tenant's IDF scope out of keyword searches; this holds it to
giving the scores the scope gives, whatever sequence of writes, deletes and reopenings came before.

The oracle is the same search with the scope written so that no shortcut recognises it (the
tenant condition twice), which Edge always evaluates as a corpus filter. This property found
that Edge's unscoped IDF keeps counting a deleted point until the shard is opened again
(write, delete, write the same point: 0.31 against 0.49), so a delete turns the shortcut off."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from automem.stores.vectors import Filter, Match, VectorPoint
from automem.stores.vectors.qdrant_edge import EdgeVectorStore

_WORDS = ["alpha", "beta", "gamma", "delta"]
_TENANTS = ["a", "b", None]


def _id(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def _point(n: int, tenant: str | None, words: list[str], rev: int) -> VectorPoint:
    payload: dict[str, object] = {"rev": rev}
    if tenant is not None:
        payload["tenant"] = tenant
    return VectorPoint(id=_id(n), vector=[1.0, 0.0, 0.0, 0.0], payload=payload, text=" ".join(words))


_write = st.tuples(
    st.just("write"),
    st.integers(0, 7),
    st.sampled_from(_TENANTS),
    st.lists(st.sampled_from(_WORDS), min_size=1),
)
_delete = st.tuples(st.just("delete"), st.integers(0, 7))
_retag = st.tuples(st.just("retag"), st.integers(0, 7), st.sampled_from(_TENANTS))
_reopen = st.tuples(st.just("reopen"))
_ops = st.lists(st.one_of(_write, _write, _delete, _retag, _reopen), max_size=12)


def _scores(store: EdgeVectorStore, tenant: str, scope: Filter) -> list[tuple[str, float]]:
    hits = store.keyword_search("alpha gamma", 20, Filter(must=(Match("tenant", (tenant,)),)), scope)
    return sorted((h.id, round(h.score, 5)) for h in hits)


def _check(store: EdgeVectorStore) -> None:
    for tenant in ("a", "b"):
        recognised = Filter(must=(Match("tenant", (tenant,)),))
        disguised = Filter(must=(Match("tenant", (tenant,)), Match("tenant", (tenant,))))
        assert _scores(store, tenant, recognised) == _scores(store, tenant, disguised)


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
                    _, n, tenant, words = op
                    revs[n] = revs.get(n, 0) + 1
                    store.upsert([_point(n, tenant, words, revs[n])])
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
    alone = _scores(store, "a", Filter(must=(Match("tenant", ("a",)),)))
    store.upsert([_point(n, "b", ["alpha", "alpha"], 1) for n in range(10, 16)])
    _check(store)
    assert _scores(store, "a", Filter(must=(Match("tenant", ("a",)),))) == alone
    store.close()
    store = EdgeVectorStore(str(tmp_path / "shard"))
    _check(store)
    store.close()
