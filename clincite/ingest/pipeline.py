"""Incremental ingest: brings a knowledge base up to date with a set of files. The only writer of a KB.

One ingest at a time per KB (`KnowledgeBase.writer_lock`); the app only reads what ingest publishes. Unchanged files
(same content hash) cost nothing; a changed file's new chunks are written before its old ones are removed, so a crash
never leaves it with no chunks; the BM25 index is published last, after the vectors are in place.

Nothing a file can do harms the KB or stops the run: every file is either ingested or skipped with its reason —
names that are not UTF-8, FIFOs, devices, symlinks out of the folders given, files over the size limits, zip bombs
disguised as .docx, documents that would need too many chunks, files rewritten while being read (the bytes hashed are
the bytes parsed: a private snapshot), a second file claiming an existing document's identity, identical copies.
A document's identity (`source`) is its path relative to the folder it was found in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from clincite.core.settings import Settings
from clincite.core.shapes import Chunk, DocumentRecord
from clincite.core.untrusted import clean_input, printable
from clincite.ingest.budget import ParseWorker
from clincite.ingest.chunking import chunk_document
from clincite.ingest.intake import (
    Candidate,
    check_content,
    check_text_size,
    collect_files,
    display_name,
    read_regular_file,
    require_unchanged,
    symlink_reason,
)
from clincite.ingest.loaders import SkipFile
from clincite.ingest.progress import IngestProgress, pages_to
from clincite.kb.bm25 import BM25Index
from clincite.kb.embeddings import Embedder, get_embedder
from clincite.kb.originals import digest_of
from clincite.kb.store import IngestBusy, KnowledgeBase, now
from clincite.text.tokenizer import get_tokenizer

log = logging.getLogger("clincite.ingest.pipeline")

VECTOR_BATCH = 64  # small Chroma writes: each add() holds the GIL for its whole duration
# How files are read into text and passages. Bump it when a loader or the chunker reads an unchanged file
# differently (2: <br/> lines of web pages as paragraphs, Markdown structure, list and table units; 3: PDF pages
# whose positional reading is garbled read in drawing order, PDFs pdfminer finds no pages in repaired by pypdf; 4: PDF
# running headers and footers dropped from pages read in drawing order and where a two-column crop cuts them, margins
# measured on the crop box; 5: a web page without <title> titled by the question it opens with; 6: PDF three-line
# tables read as rows with their captions; 7: a hard-wrapped text's margin read from its Chinese lines, a line of
# bare closing punctuation joined to the one before; 8: an empty Nikola field no longer takes the next line as its
# value, so `.. tags:` is not ".. category:"; short label lines each over a paragraph, three or more, are one list a
# chunk keeps whole; 9: a heading that heads nothing and reads as a sentence (an outline export's every line) is a
# line of its section's text; 10: a plain text's short first line that is no sentence heads the text; 11: a PDF's
# metadata title that names something else — a template's, a link, a list item — is not the document's title; 12: a
# plain text that is a key-value file, "service_cataract_text1: 白內障是…", reads as its values; 13: a JSON record
# titled by a key ending in name/title/名称 (chinese_name), its nested parts' repeats of a line written once; 14: every
# heading that heads nothing is a line of its parent's text, sentence or not, and after another such heading too —
# before, a run of them lost its text from every passage; 15: a question bank's item (question, options, answer,
# explanation) reads as an exam paper prints it, and a cell's written-out line breaks ("A 角膜\\nB 巩膜") break; 16: a
# chat record or an instruction-tuning pair reads as its question, a heading, over its answer; 17: a text of labelled
# fields — a drug monograph's "适应证:…", as a file or a record's one string — heads each field by its label; 18: in a
# Markdown outline — study notes, a mind map — a list item that is a label heads its sub-items as a heading would,
# and a comparison grid with an empty corner cell labels each row; 19: a Markdown file's inline TeX of figures and
# units, as PDF-to-Markdown converters write a paper ("$ 2 6 . 9 \\% $"), reads plainly: 26.9%; 20: a plain text
# of questions and answers, each question on its own line (an FAQ, an encyclopedia's patient entries), heads each
# answer by its question and a section by its bare label ("治疗:"); 21: a re-posted page's pinyin notes inside its
# words ("時(shí)間") are taken out, and the paragraphs after an opening sentence that lists their topics in turn are
# headed by them; 22: a drug's package insert as drug sites show it reads as one section per field under its label
# and the drug's name, and a labelled field's value on the line under its label is kept; 23: an encyclopedia
# entry's wiki-numbered section lines ("3 概述", "4.1 …") head their sections; 24: a handout's short lines each over
# a bulleted list head their lists, and a page's chrome line yields to one below naming its subject more fully; 25: a
# first line of figures alone — an interview's clock "17:07", a date — heads nothing, and a breadcrumb trail first
# ("首页 > 资讯 > …") yields to the line below it naming the page's subject; 26: a forum's anti-copy noise and a
# page's hidden inline words are not read; 27: a post's title heads it below a breadcrumb trail; 28: a
# document-sharing site's slide text, its paragraph marks read as "Р" and its bullets as a lone "?", breaks its
# lines again; 29: a plain text's table row, its cells' bars kept, ends at its last bar; 30: a paper's dotted section
# numbers ("2.1 体位的护理") head their sections however few top-level ones a cut text keeps; 31: a glossary's numbered
# terms alone on their lines ("7.远视:") head their definitions; 32: a byline first ("作者 / 張中維藥師") heads
# nothing; 33: a post's numbered points ("1. 不要迷信网红眼药水！"), each over paragraphs of its own, head them, and a
# web page's inline script call ("showPlayer({…});") is not read): the next ingest of an
# existing KB reads every file again, so an upgrade's better reading reaches the documents.
READER_VERSION = 33
READER_KEY = "reader_version"

Status = Literal["added", "updated", "unchanged", "skipped", "removed", "would-remove"]


@dataclass
class FileResult:
    name: str
    status: Status
    detail: str = ""
    chunks: int = 0


@dataclass
class IngestReport:
    results: list[FileResult] = field(default_factory=list)
    vectors_added: int = 0
    embedding_warning: str | None = None
    prune_refused: str | None = None  # why --prune removed nothing (Chinese)
    kb_version: int = 0
    reread: bool = False  # unchanged files were read again: the KB was read by an older ClinCite

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def failed_all(self) -> bool:
        """Nothing usable came out of this run (every file was skipped)."""
        return bool(self.results) and all(r.status == "skipped" for r in self.results)


class Ingestor:
    """Brings a KB up to date with a set of files."""

    def __init__(self, settings: Settings, kb: KnowledgeBase, embedder: Embedder | None = None):
        self.settings = settings
        self.kb = kb
        self.embedder = embedder or get_embedder(settings)
        self.vectors_added = 0
        self.vector_error: str | None = None  # the vector store failed during this run (English, for the log)
        self._reread = False  # this run reads unchanged files again (the KB was read by an older reader)
        self.parser: ParseWorker | None = None  # the child process that parses files during a run

    def run(
        self,
        paths: list[Path],
        prune: bool = False,
        on_result=None,
        force: bool = False,
        dry_run: bool = False,
        progress: IngestProgress | None = None,
        remove: list[str] | None = None,
        take_over: bool = False,
    ) -> IngestReport:
        """Ingest `paths` under the KB's writer lock (raises IngestBusy when another ingest holds it).

        `remove`: documents (by source) to take out of the KB, their passages and vectors with them. `take_over`: the
        files of this run replace the documents of the same name even when those came from other files (the library
        page's "replace"; without it such a file is skipped, since two files would share one name).
        """
        progress = progress or IngestProgress()
        try:
            lock = self.kb.writer_lock(0)
        except IngestBusy:  # another ingest is writing: say so, then wait for it (up to INGEST_LOCK_TIMEOUT)
            progress.waiting()
            lock = self.kb.writer_lock(self.settings.ingest_lock_timeout)
        try:
            with ParseWorker(self.settings.ingest_file_timeout, self.settings.ingest_file_memory_mb) as parser:
                self.parser = parser
                return self._run(
                    paths,
                    prune,
                    on_result or (lambda result: None),
                    force,
                    dry_run,
                    progress,
                    list(remove or []),
                    take_over,
                )
        finally:
            self.parser = None
            lock.release()

    def _run(
        self,
        paths: list[Path],
        prune: bool,
        emit,
        force: bool,
        dry_run: bool,
        progress: IngestProgress,
        remove: list[str],
        take_over: bool,
    ) -> IngestReport:
        report = IngestReport()
        known = self.kb.catalogue.documents()
        # Files read by an older ClinCite are read again, though unchanged: a better reader is an upgrade's point.
        self._reread = bool(known) and self.kb.catalogue.meta(READER_KEY) != str(READER_VERSION)
        if not known:  # a new KB: every file it will hold is read by this reader (even if this run is cut short)
            self._mark_read()
        roots = [p.resolve() for p in paths if p.is_dir()]
        seen: dict[str, Path] = {}
        changed = False
        candidates = collect_files(paths)
        progress.started(len(candidates) + len(remove))

        def done(index: int, result: FileResult) -> None:
            report.results.append(result)
            emit(result)
            progress.file_done(index, result.name, result.status, result.detail, result.chunks)

        for index, candidate in enumerate(candidates, 1):
            progress.file_started(index, display_name(candidate.source))
            try:
                with pages_to(progress.pages):
                    result = self._ingest_file(candidate, known, seen, roots, take_over)
            except Exception as exc:  # whatever a file does, the run goes on
                log.exception("Unexpected error ingesting %s", printable(display_name(str(candidate.path))))
                result = FileResult(
                    display_name(candidate.source),
                    "skipped",
                    f"导入时出错，已跳过 ({type(exc).__name__}: {display_name(str(exc))})",
                )
            changed |= result.status in ("added", "updated")
            if result.status == "skipped" and _worth_listing(candidate):
                self.kb.catalogue.record_skip(result.name, result.detail, now())
            done(index, result)
        for index, source in enumerate(remove, len(candidates) + 1):
            progress.file_started(index, source)
            result = self._remove(source, known)
            changed |= result.status == "removed"
            done(index, result)
        if prune:
            changed |= self._prune(paths, known, seen, force, dry_run, report, emit)
        if self._reread and set(known) <= set(seen):  # every document in the KB is now read this way
            self._mark_read()
        progress.finishing("vectors")
        self._sync_vectors()
        progress.finishing("index")
        self._ensure_bm25(force=changed)  # last: publishing the index tells readers the new version is complete
        if not dry_run:  # originals no document refers to any more (pruned, replaced by a new version)
            self.kb.originals.keep_only({record.file_hash for record in self.kb.catalogue.documents().values()})
        report.vectors_added = self.vectors_added
        report.embedding_warning = str(self.embedder.error) if self.embedder.error else None
        if self.vector_error:
            report.embedding_warning = (
                f"向量库不可用（{self.vector_error}），本次文档只进入了关键词索引；"
                f"向量库恢复后再运行一次 ingest 即可补建向量。"
            )
        report.kb_version = self.kb.catalogue.version
        report.reread = self._reread
        return report

    def _remove(self, source: str, known: dict[str, DocumentRecord]) -> FileResult:
        """Take one document out of the KB: its passages (catalogue), then its vectors."""
        if source not in known:
            return FileResult(source, "skipped", "知识库中没有这个文档，未删除 (no such document)")
        ids = self.kb.catalogue.chunk_ids(source)
        self.kb.catalogue.remove_document(source)  # the commit point: search no longer returns its passages
        self._remove_vectors(ids)
        del known[source]
        return FileResult(source, "removed", "已从知识库删除（片段与向量一并删除）")

    def _prune(
        self,
        paths: list[Path],
        known: dict[str, DocumentRecord],
        seen: dict[str, Path],
        force: bool,
        dry_run: bool,
        report: IngestReport,
        emit,
    ) -> bool:
        """Remove documents whose files are gone — unless that looks like a missing share rather than deletions."""
        gone = [source for source, record in known.items() if source not in seen and not Path(record.path).exists()]
        missing_roots = [display_name(str(p)) for p in paths if not p.exists()]
        limit = self.settings.ingest_prune_max_fraction
        if missing_roots:
            report.prune_refused = (
                f"拒绝删除：所给路径不存在（{'、'.join(missing_roots)}），可能是共享盘未挂载；"
                f"{len(gone)} 个文档保持不变"
            )
        elif gone and len(gone) > limit * len(known) and not force:
            report.prune_refused = (
                f"拒绝删除：将删除 {len(gone)}/{len(known)} 个文档，超过 {limit:.0%}"
                f"（INGEST_PRUNE_MAX_FRACTION），可能是文件夹未挂载或路径有误；"
                f"确认无误请加 --force"
            )
        if report.prune_refused:
            log.warning("Prune refused: %s", printable(report.prune_refused))
            return False
        for source in gone:
            if dry_run:
                result = FileResult(source, "would-remove", "文件已不存在（试运行，未删除）")
            else:
                self._remove_vectors(self.kb.catalogue.chunk_ids(source))
                self.kb.catalogue.remove_document(source)
                result = FileResult(source, "removed", "文件已不存在，已从知识库删除")
            report.results.append(result)
            emit(result)
        return bool(gone) and not dry_run

    def _ingest_file(
        self,
        candidate: Candidate,
        known: dict[str, DocumentRecord],
        seen: dict[str, Path],
        roots: list[Path],
        take_over: bool = False,
    ) -> FileResult:
        path, source = candidate.path, candidate.source
        shown = display_name(source)
        if candidate.problem:
            return FileResult(shown, "skipped", candidate.problem)
        if shown != source:
            return FileResult(
                shown, "skipped", "文件名不是有效的 UTF-8 编码，无法作为引用名称，请重命名 (invalid file name)"
            )
        if clean_input(source) != source:  # an escape sequence, a carriage return, an RLO that makes "exe.md" of it
            return FileResult(
                printable(source),
                "skipped",
                "文件名含控制字符或双向文本控制符（会让名字显示成别的样子），无法作为引用名称，请重命名 "
                "(control or bidi characters in the file name)",
            )
        if candidate.root is not None and path.is_symlink():
            return FileResult(shown, "skipped", symlink_reason(path, roots))
        if source in seen:
            if seen[source].resolve() == path.resolve():
                return FileResult(shown, "skipped", "本次运行中已处理过（同一文件被重复给出） (given twice)")
            return FileResult(
                shown,
                "skipped",
                f"与 {display_name(str(seen[source]))} 同名：引用时无法区分，请重命名 (duplicate name)",
            )
        seen[source] = path
        previous = known.get(source)
        try:
            read = read_regular_file(path, self.settings)
            resolved = read.resolved
            digest = digest_of(read.data)
            if previous and previous.file_hash == digest and not self._reread:
                if not self.kb.originals.exists(digest):  # a KB from before originals were stored: store it now
                    self.kb.originals.put(read.data)
                return FileResult(shown, "unchanged", chunks=previous.chunk_count)
            if previous and previous.path != str(resolved) and Path(previous.path).exists() and not take_over:
                return FileResult(
                    shown,
                    "skipped",
                    f"知识库中已有同名文档（来自 {display_name(previous.path)}），"
                    f"两个不同文件不能共用一个名称：请重命名，或从各自所在的文件夹导入 "
                    f"(identity taken by another file)",
                )
            duplicate = self.kb.catalogue.source_with_hash(digest, other_than=source)
            if duplicate:
                return FileResult(
                    shown,
                    "skipped",
                    f"与已入库的《{duplicate}》内容完全相同，作为重复文件跳过 (duplicate of {duplicate})",
                )
            check_content(path.suffix.lower(), read.data, self.settings)
            # Exactly the bytes hashed are parsed, in a child process within the time and memory budget.
            document = self.parser.parse(Path(source).name, read.data)
            check_text_size(document.text, self.settings)
            cfg = self.settings
            chunks = chunk_document(
                document,
                source,
                cfg.chunk_min_chars,
                cfg.chunk_max_chars,
                cfg.ingest_max_heading_chars,
                cfg.ingest_max_chunks_per_document,
            )
            if not chunks:
                raise SkipFile("文件中没有正文文字 (no text)")
            require_unchanged(path, read)  # written to while we parsed: what we read may be a truncated state
            if self.kb.originals.put(read.data) != digest:  # what "打开原文" serves: these very bytes
                raise SkipFile("原文存档校验失败 (original store returned another digest)")
            del read
            old_ids = set(self.kb.catalogue.chunk_ids(source)) if previous else set()
            self._add_vectors([c for c in chunks if c.id not in old_ids])  # 1. new vectors
            record = DocumentRecord(
                source=source,
                path=str(resolved),
                title=document.title,
                file_hash=digest,
                chunk_count=len(chunks),
                ingested_at=now(),
                metadata=document.metadata,
            )
            self.kb.catalogue.replace_document(record, chunks)  # 2. commit point
            self._remove_vectors(sorted(old_ids - {c.id for c in chunks}))  # 3. old vectors
        except SkipFile as exc:
            return FileResult(shown, "skipped", str(exc))
        except OSError as exc:
            return FileResult(shown, "skipped", f"无法读取文件 ({type(exc).__name__}: {display_name(str(exc))})")
        note = _heading_note(document, cfg.ingest_max_heading_chars)
        return FileResult(shown, "updated" if previous else "added", note, chunks=len(chunks))

    def _mark_read(self) -> None:
        with self.kb.catalogue.transaction() as db:
            self.kb.catalogue.set_meta(db, READER_KEY, str(READER_VERSION))

    # --- indexes ---
    def _ensure_bm25(self, force: bool) -> None:
        """Publish a BM25 index of the catalogue unless the published one is already of this version."""
        tokenizer = get_tokenizer()
        version = self.kb.catalogue.version
        published = self.kb.published_bm25()
        if published is not None and published.get("tokenizer") != tokenizer.signature:
            log.info("The BM25 index was cut by another tokenizer (an upgrade): rebuilding it")
            version, force = self.kb.catalogue.new_version(), True  # a new version: running apps reload it
        if force or published is None or published.get("version") != version:
            self.kb.publish_bm25(BM25Index.build(self.kb.catalogue.iter_chunks(), tokenizer, version))

    # The vector store may be unreachable (a Chroma server that is down): the catalogue and BM25 still get every
    # document, the run says so, and the next run's _sync_vectors adds the missing vectors and drops stale ones.
    def _vector_store_failed(self, exc: Exception) -> None:
        if self.vector_error is None:
            log.error(
                "Vector store unavailable during ingest (%s: %s): documents go in BM25-only", type(exc).__name__, exc
            )
        self.vector_error = f"{type(exc).__name__}: {exc}"

    def _add_vectors(self, chunks: list[Chunk]) -> int:
        if not chunks or self.vector_error is not None or not self.embedder.available():
            return 0
        try:
            store = self.kb.vectors(self.embedder.model_name)
            existing = store.existing_ids([c.id for c in chunks])
            todo = [c for c in chunks if c.id not in existing]
            for start in range(0, len(todo), VECTOR_BATCH):
                batch = todo[start : start + VECTOR_BATCH]
                vectors = self.embedder.encode_documents([c.index_text for c in batch])
                store.add([c.id for c in batch], vectors.tolist(), [c.source for c in batch])
                self.vectors_added += len(batch)
        except Exception as exc:
            self._vector_store_failed(exc)
            return 0
        return len(todo)

    def _remove_vectors(self, ids: list[str]) -> None:
        if ids and self.vector_error is None:
            try:
                self.kb.vectors(self.embedder.model_name).delete(ids)
            except Exception as exc:  # left behind: search ignores ids not in the catalogue
                self._vector_store_failed(exc)

    def _sync_vectors(self) -> int:
        """Embed catalogue chunks that have no vector yet (a new embedding model, or an earlier BM25-only run).

        Comparing ids needs no model, so an unchanged KB never pays the model's load time.
        """
        if self.vector_error is not None:
            return 0
        try:
            store = self.kb.vectors(self.embedder.model_name)
            ids = self.kb.catalogue.chunk_ids()
            stored = store.all_ids()
            stale = sorted(stored - set(ids))  # vectors of chunks replaced by a run that crashed midway
            if stale:
                store.delete(stale)
        except Exception as exc:
            self._vector_store_failed(exc)
            return 0
        missing = [cid for cid in ids if cid not in stored]
        if not missing:
            return 0
        return self._add_vectors(list(self.kb.catalogue.get_chunks(missing).values()))


def _worth_listing(candidate: Candidate) -> bool:
    """A skipped file the library page lists (hidden files and Office lock files are skipped silently)."""
    return not Path(candidate.source.rstrip("/")).name.startswith((".", "~$"))


def _heading_note(document, limit: int) -> str:
    long = sum(1 for s in document.sections if any(len(h) > limit for h in s.heading_path))
    return f"有 {long} 节的标题超过 {limit} 字，已截断（过长的标题行按正文索引）" if long else ""


def format_result(result: FileResult) -> str:
    """One line for the terminal: nothing from a file name (or a reason quoting one) can act on the terminal."""
    name, detail = printable(result.name), printable(result.detail)
    if result.status in ("skipped", "removed", "would-remove"):
        return f"{result.status:<10} {name}: {detail}"
    note = f"；{detail}" if detail else ""
    return f"{result.status:<10} {name} ({result.chunks} 个片段{note})"


def format_summary(report: IngestReport) -> str:
    return (
        f"完成：新增 {report.count('added')}，更新 {report.count('updated')}，未变 {report.count('unchanged')}，"
        f"跳过 {report.count('skipped')}，删除 {report.count('removed')}；新向量 {report.vectors_added} 个；"
        f"知识库版本 {report.kb_version}"
        + ("（本版本改进了文档读取方式，已按新方式重新读取原有文档）" if report.reread else "")
    )
