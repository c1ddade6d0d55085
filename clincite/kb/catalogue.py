"""The knowledge-base catalogue: documents and chunks, the commit point of every ingest, in SQLite or PostgreSQL.

    Catalogue(kb_dir / "catalogue.sqlite3")                    # one machine: a file in the KB directory
    Catalogue("postgresql+pg8000://…", schema="kb")            # several workers: schema `kb` of the shared database

Chunk texts live only here; Chroma stores vectors keyed by chunk id. A search hit whose id is not in the catalogue
(a vector left behind by a crash) is simply ignored, so a document always has either its old chunks or its new ones.
One SQLAlchemy Core implementation serves both engines (the SQL differs only where noted); its numbered migrations
are the same on both. On PostgreSQL the catalogue also holds the published BM25 index files (`bm25_files`, see
kb/store.py), so a worker on another machine needs no copy of the KB directory.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, create_engine, event, inspect, text
from sqlalchemy.pool import StaticPool

from clincite.core.database import postgres_engine
from clincite.core.migrations import Migrations, apply_sync
from clincite.core.naming import remember_title
from clincite.core.shapes import Chunk, DocumentRecord, Segment

catalogue_migrations = Migrations("catalogue")


def _float(db: Connection) -> str:
    return "DOUBLE PRECISION" if db.dialect.name == "postgresql" else "REAL"  # PostgreSQL's REAL is 4 bytes


@catalogue_migrations
def m001_initial(db: Connection) -> None:
    """The schema of the first release (adopted in place when the tables already exist)."""
    db.execute(
        text(f"""CREATE TABLE IF NOT EXISTS documents (
    source TEXT PRIMARY KEY,          -- the file name clinicians see cited
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    ingested_at {_float(db)} NOT NULL
)""")
    )
    db.execute(
        text("""CREATE TABLE IF NOT EXISTS chunks (
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
    )
    db.execute(text("CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source, position)"))
    db.execute(text("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"))


@catalogue_migrations
def m002_chunk_pages(db: Connection) -> None:
    """The pages a chunk spans (JSON [first, last]; NULL for formats without pages): cited as 第 N 页."""
    if "pages" not in _columns(db, "chunks"):
        db.execute(text("ALTER TABLE chunks ADD COLUMN pages TEXT"))


def _columns(db: Connection, table: str) -> set[str]:
    return {c["name"] for c in inspect(db).get_columns(table)}


CHUNK_COLUMNS = 'id, source, title, heading_path, position, start, "end", text, content_hash, pages, segments'
DOCUMENT_COLUMNS = "source, path, title, file_hash, chunk_count, ingested_at, metadata"
# Front-matter keys under which an author names what a whole document is about
TOPIC_KEYS = ("tags", "keywords", "categories", "category", "subject", "标签", "关键词", "关键字")
MAX_TOPIC_CHARS = 300  # a document's tags read this far: a megabyte of "tags" (a hostile file) is no list of topics


@catalogue_migrations
def m003_documents_by_hash(db: Connection) -> None:
    """Ingest looks documents up by content hash: an identical file is reported as a duplicate of the first."""
    db.execute(text("CREATE INDEX IF NOT EXISTS documents_file_hash ON documents(file_hash)"))


@catalogue_migrations
def m004_structure(db: Connection) -> None:
    """A chunk's heading lines and sections (JSON list of segments) and a document's metadata (front matter): the
    structure the loaders know, so nothing downstream re-parses headings from "#"."""
    if "segments" not in _columns(db, "chunks"):
        db.execute(text("ALTER TABLE chunks ADD COLUMN segments TEXT"))
    if "metadata" not in _columns(db, "documents"):
        db.execute(text("ALTER TABLE documents ADD COLUMN metadata TEXT"))


@catalogue_migrations
def m005_bm25_files(db: Connection) -> None:
    """The published BM25 index files, for workers that share this catalogue from other machines (PostgreSQL); a
    file is stored in parts. Empty in a catalogue file of one machine, where the index lives in KB_DIR/bm25/."""
    blob = "BYTEA" if db.dialect.name == "postgresql" else "BLOB"
    db.execute(
        text(f"""CREATE TABLE IF NOT EXISTS bm25_files (
    dir TEXT NOT NULL,                -- the version folder's name (v00000012-1a2b3c4d)
    name TEXT NOT NULL,
    part INTEGER NOT NULL,
    data {blob} NOT NULL,
    PRIMARY KEY (dir, name, part)
)""")
    )


@catalogue_migrations
def m006_originals(db: Connection) -> None:
    """The original files of a shared KB (kb/shared_originals.py), by content hash: every worker serves them. Empty
    in a catalogue file of one machine, whose originals are files in KB_DIR/originals/."""
    blob = "BYTEA" if db.dialect.name == "postgresql" else "BLOB"
    db.execute(text(f"CREATE TABLE IF NOT EXISTS originals (digest TEXT PRIMARY KEY, data {blob} NOT NULL)"))


@catalogue_migrations
def m007_document_added_at(db: Connection) -> None:
    """When a document first came into the KB (kept when it is replaced; `ingested_at` is its latest version)."""
    if "added_at" not in _columns(db, "documents"):
        db.execute(text(f"ALTER TABLE documents ADD COLUMN added_at {_float(db)}"))
    db.execute(text("UPDATE documents SET added_at = ingested_at WHERE added_at IS NULL"))


@catalogue_migrations
def m008_skipped_files(db: Connection) -> None:
    """Files an ingest skipped, with the reason (Chinese): listed on the library page until the file goes in."""
    db.execute(
        text(
            "CREATE TABLE IF NOT EXISTS skipped_files "
            f"(source TEXT PRIMARY KEY, reason TEXT NOT NULL, skipped_at {_float(db)} NOT NULL)"
        )
    )


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA journal_mode=WAL")
    dbapi_connection.execute("PRAGMA foreign_keys=ON")


def sync_url(url: str) -> str:
    """The app database's URL (asyncpg) as the synchronous driver the catalogue and accounts use (pg8000)."""
    scheme, rest = url.split("://", 1)
    return f"postgresql+pg8000://{rest}" if scheme.startswith("postgresql") else url


class Catalogue:
    """Documents and chunks. Thread-safe: SQLite is one connection behind a lock; PostgreSQL a connection pool."""

    def __init__(self, location: Path | str, schema: str | None = None):
        location = str(location)
        self.shared = location.startswith("postgresql")
        self._lock = threading.Lock()
        if self.shared:
            self.engine = postgres_engine(sync_url(location), "clincite-kb")
            self.schema = schema or "kb"
            event.listen(self.engine, "connect", self._search_path)
            with self.engine.begin() as db:
                db.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"'))
        else:
            Path(location).parent.mkdir(parents=True, exist_ok=True)
            self.schema = None
            self.engine = create_engine(
                f"sqlite:///{location}",
                poolclass=StaticPool,  # one connection, as before: the lock below orders every use of it
                connect_args={"check_same_thread": False, "isolation_level": None},
            )
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self.schema_version = apply_sync(self.transaction, catalogue_migrations)

    def _search_path(self, dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f'SET search_path TO "{self.schema}"')
        cursor.close()
        dbapi_connection.commit()

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Connection]:
        """A connection for reads (autocommit on SQLite; a short transaction on PostgreSQL)."""
        if self.shared:
            with self.engine.connect() as db:
                yield db
                db.commit()
        else:
            with self._lock, self.engine.connect() as db:
                yield db

    def reading(self):
        """A connection for reads, as a context manager (one statement or several, no write lock)."""
        return self._connect()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction: SQLite takes the write lock at BEGIN (IMMEDIATE), so no reader upgrade can fail."""
        if self.shared:
            with self.engine.begin() as db:
                yield db
            return
        with self._lock, self.engine.connect() as db:
            db.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield db
                db.exec_driver_sql("COMMIT")
            except BaseException:
                db.exec_driver_sql("ROLLBACK")
                raise

    def close(self) -> None:
        """A read still running on another thread (a judge the pipeline no longer waits for) finishes first: SQLite's
        one connection closed under it crashed the process."""
        if self.shared:
            self.engine.dispose()
            return
        with self._lock:
            self.engine.dispose()

    # --- reads ---
    @property
    def version(self) -> int:
        """Bumped by every change; caches and the BM25 index are keyed on it."""
        return int(self.meta("version") or 0)

    def meta(self, key: str) -> str | None:
        with self._connect() as db:
            return self.meta_in(db, key)

    @staticmethod
    def meta_in(db: Connection, key: str) -> str | None:
        row = db.execute(text("SELECT value FROM meta WHERE key=:key"), {"key": key}).fetchone()
        return row[0] if row else None

    def document_count(self) -> int:
        with self._connect() as db:
            return db.execute(text("SELECT COUNT(*) FROM documents")).scalar_one()

    def documents(self) -> dict[str, DocumentRecord]:
        with self._connect() as db:
            rows = db.execute(text(f"SELECT {DOCUMENT_COLUMNS} FROM documents ORDER BY source")).fetchall()
        for row in rows:
            remember_title(row[0], row[2])
        return {r[0]: _row_to_document(r) for r in rows}

    def document_topics(self) -> dict[str, str]:
        """source → the topics its author tagged the whole document with (front matter tags, keywords,
        categories), for documents that have any: what every passage of it is about without naming it."""
        topics = {}
        for source, record in self.documents().items():
            words = [record.metadata[key] for key in TOPIC_KEYS if record.metadata.get(key)]
            if words:
                topics[source] = "、".join(words)[:MAX_TOPIC_CHARS]
        return topics

    def library(self) -> list[dict[str, Any]]:
        """Every document with what the library page shows: its pages (PDF), passages, first and latest ingest."""
        last_page = (
            "CAST(c.pages::json->>1 AS INTEGER)" if self.shared else "CAST(json_extract(c.pages, '$[1]') AS INTEGER)"
        )
        with self._connect() as db:
            rows = db.execute(
                text(
                    "SELECT d.source, d.path, d.title, d.chunk_count, d.added_at, d.ingested_at, "
                    f"(SELECT MAX({last_page}) FROM chunks c WHERE c.source = d.source) "
                    "FROM documents d ORDER BY d.source"
                )
            ).fetchall()
        keys = ("source", "path", "title", "chunks", "added_at", "ingested_at", "pages")
        return [dict(zip(keys, row)) for row in rows]

    def skipped_files(self) -> list[dict[str, Any]]:
        """Files the ingests skipped and that have not gone in since: source, reason (Chinese), when."""
        with self._connect() as db:
            rows = db.execute(text("SELECT source, reason, skipped_at FROM skipped_files ORDER BY source")).fetchall()
        return [{"source": r[0], "reason": r[1], "skipped_at": r[2]} for r in rows]

    def source_with_hash(self, file_hash: str, other_than: str) -> str | None:
        """A document (other than `other_than`) whose file has exactly this content hash."""
        with self._connect() as db:
            row = db.execute(
                text("SELECT source FROM documents WHERE file_hash=:hash AND source<>:other ORDER BY source LIMIT 1"),
                {"hash": file_hash, "other": other_than},
            ).fetchone()
        return row[0] if row else None

    def chunk_ids(self, source: str | None = None) -> list[str]:
        with self._connect() as db:
            if source is None:
                rows = db.execute(text("SELECT id FROM chunks ORDER BY source, position")).fetchall()
            else:
                rows = db.execute(
                    text("SELECT id FROM chunks WHERE source=:source ORDER BY position"), {"source": source}
                ).fetchall()
        return [r[0] for r in rows]

    def get_chunks(self, ids: list[str]) -> dict[str, Chunk]:
        if not ids:
            return {}
        found: dict[str, Chunk] = {}
        with self._connect() as db:
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join(f":i{n}" for n in range(len(part)))
                rows = db.execute(
                    text(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})"),
                    {f"i{n}": cid for n, cid in enumerate(part)},
                )
                for row in rows:
                    found[row[0]] = _row_to_chunk(row)
        return found

    def all_chunks(self) -> list[Chunk]:
        with self._connect() as db:
            rows = db.execute(text(f"SELECT {CHUNK_COLUMNS} FROM chunks ORDER BY source, position")).fetchall()
        return [_row_to_chunk(r) for r in rows]

    def iter_chunks(self, batch: int = 2000):
        """Every chunk, a batch at a time (keyset paging), in the order they were written: what indexing a whole KB
        reads without holding it all. SQLite keys on its rowid; PostgreSQL on (source, position)."""
        if self.shared:
            yield from self._iter_by_position(batch)
            return
        last = 0
        while True:
            with self._connect() as db:
                rows = db.execute(
                    text(f"SELECT rowid, {CHUNK_COLUMNS} FROM chunks WHERE rowid > :last ORDER BY rowid LIMIT :n"),
                    {"last": last, "n": batch},
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            for row in rows:
                yield _row_to_chunk(row[1:])

    def _iter_by_position(self, batch: int):
        last: tuple[str, int] = ("", -1)
        while True:
            with self._connect() as db:
                rows = db.execute(
                    text(
                        f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE (source, position) > (:source, :position) "
                        "ORDER BY source, position LIMIT :n"
                    ),
                    {"source": last[0], "position": last[1], "n": batch},
                ).fetchall()
            if not rows:
                return
            last = (rows[-1][1], rows[-1][4])
            for row in rows:
                yield _row_to_chunk(row)

    def chunks_of(self, source: str) -> list[Chunk]:
        with self._connect() as db:
            rows = db.execute(
                text(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE source=:source ORDER BY position"), {"source": source}
            ).fetchall()
        return [_row_to_chunk(r) for r in rows]

    def section_openings(self, ids: list[str], back: int = 6) -> dict[str, str]:
        """For each chunk that carries on a section begun in an earlier chunk (same document, same headings), the
        text of that section's first chunk: where the section says what it is about, which its later passages no
        longer name ("这个是可以预防的" under 眼皮长包, after the first passage said 睑腺炎). At most `back` chunks
        back; the caller decides how much of it to read."""
        chunks = self.get_chunks(ids)
        openings: dict[str, str] = {}
        with self._connect() as db:
            for cid, chunk in chunks.items():
                if chunk.position == 0:
                    continue
                rows = db.execute(
                    text(
                        "SELECT position, heading_path, text FROM chunks WHERE source=:source "
                        "AND position >= :first AND position < :position ORDER BY position DESC"
                    ),
                    {"source": chunk.source, "first": chunk.position - back, "position": chunk.position},
                ).fetchall()
                opening = None
                for _, heading_path, text_ in rows:
                    if json.loads(heading_path) != chunk.heading_path:
                        break
                    opening = text_
                if opening is not None:
                    openings[cid] = opening
        return openings

    # --- writes (each one transaction, each one version bump) ---
    def replace_document(self, record: DocumentRecord, chunks: list[Chunk]) -> None:
        """Swap a document's chunks in one transaction: readers see all old chunks or all new ones."""
        with self.transaction() as db:
            db.execute(text("DELETE FROM chunks WHERE source=:source"), {"source": record.source})
            db.execute(
                text(
                    f"INSERT INTO documents ({DOCUMENT_COLUMNS}, added_at) "
                    "VALUES (:source, :path, :title, :file_hash, :chunk_count, :ingested_at, :metadata, :ingested_at) "
                    "ON CONFLICT (source) DO UPDATE SET path=excluded.path, title=excluded.title, "
                    "file_hash=excluded.file_hash, chunk_count=excluded.chunk_count, "
                    "ingested_at=excluded.ingested_at, metadata=excluded.metadata"  # added_at: when it first came in
                ),
                {
                    **record.model_dump(exclude={"metadata"}),
                    "metadata": json.dumps(record.metadata, ensure_ascii=False) if record.metadata else None,
                },
            )
            db.execute(text("DELETE FROM skipped_files WHERE source=:source"), {"source": record.source})
            if chunks:
                db.execute(
                    text(
                        f"INSERT INTO chunks ({CHUNK_COLUMNS}) VALUES (:id, :source, :title, :heading_path, "
                        ":position, :start, :end, :text, :content_hash, :pages, :segments)"
                    ),
                    [
                        {
                            "id": c.id,
                            "source": c.source,
                            "title": c.title,
                            "heading_path": json.dumps(c.heading_path, ensure_ascii=False),
                            "position": c.position,
                            "start": c.start,
                            "end": c.end,
                            "text": c.text,
                            "content_hash": c.content_hash,
                            "pages": json.dumps(c.pages) if c.pages else None,
                            "segments": json.dumps([s.model_dump() for s in c.segments], ensure_ascii=False)
                            if c.segments
                            else None,
                        }
                        for c in chunks
                    ],
                )
            self._bump_version(db)

    def new_version(self) -> int:
        """A new KB version with the same documents: readers reload what was rebuilt from them (an index cut by an
        upgraded tokenizer)."""
        with self.transaction() as db:
            self._bump_version(db)
        return self.version

    def remove_document(self, source: str) -> None:
        with self.transaction() as db:
            db.execute(text("DELETE FROM chunks WHERE source=:source"), {"source": source})
            db.execute(text("DELETE FROM documents WHERE source=:source"), {"source": source})
            db.execute(text("DELETE FROM skipped_files WHERE source=:source"), {"source": source})
            self._bump_version(db)

    def record_skip(self, source: str, reason: str, at: float) -> None:
        """Remember a skipped file and why (no version bump: search does not change)."""
        with self.transaction() as db:
            db.execute(
                text(
                    "INSERT INTO skipped_files (source, reason, skipped_at) VALUES (:source, :reason, :at) "
                    "ON CONFLICT (source) DO UPDATE SET reason=excluded.reason, skipped_at=excluded.skipped_at"
                ),
                {"source": source, "reason": reason, "at": at},
            )

    def _bump_version(self, db: Connection) -> None:
        db.execute(
            text(
                "INSERT INTO meta(key, value) VALUES('version', '1') "
                "ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"
            )
        )

    def set_meta(self, db: Connection, key: str, value: str) -> None:
        db.execute(
            text(
                "INSERT INTO meta(key, value) VALUES(:key, :value) ON CONFLICT(key) DO UPDATE SET value=excluded.value"
            ),
            {"key": key, "value": value},
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
    cid, source, title, heading_path, position, start, end, text_, chash, pages, segments = row
    remember_title(source, title)
    return Chunk(
        id=cid,
        source=source,
        title=title,
        heading_path=json.loads(heading_path),
        position=position,
        start=start,
        end=end,
        text=text_,
        content_hash=chash,
        pages=json.loads(pages) if pages else None,
        segments=[Segment(**s) for s in json.loads(segments)] if segments else [],
    )
