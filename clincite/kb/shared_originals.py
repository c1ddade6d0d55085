"""The original files of a shared knowledge base, in its catalogue database: "打开原文" on every worker.

    store = DatabaseOriginalStore(catalogue)     # a Catalogue on PostgreSQL (schema kb), table `originals`
    digest = store.put(data)                     # sha256 of exactly these bytes; stored once
    with store.open(digest) as f:                # a binary stream, read from the database 1 MB at a time
        ...
    store.exists(digest); store.keep_only({…})

The same interface as the folder store of one machine (`put`, `open`, `exists`, `keep_only`: decision 1), so ingest
and the web route do not change: a worker on another machine serves the bytes ingest read on any machine, and never
a path. A stream reads the row in slices (`substring`), so a 100 MB PDF is not held in a worker's memory at once.
"""

from __future__ import annotations

import hashlib
import io
import re

from sqlalchemy import text

from clincite.kb.catalogue import Catalogue

READ_BYTES = 2**20  # one slice of a stream
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class DatabaseOriginalStore:
    """Originals as rows (digest, data) of the catalogue's database."""

    def __init__(self, catalogue: Catalogue):
        self.catalogue = catalogue

    def put(self, data: bytes) -> str:
        """Store these bytes (once: an existing copy is kept) and return their digest."""
        digest = hashlib.sha256(data).hexdigest()
        with self.catalogue.transaction() as db:
            db.execute(
                text("INSERT INTO originals (digest, data) VALUES (:digest, :data) ON CONFLICT (digest) DO NOTHING"),
                {"digest": digest, "data": data},
            )
        return digest

    def size(self, digest: str) -> int | None:
        if not _DIGEST.match(digest or ""):
            return None
        with self.catalogue.reading() as db:
            row = db.execute(
                text("SELECT length(data) FROM originals WHERE digest = :digest"), {"digest": digest}
            ).fetchone()
        return int(row[0]) if row else None

    def exists(self, digest: str) -> bool:
        return self.size(digest) is not None

    def open(self, digest: str) -> io.BufferedReader:
        """The stored bytes as a binary stream; FileNotFoundError when there is no such original."""
        size = self.size(digest)
        if size is None:
            raise FileNotFoundError(f"original {str(digest)[:12]} not stored")
        return io.BufferedReader(_RowStream(self.catalogue, digest, size), buffer_size=READ_BYTES)

    def keep_only(self, digests: set[str]) -> int:
        """Remove stored originals no document refers to any more; returns how many."""
        with self.catalogue.transaction() as db:
            stored = {row[0] for row in db.execute(text("SELECT digest FROM originals"))}
            gone = sorted(stored - set(digests))
            for digest in gone:
                db.execute(text("DELETE FROM originals WHERE digest = :digest"), {"digest": digest})
        return len(gone)


class _RowStream(io.RawIOBase):
    """A read-only stream over one row's bytes, a slice per read."""

    def __init__(self, catalogue: Catalogue, digest: str, size: int):
        self.catalogue, self.digest, self.size, self.position = catalogue, digest, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.position >= self.size:
            return 0
        wanted = min(len(buffer), self.size - self.position)
        with self.catalogue.reading() as db:
            piece = db.execute(
                text("SELECT substr(data, :start, :n) FROM originals WHERE digest = :digest"),
                {"start": self.position + 1, "n": wanted, "digest": self.digest},
            ).scalar_one()
        piece = bytes(piece)
        buffer[: len(piece)] = piece
        self.position += len(piece)
        return len(piece)
