"""Ingest documents into a ClinCite knowledge base.

    python ingest.py sample_kb/                  # Markdown, text, PDF, DOCX, HTML; folders are walked
    python ingest.py ~/guidelines --kb ./kb --prune            # --dry-run: list what would be removed
    python ingest.py --remove 旧指南.pdf                        # take a document out (passages and vectors)
    python ingest.py 新版/ --replace                            # its files replace the documents of the same name
    python ingest.py docs/ --progress-json                      # one JSON object per line, for programs

One line per file (added / updated / unchanged / skipped: reason) and a summary; exit 0 unless nothing could be
ingested (or another ingest holds the KB's writer lock). On a terminal, a progress bar (tqdm) shows n/N files, the
percentage and the time left, and a page counter inside a long PDF. `--progress-json` replaces all of that with JSON
lines (`waiting` if another ingest holds the KB, `started`, `file_started`, `pages`, `file_done`, `finishing`, then
`summary` or `error`): what the library page
of the web app reads from the child process it runs this in. The work is done by `clincite.ingest.pipeline.Ingestor`.
`--prune` refuses when a folder given is missing or when it would remove more than INGEST_PRUNE_MAX_FRACTION of the
documents (an unmounted share looks like deleted files) unless `--force`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from tqdm import tqdm

from clincite.core.logs import quiet_libraries
from clincite.core.settings import get_settings
from clincite.core.untrusted import printable
from clincite.ingest.pipeline import Ingestor, IngestReport, format_result, format_summary
from clincite.ingest.progress import IngestProgress
from clincite.kb.store import IngestBusy, KnowledgeBase

FILES_BAR = "{desc}{n_fmt}/{total_fmt} 个文件 {percentage:3.0f}%|{bar}| 已用 {elapsed}，剩余约 {remaining}"
PAGES_BAR = "  {desc}第 {n_fmt}/{total_fmt} 页 |{bar}|"
FINISHING = {"vectors": "补建向量", "index": "发布检索索引"}
DEFAULT_WIDTH, DEFAULT_HEIGHT = 100, 24


class TerminalProgress(IngestProgress):
    """Bars on standard error (tqdm; off when it is not a terminal), the per-file lines on standard output."""

    def __init__(self, stream=None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.disable = None if enabled is None else not enabled  # None: tqdm shows bars on a terminal only
        # A terminal that does not report its size (0 columns: some containers, serial consoles) still gets bars.
        size = shutil.get_terminal_size((DEFAULT_WIDTH, DEFAULT_HEIGHT))
        self.width, self.height = size.columns or DEFAULT_WIDTH, size.lines or DEFAULT_HEIGHT
        self.files: tqdm | None = None
        self.page_bar: tqdm | None = None
        self.current = ""

    def waiting(self) -> None:
        print("另一个导入正在写入这个知识库，等它结束后开始……", file=self.stream, flush=True)

    def started(self, total_files: int) -> None:
        self.files = tqdm(
            total=total_files,
            desc="导入 ",
            bar_format=FILES_BAR,
            file=self.stream,
            disable=self.disable,
            leave=True,
            ncols=self.width,
            nrows=self.height,
        )

    def file_started(self, index: int, name: str) -> None:
        self.current = name
        if self.files is not None:
            self.files.set_description_str(f"导入 {_short(name)} ")

    def pages(self, done: int, total: int) -> None:
        if self.page_bar is None:
            self.page_bar = tqdm(
                total=total,
                desc=f"《{_short(self.current)}》",
                bar_format=PAGES_BAR,
                file=self.stream,
                disable=self.disable,
                leave=False,
                position=1,
                ncols=self.width,
                nrows=self.height,
            )
        self.page_bar.n = done
        self.page_bar.refresh()

    def file_done(self, index: int, name: str, status: str, detail: str, chunks: int) -> None:
        self._close_pages()
        if self.files is not None:
            self.files.update(1)

    def finishing(self, step: str) -> None:
        if self.files is not None:
            self.files.set_description_str(f"{FINISHING.get(step, step)} ")

    def line(self, text: str) -> None:
        """A result line on standard output that does not tear the bars."""
        tqdm.write(text, file=sys.stdout)
        sys.stdout.flush()

    def close(self) -> None:
        self._close_pages()
        if self.files is not None:
            self.files.set_description_str("导入 ")
            self.files.close()

    def _close_pages(self) -> None:
        if self.page_bar is not None:
            self.page_bar.close()
            self.page_bar = None


class JsonProgress(IngestProgress):
    """One JSON object per line on standard output, flushed at once (a parent process reads them as they come)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.index = 0

    def emit(self, event: str, **fields) -> None:
        self.stream.write(json.dumps({"event": event, **fields}, ensure_ascii=False) + "\n")
        self.stream.flush()

    def waiting(self) -> None:
        self.emit("waiting")

    def started(self, total_files: int) -> None:
        self.emit("started", total=total_files)

    def file_started(self, index: int, name: str) -> None:
        self.index = index
        self.emit("file_started", index=index, name=name)

    def pages(self, done: int, total: int) -> None:
        self.emit("pages", index=self.index, done=done, total=total)

    def file_done(self, index: int, name: str, status: str, detail: str, chunks: int) -> None:
        self.emit("file_done", index=index, name=name, status=status, detail=detail, chunks=chunks)

    def finishing(self, step: str) -> None:
        self.emit("finishing", step=step)

    def summary(self, report: IngestReport) -> None:
        counts = {status: report.count(status) for status in ("added", "updated", "unchanged", "skipped", "removed")}
        self.emit(
            "summary",
            **counts,
            vectors_added=report.vectors_added,
            kb_version=report.kb_version,
            embedding_warning=report.embedding_warning,
            prune_refused=report.prune_refused,
            text=format_summary(report),
        )


def _short(name: str, limit: int = 30) -> str:
    return name if len(name) <= limit else "…" + name[-(limit - 1) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="把文档导入 ClinCite 知识库 (ingest documents into a knowledge base)")
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (md, txt, pdf, docx, html)")
    parser.add_argument("--kb", type=Path, default=None, help="knowledge-base directory (default: KB_DIR)")
    parser.add_argument("--prune", action="store_true", help="remove documents whose files are gone")
    parser.add_argument("--force", action="store_true", help="let --prune remove more than the safety limit")
    parser.add_argument("--dry-run", action="store_true", help="with --prune: list removals, remove nothing")
    parser.add_argument(
        "--remove", action="append", default=[], metavar="SOURCE", help="remove this document (repeatable)"
    )
    parser.add_argument("--replace", action="store_true", help="the files given replace the documents of the same name")
    parser.add_argument("--progress-json", action="store_true", help="JSON lines on stdout instead of text")
    args = parser.parse_args(argv)
    if not args.paths and not args.remove:
        parser.error("给出要导入的文件或文件夹，或用 --remove 指定要删除的文档")
    quiet_libraries()

    settings = get_settings()
    kb = KnowledgeBase(settings, args.kb)
    progress = JsonProgress() if args.progress_json else TerminalProgress()
    on_result = None if args.progress_json else (lambda r: progress.line(format_result(r)))
    try:
        report = Ingestor(settings, kb).run(
            args.paths,
            prune=args.prune,
            force=args.force,
            dry_run=args.dry_run,
            on_result=on_result,
            progress=progress,
            remove=args.remove,
            take_over=args.replace,
        )
    except IngestBusy as exc:
        if isinstance(progress, JsonProgress):
            progress.emit("error", message=str(exc), busy=True)
        else:
            progress.close()
            print(str(exc), file=sys.stderr)
        kb.close()
        return 1
    if isinstance(progress, JsonProgress):
        progress.summary(report)
    else:
        progress.close()
        if report.prune_refused:
            print(printable(report.prune_refused), file=sys.stderr)
        if report.embedding_warning:
            print(f"警告：{report.embedding_warning}", file=sys.stderr)
        print(format_summary(report))
    kb.close()
    return 1 if report.failed_all else 0


if __name__ == "__main__":
    sys.exit(main())
