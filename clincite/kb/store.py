"""The knowledge-base directory: its catalogue (SQLite), its vector store (Chroma) and its BM25 index folder.

A KB directory holds
  catalogue.sqlite3  documents and chunks (the source of truth for texts and metadata),
  chroma/            the embedded Chroma store (unless CHROMA_HOST points at a Chroma server),
  bm25/              the bm25s index published by ingest (versioned folders + current.json),
  ingest.lock        held by the one process that writes (ingest); the app only reads.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from filelock import FileLock, Timeout

from clincite.core import naming
from clincite.core.settings import Settings
from clincite.kb.catalogue import Catalogue
from clincite.kb.vectors import VectorStore, collection_name

CATALOGUE_FILE = "catalogue.sqlite3"
BM25_DIR = "bm25"
LOCK_FILE = "ingest.lock"


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
        self.catalogue = Catalogue(self.dir / CATALOGUE_FILE)
        self._vectors: VectorStore | None = None

    @property
    def bm25_dir(self) -> Path:
        return self.dir / BM25_DIR

    def writer_lock(self, timeout: float) -> FileLock:
        """The KB's single-writer lock, acquired (raises IngestBusy after `timeout` seconds).

        An OS lock (fcntl) on a file in the KB folder: released by the kernel when its process dies, so a SIGKILLed
        ingest never leaves the KB locked.
        """
        lock = FileLock(str(self.dir / LOCK_FILE))
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise IngestBusy(f"另一个导入进程正在写入知识库 {self.dir}（{timeout:g} 秒内未结束），请稍后再试") from None
        return lock

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


def now() -> float:
    return time.time()
