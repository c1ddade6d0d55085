"""OfflineReasoner: the four reasoning steps without a language model, on typed data (the `Reasoner` interface of
`clincite.question.reasoner`).

- decompose: one sub-query per aspect asked ("角膜塑形镜的禁忌证"), follow-ups resolved to the previous topic;
- judge: the sections of the hits that pass the relevance floor for the sub-query's terms and aspect (passages.py);
- sufficiency: sufficient when every aspect found evidence; otherwise one more search per missing aspect, with that
  aspect's passage words;
- answer: the extractive report (report.py).
It records no token usage: there are no model calls to count.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from clincite.core.naming import display_source
from clincite.core.shapes import (
    ChatTurn,
    ExtractDraft,
    Hit,
    JudgeOutput,
    Mode,
    RelevantExtract,
    SubQuery,
    SubQueryAnalysis,
    SubQueryDraft,
    SufficiencyOutput,
)
from clincite.offline.lexicon import get_lexicon
from clincite.offline.passages import Candidate, candidates
from clincite.offline.questions import Ask, analyse
from clincite.report.extractive import Basis, extractive_report

OFFLINE_NOTICE = "离线演示模式：未配置大语言模型 API Key，以下内容由规则从知识库原文中逐字抽取拼接而成，未经模型归纳。"
STREAM_PIECE = 12  # characters per streamed piece of the report
MAX_EXTRACTS = 2
RELATIVE_FLOOR = 0.6  # an extract scoring below this share of the best one for its sub-query is left out
BASIS_CACHE = 4096
GENERAL_FOCUS = "综合"
STAGE2_CUES = 4


def previous_questions(history: list[ChatTurn]) -> list[str]:
    return [turn.content for turn in history if turn.role == "user"]


class OfflineReasoner:
    mode: Mode = "offline"

    def __init__(self, max_sub_queries: int = 5, notice: str = OFFLINE_NOTICE):
        self.max_sub_queries = max_sub_queries
        self.notice = notice
        self._basis: OrderedDict[tuple[str, str], Basis] = OrderedDict()

    async def open_connection(self) -> None:
        return None

    # --- the Reasoner interface (clincite.question.reasoner) ---
    async def decompose(
        self, question: str, history: list[ChatTurn], usage=None, stream: bool = True
    ) -> AsyncIterator[SubQueryDraft]:
        for draft in self.plan(question, history):
            yield draft

    async def judge(
        self, sub_query: SubQuery, question: str, history: list[ChatTurn], hits: list[Hit], usage=None
    ) -> JudgeOutput:
        return await asyncio.to_thread(self.assess, sub_query, question, history, hits)

    async def sufficiency(
        self, question: str, analyses: list[SubQueryAnalysis], limit: int, usage=None
    ) -> SufficiencyOutput:
        return self.verdict(analyses, limit)

    @asynccontextmanager
    async def answer(
        self, question: str, history: list[ChatTurn], analyses: list[SubQueryAnalysis], gaps: list[str], usage=None
    ) -> AsyncIterator[AsyncIterator[str]]:
        yield self._pieces(self.report(analyses, gaps))

    @staticmethod
    async def _pieces(report: str) -> AsyncIterator[str]:
        for i in range(0, len(report), STREAM_PIECE):
            yield report[i : i + STREAM_PIECE]
            await asyncio.sleep(0)

    # --- the same steps, synchronous ---
    def plan(self, question: str, history: list[ChatTurn]) -> list[SubQueryDraft]:
        ask = analyse(question, previous_questions(history))
        return [
            SubQueryDraft(text=text, focus=aspect or GENERAL_FOCUS)
            for text, aspect in ask.sub_query_texts()[: self.max_sub_queries]
        ]

    def assess(self, sub_query: SubQuery, question: str, history: list[ChatTurn], hits: list[Hit]) -> JudgeOutput:
        # The question itself (q0) is judged as the user meant it, follow-up resolved; a sub-query as written.
        ask = analyse(question, previous_questions(history)) if sub_query.id == "q0" else analyse(sub_query.text)
        picked = self._pick(candidates(ask, hits))
        for candidate in picked:
            self._remember(candidate, ask)
        extracts = [
            ExtractDraft(chunk_id=c.section.hit.chunk_id, source=c.section.hit.source, text=c.text) for c in picked
        ]
        if not picked:
            return JudgeOutput(
                extracts=[],
                confidence="low",
                missing=[sub_query.focus or sub_query.text],
                sub_answer=f"候选片段中没有同时涉及“{ask.subject}”与所问方面的内容。",
            )
        best = picked[0]
        where = " > ".join(best.section.path) or best.section.hit.title
        return JudgeOutput(
            extracts=extracts,
            confidence="high" if best.by_heading else "medium",
            missing=[],
            sub_answer=f"见“{display_source(best.section.hit.source)}”的“{where}”一节。",
        )

    def verdict(self, analyses: list[SubQueryAnalysis], limit: int) -> SufficiencyOutput:
        own = [a for a in analyses if a.sub_query.id != "q0"]
        covered = [a.sub_query.focus for a in own if a.extracts]
        missing = [a for a in own if not a.extracts and a.sub_query.focus not in covered]
        if not missing:
            return SufficiencyOutput(
                sufficient=True,
                confidence="high" if own else "medium",
                covered_aspects=covered,
                reasoning="离线规则：每个所问方面都找到了通过相关性下限的原文。",
            )
        extra = [
            SubQueryDraft(text=self._broader(a.sub_query.text, a.sub_query.focus), focus=a.sub_query.focus)
            for a in missing[:limit]
        ]
        names = [a.sub_query.focus if a.sub_query.focus != GENERAL_FOCUS else a.sub_query.text for a in missing]
        return SufficiencyOutput(
            sufficient=False,
            confidence="low",
            covered_aspects=covered,
            missing_key_aspects=names,
            additional_sub_queries=extra,
            reasoning="离线规则：以下方面没有找到通过相关性下限的原文，用该方面的常见说法再检索一次。",
        )

    def report(self, analyses: list[SubQueryAnalysis], gaps: list[str], notice: str | None = None) -> str:
        return extractive_report(analyses, gaps, self.basis_of, self.notice if notice is None else notice)

    # --- helpers ---
    @staticmethod
    def _pick(found: list[Candidate]) -> list[Candidate]:
        picked: list[Candidate] = []
        if any(c.about for c in found):  # sections about the subject beat sections that only mention it
            found = [c for c in found if c.about]
        for candidate in found:
            if picked and candidate.score < RELATIVE_FLOOR * picked[0].score:
                break
            same_section = any(
                p.section.hit.chunk_id == candidate.section.hit.chunk_id
                and p.section.path == candidate.section.path
                and p.aspect == candidate.aspect
                for p in picked
            )
            if not same_section and candidate.text not in {p.text for p in picked}:
                picked.append(candidate)
            if len(picked) == MAX_EXTRACTS:
                break
        return picked

    @staticmethod
    def _broader(text: str, focus: str) -> str:
        lex = get_lexicon()
        cues = [cue for cue, aspect in lex.passage_cues.items() if aspect == focus][:STAGE2_CUES]
        return f"{text} {' '.join(cues)}".strip()

    def _remember(self, candidate: Candidate, ask: Ask) -> None:
        section = candidate.section
        where = " > ".join(section.path) or section.hit.title
        if candidate.aspect:
            title = f"{ask.subject}的{candidate.aspect}"
            how = (
                f"该节标题即对应所问的“{candidate.aspect}”。"
                if candidate.by_heading
                else f"该句直接写到“{candidate.aspect}”相关内容。"
            )
        else:
            title = f"{ask.subject}：{section.path[-1]}" if section.path else ask.subject
            how = "该节讨论了问题所问的内容。" if candidate.by_heading else "该句含有问题中的关键词。"
        key = (section.hit.chunk_id, candidate.text)
        self._basis[key] = Basis(title=title, explanation=f"原文位于“{where}”一节；{how}")
        self._basis.move_to_end(key)
        while len(self._basis) > BASIS_CACHE:
            self._basis.popitem(last=False)

    def basis_of(self, extract: RelevantExtract, analysis: SubQueryAnalysis) -> Basis:
        known = self._basis.get((extract.chunk_id, extract.text))
        if known:
            return known
        # Extracts this reasoner did not judge (the LLM path's first-token fallback): say what the judge said.
        title = (
            analysis.sub_query.focus
            if analysis.sub_query.focus not in ("", GENERAL_FOCUS, "原问题")
            else analysis.sub_query.text.rstrip("？?。")
        )
        explanation = analysis.sub_answer.strip() or f"相关性判断认为该段原文回答了“{analysis.sub_query.text}”。"
        # 《》 marks the source line of an evidence item: inside the 说明 it would be read as the source.
        explanation = explanation.replace("《", "“").replace("》", "”").replace("\n", " ")
        return Basis(title=title, explanation=explanation[:200])
