"""The report format: the one place that writes ClinCite's mini-report, whoever fills it in.

    report = compose(tldr="…【1】", conclusion=["- **标题**：…【1】"], gaps=[], items=[EvidenceItem(…)])

Every path writes through here — the answer prompt's example (`clincite.llm.prompts`), the offline and fallback
extractive report (`clincite.report.extractive`), the abstention, the sources appended when generation fails
(`clincite.question.answering`) — and `clincite.report.citations` reads the same shape back:

    **TL;DR：** 一句话结论【1】

    ### 完整结论
    …

    ### 论据与来源
    **【1】论据标题**
    说明：……
    来源：《来源文件名》
    原文：“逐字原文”
"""

from __future__ import annotations

from dataclasses import dataclass

from clincite.core.naming import display_source
from clincite.core.shapes import Coverage

TLDR_LABEL = "**TL;DR：**"
CONCLUSION_HEADING = "### 完整结论"
EVIDENCE_HEADING = "### 论据与来源"
SOURCES_FOUND_HEADING = "### 已找到的来源"
GAP_LABEL = "证据缺口"
ABSTAIN_TLDR = "知识库中未找到关于“{subject}”的证据。"
NO_ITEMS = "无"
CLOSEST_DOCUMENTS = 3
BASIS_LABEL = "说明："
PLACE_LABEL = "原文位于"  # an offline evidence item's 说明 opens with where its quote stands: 原文位于“慢性泪囊炎”


@dataclass
class EvidenceItem:
    number: int
    title: str
    explanation: str
    source: str  # the cited name, as clinicians see it
    quote: str  # verbatim


def evidence_item(item: EvidenceItem) -> str:
    """One evidence item of 论据与来源, exactly as the answer prompt asks the LLM to write it."""
    explanation = item.explanation.replace("《", "“").replace("》", "”").replace("\n", " ")  # 《》 marks the source
    head = f"**【{item.number}】{item.title}**"
    return f"{head}\n{BASIS_LABEL}{explanation}\n来源：《{item.source}》\n原文：“{item.quote}”"


def tldr_of(report: str) -> str:
    """A report's TL;DR as written (citation marks and all); "" for text of another shape."""
    for line in report.splitlines():
        if line.startswith(TLDR_LABEL):
            return line[len(TLDR_LABEL) :].strip()
    return ""


def first_place_of(report: str) -> str:
    """Where a report's first quote stands, as its 说明 says (原文位于“飞蚊症-眼科医院转载”); "" where none says. Only
    an evidence item's 说明 line counts: a quoted document's own "原文位于…" in the TL;DR says nothing of the report."""
    opening = f"{BASIS_LABEL}{PLACE_LABEL}“"
    _, _, evidence = report.partition(EVIDENCE_HEADING)
    line = next((line for line in evidence.splitlines() if line.startswith(opening)), "")
    place, closed, _ = line[len(opening) :].partition("”")
    return place if closed else ""


def gap_line(gaps: list[str]) -> str:
    named = "、".join(f"“{g}”" for g in gaps)
    return f"**{GAP_LABEL}**：知识库中未找到关于{named}的证据，以上结论不涉及这些方面。"


def notice_block(notice: str) -> str:
    return f"> {notice}\n\n" if notice else ""


def compose(tldr: str, conclusion: list[str], gaps: list[str], items: list[EvidenceItem], notice: str = "") -> str:
    """The whole report: TL;DR, 完整结论 (with the 证据缺口 line when aspects went unanswered), 论据与来源."""
    body = "\n".join(conclusion) or "知识库中没有可引用的原文。"
    if gaps:
        body += f"\n\n{gap_line(gaps)}"
    evidence = "\n\n".join(evidence_item(item) for item in items) or NO_ITEMS
    return (
        f"{notice_block(notice)}{TLDR_LABEL} {tldr}\n\n{CONCLUSION_HEADING}\n{body}\n\n{EVIDENCE_HEADING}\n{evidence}\n"
    )


def subject_of(question: str) -> str:
    return question.strip().rstrip("？?。！!，, ") or question


def abstention_report(question: str, searched: list[str], closest: list[str], notice: str = "") -> str:
    """No passage bears on the question: say so plainly, cite nothing, name what was searched and where."""
    queries = "；".join(f"“{q}”" for q in dict.fromkeys(searched) if q) or f"“{subject_of(question)}”"
    documents = "、".join(f"《{display_source(s)}》" for s in closest[:CLOSEST_DOCUMENTS])
    nearest = (
        f"检索到的最接近的文档是{documents}，但其中没有与所问内容相符的段落，因此不引用它们作为依据。"
        if documents
        else "知识库中没有检索到任何相近的段落。"
    )
    return (
        f"{notice_block(notice)}{TLDR_LABEL} {ABSTAIN_TLDR.format(subject=subject_of(question))}\n\n"
        f"{CONCLUSION_HEADING}\n已按{queries}检索知识库。{nearest}"
        "请补充相关指南后再问，或换一种问法；在此之前请勿把本回答当作临床依据。\n\n"
        f"{EVIDENCE_HEADING}\n{NO_ITEMS}\n"
    )


def sources_section(items: list[EvidenceItem]) -> str:
    """The evidence found so far, when answer generation failed: what a clinician still gets."""
    return f"{SOURCES_FOUND_HEADING}\n" + ("\n\n".join(evidence_item(i) for i in items) or NO_ITEMS) + "\n"


def coverage_line(coverage: Coverage) -> str:
    """How far the evidence answers the question, in the clinician's words (the report's footer)."""
    if coverage.status == "no_evidence":
        return "证据覆盖：⚠️ 知识库中没有与该问题相符的证据，本回答不作结论。"
    if coverage.status == "partial":
        return "证据覆盖：⚠️ 部分回答，知识库未涵盖：" + "、".join(coverage.missing) + "。"
    return "证据覆盖：所问各方面均找到了原文证据。"
