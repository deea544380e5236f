"""A reloaded Qdrant Edge shard keeps each dense-vector file resident once: Edge maps the file
read-only and writable, and by default loads the writable mapping too, so after an exact search
RSS counted the vectors twice. Every start of the API process reloads the shard
(docs/performance.md, "The Edge shard after a restart, and its write-ahead log")."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from automem.stores.vectors import VectorPoint
from automem.stores.vectors.qdrant_edge import EdgeVectorStore

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")

DIM = 64
POINTS = 3_000
_CHUNK_FILES = "vector_storage/vectors/chunk_"  # a segment's dense-vector files, in its directory
_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ (\S{4}) \S+ \S+ \S+\s+(\S.*)$")


def resident_vector_kb(shard: Path) -> dict[str, int]:
    """Resident kB of this process's mappings of `shard`'s dense-vector chunk files, summed by
    permissions ("r--s", "rw-s")."""
    found: dict[str, int] = collections.defaultdict(int)
    perms = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        match = _MAPPING.match(line)
        if match:
            vector_file = match[2].startswith(str(shard)) and f"/{_CHUNK_FILES}" in match[2]
            perms = match[1] if vector_file else None
        elif perms and line.startswith("Rss:"):
            found[perms] += int(line.split()[1])
    return found


def chunk_kb(shard: Path) -> int:
    """Size in kB of the shard's dense-vector chunk files together (what Edge's default placement
    loads into the writable mapping)."""
    chunks = shard.glob(f"segments/*/{_CHUNK_FILES}*")
    return sum(chunk.stat().st_size for chunk in chunks) // 1024


def _fill(store: EdgeVectorStore) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((POINTS, DIM)).astype(np.float32)
    store.ensure_collection(DIM)
    for first in range(0, POINTS, 500):
        store.upsert(
            [
                VectorPoint(id=str(uuid.UUID(int=i + 1)), vector=vectors[i].tolist(), payload={"rev": 1})
                for i in range(first, first + 500)
            ]
        )


def fill_shard(path: str) -> None:
    store = EdgeVectorStore(path)
    _fill(store)
    store.close()


def _fill_in_another_process(path: Path) -> None:
    """Written by a child process, so that every mapping of the shard in this process is the
    reloaded store's: the writing store's mappings may outlive its close() here for a moment
    (seen once in CI, the writable mapping still resident when the reloaded store was read)."""
    code = f"from tests.integration.test_edge_residency import fill_shard; fill_shard({str(path)!r})"
    subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2], check=True, timeout=120)


def test_a_reloaded_shard_keeps_its_vectors_resident_once_and_still_answers(tmp_path: Path) -> None:
    path = tmp_path / "shard"
    _fill_in_another_process(path)
    assert not resident_vector_kb(path)
    reloaded = EdgeVectorStore(str(path))
    query = [1.0] + [0.0] * (DIM - 1)
    hits = reloaded.search(query, 10)
    resident = resident_vector_kb(path)
    try:
        assert len(hits) == 10
        # The search read the vectors through the read-only mapping. Edge's default placement
        # loads the writable one whole, every chunk file (32 MB each: checked); cold, it stays
        # unloaded but for pages the load itself may write (seen once, in a CI rehearsal on
        # 2026-12-01: 784 kB of a 32 MB chunk).
        assert resident["r--s"] >= POINTS * DIM * 2 / 1024, resident
        assert resident["rw-s"] < chunk_kb(path) / 4, resident
        # Written after the reload and found: the cold segments still take updates.
        reloaded.upsert([VectorPoint(id=str(uuid.UUID(int=POINTS + 1)), vector=query, payload={"rev": 1})])
        assert reloaded.search(query, 1)[0].id == str(uuid.UUID(int=POINTS + 1))
    finally:
        reloaded.close()
