"""Multiple-choice items of a question bank or an exam paper, and the option their answer key names.

    for item in choice_items(text):
        text[item.start : item.end]        # the stem, its options and "答案：D", verbatim
        [text[a:b] for a, b in item.keyed]  # the options the key names: "D. 角膜基质内可见卫星灶和免疫环"

A teaching library often holds a clinic's own exam papers. What such an item says is its stem with the keyed option;
each option alone is a candidate the key may reject ("B. 管状视野"), and an item without a key answers nothing.
Options stand one per line ("A. …") or all on the stem's line ("… A. 视网膜之前 B. 视网膜之后 …"); the key follows
them on a line of its own (答案：C, 【答案】C, 标准答案：C, 正确答案：AB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import pairwise

VIGNETTE_LINES = 2  # a case told over at most this many lines before the stem line that asks
MIN_OPTIONS = 3  # "A. … B. …" alone may be two cases of a text; three options in order are a question's
LETTERS = "ABCDEFGH"
# "A. 视网膜之前", or the letter and a space before Chinese ("A 视网膜之前", as spreadsheet banks write them)
_OPTION_LINE = re.compile(
    r"[ \t]*(?:[【\[]([A-H])[】\]]|([A-H])(?:[ \t]*[.．、)）:：]|[ \t]+(?=[^\x00-\x7f])))[ \t]*\S"  # "【D】1/6" too
)
# on the stem's line, a letter not written onto a Latin word or a number ("是A. 滤泡形成B. …" once Markdown joins lines)
_INLINE_OPTION = re.compile(r"(?<![A-Za-z0-9])(?:[【\[]([A-H])[】\]]|([A-H])[ \t]*[.．、)）])[ \t]*(?=\S)")
# a stem that asks: a question mark, a blank, 下列/以下/哪/什么…, or one ending in 是/为 (the option completes it)
_ASKS = re.compile(r"[？?]|[（(]\s*[）)]|下列|以下|哪|何种|什么|多少|(?<!分)[是为][:：]?\s*$")
# "可采取以下预防措施:" — the text announcing its own list (no 哪, no question mark, not "…的是："): no stem
_LIST_ANNOUNCED = re.compile(r"(?:以下|下列)[^？?哪]*?(?<![是为])[:：][\s。.]*$")
_EXPLANATION = re.compile(  # a key's reasoning
    r"\s*(?:[【\[](?:答案)?(?:解析|解[题題]思路)[】\]]|(?:(?:答案)?(?:解析|解[释釋]|分析|解[题題]思路)|本[题題]思路|explanation|analysis|rationale)"
    r"\s*[:：])",
    re.I,
)
_KEY_TO_EXPLANATION = re.compile(r"[ \t。]*\n?[ \t\n]*")  # "答案：B。解析：…", or 解析 on the next line
_NUMBERED = re.compile(r"[ \t]*(?:\d+[.．、]|[【\[（(]\d+[】\]）)]|第\s*\d+\s*题)")  # "5. ", "【38】", "第 34 题"
_KEY_WORD = r"[【\[]?(?:(?:参考|标准|正确)?答案|(?i:(?:correct )?answer))[】\]]?[ \t]*"
_LETTERS = r"([A-H](?:[ \t、,，]*[A-H])*)(?![A-Za-z])"
_KEY_START = re.compile(_KEY_WORD + r"[:：]?[ \t]*[A-H]")
_INLINE_KEY = re.compile(rf"{_KEY_WORD}[:：][ \t]*{_LETTERS}")  # "…D. 结膜下出血答案：B"
_KEY = re.compile(rf"[ \t]*{_KEY_WORD}[:：]?[ \t]*{_LETTERS}")  # a line of its own: 答案：C, 【答案】C
# An exam item's option ("B.角膜炎", "【E】1/7"), its key ("参考答案:A") or its explanation ("解析:", "本题思路:"): each
# on its own line however short the lines of the page it came from
_PART_OPENING = re.compile(
    r"^(?:[【\[][A-H][】\]]|[A-H][.．、)）](?![\d.])"  # an option: "【E】1/7", "B.角膜炎"
    r"|[【\[]?(?:参考|标准|正确)?答案[】\]]?[ \t]*(?:[:：][ \t]*)?(?:[A-H](?![A-Za-z])|$)"  # its key: 参考答案:A
    r"|[【\[]?(?:解析|本题思路|解题思路)[】\]]?[ \t]*[:：]?)"  # its explanation
)
_SCORE_LINE = re.compile(  # "【score:2 分】", "（2分）"
    r"[ \t]*[【\[(（][ \t]*(?:score|分值)?[ \t]*[:：]?[ \t]*\d+(?:\.\d+)?[ \t]*分[ \t]*[】\])）][ \t]*", re.I
)
_MARKED_RIGHT = re.compile(r"[【\[(（][ \t]*(?:此项为本题正确答案|本题正确答案|正确答案|正确选项)[ \t]*[】\])）]")
_KEY_LABEL = re.compile(r"[ \t]*[【\[]?(?:参考|标准|正确)?答案[】\]]?[ \t]*[:：]?[ \t]*")
_BARE_FIRST = re.compile(r"A(?=[\u4e00-\u9fff])")
_BARE_OPTION = re.compile(r"(?<=[\u4e00-\u9fff）)])([B-H])(?=[\u4e00-\u9fff])")
_STEM_KEY = re.compile(r"(?<=[\u4e00-\u9fff])[（(]?[ \t]*([A-H])[ \t]*[）)]?$")  # "…细胞分泌D", "…的是（A）"


@dataclass(frozen=True)
class Choice:
    start: int  # the stem's first character
    end: int  # the key line's last character (the last option's when the item has no key)
    stem: tuple[int, int]  # the question, without its options
    options: tuple[tuple[int, int], ...]  # each option's span, in order
    keyed: tuple[tuple[int, int], ...]  # the options the key names; () when no key follows

    @property
    def answered(self) -> bool:
        return bool(self.keyed)


def choice_items(text: str) -> list[Choice]:
    """The multiple-choice items of a text, in order."""
    lines = _lines(text)
    items: list[Choice] = []
    i = 0
    while i < len(lines):
        start = i
        item, i = _item_at(text, lines, i)
        if item is not None:
            items.append(_with_vignette(text, lines, start, item, items[-1].end if items else 0))
    return items


def _with_vignette(text: str, lines: list[tuple[int, int]], stem_line: int, item: Choice, floor: int) -> Choice:
    """An item whose stem line carries no number ("最可能的诊断是：") starts at the numbered line of its case just
    before it ("5. 患者，男，68岁，突然…"), up to VIGNETTE_LINES back; otherwise as found."""
    if _NUMBERED.match(text, item.start):
        return item
    for back in range(stem_line - 1, max(stem_line - 1 - VIGNETTE_LINES, -1), -1):
        start, end = lines[back]
        if start < floor or _OPTION_LINE.match(text, start, end) or _KEY.match(text, start, end):
            return item
        if _NUMBERED.match(text, start):
            return replace(item, start=start, stem=(start, item.stem[1]))
    return item


def _ends_key(rest: str) -> bool:
    """What may follow a key on its line: nothing, or the key's explanation ("答案：D  解析：视神经分四段…")."""
    rest = rest.strip(" \t。")
    return not rest or bool(_EXPLANATION.match(rest))


def explanation_after(text: str, offset: int) -> tuple[int, int]:
    """The span of the explanation right after an item's key ("答案：D  解析：…", or "解析：…" on the next line); an
    empty span when none follows."""
    start = _KEY_TO_EXPLANATION.match(text, offset).end()
    if not _EXPLANATION.match(text, start):
        return offset, offset
    end = text.find("\n", start)
    return start, len(text) if end < 0 else end


def key_of(text: str, end: int) -> str:
    """The key an item ending at `end` gives ("答案：D", "Answer：C"), as written; "" when it has none."""
    line_start = text.rfind("\n", 0, end) + 1
    found = _KEY_START.search(text, line_start, end)
    return text[found.start() : end].strip() if found else ""


def stray_options(text: str, items: list[Choice] | None = None) -> list[tuple[int, int]]:
    """Option lines of an item cut apart from its stem or key (a passage that begins at "B. …", or ends after a stem
    and its "A. …"): runs of lines in letter order outside every item that begin past A, or right after a line that
    asks. What they say is a candidate some key elsewhere accepts or rejects. A run from A under a line that asks
    nothing ("推荐强度分为：") is a list of the text's own."""
    items = choice_items(text) if items is None else items
    lines = _lines(text)
    stray: list[tuple[int, int]] = []
    first, last_letter = -1, -1  # the run being read: its first line, and the letter of its last one
    for index, line in enumerate([*lines, None]):
        found = _OPTION_LINE.match(text, *line) if line else None
        letter = LETTERS.index(_letter(found)) if found else -1
        if found and line is not None and any(c.start <= line[0] < c.end for c in items):
            letter = -1  # an option of an item read whole
        if letter >= 0 and first >= 0 and letter == last_letter + 1:
            last_letter = letter
            continue
        if first >= 0:
            before = text[slice(*lines[first - 1])] if first else ""
            if text[lines[first][0] :].lstrip()[0] != "A" or _asks_before_options(before):
                stray += lines[first:index]
        first, last_letter = (index, letter) if letter >= 0 else (-1, -1)
    return stray


def opens_a_part(line: str) -> bool:
    """A line an item's option, key or explanation opens: a line of its own however short the lines of the page it
    came from (`clincite.ingest.loaders.text` keeps it apart from the line before)."""
    return bool(_PART_OPENING.match(line))


def _letter(option: re.Match) -> str:
    """The letter an option mark gives: "【D】" or "D."."""
    return option.group(1) or option.group(2)


def _asks_before_options(line: str) -> bool:
    """The line asks, as an exam item's stem does; not a list's lead-in ("推荐强度分为："), nor an FAQ's "Q:…?",
    whose "A:" under it is the answer."""
    return bool(_ASKS.search(line)) and not _LIST_ANNOUNCED.search(line) and not _FAQ_QUESTION.match(line)


_FAQ_QUESTION = re.compile(r"\s*(?:Q\s*\d*|问)\s*[:：.．]", re.I)  # "Q:使用类固醇眼药水有何特别注意事项?"


def _item_at(text: str, lines: list[tuple[int, int]], i: int) -> tuple[Choice | None, int]:
    """The item whose stem is line i (options on following lines, or on the stem's own), and the line after it."""
    start, end = lines[i]
    options = _inline_options(text, start, end)
    j = i + 1
    if len(options) < MIN_OPTIONS:
        options = []
        if j < len(lines) and _SCORE_LINE.fullmatch(text, *lines[j]):
            j += 1  # "【score:2 分】" between the stem and its options
        while j < len(lines) and len(options) < len(LETTERS) and (more := _options_from(text, *lines[j], len(options))):
            options += more
            j += 1
        if not options and j < len(lines) and (bare := _bare_options(text, *lines[j])):
            options, j = bare, j + 1  # "A泪腺B副泪腺C睑板腺…", a Word paper's options run together on one line
        if len(options) < MIN_OPTIONS or _OPTION_LINE.match(text, start, end):
            return None, i + 1
    letters = ""
    stem = text[start : min(options[0][0], end) if options[0][0] > start else end]
    marked = "".join(LETTERS[k] for k, (a, b) in enumerate(options) if _MARKED_RIGHT.search(text, a, b))
    last_line_end = end if options[-1][0] < end else options[-1][1]
    inline_key = _INLINE_KEY.search(text, options[-1][0], last_line_end)
    if j + 1 < len(lines) and _KEY_LABEL.fullmatch(text[slice(*lines[j])]) and _KEY.match(text, *lines[j + 1]):
        j += 1  # "答案" alone on its line over "参考答案:A", as a bank's web page lays its sections out
    if inline_key:  # "…D. 结膜下出血答案：B" on one line
        options[-1] = (options[-1][0], len(text[: inline_key.start()].rstrip()))
        letters, end = re.sub(r"[^A-H]", "", inline_key.group(1)), inline_key.end()
    elif j < len(lines) and (key := _KEY.match(text, *lines[j])) and _ends_key(text[key.end() : lines[j][1]]):
        letters = re.sub(r"[^A-H]", "", key.group(1))
        end = key.end()  # an explanation on the key's line is the reader's to quote (`clincite.offline.relevance`)
        j += 1
    elif (own := _STEM_KEY.search(stem.rstrip())) and _asks_before_options(stem.rstrip()[: own.start()]):
        # "…是由哪种组织或细胞分泌D": a paper that writes its key where the blank was
        letters, stem, end = own.group(1), stem.rstrip()[: own.start()], options[-1][1]
    elif marked:  # "【D】1/6 【此项为本题正确答案】": a bank that marks the right option where it stands
        letters, end = marked, options[-1][1]
    elif not _asks_before_options(stem.strip()):
        return None, i + 1  # "分级：A. … B. … C. …" in a guideline: a list of its own, no question
    else:
        end = options[-1][1]
    keyed = tuple(options[LETTERS.index(c)] for c in dict.fromkeys(letters) if LETTERS.index(c) < len(options))
    return Choice(start, end, (start, start + len(stem.rstrip())), tuple(options), keyed), j


def _options_from(text: str, start: int, end: int, first: int) -> list[tuple[int, int]]:
    """The options a line holds from its start, in letter order from LETTERS[first]: one ("C. 30分钟"), or two and
    more as papers print them to save room ("A. 10分钟 B. 20分钟")."""
    found = _OPTION_LINE.match(text, start, end)
    if not found or _letter(found) != LETTERS[first]:
        return []
    bounds = [start]
    for mark in _INLINE_OPTION.finditer(text, found.end(), end):
        if first + len(bounds) < len(LETTERS) and _letter(mark) == LETTERS[first + len(bounds)]:
            bounds.append(mark.start())
    bounds.append(end)
    return [(a, len(text[:b].rstrip(" \t；;，,"))) for a, b in pairwise(bounds)]


def _bare_options(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Options with no mark after their letters, all on one line ("A泪腺B副泪腺C睑板腺D结膜杯状细胞E睑缘腺"): each
    letter between Chinese characters, in letter order from A."""
    start += len(text[start:end]) - len(text[start:end].lstrip())
    if not _BARE_FIRST.match(text, start, end):
        return []
    bounds = [start]
    for mark in _BARE_OPTION.finditer(text, start + 1, end):
        if len(bounds) < len(LETTERS) and mark.group(1) == LETTERS[len(bounds)]:
            bounds.append(mark.start())
    if len(bounds) < MIN_OPTIONS:
        return []
    return list(pairwise([*bounds, end]))


def _inline_options(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Options written on the stem's line: "A. 视网膜之前 B. 视网膜之后 C. 视网膜上", in letter order from A."""
    ordered = []
    for mark in _INLINE_OPTION.finditer(text, start, end):
        if len(ordered) < len(LETTERS) and _letter(mark) == LETTERS[len(ordered)]:
            ordered.append(mark)
    if len(ordered) < MIN_OPTIONS or ordered[0].start() == start:
        return []
    bounds = [m.start() for m in ordered] + [end]
    return [(a, len(text[:b].rstrip(" \t；;，,")) if b > a else b) for a, b in pairwise(bounds)]


def _lines(text: str) -> list[tuple[int, int]]:
    """Non-blank lines as (start, end) spans, without their trailing blanks."""
    spans, offset = [], 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((offset, offset + len(line.rstrip())))
        offset += len(line) + 1
    return spans
