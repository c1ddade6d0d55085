"""The user messages the four agents receive: how questions, history, fragments and evidence are written for them.

The system prompts are the Chinese text files in `prompts/`; `load_prompt` reads them.
"""

from __future__ import annotations

from pathlib import Path

from clincite.naming import display_source
from clincite.settings import PROJECT_DIR
from clincite.shapes import ChatTurn, Hit, SubQuery, SubQueryAnalysis

PROMPTS_DIR = PROJECT_DIR / "prompts"
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
NONE = "（无）"




def load_prompt(name: str, prompts_dir: Path = PROMPTS_DIR) -> str:
    return (prompts_dir / PROMPT_FILES[name]).read_text(encoding="utf-8").strip()




def format_history(history: list[ChatTurn]) -> str:
    if not history:
        return NONE
    lines = []
    for turn in history:
        text = turn.content.strip().replace("\n", " ")
        if turn.role == "assistant" and len(text) > HISTORY_CHARS:
            text = text[:HISTORY_CHARS] + "……（已截断）"
        lines.append(f"{'用户' if turn.role == 'user' else '助手'}：{text}")
    return "\n".join(lines)


def decomposition_prompt(question: str, history: list[ChatTurn]) -> str:
    return f"{HISTORY}\n{format_history(history)}\n{QUESTION}\n{question}"


def sub_query_line(sub_query: SubQuery) -> str:
    focus = f"（维度：{sub_query.focus}）" if sub_query.focus else ""
    return f"{sub_query.id}｜{sub_query.text}{focus}"


def judge_prompt(sub_query: SubQuery, question: str, hits: list[Hit]) -> str:
    fragments = "\n".join(
        f'<片段 id="{h.chunk_id}" 来源="{display_source(h.source)}" 标题="{" > ".join([h.title, *h.heading_path])}">\n'
        f"{h.text}\n</片段>"
        for h in hits
    )
    return (f"{SUB_QUERY}{sub_query_line(sub_query)}\n{ORIGINAL_QUESTION}{question}\n"
            f"{FRAGMENTS}\n{fragments or NONE}")


def sufficiency_prompt(question: str, analyses: list[SubQueryAnalysis], max_additional: int) -> str:
    blocks = []
    for analysis in analyses:
        extracts = "\n".join(f"- 《{display_source(e.source)}》“{e.text}”" for e in analysis.extracts) or NONE
        blocks.append(
            f"### {sub_query_line(analysis.sub_query)}\n子回答：{analysis.sub_answer or NONE}\n"
            f"置信度：{analysis.confidence}\n缺失方面：{'、'.join(analysis.missing) or '无'}\n摘录：\n{extracts}"
        )
    return (f"{ORIGINAL_QUESTION}{question}\n{ANALYSES}\n" + "\n".join(blocks)
            + f"\n{ADDITIONAL_LIMIT}{max_additional}")


def answer_prompt(question: str, history: list[ChatTurn], analyses: list[SubQueryAnalysis]) -> str:
    lines = []
    seen: set[tuple[str, str]] = set()
    # Sub-queries first, the question itself (q0) last: each aspect's evidence leads, the broad match fills in.
    for analysis in sorted(analyses, key=lambda a: a.sub_query.id == "q0"):
        for extract in analysis.extracts:
            key = (extract.chunk_id, extract.text)
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"[E{len(lines) + 1}] 《{display_source(extract.source)}》“{extract.text}”"
                         f"（子查询：{analysis.sub_query.text}）")
    return (f"{ANSWER_QUESTION}{question}\n{HISTORY}{format_history(history)}\n"
            f"{EVIDENCE}\n" + ("\n".join(lines) or NONE))
