"""The Chroma collection of one embedding model: embedded on disk, or a Chroma server when CHROMA_HOST is set."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clincite.core.settings import Settings

try:
    import fcntl
except ImportError:  # Windows: no flock; embedded Chroma there is one process's anyway
    fcntl = None

CHROMA_DIR = "chroma"
WRITER_LOCK_FILE = "ingest.lock"  # held exclusively by ingest for its whole run (`KnowledgeBase.writer_lock`)
_LOCK_CONTENTION = {errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES}


class StoreBeingWritten(RuntimeError):
    """An ingest is writing the embedded store: a view that has not loaded it yet must not load it now."""


def collection_name(prefix: str, embedding_model: str) -> str:
    """One Chroma collection per embedding model, so switching models never mixes vector spaces."""
    slug = re.sub(r"[^a-z0-9]+", "-", Path(embedding_model).name.lower()).strip("-")[:40] or "model"
    digest = hashlib.sha1(embedding_model.encode("utf-8")).hexdigest()[:8]
    return f"{prefix}-{slug}-{digest}"


class VectorStore:
    """The Chroma collection of one embedding model: embedded on disk, or a Chroma server when CHROMA_HOST is set.

    `read_only` is the app's view: it never creates the collection (ingest is the only writer) and a missing
    collection reads as empty. Embedded Chroma is not multi-process: a view opened before an ingest added vectors
    does not see them, so the app opens a fresh view per published KB version (see `clincite.retrieval.search`).

    A view's first query loads the index files from disk. chromadb 1.5.9 dies of a segmentation fault when that
    load meets an ingest rewriting them (in this process or another: bench/README.md, "Reading while ingest
    writes"); a view that has loaded keeps serving safely while ingest writes. So the first query of an embedded
    view holds a shared lock on the writer's lock file, and raises `StoreBeingWritten` instead of waiting while an
    ingest holds it.
    """

    def __init__(self, settings: Settings, kb_dir: Path, embedding_model: str, read_only: bool = False):
        self._settings = settings
        self._kb_dir = kb_dir
        self.name = collection_name(settings.chroma_collection_prefix, embedding_model)
        self.read_only = read_only
        self._client = None
        self._collection = None
        self._lock = threading.Lock()
        self._loads_under_lock = read_only and _on_this_disk(settings)
        self._loaded = False

    def _open(self):
        import chromadb  # ~1 s import: only when vectors are actually needed
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if self._client is None:
            if self._settings.chroma_host:
                self._client = chromadb.HttpClient(
                    host=self._settings.chroma_host, port=self._settings.chroma_port, settings=chroma_settings
                )
                _bound_http_timeout(self._client, self._settings.vector_store_timeout)
            else:
                self._client = chromadb.PersistentClient(
                    path=_fresh_identity(self._kb_dir / CHROMA_DIR), settings=chroma_settings
                )
        if self.read_only:
            try:
                return self._client.get_collection(self.name)
            except Exception as exc:  # NotFoundError (1.x) / ValueError (older): nothing ingested with this model
                if "does not exist" in str(exc) or type(exc).__name__ == "NotFoundError":
                    return None
                raise
        return self._client.get_or_create_collection(self.name, metadata={"hnsw:space": "cosine"})

    @property
    def collection(self):
        with self._lock:
            if self._collection is None:
                self._collection = self._open()
            return self._collection

    def close(self) -> None:
        """Release this view (its embedded Chroma system and memory). Searches still running on it may fail."""
        with self._lock:
            client, self._client, self._collection = self._client, None, None
        if client is not None and hasattr(client, "close"):
            try:
                client.close()
            except Exception:  # closing a client whose server is gone: nothing left to release
                pass

    def count(self) -> int:
        collection = self.collection
        return collection.count() if collection is not None else 0

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
        with self._loading():
            collection = self.collection
            if collection is None:
                return [[] for _ in embeddings]
            # Chroma 1.5 returns what it has when k exceeds the collection: no count() round trip per query.
            result = collection.query(query_embeddings=embeddings, n_results=k, include=["distances"])
        return [
            [(cid, 1.0 - float(dist)) for cid, dist in zip(ids, dists)]
            for ids, dists in zip(result["ids"], result["distances"])
        ]

    @contextmanager
    def _loading(self) -> Iterator[None]:
        """Around a query: the first one of an embedded read-only view loads the store, never while ingest writes."""
        if self._loaded or not self._loads_under_lock:
            yield
            return
        with _shared_hold(self._kb_dir / WRITER_LOCK_FILE):
            yield
        self._loaded = True


def _on_this_disk(settings: Settings) -> bool:
    """Embedded Chroma, where the writer's file lock guards the vectors (a Chroma server guards its own)."""
    return not settings.chroma_host and fcntl is not None


def ingest_writing(settings: Settings, kb_dir: Path) -> bool:
    """An ingest is writing this KB's embedded vectors now: a fresh view could not load them (cheap to ask)."""
    if not _on_this_disk(settings):
        return False
    try:
        with _shared_hold(kb_dir / WRITER_LOCK_FILE):
            return False
    except StoreBeingWritten:
        return True


@contextmanager
def _shared_hold(lock_file: Path) -> Iterator[None]:
    """A shared flock on the writer's lock file for the block, not waited for: ingest holds it exclusively."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in _LOCK_CONTENTION:
                raise StoreBeingWritten(f"an ingest is writing {lock_file.parent}") from None
            raise
        yield
    finally:
        os.close(fd)  # releases the flock


def _fresh_identity(path: Path) -> str:
    """A persist-directory string that no open Chroma system in this process uses yet.

    chromadb keeps one System per persist-directory string in the process, so a second PersistentClient on the
    same string would share the old in-memory HNSW index. `path/.`, `path/./.` … name the same folder but open a
    new System that loads what is on disk now.
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    candidate = str(path)
    while candidate in SharedSystemClient._identifier_to_system:
        candidate += "/."
    return candidate


def _bound_http_timeout(client, seconds: float) -> None:
    """chromadb's HttpClient waits forever (httpx timeout=None); a vector store that hangs must fail instead.

    Reaches into the client's httpx session: if a chromadb release renames it, the search layer's own timeout
    (VECTOR_STORE_TIMEOUT) still bounds what a question waits.
    """
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(seconds)
