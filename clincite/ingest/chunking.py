"""Chinese chunking: sentences packed into ~300–500-character passages at headings and paragraph ends."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from clincite.core.shapes import Chunk, Segment
from clincite.ingest.loaders import LoadedDocument, SkipFile
from clincite.kb.store import chunk_id, content_hash
from clincite.text.units import split_units

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
    """Spans to pack (absolute offsets) of text[start:end]: its units (`clincite.text.units`), a list with its lead-in
    kept whole when it fits, so a chunk never ends in the middle of a contraindication list."""
    spans: list[Span] = []
    for unit in split_units(text, (), start, end):
        if unit.kind == "list" and unit.length > max_chars:
            pieces = [(unit.start, unit.items[0][0]), *unit.items] if unit.start < unit.items[0][0] else unit.items
            for piece in pieces:
                spans.extend(_cut_long(text, *piece, max_chars))
        else:
            spans.extend(_cut_long(text, unit.start, unit.end, max_chars))
        if spans and _ends_block(text, unit.end, end):
            spans[-1].paragraph_end = True
    return [s for s in spans if s.start >= start and text[s.start : s.end].strip()]


def _ends_block(text: str, offset: int, end: int) -> bool:
    """Only whitespace with a blank line (or the region's end) follows: the unit closes its paragraph or list."""
    rest = text[offset:end]
    return not rest.strip() or "\n\n" in rest[: len(rest) - len(rest.lstrip())]


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
                segments=_segments(spans[first : last + 1], start),
            )
        )
    return chunks


def _segments(spans: list[Span], offset: int) -> list[Segment]:
    """The chunk's runs under one heading path, its heading lines marked (offsets relative to the chunk)."""
    segments: list[Segment] = []
    for span in spans:
        last = segments[-1] if segments else None
        if last is not None and not span.heading and not last.heading and last.path == list(span.path):
            last.end = span.end - offset
        else:
            segments.append(
                Segment(start=span.start - offset, end=span.end - offset, path=list(span.path), heading=span.heading)
            )
    return segments


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
