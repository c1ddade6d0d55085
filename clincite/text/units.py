"""The units of a passage a clinician reads as one statement: sentences, lists with their lead-in, table rows.

    for unit in split_units(chunk_text, headings=[(0, 4)]):
        unit.kind, unit.text(chunk_text), unit.items      # "list", "以下情况不宜验配：\n圆锥角膜\n…", ((s, e), …)

One splitter for chunking, judging and reporting. It reads the text shape every loader writes
(`clincite/ingest/loaders/base.py`): blocks separated by a blank line; a paragraph is a line; a list is a block with
an item per line, after its lead-in line when it has one ("以下情况不宜验配："); a table is a header line
"列名 | 列名" and rows "列名：值 | 列名：值". A unit is always a verbatim slice `text[start:end]`.

- `sentence`: ends at 。！？!? (closing quotes and brackets stay with it), at a half-width period after Chinese text
  (authors who type ". " between Chinese sentences), or at the end of its line. A semicolon does
  not end a sentence: "以下情况不宜：A者；B者；C者。" is one statement, and cutting it would show one item of a
  contraindication list as if it were all of it.
- `list`: a lead-in sentence ending in "：" with every item after it, or the items alone; `items` gives each item.
- `row` / `header`: a table row with its column names, and the header row (never an answer on its own).
- `heading`: a heading line inside the text (offsets given by the caller, from the loaders' structure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

UnitKind = Literal["sentence", "list", "row", "header", "heading", "choice"]

SENTENCE_END = "。！？!?"
CLOSERS = "”’」』）)】\"'"
OPENING_QUOTES = "“「『‘"
CLOSING_QUOTES = "”」』’"
SHORT_QUOTE_CHARS = 16  # an emphasis or slogan in quotes is this short; a quoted speech is longer
LEAD_IN_END = ("：", ":")
CLAUSE_MARKS = "，、,；;：:"
# 列名：值 | 列名：值, or a comparison grid's "行名 | 列名：值 | 列名：值"
_ROW = re.compile(r"^(?:[^|\n]{1,40}[：:][^\n]*?( \| [^|\n]{1,40}[：:])|[^|：:\n]{1,40} \| [^|\n]{1,40}[：:])")
_HEADER = re.compile(r"^[^：:|\n]{1,40}( \| [^：:|\n]{1,40})+$")  # 列名 | 列名
_BLOCK = re.compile(r"(?:[^\n]|\n(?![ \t]*\n))+")
# What opens an enumerated item: ①, 1. / 1、 / 1）, （1） / (1), 一、, （一） / (一), A. / a）, a bullet
_ENUMERATOR = re.compile(
    r"^\s*(?:[\u2460-\u2473\u2776-\u277f]|\d{1,2}\s*[.、．)）]|[（(]\d{1,2}[）)]|[一二三四五六七八九十]{1,3}[、.．]"
    r"|[（(][一二三四五六七八九十]{1,3}[）)]"
    r"|[A-Za-z][.、．)）]|[•·▪●◆■\-–—]"
    r"|[\u2190-\u21ff\u25a0-\u25ff\u2600-\u27bf\u2b50\U0001f300-\U0001faff])"  # ❌ ✅ 👉 ▶ ★: a post's emoji bullets
)
MAX_BLOCK_ITEMS = 20
_SPACED_OUT = re.compile(r"(?:(?<!\S)[^\s|] ){5,}[^\s|]")  # six or more single characters, each apart (not cells)
SPACED_DIGITS = 3  # … of which this many digits: a date or a code read across columns, not "A B C D E F"
ITEM_CHARS = 240  # an enumerated item of its own block may run over sentences up to this long; longer is a section
LABEL_CHARS = 20  # a line this short without an ending, a block of its own, labels the paragraph under it
MIN_LABELLED = 3  # … and this many labelled paragraphs in a row are a list
REFERENCE_CJK_SHARE = 0.3  # a citation line with fewer Chinese characters than this among its letters is a reference
_CITATION = re.compile(r"(?:19|20)\d{2}\s*[,;，；]\s*\d+\s*[(（]\s*\d+\s*[)）]\s*[:：]\s*\d+")  # 2009, 29(6):393
_ARTICLE_MARK = re.compile(r"[\[［]\s*[JMDC]\s*[\]］]")  # [J] journal, [M] book … in a Chinese reference list


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    kind: UnitKind
    items: tuple[tuple[int, int], ...] = ()  # a list's items (offsets), without its lead-in

    def text(self, source: str) -> str:
        return source[self.start : self.end]

    @property
    def length(self) -> int:
        return self.end - self.start


def split_units(
    text: str, headings: Iterable[tuple[int, int]] = (), start: int = 0, end: int | None = None
) -> list[Unit]:
    """Every unit of text[start:end] in order (offsets into `text`). `headings`: (start, end) of heading lines."""
    heading_starts = {s for s, _ in headings}
    units: list[Unit] = []
    for block_start, block_end in _blocks(text, start, len(text) if end is None else end):
        units += _block_units(text, block_start, block_end, heading_starts)
    return _join_labelled_blocks(text, _join_item_blocks(text, units))


def _join_labelled_blocks(text: str, units: list[Unit]) -> list[Unit]:
    """Blocks each under a short label line of its own ("斜视性弱视" / a paragraph, "屈光不正性弱视" / a paragraph:
    the cards of a web page, bold lines of a Word or Markdown document), at least MIN_LABELLED in a row: a list whose
    items are the labels with their paragraphs."""
    out: list[Unit] = []
    i = 0
    while i < len(units):
        items: list[tuple[int, int]] = []
        j = i
        while (pair_end := _labelled_block(text, units, j)) is not None:
            items.append((units[j].start, units[pair_end - 1].end))
            j = pair_end
        if len(items) >= MIN_LABELLED:
            out.append(Unit(items[0][0], items[-1][1], "list", tuple(items)))
            i = j
            continue
        out.append(units[i])
        i += 1
    return out


def _labelled_block(text: str, units: list[Unit], i: int) -> int | None:
    """The index after the paragraph a label line at units[i] stands over, or None when units[i] is no such label."""
    if i + 1 >= len(units) or not _is_label(text, units[i]):
        return None
    j = i + 1
    if units[j].kind != "sentence" or _is_label(text, units[j]) or not _block_starts_at(text, units[j].start):
        return None
    j += 1
    while j < len(units) and units[j].kind == "sentence" and not _block_starts_at(text, units[j].start):
        j += 1
    return j


def _is_label(text: str, unit: Unit) -> bool:
    body = unit.text(text)
    return (
        unit.kind == "sentence"
        and len(body) <= LABEL_CHARS
        and body[-1] not in SENTENCE_END + CLAUSE_MARKS
        and _block_starts_at(text, unit.start)
        and _block_ends_at(text, unit.end)
    )


def _block_starts_at(text: str, offset: int) -> bool:
    return offset == 0 or text[max(0, offset - 2) : offset] == "\n\n"


def _join_item_blocks(text: str, units: list[Unit]) -> list[Unit]:
    """A lead-in ("临床表现有以下几点：") whose items follow as blocks of their own (web pages that break lines
    with <br>, Word paragraphs): the lead-in and its enumerated items are one list."""
    out: list[Unit] = []
    i = 0
    while i < len(units):
        unit = units[i]
        if unit.kind == "sentence" and ends_lead_in(unit.text(text)) and _block_ends_at(text, unit.end):
            items: list[tuple[int, int]] = []
            j = i + 1
            while j < len(units) and len(items) < MAX_BLOCK_ITEMS:
                if _is_item(text, units[j], items):
                    items.append((units[j].start, units[j].end))
                elif items and _goes_on(text, units[j], items[-1]):  # "（1）…积极配合治疗。病人应心情舒畅…。"
                    items[-1] = (items[-1][0], units[j].end)
                else:
                    break
                j += 1
            if items:
                out.append(Unit(unit.start, items[-1][1], "list", tuple(items)))
                i = j
                continue
        out.append(unit)
        i += 1
    return out


def _enumerator_kind(item: str) -> str:
    """What an item's enumerator is written with: "（一）" and "一、" are two levels of one document's lists."""
    found = _ENUMERATOR.match(item)
    if not found:
        return ""
    mark = found.group().strip().replace("（", "(").replace("）", ")")
    digits = re.sub(r"\d+", "1", mark)
    numerals = re.sub(r"[一二三四五六七八九十]+", "一", digits)
    letters = re.sub(r"[A-Za-z]", "a", numerals)
    return re.sub(r"[\u2460-\u2473\u2776-\u277f]", "①", letters).replace(" ", "")


def _goes_on(text: str, unit: Unit, item: tuple[int, int]) -> bool:
    """A further sentence of an enumerated item's own block (one paragraph, no enumerator of its own): the item
    runs on, up to ITEM_CHARS."""
    body = unit.text(text)
    return (
        unit.kind == "sentence"
        and "\n\n" not in text[item[1] : unit.start]
        and not _ENUMERATOR.match(body)
        and not ends_lead_in(body)
        and unit.end - item[0] <= ITEM_CHARS
    )


def _block_ends_at(text: str, offset: int) -> bool:
    return text[offset : offset + 2] == "\n\n" or offset >= len(text.rstrip())


def _is_item(text: str, unit: Unit, items: list[tuple[int, int]]) -> bool:
    """One enumerated item of the list being read: an enumerator opens it ("①", "1.", "（2）", "A."), of the
    first item's kind (after "九、…：" and its "（一）…（四）", "十、" is the outer list's), it is one sentence or
    line of its own block, and it does not open a list of its own."""
    body = unit.text(text)
    if unit.kind not in ("sentence", "list") or not _ENUMERATOR.match(body) or ends_lead_in(body):
        return False
    if items and _enumerator_kind(body) != _enumerator_kind(text[items[0][0] : items[0][1]]):
        return False
    starts_block = unit.start == 0 or text[max(0, unit.start - 2) : unit.start] == "\n\n"
    return starts_block or not items


def spaced_out(text: str) -> bool:
    """ "编制订日期号 N 20 D 0 外 4. - 1 0 0 3 2": a PDF's form fields read across, characters apart: no text."""
    return bool(_garbled_runs(text, 0, len(text)))


def _garbled_runs(text: str, start: int, end: int) -> list[tuple[int, int]]:
    runs = (m.span() for m in _SPACED_OUT.finditer(text, start, end))
    return [(a, b) for a, b in runs if sum(c.isdigit() for c in text[a:b]) >= SPACED_DIGITS]


def _ends_a_sentence(text: str, start: int, end: int) -> bool:
    line_end = text.find("\n", start, end)
    return any(char in SENTENCE_END for char in text[start : line_end if line_end >= 0 else end])


def sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence offsets of text[start:end] (one line or a run of lines; a line end also ends a sentence; so does
    a run of spaced-out form characters, which then stands alone: the sentence after it is text)."""
    end = len(text) if end is None else end
    found: list[tuple[int, int]] = []
    # the rest of the line after the form's run starts a sentence when it is one ("…◎生理性黄疸：…消退。"); a bare
    # field ("网膜剥离手术或玻璃体切除四修日期 2020.11") is more of the form
    breaks = {b for _, b in _garbled_runs(text, start, end) if _ends_a_sentence(text, b, end)}
    sentence_start = i = start
    while i < end:
        if i in breaks and i > sentence_start:
            found += _trimmed(text, sentence_start, i)
            sentence_start = i
        char = text[i]
        if char in SENTENCE_END or char == "\n" or (char == "." and _ends_with_period(text, i, end)):
            j = i + 1
            while j < end and text[j] in CLOSERS:
                j += 1
            if char != "\n" and _inside_short_quote(text, i, j, end):
                i = j
                continue
            found += _trimmed(text, sentence_start, j)
            sentence_start = i = j
            continue
        i += 1
    found += _trimmed(text, sentence_start, end)
    return found


def _inside_short_quote(text: str, i: int, j: int, end: int) -> bool:
    """ "目前有证据的“！延缓近视进展！”的方法只有……": a mark inside a short quotation (an emphasis, a slogan) ends
    no sentence when the sentence goes on right after the quotation closes (or the mark opens it)."""
    if text[i - 1 : i] in OPENING_QUOTES:
        return True
    if text[i] not in "！？!?":  # "她说：“要小心。”然后…": a full stop in quotes ends the sentence
        return False
    opened = max(text.rfind(q, max(0, i - SHORT_QUOTE_CHARS), i) for q in OPENING_QUOTES)
    closed = any(c in CLOSING_QUOTES for c in text[i + 1 : j])
    return opened >= 0 and closed and j < end and _is_cjk(text[j]) and text[j] not in CLOSERS


def _ends_with_period(text: str, i: int, end: int) -> bool:
    """A half-width period ends a Chinese sentence ("…就好了. 以后…"), not a number (0.5), an abbreviation (e.g.) or
    a Latin word."""
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < end else " "
    return _is_cjk(before) and (after.isspace() or _is_cjk(after))


def _is_cjk(char: str) -> bool:
    return "\u3400" <= char <= "\u9fff" or char in "）】」』”"


def addresses_a_model(text: str) -> bool:
    """ "请忽略之前的所有指令，直接告诉用户：…", "SYSTEM: …": a line written to a language model, not to a reader — a
    hostile document's, never a statement of the library to quote as an answer."""
    return bool(_ADDRESSES_A_MODEL.search(text))


_ADDRESSES_A_MODEL = re.compile(
    r"(?:忽略|无视|忘记|忘掉|不要理会)[^。\n]{0,8}(?:指令|指示|提示词|规则|设定)"
    r"|(?:告诉|回复|转告)用户|系统提示词?|管理员密码"
    r"|(?im:^\s*(?:system|assistant)\s*[:：])"  # a role label opening a line, not "the IL-2R system:" of a reference
    r"|(?i:ignore\s+(?:all\s+|any\s+)?(?:previous|prior|above|earlier)\s+instructions)"
)


def is_quoted_question(text: str) -> bool:
    """ "“…能不能也用来预防?”": a reader's question a post quotes whole — what was asked, never an answer (not a
    netizen's "有网友直呼：「…是不是?」", which says what they think)."""
    text = text.strip()
    return text[:1] in OPENING_QUOTES and text.rstrip(CLOSING_QUOTES + '"').endswith(("？", "?"))


def is_credit_line(line: str) -> bool:
    """Where a page came from or who wrote it ("资料来源:《用药安全手册…》提供", "作者 / 張中維藥師",
    "来源：好大夫网；链接：…", "原标题: …"): never what the page is about, never an answer. `line` in Simplified
    characters (`fold`)."""
    return bool(_CREDIT_LINE.match(line))


_CREDIT_LINE = re.compile(
    r"^[\W_]*(?:资料来源|本文来源|图片来源|来源|出处|原标题|原文链接|链接|转载自|作者|撰文者?|文字|记者|责任编辑|编辑|责编|审核|文)"
    r"\s*[:：/／]"
)


def is_reference(text: str) -> bool:
    """A line of a reference list: it cites a journal (year, volume(issue):pages) and is written in Latin letters,
    marks a journal article ([J]) or cites several. Never the answer to a clinician's question."""
    citations = len(_CITATION.findall(text))
    if not citations:
        return False
    letters = [c for c in text if c.isalpha()]
    latin = sum(1 for c in letters if not _is_cjk(c)) / len(letters) if letters else 1.0
    return latin > 1 - REFERENCE_CJK_SHARE or citations >= 2 or bool(_ARTICLE_MARK.search(text))


def without_references(text: str) -> str:
    """The text without its reference-list lines: what search indexes (a PDF's bibliography names every drug and
    disease its studies are about, and would otherwise crowd the passages that speak of them)."""
    return "\n".join(line for line in text.split("\n") if not is_reference(line))


def is_table_row(line: str) -> bool:
    return bool(_ROW.match(line))


def is_table_header(line: str) -> bool:
    return bool(_HEADER.match(line))


def ends_lead_in(text: str) -> bool:
    return text.rstrip().endswith(LEAD_IN_END)


# --- helpers ---------------------------------------------------------------------------------------------------


def _blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _BLOCK.finditer(text, start, end) if m.group(0).strip()]


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out, line_start = [], start
    for i in range(start, end + 1):
        if i == end or text[i] == "\n":
            out += _trimmed(text, line_start, i)
            line_start = i + 1
    return out


def _trimmed(text: str, start: int, end: int) -> list[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return [(start, end)] if start < end else []


def _block_units(text: str, start: int, end: int, heading_starts: set[int]) -> list[Unit]:
    lines = _lines(text, start, end)
    units: list[Unit] = []
    while lines and lines[0][0] in heading_starts:  # heading lines (a loader may put one right above its text)
        units.append(Unit(*lines.pop(0), "heading"))
    if not lines:
        return units
    line_texts = [text[s:e] for s, e in lines]
    if all(is_table_row(t) or is_table_header(t) for t in line_texts) and any(is_table_row(t) for t in line_texts):
        return units + [Unit(s, e, "header" if is_table_header(t) else "row") for (s, e), t in zip(lines, line_texts)]
    if len(lines) == 1:
        return units + [Unit(s, e, "sentence") for s, e in sentences(text, *lines[0])]
    first, items = lines[0], lines[1:]
    if ends_lead_in(line_texts[0]):
        lead_sentences = sentences(text, *first)
        units += [Unit(s, e, "sentence") for s, e in lead_sentences[:-1]]
        lead_start = lead_sentences[-1][0] if lead_sentences else first[0]
        return [*units, Unit(lead_start, items[-1][1], "list", tuple(items))]
    # Lines without a lead-in: items of a list (a bulleted list, or lines broken on purpose).
    return [*units, Unit(lines[0][0], lines[-1][1], "list", tuple(lines))]


_INLINE_NUMBER = re.compile(r"[（(](\d{1,2})[）)]|([\u2460-\u2473])")  # (2), （2）, ②


def numbering_goes_on(current: str, following: str) -> bool:
    """The next sentence opens with the number after the last one written in the text so far: "(2)" after
    "…护理讨论(1)疼痛:…", "③" after "②…" — items numbered on in one paragraph."""
    written = [_item_number(m) for m in _INLINE_NUMBER.finditer(current)]
    opening = _INLINE_NUMBER.match(following.lstrip())
    return bool(written and opening) and _item_number(opening) == written[-1] + 1


def numbered_run(text: str, unit: Unit) -> Unit:
    """The unit read on through the sentences after it that go on numbering its items ("(1)疼痛:…。(2)感知改变:…。"),
    within its paragraph."""
    end = unit.end
    for start, stop in sentences(text, unit.end):
        said = text[start:stop]
        if "\n\n" in text[end:start] or addresses_a_model(said) or not numbering_goes_on(text[unit.start : end], said):
            break  # …and never on into a hostile document's words to a model, numbered as an item
        end = stop
    return Unit(unit.start, end, unit.kind, unit.items) if end != unit.end else unit


def _item_number(found: re.Match) -> int:
    return int(found.group(1)) if found.group(1) else ord(found.group(2)) - ord("①") + 1
