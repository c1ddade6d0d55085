"""Plain text: charset detection (every text format reads its bytes through `decode_text`) and the structure a
plain text carries: its lines, Chinese-numbered headings ("一、概述", "（二）治疗"), and for text copied out of a PDF
(a guideline saved as .txt) its wrapped lines, page numbers and letter-spaced lines put back together."""

from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass
from itertools import pairwise

from clincite.ingest.loaders.base import (
    PAGE_NUMBER,
    SENTENCE_END,
    DocumentBuilder,
    LoadedDocument,
    SkipFile,
    clean_line,
    clean_text,
    join_lines,
    ordinal_heading_level,
)
from clincite.ingest.loaders.insert import insert_fields, write_insert
from clincite.text.choices import opens_a_part
from clincite.text.script import fold
from clincite.text.units import is_credit_line

# Byte-order marks, longest first (the UTF-32-LE mark begins with the UTF-16-LE one).
BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
]
MAX_CHAOS = 0.2  # charset-normalizer's "mess" ratio above which a guess is not trusted
# Encodings a clinic's Chinese files come in; detection is limited to them (and what they contain), so a Big5 file
# is not read as some Cyrillic code page that happens to decode it.
CANDIDATES = ["utf_8", "gb18030", "big5", "big5hkscs", "cp950", "utf_16", "utf_32", "gbk", "gb2312", "ascii"]


def decode_text(data: bytes) -> str:
    """Bytes → text: a BOM decides; else strict UTF-8; else charset-normalizer among Chinese encodings.

    A file whose encoding cannot be told with confidence is skipped with a reason rather than indexed as garbage.
    """
    for bom, encoding in BOMS:
        if data.startswith(bom):
            try:
                return clean_text(data[len(bom) :].decode(encoding))
            except UnicodeDecodeError as exc:
                raise SkipFile(
                    f"看起来是二进制或已损坏的文件：以 {encoding.upper()} 字节序标记开头，"
                    f"但内容无法按此解码 "
                    f"(binary or corrupt {encoding})"
                ) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text[:4096]:
        return clean_text(text)
    from charset_normalizer import from_bytes

    best = from_bytes(data[:200_000], cp_isolation=CANDIDATES).best()
    if best is None or best.chaos > MAX_CHAOS:
        if b"\x00" in data[:8192]:
            raise SkipFile("看起来是二进制文件，不是文本 (binary content)")
        raise SkipFile(
            "无法解码：识别不出可靠的文本编码（支持 UTF-8/UTF-16/UTF-32、GB18030、Big5），请另存为 UTF-8 "
            "后重试 (encoding not detected with confidence)"
        )
    try:
        return clean_text(data.decode(best.encoding))
    except (UnicodeDecodeError, LookupError) as exc:
        raise SkipFile(f"无法按检测到的编码 {best.encoding} 解码 (undecodable text)") from exc


WRAP_PERCENTILE = 0.8  # the width of a wrapped text's lines: this percentile of its lines' widths
FULL_LINE = 0.8  # a line this share of that width wide reached the right margin
WRAPPED_SHARE = 0.3  # a text in which this share of the lines run on into the next was hard-wrapped
MIN_WRAPPED_LINES = 3  # … and at least this many (a short note of a few long sentences is not)
MAX_OPENING_COMMAS = 2  # a title has at most one comma; a line of keywords strung with commas is no heading
NAMED_PAIRS = 2  # … or two, when it shares this many pairs of characters with the file's name (a post's title)
_COMMAS = re.compile("[,，]")
MAX_OPENING_WIDTH = 60  # display columns: a first line this short that is no sentence heads the text after it
MIN_WRAP_WIDTH = 30  # display columns (a Chinese character is 2): narrower "lines" are a list, not wrapped text
MAX_WRAP_WIDTH = 200  # … and wider ones are paragraphs, one per line: nobody wraps at 100 Chinese characters
BODY_CJK_SHARE = 0.5  # a line at least this much Chinese is body text (the wrap width is read from those) …
BODY_SHARE = 0.3  # … when they are this share of the lines or more
FRAGMENT_WIDTH = 12  # a text whose median line is this narrow was cut at every inline tag of a web page
LETTER_SPACED = 0.5  # a line with a space after this share of its Chinese characters was justified (a full line)
# In a letter-spaced line every space next to Chinese text is the justification's ("我 国 5 岁", "（ MPP ）")
_CHINESE = "\u4e00-\u9fff\u3000-\u303f\uff00-\uffef"  # Han characters and full-width punctuation
_SPACE_BY_CHINESE = re.compile(f"(?<=[{_CHINESE}]) | (?=[{_CHINESE}])")
_STRAY_PUNCTUATION = re.compile(r"^[。．，、；：！？）」』”’)\]]{1,3}$")
_LINE_BREAK_TAG = re.compile(r"[ \t]*<br\s*/?>[ \t]*", re.I)
_ITEM_START = re.compile(r"^(?:[（(]\d{1,2}[）)]|\d{1,2}[.、．](?!\d)|[\u2460-\u2473\u2776-\u277f])")
# A key of a key-value file (YAML, .properties, a web site's strings): a name for programs, before ":" or "="
_KEY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s?[:=](?:\s+|$)")
# … a name only a program gives ("service_cataract_text1", "btn2", "iolTable"); "VA: 0.8" is a label for people
_MACHINE_NAME = re.compile(r"[_\d]|[a-z][A-Z]")
_BLOCK_MARK = {"|", ">", "|-", ">-", "|+", ">+"}  # YAML: the value is on the lines that follow
KEYED_SHARE = 0.6  # a text with this share of its lines keyed by program names is a key-value file …
MIN_KEYED_LINES = 5  # … when it has at least this many
# A text written as fields its labels name (a drug monograph's "适应证:…", "用法用量:…"; a form): the label heads its
# field as a section's heading heads its text, and says what the field is about, which the field seldom repeats
_FIELD_LINE = re.compile(r"^\s*([^\s：:，,。；;！？!?、（）()\[\]【】<>《》\d]{2,8})\s*[：:](?!//)\s*(.*)$")
MIN_FIELDS = 3
FIELD_SHARE = 0.5  # … at least this share of the text's lines (a name line before them aside) open with a label …
DISTINCT_FIELDS = 0.8  # … and its labels do not repeat: a transcript's speakers do (病人：/医生：), a form's fields not
SHORT_FIELD_CHARS = 40  # a field this short and no sentence stays one line "英文名：Lodoxamide"
MAX_QUESTION_WIDTH = 80  # display columns: a question line this short, its answer on the lines after, heads them …
MIN_ASKED_LINES = 2  # … in a text with at least this many (an FAQ, a patient handout), not one rhetorical question
LABEL_LEVEL = 2  # the heading level of a bare label over a run of questions; each question one level below
_QUESTION_END = ("？", "?")
_SECTION_LABEL = re.compile(r"^[^\s：:，,。；;！？!?、（）()]{2,8}\s*[：:]$")  # "症状:" alone on its line


def plain_document(text: str, title: str) -> LoadedDocument:
    """A plain text: one paragraph per line, or per paragraph of wrapped lines; Chinese-numbered lines head
    sections. The file name stays the title (a text's first line is as often a notice's heading as its title)."""
    # a web page's "<br />" kept in the text it was saved as is a line break (an HTML page's own are its parser's)
    cleaned = clean_text(_LINE_BREAK_TAG.sub("\n", text))
    if _values_of_keyed_lines(cleaned) is None:  # a key-value file's "q1: \"Q:" keys are not noise
        cleaned = without_jammer(cleaned)
    fields = labelled_fields(cleaned)
    if fields is not None:
        builder = DocumentBuilder(title, title=title)
        write_fields(builder, fields, level=2)
        return builder.build()
    if (insert := insert_fields(cleaned)) is not None:
        builder = DocumentBuilder(title, title=title)
        write_insert(builder, *insert)
        return builder.build()
    values = _values_of_keyed_lines(cleaned)
    lines = [_line(raw) for raw in (values or cleaned).split("\n")]
    lines = _with_stray_punctuation_joined([line for line in lines if not (line.text and PAGE_NUMBER.match(line.text))])
    lines = _glossary_terms_split_off(lines)
    width = _wrap_width(lines)
    fragmented = not width and not values and _fragmented(lines)  # a key-value file's short values are its cells
    builder = DocumentBuilder(title, title=title)
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            builder.paragraph(join_lines(paragraph))
            paragraph.clear()

    opening = _opening_heading(lines, width, title)
    asked = _asked_lines(lines, width)
    numbered = _numbered_headings(lines)
    labels = _list_labels(lines, width)
    terms = _glossary_terms(lines)
    points = _numbered_points(lines, width)
    point_names = set(points.values())
    for index, line in enumerate(lines):
        if index == opening:
            flush()  # a page's chrome above the line that names its subject stays before it
            builder.heading(1, line.text)
            continue
        if index in asked:
            flush()
            builder.heading(asked[index], _label(line.text) if asked[index] == LABEL_LEVEL else line.text)
            continue
        # A numbered line filling the width is an item wrapping on ("（三）CRP、LDH…明显升高，出现的时"), not a heading
        level = ordinal_heading_level(line.text) if line.text and not (width and _full(line, width)) else 0
        if not level and index in numbered:  # under the entry's name, where its first line names it
            level = numbered[index] + (opening is not None)
        if not level and index in labels and index != opening:
            level = 1 + (opening is not None and opening < index)
        if not level and index in terms:
            level = 1 + (opening is not None and opening < index)
        if not level and index in points:
            level = 1 + max((lv for lv, heading in builder.path if heading not in point_names), default=0)
        if not line.text or level or (paragraph and (_ITEM_START.match(line.text) or opens_a_part(line.text))):
            flush()
        if level:
            builder.heading(level, line.text)
        elif line.text:
            paragraph.append(line.text)
            wraps_on = (width and _full(line, width)) or (fragmented and not line.text.endswith(SENTENCE_END))
            if not wraps_on or _ends_table_row(line.text):
                flush()
    flush()
    return builder.build()


def _ends_table_row(text: str) -> bool:
    """ "學名 | HYDROXYPROPYLMETHYLCELLULOSE… |": a table row a web page's text keeps its cells' bars in ends at its
    last bar, however wide it runs; the next line is the next row (not "text2: |", a YAML block's marker)."""
    stripped = text.rstrip()
    if not stripped.endswith("|"):
        return False
    cells = stripped[:-1].split("|")
    return len(cells) >= 2 and bool(cells[-1].strip())


def _numbered_headings(lines: list[_Line]) -> dict[int, int]:
    """An encyclopedia entry's numbered section lines as a wiki exports them ("3 概述", "4.1 裂孔的分布"): a number,
    a space and a short name alone on a line, at least MIN_NUMBERED_HEADINGS of them top-level, their numbers
    going up and each with text of its own under it. Each heads its section, one level down per dot; "1." and
    "1、" number list items and are left alone. {line index: heading level}; {} for any other text."""
    found = {i: m for i, line in enumerate(lines) if (m := _NUMBERED_HEADING.match(line.text))}
    tops = [int(m.group("top")) for m in found.values() if not m.group("sub")]
    # A paper's "2.1 体位的护理", "2.2 饮食的护理": numbers with a dot inside head sections however few top ones the
    # text (often cut short) still shows
    dotted = sum(bool(m.group("sub")) for m in found.values())
    if max(len(tops), dotted) < MIN_NUMBERED_HEADINGS or tops != sorted(tops) or len(set(tops)) != len(tops):
        return {}
    filled = [i for i, line in enumerate(lines) if line.text]
    after = dict(pairwise(filled))
    if any(after.get(i) is None or _runs_on(m, found.get(after[i])) for i, m in found.items()):
        return {}  # "1 阿托品滴眼液" / "2 人工泪液" one under another: a list's items, no section's heading
    return {i: 1 + m.group("sub").count(".") for i, m in found.items()}


def _runs_on(numbered: re.Match, following: re.Match | None) -> bool:
    """A numbered line followed at once by another that is not its own first subsection ("2 术后护理" → "2.1 体位的
    护理"): the two are items of one list."""
    if following is None:
        return False
    number = numbered.group("top") + numbered.group("sub")
    return not (following.group("top") + following.group("sub")).startswith(number + ".")


# "3 概述", "4.1 裂孔的分布": a number (dots between its parts), one space, a name of a few words, nothing after
_NUMBERED_HEADING = re.compile(
    r"^(?P<top>\d{1,2})(?P<sub>(?:\.\d{1,2}){0,2}) (?=\S)[^\d\s。，、；：！？,.;:!?()（）]{2,16}$"
)
MIN_NUMBERED_HEADINGS = 3


def _glossary_terms(lines: list[_Line]) -> set[int]:
    """A glossary's numbered terms, each alone on its line over its definition ("7.远视:" then "当调节静止时,平行光线…
    为远视。"), as study notes list 名词解释: the term heads what defines it. Set of line indices; empty unless the text
    has MIN_GLOSSARY_TERMS of them, each followed by a line of text that is not another."""
    filled = [i for i, line in enumerate(lines) if line.text]
    terms = {
        here
        for here, after in pairwise(filled)
        if _GLOSSARY_TERM.match(lines[here].text) and not _GLOSSARY_TERM.match(lines[after].text)
    }
    return terms if len(terms) >= MIN_GLOSSARY_TERMS else set()


def _glossary_terms_split_off(lines: list[_Line]) -> list[_Line]:
    """In a glossary, a term a converter ran onto the end of the last definition ("…为近视。 9.弱视:") goes on a line
    of its own, over the definition it heads."""
    if not _glossary_terms(lines):
        return lines
    split = []
    for line in lines:
        glued = _GLUED_TERM.match(line.text)
        split += [_Line(glued.group(1), line.spaced), _Line(glued.group(2), False)] if glued else [line]
    return split


# "7.远视:", "1 0.\"斜视:" (a number a converter spaced out and a stray quote), "3、屈光参差："
_TERM = r'\d(?: ?\d)?[.、．]\s*\\?["“]?\s*[^\s：:，,。；;！？!?、]{1,12}\s*[：:]'
_GLOSSARY_TERM = re.compile(rf"^{_TERM}$")
_GLUED_TERM = re.compile(rf"^(.*[。！？!?])\s+({_TERM})$")  # "…为近视。 9.弱视:"
MIN_GLOSSARY_TERMS = 3


def _numbered_points(lines: list[_Line], width: int) -> dict[int, str]:
    """The numbered points of a post or handout, each a short line over paragraphs of its own ("1. 不要依赖网红眼药水!"
    then "我的经历: …", "为什么不行: …"; "2、增加户外活动" then what to do): each heads the text under it, as a
    section's heading would, so a passage cut from the middle of a point still says which point it is. Runs numbered
    1, 2, 3 … in order, at least MIN_POINTS long; a list whose items follow one another line by line is left alone,
    as is a hard-wrapped text (its numbered lines are wrapped items). {line index: line text}."""
    if width:
        return {}
    filled = [i for i, line in enumerate(lines) if line.text]
    after = dict(pairwise(filled))
    numbered = {i: m for i in filled if (m := _POINT.match(lines[i].text))}
    candidates = [
        i
        for i, m in numbered.items()
        if _display_width(m.group("text")) <= MAX_POINT_WIDTH
        and (nxt := after.get(i)) is not None
        and nxt not in numbered
        and not _ITEM_START.match(lines[nxt].text)
        and not _BULLET.match(lines[nxt].text)
    ]
    points: dict[int, str] = {}
    run: list[int] = []
    for i in [*candidates, None]:
        if i is not None and int(numbered[i].group("number")) == len(run) + 1:
            run.append(i)
            continue
        if len(run) >= MIN_POINTS:
            points.update((j, lines[j].text) for j in run)
        run = [i] if i is not None and int(numbered[i].group("number")) == 1 else []
    return points


_POINT = re.compile(r"^(?P<number>0?[1-9]|[1-9]\d)[.、．](?!\d)\s*(?P<text>\S.*)$")
MAX_POINT_WIDTH = 60  # display columns: a point's name or claim, not a paragraph that happens to be numbered
MIN_POINTS = 2


def _list_labels(lines: list[_Line], width: int) -> set[int]:
    """The short lines each over a bulleted list ("清潔原則" then "• 手術後二星期內…", "日常注意事項" then its
    bullets): a handout's section names, where it has at least two. Set of line indices."""
    filled = [i for i, line in enumerate(lines) if line.text]
    labels = {
        here
        for here, after, then in zip(filled, filled[1:], filled[2:])
        if _BULLET.match(lines[after].text)
        and _BULLET.match(lines[then].text)  # a list of two items at least, not a table's cell over a value
        and not _BULLET.match(lines[here].text)
        and not _ITEM_START.match(lines[here].text)
        and _HAN_PAIR.search(lines[here].text)  # a table's stray "|" names nothing
        and _display_width(lines[here].text) <= MAX_LABEL_WIDTH
        and not lines[here].text.endswith((*SENTENCE_END, "，", ",", "；", ";"))
        and not (width and _full(lines[here], width))
    }
    return labels if len(labels) >= MIN_LIST_LABELS else set()


_BULLET = re.compile(r"^(?:[•·●○◆◇■□▪▸►]\s*|[-*–]\s+)\S")  # "-->返回主站" is no item
MAX_LABEL_WIDTH = 20  # display columns: "回診時請攜帶", "手術前檢查項目", a section's name, not a sentence
MIN_LIST_LABELS = 2  # a text with two or more such labels has sections; one alone is a lead-in


def _asked_lines(lines: list[_Line], width: int) -> dict[int, int]:
    """The lines of a text written as questions and answers (an FAQ, an encyclopedia's patient entries, a handout):
    each question on a line of its own, its answer on the lines after. The question heads its answer, as a web
    page's <h3> would: it says what the answer is about and is never quoted as if it answered. A bare label over
    them ("症状:", "治疗:") heads a section one level up; a label over a list ("例如：") leads it in. {line index:
    heading level}; {} for any other text."""
    filled = [i for i, line in enumerate(lines) if line.text]
    asked = [
        here
        for before, here, after in zip([None, *filled], filled, filled[1:])
        if _is_question_line(lines[here], width)
        and not _is_question_line(lines[after], width)
        # in a hard-wrapped text, a short line after a full one ends that paragraph ("…为什么呢？")
        and not (width and before is not None and here == before + 1 and _full(lines[before], width))
    ]
    if len(asked) < MIN_ASKED_LINES:
        return {}
    levels = dict.fromkeys(asked, LABEL_LEVEL + 1)
    for here, after in pairwise(filled):
        # a label over a question ("症状:" then "…有什么感觉？"); one over its list or sentence ("例如：") leads it in
        if after in levels and _SECTION_LABEL.match(lines[here].text) and not ordinal_heading_level(lines[here].text):
            levels[here] = LABEL_LEVEL
    return levels


def _label(text: str) -> str:
    """ "症状:" heads its section as 症状: the colon only says that what follows is under it."""
    return text.rstrip().rstrip(":：").rstrip()


def _is_question_line(line: _Line, width: int) -> bool:
    text = line.text
    return (
        text.endswith(_QUESTION_END)
        and _display_width(text) <= MAX_QUESTION_WIDTH
        and not (width and _full(line, width))
        and not _ITEM_START.match(text)
    )


def _values_of_keyed_lines(text: str) -> str | None:
    """A key-value file saved as text ("service_cataract_text1: 白內障是香港常見眼疾之一…", a web site's strings, YAML,
    .properties) reads as its values, one per line: the keys name things for programs, and a quote or a TL;DR must
    not open with one. A key without a value (a group's) leaves a blank line. None for any other text."""
    lines = text.split("\n")
    filled = sum(1 for line in lines if line.strip())
    keyed = sum(1 for line in lines if (key := _KEY.match(line)) and _MACHINE_NAME.search(key.group(1)))
    if keyed < MIN_KEYED_LINES or keyed < KEYED_SHARE * filled:
        return None
    values: list[str] = []
    block: list[str] | None = None  # the lines of a value written after "|" or ">", one text
    for line in lines:
        key = _KEY.match(line)
        if block is not None and not key:
            block.append(line.strip())
            continue
        if block:
            values.append(join_lines(block))
        value = (line[key.end() :] if key else line).strip()
        block = [] if value in _BLOCK_MARK else None
        values.append("" if block is not None else _unquoted(value))
    if block:
        values.append(join_lines(block))
    return "\n".join(values)


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner
    return value


def _opening_heading(lines: list[_Line], width: int, title: str = "") -> int | None:
    """The index of a first line that heads the text ("狗尾草熬水能治近视吗", an article's or a notice's heading, with
    the text after it): short, not a sentence, not the start of a wrapped paragraph. Read as a heading, it says what
    every passage of the text is about and is never quoted as if it answered. None when the text opens otherwise.
    A web page saved as text may open with its site's chrome ("阿里康网", "查疾病", a form's "标题不应少于2个字"):
    where the first line shares nothing with the file's name and a line below it does ("散光", "白内障的概述") before
    any sentence, that one heads."""
    filled = [i for i, line in enumerate(lines) if line.text]
    if len(filled) < 2 or not _may_head(lines[filled[0]], width):
        return None
    if not title:
        return filled[0]
    # the first line, or one below it before any sentence that shares more words with the file's name: a shop
    # page's "服務項目:眼袋手術推薦…" shares 手術 with 《屈光手术术后注意事项》,
    # its "各種屈光手術…術後注意事項" far more
    # a breadcrumb trail first ("首页 > 资讯 > …指南") yields to the line below it that names the page's subject
    first = lines[filled[0]].text
    best, most = filled[0], 0 if _TRAIL.search(first) else _shared_pairs(first, title)
    for index in filled[1:OPENING_LINES_SEARCHED]:
        candidate = lines[index]
        if candidate.text.endswith(_FULL_STOP):
            break  # the text has begun: what heads it is its first line after all
        shared = _shared_pairs(candidate.text, title)
        if (
            index != filled[-1]
            and not _NOT_A_TITLE.search(candidate.text)
            and _may_head(candidate, width, named=shared >= NAMED_PAIRS)
            and shared > most
        ):
            best, most = index, shared
    return best


def _may_head(line: _Line, width: int, named: bool = False) -> bool:
    """`named`: the line shares words with the file's name, so a post's title of three clauses ("开学季将至,别让
    “红眼病”搅了新学期,这几招赶紧码住") may head; a re-posted page's keyword line ("中文字幕在线…") may not."""
    commas = MAX_OPENING_COMMAS + (1 if named else 0)
    return not (
        _display_width(line.text) > MAX_OPENING_WIDTH
        or not _WORDED.search(line.text)  # "17:07", "2025-06-28": an interview's clock or a page's date names nothing
        or line.text.endswith((*SENTENCE_END, "：", ":", "，", ","))
        or (width and _full(line, width))
        or ordinal_heading_level(line.text)
        or len(_COMMAS.findall(line.text)) >= commas
        or is_credit_line(fold(line.text))  # "作者 / 張中維藥師": who wrote the page, never what it is about
    )


def _shared_pairs(line: str, title: str) -> int:
    """How many pairs of Chinese characters in a row, and words of three letters or more, both write."""
    line, title = fold(line).lower(), fold(title).lower()
    pairs = {line[i : i + 2] for i in range(len(line) - 1) if _HAN_PAIR.fullmatch(line[i : i + 2])}
    words = set(_LATIN_WORD.findall(line)) & set(_LATIN_WORD.findall(title))
    return sum(1 for pair in pairs if pair in title) + len(words)


_WORDED = re.compile(r"[^\W\d_]")  # a letter or a Han character: a line of figures and marks alone is no heading
_FULL_STOP = ("。", "！", "？", "!", "?")  # a sentence has ended (a form's "验证码:" is chrome)
_TRAIL = re.compile(r">.*>")  # a breadcrumb trail ("首页 > 疾病库 > 白内障")
_NOT_A_TITLE = re.compile(rf"\||{_TRAIL.pattern}")  # a table's row, a breadcrumb trail
OPENING_LINES_SEARCHED = 40  # how far down a page's chrome (lines that are no sentence) the subject's line may be
_HAN_PAIR = re.compile(r"[\u4e00-\u9fff]{2}")
_LATIN_WORD = re.compile(r"[a-z]{3,}")


# Forum software's anti-copy noise ("jammer": Discuz hides random ASCII between a post's words, which a page saved as
# text keeps): "8 c' S. y5 [# W) Y/ |0 x日前…", "hGo|2@sc 8Gg/M%wq9U" at a line's ends or on lines of their own.
_NOISE_MARKS = frozenset("{}\\`^$#@_")  # never in a word, a number or a citation
_TEXT_MARKS = frozenset("[]()+;:'\"!?&/%,.-=~*")  # in "(2019)", "0.01%", "don't", "ICD-11", "n=30", "3~6" too
_PLAIN_TOKEN = re.compile(  # "(2019)", "0.01%", "3~6", "CT/MR", "aMAP-2", "don't", "S."
    r"[(\[]?(?:[+\-]?\d+(?:[.,:/\-~]\d+)*[%°]?[A-Za-z]{0,4}|[A-Za-z0-9]+(?:[/'\-.][A-Za-z0-9]+)*)[)\]]?[.,;:!?)]?"
)
_ENGLISH_WORD = re.compile(r"[A-Za-z][a-z]{3,}")  # "Lancet," is a word; ":aqskeT" is noise
_ASCII_TOKEN = re.compile(r"[\x21-\x7e]+")
_TOKEN = re.compile(r"\S+")
_GLUED_NOISE = re.compile(r"^[\x21-\x7e]{1,24}(?=[^\x00-\x7f])")  # "x日前", "u5.39.217.77:8898隱形…"
MIN_JAMMED_RUNS = 2  # a text with this many runs of unmistakable noise …
JAMMED_LINE_SHARE = 0.1  # … on this share of its lines came from a page that was jammed (a reference list is not)


def without_jammer(text: str) -> str:
    """A forum page's anti-copy noise taken out, where it is unmistakable: runs of short ASCII tokens that are
    no word, number or citation ("[# W) Y/ |0"), in a text with at least two of them on one line in ten. There, a
    run of ASCII marks at a line's start or end goes too ("9c %Tv 其中…"), and what such a run glued onto the next
    Chinese word ("x日前")."""
    lines = text.split("\n")
    noisy = sum(_noise(run, strict=True) for line in lines for run in _ascii_runs(line))
    if noisy < max(MIN_JAMMED_RUNS, JAMMED_LINE_SHARE * sum(1 for line in lines if line.strip())):
        return text
    return "\n".join(_dejammed(line) for line in lines)


def _ascii_runs(line: str) -> list[list[re.Match]]:
    """The line's maximal runs of whitespace-separated tokens with no Chinese (or other non-ASCII) in them."""
    runs: list[list[re.Match]] = [[]]
    for token in _TOKEN.finditer(line):
        if _ASCII_TOKEN.fullmatch(token.group()):
            runs[-1].append(token)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def _marked(token: str) -> bool:
    """A token with a mark no word or number carries there ("q$", "[#", "Y/", "%Tv")."""
    if any(c in _NOISE_MARKS for c in token):
        return True
    return any(c in _TEXT_MARKS for c in token) and not _PLAIN_TOKEN.fullmatch(token)


def _noise(run: list[re.Match], strict: bool) -> bool:
    tokens = [t.group() for t in run]
    if any("://" in t or (_ENGLISH_WORD.search(t) and _PLAIN_TOKEN.fullmatch(t)) for t in tokens):
        return False  # a run with an English word ("Lancet,") or an address in it is text
    marked = sum(map(_marked, tokens))
    if not strict:
        return marked >= 1
    lettered = sum(1 for t in tokens if re.search("[A-Za-z]", t))
    return marked >= 2 and 2 * marked >= len(tokens) and lettered >= 2


def _dejammed(line: str) -> str:
    for run in reversed(_ascii_runs(line)):
        start, end = run[0].start(), run[-1].end()
        at_edge = not line[:start].strip() or not line[end:].strip()
        if not (_noise(run, strict=True) or (at_edge and _noise(run, strict=False))):
            continue
        rest = line[end:].lstrip()
        glued = _GLUED_NOISE.match(rest)
        if glued and (_marked(glued.group()) or re.fullmatch("[a-z]{1,2}", glued.group())):
            rest = rest[glued.end() :]
        before = line[:start].rstrip()  # what lies before the runs still to be looked at keeps its offsets
        line = before + " " + rest if before.strip() and rest else before + rest
    return line.strip()


@dataclass
class _Line:
    text: str
    spaced: bool  # letter-spaced where it was read: a justified, so full, line


def _line(raw: str) -> _Line:
    line = clean_line(raw)
    chinese = sum(1 for c in line if "\u4e00" <= c <= "\u9fff")
    spaced = chinese >= 4 and line.count(" ") >= LETTER_SPACED * chinese
    return _Line(_SPACE_BY_CHINESE.sub("", line) if spaced else line, spaced)


def _display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _with_stray_punctuation_joined(lines: list[_Line]) -> list[_Line]:
    """A line that is only the punctuation closing the one before ("者造影剂廓清较快" + "。": a PDF's text often puts
    a sentence's last mark on a line of its own) goes back on that line."""
    out: list[_Line] = []
    for line in lines:
        if _STRAY_PUNCTUATION.match(line.text) and out and out[-1].text:
            out[-1] = _Line(out[-1].text + line.text, out[-1].spaced)
        else:
            out.append(line)
    return out


def _wrap_width(lines: list[_Line]) -> int:
    """The width a hard-wrapped text was wrapped at; 0 when the text is not hard-wrapped (one paragraph per line).

    Read from the Chinese lines when there are enough of them: a guideline's English reference list is wider in
    display columns than its Chinese body at the same margin, and a long one would set the width for the whole text."""
    chinese = [line for line in lines if line.text and _cjk_share(line.text) >= BODY_CJK_SHARE]
    measured = chinese if len(chinese) >= MIN_WRAPPED_LINES and len(chinese) >= BODY_SHARE * len(lines) else lines
    widths = sorted(_display_width(line.text) for line in measured if line.text)
    if len(widths) < 4:
        return 0
    width = widths[int(WRAP_PERCENTILE * (len(widths) - 1))]
    if width < MIN_WRAP_WIDTH:
        return 0
    if width > MAX_WRAP_WIDTH:
        return 0
    # Cut mid-sentence at the margin: a text of one paragraph per line ends its long lines with a full stop
    running = sum(1 for line in measured if line.text and _full(line, width) and not line.text.endswith(SENTENCE_END))
    return width if running >= max(WRAPPED_SHARE * len(widths), MIN_WRAPPED_LINES) else 0


def _full(line: _Line, width: int) -> bool:
    """The line reached the right margin (or was justified to it): the next line carries its paragraph on, as in a
    PDF (a full line that ends a sentence does too; a short one ends the paragraph)."""
    return line.spaced or _display_width(line.text) >= FULL_LINE * width


def _fragmented(lines: list[_Line]) -> bool:
    """Text saved from a web page that broke a line at every inline tag ("直径\n~\n4nm\n。"): its sentences run
    on over many short lines, to their ending."""
    widths = sorted(_display_width(line.text) for line in lines if line.text)
    return len(widths) >= 4 and widths[len(widths) // 2] <= FRAGMENT_WIDTH


def _cjk_share(text: str) -> float:
    return sum(1 for c in text if "\u4e00" <= c <= "\u9fff") / max(len(text), 1)


def labelled_fields(text: str) -> list[tuple[str, str, str]] | None:
    """(label, value, line as written) of each field of a text written as fields its labels name ("适应证:过敏性眼病",
    "用法用量:点眼：……"); a line without a label carries on the field before it, and lines before the first field
    come with the label "". None for any other text: prose, a transcript (its speakers' labels repeat), a few
    "注意：" lines in an article."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    matches = [_FIELD_LINE.match(line) for line in lines]
    if matches and matches[0] is None:  # a name line ("洛度沙胺") before the fields
        counted = matches[1:]
    else:
        counted = matches
    labels = [m.group(1) for m in counted if m is not None]
    if (
        len(labels) < MIN_FIELDS
        or len(labels) < FIELD_SHARE * len(counted)
        or len(set(labels)) < DISTINCT_FIELDS * len(labels)
    ):
        return None
    fields: list[tuple[str, list[str], str]] = []
    for line, match in zip(lines, matches):
        if match is not None:
            fields.append((match.group(1), [match.group(2).strip()], line))
        elif fields:
            fields[-1][1].append(line)
        else:
            fields.append(("", [line], line))
    return [(label, "\n".join(part for part in value if part), line) for label, value, line in fields]


def write_fields(builder: DocumentBuilder, fields: list[tuple[str, str, str]], level: int) -> None:
    """Each long field a section headed by its label; a short one its line as written ("IOP: 15 mmHg") under none
    of them. An opening line that is the document's title again is said once."""
    headed = False
    for label, value, line in fields:
        if not value:
            continue
        if not label:
            for said in value.split("\n"):
                if clean_line(said) != builder.title:
                    builder.paragraph(said)
            continue
        if len(value) <= SHORT_FIELD_CHARS and "\n" not in value and not re.search(r"[。！？；]", value):
            if headed:
                builder.close_headings(level)
                headed = False
            builder.paragraph(line)
            if value not in line:  # "禁忌:" on its line, its value on the next: both, as written
                builder.paragraph(value)
            continue
        builder.heading(level, label)
        headed = True
        for said in value.split("\n"):
            builder.paragraph(said)
