"""The embedding counters (automem.embedding.metered): a query's embedding on the recall path
makes no Redis round trip for them, and every call, text and failure reaches the shared counters
all the same, within FLUSH_SECONDS or at the next flush."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automem.counters import EMBEDDING_STATS_KEY
from automem.embedding.base import EmbeddingError, EmbeddingProvider
from automem.embedding.metered import FLUSH_SECONDS, MeteredEmbedder


class Fixed(EmbeddingProvider):
    """Two-dimensional vectors; a text "fail" fails the call, as a provider's error would."""

    name = "fixed"

    def __init__(self) -> None:
        super().__init__("fixed", 2)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if "fail" in texts:
            raise EmbeddingError("failed")
        return [[1.0, 0.0] for _ in texts]


class Spied(redis.Redis):
    """A real connection that counts the pipelines it runs."""

    pipelines = 0

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        type(self).pipelines += 1
        return super().pipeline(*args, **kwargs)


def _stats(conn: redis.Redis) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in conn.hgetall(EMBEDDING_STATS_KEY).items()}


def _embed(embedder: MeteredEmbedder, texts: list[str]) -> None:
    with contextlib.suppress(EmbeddingError):
        embedder.embed(texts)


def test_an_embedding_waits_for_no_counter_and_the_timer_writes_it(redis_conn: redis.Redis) -> None:
    spied = Spied(connection_pool=redis_conn.connection_pool)
    Spied.pipelines = 0
    embedder = MeteredEmbedder(Fixed(), spied)
    embedder.embed_one("a query")
    embedder.embed(["two", "texts"])
    assert Spied.pipelines == 0  # nothing written on the caller's path
    deadline = time.monotonic() + 10 * FLUSH_SECONDS
    while _stats(redis_conn) != {"calls": 2, "texts": 3} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stats(redis_conn) == {"calls": 2, "texts": 3}
    assert Spied.pipelines == 1  # both calls in one write


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    calls=st.lists(st.lists(st.sampled_from(["a", "b", "fail"]), min_size=1, max_size=4), max_size=12),
    threads=st.integers(1, 3),
)
def test_every_call_text_and_failure_is_counted_once(
    redis_conn: redis.Redis, calls: list[list[str]], threads: int
) -> None:
    """Calls from several threads, some failing, with flushes (GET /metrics) racing the timer:
    after a last flush the counters hold exactly what was done."""
    redis_conn.delete(EMBEDDING_STATS_KEY)
    embedder = MeteredEmbedder(Fixed(), redis_conn)
    shares = [calls[n::threads] for n in range(threads)]
    workers = [threading.Thread(target=lambda s=s: [_embed(embedder, t) for t in s]) for s in shares]
    for worker in workers:
        worker.start()
    embedder.flush()
    for worker in workers:
        worker.join()
    embedder.flush()
    failed = [t for t in calls if "fail" in t]
    texts = sum(len(t) for t in calls if t not in failed)
    expected = {"calls": len(calls), "texts": texts, "errors": len(failed)}
    assert _stats(redis_conn) == {k: v for k, v in expected.items() if v}


def test_a_count_made_while_the_timer_writes_gets_a_timer_of_its_own(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timer thread is still alive while it writes: a count made then must not wait for a
    timer that has already taken the counts."""
    from automem.embedding import metered

    writing, release = threading.Event(), threading.Event()
    write = metered.add_embedding_counts

    def slow_write(conn: redis.Redis | None, counts: Any) -> None:
        if counts.get("texts") == 1 and not release.is_set():  # the first write only
            writing.set()
            release.wait(5)
        write(conn, counts)

    monkeypatch.setattr(metered, "add_embedding_counts", slow_write)
    embedder = MeteredEmbedder(Fixed(), redis_conn)
    embedder.embed_one("first")
    assert writing.wait(10 * FLUSH_SECONDS)  # the timer is writing the first count
    embedder.embed(["second", "call"])
    release.set()
    deadline = time.monotonic() + 10 * FLUSH_SECONDS
    while _stats(redis_conn) != {"calls": 2, "texts": 3} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stats(redis_conn) == {"calls": 2, "texts": 3}
