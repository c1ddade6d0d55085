"""The parse of one file in a child process, within a time and a memory budget.

    with ParseWorker(seconds=300, memory_mb=1024) as worker:
        document = worker.parse("指南.pdf", data)   # LoadedDocument, or SkipFile with the reason (Chinese)

A loader runs third-party parsers (pdfminer, python-docx, lxml, trafilatura) on bytes anyone could have put in the
library: a 200 KB flate-bomb PDF kept pdfminer busy for more than twelve minutes at 1.3 GB, holding the KB's writer
lock the whole time. So the parse happens in one long-lived child process (`python -m clincite.ingest.budget`: a
fresh interpreter that shares nothing with the ingest, and imports nothing of the program that started it), whose
address space is capped at what it uses after importing the loaders plus INGEST_FILE_MEMORY_MB; the parent waits at
most INGEST_FILE_TIMEOUT seconds for each file. A file over either budget is skipped with its reason, the child is
replaced, and the run goes on (and ends, releasing the lock). The child is reused from file to file, so ten thousand
small files cost no process start each.

Parent and child speak over the child's standard input and output: each message is a 4-byte length and a pickle
(both ends are this module; nothing else writes there: the child's own stdout is sent to its stderr).
"""

from __future__ import annotations

import errno
import logging
import os
import pickle
import resource
import select
import struct
import subprocess
import sys
import time
from typing import BinaryIO

from clincite.ingest.loaders import LoadedDocument, SkipFile
from clincite.ingest.progress import report_pages

log = logging.getLogger("clincite.ingest.budget")

MB = 1024 * 1024
START_TIMEOUT = 120.0  # seconds for a new child to import the loaders (a busy machine, a cold disk)
FILES_PER_CHILD = 500  # a fresh child now and then: memory the parsers never gave back does not pile up
_LENGTH = struct.Struct("!Q")


class WorkerGone(Exception):
    """The child did not answer in time, or is gone."""


def _send(stream: BinaryIO, message: object) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _readable(fd: int, timeout: float) -> bool:
    """Whether the child has written within `timeout` seconds. poll, not select: a server with a thousand open
    sockets hands out descriptors above select()'s limit of 1024, and an upload must still be read."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(timeout * 1000))


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    chunks, missing = [], size
    while missing:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not _readable(fd, left):
                raise WorkerGone("timeout")
        chunk = os.read(fd, min(missing, 4 * MB))
        if not chunk:
            raise WorkerGone("closed")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int, deadline: float | None = None) -> object:
    (size,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, deadline))
    return pickle.loads(_read_exactly(fd, size, deadline))


def _address_space() -> int:
    """This process's virtual memory size in bytes (what RLIMIT_AS limits)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class PageRelay:
    """In the child: a loader's page counter, passed on to the parent page by page (a few bytes each)."""

    def __init__(self, replies: BinaryIO):
        self.replies = replies

    def __call__(self, done: int, total: int) -> None:
        _send(self.replies, ("pages", (done, total)))


def serve(memory_bytes: int) -> None:
    """The child: import the loaders, cap the address space, then parse what the parent sends until told to stop."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a library that prints cannot corrupt the replies
    from clincite.core.logs import quiet_libraries
    from clincite.ingest.intake import load_snapshot  # the loaders, imported before the cap is set
    from clincite.ingest.progress import pages_to

    quiet_libraries()
    if memory_bytes:
        limit = _address_space() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _send(replies, ("ready", None))
    requests = sys.stdin.buffer.fileno()
    while True:
        try:
            request = _receive(requests)
        except WorkerGone:
            return  # the parent is gone or done
        if request is None:
            return
        name, data = request
        try:
            with pages_to(PageRelay(replies)):
                reply = ("ok", load_snapshot(name, data))
        except SkipFile as exc:  # a loader's own reason — unless what it caught was the memory budget running out
            reply = ("memory", None) if _caused_by_memory(exc) else ("skip", str(exc))
        except MemoryError:
            reply = ("memory", None)
        except Exception as exc:  # a parser's own error: that file is skipped, the child goes on
            reply = ("memory", None) if _caused_by_memory(exc) else ("error", f"{type(exc).__name__}: {exc}"[:500])
        del request, name, data
        try:
            _send(replies, reply)
        except MemoryError:
            _send(replies, ("memory", None))
        if reply[0] == "memory":
            return  # the heap may be in any state: the parent starts a fresh child


def _caused_by_memory(exc: BaseException) -> bool:
    """The memory budget ran out somewhere below this error (loaders wrap what their parsers raise)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


class ParseWorker:
    """A child process that parses one file at a time within the budgets; replaced after a failure."""

    def __init__(self, seconds: float, memory_mb: float):
        self.seconds = seconds
        self.memory_bytes = int(memory_mb * MB)
        self._process: subprocess.Popen | None = None
        self._parsed = 0

    def __enter__(self) -> ParseWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-m", "clincite.ingest.budget", str(self.memory_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        try:
            if _receive(process.stdout.fileno(), time.monotonic() + START_TIMEOUT)[0] != "ready":
                raise WorkerGone("no ready message")
        except (WorkerGone, OSError, pickle.UnpicklingError) as exc:
            process.kill()
            process.wait()
            raise RuntimeError(f"the parse worker did not start ({exc})") from None
        self._process, self._parsed = process, 0
        return process

    def _stop(self, kill: bool) -> int | None:
        process, self._process = self._process, None
        if process is None:
            return None
        if not kill:
            try:
                _send(process.stdin, None)
                process.stdin.close()
                return process.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        process.kill()
        code = process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        return code

    def close(self) -> None:
        self._stop(kill=False)

    def parse(self, name: str, data: bytes) -> LoadedDocument:
        """Parse these bytes as a file called `name`; SkipFile (Chinese reason) for a bad file or a blown budget."""
        if self._parsed >= FILES_PER_CHILD:
            self._stop(kill=False)
        process = self._process or self._start()
        self._parsed += 1
        deadline = time.monotonic() + self.seconds
        try:
            _send(process.stdin, (name, data))
            kind, value = _receive(process.stdout.fileno(), deadline)
            while kind == "pages":  # the loader's page counter, for whoever watches the ingest (ingest/progress.py)
                report_pages(*value)
                kind, value = _receive(process.stdout.fileno(), deadline)
        except WorkerGone as gone:
            kind, value = ("timeout" if str(gone) == "timeout" else "died"), None
        except (OSError, EOFError, pickle.UnpicklingError):
            kind, value = "died", None
        if kind == "ok":
            return value
        if kind == "skip":
            raise SkipFile(value)
        if kind == "error":
            raise SkipFile(f"解析失败，已跳过 ({value})")
        exit_code = self._stop(kill=True)
        if kind == "timeout":
            log.warning("Parsing %r took longer than %g s: skipped, parse worker replaced", name, self.seconds)
            raise SkipFile(
                f"解析超过 {self.seconds:g} 秒仍未完成，疑似恶意或损坏的文件，已跳过（INGEST_FILE_TIMEOUT） "
                f"(parse time budget exceeded)"
            )
        if kind == "memory":
            log.warning("Parsing %r ran out of its memory budget: skipped, parse worker replaced", name)
            raise SkipFile(
                f"解析所需内存超过 {self.memory_bytes // MB} MB，疑似恶意或损坏的文件，已跳过（INGEST_FILE_MEMORY_MB） "
                f"(parse memory budget exceeded)"
            )
        # Past its address-space cap a parser's C code may abort instead of raising MemoryError: that is the budget too.
        log.warning("The parse worker died on %r (exit code %s): skipped, worker replaced", name, exit_code)
        raise SkipFile(
            f"解析进程异常终止（退出码 {exit_code}），可能是解析所需内存超过 {self.memory_bytes // MB} MB"
            f"（INGEST_FILE_MEMORY_MB）或文件损坏，已跳过 (parser died: memory budget or a crash)"
        )


if __name__ == "__main__":
    serve(int(sys.argv[1]))
