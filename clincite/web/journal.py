"""Writes the app database could not take, kept in order until it takes them again: nothing a clinician asked,
was answered or rated is lost to a database outage or a full disk.

    journal = WriteJournal(data_dir / "unsaved_writes.jsonl")
    journal.load()                                  # at start: what an earlier run could not write
    durable = await journal.add({"kind": "answer", ...})
    await journal.forget(3)                         # the first three were written to the database

Each entry is one write (a batch of step rows, a thread, an answer record, an element, a rating), kept in memory and
appended, fsync'd, to a JSON-lines file (0600: it holds questions and comments), so a restart loses none either. If
the disk is full too, the entry is kept in memory only (`add` says so: the clinician is told) and written as soon as
either works. The data layer (web/datalayer.py) replays the entries in order once the database answers again; the
file is rewritten without the entries written. The file's I/O runs in a worker thread, one operation at a time, so
it costs the event loop nothing and keeps the order of the entries.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
from pathlib import Path

log = logging.getLogger("clincite.journal")
PRIVATE = 0o600


class WriteJournal:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries: list[dict] = []
        self._lock: asyncio.Lock | None = None
        self._on_disk = 0  # how many of `entries` (from the first) are known to be in the file

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def load(self, legacy: Path | None = None) -> int:
        """Read the entries an earlier run left (and the rows of the old feedback fallback file, if any)."""
        loaded = []
        for path, legacy_kind in ((self.path, None), (legacy, "feedback_row")):
            if path is None or not path.exists():
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    log.error("An unreadable line in %s was skipped", path)
                    continue
                loaded.append({"kind": legacy_kind, "row": entry} if legacy_kind else entry)
        self.entries = loaded + self.entries
        if legacy is not None and legacy.exists():
            self._rewrite(self.entries)
            legacy.unlink()
        self._on_disk = len(self.entries)
        return len(loaded)

    async def add(self, entry: dict) -> bool:
        """Keep this write; True when it is on disk too (False: in memory only, the disk refused it)."""
        self.entries.append(entry)
        async with self.lock:
            try:
                await asyncio.to_thread(self._rewrite if self._on_disk < len(self.entries) - 1 else self._append, entry)
            except OSError as exc:
                log.error("A write the database did not take could not be kept on disk either (%s)", exc)
                return False
            self._on_disk = len(self.entries)
            return True

    async def forget(self, count: int) -> None:
        """The first `count` entries are in the database now: drop them (from the file too)."""
        del self.entries[:count]
        self._on_disk = max(0, self._on_disk - count)
        async with self.lock:
            try:
                await asyncio.to_thread(self._rewrite, None)
                self._on_disk = len(self.entries)
            except OSError as exc:  # the file keeps entries already written: replaying one twice writes it once
                log.error("The journal of unsaved writes could not be rewritten (%s)", exc)

    def _append(self, entry: dict) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), PRIVATE)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _rewrite(self, _entry: object) -> None:
        """The file holds exactly the entries in memory (atomically replaced; removed when there are none)."""
        entries = list(self.entries)
        if not entries:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
