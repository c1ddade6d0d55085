"""Incremental ingest: brings a knowledge base up to date with a set of files.

Unchanged files (same content hash) cost nothing; a changed file's new chunks are written before its old ones are
removed, so a crash never leaves it with no chunks; a bad file is skipped with its reason and the rest goes on.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from clincite.bm25 import BM25Index
from clincite.chunking import chunk_document
from clincite.embeddings import Embedder, get_embedder
from clincite.kb import KnowledgeBase, now
from clincite.loaders import SkipFile, load_document
from clincite.settings import Settings
from clincite.shapes import Chunk, DocumentRecord
from clincite.tokenizer import get_tokenizer

log = logging.getLogger("clincite.ingest")

VECTOR_BATCH = 64  # small Chroma writes: each add() holds the GIL for its whole duration

Status = Literal["added", "updated", "unchanged", "skipped", "removed"]


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
    kb_version: int = 0

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def failed_all(self) -> bool:
        """Nothing usable came out of this run (every file was skipped)."""
        return bool(self.results) and all(r.status == "skipped" for r in self.results)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def collect_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path))))
        else:
            files.append(path)
    return files


def _hidden(relative: Path) -> bool:
    return any(part.startswith((".", "~$")) for part in relative.parts)


class Ingestor:
    """Brings a KB up to date with a set of files."""

    def __init__(self, settings: Settings, kb: KnowledgeBase, embedder: Embedder | None = None):
        self.settings = settings
        self.kb = kb
        self.embedder = embedder or get_embedder(settings)
        self.vectors_added = 0

    def run(self, paths: list[Path], prune: bool = False, on_result=None) -> IngestReport:
        report = IngestReport()
        emit = on_result or (lambda result: None)
        known = self.kb.catalogue.documents()
        seen: dict[str, Path] = {}
        changed = False
        for path in collect_files(paths):
            result = self._ingest_file(path, known, seen)
            changed |= result.status in ("added", "updated")
            report.results.append(result)
            emit(result)
        if prune:
            for source, record in known.items():
                if source not in seen and not Path(record.path).exists():
                    self._remove_vectors(self.kb.catalogue.chunk_ids(source))
                    self.kb.catalogue.remove_document(source)
                    changed = True
                    result = FileResult(source, "removed", "文件已不存在，已从知识库删除")
                    report.results.append(result)
                    emit(result)
        self._ensure_bm25(force=changed)
        self._sync_vectors()
        report.vectors_added = self.vectors_added
        report.embedding_warning = str(self.embedder.error) if self.embedder.error else None
        report.kb_version = self.kb.catalogue.version
        return report

    def _ingest_file(self, path: Path, known: dict[str, DocumentRecord], seen: dict[str, Path]) -> FileResult:
        source = path.name
        if not path.exists():
            return FileResult(source, "skipped", "文件不存在 (not found)")
        if source in seen and seen[source].resolve() != path.resolve():
            return FileResult(source, "skipped", f"与 {seen[source]} 同名：引用时无法区分，请重命名 (duplicate name)")
        seen[source] = path
        try:
            digest = file_hash(path)
            previous = known.get(source)
            if previous and previous.file_hash == digest:
                return FileResult(source, "unchanged", chunks=previous.chunk_count)
            document = load_document(path)
            chunks = chunk_document(document, source, self.settings.chunk_min_chars, self.settings.chunk_max_chars)
            if not chunks:
                raise SkipFile("文件中没有正文文字 (no text)")
            old_ids = set(self.kb.catalogue.chunk_ids(source)) if previous else set()
            self._add_vectors([c for c in chunks if c.id not in old_ids])  # 1. new vectors
            record = DocumentRecord(source=source, path=str(path.resolve()), title=document.title,
                                    file_hash=digest, chunk_count=len(chunks), ingested_at=now())
            self.kb.catalogue.replace_document(record, chunks)                # 2. commit point
            self._remove_vectors(sorted(old_ids - {c.id for c in chunks}))    # 3. old vectors
        except SkipFile as exc:
            return FileResult(source, "skipped", str(exc))
        except OSError as exc:
            return FileResult(source, "skipped", f"无法读取文件 ({type(exc).__name__}: {exc})")
        return FileResult(source, "updated" if previous else "added", chunks=len(chunks))

    # --- indexes ---
    def _ensure_bm25(self, force: bool) -> None:
        version = self.kb.catalogue.version
        current = None if force else BM25Index.load(self.kb.bm25_dir)
        if current is None or current.version != version:
            BM25Index.build(self.kb.catalogue.all_chunks(), get_tokenizer(), version).save(self.kb.bm25_dir)

    def _add_vectors(self, chunks: list[Chunk]) -> int:
        if not chunks or not self.embedder.available():
            return 0
        store = self.kb.vectors(self.embedder.model_name)
        existing = store.existing_ids([c.id for c in chunks])
        todo = [c for c in chunks if c.id not in existing]
        for start in range(0, len(todo), VECTOR_BATCH):
            batch = todo[start:start + VECTOR_BATCH]
            vectors = self.embedder.encode_documents([c.index_text for c in batch])
            store.add([c.id for c in batch], vectors.tolist(), [c.source for c in batch])
        self.vectors_added += len(todo)
        return len(todo)

    def _remove_vectors(self, ids: list[str]) -> None:
        if ids:
            self.kb.vectors(self.embedder.model_name).delete(ids)

    def _sync_vectors(self) -> int:
        """Embed catalogue chunks that have no vector yet (a new embedding model, or an earlier BM25-only run).

        Comparing ids needs no model, so an unchanged KB never pays the model's load time.
        """
        store = self.kb.vectors(self.embedder.model_name)
        ids = self.kb.catalogue.chunk_ids()
        stored = store.all_ids()
        stale = sorted(stored - set(ids))  # vectors of chunks replaced by a run that crashed midway
        if stale:
            store.delete(stale)
        missing = [cid for cid in ids if cid not in stored]
        if not missing:
            return 0
        return self._add_vectors(list(self.kb.catalogue.get_chunks(missing).values()))


def format_result(result: FileResult) -> str:
    if result.status == "skipped":
        return f"skipped    {result.name}: {result.detail}"
    if result.status == "removed":
        return f"removed    {result.name}: {result.detail}"
    return f"{result.status:<10} {result.name} ({result.chunks} 个片段)"


def format_summary(report: IngestReport) -> str:
    return (
        f"完成：新增 {report.count('added')}，更新 {report.count('updated')}，未变 {report.count('unchanged')}，"
        f"跳过 {report.count('skipped')}，删除 {report.count('removed')}；新向量 {report.vectors_added} 个；"
        f"知识库版本 {report.kb_version}"
    )


