"""PDF with pdfplumber (MIT; pdfminer.six underneath): page numbers, headings, tables, joined line wraps.

What a guideline PDF needs that plain text extraction loses:
- every chunk knows its pages: the builder records where each page starts;
- running headers, footers and page numbers (lines in the top/bottom margin repeated on most pages, or bare page
  numbers) are dropped instead of landing mid-passage, also on pages read in drawing order (their first and last
  lines) and where a two-column page's crop cuts a header in two;
- a line wrap inside a sentence is not a sentence end: lines are joined into paragraphs (with no space between
  Chinese characters), also across a page break when the sentence goes on;
- headings come from the PDF outline (bookmarks) when there is one, else from the layout (larger font);
- ruled tables become one line per row ("列名：值 | 列名：值") and their cells are not read twice.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from clincite.ingest.loaders.base import DocumentBuilder, LoadedDocument, SkipFile, clean_line, ordinal_heading_level
from clincite.ingest.progress import report_pages
from clincite.text.tokenizer import get_tokenizer

log = logging.getLogger(__name__)

SENTENCE_END = tuple("。！？；!?;：:")
MARGIN = 0.1  # top/bottom share of the page where running headers and footers live
PAGE_NUMBER = re.compile(
    r"^[-—–·\s]*(第\s*)?\d{1,4}(\s*/\s*\d{1,4})?(\s*页)?(\s*共\s*\d+\s*页)?[-—–·\s]*$"
    r"|^(page\s*)?\d{1,4}(\s*of\s*\d{1,4})?$",
    re.I,
)
LINE_TOLERANCE = 0.8  # of the type size: characters this far apart vertically still share a line
GUTTER_BIN = 2.0  # points: the resolution at which an empty vertical strip between columns is looked for
GUTTER_NOISE = 0.002  # a strip may hold this share of the page's characters (a stray mark) and still be empty
MIN_GUTTER = 6.0  # points: an empty strip this wide separates two columns
MIN_COLUMN_SHARE = 0.25  # each column holds at least this share of the page's characters
MIN_COLUMN_CHARS = 200  # pages with fewer characters are read as one column
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")
MIN_SUSPECT_HEADINGS = 20  # a short document may well have a heading every few lines
MAX_HEADING_SHARE = 0.1  # more "headings" by type size than this share of the lines: the sizes mislead
FULL_LINE = 0.8  # a line this share of its column's width wide is running text
HEADING_SCALE = 1.15  # a line this much larger than the body text is a heading (when there is no outline)
CLEAR_HEADING_SCALE = 1.3  # this much larger is a heading however wide
MAX_HEADING_CHARS = 40
MIN_WORDLIKE_GAIN = 0.15  # pypdf's reading of a page wins when this much more of it reads as words
MIN_WORDLIKE_CHARS = 100  # pages with fewer Chinese characters keep the positional reading
PLAIN_LEADING = 12.0  # points between lines read pypdf's way (they have no positions of their own)
EDGE_LINES = 3  # a page read pypdf's way: its first and last this many lines are where a running header/footer sits
MAX_RUNNING_CHARS = 150  # a running header or footer is one printed line (a journal's name, issue, date, DOI)
# Page-number marks around a running line ("· 72 · 中华医学杂志…", "…No. 16 · 73 ·"): a journal's odd and even pages
# carry the same header with the number on the other side, and the digits are already "#" in the key.
_PAGE_MARKS = re.compile(r"^[#·•∙\-—–|]+|[#·•∙\-—–|]+$")
_WORD = re.compile(r"[^\W\d_]")  # a letter or a Chinese character


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
    column: int = 0  # 0, or 1 for the right column of a two-column page
    drawn: bool = False  # read in drawing order by pypdf: top and bottom are line counts, not positions


@dataclass
class Table:
    top: float
    rows: list[list[str]]
    column: int = 0


def load_pdf(path: Path) -> LoadedDocument:
    import pdfplumber
    from pypdf import PdfReader

    try:
        reader = PdfReader(str(path))  # pypdf: encryption and the outline (bookmarks)
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("PDF 已加密，需要密码才能读取 (encrypted PDF)")
        outline = _outline(reader)
        with _open_plumber(pdfplumber, path, reader) as pdf:  # characters with positions and sizes, ruled tables
            pages = []
            edges = []  # per page: the lines a running header or footer would be (see _drop_running_lines)
            for number, page in enumerate(pdf.pages, 1):
                lines, tables, margin = _read_page(page, number)
                plain = _pypdf_text(reader, number)
                if _garbled(" ".join(line.text for line in lines), plain):
                    lines, tables = _plain_lines(plain, number), []
                    margin = lines[:EDGE_LINES] + lines[EDGE_LINES:][-EDGE_LINES:]
                pages.append((lines, tables))
                edges.append(margin)
                report_pages(number, len(pdf.pages))  # a long PDF's page counter (clincite/ingest/progress.py)
            boxes = [_visible(page) for page in pdf.pages]
            meta_title = clean_line(str((pdf.metadata or {}).get("Title") or ""))
    except SkipFile:
        raise
    except Exception as exc:  # pypdf and pdfminer raise many private error types on broken files
        raise SkipFile(f"PDF 文件损坏或无法解析 ({type(exc).__name__}: {exc})") from exc
    if not any(lines for lines, _ in pages):
        raise SkipFile("PDF 中没有可提取的文字（可能是扫描件，需要先做 OCR） (no text layer)")
    _drop_running_lines(pages, edges, boxes)
    _mark_headings([line for lines, _ in pages for line in lines], outline)
    document = _assemble(pages, path.stem)
    if meta_title and document.title == path.stem and not _looks_generated(meta_title):
        document.title = meta_title
    return document


def _open_plumber(pdfplumber, path: Path, reader):
    """pdfplumber on the file; on a copy rewritten by pypdf when pdfminer finds no pages in it. Some journal PDFs
    have a cross-reference table pdfminer cannot follow (it sees an empty catalogue) while pypdf repairs it as it
    reads: written back out, the same pages and text layer open everywhere."""
    pdf = pdfplumber.open(str(path))
    if pdf.pages or not len(reader.pages):
        return pdf
    pdf.close()
    from pypdf import PdfWriter

    log.info("pdfminer finds no pages in %s; reading the copy pypdf repairs", path.name)
    repaired = io.BytesIO()
    PdfWriter(clone_from=reader).write(repaired)
    repaired.seek(0)
    return pdfplumber.open(repaired)


def _pypdf_text(reader, number: int) -> str:
    try:
        return reader.pages[number - 1].extract_text() or ""
    except Exception as exc:  # pypdf's private errors on one broken page: that page keeps pdfplumber's reading
        log.debug("pypdf cannot read page %d (%s)", number, exc)
        return ""


def _garbled(laid_out: str, plain: str) -> bool:
    """pdfplumber reads characters by position; on many journal pages the glyphs of neighbouring lines or columns
    overlap and come out interleaved ("年率给版为患） 者6 最 0%造新"). pypdf reads the content stream in drawing
    order, which on those pages is reading order. Whichever reads as Chinese words is right: the positional reading
    gives way when pypdf's has clearly more of its characters inside dictionary words (0.8 against 0.3)."""
    plain_score = _wordlike(plain)
    return plain_score is not None and plain_score - (_wordlike(laid_out) or 0.0) >= MIN_WORDLIKE_GAIN


def _wordlike(text: str) -> float | None:
    """The share of a text's Chinese characters that sit in words of two or more characters (jieba's dictionary,
    no guessing); None for a page with too little Chinese to tell."""
    words = get_tokenizer().dictionary_words(_join_cjk(text.replace("\n", "")))
    chinese = sum(1 for word in words for c in word if "\u4e00" <= c <= "\u9fff")
    if chinese < MIN_WORDLIKE_CHARS:
        return None
    in_words = sum(len(w) for w in words if len(w) >= 2 and all("\u4e00" <= c <= "\u9fff" for c in w))
    return in_words / chinese


def _plain_lines(text: str, number: int) -> list[Line]:
    """pypdf's lines of a page, in order (no positions or sizes: headings come from the outline or their numbering)."""
    lines = []
    for index, raw in enumerate(text.splitlines()):
        line = _join_cjk(clean_line(raw))
        if line:
            top = PLAIN_LEADING * index
            lines.append(Line(line, top, top + PLAIN_LEADING - 1, 0.0, 0.0, 0.0, number, drawn=True))
    return lines


def _read_page(page, number: int) -> tuple[list[Line], list[Table], list[Line]]:
    """The page's lines (column by column) and tables, and the lines of its top and bottom margins read across the
    whole width: a running header that spans the gutter of a two-column page is cut in two by the column crops, in
    a different place on every page, and only whole is it seen to repeat."""
    tables = []
    boxes = []
    for found in page.find_tables():
        rows = [[cell or "" for cell in row] for row in found.extract()]
        if rows and sum(1 for row in rows for cell in row if cell.strip()) >= 2:
            tables.append(Table(float(found.bbox[1]), rows))
            boxes.append(found.bbox)
    regions = _columns(page)
    if len(regions) > 1:
        gutter = float(regions[1].bbox[0])
        for table, box in zip(tables, boxes):
            table.column = 1 if float(box[0]) >= gutter else 0
    # Characters of one printed line may sit a few points apart (Latin glyphs of a Chinese journal's second font):
    # a tolerance near the type size keeps them on their line; lines themselves are a full leading apart.
    sizes = [float(c.get("size", 0)) for c in page.chars[:2000] if not c["text"].isspace()]
    y_tolerance = max(3.0, LINE_TOLERANCE * statistics.median(sizes)) if sizes else 3.0
    lines = []
    for column, region in enumerate(regions):
        for raw in region.extract_text_lines(return_chars=True, strip=True, y_tolerance=y_tolerance):
            text = _join_cjk(clean_line(raw["text"]))
            if not text:
                continue
            middle = (raw["top"] + raw["bottom"]) / 2
            if any(
                x0 - 1 <= raw["x0"] and raw["x1"] <= x1 + 1 and top <= middle <= bottom for x0, top, x1, bottom in boxes
            ):
                continue  # a table cell: read with its table
            sizes = [round(float(c.get("size", 0)), 1) for c in raw["chars"] if not c["text"].isspace()]
            size = statistics.median(sizes) if sizes else 0.0
            top, bottom, x0, x1 = (float(raw[k]) for k in ("top", "bottom", "x0", "x1"))
            lines.append(Line(text, top, bottom, x0, x1, size, number, column=column))
    box = _visible(page)
    margin = [line for line in lines if _in_margin(line.top, line.bottom, box)]
    if len(regions) > 1:  # and the margins read across the gutter
        for raw in page.extract_text_lines(strip=True, y_tolerance=y_tolerance):
            top, bottom = float(raw["top"]), float(raw["bottom"])
            text = _join_cjk(clean_line(raw["text"]))
            if text and _in_margin(top, bottom, box):
                margin.append(Line(text, top, bottom, float(raw["x0"]), float(raw["x1"]), 0.0, number))
    return lines, tables, margin


def _columns(page) -> list:
    """The page's text columns, left to right: two when an empty vertical strip runs down its middle (a journal's
    two-column layout, which read line by line across the page would interleave both columns), else the page."""
    width, height = float(page.width), float(page.height)
    chars = [c for c in page.chars if not c["text"].isspace() and MARGIN * height < c["top"] < (1 - MARGIN) * height]
    if len(chars) < MIN_COLUMN_CHARS:
        return [page]
    bins = [0] * int(width // GUTTER_BIN + 1)
    for char in chars:
        for b in range(int(float(char["x0"]) // GUTTER_BIN), int(float(char["x1"]) // GUTTER_BIN) + 1):
            bins[min(b, len(bins) - 1)] += 1
    low, high = int(width * 0.3 // GUTTER_BIN), int(width * 0.7 // GUTTER_BIN)
    best = None  # the widest run of (nearly) empty bins in the middle band
    run_start = None
    for b in range(low, high + 1):
        empty = bins[b] <= len(chars) * GUTTER_NOISE
        if empty and run_start is None:
            run_start = b
        if (not empty or b == high) and run_start is not None:
            run_end = b if empty else b - 1
            if best is None or run_end - run_start > best[1] - best[0]:
                best = (run_start, run_end)
            run_start = None
    if best is None or (best[1] - best[0] + 1) * GUTTER_BIN < MIN_GUTTER:
        return [page]
    gutter = (best[0] + best[1] + 1) / 2 * GUTTER_BIN
    left = sum(1 for c in chars if float(c["x1"]) <= gutter)
    if min(left, len(chars) - left) < MIN_COLUMN_SHARE * len(chars):
        return [page]
    return [page.crop((0, 0, gutter, height)), page.crop((gutter, 0, width, height))]


def _join_cjk(text: str) -> str:
    """Letter-spaced Chinese ("经 颅 直 流") as it reads: no space between two Chinese characters."""
    return _CJK_SPACE.sub("", text)


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


def _running_keys(text: str) -> set[str]:
    """What a running line is recognised by: its text with digits as "#" (page and issue numbers change), once as it
    is and once without the page-number marks at its ends (when something besides them is left)."""
    key = _key(text)
    bare = _PAGE_MARKS.sub("", key)
    return {key, bare} if _WORD.search(bare) else {key}


def _visible(page) -> tuple[float, float]:
    """Top and bottom of the page as it is shown: its crop box, when there is one, within the media box. A printer's
    file has a media box larger than the page (bleed, crop marks, a slug line with the file name), and measured on
    the media box the running header sits below the top margin."""
    height = float(page.height)
    try:
        top, bottom = float(page.cropbox[1]), float(page.cropbox[3])
    except (AttributeError, IndexError, TypeError, ValueError):
        return 0.0, height
    top, bottom = max(0.0, top), min(height, bottom)
    return (top, bottom) if bottom - top > height / 2 else (0.0, height)


def _in_margin(top: float, bottom: float, box: tuple[float, float]) -> bool:
    """In the top or bottom MARGIN of the visible page, or outside it (a printer's slug line)."""
    upper, lower = box
    band = (lower - upper) * MARGIN
    return bottom <= upper + band or top >= lower - band


def _drop_running_lines(
    pages: list[tuple[list[Line], list[Table]]], edges: list[list[Line]], boxes: list[tuple[float, float]]
):
    """Remove page numbers and running headers and footers: lines that repeat at the edge of at least half of the
    pages. A page's edge is its top and bottom margin (read across the page, see _read_page) or, for a page read in
    drawing order (no positions), its first and last EDGE_LINES lines. The count is over the whole document, so the
    few pages read pypdf's way are judged by the header all the others carry too. Body text is safe: it would have
    to recur at the very edge of half the pages, in the same words."""

    def in_margin(line: Line) -> bool:
        return _in_margin(line.top, line.bottom, boxes[line.page - 1])

    seen: Counter[str] = Counter()
    for page_edges in edges:
        seen.update({key for line in page_edges for key in _running_keys(line.text)})
    threshold = max(2, (len(pages) + 1) // 2)

    def repeated(text: str) -> bool:
        return (
            len(pages) > 1 and len(text) <= MAX_RUNNING_CHARS and any(seen[k] >= threshold for k in _running_keys(text))
        )

    def running(text: str) -> bool:
        return bool(PAGE_NUMBER.match(text)) or repeated(text)

    for (lines, _), page_edges in zip(pages, edges):
        at_edge = {id(line) for line in page_edges}
        # A column's piece of a header cut at the gutter sits on the printed line of a running margin line (one with
        # words: a bare number read across the page may be a superscript beside body text).
        cut = [
            (line.top, line.bottom)
            for line in page_edges
            if not line.drawn and _WORD.search(line.text) and repeated(line.text)
        ]
        lines[:] = [
            line
            for line in lines
            if not (
                (id(line) in at_edge if line.drawn else in_margin(line))
                and (running(line.text) or any(top <= (line.top + line.bottom) / 2 <= bottom for top, bottom in cut))
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
    body = _body_size(lines)
    if body is None:
        return
    edge = {c: max((ln.x1 for ln in lines if ln.column == c), default=0.0) for c in (0, 1)}
    larger = sorted({line.size for line in lines if line.size >= body * HEADING_SCALE}, reverse=True)
    marked = []
    for line in lines:
        if (
            line.size in larger
            and len(line.text) <= MAX_HEADING_CHARS
            and not line.text.endswith(SENTENCE_END)
            and not line.text.endswith(("，", ","))
            # A heading set only a little larger than the text does not run to the margin like a line of text.
            and (line.size >= body * CLEAR_HEADING_SCALE or line.x1 < edge[line.column] - 2 * max(line.size, 1))
        ):
            line.heading = larger.index(line.size) + 1
            marked.append(line)
    if len(marked) > max(MAX_HEADING_SHARE * len(lines), MIN_SUSPECT_HEADINGS):  # sizes that say nothing reliable
        for line in marked:
            line.heading = 0
    for line in lines:  # "一、概述" and "（二）诊断" are headings in any Chinese document, whatever their type size
        level = ordinal_heading_level(line.text)
        if level and not line.heading:
            line.heading = level


def _body_size(lines: list[Line]) -> float | None:
    """The type size of running text: the commonest size among lines that run the full width of their column
    (a reference list or an abstract in small type can have more characters than the text itself)."""
    edge = {c: max((ln.x1 for ln in lines if ln.column == c), default=0.0) for c in (0, 1)}
    start = {c: min((ln.x0 for ln in lines if ln.column == c), default=0.0) for c in (0, 1)}
    full = Counter()
    every = Counter()
    for line in lines:
        every[line.size] += len(line.text)
        width = edge[line.column] - start[line.column]
        if width and line.x1 - line.x0 >= FULL_LINE * width:
            full[line.size] += len(line.text)
    chosen = full or every
    return chosen.most_common(1)[0][0] if chosen else None


def _assemble(pages: list[tuple[list[Line], list[Table]]], fallback_title: str) -> LoadedDocument:
    builder = DocumentBuilder(fallback_title)
    body = [line for lines, _ in pages for line in lines if not line.heading]
    # Where a column's lines start and end, per column (a two-column page's right column starts mid-page).
    left = {c: statistics.median([ln.x0 for ln in body if ln.column == c] or [0.0]) for c in (0, 1)}
    right = {c: max((ln.x1 for ln in body if ln.column == c), default=0.0) for c in (0, 1)}
    usual_gaps = [_usual_gap(lines) for lines, _ in pages]  # per page: a reference list is set tighter than text
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

    for (lines, tables), usual_gap in zip(pages, usual_gaps):
        builder.start_page()
        items: list[Line | Table] = sorted([*lines, *tables], key=lambda item: (item.column, item.top))
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
                indented = item.x0 > left[item.column] + 1.5 * max(item.size, 1)
                short = previous.x1 < right[previous.column] - 2 * max(previous.size, 1)
                ends = previous.text.endswith(SENTENCE_END)
                gap = item.top - previous.bottom
                if gap > usual_gap + 0.5 * max(item.size, 1) or (ends and (short or indented)):
                    flush()
            elif continues and item.x0 > left[item.column] + 1.5 * max(item.size, 1):
                continues = False  # an indented first line opens a new paragraph after all
            paragraph.append(item)
        if paragraph:
            ends_inside = not paragraph[-1].text.endswith(SENTENCE_END)
            flush()
            continues = ends_inside
        else:
            continues = False
    return builder.build()


def _usual_gap(lines: list[Line]) -> float:
    """The usual space between two lines of a paragraph on this page (a larger one ends the paragraph)."""
    gaps = [
        b.top - a.bottom
        for a, b in itertools.pairwise(sorted(lines, key=lambda ln: (ln.column, ln.top)))
        if not a.heading and not b.heading and b.top >= a.bottom and a.column == b.column
    ]
    return statistics.median(gaps) if gaps else 0.0


def _join(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        space = text[-1:].isascii() and text[-1:].isalnum() and line[:1].isascii() and line[:1].isalnum()
        text += (" " if space else "") + line
    return text


def _looks_generated(title: str) -> bool:
    """Titles that tools write into PDF metadata rather than people: "Microsoft Word - x.doc", "untitled"."""
    return bool(re.match(r"(microsoft\s+\w+\s*-|untitled|无标题|标题$|title$|document\d*$)", title, re.I)) or bool(
        re.search(r"\.(docx?|pdf|wps)$", title, re.I)
    )
