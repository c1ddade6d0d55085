"""What every loader produces: one clean text, its sections (heading paths) and, for paged formats, page offsets.

Loaders build documents through `DocumentBuilder`, so every format ends up in the same shape, the one
`clincite.text.units` reads back:
- a heading is a line of its own (no "#", no numbering added), recorded as a section;
- a paragraph is one line; blocks are separated by a blank line;
- a list is one block, one item per line, without its bullet (an item that ends a lead-in "以下情况不宜：" follows it);
- a table is one block, its header row "列名 | 列名" then one line per row "列名：值 | 列名：值";
- a page offset for the start of every page (PDF), from which the chunker derives each chunk's `pages`.
A document's own citation markers ("[1]", "[2-4]", "[^1]", "^1", "［1］", "【1】", "[来源：src1]") are not
passage text: they are removed here, for every format, so that a quote never carries them.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass, field


class SkipFile(Exception):
    """A file that cannot be ingested; the message (Chinese) is what the user sees."""


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
    # Offset in `text` where page i+1 begins (PDF only); None for formats without pages.
    page_starts: list[int] | None = None
    metadata: dict[str, str] = field(default_factory=dict)  # front matter, document properties (never passage text)

    def page_at(self, offset: int) -> int | None:
        """1-based page number of the character at `offset`, or None for formats without pages."""
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, offset))


# C0/C1 control characters other than tab and newline, zero-width characters and stray BOMs: they are invisible,
# break quote verification and pollute BM25 tokens.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200d\u2060\ufeff\ufffe]")
_TONED = "āáǎàēéěèīíǐìōóǒòūúǔùǖǘǚǜ"
# a syllable with its tone mark in brackets right after a Chinese character: 醫(yī)師, 視網(wǎng)膜
PINYIN_NOTE = re.compile(rf"(?<=[\u3400-\u9fff])[(（](?=[a-zü]*[{_TONED}])[a-zü{_TONED}]{{1,6}}[)）]")
_HAN = re.compile(r"[\u3400-\u9fff]")
PINYIN_NOTES_MIN = 2
# A document-sharing site's text of a slide deck or Word file: its paragraph marks come out as "Р" (Cyrillic Er)
# between Chinese characters, its bullets as "?" standing alone ("结膜炎的分类:? 1. 按发病快慢…")
_LOST_PARAGRAPH = re.compile(r"(?<=[\u3400-\u9fff])Р|Р(?=[\u3400-\u9fff])")
_LOST_BULLET = re.compile(r"(?<=[\s:：。；;])\?(?=\s)")
LOST_MARKS_MIN = 3  # this many of one kind in a document: a converter's, not a Russian word or a stray mark
PINYIN_NOTE_DENSITY = 0.01  # notes per Chinese character: a converter's pages have 2-5 in every hundred
_SPACES = re.compile(r"[ \t\u00a0\u3000\u2002-\u200a]+")
# A document's own reference markers. Numbers only (a bracketed word is text), or an explicit source label.
_MARKERS = re.compile(
    r"\[\^?\s*\d+(?:\s*[,，、\-‑–—~～]\s*\d+)*\s*\]"  # [1] [1,2] [2-4] [^1] [18~21]
    r"|［\s*\d+(?:\s*[,，、\-‑–—~～]\s*\d+)*\s*］|【\d+(?:\s*[,，、\-‑–—~～]\s*\d+)*】"  # full-width forms
    r"|(?<=[\u3400-\u9fff。，；、：）)\]”])\^\d+"  # a caret footnote after Chinese text or punctuation
    r"|[\[［【](?:来源|出处|引自|参考|source|ref)\s*[：:][^\]］】\n]{0,80}[\]］】]",  # [来源：src1]
    re.I,
)
LEAD_IN_ENDS = ("：", ":")
SENTENCE_END = tuple("。！？；!?;：:")
PAGE_NUMBER = re.compile(  # a line that is only a page's number: "12", "- 3 -", "第 4 页", "5/20", "Page 6 of 9"
    r"^[-—–·\s]*(第\s*)?\d{1,4}(\s*/\s*\d{1,4})?(\s*页)?(\s*共\s*\d+\s*页)?[-—–·\s]*$"
    r"|^(page\s*)?\d{1,4}(\s*of\s*\d{1,4})?$",
    re.I,
)
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")
ORDINAL_HEADING_CHARS = 30
_ORDINAL_1 = re.compile(r"^(?:第[一二三四五六七八九十百]+[章节部分篇]|[一二三四五六七八九十]{1,3}、)\s*\S")
_ORDINAL_2 = re.compile(r"^[（(][一二三四五六七八九十]{1,3}[）)]\s*\S")
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+(?=[。，；：、！？）])")
# A heading line that is really a sentence of the text (an outline or a note-taking app's export puts every line of a
# note in a heading): clause punctuation inside it, a label with a statement after its colon, or a long line.
_CLAUSE_MARK = re.compile(r"[，,；;。！？!?]|[：:]\s*\S{4}")
SENTENCE_HEADING_CHARS = 25
COLUMN_LABEL_CHARS = 12  # a line printed over a paper's title ("临床研究"), newlines included


def clean_text(text: str) -> str:
    """Newlines unified, control and zero-width characters removed (NFC so composed characters compare equal), a
    content farm's pinyin notes taken out of its words."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    text = unicodedata.normalize("NFC", _CONTROL.sub("", text))
    return _with_lost_marks_restored(_without_pinyin_notes(_SCRIPT_CALL.sub("", text)))


# "showPlayer({id:\"/pvservice/xml/….xml\",width:640,height:360}); 近年来,…": a web page's inline script call, its
# arguments an object literal, left in the text the page was saved as; no sentence is written that way
_SCRIPT_CALL = re.compile(r"(?<![\w$.])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\(\{[^{}\n]{0,500}\}\)[ \t]*;?[ \t]*")


def _with_lost_marks_restored(text: str) -> str:
    """ "结膜炎的分类:? 1. 按发病快慢…? 2. 按病因…Р结膜炎的常见体征": a slide deck as a document-sharing site gives its
    text, paragraph marks read as "Р" and bullets as "?", each a line break again where there are enough of them."""
    for lost in (_LOST_PARAGRAPH, _LOST_BULLET):
        if len(lost.findall(text)) >= LOST_MARKS_MIN:
            text = lost.sub("\n", text)
    return text


def _without_pinyin_notes(text: str) -> str:
    """ "遮蓋時(shí)間需要2個(gè)小時(shí)": pages re-posted through a script converter come with the reading of every
    character it was unsure of in brackets, inside the words, which then match no question and read badly in a quote.
    Taken out where they are that dense (a textbook's one "霰(xiàn)粒肿" in a paragraph stays)."""
    notes = PINYIN_NOTE.findall(text)
    if len(notes) < PINYIN_NOTES_MIN or len(notes) < PINYIN_NOTE_DENSITY * len(_HAN.findall(text)):
        return text
    return PINYIN_NOTE.sub("", text)


def clean_line(text: str) -> str:
    """One line of running text: runs of whitespace (including full-width and no-break spaces) become one space."""
    return _SPACES.sub(" ", clean_text(text).replace("\n", " ")).strip()


def join_cjk(text: str) -> str:
    """Letter-spaced Chinese ("经 颅 直 流", a justified line of a PDF) as it reads: no space between two Chinese
    characters."""
    return _CJK_SPACE.sub("", text)


def ordinal_heading_level(line: str) -> int:
    """1 for "一、概述" / "第二章 …", 2 for "（一）诊断": a Chinese ordinal that opens a short line without sentence
    punctuation heads a section in any Chinese document (0 otherwise). Arabic numbering ("1.", "(1)") is left
    alone: it numbers list items as often as sections."""
    line = line.strip()
    if len(line) > ORDINAL_HEADING_CHARS or line.endswith(("。", "；", "，", "：", ".", ";", ",", ":")):
        return 0
    if _ORDINAL_1.match(line):
        return 1
    if _ORDINAL_2.match(line):
        return 2
    return 0


def reads_as_sentence(heading: str) -> bool:
    """A heading line that says something rather than names a part: "一層透明的黏膜，覆蓋於眼瞼內側",
    "血管供應：來自前睫狀動脈" (not "病因与诊断", "非特異性症狀：")."""
    return len(heading) >= SENTENCE_HEADING_CHARS or bool(_CLAUSE_MARK.search(heading.rstrip("：: ")))


def strip_markers(text: str) -> str:
    """Remove a document's own citation markers (see the module docstring) and the space they leave before
    punctuation."""
    if not any(c in text for c in "[［【^"):
        return text
    return _SPACE_BEFORE_PUNCT.sub("", _MARKERS.sub("", text))


def table_lines(rows: list[list[str]]) -> list[str]:
    """Table rows as lines a clinician and BM25 can both read: "列名：值 | 列名：值", one line per row.

    The header row is repeated into every row, so a retrieved row still says what each value means. Tables without
    a usable header row (one column, or empty header cells) are written as "值 | 值".
    """
    rows = [[strip_markers(clean_line(c or "")) for c in row] for row in rows]
    rows = [row for row in rows if any(row)]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    header = rows[0]
    if width > 2 and len(rows) > 1 and not _CORNER.sub("", header[0]) and _named_columns(header[1:]):
        # A comparison grid: its corner empty (or "\\"), a name over each column and a label before each row —
        # "诱因 | 细菌性角膜炎：外伤、异物 | 真菌性角膜炎：植物性外伤" keeps both what a value is and whose
        lines = [" | ".join(header[1:])]
        for label, *values in rows[1:]:
            cells = [f"{name}：{value}" for name, value in zip(header[1:], values) if value]
            if cells:
                lines.append(" | ".join([label, *cells] if label else cells))
        return lines
    has_header = width > 1 and len(rows) > 1 and _named_columns(header)
    if not has_header:
        return [" | ".join(c for c in row if c) for row in rows]
    lines = [" | ".join(header)]
    for row in rows[1:]:
        cells = [f"{name}：{value}" for name, value in zip(header, row) if value]
        if cells:
            lines.append(" | ".join(cells))
    return lines


_CORNER = re.compile(r"[\s\\/|—–_-]+")  # what a grid's corner cell holds when it names nothing


def _named_columns(header: list[str]) -> bool:
    return all(header) and len(set(header)) == len(header)


@dataclass
class DocumentBuilder:
    """Accumulates headings, paragraphs and tables into one text with sections and page offsets."""

    fallback_title: str
    title: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    parts: list[str] = field(default_factory=list)
    length: int = 0
    sections: list[Section] = field(default_factory=list)
    path: list[tuple[int, str]] = field(default_factory=list)
    page_starts: list[int] | None = None
    _section_start: int = 0
    _heading_start: int | None = None
    _pending_pages: int = 0
    _says_something: bool = False  # a paragraph, list or table, or a heading line that reads as a sentence

    def _append(self, block: str) -> int:
        """Add a block after a blank line; returns the block's start offset."""
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self._page_begins_here()
        self.parts.append(block)
        self.length += len(block)
        return start

    def start_page(self) -> None:
        """The next text added begins a new page (PDF); an empty page starts where the next text does."""
        if self.page_starts is None:
            self.page_starts = []
        self._pending_pages += 1

    def _page_begins_here(self) -> None:
        while self._pending_pages:
            self.page_starts.append(self.length)
            self._pending_pages -= 1

    def heading(self, level: int, text: str) -> None:
        text = strip_markers(clean_line(text))
        if not text:
            return
        if self.path and self.path[-1][0] >= level:
            self._text_if_leaf()
        self._close_section()
        if level <= 1 and not self._before_title() and self.title in (None, text):
            # The document's own title line: kept in the text, but it heads no section (as a Markdown "# title").
            self.title = text
            self._append(text)
            self.path = []
            self._heading_start = None
        else:
            self.path = [(lv, h) for lv, h in self.path if lv < level] + [(level, text)]
            self._heading_start = self._append(text)
        self._section_start = self.length

    def section_break(self) -> None:
        """A new section under the same headings (a record's next field, named only for programs)."""
        if self.length == self._section_start:
            return
        self._close_section()
        self._section_start = self.length
        self._heading_start = None

    def close_headings(self, level: int) -> None:
        """What follows stands under none of the headings of `level` or deeper (a file's next record, which the
        question a chat record's last turn asked does not head)."""
        if not any(lv >= level for lv, _ in self.path):
            self.section_break()
            return
        if self.path[-1][0] >= level:
            self._text_if_leaf()
        self._close_section()
        self.path = [(lv, h) for lv, h in self.path if lv < level]
        self._section_start = self.length
        self._heading_start = None

    def paragraph(self, text: str) -> None:
        """A paragraph; a line break its author put inside it (Word's Shift+Enter, a Markdown hard break) stays."""
        text = "\n".join(
            line for line in (strip_markers(_one_line(line)) for line in clean_text(text).split("\n")) if line
        )
        if text:
            self._says_something = True
            self._append(text)

    def list_items(self, items: list[str]) -> None:
        """A list: one block, one item per line, bullets already gone."""
        lines = [line for line in (strip_markers(_join_lines(clean_text(item))) for item in items) if line]
        self._says_something = self._says_something or bool(lines)
        if lines and self.parts and self.parts[-1].rstrip().endswith(LEAD_IN_ENDS) and "\n" not in self.parts[-1]:
            # The list of a lead-in ("以下情况不宜验配：") is read with it: one block, the lead-in its first line.
            self.parts[-1] += "\n" + "\n".join(lines)
            self.length += 1 + len("\n".join(lines))
            return
        if lines:
            self._append("\n".join(lines))

    def table(self, rows: list[list[str]]) -> None:
        lines = table_lines(rows)
        if lines:
            self._says_something = True
            self._append("\n".join(lines))

    def continue_paragraph(self, text: str) -> None:
        """Append to the last paragraph without a break (a sentence that runs over a page end)."""
        text = strip_markers(_join_lines(clean_text(text)))
        if not text:
            return
        self._says_something = True
        if not self.parts:
            self._append(text)
            return
        joiner = " " if _needs_space(self.parts[-1][-1:], text[:1]) else ""
        self.parts[-1] += joiner
        self.length += len(joiner)
        self._page_begins_here()
        self.parts[-1] += text
        self.length += len(text)

    def _has_body(self) -> bool:
        return self.length > 0

    def _before_title(self) -> bool:
        """Text stands before where a title could: more than a journal's column label ("临床研究", "论著", "综述")
        that a paper's first page prints over its title."""
        if self.title is not None or not self._has_body():
            return self._has_body()
        return self.length > COLUMN_LABEL_CHARS

    def _text_if_leaf(self) -> None:
        """The last heading heads nothing (no text under it, the next heading is no deeper): it is a line of its
        parent section's text, so it can be found, judged and quoted like any other — an outline export makes every
        line a heading, and an empty section would take its text out of every passage."""
        if self.length != self._section_start:
            return
        self._says_something = self._says_something or reads_as_sentence(self.path[-1][1])
        self.path = self.path[:-1]
        parent = self.sections[-1] if self.sections else None
        if parent is not None and parent.heading_path == [h for _, h in self.path]:
            self.sections.pop()
            self._section_start, self._heading_start = parent.start, parent.heading_start
        elif self._heading_start is not None:
            # the parent's own text was closed by an earlier heading: the line opens a section of the parent's
            self._section_start, self._heading_start = self._heading_start, None

    def _close_section(self) -> None:
        self.sections.append(Section([h for _, h in self.path], self._section_start, self.length, self._heading_start))

    def build(self) -> LoadedDocument:
        if self.path:
            self._text_if_leaf()
        self._close_section()
        self._page_begins_here()  # trailing empty pages start at the end
        text = "".join(self.parts)
        self.sections = [part for section in self.sections for part in _by_listed_topics(text, section)]
        # A file of labels only ("## 标题1" … "## 标题2000") has no body: no passage, and it is skipped as empty
        sections = [s for s in self.sections if text[s.start : s.end].strip()] if self._says_something else []
        return LoadedDocument(self.title or self.fallback_title, text, sections, self.page_starts, dict(self.metadata))


def _by_listed_topics(text: str, section: Section) -> list[Section]:
    """A health portal's answer opens with a sentence that lists what its paragraphs then take in turn ("干眼症可能由
    泪液分泌不足、泪液蒸发过快、睑板腺功能障碍、自身免疫性疾病等原因引起…"), and the third paragraph, "油脂分泌异常导致
    泪膜不稳定…需进行热敷按摩", never names 睑板腺功能障碍 again. Where a section's first paragraph lists N topics and
    N paragraphs follow (one more may close the answer), each paragraph is headed by its topic, as a label over it
    would (a section with no line of its own); the rest of the section stays as it was."""
    blocks = [(m.start(), m.end()) for m in _BLOCK.finditer(text, section.start, section.end)]
    if len(blocks) < 1 + MIN_LISTED_TOPICS:
        return [section]
    topics = _listed_topics(text[blocks[0][0] : blocks[0][1]])
    body = blocks[1:]
    if not topics or len(body) not in (len(topics), len(topics) + 1):
        return [section]
    taken = [text[start:end] for start, end in body[: len(topics)]]
    if not all(_plain_paragraph(paragraph) for paragraph in taken):
        return [section]
    if any(paragraph.startswith(topic) for topic in topics for paragraph in taken):
        return [section]  # paragraphs that open with a topic's name say themselves which they are on
    placed = zip(topics, taken)
    if any(other in paragraph and topic not in paragraph for topic, paragraph in placed for other in topics):
        return [section]  # one on another topic than its place says: they do not follow the list
    path = section.heading_path
    parts = [Section(path, section.start, blocks[0][1], section.heading_start)]
    parts += [Section([*path, topic], start, end) for topic, (start, end) in zip(topics, body)]
    if len(body) > len(topics):
        parts.append(Section(path, body[-1][0], section.end))
    return parts


def _listed_topics(paragraph: str) -> list[str]:
    """The topics a paragraph lists as "A、B、C等…" or after 包括/分为/由/通过… ("它们在病因、症状、病程、治疗方法以及
    预后等方面"): MIN_LISTED_TOPICS to MAX_LISTED_TOPICS short, distinct names; [] for none."""
    for run in _LISTED.finditer(paragraph):
        items = run.group("items").split("、")
        opened = _LIST_OPENER.search(items[0])
        closed = "等" in items[-1]
        if not (opened or closed):
            continue
        if opened:
            items[0] = items[0][opened.end() :]
        items[-1] = items[-1].split("等")[0]
        items[-1:] = re.split("以及|及|和|与|或", items[-1])
        items = [item.strip() for item in items]
        if (
            MIN_LISTED_TOPICS <= len(items) <= MAX_LISTED_TOPICS
            and all(MIN_TOPIC_CHARS <= len(item) <= MAX_TOPIC_CHARS and _NAME.fullmatch(item) for item in items)
            and len(set(items)) == len(items)
        ):
            return items
    return []


def _plain_paragraph(block: str) -> bool:
    """One line of running text, not a list, a table row, nor a paragraph with a number or a label of its own
    ("1.养成…", "第十条…", "营养因素：…", "气道管理。根据…")."""
    return (
        "\n" not in block
        and " | " not in block
        and len(block) >= MIN_TOPIC_PARAGRAPH_CHARS
        and not _OWN_LABEL.match(block)
    )


_BLOCK = re.compile(r"[^\n]+(?:\n[^\n]+)*")
_LISTED = re.compile(r"(?P<items>[^、，,。；;：:！？!?\n]{1,24}(?:、[^、，,。；;：:！？!?\n]{1,24}){2,})")
_NAME = re.compile(r"[\u4e00-\u9fffA-Za-z0-9]+")
_OWN_LABEL = re.compile(
    r"^\s*(?:[(（]?[\d一二三四五六七八九十]{1,3}[.、．)）]|第[一二三四五六七八九十百\d]+[条章节]|[^，,。；;：:]{1,12}[：:]"
    r"|[^，,。；;：:]{1,8}[。])"
)
_LIST_OPENER = re.compile(r".*(?:包括|包含|分为|主要有|常见有|由于|由|通过|采用|涉及|在|有|如)")
MIN_LISTED_TOPICS = 3
MAX_LISTED_TOPICS = 8
MIN_TOPIC_CHARS = 2
MAX_TOPIC_CHARS = 12
MIN_TOPIC_PARAGRAPH_CHARS = 20


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def join_lines(lines: list[str]) -> str:
    """Lines wrapped from one paragraph as one line: no space between Chinese characters, one between Latin words."""
    return _join_lines("\n".join(lines))


def _join_lines(text: str) -> str:
    """The lines of one paragraph as one line: no space between Chinese characters, one between Latin words."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    joined = ""
    for line in lines:
        if not line:
            continue
        joined += (" " if joined and _needs_space(joined[-1], line[0]) else "") + line
    return joined


def _needs_space(before: str, after: str) -> bool:
    """Latin words wrapped over a line need a space between them; Chinese text never does."""
    return (
        bool(before) and bool(after) and before.isascii() and after.isascii() and before.isalnum() and after.isalnum()
    )


def is_cjk(char: str) -> bool:
    return (
        "\u3400" <= char <= "\u9fff"
        or "\uf900" <= char <= "\ufaff"
        or "\u3000" <= char <= "\u303f"
        or "\uff00" <= char <= "\uffef"
    )
