"""PDF with pdfplumber (MIT; pdfminer.six underneath): page numbers, headings, tables, joined line wraps.

What a guideline PDF needs that plain text extraction loses:
- every chunk knows its pages: the builder records where each page starts;
- running headers, footers and page numbers (lines in the top/bottom margin repeated on most pages, or bare page
  numbers) are dropped instead of landing mid-passage;
- a line wrap inside a sentence is not a sentence end: lines are joined into paragraphs (with no space between
  Chinese characters), also across a page break when the sentence goes on;
- headings come from the PDF outline (bookmarks) when there is one, else from the layout (larger font);
- ruled tables become one line per row ("列名：值 | 列名：值") and their cells are not read twice.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from clincite.ingest.loaders.base import DocumentBuilder, LoadedDocument, SkipFile, clean_line

SENTENCE_END = tuple("。！？；!?;：:")
MARGIN = 0.1  # top/bottom share of the page where running headers and footers live
PAGE_NUMBER = re.compile(
    r"^[-—–·\s]*(第\s*)?\d{1,4}(\s*/\s*\d{1,4})?(\s*页)?(\s*共\s*\d+\s*页)?[-—–·\s]*$"
    r"|^(page\s*)?\d{1,4}(\s*of\s*\d{1,4})?$",
    re.I,
)
HEADING_SCALE = 1.15  # a line this much larger than the body text is a heading (when there is no outline)
MAX_HEADING_CHARS = 40


@dataclass
class Line:
    text: str
    top: float
    bottom: float
    x0: float
    x1: float
    size: float
    page: int
    heading: int = 0  # heading level, 0 for body text


@dataclass
class Table:
    top: float
    rows: list[list[str]]


def load_pdf(path: Path) -> LoadedDocument:
    import pdfplumber
    from pypdf import PdfReader

    try:
        reader = PdfReader(str(path))  # pypdf: encryption and the outline (bookmarks)
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("PDF 已加密，需要密码才能读取 (encrypted PDF)")
        outline = _outline(reader)
        with pdfplumber.open(str(path)) as pdf:  # pdfplumber: characters with positions and sizes, ruled tables
            pages = [_read_page(page, number) for number, page in enumerate(pdf.pages, 1)]
            heights = [float(page.height) for page in pdf.pages]
            meta_title = clean_line(str((pdf.metadata or {}).get("Title") or ""))
    except SkipFile:
        raise
    except Exception as exc:  # pypdf and pdfminer raise many private error types on broken files
        raise SkipFile(f"PDF 文件损坏或无法解析 ({type(exc).__name__}: {exc})") from exc
    if not any(lines for lines, _ in pages):
        raise SkipFile("PDF 中没有可提取的文字（可能是扫描件，需要先做 OCR） (no text layer)")
    _drop_running_lines(pages, heights)
    _mark_headings([line for lines, _ in pages for line in lines], outline)
    document = _assemble(pages, path.stem)
    if meta_title and document.title == path.stem and not _looks_generated(meta_title):
        document.title = meta_title
    return document


def _read_page(page, number: int) -> tuple[list[Line], list[Table]]:
    tables = []
    boxes = []
    for found in page.find_tables():
        rows = [[cell or "" for cell in row] for row in found.extract()]
        if rows and sum(1 for row in rows for cell in row if cell.strip()) >= 2:
            tables.append(Table(float(found.bbox[1]), rows))
            boxes.append(found.bbox)
    lines = []
    for raw in page.extract_text_lines(return_chars=True, strip=True):
        text = clean_line(raw["text"])
        if not text:
            continue
        middle = (raw["top"] + raw["bottom"]) / 2
        if any(
            x0 - 1 <= raw["x0"] and raw["x1"] <= x1 + 1 and top <= middle <= bottom for x0, top, x1, bottom in boxes
        ):
            continue  # a table cell: read with its table
        sizes = [round(float(c.get("size", 0)), 1) for c in raw["chars"] if not c["text"].isspace()]
        size = statistics.median(sizes) if sizes else 0.0
        lines.append(
            Line(text, float(raw["top"]), float(raw["bottom"]), float(raw["x0"]), float(raw["x1"]), size, number)
        )
    return lines, tables


def _outline(reader) -> list[tuple[int, str, int | None]]:
    """(level, title, page) of the PDF's bookmarks; [] when it has none or they cannot be read."""
    found: list[tuple[int, str, int | None]] = []

    def walk(items, level):
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1
            except Exception:  # a bookmark pointing nowhere still names a heading
                page = None
            found.append((level, clean_line(str(getattr(item, "title", "") or "")), page))

    try:
        walk(reader.outline, 1)
    except Exception:  # a broken outline must not cost the document its text
        return []
    return [entry for entry in found if entry[1]]


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", "", text))


def _drop_running_lines(pages: list[tuple[list[Line], list[Table]]], heights: list[float]) -> None:
    """Remove page numbers and lines that repeat in the top/bottom margin of at least half of the pages."""

    def in_margin(line: Line) -> bool:
        height = heights[line.page - 1]
        return line.bottom <= height * MARGIN or line.top >= height * (1 - MARGIN)

    seen: Counter[str] = Counter()
    for lines, _ in pages:
        seen.update({_key(line.text) for line in lines if in_margin(line)})
    threshold = max(2, (len(pages) + 1) // 2)
    for lines, _ in pages:
        lines[:] = [
            line
            for line in lines
            if not (
                in_margin(line)
                and (PAGE_NUMBER.match(line.text) or (len(pages) > 1 and seen[_key(line.text)] >= threshold))
            )
        ]


def _mark_headings(lines: list[Line], outline: list[tuple[int, str, int | None]]) -> None:
    if outline:
        wanted = {}
        for level, title, page in outline:
            wanted.setdefault(_key(title), []).append((level, page))
        for line in lines:
            for level, page in wanted.get(_key(line.text), []):
                if page is None or page == line.page:
                    line.heading = level
                    break
        if any(line.heading for line in lines):
            return
    sizes = Counter()
    for line in lines:
        sizes[line.size] += len(line.text)
    if not sizes:
        return
    body = sizes.most_common(1)[0][0]
    larger = sorted({line.size for line in lines if line.size >= body * HEADING_SCALE}, reverse=True)
    for line in lines:
        if (
            line.size in larger
            and len(line.text) <= MAX_HEADING_CHARS
            and not line.text.endswith(SENTENCE_END)
            and not line.text.endswith(("，", ","))
        ):
            line.heading = larger.index(line.size) + 1


def _assemble(pages: list[tuple[list[Line], list[Table]]], fallback_title: str) -> LoadedDocument:
    builder = DocumentBuilder(fallback_title)
    body = [line for lines, _ in pages for line in lines if not line.heading]
    left = statistics.median([line.x0 for line in body]) if body else 0.0
    right = max((line.x1 for line in body), default=0.0)
    gaps = [
        b.top - a.bottom
        for lines, _ in pages
        for a, b in itertools.pairwise(lines)
        if not a.heading and not b.heading and b.top >= a.bottom
    ]
    usual_gap = statistics.median(gaps) if gaps else 0.0
    paragraph: list[Line] = []
    continues = False  # the previous page ended inside a sentence

    def flush() -> None:
        nonlocal continues
        if not paragraph:
            return
        text = _join([line.text for line in paragraph])
        if continues:
            builder.continue_paragraph(text)
        else:
            builder.paragraph(text)
        continues = False
        paragraph.clear()

    for lines, tables in pages:
        builder.start_page()
        items: list[Line | Table] = sorted([*lines, *tables], key=lambda item: item.top)
        for item in items:
            if isinstance(item, Table) or item.heading:
                continues = False
                flush()
                if isinstance(item, Table):
                    builder.table(item.rows)
                else:
                    builder.heading(item.heading, item.text)
                continue
            if paragraph:
                previous = paragraph[-1]
                indented = item.x0 > left + 1.5 * max(item.size, 1)
                short = previous.x1 < right - 2 * max(previous.size, 1)
                ends = previous.text.endswith(SENTENCE_END)
                gap = item.top - previous.bottom
                if gap > usual_gap + 0.5 * max(item.size, 1) or (ends and (short or indented)):
                    flush()
            elif continues and item.x0 > left + 1.5 * max(item.size, 1):
                continues = False  # an indented first line opens a new paragraph after all
            paragraph.append(item)
        if paragraph:
            ends_inside = not paragraph[-1].text.endswith(SENTENCE_END)
            flush()
            continues = ends_inside
        else:
            continues = False
    return builder.build()


def _join(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        space = text[-1:].isascii() and text[-1:].isalnum() and line[:1].isascii() and line[:1].isalnum()
        text += (" " if space else "") + line
    return text


def _looks_generated(title: str) -> bool:
    """Titles that tools write into PDF metadata rather than people: "Microsoft Word - x.doc", "untitled"."""
    return bool(re.match(r"(microsoft\s+\w+\s*-|untitled|无标题|document\d*$)", title, re.I)) or bool(
        re.search(r"\.(docx?|pdf|wps)$", title, re.I)
    )
