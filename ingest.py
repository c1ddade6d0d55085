"""Ingest documents into a ClinCite knowledge base.

    python ingest.py sample_kb/                  # Markdown, text, PDF, DOCX, HTML; folders are walked
    python ingest.py ~/guidelines --kb ./kb --prune

One line per file (added / updated / unchanged / skipped: reason) and a summary. Unchanged files (same content hash)
cost nothing; a changed file's new chunks are written before its old ones are removed, so a crash never leaves it with
no chunks; a bad file is skipped with its reason and the rest of the run goes on.
"""

from __future__ import annotations

import argparse
import hashlib
import html.parser
import logging
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kb import Chunk, DocumentRecord, KnowledgeBase, chunk_id, content_hash, now
from search import BM25Index, Embedder, get_embedder, get_tokenizer, quiet_libraries
from settings import Settings, get_settings

log = logging.getLogger("clincite.ingest")

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text"}
HTML_SUFFIXES = {".html", ".htm"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf", ".docx"}
SENTENCE_END = "。！？；!?;"
CLAUSE_END = "，、,：:"
VECTOR_BATCH = 64  # small Chroma writes: each add() holds the GIL for its whole duration

Status = Literal["added", "updated", "unchanged", "skipped", "removed"]


class SkipFile(Exception):
    """A file that cannot be ingested; the message (Chinese) is what the user sees."""


# ---------------------------------------------------------------------------------------------------------------
# Loading: every format becomes text + sections with character offsets into that text
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Section:
    heading_path: list[str]
    start: int  # body offsets in LoadedDocument.text
    end: int
    heading_start: int | None = None  # where the section's own heading line starts (None: no heading)


@dataclass
class LoadedDocument:
    title: str
    text: str
    sections: list[Section]


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM), then GB18030 — the two encodings Chinese clinics' files come in."""
    if b"\x00" in data[:8192]:
        raise SkipFile("看起来是二进制文件，不是文本 (binary content)")
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise SkipFile("无法解码：既不是 UTF-8 也不是 GB18030 编码 (undecodable text)")


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def parse_markdown(text: str, fallback_title: str) -> LoadedDocument:
    """Sections at headings; the first level-1 heading is the title."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    title = None
    body_start = 0
    heading_start: int | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        match = _MD_HEADING.match(line.rstrip("\r\n"))
        if match:
            sections.append(Section([h for _, h in path], body_start, offset, heading_start))
            level, heading = len(match.group(1)), match.group(2).strip()
            if level == 1 and title is None:
                title = heading
                path = []
                heading_start = None
            else:
                path = [(lv, h) for lv, h in path if lv < level] + [(level, heading)]
                heading_start = offset
            body_start = offset + len(line)
        offset += len(line)
    sections.append(Section([h for _, h in path], body_start, len(text), heading_start))
    return LoadedDocument(title or fallback_title, text, [s for s in sections if text[s.start:s.end].strip()])


def plain_document(text: str, title: str) -> LoadedDocument:
    return LoadedDocument(title, text, [Section([], 0, len(text))] if text.strip() else [])


def load_pdf(path: Path) -> LoadedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("PDF 已加密，需要密码才能读取 (encrypted PDF)")
        pages = [page.extract_text() or "" for page in reader.pages]
    except SkipFile:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, NotImplementedError) as exc:
        raise SkipFile(f"PDF 文件损坏或无法解析 ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # pypdf raises many private error types on broken files
        raise SkipFile(f"PDF 文件损坏或无法解析 ({type(exc).__name__}: {exc})") from exc
    text = "\n\n".join(p.strip() for p in pages)
    if not text.strip():
        raise SkipFile("PDF 中没有可提取的文字（可能是扫描件，需要先做 OCR） (no text layer)")
    return plain_document(text, path.stem)


def load_docx(path: Path) -> LoadedDocument:
    import zipfile

    import docx

    try:
        document = docx.Document(str(path))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise SkipFile(f"DOCX 文件损坏或不是 Word 文档 ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:
        raise SkipFile(f"DOCX 文件无法打开 ({type(exc).__name__}: {exc})") from exc
    lines = []
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        level = _docx_heading_level(paragraph.style.name if paragraph.style is not None else "")
        lines.append(f"{'#' * level} {text}" if level else text)
    return parse_markdown("\n\n".join(lines), path.stem)


def _docx_heading_level(style_name: str) -> int:
    match = re.match(r"(?:heading|标题)\s*(\d)", style_name.strip().lower())
    if match:
        return int(match.group(1))
    return 1 if style_name.strip().lower() in ("title", "标题") else 0


class _HtmlToMarkdown(html.parser.HTMLParser):
    BLOCKS = {"p", "div", "li", "br", "tr", "section", "article", "table", "ul", "ol"}
    SKIP = {"script", "style", "head", "nav", "footer"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif re.fullmatch(r"h[1-6]", tag) or tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def load_html(path: Path) -> LoadedDocument:
    parser = _HtmlToMarkdown()
    parser.feed(decode_text(path.read_bytes()))
    text = re.sub(r"\n{3,}", "\n\n", "".join(parser.parts)).strip()
    text = "\n".join(line.strip() for line in text.splitlines())
    return parse_markdown(text, path.stem)


def load_document(path: Path) -> LoadedDocument:
    """Read one file into text and sections; raises SkipFile with a reason for anything unusable."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise SkipFile(f"不支持的文件类型 “{suffix or '无扩展名'}”（支持 md、txt、pdf、docx、html）")
    if path.stat().st_size == 0:
        raise SkipFile("文件为空 (empty file)")
    if suffix == ".pdf":
        document = load_pdf(path)
    elif suffix == ".docx":
        document = load_docx(path)
    elif suffix in HTML_SUFFIXES:
        document = load_html(path)
    else:
        text = decode_text(path.read_bytes())
        document = parse_markdown(text, path.stem) if suffix in (".md", ".markdown") else plain_document(text, path.stem)
    if not any(document.text[s.start:s.end].strip() for s in document.sections):
        raise SkipFile("文件中没有正文文字 (no text)")
    return document


# ---------------------------------------------------------------------------------------------------------------
# Chunking
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Span:
    start: int
    end: int
    paragraph_end: bool = False  # the span closes a paragraph: a good place to end a chunk
    heading: bool = False  # a heading line: a chunk may start with it, never end with it
    section: int = 0
    path: tuple[str, ...] = ()


def split_sentences(text: str, start: int, end: int, max_chars: int) -> list[Span]:
    """Sentence spans (absolute offsets) of text[start:end]; whitespace-only gaps are left out."""
    spans: list[Span] = []
    for para_start, para_end in _paragraphs(text, start, end):
        sentence_start = para_start
        i = para_start
        while i < para_end:
            if text[i] in SENTENCE_END or text[i] == "\n":
                j = i + 1
                while j < para_end and text[j] in "”’」』）)\"'":  # closing quotes stay with their sentence
                    j += 1
                spans.extend(_cut_long(text, sentence_start, j, max_chars))
                sentence_start = i = j
                continue
            i += 1
        spans.extend(_cut_long(text, sentence_start, para_end, max_chars))
        if spans:
            spans[-1].paragraph_end = True
    return [s for s in spans if text[s.start:s.end].strip()]


def _paragraphs(text: str, start: int, end: int):
    for match in re.finditer(r"(?:[^\n]|\n(?!\s*\n))+", text[start:end]):
        raw = match.group(0)
        lead = len(raw) - len(raw.lstrip())
        trail = len(raw) - len(raw.rstrip())
        if raw.strip():
            yield start + match.start() + lead, start + match.end() - trail


def _cut_long(text: str, start: int, end: int, max_chars: int) -> list[Span]:
    """A sentence longer than the maximum is cut at clause marks, else hard: the only cuts inside a sentence."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start >= end:
        return []
    spans = []
    while end - start > max_chars:
        window = text[start:start + max_chars]
        cut = max(window.rfind(c) for c in CLAUSE_END)
        cut = start + cut + 1 if cut > max_chars // 3 else start + max_chars
        spans.append(Span(start, cut))
        start = cut
    spans.append(Span(start, end))
    return spans


def document_spans(document: LoadedDocument, max_chars: int) -> list[Span]:
    """Heading lines and sentences of the whole document, each tagged with its section and heading path."""
    spans: list[Span] = []
    for index, section in enumerate(document.sections):
        path = tuple(section.heading_path)
        if section.heading_start is not None:
            line_end = document.text.index("\n", section.heading_start) if "\n" in document.text[
                section.heading_start:section.start] else section.start
            spans.append(Span(section.heading_start, line_end, paragraph_end=True, heading=True,
                              section=index, path=path))
        for span in split_sentences(document.text, section.start, section.end, max_chars):
            span.section, span.path = index, path
            spans.append(span)
    return spans


def chunk_document(document: LoadedDocument, source: str, min_chars: int = 300, max_chars: int = 500) -> list[Chunk]:
    """Pack sentences into chunks of ~min..max characters with one sentence of overlap.

    A chunk ends at a paragraph end once it has min_chars. It crosses into the next subsection (taking that heading
    line along) only while it is still short and both lie under the same top-level heading.
    """
    spans = document_spans(document, max_chars)
    chunks: list[Chunk] = []
    occurrences: Counter[str] = Counter()
    for first, last in _pack(spans, min_chars, max_chars):
        start, end = spans[first].start, spans[last].end
        text = document.text[start:end]
        text_hash = content_hash(text)
        occurrences[text_hash] += 1
        chunks.append(Chunk(
            id=chunk_id(source, text_hash, occurrences[text_hash]), source=source, title=document.title,
            heading_path=list(_common_prefix([s.path for s in spans[first:last + 1]])), position=len(chunks),
            start=start, end=end, text=text, content_hash=text_hash,
        ))
    return chunks


def _can_join(spans: list[Span], first: int, nxt: int, min_chars: int, max_chars: int) -> bool:
    size = spans[nxt - 1].end - spans[first].start
    if spans[nxt].end - spans[first].start > max_chars:
        return False
    if spans[nxt].section == spans[first].section or spans[nxt].section == spans[nxt - 1].section:
        return size < min_chars or not spans[nxt - 1].paragraph_end
    same_top = bool(spans[first].path) and spans[nxt].path[:1] == spans[first].path[:1]
    return size < min_chars and same_top


def _pack(spans: list[Span], min_chars: int, max_chars: int) -> list[tuple[int, int]]:
    """Greedy packing → (first, last) span indexes per chunk."""
    groups: list[tuple[int, int]] = []
    first, n = 0, len(spans)
    while first < n:
        last = first
        while last + 1 < n and _can_join(spans, first, last + 1, min_chars, max_chars):
            last += 1
        while last > first and spans[last].heading:  # never end on a heading line
            last -= 1
        if spans[last].heading:  # a lone heading (empty section): nothing to index
            first = last + 1
            continue
        groups.append((first, last))
        if last + 1 >= n:
            break
        nxt = spans[last + 1]
        overlap_ok = (last > first and not spans[last].heading and not nxt.heading and nxt.section == spans[last].section
                      and (spans[last].end - spans[last].start) <= max_chars // 3)
        first = last if overlap_ok else last + 1
    return groups


def _common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    prefix = paths[0]
    for path in paths[1:]:
        i = 0
        while i < min(len(prefix), len(path)) and prefix[i] == path[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


# ---------------------------------------------------------------------------------------------------------------
# Incremental ingest
# ---------------------------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------------


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="把文档导入 ClinCite 知识库 (ingest documents into a knowledge base)")
    parser.add_argument("paths", nargs="+", type=Path, help="files or folders (md, txt, pdf, docx, html)")
    parser.add_argument("--kb", type=Path, default=None, help="knowledge-base directory (default: KB_DIR)")
    parser.add_argument("--prune", action="store_true", help="remove documents whose files are gone")
    args = parser.parse_args(argv)
    quiet_libraries()

    settings = get_settings()
    kb = KnowledgeBase(settings, args.kb)
    report = Ingestor(settings, kb).run(args.paths, prune=args.prune,
                                        on_result=lambda r: print(format_result(r), flush=True))
    if report.embedding_warning:
        print(f"警告：{report.embedding_warning}", file=sys.stderr)
    print(format_summary(report))
    kb.close()
    return 1 if report.failed_all else 0


if __name__ == "__main__":
    sys.exit(main())
