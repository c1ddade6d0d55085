"""OfflineReasoner: the four reasoning steps without a language model, on typed data (the `Reasoner` interface of
`clincite.question.reasoner`).

    reasoner = OfflineReasoner(
        stats=searcher.term_stats, openings=searcher.section_openings, topics=searcher.document_topics
    )
    # idf of the KB being served, the openings of the sections long passages carry on, the documents' tags

- decompose: the question's parts ("低浓度阿托品的效果和副作用分别是什么" → one per aspect; "DIMS和HAL有什么区别" →
  one per subject), function words left out; a follow-up resolved to the previous subject;
- judge: `clincite.offline.relevance` — passages and their units scored on the search scores, the question's
  idf-weighted terms and the aspect asked; every extract verbatim, with the reason it was kept (`ExtractBasis`);
- sufficiency: sufficient when every part found evidence; otherwise one more search per missing aspect, with that
  aspect's usual wording;
- answer: the extractive report (`clincite.report.extractive`).
Nothing is kept between questions: each step re-reads the question it is given. It records no token usage.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from clincite.core.naming import display_source
from clincite.core.shapes import (
    ChatTurn,
    ExtractBasis,
    ExtractDraft,
    Hit,
    JudgeOutput,
    Mode,
    SubQuery,
    SubQueryAnalysis,
    SubQueryDraft,
    SufficiencyOutput,
)
from clincite.offline.lexicon import get_lexicon
from clincite.offline.questions import Ask, analyse, previous_questions, split_questions, written_together
from clincite.offline.relevance import Evidence, Part, TermStats, judge
from clincite.report.extractive import extractive_report
from clincite.report.format import PLACE_LABEL

OFFLINE_NOTICE = "离线演示模式：未配置大语言模型 API Key，以下内容由规则从知识库原文中逐字抽取拼接而成，未经模型归纳。"
STREAM_PIECE = 12  # characters per streamed piece of the report
GENERAL_FOCUS = "综合"
STAGE2_CUES = 4
_SENTENCE_END = re.compile(r"[。！!；;？?]")
ASKED_CHARS = 24  # a question of a message this short names its own part
SEARCH_DEPTH = 12  # passages per retriever: the offline judge is cheap, and reading more finds what ranks lower


class OfflineReasoner:
    mode: Mode = "offline"
    search_depth = SEARCH_DEPTH

    def __init__(
        self,
        max_sub_queries: int = 5,
        notice: str = OFFLINE_NOTICE,
        stats: Callable[[], TermStats | None] | None = None,
        openings: Callable[[list[Hit]], dict[str, str]] | None = None,
        topics: Callable[[list[Hit]], dict[str, str]] | None = None,
    ):
        self.max_sub_queries = max_sub_queries
        self.notice = notice
        self._stats = stats or (lambda: None)
        self._openings = openings or (lambda hits: {})
        self._topics = topics or (lambda hits: {})

    async def open_connection(self) -> None:
        return None

    def _together(self, history: list[ChatTurn]):
        """For a question in a chat: whether the KB writes of a new subject with the last one (its index)."""
        return written_together(self._stats()) if history else None

    def _asks(self, question: str, history: list[ChatTurn]) -> list[Ask]:
        """Each question of the message analysed on its own, after the chat and the questions before it in the same
        message ("…霰粒肿。要不要点抗生素眼药水？它和针眼到底有啥区别？": 它 is the 霰粒肿 of the first)."""
        previous = previous_questions(history)
        pieces = split_questions(question)
        together = self._together(history) if len(pieces) == 1 else written_together(self._stats())
        asks = []
        for index, piece in enumerate(pieces):
            asks.append(analyse(piece, previous, together=together, same_message=index > 0))
            previous = [*previous, piece]
        return asks

    def _whole(self, question: str, history: list[ChatTurn]) -> Ask:
        return analyse(question, previous_questions(history), together=self._together(history))

    def _parts(self, question: str, history: list[ChatTurn]) -> list[tuple[Ask, str, str, list | None]]:
        """(the question it belongs to, search text, aspect, subjects) of every part of the message, in order."""
        parts, seen = [], set()
        for ask in self._asks(question, history):
            for text, aspect, subjects in ask.sub_queries():
                if text not in seen:
                    seen.add(text)
                    parts.append((ask, text, aspect, subjects))
        return parts

    def _off_loop(self, question: str, history: list[ChatTurn]) -> bool:
        """Reading a chat or a message of several questions asks the KB's index (`written_together`): off the loop."""
        return bool(history) or len(split_questions(question)) > 1

    # --- the Reasoner interface (clincite.question.reasoner) ---
    def question_search_text(self, question: str, history: list[ChatTurn]) -> str:
        """A question that asks one thing is searched (and judged, `_part`) as the one sub-query it plans: the fast
        path then answers from the very evidence the full pipeline would (no model to save time on here)."""
        whole = self._whole(question, history)
        parts = whole.sub_queries()
        return parts[0][0] if len(parts) == 1 else whole.resolved

    async def decompose(
        self, question: str, history: list[ChatTurn], usage=None, stream: bool = True
    ) -> AsyncIterator[SubQueryDraft]:
        off_loop = self._off_loop(question, history)
        drafts = await asyncio.to_thread(self.plan, question, history) if off_loop else self.plan(question, history)
        for draft in drafts:
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
        parts = self._parts(question, history)
        several = len({id(ask) for ask, *_ in parts}) > 1  # each question of the message named as asked
        return [
            SubQueryDraft(
                text=text,
                focus=_as_asked(ask)
                if several and not aspect
                else _focus(aspect, ask.named(subjects) if subjects else ""),
            )
            for ask, text, aspect, subjects in parts[: self.max_sub_queries]
        ]

    def assess(self, sub_query: SubQuery, question: str, history: list[ChatTurn], hits: list[Hit]) -> JudgeOutput:
        ask, part = self._asked_by(sub_query, question, history)
        found = judge(ask, part, hits, self._stats(), openings=self._openings(hits), topics=self._topics(hits))
        if not found:
            return JudgeOutput(
                extracts=[],
                confidence="low",
                missing=[sub_query.focus if sub_query.focus not in ("", GENERAL_FOCUS, "原问题") else sub_query.text],
                sub_answer=f"候选片段中没有回答“{_asked(ask, part)}”的内容。",
            )
        best = found[0]
        return JudgeOutput(
            extracts=[
                ExtractDraft(chunk_id=e.hit.chunk_id, source=e.hit.source, text=e.text, basis=_basis(ask, part, e))
                for e in found
            ],
            confidence="high" if best.by_heading or best.aspect else "medium",
            missing=[],
            sub_answer=f"见《{display_source(best.hit.source)}》“{_where(best)}”。",
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
                reasoning="离线规则：问题的每个部分都找到了通过相关性判断的原文。",
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
            reasoning="离线规则：以下部分没有找到通过相关性判断的原文，用该方面的常见说法再检索一次。",
        )

    def report(self, analyses: list[SubQueryAnalysis], gaps: list[str], notice: str | None = None) -> str:
        return extractive_report(analyses, gaps, self.notice if notice is None else notice)

    # --- helpers ---
    def _asked_by(self, sub_query: SubQuery, question: str, history: list[ChatTurn]) -> tuple[Ask, Part]:
        """The question of the message a sub-query stands for, and its part; q0 and a message of one question: the
        whole question."""
        if sub_query.id == "q0":  # the message as one question: what its search found for all it asks
            whole = self._whole(question, history)
            return whole, self._part(whole, sub_query)
        asks = self._asks(question, history)
        if len(asks) == 1:
            return asks[0], self._part(asks[0], sub_query)
        for ask in asks:  # a part as planned, or searched again with its aspect's usual wording (stage 2)
            for text, aspect, subjects in ask.sub_queries():
                if sub_query.text == text or sub_query.text.startswith(f"{text} "):
                    return ask, Part(sub_query.text, [aspect] if aspect else [], subjects)
        return asks[0], self._part(asks[0], sub_query)

    @staticmethod
    def _part(ask: Ask, sub_query: SubQuery) -> Part:
        """The part of the question a sub-query stands for (q0: the whole question)."""
        parts = ask.sub_queries()
        if sub_query.id == "q0" and len(parts) != 1:
            return Part(ask.resolved, list(ask.aspects))
        if sub_query.id == "q0":  # a question that asks one thing: judged as its one sub-query (question_search_text)
            text, aspect, subjects = parts[0]
            return Part(text, [aspect] if aspect else [], subjects)
        for text, aspect, subjects in ask.sub_queries():
            if text == sub_query.text:
                return Part(text, [aspect] if aspect else [], subjects)
        aspect = sub_query.focus if sub_query.focus in get_lexicon().aspects else ""
        return Part(sub_query.text, [aspect] if aspect else list(ask.aspects))

    @staticmethod
    def _broader(text: str, focus: str) -> str:
        lex = get_lexicon()
        cues = [cue for cue, aspect in lex.passage_cues.items() if aspect == focus][:STAGE2_CUES]
        return f"{text} {' '.join(c for c in cues if c not in text)}".strip()


def _as_asked(ask: Ask) -> str:
    """One question of several in a message, as a clinician reads its part in the coverage line: its last sentence
    as asked when that is short ("要等多大做探通", not the story before it), else its subject."""
    asked = _SENTENCE_END.split(ask.question.strip().rstrip("？?。！!").strip())[-1].strip()
    return asked if 0 < len(asked) <= ASKED_CHARS else ask.shown_subject


def _focus(aspect: str, subject: str) -> str:
    if subject:
        return subject + (f"的{aspect}" if aspect else "")
    return aspect or GENERAL_FOCUS


def _subject(ask: Ask, part: Part) -> str:
    return ask.named(part.subjects) if part.subjects else ask.shown_subject


def _asked(ask: Ask, part: Part) -> str:
    subject = _subject(ask, part)
    return f"{subject}的{'、'.join(part.aspects)}" if part.aspects else subject


def _where(evidence: Evidence) -> str:
    return " > ".join(evidence.path) or evidence.hit.title


def _basis(ask: Ask, part: Part, evidence: Evidence) -> ExtractBasis:
    """The evidence item's title and 说明: where the passage stands and why it was kept (not filler)."""
    subject = _subject(ask, part)
    title = (
        f"{subject}的{evidence.aspect}"
        if evidence.aspect
        else (f"{subject}：{evidence.path[-1]}" if evidence.path else subject)
    )
    reasons = []
    if evidence.aspect and evidence.by_heading:
        reasons.append(f"该节标题即对应所问的“{evidence.aspect}”")
    elif evidence.aspect:
        reasons.append(f"原文直接写到“{evidence.aspect}”相关内容")
    if evidence.matched:
        reasons.append("包含问题中的关键词" + "、".join(f"“{m}”" for m in evidence.matched[:4]))
    if evidence.kind == "list":
        reasons.append("整条列表原样列出")
    elif evidence.kind == "row":
        reasons.append("为表格中的对应一行（含列名）")
    where = f"{PLACE_LABEL}“{_where(evidence)}”"
    explanation = "；".join([where, *reasons]) + "。"
    explanation = explanation.replace("《", "“").replace("》", "”")
    return ExtractBasis(title=title, explanation=explanation, lead=evidence.lead)
