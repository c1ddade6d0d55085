"""PDF with pdfplumber (MIT; pdfminer.six underneath): page numbers, headings, tables, joined line wraps.

What a guideline PDF needs that plain text extraction loses:
- every chunk knows its pages: the builder records where each page starts;
- running headers, footers and page numbers (lines in the top/bottom margin repeated on most pages, or bare page
  numbers) are dropped instead of landing mid-passage, also on pages read in drawing order (their first and last
  lines) and where a two-column page's crop cuts a header in two;
- a line wrap inside a sentence is not a sentence end: lines are joined into paragraphs (with no space between
  Chinese characters), also across a page break when the sentence goes on;
- headings come from the PDF outline (bookmarks) when there is one, else from the layout (larger font);
- ruled tables become one line per row ("列名：值 | 列名：值") and their cells are not read twice; so do three-line
  tables (三线表: a top rule, a rule under the header, a bottom rule, no vertical rules), found by their rules and the
  "表 N" caption above them, their columns read from the empty strips between the cells, the caption a line of its own.
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

from clincite.ingest.loaders.base import (
    PAGE_NUMBER,
    SENTENCE_END,
    DocumentBuilder,
    LoadedDocument,
    SkipFile,
    clean_line,
    join_cjk,
    ordinal_heading_level,
    strip_markers,
)
from clincite.ingest.progress import report_pages
from clincite.text.tokenizer import get_tokenizer

log = logging.getLogger(__name__)

MARGIN = 0.1  # top/bottom share of the page where running headers and footers live
LINE_TOLERANCE = 0.8  # of the type size: characters this far apart vertically still share a line
GUTTER_BIN = 2.0  # points: the resolution at which an empty vertical strip between columns is looked for
GUTTER_NOISE = 0.002  # a strip may hold this share of the page's characters (a stray mark) and still be empty
MIN_GUTTER = 6.0  # points: an empty strip this wide separates two columns
MIN_COLUMN_SHARE = 0.25  # each column holds at least this share of the page's characters
MIN_COLUMN_CHARS = 200  # pages with fewer characters are read as one column
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
TITLE_SHARE = 0.5  # a metadata title has at least this share of its words in the document it is the title of
_LINK = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
_ITEM_MARK = re.compile(r"^\s*(?:[A-Za-z\d]{1,2}|[一二三四五六七八九十]{1,3})[、.．)）]")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
# Three-line tables (三线表): horizontal rules only, so pdfplumber's default finder (which needs vertical lines too)
# misses them and their cells come out as running text, every cell of the table glued into one line.
CAPTION = re.compile(r"^续?表\s*[A-Za-z]?\d+")  # "表 6 糖尿病性…", "续表 3"; a table without one is not looked for
NOTE = re.compile(r"^(注|说明|Note)", re.I)  # the note under a table: the table ended at the rule above it
MIN_RULE_SHARE = 0.2  # of the page width: shorter rules underline a heading or open the footnotes, not a table
RULE_ALIGN = 3.0  # points: the rules of one table start and end this close to each other
RULE_MERGE = 1.5  # points: edges this close vertically are one rule (a thin filled rectangle has two)
CAPTION_REACH = 2.5  # type sizes: a caption sits this close above its table's top rule
CELL_GAP = 0.5  # type sizes: an empty vertical strip this wide, down every line of the table, separates columns
WORD_SPACE = 0.15  # type sizes: characters further apart than this have a space between them
SUPERSCRIPT = 0.8  # of the type size: smaller characters are superscripts (citations), hung on their line
SUBSCRIPT_DROP = 0.3  # type sizes: how far a subscript may reach below its line's foot
WRAP_MARGIN = 1.2  # type sizes: a cell's line ending this close to its column's right edge may wrap on
MIN_WRAP_WIDTH = 3.0  # type sizes: narrower columns hold codes and figures, not text that wraps
ROW_GAP = 0.3  # type sizes: a line this much further below the last than the table's closest lines starts a row


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
    x0: float = 0.0
    caption: str = ""  # "表 6 …" of a three-line table: a line of its own before the rows


@dataclass
class Rule:
    """A horizontal rule of the page (no vertical rules: a three-line table's)."""

    top: float
    x0: float
    x1: float


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
                    lines, tables = _lifted_tables(_plain_lines(plain, number), tables)
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
    if meta_title and document.title == path.stem and _names_this_document(meta_title, document.text, path.stem):
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
    words = get_tokenizer().dictionary_words(join_cjk(text.replace("\n", "")))
    chinese = sum(1 for word in words for c in word if "\u4e00" <= c <= "\u9fff")
    if chinese < MIN_WORDLIKE_CHARS:
        return None
    in_words = sum(len(w) for w in words if len(w) >= 2 and all("\u4e00" <= c <= "\u9fff" for c in w))
    return in_words / chinese


def _lifted_tables(lines: list[Line], tables: list[Table]) -> tuple[list[Line], list[Table]]:
    """A page read in drawing order keeps its captioned tables: from a table's caption line on, the lines that are
    its cells' text are dropped and the table stands where its caption was. Ruled tables (no caption to find them
    by) and tables whose caption is not a line of their own are left as pypdf's text."""
    captioned = {_bare(table.caption): table for table in tables if table.caption}
    kept: list[Line] = []
    placed: list[Table] = []
    table_text = ""
    for line in lines:
        bare = _bare(line.text)
        if bare in captioned and captioned[bare] not in placed:
            table = captioned[bare]
            table.top, table.column = line.top, 0
            placed.append(table)
            table_text = _bare("".join(cell for row in table.rows for cell in row))
        elif bare and table_text and bare in table_text:
            continue  # a cell of the open table
        else:
            table_text = ""
            kept.append(line)
    return kept, placed


def _bare(text: str) -> str:
    """Text without spaces or citation markers, to match pypdf's lines to a table's cells."""
    return re.sub(r"\s+", "", strip_markers(text))


def _plain_lines(text: str, number: int) -> list[Line]:
    """pypdf's lines of a page, in order (no positions or sizes: headings come from the outline or their numbering)."""
    lines = []
    for index, raw in enumerate(text.splitlines()):
        line = join_cjk(clean_line(raw))
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
            tables.append(Table(float(found.bbox[1]), rows, x0=float(found.bbox[0])))
            boxes.append(found.bbox)
    for table, caption_box, box in _three_line_tables(page, list(boxes)):
        tables.append(table)
        boxes.append(box)
        boxes.append(caption_box)  # the caption is read with its table, not as text (its box lies above the table)
    regions = _columns(page, boxes)
    if len(regions) > 1:
        gutter = float(regions[1].bbox[0])
        for table in tables:
            table.column = 1 if table.x0 >= gutter else 0
    # Characters of one printed line may sit a few points apart (Latin glyphs of a Chinese journal's second font):
    # a tolerance near the type size keeps them on their line; lines themselves are a full leading apart.
    sizes = [float(c.get("size", 0)) for c in page.chars[:2000] if not c["text"].isspace()]
    y_tolerance = max(3.0, LINE_TOLERANCE * statistics.median(sizes)) if sizes else 3.0
    lines = []
    for column, region in enumerate(regions):
        for raw in region.extract_text_lines(return_chars=True, strip=True, y_tolerance=y_tolerance):
            text = join_cjk(clean_line(raw["text"]))
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
            text = join_cjk(clean_line(raw["text"]))
            if text and _in_margin(top, bottom, box):
                margin.append(Line(text, top, bottom, float(raw["x0"]), float(raw["x1"]), 0.0, number))
    return lines, tables, margin


def _three_line_tables(page, ruled: list) -> list[tuple[Table, tuple, tuple]]:
    """The page's three-line tables (三线表) as (table, caption box, table box). A table is a run of rules of one width
    and place, at least three (top, under the header, bottom), whose top rule has a "表 N" caption just above it; it
    ends before the next captioned rule or a note ("注：…"). Without a caption nothing is a table: a rule above a
    reference list or a page's header rule must not turn text into rows, and a false table is worse than none."""
    chars = [c for c in page.chars if not c["text"].isspace()]
    found = []
    for group in _rule_groups(_rules(page, ruled)):
        for rules, caption in _table_runs(group, chars):
            rows = _three_line_rows(chars, rules)
            if rows is None:
                continue
            text, caption_top, caption_bottom = caption
            x0, x1 = rules[0].x0, rules[0].x1
            table = Table(caption_top, rows, x0=x0, caption=text)
            found.append((table, (x0, caption_top, x1, caption_bottom), (x0, rules[0].top, x1, rules[-1].top)))
    return found


def _rules(page, ruled: list) -> list[Rule]:
    """Horizontal rules at least MIN_RULE_SHARE of the page wide, outside the ruled tables already found, each once
    (a rule drawn as a thin filled rectangle has a top and a bottom edge)."""
    rules: list[Rule] = []
    for top, x0, x1 in _joined_segments(page):
        if x1 - x0 < MIN_RULE_SHARE * float(page.width):
            continue
        if any(bx0 - 2 <= x0 and x1 <= bx1 + 2 and btop - 2 <= top <= bbottom + 2 for bx0, btop, bx1, bbottom in ruled):
            continue
        if any(abs(r.top - top) <= RULE_MERGE and _aligned(r, Rule(top, x0, x1)) for r in rules):
            continue
        rules.append(Rule(top, x0, x1))
    return rules


def _joined_segments(page) -> list[tuple[float, float, float]]:
    """The page's horizontal edges as (top, x0, x1), pieces drawn end to end on one line joined (some typesetters
    draw a table's rule column by column)."""
    segments: list[list[float]] = []
    edges = sorted((e for e in page.edges if e["orientation"] == "h"), key=lambda e: (float(e["top"]), float(e["x0"])))
    for edge in edges:
        top, x0, x1 = float(edge["top"]), float(edge["x0"]), float(edge["x1"])
        last = segments[-1] if segments else None
        if last and abs(last[0] - top) <= RULE_MERGE and last[1] - RULE_ALIGN <= x0 <= last[2] + RULE_ALIGN:
            last[2] = max(last[2], x1)
        else:
            segments.append([top, x0, x1])
    return [(top, x0, x1) for top, x0, x1 in segments]


def _aligned(a: Rule, b: Rule) -> bool:
    return abs(a.x0 - b.x0) <= RULE_ALIGN and abs(a.x1 - b.x1) <= RULE_ALIGN


def _rule_groups(rules: list[Rule]) -> list[list[Rule]]:
    """Rules of the same start and end, top to bottom: a table's rules span its width, and a two-column page has
    tables in each column and across both."""
    groups: list[list[Rule]] = []
    for rule in rules:
        group = next((g for g in groups if _aligned(g[0], rule)), None)
        if group is None:
            groups.append([rule])
        else:
            group.append(rule)
    return [g for g in groups if len(g) >= 3]


def _table_runs(group: list[Rule], chars: list) -> list[tuple[list[Rule], tuple[str, float, float]]]:
    """The runs of rules in a group that are tables, each with its caption (text, top, bottom)."""
    captions = [_caption_above(rule, chars) for rule in group]
    runs = []
    for start, caption in enumerate(captions):
        if caption is None:
            continue
        run = [group[start]]
        for rule, next_caption in zip(group[start + 1 :], captions[start + 1 :]):
            if next_caption is not None or _note_between(run[-1], rule, chars):
                break
            run.append(rule)
        if len(run) >= 3:
            runs.append((run, caption))
    return runs


def _caption_above(rule: Rule, chars: list) -> tuple[str, float, float] | None:
    """The "表 N …" line right above a rule, within its width: (text, top, bottom), or None."""
    above = [c for c in chars if rule.x0 - 1 <= float(c["x0"]) and float(c["x1"]) <= rule.x1 + 1]
    above = [c for c in above if float(c["bottom"]) <= rule.top + 1]
    if not above:
        return None
    lowest = max(float(c["bottom"]) for c in above)
    line = [c for c in above if _size(c) and lowest - float(c["bottom"]) <= 0.5 * _size(c)]
    if not line:
        return None
    size = statistics.median(_size(c) for c in line)
    if rule.top - lowest > CAPTION_REACH * size:
        return None
    text = _chars_text(line, size)
    if not CAPTION.match(text):
        return None
    return text, min(float(c["top"]) for c in line), lowest


def _note_between(upper: Rule, lower: Rule, chars: list) -> bool:
    """Whether a line between two rules opens with "注" (a table's note: the table ended at the upper rule)."""
    between = [c for c in chars if upper.top < _middle(c) < lower.top and upper.x0 - 1 <= float(c["x0"]) <= upper.x1]
    return any(NOTE.match(_chars_text(line, _type_size(line))) for line in _char_lines(between))


def _three_line_rows(chars: list, rules: list[Rule]) -> list[list[str]] | None:
    """The table between the rules as rows, the header first; None when it does not read as a table (fewer than two
    columns, no header, no row with two cells). Columns are the empty vertical strips down the body; a row is a body
    line, with the lines that follow it closer than rows are set (a cell's wrapped text); a rule inside the body
    also starts a row."""
    x0, x1 = rules[0].x0 - 1, rules[0].x1 + 1
    inside = [c for c in chars if x0 <= float(c["x0"]) and float(c["x1"]) <= x1]
    header = [c for c in inside if rules[0].top < _middle(c) < rules[1].top]
    body = [c for c in inside if rules[1].top < _middle(c) < rules[-1].top]
    if not header or not body:
        return None
    size = _type_size(body)
    columns = _unbridged(_cell_columns([c for c in body if _size(c) >= SUPERSCRIPT * size], size), body, size)
    if len(columns) < 2:
        return None
    names = _header_names(header, columns, size)
    rows = _body_rows(_char_lines(body), columns, size, [rule.top for rule in rules[2:-1]])
    if sum(1 for name in names if name) < 2 or not any(sum(1 for cell in row if cell) >= 2 for row in rows):
        return None
    return [names, *rows]


def _cell_columns(chars: list, size: float) -> list[tuple[float, float]]:
    """The x-spans of a table's columns: the stretches between strips at least CELL_GAP type sizes wide that no
    full-size character of the body touches (a superscript citation may hang into the strip)."""
    spans = sorted((float(c["x0"]), float(c["x1"])) for c in chars)
    columns = [list(spans[0])]
    for x0, x1 in spans[1:]:
        if x0 - columns[-1][1] >= CELL_GAP * size:
            columns.append([x0, x1])
        else:
            columns[-1][1] = max(columns[-1][1], x1)
    return [(a, b) for a, b in columns]


def _unbridged(columns: list[tuple[float, float]], chars: list, size: float) -> list[tuple[float, float]]:
    """The columns with those joined whose strip some line's text runs across unbroken: a superscript citation
    between two words of one cell ("卡马西平［95,98］、奥卡西平") fills a strip no full-size character touches."""
    inked = [_ink(line, size) for line in _char_lines(chars)]
    joined = [columns[0]]
    for column in columns[1:]:
        left = joined[-1][1]
        if any(x0 <= left and column[0] <= x1 for runs in inked for x0, x1 in runs):
            joined[-1] = (joined[-1][0], column[1])
        else:
            joined.append(column)
    return joined


def _ink(line: list, size: float) -> list[tuple[float, float]]:
    """The x-spans a line's characters cover, with gaps narrower than a word space closed."""
    runs: list[list[float]] = []
    for char in sorted(line, key=lambda c: float(c["x0"])):
        x0, x1 = float(char["x0"]), float(char["x1"])
        if runs and x0 - runs[-1][1] < WORD_SPACE * size:
            runs[-1][1] = max(runs[-1][1], x1)
        else:
            runs.append([x0, x1])
    return [(a, b) for a, b in runs]


def _column_of(x: float, columns: list[tuple[float, float]]) -> int:
    """The column whose slot (its span widened to the middle of the strips beside it) holds x."""
    for index in range(len(columns) - 1):
        if x < (columns[index][1] + columns[index + 1][0]) / 2:
            return index
    return len(columns) - 1


def _header_names(chars: list, columns: list[tuple[float, float]], size: float) -> list[str]:
    """Each column's name: the header pieces above it, top to bottom. A piece spanning several columns (a group
    heading like "痛性多神经病变" over PDPN and CIPN) names each column whose middle it covers."""
    pieces: list[list[str]] = [[] for _ in columns]
    for line in _char_lines(chars):
        for piece in _pieces(line, size):
            start, end = float(piece[0]["x0"]), max(float(c["x1"]) for c in piece)
            covered = [i for i, (a, b) in enumerate(columns) if start <= (a + b) / 2 <= end]
            for index in covered or [_column_of((start + end) / 2, columns)]:
                pieces[index].append(_chars_text(piece, size))
    return [_join(names) if names else "" for names in pieces]


def _pieces(line: list, size: float) -> list[list]:
    """A line's characters cut where they are at least CELL_GAP type sizes apart (one header cell each)."""
    ordered = sorted(line, key=lambda c: float(c["x0"]))
    pieces = [[ordered[0]]]
    for char in ordered[1:]:
        if float(char["x0"]) - max(float(c["x1"]) for c in pieces[-1]) >= CELL_GAP * size:
            pieces.append([char])
        else:
            pieces[-1].append(char)
    return pieces


def _body_rows(lines: list[list], columns: list[tuple[float, float]], size: float, breaks: list[float]) -> list:
    """Body lines gathered into rows. A line goes on the row above when it is that row's wrapped text: its first
    cell empty, its other cells under ones whose line ran to the column's edge, not set further below than the
    table's closest lines (when its line pitches are of two kinds), no rule between. Any other line starts a row (a
    sub-row of a grouped table: "钙离子通道药物" with 普瑞巴林, then 加巴喷丁 below with its own grades)."""
    cells = [_line_cells(line, columns) for line in lines]
    tops = [statistics.median(float(c["top"]) for c in _body_chars(line)) for line in lines]
    pitches = [b - a for a, b in itertools.pairwise(tops)]
    closest = min(pitches, default=0.0)
    two_kinds = bool(pitches) and max(pitches) - closest > ROW_GAP * size
    rows: list[list[list]] = []
    for index, line_cells in enumerate(cells):
        above = cells[index - 1] if index else []
        wrapped = (
            bool(rows)
            and not line_cells[0]
            and all(_runs_to_edge(above[i], columns[i], size) for i, cell in enumerate(line_cells) if cell)
            and not (two_kinds and pitches[index - 1] > closest + ROW_GAP * size)
            and not any(tops[index - 1] < rule < tops[index] for rule in breaks)
        )
        if not wrapped:
            rows.append([[] for _ in columns])
        for row_cell, cell in zip(rows[-1], line_cells):
            row_cell.extend(cell)
    return [[_cell_text(cell, size) for cell in row] for row in rows]


def _runs_to_edge(cell: list, column: tuple[float, float], size: float) -> bool:
    """Whether a cell's text ends at its column's right edge, so that it may go on in the line below. A column too
    narrow for running text (a grade like "A1") never wraps: every cell of it ends at its edge."""
    full = [c for c in cell if _size(c) >= SUPERSCRIPT * size]
    return (
        bool(full)
        and column[1] - column[0] >= MIN_WRAP_WIDTH * size
        and max(float(c["x1"]) for c in full) >= column[1] - WRAP_MARGIN * size
    )


def _line_cells(line: list, columns: list[tuple[float, float]]) -> list[list]:
    """A line's characters by column. A superscript goes with the word it follows, whichever column its own middle
    falls in (a long citation can reach past the strip)."""
    size = _type_size(line)
    cells: list[list] = [[] for _ in columns]
    current = None
    for char in sorted(line, key=lambda c: float(c["x0"])):
        if current is None or _size(char) >= SUPERSCRIPT * size:
            current = _column_of((float(char["x0"]) + float(char["x1"])) / 2, columns)
        cells[current].append(char)
    return cells


def _cell_text(chars: list, size: float) -> str:
    """A cell's text, its lines joined as a paragraph's are."""
    return _join([_chars_text(line, size) for line in _char_lines(chars)]) if chars else ""


def _char_lines(chars: list) -> list[list]:
    """Characters gathered into printed lines, top to bottom. Full-size characters within LINE_TOLERANCE type sizes
    of a line's first share it (a Latin font's glyphs may sit lower than the Chinese ones); a smaller one (a
    citation's superscript "［95,98］", which may stand clear above its line) joins the first line that reaches down
    to its foot."""
    size = _type_size(chars)
    full = [c for c in chars if _size(c) >= SUPERSCRIPT * size]
    lines: list[list] = []
    for char in sorted(full, key=_middle):
        if lines and _middle(char) - _middle(lines[-1][0]) <= LINE_TOLERANCE * size:
            lines[-1].append(char)
        else:
            lines.append([char])
    if not lines:
        return [chars] if chars else []
    bottoms = [_line_bounds(line)[1] for line in lines]
    for char in chars:
        if _size(char) < SUPERSCRIPT * size:
            foot = float(char["bottom"]) - SUBSCRIPT_DROP * size
            lines[next((i for i, b in enumerate(bottoms) if b >= foot), len(lines) - 1)].append(char)
    return lines


def _line_bounds(line: list) -> tuple[float, float]:
    """Top and bottom of a line's body: its full-size Chinese characters, else its full-size ones (a superscript
    rises above the line; a Latin font's glyphs may sit lower than the Chinese ones)."""
    main = _body_chars(line)
    return min(float(c["top"]) for c in main), max(float(c["bottom"]) for c in main)


def _body_chars(line: list) -> list:
    size = _type_size(line)
    full = [c for c in line if _size(c) >= SUPERSCRIPT * size] or line
    return [c for c in full if "\u4e00" <= c["text"] <= "\u9fff"] or full


def _chars_text(chars: list, size: float) -> str:
    """Characters left to right as text: a space where they stand apart (words of Latin text, "表 6")."""
    ordered = sorted(chars, key=lambda c: float(c["x0"]))
    text = ordered[0]["text"] if ordered else ""
    for before, char in itertools.pairwise(ordered):
        text += (" " if float(char["x0"]) - float(before["x1"]) > WORD_SPACE * size else "") + char["text"]
    return join_cjk(clean_line(text))


def _size(char) -> float:
    return float(char.get("size") or 0.0)


def _type_size(chars: list) -> float:
    """The type size of a run of characters: the commonest among the full-size ones (superscripts are smaller and,
    in a table of cited evidence, may outnumber the text)."""
    largest = max((_size(c) for c in chars), default=0.0)
    sizes = Counter(round(_size(c), 1) for c in chars if _size(c) >= SUPERSCRIPT * largest)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _middle(char) -> float:
    return (float(char["top"]) + float(char["bottom"])) / 2


def _columns(page, tables: list | None = None) -> list:
    """The page's text columns, left to right: two when an empty vertical strip runs down its middle (a journal's
    two-column layout, which read line by line across the page would interleave both columns), else the page. The
    cells of its tables (their boxes) do not count: a table set across both columns fills the strip."""
    width, height = float(page.width), float(page.height)
    chars = [
        c
        for c in page.chars
        if not c["text"].isspace()
        and MARGIN * height < c["top"] < (1 - MARGIN) * height
        and not any(
            x0 <= c["x0"] and c["x1"] <= x1 and top <= c["top"] <= bottom for x0, top, x1, bottom in tables or []
        )
    ]
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
                    if item.caption:
                        builder.paragraph(item.caption)
                    builder.table(_captioned(item))
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


def _captioned(table: Table) -> list[list[str]]:
    """A captioned table's rows with the caption's title as their first cell ("表 6：糖尿病性周围神经病理性疼痛药物
    治疗推荐 | 治疗推荐：一线治疗药物 | …"): tables 5, 6 and 7 of a guideline may have the same columns and row
    names, and a row quoted alone must still say which table, and so which disease, it is about."""
    number = CAPTION.match(table.caption)
    title = table.caption[number.end() :].strip() if number else ""
    if not title or len(table.rows) < 2:
        return table.rows
    header, *rows = table.rows
    return [[number.group(0).strip(), *header], *[[title, *row] for row in rows]]


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


def _names_this_document(title: str, text: str, stem: str) -> bool:
    """A metadata title a person gave this document: not a tool's ("Microsoft Word - x.doc"), a link or a scrap
    ("file://H:\\edu\\edu12.htm", "1", "("), an item of a list ("C、体温变化"), nor one left in a template by
    another document ("A005糖尿病足部护理" on a retina leaflet): most of its words are in this document's text or
    file name."""
    if _looks_generated(title) or _LINK.match(title) or _ITEM_MARK.match(title):
        return False
    cjk = _CJK_RUN.findall(title)
    pairs = {run[i : i + 2] for run in cjk for i in range(len(run) - 1)}
    words = {w.lower() for w in _LATIN_WORD.findall(title)}
    if not pairs and not words:
        return False  # "1", "(": nothing that names anything
    where = f"{text}\n{stem}".lower()
    found = sum(p in where for p in pairs) + sum(w in where for w in words)
    return found >= TITLE_SHARE * (len(pairs) + len(words))


def _looks_generated(title: str) -> bool:
    """Titles that tools write into PDF metadata rather than people: "Microsoft Word - x.doc", "untitled"."""
    return bool(re.match(r"(microsoft\s+\w+\s*-|untitled|无标题|标题$|title$|document\d*$)", title, re.I)) or bool(
        re.search(r"\.(docx?|pdf|wps)$", title, re.I)
    )
