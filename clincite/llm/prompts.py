"""The user messages the four agents receive: how questions, history, fragments and evidence are written for them.

The system prompts are the Chinese text files in `prompts/`; `load_prompt` reads them.
"""

from __future__ import annotations

import re
from pathlib import Path

from clincite.core.naming import display_source
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
_SECTION = re.compile("|".join(re.escape(marker) for marker in SECTION_MARKERS))
_FENCE_TAG = re.compile(r"<(\s*/?\s*片段)")
_EVIDENCE_TAG = re.compile(r"\[(\s*E\s*\d+\s*)\]", re.IGNORECASE)


def defuse(text: str) -> str:
    """Data text with the prompt's own markers made look-alikes: a section marker 【…】 becomes 〔…〕, a fragment tag
    <片段…> / </片段> starts with a full-width ＜, an evidence label [E3] becomes ［E3］. The model still reads the
    words; the text can no longer open a section, close its fence or add an evidence line."""
    text = _SECTION.sub(lambda m: "〔" + m.group()[1:-1] + "〕", text)
    text = _FENCE_TAG.sub(r"＜\1", text)
    return _EVIDENCE_TAG.sub(r"［\1］", text)


def one_line(text: str) -> str:
    """Data that sits on one line of the prompt (an evidence line, a list item): its line breaks become spaces, so it
    cannot start a line of its own. (Quotes are verified with whitespace normalised, so nothing is lost.)"""
    return " ".join(defuse(text).split())


def fenced(text: str) -> str:
    """A passage inside a <片段> fence: its lines stay as written (the judge copies them verbatim), but none of them
    can close the fence, open a section or pass for an evidence line."""
    return defuse(text)


def attribute(text: str) -> str:
    """A value inside a fence tag's quotes (source, title): no quote, angle bracket or line break can end the tag."""
    return one_line(text).replace('"', "＂").replace("<", "＜").replace(">", "＞")


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
    fragments = "\n".join(
        f'<片段 id="{attribute(h.chunk_id)}" 来源="{attribute(display_source(h.source))}" '
        f'标题="{attribute(" > ".join([h.title, *h.heading_path]))}">\n{fenced(h.text)}\n</片段>'
        for h in hits
    )
    return (
        f"{SUB_QUERY}{sub_query_line(sub_query)}\n{ORIGINAL_QUESTION}{one_line(question)}\n"
        f"{FRAGMENTS}\n{fragments or NONE}"
    )


def sufficiency_prompt(question: str, analyses: list[SubQueryAnalysis], max_additional: int) -> str:
    blocks = []
    for analysis in analyses:
        extracts = (
            "\n".join(f"- 《{one_line(display_source(e.source))}》“{one_line(e.text)}”" for e in analysis.extracts)
            or NONE
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
    # Sub-queries first, the question itself (q0) last: each aspect's evidence leads, the broad match fills in.
    for analysis in sorted(analyses, key=lambda a: a.sub_query.id == "q0"):
        for extract in analysis.extracts:
            key = (extract.chunk_id, extract.text)
            if key in seen:
                continue
            seen.add(key)
            lines.append(
                f"[E{len(lines) + 1}] 《{one_line(display_source(extract.source))}》“{one_line(extract.text)}”"
                f"（子查询：{one_line(analysis.sub_query.text)}）"
            )
    return (
        f"{ANSWER_QUESTION}{one_line(question)}\n{HISTORY}{format_history(history)}\n"
        f"{EVIDENCE}\n"
        + ("\n".join(lines) or NONE)
        + (f"\n{GAPS}" + "、".join(one_line(g) for g in gaps) if gaps else "")
    )
