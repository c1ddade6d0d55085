"""The user messages the four agents receive: how questions, history, fragments and evidence are written for them.

The system prompts are the Chinese text files in `prompts/`; `load_prompt` reads them.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path

from clincite.core.naming import display_source, file_stem
from clincite.core.shapes import ChatTurn, Hit, SubQuery, SubQueryAnalysis

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"  # package data
PROMPT_FILES = {
    "decomposition": "decomposition_system_prompt.txt",
    "relevance_judge": "relevance_judge_system_prompt.txt",
    "sufficiency_judge": "sufficiency_judge_system_prompt.txt",
    "answer_generation": "answer_generation_system_prompt.txt",
}
HISTORY_CHARS = 300  # an earlier answer is cut to this many characters in prompts: enough to resolve a follow-up

# Section markers of the user messages .
HISTORY = "【对话历史】"
QUESTION = "【当前问题】"
SUB_QUERY = "【子查询】"
ORIGINAL_QUESTION = "【原始问题】"
FRAGMENTS = "【候选片段】"
ANALYSES = "【子查询分析】"
ADDITIONAL_LIMIT = "【可追加的子查询上限】"
ANSWER_QUESTION = "【问题】"
EVIDENCE = "【证据摘录】"
GAPS = "【证据缺口】"  # aspects asked that no evidence covers: the report must say so, not fill them in
NONE = "（无）"


# --- fencing: document text, history and questions are data; nothing in them may pass for the prompt's own markup ---
SECTION_MARKERS = (
    HISTORY,
    QUESTION,
    SUB_QUERY,
    ORIGINAL_QUESTION,
    FRAGMENTS,
    ANALYSES,
    ADDITIONAL_LIMIT,
    ANSWER_QUESTION,
    EVIDENCE,
    GAPS,
)
# Look-alikes are found in a normalised view of the text (NFKC, case folded, without spaces and invisible format
# characters such as zero-width spaces), so "【 证据摘录 】", "［Ｅ１］", "<​/片段>" or "﹤/片段﹥" are caught like the
# real thing; what is replaced is the original character.
_FENCE_IN_VIEW = re.compile(r"<(?=/?片段)")
_EVIDENCE_IN_VIEW = re.compile(r"\[(?=e\d+\])|(?<=\[e)(\d+)\]")
# Every lenticular bracket in data: the prompt's sections are 【…】, so none in data may open one (【系统】, 【证据】…).
SECTION_BRACKETS = {"【": "〔", "】": "〕", "〖": "〔", "〗": "〕"}
# On an evidence or extract line, a document's name stands in 《…》 and its words in “…”: inside data they become
# 〈…〉 and 「…」, so a passage cannot carry a line of its own naming another document. (The citation check compares
# them as the same characters: report/citations.normalise.)
LINE_DELIMITERS = {"《": "〈", "》": "〉", "“": "「", "”": "」"}


@functools.lru_cache(maxsize=65536)
def _char_view(char: str) -> str:
    """One character as the normalised view sees it: NFKC, case folded; nothing for spaces and format characters."""
    if char.isspace() or unicodedata.category(char) == "Cf":
        return ""
    return unicodedata.normalize("NFKC", char).casefold()


@functools.lru_cache(maxsize=65536)
def _nfkc(char: str) -> str:
    return unicodedata.normalize("NFKC", char)


def _view(text: str) -> tuple[str, list[int]]:
    """The normalised view of `text` and, for each of its characters, the index of the original character."""
    view, origin = [], []
    for index, char in enumerate(text):
        for piece in _char_view(char):
            view.append(piece)
            origin.append(index)
    return "".join(view), origin


def defuse(text: str, delimiters: dict[str, str] | None = None) -> str:
    """Data text with the prompt's own markup made look-alikes: a lenticular bracket 【 】 becomes 〔 〕, a fragment
    tag <片段…> / </片段> starts with a full-width ＜, an evidence label [E3] becomes ［E3］ — each also when written
    with full-width forms, spaces or zero-width characters in between. The model still reads the words; the text can
    no longer open a section, close its fence or add an evidence line.

    Every prompt of a question defuses its passages (a judge's nine, the report's extracts): the work is done once
    per distinct character, and the view (with its index map) is built only for a text that has a character whose
    view holds "<" or "[", without which neither a fence nor an evidence label can be written."""
    table = {**SECTION_BRACKETS, **(delimiters or {})}
    chars = set(text)
    swap = {}
    for char in chars:
        folded = _nfkc(char)
        if len(folded) == 1 and folded in table:
            swap[char] = table[folded]
    out = text.translate(str.maketrans(swap)) if swap else text
    if not any("<" in piece or "[" in piece for piece in map(_char_view, chars)):
        return out
    view, origin = _view(text)
    replace: dict[int, str] = {}
    for match in _FENCE_IN_VIEW.finditer(view):
        replace[origin[match.start()]] = "＜"
    for match in _EVIDENCE_IN_VIEW.finditer(view):
        bracket = match.start() if match.group(1) is None else match.end() - 1
        replace[origin[bracket]] = "［" if view[bracket] == "[" else "］"
    if not replace:
        return out
    chars_out = list(out)  # one character for one: the translation above keeps every index
    for index, char in replace.items():
        chars_out[index] = char
    return "".join(chars_out)


def one_line(text: str) -> str:
    """Data that sits on one line of the prompt (an evidence line, a list item): its line breaks become spaces, so it
    cannot start a line of its own, and its 《》 “” are look-alikes, so it cannot name a document or end the quote
    it stands in. (Quotes are verified with whitespace and these look-alikes normalised, so nothing is lost.)"""
    return " ".join(defuse(text, LINE_DELIMITERS).split())


@functools.lru_cache(maxsize=2048)  # the same passages come back in every judge of a question and in its report
def fenced(text: str) -> str:
    """A passage inside a <片段> fence: its lines stay as written (the judge copies them verbatim), but none of them
    can close the fence, open a section or pass for an evidence line."""
    return defuse(text)


def attribute(text: str) -> str:
    """A value inside a fence tag's quotes (source, title): no quote, angle bracket or line break can end the tag."""
    return one_line(text).replace('"', "＂").replace("<", "＜").replace(">", "＞")


def source_labels(sources: list[str]) -> dict[str, str]:
    """The name each source is shown by in one prompt: its cited name, unless another source in the same prompt is
    cited by that name too (a file titled like another document) — then each is shown by its own file name, so no
    line can pass one document's words off as another's."""
    cited: dict[str, set[str]] = {}
    for source in sources:
        cited.setdefault(display_source(source), set()).add(source)
    return {
        source: name if len(cited[name]) == 1 else file_stem(source)
        for name, named in cited.items()
        for source in named
    }


def load_prompt(name: str, prompts_dir: Path = PROMPTS_DIR) -> str:
    return (prompts_dir / PROMPT_FILES[name]).read_text(encoding="utf-8").strip()


def format_history(history: list[ChatTurn]) -> str:
    if not history:
        return NONE
    lines = []
    for turn in history:
        text = one_line(turn.content)
        if turn.role == "assistant" and len(text) > HISTORY_CHARS:
            text = text[:HISTORY_CHARS] + "……（已截断）"
        lines.append(f"{'用户' if turn.role == 'user' else '助手'}：{text}")
    return "\n".join(lines)


def decomposition_prompt(question: str, history: list[ChatTurn]) -> str:
    return f"{HISTORY}\n{format_history(history)}\n{QUESTION}\n{defuse(question)}"


def sub_query_line(sub_query: SubQuery) -> str:
    focus = f"（维度：{one_line(sub_query.focus)}）" if sub_query.focus else ""
    return f"{sub_query.id}｜{one_line(sub_query.text)}{focus}"


def judge_prompt(sub_query: SubQuery, question: str, hits: list[Hit]) -> str:
    labels = source_labels([h.source for h in hits])
    fragments = "\n".join(
        f'<片段 id="{attribute(h.chunk_id)}" 来源="{attribute(labels[h.source])}" '
        f'标题="{attribute(" > ".join([h.title, *h.heading_path]))}">\n{fenced(h.text)}\n</片段>'
        for h in hits
    )
    return (
        f"{SUB_QUERY}{sub_query_line(sub_query)}\n{ORIGINAL_QUESTION}{one_line(question)}\n"
        f"{FRAGMENTS}\n{fragments or NONE}"
    )


def sufficiency_prompt(question: str, analyses: list[SubQueryAnalysis], max_additional: int) -> str:
    blocks = []
    labels = source_labels([e.source for a in analyses for e in a.extracts])
    for analysis in analyses:
        extracts = (
            "\n".join(f"- 《{one_line(labels[e.source])}》“{one_line(e.text)}”" for e in analysis.extracts) or NONE
        )
        blocks.append(
            f"### {sub_query_line(analysis.sub_query)}\n子回答：{one_line(analysis.sub_answer) or NONE}\n"
            f"置信度：{analysis.confidence}\n缺失方面：{one_line('、'.join(analysis.missing)) or '无'}\n"
            f"摘录：\n{extracts}"
        )
    return (
        f"{ORIGINAL_QUESTION}{one_line(question)}\n{ANALYSES}\n"
        + "\n".join(blocks)
        + f"\n{ADDITIONAL_LIMIT}{max_additional}"
    )


def answer_prompt(
    question: str, history: list[ChatTurn], analyses: list[SubQueryAnalysis], gaps: list[str] | None = None
) -> str:
    lines = []
    seen: set[tuple[str, str]] = set()
    labels = source_labels([e.source for a in analyses for e in a.extracts])
    # Sub-queries first, the question itself (q0) last: each aspect's evidence leads, the broad match fills in.
    for analysis in sorted(analyses, key=lambda a: a.sub_query.id == "q0"):
        for extract in analysis.extracts:
            key = (extract.chunk_id, extract.text)
            if key in seen:
                continue
            seen.add(key)
            lines.append(
                f"[E{len(lines) + 1}] 《{one_line(labels[extract.source])}》“{one_line(extract.text)}”"
                f"（子查询：{one_line(analysis.sub_query.text)}）"
            )
    return (
        f"{ANSWER_QUESTION}{one_line(question)}\n{HISTORY}{format_history(history)}\n"
        f"{EVIDENCE}\n"
        + ("\n".join(lines) or NONE)
        + (f"\n{GAPS}" + "、".join(one_line(g) for g in gaps) if gaps else "")
    )
