"""Which BM25-class keyword index should the keyword channel use? Measured on LoCoMo (dev split).

Backends, all holding ONE index over every conversation and scoping each query to its own
conversation through the backend's filter mechanism (a tag prefix, like the service's tag scope):

- falkordb      FalkorDB full-text index (RediSearch inside): `db.idx.fulltext.queryNodes` + Cypher WHERE
- falkordb_push the same, with the tag scope also pushed into the RediSearch query (`@scope:(token)`)
- edge_sparse   Qdrant Edge sparse vectors: `qe.Bm25` document weights (client side) + `Modifier.Idf`
- edge_text     Qdrant Edge text payload index with `scoring=True` + `TextQuery` (BM25 inside Edge)
- python        plain Okapi BM25 (k1=1.2, b=0.75) with this script's tokenizer (the reference)
- qdrant_local_*  qdrant-client local mode, for parity with the Edge shard (best settings only)

Variants: English stemming on/off, stopwords on/off, the session date appended to each document,
and query preprocessing (drop question words and stopwords before the query reaches the index).

Run: `python scripts/bench/bm25_backends.py` (about two minutes on 2 cores). Writes
benchmarks/bm25_backends.json and benchmarks/bm25_backends.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import qdrant_edge as qe
from falkordb import FalkorDB
from py_rust_stemmers import SnowballStemmer
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from automem.embedded import EmbeddedFalkorDB
from automem.timeutil import parse_iso

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
OUT_JSON = ROOT / "benchmarks" / "bm25_backends.json"
OUT_MD = ROOT / "benchmarks" / "bm25_backends.md"

K1, B = 1.2, 0.75
KS = (5, 10)
DEPTH = 50  # results fetched per query; MRR counts the first evidence turn within them
TAG_ROOT = "locomo"
RECOMMENDED = "edge_sparse (global idf, b=0.25)"  # the backend of the per-category table
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

# A common English stopword list (lowercase, apostrophes already split off by the tokenizer).
STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could d did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just ll m me more
    most my myself no nor not now o of off on once only or other our ours ourselves out over own re s same
    she should so some such t than that the their theirs them themselves then there these they this those
    through to too under until up ve very was we were what when where which while who whom why will with
    would y you your yours yourself yourselves
    """,
    )
)
# Words that make a question but say nothing about its answer.
QUESTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "what when where who whom whose which why how did does do is are was were has have had would could "
        "should can will might may ever",
    )
)
QUERY_DROP = STOPWORDS | QUESTION_WORDS

_WORD = re.compile(r"\w+", re.UNICODE)
_STEMMER = SnowballStemmer("english")


# --- data -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Doc:
    idx: int  # dense integer id (Edge point id)
    uid: str  # "<conversation>:<dia_id>"
    conv: str
    text: str
    dated_text: str
    timestamp: str  # ISO 8601, UTC

    @property
    def tag(self) -> str:
        return f"{TAG_ROOT}/{self.conv}"

    def content(self, dated: bool) -> str:
        return self.dated_text if dated else self.text


@dataclass(frozen=True)
class Question:
    conv: str
    text: str
    category: int
    evidence: tuple[str, ...]  # doc uids

    @property
    def tag(self) -> str:
        return f"{TAG_ROOT}/{self.conv}"


def load_locomo(path: Path) -> tuple[list[Doc], list[Question], int]:
    """Docs (one per dialog turn), answerable questions, and how many questions were skipped."""
    samples = json.loads(path.read_text())
    docs: list[Doc] = []
    questions: list[Question] = []
    skipped = 0
    for sample in samples:
        conv, talk = sample["sample_id"], sample["conversation"]
        ids: set[str] = set()
        sessions = sorted(
            (int(k.split("_")[1]), v) for k, v in talk.items() if re.fullmatch(r"session_\d+", k)
        )
        for number, turns in sessions:
            when = datetime.strptime(talk[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
            date_text = f"{when.day} {when:%B %Y}"
            for turn in turns:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares image: {turn['blip_caption']}]"
                docs.append(
                    Doc(
                        idx=len(docs),
                        uid=f"{conv}:{turn['dia_id']}",
                        conv=conv,
                        text=text,
                        dated_text=f"{text} (session date: {date_text})",
                        timestamp=when.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z"),
                    )
                )
                ids.add(turn["dia_id"])
        for qa in sample["qa"]:
            evidence = qa.get("evidence") or []
            if not evidence or any(e not in ids for e in evidence):
                skipped += 1
                continue
            questions.append(
                Question(conv, qa["question"], int(qa["category"]), tuple(f"{conv}:{e}" for e in evidence))
            )
    return docs, questions, skipped


# --- tokenizer (python backend) and query preprocessing ---------------------------------------------
def tokenize(text: str, stem: bool, stop: bool) -> list[str]:
    words = [w for w in _WORD.findall(text.lower().replace("_", " "))]
    if stop:
        words = [w for w in words if w not in STOPWORDS]
    return _STEMMER.stem_words(words) if stem else words


def clean_query(text: str) -> str:
    """Query preprocessing: keep the content words only (no question words, no stopwords)."""
    kept = [w for w in _WORD.findall(text) if w.lower() not in QUERY_DROP]
    return " ".join(kept) if kept else text


def redisearch_terms(text: str, max_terms: int = 32) -> list[str]:
    """User text as RediSearch terms: word characters only, so no query syntax survives
    (`| - @ * % ~ " ( ) { } [ ] : $ \\` and the rest are separators or dropped)."""
    words = [w.lower() for w in _WORD.findall(text) if len(w) > 1]
    return list(dict.fromkeys(words))[:max_terms]


def scope_token(tag: str) -> str:
    """A tag prefix as one opaque full-text token (tags hold `/`, `-`: RediSearch would split them)."""
    return "tp" + hashlib.sha1(tag.encode()).hexdigest()[:16]


# --- configurations ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class IndexConfig:
    stem: bool
    stop: bool
    dated: bool

    @property
    def name(self) -> str:
        return f"stem={'on' if self.stem else 'off'} stop={'on' if self.stop else 'off'} " + (
            "dated" if self.dated else "plain"
        )


@dataclass(frozen=True)
class Scope:
    """The recall filter of one query: tag scope, state, and an optional time range."""

    tag: str
    start: str | None = None
    end: str | None = None


def _when(stamp: str | None) -> datetime | None:
    """A scope's ISO bound as the datetime Qdrant's range condition takes."""
    return parse_iso(stamp) if stamp else None


INDEX_CONFIGS = [
    IndexConfig(stem, stop, dated)
    for dated in (False, True)
    for stem in (False, True)
    for stop in (False, True)
]


# --- backends ---------------------------------------------------------------------------------------
class Backend(Protocol):
    name: str

    def build(self, docs: Sequence[Doc], config: IndexConfig) -> None: ...

    def search(self, query: str, scope: Scope, limit: int) -> list[str]: ...

    def close(self) -> None: ...


class PythonBM25:
    """Okapi BM25 over an in-memory inverted index. `idf_scope`: "scope" computes N, df and avgdl
    over the filtered corpus (as separate per-conversation indexes would), "global" over everything."""

    def __init__(self, idf_scope: str = "scope") -> None:
        self.idf_scope = idf_scope
        self.name = f"python ({idf_scope} idf)"

    def build(self, docs: Sequence[Doc], config: IndexConfig) -> None:
        self.config = config
        self.docs = list(docs)
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        stats: dict[str, Counter[str]] = defaultdict(Counter)  # scope -> df
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # scope -> [N, total length]
        for doc in docs:
            tokens = tokenize(doc.content(config.dated), config.stem, config.stop)
            self.lengths.append(len(tokens))
            for term, tf in Counter(tokens).items():
                self.postings[term].append((doc.idx, tf))
            for key in (doc.tag, "*"):
                stats[key].update(set(tokens))
                totals[key][0] += 1
                totals[key][1] += len(tokens)
        self.df = stats
        self.totals = totals

    def search(self, query: str, scope: Scope, limit: int) -> list[str]:
        key = scope.tag if self.idf_scope == "scope" else "*"
        n, total = self.totals[key]
        avgdl = total / n
        scores: dict[int, float] = defaultdict(float)
        for term in set(tokenize(query, self.config.stem, self.config.stop)):
            df = self.df[key].get(term, 0)
            if not df:
                continue
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
            for idx, tf in self.postings[term]:
                doc = self.docs[idx]
                if doc.tag != scope.tag or not _in_range(doc.timestamp, scope):
                    continue  # the filter
                norm = K1 * (1 - B + B * self.lengths[idx] / avgdl)
                scores[idx] += idf * tf * (K1 + 1) / (tf + norm)
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [self.docs[idx].uid for idx, _ in best]

    def close(self) -> None:
        pass


def _in_range(timestamp: str, scope: Scope) -> bool:
    return (scope.start is None or timestamp >= scope.start) and (scope.end is None or timestamp < scope.end)


class FalkorFullText:
    """FalkorDB full-text index on `Memory.content`; the filter is Cypher on the yielded nodes.

    mode "union": one RediSearch query `w1 | w2 | ...` (what the service does today);
    "per_term": one queryNodes call per word, scores summed in Cypher (avoids RediSearch's division
    of a multi-term match by the distance between the matched terms);
    "push": the union query with the tag scope also pushed into RediSearch as `@scope:(token)`."""

    def __init__(self, url: str, mode: str = "union") -> None:
        self.db = FalkorDB.from_url(url)
        self.mode = mode
        self.name = f"falkordb ({mode})"
        self.graph: Any = None

    def build(self, docs: Sequence[Doc], config: IndexConfig) -> None:
        name = f"bm25_{int(config.stem)}{int(config.stop)}{int(config.dated)}_{self.mode}"
        self.graph = self.db.select_graph(name)
        for prop in ("id", "tag_prefixes", "state", "timestamp"):
            self.graph.query(f"CREATE INDEX FOR (m:Memory) ON (m.{prop})")
        self.graph.query(fulltext_index_cypher(config))
        rows = [
            {
                "id": d.uid,
                "content": d.content(config.dated),
                "scope": " ".join(scope_token(t) for t in (TAG_ROOT, d.tag)),
                "tags": [d.tag],
                "tag_prefixes": [TAG_ROOT, d.tag],
                "state": "active",
                "timestamp": d.timestamp,
            }
            for d in docs
        ]
        for chunk in _chunks(rows, 500):
            self.graph.query("UNWIND $rows AS r CREATE (m:Memory) SET m = r", {"rows": chunk})

    def search(self, query: str, scope: Scope, limit: int) -> list[str]:
        terms = redisearch_terms(query)
        if not terms:
            return []
        where = ["$tag IN m.tag_prefixes", "m.state = 'active'"]
        params: dict[str, Any] = {"tag": scope.tag, "limit": limit}
        if scope.start:
            where.append("m.timestamp >= $start")
            params["start"] = scope.start
        if scope.end:
            where.append("m.timestamp < $end")
            params["end"] = scope.end
        if self.mode == "per_term":
            params["terms"] = terms
            cypher = (
                "UNWIND $terms AS t CALL db.idx.fulltext.queryNodes('Memory', t) YIELD node AS m, score "
                f"WHERE {' AND '.join(where)} WITH m, sum(score) AS s "
                "RETURN m.id, s ORDER BY s DESC LIMIT $limit"
            )
        else:
            text = " | ".join(terms)
            params["q"] = (
                f"@content:({text}) @scope:({scope_token(scope.tag)})" if self.mode == "push" else text
            )
            cypher = (
                "CALL db.idx.fulltext.queryNodes('Memory', $q) YIELD node AS m, score "
                f"WHERE {' AND '.join(where)} RETURN m.id, score ORDER BY score DESC LIMIT $limit"
            )
        return [row[0] for row in self.graph.ro_query(cypher, params).result_set]

    def close(self) -> None:
        if self.graph is not None:
            self.graph.delete()
            self.graph = None


def fulltext_index_cypher(config: IndexConfig) -> str:
    """The index with its options: language (stemmer), stopwords ([] = none; omitted = RediSearch's
    default list), and per field nostem. One full-text index per label; options are fixed at creation."""
    options = "label:'Memory', language:'English'" + ("" if config.stop else ", stopwords:[]")
    content = "{field:'content'" + ("" if config.stem else ", nostem:true") + "}"
    return f"CALL db.idx.fulltext.createNodeIndex({{{options}}}, {content}, {{field:'scope', nostem:true}})"


def edge_stopwords(stop: bool) -> qe.Language | qe.StopwordsSet:
    return qe.Language.English if stop else qe.StopwordsSet(languages=set(), custom=set())


def edge_stemmer(stem: bool) -> qe.SnowballParams | qe.DisabledStemmer:
    return qe.SnowballParams(qe.SnowballLanguage.English) if stem else qe.DisabledStemmer()


def edge_filter(scope: Scope) -> qe.Filter:
    must: list[Any] = [
        qe.FieldCondition("tag_prefixes", match=qe.MatchValue(scope.tag)),
        qe.FieldCondition("state", match=qe.MatchValue("active")),
    ]
    if scope.start or scope.end:
        must.append(qe.FieldCondition("timestamp", range=qe.RangeDateTime(gte=scope.start, lt=scope.end)))
    return qe.Filter(must=must)


def edge_scope_filter(scope: Scope) -> qe.Filter:
    """The IDF corpus: the tag scope only (a time window should not change what a word is worth)."""
    return qe.Filter(must=[qe.FieldCondition("tag_prefixes", match=qe.MatchValue(scope.tag))])


def mean_tokens(docs: Sequence[Doc], config: IndexConfig) -> float:
    return statistics.fmean(len(tokenize(d.content(config.dated), config.stem, config.stop)) for d in docs)


class EdgeShardIndex:
    """One Qdrant Edge shard holding both Edge variants: a sparse `bm25` vector with the IDF modifier
    (document weights from `qe.Bm25`) and a BM25-scored text index on the `content` payload field."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.shard: qe.EdgeShard | None = None
        self.docs: list[Doc] = []
        self.builds = 0  # every build gets a fresh directory: Edge refuses to create over segments

    def build(
        self, docs: Sequence[Doc], config: IndexConfig, avg_len: float | None = None, b: float = B
    ) -> None:
        self.close()
        self.docs = list(docs)
        self.avg_len = avg_len if avg_len is not None else mean_tokens(docs, config)
        self.model = qe.Bm25(
            qe.Bm25Config(
                k=K1,
                b=b,
                avg_len=self.avg_len,
                language="english",
                stopwords=edge_stopwords(config.stop),
                stemmer=edge_stemmer(config.stem),
            )
        )
        self.builds += 1
        path = self.workdir / f"edge_{self.builds}"
        cfg = qe.EdgeConfig(sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)})
        shard = qe.EdgeShard.create(str(path), cfg)
        shard.update(qe.UpdateOperation.create_field_index("tag_prefixes", qe.PayloadSchemaType.Keyword))
        shard.update(qe.UpdateOperation.create_field_index("state", qe.PayloadSchemaType.Keyword))
        shard.update(qe.UpdateOperation.create_field_index("timestamp", qe.PayloadSchemaType.Datetime))
        text_index = qe.TextIndexParams(
            tokenizer=qe.TokenizerType.Word,
            lowercase=True,
            stopwords=edge_stopwords(config.stop),
            stemmer=edge_stemmer(config.stem),
            scoring=True,
        )
        shard.update(qe.UpdateOperation.create_field_index("content", text_index))
        for chunk in _chunks(self.docs, 256):
            points = [
                qe.Point(
                    d.idx, {"bm25": self.model.embed_document(d.content(config.dated))}, _payload(d, config)
                )
                for d in chunk
            ]
            shard.update(qe.UpdateOperation.upsert_points(points))
        self.shard = shard

    def close(self) -> None:
        if self.shard is not None:
            self.shard.close()
            self.shard = None


def _payload(doc: Doc, config: IndexConfig) -> dict[str, Any]:
    return {
        "content": doc.content(config.dated),
        "tags": [doc.tag],
        "tag_prefixes": [TAG_ROOT, doc.tag],
        "state": "active",
        "timestamp": doc.timestamp,
    }


class EdgeSparse:
    """Edge sparse-vector BM25. `scoped_idf` computes IDF over the query's tag scope (IdfParams);
    `avg_len` (default: the corpus' real mean) and `b` go into the document weights."""

    def __init__(
        self, index: EdgeShardIndex, scoped_idf: bool, avg_len: float | None = None, b: float = B
    ) -> None:
        self.index = index
        self.scoped_idf = scoped_idf
        self.avg_len = avg_len
        self.b = b
        extras = ("scoped" if scoped_idf else "global") + " idf"
        extras += f", avg_len={avg_len:g}" if avg_len else ""
        extras += f", b={b:g}" if b != B else ""
        self.name = f"edge_sparse ({extras})"

    def build(self, docs: Sequence[Doc], config: IndexConfig) -> None:
        self.index.build(docs, config, self.avg_len, self.b)

    def search(self, query: str, scope: Scope, limit: int) -> list[str]:
        return [uid for uid, _ in self.scored(query, scope, limit)]

    def scored(self, query: str, scope: Scope, limit: int) -> list[tuple[str, float]]:
        vector = self.index.model.embed_query(query)
        if not vector.indices:
            return []
        params = (
            qe.SearchParams(idf=qe.IdfParams(corpus=edge_scope_filter(scope))) if self.scoped_idf else None
        )
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector, using="bm25"),
            filter=edge_filter(scope),
            params=params,
        )
        assert self.index.shard is not None
        return [(self.index.docs[int(p.id)].uid, p.score) for p in self.index.shard.query(request)]

    def close(self) -> None:
        self.index.close()


class EdgeText:
    """Edge `TextQuery`: BM25 computed inside Edge over the scored text index of `content`
    (k and b are per query; N, df and avgdl are the whole shard's)."""

    def __init__(self, index: EdgeShardIndex, scoped_idf: bool = False, b: float = B) -> None:
        self.index = index
        self.scoped_idf = scoped_idf
        self.b = b
        extras = ("scoped" if scoped_idf else "global") + " idf" + (f", b={b:g}" if b != B else "")
        self.name = f"edge_text ({extras})"

    def build(self, docs: Sequence[Doc], config: IndexConfig) -> None:
        self.index.build(docs, config)

    def search(self, query: str, scope: Scope, limit: int) -> list[str]:
        return [uid for uid, _ in self.scored(query, scope, limit)]

    def scored(self, query: str, scope: Scope, limit: int) -> list[tuple[str, float]]:
        params = (
            qe.SearchParams(idf=qe.IdfParams(corpus=edge_scope_filter(scope))) if self.scoped_idf else None
        )
        request = qe.QueryRequest(
            limit=limit,
            query=qe.TextQuery("content", query, qe.Bm25Params(k=K1, b=self.b)),
            filter=edge_filter(scope),
            params=params,
        )
        assert self.index.shard is not None
        return [(self.index.docs[int(p.id)].uid, p.score) for p in self.index.shard.query(request)]

    def close(self) -> None:
        self.index.close()


class QdrantLocal:
    """qdrant-client local mode (the same request shapes as a Qdrant server).
    mode "sparse": `SparseVectorParams(modifier=IDF)` + `qe.Bm25` vectors; mode "text": `TextQuery`
    over a scored text index (local mode supports only the default tokenizer: no stemming/stopwords)."""

    collection = "bm25"

    def __init__(self, mode: str, scoped_idf: bool = False) -> None:
        self.mode = mode
        self.scoped_idf = scoped_idf
        self.name = f"qdrant_local_{mode}" + (" (scoped idf)" if scoped_idf else " (global idf)")
        self.client: QdrantClient | None = None

    def build(self, docs: Sequence[Doc], config: IndexConfig) -> None:
        self.close()
        self.docs = list(docs)
        client = self.client = QdrantClient(location=":memory:")
        client.create_collection(
            self.collection,
            vectors_config={},
            sparse_vectors_config={"bm25": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
        )
        if self.mode == "text":
            if config.stem or config.stop:
                raise ValueError("qdrant-client local mode scores text only with the default tokenizer")
            schema = qm.TextIndexParams(
                type=qm.TextIndexType.TEXT, tokenizer=qm.TokenizerType.WORD, lowercase=True, scoring=True
            )
            client.create_payload_index(self.collection, "content", field_schema=schema)
        client.create_payload_index(self.collection, "tag_prefixes", qm.PayloadSchemaType.KEYWORD)
        model = qe.Bm25(
            qe.Bm25Config(
                k=K1,
                b=B,
                avg_len=mean_tokens(docs, config),
                language="english",
                stopwords=edge_stopwords(config.stop),
                stemmer=edge_stemmer(config.stem),
            )
        )
        self.model = model
        for chunk in _chunks(self.docs, 256):
            points = []
            for d in chunk:
                vec = model.embed_document(d.content(config.dated))
                sparse = qm.SparseVector(indices=list(vec.indices), values=list(vec.values))
                points.append(qm.PointStruct(id=d.idx, vector={"bm25": sparse}, payload=_payload(d, config)))
            client.upsert(self.collection, points)

    def search(self, query: str, scope: Scope, limit: int) -> list[str]:
        return [uid for uid, _ in self.scored(query, scope, limit)]

    def scored(self, query: str, scope: Scope, limit: int) -> list[tuple[str, float]]:
        assert self.client is not None
        must: list[Any] = [
            qm.FieldCondition(key="tag_prefixes", match=qm.MatchValue(value=scope.tag)),
            qm.FieldCondition(key="state", match=qm.MatchValue(value="active")),
        ]
        if scope.start or scope.end:
            must.append(
                qm.FieldCondition(
                    key="timestamp", range=qm.DatetimeRange(gte=_when(scope.start), lt=_when(scope.end))
                )
            )
        flt = qm.Filter(must=must)
        if self.mode == "text":
            q: Any = qm.TextQuery(
                text=qm.TextQueryInput(query=query, scoring=qm.Bm25Scoring(bm25=qm.Bm25Params(k=K1, b=B)))
            )
            using = "content"
            params = None
        else:
            vec = self.model.embed_query(query)
            if not vec.indices:
                return []
            q = qm.SparseVector(indices=list(vec.indices), values=list(vec.values))
            using = "bm25"
            corpus = qm.Filter(must=[must[0]])
            params = qm.SearchParams(idf=qm.IdfCorpusParams(corpus=corpus)) if self.scoped_idf else None
        hits = self.client.query_points(
            self.collection, query=q, using=using, query_filter=flt, search_params=params, limit=limit
        ).points
        return [(self.docs[int(h.id)].uid, h.score) for h in hits]

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --- metrics ----------------------------------------------------------------------------------------
@dataclass
class Metrics:
    n: int = 0
    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, ranked: Sequence[str], evidence: Sequence[str]) -> None:
        self.n += 1
        gold = set(evidence)
        for k in KS:
            found = gold & set(ranked[:k])
            self.sums[f"all@{k}"] += float(found == gold)
            self.sums[f"any@{k}"] += float(bool(found))
            self.sums[f"frac@{k}"] += len(found) / len(gold)
        rank = next((i for i, uid in enumerate(ranked, 1) if uid in gold), None)
        self.sums["mrr"] += 1.0 / rank if rank else 0.0

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {"n": self.n}
        for key, total in self.sums.items():
            value = total / self.n if self.n else 0.0
            out[key] = round(value, 3) if key == "mrr" else round(100 * value, 1)
        return out


@dataclass
class RunResult:
    backend: str
    config: str
    qclean: bool
    overall: dict[str, float]
    by_category: dict[str, dict[str, float]]
    adversarial: dict[str, float]
    latency_ms: dict[str, float]


def evaluate(backend: Backend, config: IndexConfig, questions: Sequence[Question], qclean: bool) -> RunResult:
    overall, adversarial = Metrics(), Metrics()
    per_cat: dict[int, Metrics] = defaultdict(Metrics)
    timings: list[float] = []
    for q in questions:
        text = clean_query(q.text) if qclean else q.text
        start = time.perf_counter()
        ranked = backend.search(text, Scope(q.tag), DEPTH)
        timings.append(time.perf_counter() - start)
        if q.category == 5:
            adversarial.add(ranked, q.evidence)
        else:
            overall.add(ranked, q.evidence)
            per_cat[q.category].add(ranked, q.evidence)
    return RunResult(
        backend=backend.name,
        config=config.name,
        qclean=qclean,
        overall=overall.summary(),
        by_category={f"{c} {CATEGORIES[c]}": m.summary() for c, m in sorted(per_cat.items())},
        adversarial=adversarial.summary(),
        latency_ms=latency(timings),
    )


def latency(seconds: Sequence[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in seconds)
    return {
        "p50": round(statistics.median(ms), 2),
        "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
    }


def time_filtered(backend: Backend, questions: Sequence[Question], docs: Sequence[Doc]) -> dict[str, float]:
    """Latency with the full filter: tag scope + state + a time window over the conversation's last half."""
    windows: dict[str, str] = {}
    for conv in {d.conv for d in docs}:
        stamps = sorted(d.timestamp for d in docs if d.conv == conv)
        windows[conv] = stamps[len(stamps) // 2]
    timings = []
    for q in questions:
        scope = Scope(q.tag, start=windows[q.conv], end="2100-01-01T00:00:00Z")
        start = time.perf_counter()
        backend.search(clean_query(q.text), scope, 10)
        timings.append(time.perf_counter() - start)
    return latency(timings)


# --- checks of behaviour the report relies on --------------------------------------------------------
def falkor_probes(url: str) -> dict[str, Any]:
    """How FalkorDB scores and parses: small graphs whose expected BM25 order is obvious."""
    graph = FalkorDB.from_url(url).select_graph("probe")
    graph.query("CALL db.idx.fulltext.createNodeIndex({label:'D', language:'English', stopwords:[]}, 'txt')")
    texts = [
        "apple banana",
        "apple cherry",
        "apple date",
        "apple elder",
        "zebra",
        "apple apple zebra",
        "apple x y z w v u t zebra",
        "kiwi",
        "kiwi kiwi kiwi kiwi kiwi kiwi kiwi kiwi filler words here",
    ]
    graph.query("UNWIND range(0, size($t) - 1) AS i CREATE (:D {id: i, txt: $t[i]})", {"t": texts})

    def scores(query: str) -> Any:
        try:
            rows = graph.ro_query(
                "CALL db.idx.fulltext.queryNodes('D', $q) YIELD node, score RETURN node.txt, score "
                "ORDER BY score DESC, node.id",
                {"q": query},
            ).result_set
            return [[t, round(s, 3)] for t, s in rows]
        except Exception as exc:  # RediSearch syntax errors surface as ResponseError
            return f"error: {exc}"

    probes = {q: scores(q) for q in ["apple", "zebra", "kiwi", "apple|zebra", "banana|apple"]}
    raw_user_text = ["what's up (again)?", "tag:work", "-cat", "foo|", '"quote', "50%", "@txt:apple", "$x"]
    syntax = {q: scores(q) for q in raw_user_text}
    escaped = {
        q: scores(" | ".join(terms)) if (terms := redisearch_terms(q)) else "no terms: no query sent"
        for q in raw_user_text
    }
    try:
        graph.query("CALL db.idx.fulltext.createNodeIndex({label:'E', scorer:'BM25'}, 'txt')")
        unknown_option = "accepted silently (no scorer option exists)"
    except Exception as exc:
        unknown_option = f"error: {exc}"
    graph.delete()
    return {
        "tfidf_probes": probes,
        "raw_user_text": syntax,
        "after_redisearch_terms": escaped,
        "scorer_option": unknown_option,
    }


class Scored(Protocol):
    name: str

    def scored(self, query: str, scope: Scope, limit: int) -> list[tuple[str, float]]: ...


def parity(reference: Scored, other: Scored, questions: Sequence[Question], n: int = 200) -> dict[str, Any]:
    """Do two backends return the same top 10? Equal scores may come in any order (ties are common
    with short turns), so a top 10 matches when its score sequence matches and so do the ids scored
    above the 10th score. (qdrant-client local mode is too slow for the full grid.)"""
    sample = list(questions[:: max(1, len(questions) // n)])[:n]
    same_order = same_modulo_ties = 0
    timings = []
    for q in sample:
        expected = reference.scored(q.text, Scope(q.tag), 10)
        start = time.perf_counter()
        got = other.scored(q.text, Scope(q.tag), 10)
        timings.append(time.perf_counter() - start)
        same_order += [u for u, _ in got] == [u for u, _ in expected]
        same_modulo_ties += _tie_key(got) == _tie_key(expected)
    return {
        "reference": reference.name,
        "other": other.name,
        "questions": len(sample),
        "identical_top10_order": round(same_order / len(sample), 3),
        "identical_top10_modulo_ties": round(same_modulo_ties / len(sample), 3),
        "other_latency_ms": latency(timings),
    }


def _tie_key(hits: Sequence[tuple[str, float]]) -> tuple[tuple[float, ...], frozenset[str]]:
    scores = tuple(round(score, 3) for _, score in hits)
    last = scores[-1] if scores else 0.0
    return scores, frozenset(uid for uid, score in hits if round(score, 3) > last)


# --- driver -----------------------------------------------------------------------------------------
def run_grid(
    make: Callable[[], Backend],
    configs: Sequence[IndexConfig],
    *,
    docs: Sequence[Doc],
    questions: Sequence[Question],
) -> list[RunResult]:
    results = []
    backend = make()
    for config in configs:
        backend.build(docs, config)
        for qclean in (False, True):
            result = evaluate(backend, config, questions, qclean)
            results.append(result)
            o = result.overall
            print(
                f"{result.backend:40s} {config.name:24s} qclean={int(qclean)} all@10={o['all@10']:5.1f} "
                f"any@10={o['any@10']:5.1f} mrr={o['mrr']:.3f} p50={result.latency_ms['p50']}ms",
                flush=True,
            )
        backend.close()
    return results


def config_of(result: RunResult, configs: Sequence[IndexConfig]) -> IndexConfig:
    return next(c for c in configs if c.name == result.config)


def best_of(results: Sequence[RunResult], backend: str) -> RunResult:
    own = [r for r in results if r.backend == backend]
    return max(own, key=lambda r: (r.overall["all@10"], r.overall["mrr"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--quick", action="store_true", help="two index configs only")
    args = parser.parse_args()
    docs, questions, skipped = load_locomo(args.data)
    configs = INDEX_CONFIGS[:2] if args.quick else INDEX_CONFIGS
    print(f"{len(docs)} docs, {len(questions)} questions ({skipped} skipped: evidence ids missing)")
    results: list[RunResult] = []
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bm25bench-") as tmp:
        workdir = Path(tmp)
        grid = partial(run_grid, docs=docs, questions=questions)
        for idf_scope in ("scope", "global"):
            results += grid(partial(PythonBM25, idf_scope), configs)
        index = EdgeShardIndex(workdir)
        results += grid(lambda: EdgeSparse(index, scoped_idf=False), configs)
        results += grid(lambda: EdgeSparse(index, scoped_idf=True), configs)
        results += grid(lambda: EdgeText(index), configs)
        edge_cfg = config_of(best_of(results, "edge_sparse (global idf)"), configs)
        # IDF over the tag scope for TextQuery too, and length normalisation: qe.Bm25's default
        # avg_len (256 tokens, ~16x our turns) and lower b.
        results += grid(lambda: EdgeText(index, scoped_idf=True), [edge_cfg])
        results += grid(lambda: EdgeSparse(index, scoped_idf=False, avg_len=256.0), [edge_cfg])
        undated = IndexConfig(edge_cfg.stem, edge_cfg.stop, dated=False)
        for b in (0.25, 0.5):
            results += grid(partial(EdgeSparse, index, scoped_idf=False, b=b), [edge_cfg, undated])
            results += grid(partial(EdgeText, index, b=b), [edge_cfg])

        server = EmbeddedFalkorDB(workdir / "falkordb")
        url = server.start()
        try:
            results += grid(lambda: FalkorFullText(url, "union"), configs)
            results += grid(lambda: FalkorFullText(url, "per_term"), configs)
            falkor_cfg = config_of(best_of(results, "falkordb (per_term)"), configs)
            results += grid(lambda: FalkorFullText(url, "push"), [falkor_cfg])
            extra["falkordb_probes"] = falkor_probes(url)
            latencies = {}
            for mode in ("union", "per_term"):
                falkor = FalkorFullText(url, mode)
                falkor.build(docs, falkor_cfg)
                latencies[f"falkordb ({mode})"] = time_filtered(falkor, questions, docs)
                falkor.close()
        finally:
            server.stop()

        index.build(docs, edge_cfg)
        latencies["edge_sparse"] = time_filtered(EdgeSparse(index, False), questions, docs)
        latencies["edge_sparse (scoped idf)"] = time_filtered(EdgeSparse(index, True), questions, docs)
        latencies["edge_text"] = time_filtered(EdgeText(index), questions, docs)
        python = PythonBM25("scope")
        python.build(docs, edge_cfg)
        latencies["python"] = time_filtered(python, questions, docs)
        extra["filtered_latency_ms"] = latencies

        local = QdrantLocal("sparse", scoped_idf=True)
        local.build(docs, edge_cfg)
        extra["parity_sparse_scoped_idf"] = parity(EdgeSparse(index, True), local, questions)
        local.close()
        plain = IndexConfig(stem=False, stop=False, dated=edge_cfg.dated)
        index.build(docs, plain)
        local = QdrantLocal("text")
        local.build(docs, plain)
        extra["parity_text"] = parity(EdgeText(index), local, questions)
        local.close()
        index.close()
        print(json.dumps({k: v for k, v in extra.items() if k != "falkordb_probes"}, indent=1))

    report = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": {
            "docs": len(docs),
            "questions": len(questions),
            "skipped": skipped,
            "by_category": dict(Counter(q.category for q in questions)),
        },
        "settings": {"k1": K1, "b": B, "depth": DEPTH, "ks": list(KS)},
        "results": [asdict(r) for r in results],
        "checks": extra,
    }
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(json.dumps(report, indent=2) + "\n")
    OUT_MD.write_text(render_markdown(report, results))
    print(f"wrote {OUT_JSON.relative_to(ROOT)} and {OUT_MD.relative_to(ROOT)}")


def render_markdown(report: dict[str, Any], results: Sequence[RunResult]) -> str:
    data = report["data"]
    lines = [
        "# BM25 keyword-channel backends on LoCoMo (dev)",
        "",
        f"Command: `python scripts/bench/bm25_backends.py`. {data['docs']} turns in ONE index, each query "
        f"filtered to its own conversation (tag scope + state); {data['questions']} questions "
        f"({data['skipped']} skipped). Categories 1-4 aggregated; MRR of the first evidence turn in the top "
        f"{DEPTH}. Latency p50 per query in ms (2 cores).",
        "",
        "## Best variant per backend",
        "",
        "| backend | settings | qclean | all@5 | any@5 | frac@5 | all@10 | any@10 | frac@10 | MRR | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r.backend for r in results):
        r = best_of(results, name)
        lines.append(_row(r))
    lines += ["", "## All variants: all@10 / any@10 / MRR (qclean = query preprocessing)", ""]
    lines += _pivot(results)
    best = best_of(results, RECOMMENDED)
    lines += [
        "",
        f"## Per category: {RECOMMENDED}, {best.config}, qclean={int(best.qclean)}",
        "",
        "| category | n | all@5 | any@5 | frac@5 | all@10 | any@10 | frac@10 | MRR |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cat, m in [*best.by_category.items(), ("5 adversarial (apart)", best.adversarial)]:
        lines.append(f"| {cat} | {m['n']} | " + " | ".join(_fmt(m, k) for k in _KEYS) + " |")
    lat = report["checks"].get("filtered_latency_ms", {})
    lines += [
        "",
        "Latency with tag + state + time-range filter (p50/p95 ms): "
        + ", ".join(f"{k} {v['p50']}/{v['p95']}" for k, v in lat.items()),
        "",
        RECOMMENDATION,
        "",
    ]
    return "\n".join(lines)


_KEYS = ("all@5", "any@5", "frac@5", "all@10", "any@10", "frac@10", "mrr")


def _fmt(m: dict[str, float], key: str) -> str:
    return f"{m[key]:.3f}" if key == "mrr" else f"{m[key]:.1f}"


def _pivot(results: Sequence[RunResult]) -> list[str]:
    """One row per variant, one column per backend that ran the whole grid."""
    cells: dict[tuple[str, bool], dict[str, str]] = defaultdict(dict)
    counts = Counter(r.backend for r in results)
    full = [name for name, n in counts.items() if n == 2 * len(INDEX_CONFIGS)]
    for r in results:
        if r.backend in full:
            o = r.overall
            cells[(r.config, r.qclean)][r.backend] = f"{o['all@10']:.1f} / {o['any@10']:.1f} / {o['mrr']:.3f}"
    lines = ["| settings | qclean | " + " | ".join(full) + " |", "|---|---|" + "---|" * len(full)]
    for (config, qclean), row in cells.items():
        lines.append(f"| {config} | {int(qclean)} | " + " | ".join(row.get(b, "") for b in full) + " |")
    return lines


def _row(r: RunResult) -> str:
    cells = " | ".join(_fmt(r.overall, k) for k in _KEYS)
    return f"| {r.backend} | {r.config} | {int(r.qclean)} | {cells} | {r.latency_ms['p50']} |"


RECOMMENDATION = """## Recommendation

Use Qdrant sparse vectors with BM25 weighting on the Edge shard (option B): a named sparse vector
`bm25` with `Modifier.Idf` next to the dense vector; document weights from
`qe.Bm25(Bm25Config(k=1.2, b=0.25, avg_len=<fixed, ~real mean tokens>, language="english"))` (Snowball
English stemming + English stopwords, both on); the indexed text is the memory content plus its date
as words (`... (session date: 8 May 2023)`); the query text goes in unchanged (`embed_query`), with the
recall filter (`tag_prefixes`, `state`, `timestamp` range) as the request's Qdrant filter - the
same filter the dense channel already uses. It is plain Okapi BM25 (identical to the python
reference under the same tokenizer), the fastest (in process, ~0.2 ms p50 with filters), and the same
vectors and requests run unchanged in qdrant-client local mode (`SparseVectorParams(modifier=IDF)`,
identical top 10 modulo ties) and on a Qdrant server. Edge's `TextQuery` over a scored text index
ranks identically, but local mode only scores it with the default tokenizer (no stemming).
FalkorDB's full-text index (option A) is not BM25: RediSearch's fixed TFIDF scorer (tf over the
document's max tf, integer log2 IDF, no length normalisation, and a multi-term match divided by the
distance between the matched terms) makes the `w1 | w2 | ...` query rank near random (4% all@10);
even one query per term summed in Cypher stays ~20 points below BM25, and its tag/time filters only
run after every match in the whole index is produced."""


if __name__ == "__main__":
    main()
