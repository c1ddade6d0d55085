"""Chinese chunking: sentences packed into ~300–500-character passages at headings and paragraph ends."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from clincite.core.shapes import Chunk
from clincite.ingest.loaders import LoadedDocument, SkipFile
from clincite.kb.store import chunk_id, content_hash

SENTENCE_END = "。！？；!?;"
CLAUSE_END = "，、,：:"


class TooManyChunks(SkipFile):
    """A document that would need more chunks than INGEST_MAX_CHUNKS_PER_DOCUMENT allows."""


def _cut_heading(heading: str, limit: int | None) -> str:
    return heading if limit is None or len(heading) <= limit else heading[: limit - 1] + "…"


@dataclass(slots=True)  # one per sentence: hundreds of thousands for a big document
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
    return [s for s in spans if text[s.start : s.end].strip()]


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
        window = text[start : start + max_chars]
        cut = max(window.rfind(c) for c in CLAUSE_END)
        cut = start + cut + 1 if cut > max_chars // 3 else start + max_chars
        spans.append(Span(start, cut))
        start = cut
    spans.append(Span(start, end))
    return spans


def document_spans(document: LoadedDocument, max_chars: int, max_heading_chars: int | None = None) -> list[Span]:
    """Heading lines and sentences of the whole document, each tagged with its section and heading path.

    A heading line longer than `max_heading_chars` is indexed as body text, and heading-path entries are cut to that
    length: a 1 MB "heading" would otherwise ride along in every chunk's metadata and index text.
    """
    spans: list[Span] = []
    for index, section in enumerate(document.sections):
        path = tuple(_cut_heading(h, max_heading_chars) for h in section.heading_path)
        if section.heading_start is not None:
            line_end = document.text.find("\n", section.heading_start, section.start)
            line_end = section.start if line_end < 0 else line_end
            if max_heading_chars is not None and line_end - section.heading_start > max_heading_chars:
                for span in split_sentences(document.text, section.heading_start, line_end, max_chars):
                    span.section, span.path = index, path
                    spans.append(span)
            else:
                spans.append(
                    Span(section.heading_start, line_end, paragraph_end=True, heading=True, section=index, path=path)
                )
        for span in split_sentences(document.text, section.start, section.end, max_chars):
            span.section, span.path = index, path
            spans.append(span)
    return spans


def chunk_document(
    document: LoadedDocument,
    source: str,
    min_chars: int = 300,
    max_chars: int = 500,
    max_heading_chars: int | None = None,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """Pack sentences into chunks of ~min..max characters with one sentence of overlap.

    A chunk ends at a paragraph end once it has min_chars. It crosses into the next subsection (taking that heading
    line along) only while it is still short and both lie under the same top-level heading. More than `max_chunks`
    chunks raises TooManyChunks (a SkipFile) before any chunk text is copied.
    """
    spans = document_spans(document, max_chars, max_heading_chars)
    groups = _pack(spans, min_chars, max_chars)
    if max_chunks is not None and len(groups) > max_chunks:
        raise TooManyChunks(
            f"切分后有 {len(groups)} 个片段，超过上限 {max_chunks}"
            f"（INGEST_MAX_CHUNKS_PER_DOCUMENT），文件过大，已跳过 (too many chunks)"
        )
    chunks: list[Chunk] = []
    occurrences: Counter[str] = Counter()
    for first, last in groups:
        start, end = spans[first].start, spans[last].end
        text = document.text[start:end]
        text_hash = content_hash(text)
        occurrences[text_hash] += 1
        chunks.append(
            Chunk(
                id=chunk_id(source, text_hash, occurrences[text_hash]),
                source=source,
                title=document.title,
                heading_path=list(_common_prefix([s.path for s in spans[first : last + 1]])),
                position=len(chunks),
                start=start,
                end=end,
                text=text,
                content_hash=text_hash,
                pages=_pages(document, start, end),
            )
        )
    return chunks


def _pages(document: LoadedDocument, start: int, end: int) -> list[int] | None:
    """[first, last] page of a passage (PDF); None for formats without pages."""
    first = document.page_at(start)
    return None if first is None else [first, document.page_at(max(start, end - 1))]


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
        overlap_ok = (
            last > first
            and not spans[last].heading
            and not nxt.heading
            and nxt.section == spans[last].section
            and (spans[last].end - spans[last].start) <= max_chars // 3
        )
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
