"""The Chroma collection of one embedding model: embedded on disk, or a Chroma server when CHROMA_HOST is set."""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path

from clincite.settings import Settings

CHROMA_DIR = "chroma"


def collection_name(prefix: str, embedding_model: str) -> str:
    """One Chroma collection per embedding model, so switching models never mixes vector spaces."""
    slug = re.sub(r"[^a-z0-9]+", "-", Path(embedding_model).name.lower()).strip("-")[:40] or "model"
    digest = hashlib.sha1(embedding_model.encode("utf-8")).hexdigest()[:8]
    return f"{prefix}-{slug}-{digest}"


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


