"""The knowledge-base directory: chunk catalogue, vector collection and version.

A KB directory holds
  catalogue.sqlite3  documents and chunks (the source of truth for texts and metadata),
  chroma/            the embedded Chroma store (unless CHROMA_HOST points at a Chroma server),
  bm25/              the bm25s index written by `search.BM25Index`.

Chunk texts live only in the catalogue; Chroma stores vectors keyed by chunk id. A search hit whose id is not in the
catalogue (a vector left behind by a crash) is simply ignored, so the catalogue transaction is the commit point of an
ingest: a document always has either its old chunks or its new ones.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from settings import Settings

CATALOGUE_FILE = "catalogue.sqlite3"
CHROMA_DIR = "chroma"
BM25_DIR = "bm25"

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    source TEXT PRIMARY KEY,          -- the file name clinicians see cited
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    ingested_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL REFERENCES documents(source) ON DELETE CASCADE,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,       -- JSON list
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source, position);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Chunk(BaseModel):
    """One retrievable passage of a document, a verbatim slice `text == document_text[start:end]`."""

    id: str
    source: str
    title: str
    heading_path: list[str]
    position: int
    start: int
    end: int
    text: str
    content_hash: str

    @property
    def index_text(self) -> str:
        """What BM25 and the embedding model see: the passage with its title and headings for context."""
        return " ".join([self.title, *self.heading_path, self.text])


class DocumentRecord(BaseModel):
    source: str
    path: str
    title: str
    file_hash: str
    chunk_count: int
    ingested_at: float


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(source: str, text_hash: str, occurrence: int) -> str:
    """Stable across re-ingests: the same passage of the same document keeps its id (and its vector)."""
    return hashlib.sha1(f"{source}\x00{text_hash}\x00{occurrence}".encode("utf-8")).hexdigest()[:20]


def collection_name(prefix: str, embedding_model: str) -> str:
    """One Chroma collection per embedding model, so switching models never mixes vector spaces."""
    slug = re.sub(r"[^a-z0-9]+", "-", Path(embedding_model).name.lower()).strip("-")[:40] or "model"
    digest = hashlib.sha1(embedding_model.encode("utf-8")).hexdigest()[:8]
    return f"{prefix}-{slug}-{digest}"


class Catalogue:
    """Documents and chunks in SQLite. Thread-safe: one connection behind a lock."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- reads ---
    @property
    def version(self) -> int:
        """Bumped by every change; caches and the BM25 index are keyed on it."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        return int(row[0]) if row else 0

    def document_count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]

    def documents(self) -> dict[str, DocumentRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT source, path, title, file_hash, chunk_count, ingested_at FROM documents ORDER BY source"
            ).fetchall()
        return {r[0]: DocumentRecord(**dict(zip(DocumentRecord.model_fields, r))) for r in rows}

    def chunk_ids(self, source: str | None = None) -> list[str]:
        with self._lock:
            if source is None:
                rows = self._db.execute("SELECT id FROM chunks ORDER BY source, position").fetchall()
            else:
                rows = self._db.execute(
                    "SELECT id FROM chunks WHERE source=? ORDER BY position", (source,)
                ).fetchall()
        return [r[0] for r in rows]

    def get_chunks(self, ids: list[str]) -> dict[str, Chunk]:
        if not ids:
            return {}
        found: dict[str, Chunk] = {}
        with self._lock:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                for row in self._db.execute(f"SELECT * FROM chunks WHERE id IN ({marks})", part):
                    found[row[0]] = _row_to_chunk(row)
        return found

    def all_chunks(self) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM chunks ORDER BY source, position").fetchall()
        return [_row_to_chunk(r) for r in rows]

    def chunks_of(self, source: str) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM chunks WHERE source=? ORDER BY position", (source,)).fetchall()
        return [_row_to_chunk(r) for r in rows]

    # --- writes (each one transaction, each one version bump) ---
    def replace_document(self, record: DocumentRecord, chunks: list[Chunk]) -> None:
        """Swap a document's chunks in one transaction: readers see all old chunks or all new ones."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM chunks WHERE source=?", (record.source,))
                db.execute(
                    "INSERT OR REPLACE INTO documents VALUES (?,?,?,?,?,?)",
                    (record.source, record.path, record.title, record.file_hash, record.chunk_count,
                     record.ingested_at),
                )
                db.executemany(
                    'INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?)',
                    [(c.id, c.source, c.title, json.dumps(c.heading_path, ensure_ascii=False), c.position,
                      c.start, c.end, c.text, c.content_hash) for c in chunks],
                )
                self._bump_version()
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def remove_document(self, source: str) -> None:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM chunks WHERE source=?", (source,))
                db.execute("DELETE FROM documents WHERE source=?", (source,))
                self._bump_version()
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _bump_version(self) -> None:
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES('version', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )


def _row_to_chunk(row: tuple[Any, ...]) -> Chunk:
    cid, source, title, heading_path, position, start, end, text, chash = row
    return Chunk(id=cid, source=source, title=title, heading_path=json.loads(heading_path), position=position,
                 start=start, end=end, text=text, content_hash=chash)


class VectorStore:
    """The Chroma collection of one embedding model: embedded on disk, or a Chroma server when CHROMA_HOST is set."""

    def __init__(self, settings: Settings, kb_dir: Path, embedding_model: str):
        self._settings = settings
        self._kb_dir = kb_dir
        self.name = collection_name(settings.chroma_collection_prefix, embedding_model)
        self._collection = None
        self._lock = threading.Lock()

    def _open(self):
        import chromadb  # ~1 s import: only when vectors are actually needed
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if self._settings.chroma_host:
            client = chromadb.HttpClient(host=self._settings.chroma_host, port=self._settings.chroma_port,
                                         settings=chroma_settings)
        else:
            client = chromadb.PersistentClient(path=str(self._kb_dir / CHROMA_DIR), settings=chroma_settings)
        return client.get_or_create_collection(self.name, metadata={"hnsw:space": "cosine"})

    @property
    def collection(self):
        with self._lock:
            if self._collection is None:
                self._collection = self._open()
            return self._collection

    def count(self) -> int:
        return self.collection.count()

    def existing_ids(self, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), 1000):
            found.update(self.collection.get(ids=ids[start : start + 1000], include=[])["ids"])
        return found

    def all_ids(self) -> set[str]:
        return set(self.collection.get(include=[])["ids"])

    def add(self, ids: list[str], embeddings: list[list[float]], sources: list[str]) -> None:
        self.collection.upsert(ids=ids, embeddings=embeddings, metadatas=[{"source": s} for s in sources])

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), 1000):
            self.collection.delete(ids=ids[start : start + 1000])

    def query(self, embeddings: list[list[float]], k: int) -> list[list[tuple[str, float]]]:
        """Top-k (chunk id, cosine similarity) per query embedding."""
        if not embeddings:
            return []
        # Chroma 1.5 returns what it has when k exceeds the collection: no count() round trip per query.
        result = self.collection.query(query_embeddings=embeddings, n_results=k, include=["distances"])
        return [
            [(cid, 1.0 - float(dist)) for cid, dist in zip(ids, dists)]
            for ids, dists in zip(result["ids"], result["distances"])
        ]


class KnowledgeBase:
    """A KB directory: its catalogue, and its vector store for a given embedding model."""

    def __init__(self, settings: Settings, kb_dir: Path | None = None):
        self.settings = settings
        self.dir = Path(kb_dir or settings.kb_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.catalogue = Catalogue(self.dir / CATALOGUE_FILE)
        self._vectors: VectorStore | None = None

    @property
    def bm25_dir(self) -> Path:
        return self.dir / BM25_DIR

    def vectors(self, embedding_model: str) -> VectorStore:
        if self._vectors is None or self._vectors.name != collection_name(
            self.settings.chroma_collection_prefix, embedding_model
        ):
            self._vectors = VectorStore(self.settings, self.dir, embedding_model)
        return self._vectors

    def close(self) -> None:
        self.catalogue.close()


def now() -> float:
    return time.time()
