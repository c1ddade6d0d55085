"""Coverage: what the evidence answers and what it does not (the words for it: `clincite.report.format`).

    gaps = evidence_gaps(run.analyses, run.verdict)      # aspects nobody found evidence for
    coverage = assess(run.analyses, gaps)                # answered | partial | no_evidence (shapes.Coverage)

A sub-query counts as covered when its judge kept at least one verbatim extract. After stage 2, a missing key aspect
of the sufficiency verdict stays a gap unless a stage-2 sub-query aimed at it (sharing at least half of the aspect's
character pairs) found evidence.
"""

from __future__ import annotations

from clincite.core.shapes import Coverage, SubQueryAnalysis, SufficiencyVerdict

GAP_NAME_CHARS = 16


def evidence_gaps(
    analyses: list[SubQueryAnalysis], verdict: SufficiencyVerdict | None, stage2_ran: bool = False
) -> list[str]:
    """Aspects asked (sub-queries, the verdict's missing aspects after stage 2) that no evidence answers."""
    found = [a for a in analyses if a.extracts]
    if not found:
        return []  # nothing at all: that is an abstention, not a gap
    gaps: list[str] = []
    covered_foci = {a.sub_query.focus for a in found if a.sub_query.focus}
    aimed = stage2_ran and verdict is not None and bool(verdict.missing_key_aspects)
    for analysis in analyses:
        if analysis.sub_query.id == "q0" or analysis.extracts:
            continue
        if aimed and analysis.sub_query.id.startswith("s2-"):
            continue  # a stage-2 sub-query was aimed at a missing aspect of the verdict: that aspect is the gap
        text, focus = analysis.sub_query.text, analysis.sub_query.focus
        # A short sub-query names the gap best (离焦框架眼镜的禁忌证); a long affirmative one is named by its focus.
        name = text if len(text) <= GAP_NAME_CHARS or focus in ("", "综合", "原问题") else focus
        if analysis.sub_query.focus not in covered_foci and name not in gaps:
            gaps.append(name)
    if stage2_ran and verdict is not None:
        stage2_found = [f"{a.sub_query.focus}{a.sub_query.text}" for a in found if a.sub_query.id.startswith("s2-")]
        for aspect in verdict.missing_key_aspects:
            named = any(aspect in gap for gap in gaps)  # 禁忌证 is already in 离焦框架眼镜的禁忌证
            if aspect and not named and not any(_aims_at(aspect, text) for text in stage2_found):
                gaps.append(aspect)
    return gaps


def _aims_at(aspect: str, text: str) -> bool:
    pairs = {aspect[i : i + 2] for i in range(len(aspect) - 1)} or {aspect}
    return sum(p in text for p in pairs) >= len(pairs) / 2


def assess(analyses: list[SubQueryAnalysis], gaps: list[str]) -> Coverage:
    if not any(a.extracts for a in analyses):
        return Coverage(status="no_evidence", missing=[])
    if gaps:
        return Coverage(status="partial", missing=list(gaps))
    return Coverage(status="answered", missing=[])
