"""`automem import-automem` against a graph written in AutoMem's schema by the test itself (a graph
of its own on the session's real FalkorDB; no AutoMem code) and a Qdrant collection in
qdrant-client's local mode, importing into the test app served over real HTTP: memories keep
their ids and mapped fields, authored relations arrive, AutoMem's derived structure is counted
and skipped, a re-run writes nothing, and an imported memory is found by meaning."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from falkordb import FalkorDB
from flask import Flask
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from werkzeug.serving import make_server

from automem.app import create_app, stop_app
from automem.cli import main
from automem.embedded import EmbeddedFalkorDB
from automem.services import Services
from enrichment.context import use_services
from tests.conftest import ADMIN_TOKEN, API_TOKEN, MODEL_DIR, Api, make_settings, run_jobs
from tests.served import base_url  # noqa: F401  (fixture)

ODD_TYPES = {"Memory": "Context", "observation": "Insight", "Weird-Type": "Context"}
# A vector that is not its memory's content: finding the memory with it proves AutoMem's vector was kept.
FOREIGN_TEXT = "purple elephant playing a banjo"


@dataclass
class AutoMemStore:
    """What the test wrote in AutoMem's schema, and what the import should make of it."""

    graph: str
    qdrant_path: Path
    ids: list[str] = field(default_factory=list)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    with_vector: set[str] = field(default_factory=set)
    duplicate: str = ""  # same content as ids[1]
    too_long: str = ""  # refused by the service (content over the hard limit)
    foreign: str = ""  # its AutoMem vector is FOREIGN_TEXT's


def _node(n: int) -> dict[str, Any]:
    """Memory n in AutoMem's shape: tags in their original case, metadata as a JSON string."""
    odd = list(ODD_TYPES)
    return {
        "id": str(uuid.uuid4()),
        # Words of its own: the hash embedding of one memory is far from every other's.
        "content": f"Note {n} mentions kiwi{n}, mango{n} and cedar{n}",
        "type": odd[n % 3] if n % 4 == 0 else ["Decision", "decision", "Insight"][n % 3],
        "confidence": 0.8,
        "importance": [0.3, 0.9, 1.4, -0.2][n % 4],
        "tags": ["Project/AutoMem", f"Topic-{n}", "SLACK"],
        "tag_prefixes": ["project", "project:automem", f"topic-{n}", "slack"],
        "timestamp": f"2024-03-{n % 28 + 1:02d}T10:00:00Z",
        "updated_at": f"2024-04-{n % 28 + 1:02d}T10:00:00+02:00",
        "last_accessed": "2024-05-01T00:00:00+00:00",
        "t_valid": f"2024-03-{n % 28 + 1:02d}T10:00:00+00:00",
        "t_invalid": None,
        "metadata": json.dumps({"source": "automem", "n": n}),
        "processed": True,
        "enriched": True,
    }


def _write_graph(db: FalkorDB, store: AutoMemStore, nodes: list[dict[str, Any]]) -> None:
    graph = db.select_graph(store.graph)
    graph.query("UNWIND $nodes AS p CREATE (m:Memory) SET m = p", {"nodes": nodes})
    ids = store.ids
    edges = [
        ("RELATES_TO", ids[0], ids[1], {"strength": 0.7}),
        ("LEADS_TO", ids[1], ids[2], {}),
        ("PREFERS_OVER", ids[3], ids[4], {"strength": 0.9, "context": "databases", "reason": "ACID"}),
        ("EVOLVED_INTO", ids[5], ids[6], {"confidence": 0.8, "reason": "revised"}),
        ("relates_to", ids[7], ids[8], {"strength": 1.5}),  # lower case, strength out of range
        ("PART_OF", store.duplicate, ids[9], {"role": "member"}),  # its start becomes ids[1]
        ("RELATES_TO", ids[10], store.too_long, {}),  # its end is refused
        ("SIMILAR_TO", ids[0], ids[2], {"score": 0.91}),
        ("SIMILAR_TO", ids[2], ids[0], {"score": 0.91}),
        ("PRECEDED_BY", ids[2], ids[1], {"count": 1}),
        ("EXPLAINS", ids[11], ids[12], {"confidence": 0.6}),  # AutoMem's legacy DISCOVERED label
        ("FOO_BAR", ids[13], ids[14], {}),
    ]
    for rel, a, b, props in edges:
        graph.query(
            f"MATCH (a:Memory {{id: $a}}), (b:Memory {{id: $b}}) CREATE (a)-[r:{rel}]->(b) SET r = $p",
            {"a": a, "b": b, "p": props},
        )
    graph.query(
        """
        CREATE (e1:Entity {id: 'entity:people:alice', slug: 'alice', category: 'people'}),
               (e2:Entity {id: 'entity:tools:postgres', slug: 'postgres', category: 'tools'}),
               (p:Pattern {id: 'pattern-decision-1a2b3c4d', type: 'Decision', content: 'decisions'}),
               (mm:Memory:MetaMemory {id: $meta, content: 'cluster of 3', type: 'MetaPattern'})
        WITH e1, e2, p, mm
        MATCH (a:Memory {id: $a}), (b:Memory {id: $b})
        CREATE (e1)-[:REFERENCED_IN]->(a), (e2)-[:REFERENCED_IN]->(b), (a)-[:EXEMPLIFIES]->(p),
               (mm)-[:SUMMARIZES]->(a)
        """,
        {"meta": str(uuid.uuid4()), "a": ids[0], "b": ids[1]},
    )


def _write_vectors(store: AutoMemStore, vectors: dict[str, list[float]], dimension: int) -> None:
    client = QdrantClient(path=str(store.qdrant_path))
    try:
        client.create_collection(
            "memories", vectors_config=qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)
        )
        points = [
            qm.PointStruct(id=i, vector=v, payload={"content": "payload is ignored"})
            for i, v in vectors.items()
        ]
        client.upsert("memories", points)
    finally:
        client.close()  # local mode locks its directory: the importer opens it next


def build_automem_store(
    falkordb_url: str, tmp_path: Path, embed: Any, dimension: int, count: int = 30
) -> AutoMemStore:
    """`count` (at least 16) memories, one duplicate, one too long for the service, their edges,
    entities, a pattern, a cluster summary; vectors by `embed` for all but two."""
    store = AutoMemStore(graph=f"automem_src_{uuid.uuid4().hex[:8]}", qdrant_path=tmp_path / "automem-qdrant")
    nodes = [_node(n) for n in range(count)]
    nodes[2]["metadata"] = "{not json"
    nodes[3]["timestamp"] = "sometime last spring"
    # Unix seconds (2024-03-06T10:00Z, its own day: two notes of one tag at the same moment
    # would be one conversation, and the later embedded with the earlier one's words).
    nodes[5]["timestamp"] = 1_709_719_200
    nodes[6]["archived"] = True
    nodes[7]["protected"] = True
    nodes[7]["protected_reason"] = "core rule"
    duplicate = {**_node(count), "id": str(uuid.uuid4()), "content": nodes[1]["content"]}
    too_long = {**_node(count + 1), "content": "x" * 2500}
    everything = [*nodes, duplicate, too_long]
    store.ids = [n["id"] for n in nodes]
    store.nodes = {n["id"]: n for n in everything}
    store.duplicate, store.too_long, store.foreign = duplicate["id"], too_long["id"], nodes[-3]["id"]
    _write_graph(FalkorDB.from_url(falkordb_url), store, everything)
    without = {n["id"] for n in nodes[-5:-3]}  # no point in AutoMem's collection: embedded here
    vectors = {n["id"]: embed(n["content"]) for n in everything if n["id"] not in without}
    vectors[store.foreign] = embed(FOREIGN_TEXT)
    store.with_vector = set(vectors)
    _write_vectors(store, vectors, dimension)
    return store


def run_import(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["import-automem", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.fixture
def tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMEM_API_TOKEN", API_TOKEN)
    monkeypatch.setenv("ADMIN_API_TOKEN", ADMIN_TOKEN)


def test_import_keeps_memories_and_relations_and_is_rerunnable(
    falkordb_server: EmbeddedFalkorDB,
    services: Services,
    api: Api,
    base_url: str,  # noqa: F811
    jobs: Any,
    tokens: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    embedder = services.embedder
    store = build_automem_store(falkordb_server.url, tmp_path, embedder.embed_one, embedder.dimension)
    source = [
        "--falkordb-url",
        falkordb_server.url,
        "--graph",
        store.graph,
        "--qdrant-path",
        str(store.qdrant_path),
    ]
    args = [*source, "--url", base_url, "--batch", "7"]

    code, dry = run_import(*args, "--dry-run", capsys=capsys)
    assert code == 0 and dry["dry_run"] is True
    # Validated with this machine's limits; content dedup is the service's to find.
    assert dry["memories"] == {"read": 32, "created": 31, "existing": 0, "deduplicated": 0, "refused": 1}
    assert api.get(f"/memory/{store.ids[0]}").status_code == 404  # nothing written

    code, report = run_import(*args, capsys=capsys)
    assert code == 0, report
    assert_first_report(report, store)
    assert_memories(api, store)
    assert_relations(api, store)

    code, again = run_import(*args, capsys=capsys)
    assert code == 0
    assert again["memories"] == {"read": 32, "created": 0, "existing": 30, "deduplicated": 1, "refused": 1}
    assert again["relations"]["created"] == {}
    assert again["relations"]["existing"] == report["relations"]["created"]

    jobs()  # embeds what came without a vector, enriches everything
    assert_recall(api, store, embedder.embed_one)


def assert_first_report(report: dict[str, Any], store: AutoMemStore) -> None:
    assert report["status"] == "success" and report["dry_run"] is False
    assert report["source"] == {
        "falkordb_graph": store.graph,
        "memories": 32,
        "meta_memories": 1,
        "entities": 2,
        "patterns": 1,
        "other": 0,
    }
    assert report["memories"] == {"read": 32, "created": 30, "existing": 0, "deduplicated": 1, "refused": 1}
    assert report["refused"][0]["id"] == store.too_long and "content" in report["refused"][0]["reason"]
    mapping = report["mapping"]
    assert mapping["types"] == {
        "Memory -> Context": 3,
        "observation -> Insight": 3,
        "Weird-Type -> Context": 2,
    }
    assert mapping["tags_changed"] == 32  # every memory has upper-case tags
    assert mapping["importance_clamped"] == 16  # 1.4 and -0.2
    assert mapping["metadata_unparsed"] == 1 and mapping["timestamp_dropped"] == 1
    assert mapping["archived"] == 1 and mapping["protected_pinned"] == 1
    vectors = report["vectors"]
    assert vectors["policy"] == "used" and vectors["source_dimension"] == vectors["target_dimension"]
    assert (vectors["used"], vectors["missing"], vectors["omitted"]) == (30, 2, 0)  # sent with its vector
    relations = report["relations"]
    assert relations["created"] == {
        "EVOLVED_INTO": 1,
        "LEADS_TO": 1,
        "PART_OF": 1,
        "PREFERS_OVER": 1,
        "RELATES_TO": 2,
    }
    assert relations["skipped_system"] == {"EXPLAINS": 1, "PRECEDED_BY": 1, "SIMILAR_TO": 2}
    assert relations["skipped_unknown"] == {"FOO_BAR": 1}
    assert relations["skipped_endpoint_not_imported"] == {"RELATES_TO": 1}
    assert relations["skipped_other_nodes"] == {"EXEMPLIFIES": 1, "REFERENCED_IN": 2, "SUMMARIZES": 1}


def assert_memories(api: Api, store: AutoMemStore) -> None:
    for source_id in store.ids:
        node = store.nodes[source_id]
        memory = api.get(f"/memory/{source_id}").get_json()["memory"]
        assert memory["id"] == source_id and memory["content"] == node["content"]
        assert memory["tags"] == ["project/automem", node["tags"][1].lower(), "slack"]
        assert memory["importance"] == min(1.0, max(0.0, node["importance"]))
        expected_type = ODD_TYPES.get(node["type"], node["type"].capitalize())
        assert memory["type"] == expected_type
        if node["type"] in ODD_TYPES:
            assert memory["metadata"]["automem_type"] == node["type"]
        assert memory["last_accessed"] == "2024-05-01T00:00:00.000000+00:00"
    first = api.get(f"/memory/{store.ids[0]}").get_json()["memory"]
    assert first["timestamp"] == "2024-03-01T10:00:00.000000+00:00"
    assert first["updated_at"] == "2024-04-01T08:00:00.000000+00:00"  # +02:00 normalised to UTC
    assert first["metadata"] == {"source": "automem", "n": 0, "automem_type": "Memory"}
    assert first["embedding_status"] == "stored"  # AutoMem's vector, same dimension
    by_id = {i: api.get(f"/memory/{i}").get_json()["memory"] for i in store.ids[2:8]}
    assert by_id[store.ids[2]]["metadata"] == {"automem_metadata_raw": "{not json"}
    assert by_id[store.ids[5]]["timestamp"] == "2024-03-06T10:00:00.000000+00:00"  # from unix seconds
    assert by_id[store.ids[6]]["metadata"]["automem_archived"] is True
    assert by_id[store.ids[7]]["metadata"]["pinned"] is True
    assert api.get(f"/memory/{store.duplicate}").status_code == 404  # merged into ids[1]
    assert api.get(f"/memory/{store.too_long}").status_code == 404


def _related(api: Api, memory_id: str, rel_type: str) -> list[str]:
    response = api.get(f"/memories/{memory_id}/related?relationship_types={rel_type}&limit=10")
    return [m["id"] for m in response.get_json()["related_memories"]]


def assert_relations(api: Api, store: AutoMemStore) -> None:
    ids = store.ids
    assert _related(api, ids[0], "RELATES_TO") == [ids[1]]
    assert _related(api, ids[3], "PREFERS_OVER") == [ids[4]]
    assert _related(api, ids[5], "EVOLVED_INTO") == [ids[6]]
    assert _related(api, ids[9], "PART_OF") == [ids[1]]  # the duplicate's edge moved to the memory kept
    assert _related(api, ids[0], "SIMILAR_TO") == []  # AutoMem's derived edges are recomputed, not copied


def assert_recall(api: Api, store: AutoMemStore, embed: Any) -> None:
    ids = store.ids
    by_vector = api.post("/recall", json={"embedding": embed(store.nodes[ids[12]]["content"]), "limit": 3})
    assert by_vector.get_json()["results"][0]["id"] == ids[12]
    foreign = api.post("/recall", json={"query": FOREIGN_TEXT, "limit": 3}).get_json()["results"]
    assert foreign[0]["id"] == store.foreign  # only AutoMem's vector says this: it was kept
    by_words = api.get("/recall?query=kiwi26 mango26&limit=3").get_json()["results"]
    assert by_words[0]["id"] == ids[26]  # embedded here: it had no AutoMem vector


def test_other_dimension_is_reembedded_and_an_unreachable_service_fails_clearly(
    falkordb_server: EmbeddedFalkorDB,
    services: Services,
    api: Api,
    base_url: str,  # noqa: F811
    jobs: Any,
    tokens: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = build_automem_store(falkordb_server.url, tmp_path, lambda _text: [0.5] * 8, 8, count=16)
    source = [
        "--falkordb-url",
        falkordb_server.url,
        "--graph",
        store.graph,
        "--qdrant-path",
        str(store.qdrant_path),
    ]
    code, report = run_import(*source, "--url", base_url, capsys=capsys)
    assert code == 0
    vectors = report["vectors"]
    assert vectors["policy"] == "re-embed" and (vectors["source_dimension"], vectors["used"]) == (8, 0)
    assert vectors["omitted"] == 18
    jobs()
    memory = api.get(f"/memory/{store.ids[4]}").get_json()["memory"]
    assert memory["embedding_status"] == "stored"

    assert main(["import-automem", *source, "--url", "http://127.0.0.1:9"]) == 1
    failed = json.loads(capsys.readouterr().out)
    assert failed["status"] == "failed" and "TransportError" in failed["error"]
    assert (
        main(["import-automem", "--falkordb-url", falkordb_server.url, "--graph", "nope", "--url", base_url])
        == 2
    )
    assert "no graph 'nope'" in capsys.readouterr().err


@contextmanager
def served(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


@pytest.mark.semantic
def test_real_model_finds_imported_memories_by_meaning(
    falkordb_server: EmbeddedFalkorDB,
    redis_conn: object,
    tokens: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """AutoMem embedded with another model (1024-d, as its default VECTOR_SIZE): the import leaves
    those vectors behind and this service's MiniLM model embeds every memory."""
    if not (MODEL_DIR / "model.onnx").exists():
        pytest.skip(f"offline model not found at {MODEL_DIR}")
    settings = make_settings(
        falkordb_server.url,
        tmp_path / "data",
        embedding_provider="fastembed",
        embedding_model_dir=str(MODEL_DIR),
    )
    store = build_automem_store(falkordb_server.url, tmp_path, lambda _text: [0.1] * 1024, 1024, count=16)
    graph = FalkorDB.from_url(falkordb_server.url).select_graph(store.graph)
    texts = {
        store.ids[0]: "The team picked PostgreSQL for its transactional guarantees.",
        store.ids[1]: "My cat sleeps on the windowsill every afternoon.",
        store.ids[2]: "We deploy the frontend to a CDN on every merge.",
    }
    for memory_id, text in texts.items():
        graph.query("MATCH (m:Memory {id: $id}) SET m.content = $text", {"id": memory_id, "text": text})
    app = create_app(settings, start_vector_drain=False)
    try:
        with served(app) as url:
            source = ["--falkordb-url", falkordb_server.url, "--graph", store.graph]
            code, report = run_import(
                *source, "--qdrant-path", str(store.qdrant_path), "--url", url, capsys=capsys
            )
            assert code == 0 and report["vectors"]["policy"] == "re-embed"
            run_jobs(app.extensions["automem"])
            api = Api(app.test_client())
            hits = api.get("/recall?query=which database did we choose&limit=1").get_json()["results"]
            assert hits[0]["id"] == store.ids[0]
            hits = api.get("/recall?query=pets napping in the sun&limit=1").get_json()["results"]
            assert hits[0]["id"] == store.ids[1]
    finally:
        use_services(None)
        stop_app(app)
