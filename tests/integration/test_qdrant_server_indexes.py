"""The Qdrant server adapter's payload indexes: it creates those PAYLOAD_INDEXES names and drops a
retired one a collection still has (RETIRED_INDEXES).

Local mode ignores payload indexes, and no Qdrant server runs here, so the real qdrant-client
talks HTTP to a small stand-in that answers the four calls `ensure_collection` makes (exists,
collection info, create index, delete index) and records them. The collection info it serves is
what qdrant-client's own local mode reports for such a collection, with the payload schema each
test sets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from qdrant_client import QdrantClient
from qdrant_client.http import models as qm

from automem.stores.vectors import PAYLOAD_INDEXES, RETIRED_INDEXES
from automem.stores.vectors.bm25 import SPARSE_NAME
from automem.stores.vectors.qdrant_server import QdrantVectorStore

COLLECTION = "memories"
DIM = 4


def _collection_info(schema: dict[str, str]) -> dict[str, Any]:
    local = QdrantClient(location=":memory:")
    local.create_collection(
        COLLECTION,
        vectors_config=qm.VectorParams(size=DIM, distance=qm.Distance.COSINE),
        sparse_vectors_config={SPARSE_NAME: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    info: dict[str, Any] = local.get_collection(COLLECTION).model_dump(mode="json")
    local.close()
    info["payload_schema"] = {name: {"data_type": kind, "points": 0} for name, kind in schema.items()}
    return info


class _StandIn(ThreadingHTTPServer):
    info: dict[str, Any]
    calls: list[tuple[str, str]]


class _Handler(BaseHTTPRequestHandler):
    server: _StandIn

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _answer(self, result: Any) -> None:
        body = json.dumps({"result": result, "status": "ok", "time": 0.0}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(self) -> str:
        path = self.path.split("?")[0]
        self.server.calls.append((self.command, path))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        return path

    def do_GET(self) -> None:
        path = self._record()
        self._answer({"exists": True} if path.endswith("/exists") else self.server.info)

    def do_PUT(self) -> None:
        self._record()
        self._answer({"operation_id": 1, "status": "completed"})

    do_DELETE = do_PUT


@pytest.fixture
def stand_in() -> Iterator[_StandIn]:
    server = _StandIn(("127.0.0.1", 0), _Handler)
    server.calls = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _ensure(server: _StandIn, schema: dict[str, str]) -> list[tuple[str, str]]:
    server.info = _collection_info(schema)
    client = QdrantClient(
        url=f"http://127.0.0.1:{server.server_address[1]}", timeout=5, check_compatibility=False
    )
    QdrantVectorStore(client, COLLECTION).ensure_collection(DIM)
    client.close()
    return [call for call in server.calls if "/index" in call[1]]


def test_a_collection_without_indexes_gets_every_one_and_no_drop(stand_in: _StandIn) -> None:
    calls = _ensure(stand_in, {})
    assert sorted(calls) == sorted(("PUT", f"/collections/{COLLECTION}/index") for _ in PAYLOAD_INDEXES)


def test_a_retired_index_is_dropped_and_the_current_ones_are_left_alone(stand_in: _StandIn) -> None:
    kinds = {"keyword": "keyword", "float": "float", "datetime": "datetime"}
    schema = {name: kinds[kind] for name, kind in PAYLOAD_INDEXES.items()} | dict.fromkeys(
        RETIRED_INDEXES, "integer"
    )
    calls = _ensure(stand_in, schema)
    assert calls == [("DELETE", f"/collections/{COLLECTION}/index/{name}") for name in RETIRED_INDEXES]
