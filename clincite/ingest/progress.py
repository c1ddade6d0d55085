"""Ingest progress: what a run tells whoever watches it (the terminal's bars, the browser's upload page).

    progress = MyListener()                              # any object with the methods of IngestProgress
    Ingestor(settings, kb).run(paths, progress=progress)

The pipeline calls `waiting()` when another ingest holds the KB (then waits for it), `started(total)` once,
`file_started` / `file_done` around every file, and `finishing(step)` for the work after the files (vectors, the
search index). Inside one file, a loader that knows its length reports it with `report_pages(done, total)` (the PDF
loader does, page by page): the pipeline routes that to the listener's `pages()` of the file being read. A context
variable carries it, so loaders need no extra parameter, and a run without a listener costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

PageCallback = Callable[[int, int], None]
_page_callback: ContextVar[PageCallback | None] = ContextVar("clincite_ingest_pages", default=None)


class IngestProgress:
    """The listener's interface, every method a no-op: subclass and override what you show."""

    def waiting(self) -> None:
        """Another ingest holds the knowledge base's writer lock: this run waits for it."""

    def started(self, total_files: int) -> None:
        """The run found `total_files` files (or documents to remove) to go through."""

    def file_started(self, index: int, name: str) -> None:
        """File `index` (1-based) of the run starts being read."""

    def pages(self, done: int, total: int) -> None:
        """Inside the current file: `done` of `total` pages read."""

    def file_done(self, index: int, name: str, status: str, detail: str, chunks: int) -> None:
        """File `index` is finished: added / updated / unchanged / skipped / removed / would-remove."""

    def finishing(self, step: str) -> None:
        """After the files: "vectors" (embedding what has no vector yet), "index" (publishing the BM25 index)."""


def report_pages(done: int, total: int) -> None:
    """Called by a loader as it reads: `done` of `total` pages (or other units) of the current file."""
    callback = _page_callback.get()
    if callback is not None:
        callback(done, total)


@contextmanager
def pages_to(callback: PageCallback | None) -> Iterator[None]:
    """While the body runs, `report_pages` calls go to `callback`."""
    token = _page_callback.set(callback)
    try:
        yield
    finally:
        _page_callback.reset(token)
