"""Library changes from the browser: uploads staged safely, then ingested one job at a time in a child process.

- `stage_upload(...)`: each uploaded file is judged before a byte of it reaches a loader — its name is rebuilt from
  the client's (the last path segment only, control and reserved characters out, no leading dot, a supported
  extension: no client path is ever used as a path), its size is within INGEST_MAX_FILE_MB, its bytes are what the
  extension says (`ingest.intake.check_content`: PDF header, a .docx's zip directory, text length), and its name is
  not already a document's (that is what "替换" is for). Accepted files are written 0600 into a fresh folder
  `DATA_DIR/uploads/<job>/`, which stays as the documents' files.
- `IngestQueue`: one per knowledge base. Jobs (upload, replace, delete) wait in a visible queue and run one at a
  time as `python -m clincite.cli.ingest … --progress-json` — the same ingest as the command line, in its own
  process (Chroma writes would hold this process's GIL for seconds). The child's JSON lines drive the progress the
  library page shows: per file (reading, page n/N of a PDF, its result) and for the batch. The KB version moves with
  every change and the running app picks it up as after any ingest.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import shutil
import sys
import time
import unicodedata
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from clincite.core.settings import PROJECT_DIR, Settings
from clincite.ingest.intake import MB, check_content
from clincite.ingest.loaders import SUPPORTED_SUFFIXES, SkipFile
from clincite.users.store import write_private

log = logging.getLogger("clincite.admin")

MAX_NAME_CHARS = 120  # of a file name's stem
RESERVED = re.compile(r'[<>:"/\\|?*]')
KEEP_FINISHED = 8  # finished jobs still shown on the page
STDERR_TAIL = 2000

JobKind = Literal["upload", "replace", "delete"]
JobState = Literal["queued", "running", "done", "failed"]
FILE_STATUS = {
    "waiting": "等待中",
    "reading": "读取中",
    "added": "已导入",
    "updated": "已更新",
    "unchanged": "内容未变",
    "skipped": "已跳过",
    "removed": "已删除",
}
FINISHING = {"vectors": "写入向量", "index": "发布检索索引"}


@dataclass
class JobFile:
    name: str  # the document's name (its source in the KB)
    status: str = "waiting"
    detail: str = ""
    chunks: int = 0
    pages_done: int = 0
    pages_total: int = 0

    @property
    def finished(self) -> bool:
        return self.status not in ("waiting", "reading")

    @property
    def fraction(self) -> float:
        if self.finished:
            return 1.0
        if self.status == "reading" and self.pages_total:
            return 0.9 * self.pages_done / self.pages_total  # the last tenth: passages, vectors
        return 0.0


@dataclass
class IngestJob:
    kind: JobKind
    actor: str
    files: list[JobFile]
    folder: Path | None = None  # the staged upload (upload, replace)
    remove: list[str] = field(default_factory=list)  # documents to take out (delete)
    replaces: str | None = None  # the document a replacement takes over
    old_path: str | None = None  # the replaced or deleted document's file, removed afterwards when it is ours
    refused: list[tuple[str, str]] = field(default_factory=list)  # (name, reason) of files not accepted
    id: str = field(default_factory=lambda: secrets.token_hex(6))
    state: JobState = "queued"
    message: str = ""
    step: str = ""
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    kb_version: int | None = None
    _current: JobFile | None = field(default=None, repr=False)

    @property
    def fraction(self) -> float:
        if self.state in ("done", "failed"):
            return 1.0
        if not self.files:
            return 0.0
        return sum(f.fraction for f in self.files) / len(self.files)

    def seconds_left(self, now: float) -> float | None:
        """A plain estimate from the pace so far; None until there is a pace."""
        if self.state != "running" or self.started is None or not 0.02 < self.fraction < 1:
            return None
        elapsed = now - self.started
        return elapsed * (1 - self.fraction) / self.fraction

    def apply(self, event: dict) -> None:
        """One JSON line of `ingest --progress-json`. Files are matched by name: a folder is read in its own order."""
        kind = event.get("event")
        if kind == "waiting":
            self.step = "等待另一个导入结束"
        elif kind == "started":
            self.step = ""
        elif kind == "file_started":
            self._current = self._file(str(event.get("name") or ""))
            if self._current is not None:
                self._current.status = "reading"
        elif kind == "pages" and self._current is not None:
            self._current.pages_done, self._current.pages_total = int(event["done"]), int(event["total"])
        elif kind == "file_done":
            target = self._file(str(event.get("name") or ""))
            if target is not None:
                target.status = str(event.get("status") or "skipped")
                target.detail = str(event.get("detail") or "")
                target.chunks = int(event.get("chunks") or 0)
            self._current = None
        elif kind == "finishing":
            self.step = FINISHING.get(str(event.get("step")), "")
        elif kind == "summary":
            self.kb_version = event.get("kb_version")
            if event.get("embedding_warning"):
                self.message = str(event["embedding_warning"])
        elif kind == "error":
            self.message = str(event.get("message") or "")

    def _file(self, name: str) -> JobFile | None:
        return next((f for f in self.files if f.name == name), None)


# --- names and staging ------------------------------------------------------------------------------------------


def safe_file_name(client_name: str) -> str | None:
    """A file name of our own making from what the client sent: never a path, never hidden, a supported type.
    None when nothing usable is left."""
    name = client_name.replace("\\", "/").rsplit("/", 1)[-1]
    name = unicodedata.normalize("NFC", name)
    name = "".join(ch for ch in name if ch.isprintable())  # control, format and surrogate characters out
    name = RESERVED.sub("_", name).strip().lstrip(".").strip()
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem.strip() or f".{suffix.lower()}" not in SUPPORTED_SUFFIXES:
        return None
    return f"{stem.strip()[:MAX_NAME_CHARS]}.{suffix.lower()}"


def staged_path(folder: Path, source: str) -> Path:
    """Where a document's file goes inside a staging folder: its source's own segments, never outside the folder."""
    parts = PurePosixPath(source).parts
    if not parts or any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        raise ValueError(f"unusable document name: {source!r}")
    path = folder.joinpath(*parts)
    if not path.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"document name leaves the staging folder: {source!r}")
    return path


def reason_type(suffix: str) -> str:
    return f"不支持的文件类型 “{suffix or '无扩展名'}”（支持 PDF、DOCX、HTML、Markdown、TXT、JSON）"


def judge_upload(name: str, data: bytes, settings: Settings) -> str | None:
    """Why these bytes may not be staged (Chinese), or None: size, then what the bytes are."""
    if not data:
        return "文件为空"
    if len(data) > settings.ingest_max_file_mb * MB:
        return f"文件大小 {len(data) / MB:.1f} MB，超过上限 {settings.ingest_max_file_mb:g} MB（INGEST_MAX_FILE_MB）"
    try:
        check_content(Path(name).suffix.lower(), data, settings)
    except SkipFile as exc:
        return str(exc)
    return None


def new_folder(settings: Settings, job_id: str) -> Path:
    folder = settings.uploads_dir / job_id
    folder.mkdir(parents=True, mode=0o700)
    return folder


def write_staged(folder: Path, source: str, data: bytes) -> Path:
    path = staged_path(folder, source)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private(path, data)
    return path


def discard_own_file(settings: Settings, path: str | None) -> None:
    """Delete a replaced or deleted document's file when it is one of our uploads (never a file of the clinic's
    own folders), and its upload folder once empty."""
    if not path:
        return
    uploads = settings.uploads_dir.resolve()
    file = Path(path)
    try:
        if not file.resolve().is_relative_to(uploads):
            return
        file.unlink(missing_ok=True)
        folder = file.parent
        while folder.resolve() != uploads and folder.resolve().is_relative_to(uploads) and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    except OSError:
        log.warning("Could not remove the old upload %s", path, exc_info=True)


# --- the queue --------------------------------------------------------------------------------------------------


class IngestQueue:
    """The library changes of one knowledge base, one at a time, in the order they were asked for."""

    def __init__(
        self,
        settings: Settings,
        kb_dir: Path,
        on_finished: Callable[[IngestJob], Awaitable[None]],
        on_published: Callable[[], Awaitable[None]] | None = None,
    ):
        self.settings = settings
        self.kb_dir = kb_dir
        self.on_finished = on_finished  # after each job (the change log)
        self.on_published = on_published  # after an ingest ran, before its job shows done (serve the new version)
        self.waiting: deque[IngestJob] = deque()
        self.running: IngestJob | None = None
        self.finished: deque[IngestJob] = deque(maxlen=KEEP_FINISHED)
        self._wake = asyncio.Event()
        self._worker: asyncio.Task | None = None

    def submit(self, job: IngestJob) -> None:
        if not job.files:  # nothing accepted: shown with its reasons, nothing to run
            job.state, job.finished = "done", time.time()
            self.finished.appendleft(job)
            return
        self.waiting.append(job)
        self._wake.set()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work(), name="clincite-ingest-queue")

    def jobs(self) -> list[IngestJob]:
        """Running first, then the waiting ones in order, then the recently finished."""
        return [*([self.running] if self.running else []), *self.waiting, *self.finished]

    def position(self, job: IngestJob) -> int:
        """1 = next to run."""
        return list(self.waiting).index(job) + 1 if job in self.waiting else 0

    def busy_with(self, source: str) -> bool:
        """A job waiting or running will change this document."""
        return any(
            source in [f.name for f in job.files] or source == job.replaces
            for job in [*([self.running] if self.running else []), *self.waiting]
        )

    async def _work(self) -> None:
        while self.waiting:
            job = self.waiting.popleft()
            self.running = job
            try:
                await self._run(job)
            except Exception as exc:  # the queue goes on with the next job
                log.exception("Library job %s failed", job.id)
                job.state, job.message = "failed", f"导入进程出错：{type(exc).__name__}"
            finally:
                job.finished = time.time()
                self.running = None
                self.finished.appendleft(job)
            try:
                await self.on_finished(job)
            except Exception:
                log.exception("Recording library job %s failed", job.id)

    def command(self, job: IngestJob) -> list[str]:
        command = [sys.executable, "-m", "clincite.cli.ingest", "--kb", str(self.kb_dir), "--progress-json"]
        if job.kind == "delete":
            for source in job.remove:
                command += ["--remove", source]
            return command
        assert job.folder is not None
        return [*command, *(["--replace"] if job.kind == "replace" else []), str(job.folder)]

    async def _run(self, job: IngestJob) -> None:
        job.state, job.started = "running", time.time()
        await self._ingest(job, self.command(job))
        if self.on_published is not None:
            job.step = "让问答使用新版本"
            await self.on_published()
        if job.state == "running":
            job.state = "done" if any(f.status != "skipped" for f in job.files) else "failed"
            if job.state == "failed" and not job.message:
                job.message = "没有文件进入知识库（原因见各文件）"
        if job.state == "done" and job.kind in ("replace", "delete"):
            discard_own_file(self.settings, job.old_path)

    async def _ingest(self, job: IngestJob, command: list[str]) -> None:
        environment = {**os.environ, "INGEST_LOCK_TIMEOUT": str(self.settings.upload_lock_wait)}
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=str(PROJECT_DIR),
            env=environment,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        errors = bytearray()

        async def read_events() -> None:
            async for line in process.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a library's stray print: not ours
                if isinstance(event, dict):
                    job.apply(event)

        async def read_errors() -> None:
            async for line in process.stderr:
                errors.extend(line)
                del errors[: max(0, len(errors) - STDERR_TAIL)]

        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(read_events())
                group.create_task(read_errors())
            code = await process.wait()
        finally:
            if process.returncode is None:  # the app is stopping: the child must not write on alone
                process.kill()
                await process.wait()
        if code != 0 and not any(f.finished for f in job.files):
            job.state = "failed"
            job.message = job.message or "导入进程异常结束"
            log.warning("Library job %s: ingest exited %s: %s", job.id, code, errors.decode("utf-8", "replace"))


_queues: dict[Path, IngestQueue] = {}


def queue_for(settings: Settings, kb_dir: Path, on_finished, on_published=None) -> IngestQueue:
    """The queue of this knowledge base in this process (made on first use)."""
    key = Path(kb_dir).resolve()
    if key not in _queues:
        _queues[key] = IngestQueue(settings, key, on_finished, on_published)
    return _queues[key]


def remove_folder(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
