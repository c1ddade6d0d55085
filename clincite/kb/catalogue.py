"""The knowledge-base catalogue: documents and chunks in SQLite, the commit point of every ingest.

Chunk texts live only here; Chroma stores vectors keyed by chunk id. A search hit whose id is not in the catalogue
(a vector left behind by a crash) is simply ignored, so a document always has either its old chunks or its new ones.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from clincite.core.migrations import Migrations, apply_sqlite, sqlite_columns
from clincite.core.naming import remember_title
from clincite.core.shapes import Chunk, DocumentRecord, Segment

catalogue_migrations = Migrations("catalogue")


@catalogue_migrations
def m001_initial(db: sqlite3.Connection) -> None:
    """The schema of the first release (adopted in place when the tables already exist)."""
    db.execute("""CREATE TABLE IF NOT EXISTS documents (
    source TEXT PRIMARY KEY,          -- the file name clinicians see cited
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    ingested_at REAL NOT NULL
)""")
    db.execute("""CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL REFERENCES documents(source) ON DELETE CASCADE,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,       -- JSON list
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL
)""")
    db.execute("""CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source, position)""")
    db.execute("""CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""")


@catalogue_migrations
def m002_chunk_pages(db: sqlite3.Connection) -> None:
    """The pages a chunk spans (JSON [first, last]; NULL for formats without pages): cited as 第 N 页."""
    if "pages" not in sqlite_columns(db, "chunks"):
        db.execute("ALTER TABLE chunks ADD COLUMN pages TEXT")


CHUNK_COLUMNS = 'id, source, title, heading_path, position, start, "end", text, content_hash, pages, segments'
DOCUMENT_COLUMNS = "source, path, title, file_hash, chunk_count, ingested_at, metadata"


@catalogue_migrations
def m003_documents_by_hash(db: sqlite3.Connection) -> None:
    """Ingest looks documents up by content hash: an identical file is reported as a duplicate of the first."""
    db.execute("CREATE INDEX IF NOT EXISTS documents_file_hash ON documents(file_hash)")


@catalogue_migrations
def m004_structure(db: sqlite3.Connection) -> None:
    """A chunk's heading lines and sections (JSON list of segments) and a document's metadata (front matter): the
    structure the loaders know, so nothing downstream re-parses headings from "#"."""
    if "segments" not in sqlite_columns(db, "chunks"):
        db.execute("ALTER TABLE chunks ADD COLUMN segments TEXT")
    if "metadata" not in sqlite_columns(db, "documents"):
        db.execute("ALTER TABLE documents ADD COLUMN metadata TEXT")


class Catalogue:
    """Documents and chunks in SQLite. Thread-safe: one connection behind a lock."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self.schema_version = apply_sqlite(self._db, catalogue_migrations)

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
            rows = self._db.execute(f"SELECT {DOCUMENT_COLUMNS} FROM documents ORDER BY source").fetchall()
        for row in rows:
            remember_title(row[0], row[2])
        return {r[0]: _row_to_document(r) for r in rows}

    def source_with_hash(self, file_hash: str, other_than: str) -> str | None:
        """A document (other than `other_than`) whose file has exactly this content hash."""
        with self._lock:
            row = self._db.execute(
                "SELECT source FROM documents WHERE file_hash=? AND source<>? ORDER BY source LIMIT 1",
                (file_hash, other_than),
            ).fetchone()
        return row[0] if row else None

    def chunk_ids(self, source: str | None = None) -> list[str]:
        with self._lock:
            if source is None:
                rows = self._db.execute("SELECT id FROM chunks ORDER BY source, position").fetchall()
            else:
                rows = self._db.execute("SELECT id FROM chunks WHERE source=? ORDER BY position", (source,)).fetchall()
        return [r[0] for r in rows]

    def get_chunks(self, ids: list[str]) -> dict[str, Chunk]:
        if not ids:
            return {}
        found: dict[str, Chunk] = {}
        with self._lock:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                for row in self._db.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", part):
                    found[row[0]] = _row_to_chunk(row)
        return found

    def all_chunks(self) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks ORDER BY source, position").fetchall()
        return [_row_to_chunk(r) for r in rows]

    def iter_chunks(self, batch: int = 2000):
        """Every chunk, a batch at a time (keyset on rowid): what indexing a whole KB reads without holding it all."""
        last = 0
        while True:
            with self._lock:
                rows = self._db.execute(
                    f"SELECT rowid, {CHUNK_COLUMNS} FROM chunks WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, batch)
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            for row in rows:
                yield _row_to_chunk(row[1:])

    def chunks_of(self, source: str) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE source=? ORDER BY position", (source,)
            ).fetchall()
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
                    f"INSERT OR REPLACE INTO documents ({DOCUMENT_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                    (
                        record.source,
                        record.path,
                        record.title,
                        record.file_hash,
                        record.chunk_count,
                        record.ingested_at,
                        json.dumps(record.metadata, ensure_ascii=False) if record.metadata else None,
                    ),
                )
                db.executemany(
                    f"INSERT INTO chunks ({CHUNK_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    [
                        (
                            c.id,
                            c.source,
                            c.title,
                            json.dumps(c.heading_path, ensure_ascii=False),
                            c.position,
                            c.start,
                            c.end,
                            c.text,
                            c.content_hash,
                            json.dumps(c.pages) if c.pages else None,
                            json.dumps([s.model_dump() for s in c.segments], ensure_ascii=False)
                            if c.segments
                            else None,
                        )
                        for c in chunks
                    ],
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


def _row_to_document(row: tuple[Any, ...]) -> DocumentRecord:
    source, path, title, file_hash, chunk_count, ingested_at, metadata = row
    return DocumentRecord(
        source=source,
        path=path,
        title=title,
        file_hash=file_hash,
        chunk_count=chunk_count,
        ingested_at=ingested_at,
        metadata=json.loads(metadata) if metadata else {},
    )


def _row_to_chunk(row: tuple[Any, ...]) -> Chunk:
    cid, source, title, heading_path, position, start, end, text, chash, pages, segments = row
    remember_title(source, title)
    return Chunk(
        id=cid,
        source=source,
        title=title,
        heading_path=json.loads(heading_path),
        position=position,
        start=start,
        end=end,
        text=text,
        content_hash=chash,
        pages=json.loads(pages) if pages else None,
        segments=[Segment(**s) for s in json.loads(segments)] if segments else [],
    )
