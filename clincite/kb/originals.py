"""The original files of a knowledge base, content-addressed: what "打开原文" serves, never a path on a shared drive.

    store = FileOriginalStore(kb_dir / "originals")
    digest = store.put(data)          # sha256 of exactly these bytes; written once, atomically, 0600
    with store.open(digest) as f:     # a binary stream of the stored bytes (raises FileNotFoundError)
        ...
    store.exists(digest); store.size(digest); store.keep_only({...})

Ingest reads a file's bytes once, hashes them (`digest_of`), parses them, and puts them here; the app streams them
back by that hash. Nothing the document folder does after ingest (a file replaced by a symlink to the app's secret,
rewritten, deleted) changes what a clinician is shown: the web route never opens a path from the catalogue. The
default store is a folder of files named by their hash (`KB_DIR/originals/<sha256>`); with a shared catalogue
(several workers) the same interface is kept in its database (`kb/shared_originals.py`), and neither the ingest nor
the route changes.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from pathlib import Path
from typing import BinaryIO, Protocol

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def digest_of(data: bytes) -> str:
    """The content address of these bytes (also the document's `file_hash` in the catalogue)."""
    return hashlib.sha256(data).hexdigest()


class OriginalStore(Protocol):
    def put(self, data: bytes) -> str: ...

    def open(self, digest: str) -> BinaryIO: ...

    def exists(self, digest: str) -> bool: ...

    def size(self, digest: str) -> int | None: ...

    def keep_only(self, digests: set[str]) -> int: ...


class FileOriginalStore:
    """Originals as files named by their sha256 in one private folder."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        if not _DIGEST.match(digest or ""):
            raise FileNotFoundError(f"not a content address: {digest!r}")
        return self.root / digest

    def put(self, data: bytes) -> str:
        """Store these bytes (once: an existing copy is kept) and return their digest."""
        digest = digest_of(data)
        path = self._path(digest)
        if self.exists(digest):
            return digest
        self.root.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
        tmp = self.root / f".{digest}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)  # atomic: a reader sees no copy or the whole copy
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return digest

    def open(self, digest: str) -> BinaryIO:
        """The stored bytes as a binary stream; FileNotFoundError for anything but a stored regular file.

        O_NOFOLLOW and the fstat check: even a link planted inside the store is never followed."""
        try:
            fd = os.open(self._path(digest), _OPEN_FLAGS)
        except OSError as exc:
            raise FileNotFoundError(f"original {digest[:12]} not stored") from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise FileNotFoundError(f"original {digest[:12]} is not a regular file")
        return os.fdopen(fd, "rb")

    def exists(self, digest: str) -> bool:
        return self.size(digest) is not None

    def size(self, digest: str) -> int | None:
        """The stored original's size in bytes; None when there is none."""
        try:
            info = os.lstat(self._path(digest))
        except OSError:
            return None
        return info.st_size if stat.S_ISREG(info.st_mode) else None

    def keep_only(self, digests: set[str]) -> int:
        """Remove stored originals no document refers to any more (after a prune or an update); returns how many.

        A reader still streaming one keeps its open file until it is done."""
        removed = 0
        if not self.root.is_dir():
            return 0
        for entry in self.root.iterdir():
            if entry.name in digests:
                continue
            if _DIGEST.match(entry.name) or entry.name.endswith(".tmp"):
                entry.unlink(missing_ok=True)
                removed += 1
        return removed
