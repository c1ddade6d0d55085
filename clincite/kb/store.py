"""The knowledge base: its catalogue, its vector store (Chroma) and its BM25 index folder.

A KB directory holds
  catalogue.sqlite3  documents and chunks (the source of truth for texts and metadata),
  chroma/            the embedded Chroma store (unless CHROMA_HOST points at a Chroma server),
  bm25/              the bm25s index published by ingest (versioned folders + current.json),
  originals/         the bytes of every ingested file, named by their sha256 (what "打开原文" serves),
  ingest.lock        held by the one process that writes (ingest); the app only reads.

Shared by several workers (CLINCITE_DATABASE_URL is PostgreSQL), the catalogue is schema `kb` of that database, the
published BM25 index is stored there too, and the writer lock is a PostgreSQL advisory lock: any machine may ingest,
one at a time, and every worker loads the new index into its own bm25/ folder (a cache) from the database. The
KB directory then holds nothing another machine needs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from pathlib import Path

from filelock import FileLock, Timeout
from sqlalchemy import text

from clincite.core import bus, naming
from clincite.core.settings import Settings
from clincite.kb import bm25
from clincite.kb.bm25 import BM25Index
from clincite.kb.catalogue import Catalogue
from clincite.kb.originals import FileOriginalStore, OriginalStore
from clincite.kb.shared_originals import DatabaseOriginalStore
from clincite.kb.vectors import WRITER_LOCK_FILE, VectorStore, collection_name

CATALOGUE_FILE = "catalogue.sqlite3"
BM25_DIR = "bm25"
ORIGINALS_DIR = "originals"
LOCK_FILE = WRITER_LOCK_FILE
BM25_POINTER_KEY = "bm25_published"  # meta row of a shared catalogue: {"version": n, "dir": name}
BM25_PART_BYTES = 16 * 2**20  # index files go into the database in parts of this size
WRITER_LOCK_KEY = 0x434C494E  # PostgreSQL advisory lock id of the ingest writer ("CLIN")


class IngestBusy(RuntimeError):
    """Another process is ingesting into this KB (message in Chinese, for the command line)."""


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(source: str, text_hash: str, occurrence: int) -> str:
    """Stable across re-ingests: the same passage of the same document keeps its id (and its vector)."""
    return hashlib.sha1(f"{source}\x00{text_hash}\x00{occurrence}".encode()).hexdigest()[:20]


class KnowledgeBase:
    """A KB directory: its catalogue, and its vector store for a given embedding model."""

    def __init__(self, settings: Settings, kb_dir: Path | None = None):
        self.settings = settings
        naming.configure(settings.cited_name)
        self.dir = Path(kb_dir or settings.kb_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        shared = settings.database_url and settings.database_url.startswith("postgresql")
        self.catalogue = (
            Catalogue(settings.database_url, schema="kb") if shared else Catalogue(self.dir / CATALOGUE_FILE)
        )
        self._vectors: VectorStore | None = None
        # What "打开原文" serves: a folder of this machine, or the shared catalogue's database (every worker's).
        self.originals: OriginalStore = (
            DatabaseOriginalStore(self.catalogue)
            if self.catalogue.shared
            else FileOriginalStore(self.dir / ORIGINALS_DIR)
        )

    @property
    def bm25_dir(self) -> Path:
        return self.dir / BM25_DIR

    def writer_lock(self, timeout: float) -> FileLock | SharedWriterLock:
        """The KB's single-writer lock, acquired (raises IngestBusy after `timeout` seconds).

        An OS lock (fcntl) on a file in the KB folder, or with a shared catalogue a PostgreSQL advisory lock held by
        one connection: either is released when its process dies, so a SIGKILLed ingest never leaves the KB locked.
        With a shared catalogue and vectors on this disk (embedded Chroma) it holds both: the app's views read the
        file lock before they load vectors (`clincite.kb.vectors`).
        """
        if not self.catalogue.shared:
            return self._file_lock(timeout)
        shared = SharedWriterLock(self.catalogue, timeout)
        if self.settings.chroma_host:
            return shared
        try:  # vectors on this disk: the app's views look at the file lock before they load them
            shared.also_hold(self._file_lock(timeout))
        except BaseException:
            shared.release()
            raise
        return shared

    def _file_lock(self, timeout: float) -> FileLock:
        lock = FileLock(str(self.dir / LOCK_FILE))
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise IngestBusy(f"另一个导入进程正在写入知识库 {self.dir}（{timeout:g} 秒内未结束），请稍后再试") from None
        return lock

    # --- the published BM25 index: a folder of this machine, or the shared catalogue ---
    def published_bm25(self) -> dict | None:
        """`{"version": n, "dir": name}` of the published BM25 index, or None (cheap: one file, or one row)."""
        if self.catalogue.shared:
            value = self.catalogue.meta(BM25_POINTER_KEY)
            return json.loads(value) if value else None
        return BM25Index.published(self.bm25_dir)

    def publish_bm25(self, index: BM25Index) -> None:
        """Publish a BM25 index (ingest, under the writer lock): into bm25/, and with a shared catalogue also into
        the database, where its pointer switches in the same transaction that stores the files."""
        index.save(self.bm25_dir)
        if self.catalogue.shared:
            self._store_bm25()
        bus.publish(self.settings, bus.KB, {"version": index.version})  # every worker looks now, not at its next poll

    def _store_bm25(self) -> None:
        pointer = BM25Index.published(self.bm25_dir)
        folder = self.bm25_dir / pointer["dir"]
        with self.catalogue.transaction() as db:
            kept = {pointer["dir"]}
            previous = self.catalogue.meta_in(db, BM25_POINTER_KEY)
            if previous:
                kept.add(json.loads(previous)["dir"])  # a worker may still be loading the one before
            marks = ",".join(f":k{i}" for i in range(len(kept)))
            db.execute(
                text(f"DELETE FROM bm25_files WHERE dir NOT IN ({marks})"), {f"k{i}": d for i, d in enumerate(kept)}
            )
            for path in sorted(folder.iterdir()):
                data = path.read_bytes()
                for part, start in enumerate(range(0, max(len(data), 1), BM25_PART_BYTES)):
                    db.execute(
                        text("INSERT INTO bm25_files (dir, name, part, data) VALUES (:dir, :name, :part, :data)"),
                        {
                            "dir": pointer["dir"],
                            "name": path.name,
                            "part": part,
                            "data": data[start : start + BM25_PART_BYTES],
                        },
                    )
            self.catalogue.set_meta(db, BM25_POINTER_KEY, json.dumps(pointer))

    def load_bm25(self) -> BM25Index | None:
        """The published index, memory-mapped from bm25/; with a shared catalogue, first brought into bm25/ from the
        database when this machine does not have that version yet (safe when workers share the folder)."""
        if self.catalogue.shared:
            pointer = self.published_bm25()
            if pointer is None:
                return None
            self._fetch_bm25(pointer)
        return BM25Index.load(self.bm25_dir)

    def _fetch_bm25(self, pointer: dict) -> None:
        folder = self.bm25_dir / pointer["dir"]
        if not folder.is_dir():
            tmp = self.bm25_dir / f".tmp-{uuid.uuid4().hex}"
            tmp.mkdir(parents=True)
            with self.catalogue.transaction() as db:
                rows = db.execute(
                    text("SELECT name, data FROM bm25_files WHERE dir=:dir ORDER BY name, part"),
                    {"dir": pointer["dir"]},
                )
                for name, data in rows:
                    with (tmp / name).open("ab") as f:
                        f.write(data)
            if not (tmp / bm25.META_FILE).exists():
                shutil.rmtree(tmp, ignore_errors=True)
                raise FileNotFoundError(f"BM25 version {pointer['dir']} is not in the shared catalogue")
            try:
                tmp.rename(folder)
            except OSError:  # another worker sharing this folder brought it first
                shutil.rmtree(tmp, ignore_errors=True)
        if BM25Index.published(self.bm25_dir) != pointer:
            pointer_tmp = self.bm25_dir / f".{bm25.POINTER_FILE}.{uuid.uuid4().hex}.tmp"
            pointer_tmp.write_text(json.dumps(pointer), encoding="utf-8")
            os.replace(pointer_tmp, self.bm25_dir / bm25.POINTER_FILE)
            bm25._prune_versions(
                self.bm25_dir, keep={pointer["dir"]}
            )  # the cache keeps this version and the one before

    def vectors(self, embedding_model: str) -> VectorStore:
        if self._vectors is None or self._vectors.name != collection_name(
            self.settings.chroma_collection_prefix, embedding_model
        ):
            self._vectors = VectorStore(self.settings, self.dir, embedding_model)
        return self._vectors

    def close(self) -> None:
        self.catalogue.close()
        if self._vectors is not None:
            self._vectors.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SharedWriterLock:
    """The writer lock of a shared catalogue: a PostgreSQL session-level advisory lock on a connection of its own."""

    POLL_SECONDS = 0.2

    def __init__(self, catalogue: Catalogue, timeout: float):
        self._also: FileLock | None = None
        self._connection = catalogue.engine.connect()
        deadline = time.monotonic() + timeout
        while not self._connection.execute(
            text("SELECT pg_try_advisory_lock(:key)"), {"key": WRITER_LOCK_KEY}
        ).scalar():
            self._connection.commit()
            if time.monotonic() >= deadline:
                self._connection.close()
                raise IngestBusy(f"另一个导入进程正在写入共享知识库（{timeout:g} 秒内未结束），请稍后再试")
            time.sleep(self.POLL_SECONDS)
        self._connection.commit()

    def also_hold(self, lock: FileLock) -> None:
        """Release `lock` with this one."""
        self._also = lock

    def release(self) -> None:
        try:
            self._connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": WRITER_LOCK_KEY})
            self._connection.commit()
        finally:
            self._connection.close()
            if self._also is not None:
                self._also.release()


def now() -> float:
    return time.time()
