"""The knowledge-base directory: its catalogue (SQLite), its vector store (Chroma) and its BM25 index folder.

A KB directory holds
  catalogue.sqlite3  documents and chunks (the source of truth for texts and metadata),
  chroma/            the embedded Chroma store (unless CHROMA_HOST points at a Chroma server),
  bm25/              the bm25s index written by ingest.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from clincite.catalogue import Catalogue
from clincite.settings import Settings
from clincite.vectors import VectorStore, collection_name

CATALOGUE_FILE = "catalogue.sqlite3"
BM25_DIR = "bm25"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(source: str, text_hash: str, occurrence: int) -> str:
    """Stable across re-ingests: the same passage of the same document keeps its id (and its vector)."""
    return hashlib.sha1(f"{source}\x00{text_hash}\x00{occurrence}".encode("utf-8")).hexdigest()[:20]



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
