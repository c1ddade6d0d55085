"""The extractive report: TL;DR → 完整结论 → 论据与来源, built from judged extracts, every sentence verbatim.

Used by the offline answerer, and by the LLM path when the answer model has produced nothing within its first-token
budget. Nothing is paraphrased: the TL;DR and 完整结论 are the extracts' own sentences, each followed by the 【n】 of
the evidence item it comes from; aspects without evidence are named in a "证据缺口" line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clincite.core.naming import display_source
from clincite.core.shapes import RelevantExtract, SubQueryAnalysis
from clincite.report.citations import format_evidence_item
from clincite.report.coverage import gap_line

_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]?")
MAX_ITEMS = 5
PER_ANALYSIS = 2
CONCLUSION_CHARS = 160
PRONOUN_START = ("它", "其", "这", "该", "此", "上述")
KEY_SENTENCE_MARGIN = 3  # bigrams of the question a later sentence must share beyond the opening to lead the TL;DR


@dataclass
class Basis:
    """Why an extract was chosen: the title of its evidence item and the 说明 line (not filler: where and how)."""

    title: str
    explanation: str


@dataclass
class Item:
    number: int
    analysis: SubQueryAnalysis
    extract: RelevantExtract
    basis: Basis


def extractive_report(analyses: list[SubQueryAnalysis], gaps: list[str], basis_of, notice: str = "") -> str:
    """`basis_of(extract, analysis)` gives each item's title and explanation."""
    items = _items(analyses, basis_of)
    label = f"> {notice}\n\n" if notice else ""
    gap = f"\n\n{gap_line(gaps)}" if gaps else ""
    tldr = (
        f"{_key_sentence(items[0].extract.text, items[0].analysis.sub_query.text)}【1】"
        if items
        else "未找到可引用的原文。"
    )
    conclusion = _conclusion(items) + gap
    evidence = "\n\n".join(
        format_evidence_item(
            item.number,
            item.basis.title,
            item.basis.explanation,
            display_source(item.extract.source),
            item.extract.text,
        )
        for item in items
    )
    return f"{label}**TL;DR：** {tldr}\n\n### 完整结论\n{conclusion}\n\n### 论据与来源\n{evidence or '无'}\n"


def _items(analyses: list[SubQueryAnalysis], basis_of) -> list[Item]:
    """Sub-queries in order, up to two extracts each; the question itself (q0) only fills in when they have none."""
    own = [a for a in analyses if a.sub_query.id != "q0" and a.extracts]
    chosen = own or [a for a in analyses if a.extracts]
    items: list[Item] = []
    seen: set[str] = set()
    for analysis in chosen:
        for extract in analysis.extracts[:PER_ANALYSIS]:
            if extract.text in seen or any(extract.text in s or s in extract.text for s in seen):
                continue
            seen.add(extract.text)
            items.append(Item(len(items) + 1, analysis, extract, basis_of(extract, analysis)))
            if len(items) == MAX_ITEMS:
                return items
    return items


def _opening(text: str) -> str:
    """The first sentence, or the first two when the second only continues it (它/其…)."""
    found = [s for s in _SENTENCE.findall(text) if s.strip()]
    if not found:
        return text
    if len(found) > 1 and found[1].startswith(PRONOUN_START):
        return found[0] + found[1]
    return found[0]


def _key_sentence(text: str, query: str) -> str:
    """The opening sentence, unless a later one shares clearly more of the question's wording: a section that opens
    with context ("…风险较高。") then leads with the sentence that answers ("…每年至少进行一次散瞳眼底检查…")."""
    found = [s for s in _SENTENCE.findall(text) if s.strip()]
    if len(found) < 2:
        return _opening(text)
    wanted = _bigrams(query)
    shared = [len(wanted & _bigrams(sentence)) for sentence in found]
    best = max(range(len(found)), key=lambda i: (shared[i], -i))
    if shared[best] < max(shared[0] + KEY_SENTENCE_MARGIN, 1.5 * shared[0]):  # the opening, unless clearly beaten
        return _opening(text)
    sentence = found[best]
    with_previous = found[best - 1] + sentence
    if sentence.startswith(PRONOUN_START) and with_previous in text:  # 它/其… needs what it refers to
        return with_previous
    return sentence


def _bigrams(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1) if not any(c in "，。？！、,.?! " for c in text[i : i + 2])}


def _summary(text: str) -> str:
    """The whole extract when it is short, else its opening: the conclusion stays readable and verbatim."""
    return text if len(text) <= CONCLUSION_CHARS else _opening(text)


def _conclusion(items: list[Item]) -> str:
    lines, by_title = [], {}
    for item in items:
        by_title.setdefault(item.basis.title, []).append(item)
    for title, group in by_title.items():
        body = "".join(f"{_summary(i.extract.text)}【{i.number}】" for i in group)
        lines.append(f"- **{title}**：{body}")
    return "\n".join(lines) or "知识库中没有可引用的原文。"
