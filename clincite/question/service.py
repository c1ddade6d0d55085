"""TwoStageQueryService: a clinician's question → a streamed, cited mini-report.

    service = TwoStageQueryService(settings)
    async for event in service.run("低浓度阿托品控制近视的效果和副作用？"):   # typed events (clincite.core.shapes)
        render(event)

The story of one question (`_answer_question`): decomposition streams its sub-queries, and each one is searched and
judged the moment it is complete, the question itself from the first millisecond; the sufficiency judge then runs
while the answer is already being generated speculatively; if the verdict wants more, stage 2 searches and judges the
additional sub-queries and the answer is generated from everything; finally every quote is checked against its
source. Every task of a question lives in a TaskGroup, so Stop (or a disconnect) cancels all of them at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from clincite.core.settings import Settings
from clincite.core.shapes import (
    AnswerDone,
    AnswerToken,
    ChatTurn,
    DecompositionReady,
    Event,
    NoticeEvent,
    QueryResult,
    Stage2Started,
    SubQuery,
    SubQueryAnalysis,
)
from clincite.kb.store import KnowledgeBase
from clincite.llm.agents import Agents
from clincite.llm.slots import open_question_slots
from clincite.question.answer_cache import AnswerCache, replay
from clincite.question.answering import FALLBACK_PIECE, open_answer, stream_answer
from clincite.question.citation_check import check_citations_async
from clincite.question.reasoner import LLMReasoner, Reasoner, build_reasoner
from clincite.question.run import QuestionRun
from clincite.question.speculation import AnswerGate
from clincite.question.stages import (
    Deps,
    Phase,
    decompose,
    judge,
    judge_sufficiency,
    search,
    search_and_judge,
)
from clincite.report.coverage import assess, evidence_gaps
from clincite.report.format import abstention_report
from clincite.retrieval.search import HybridSearcher

OFFLINE_BANNER = "离线演示模式：未配置大语言模型，回答由规则从原文抽取拼接，仅供演示。"
STAGE2_SKIPPED = "前面的步骤用时过长：已跳过第二阶段检索，直接依据已找到的证据回答。"
EMPTY_KB_NOTICE = "知识库为空：请先运行 `python ingest.py 文档目录/` 导入指南文档。"


class TwoStageQueryService:
    """Four reasoning steps (LLM agents or offline) over hybrid search; `run()` yields events, `ask()` the result."""

    # The benchmark's baselines (bench/baselines.py) switch speculation off and replace `_stage1`.
    speculate = True

    def __init__(
        self,
        settings: Settings,
        searcher: HybridSearcher | None = None,
        agents: Agents | None = None,
        reasoner: Reasoner | None = None,
    ):
        self.settings = settings
        self.searcher = searcher or HybridSearcher(settings)
        self._reasoner = reasoner or (LLMReasoner(agents) if agents is not None else None)
        self.cache = AnswerCache(settings.answer_cache_size)

    @property
    def reasoner(self) -> Reasoner:
        # Built on first use, inside the running event loop: the HTTP client belongs to that loop.
        if self._reasoner is None:
            self._reasoner = build_reasoner(self.settings, self.searcher)
        return self._reasoner

    @reasoner.setter
    def reasoner(self, reasoner: Reasoner) -> None:
        self._reasoner = reasoner

    @property
    def agents(self) -> Agents:
        """The LLM agents (tests `.override(model=…)` them); offline mode has none."""
        agents = getattr(self.reasoner, "agents", None)
        if agents is None:
            raise AttributeError("offline mode answers without LLM agents (clincite.offline.OfflineReasoner)")
        return agents

    @property
    def deps(self) -> Deps:
        return Deps(settings=self.settings, searcher=self.searcher, reasoner=self.reasoner)

    @property
    def mode(self) -> str:
        return self.reasoner.mode

    @property
    def kb(self) -> KnowledgeBase:
        return self.searcher.kb

    async def warm_up(self) -> None:
        """jieba, BM25, Chroma, the embedding model, the agents and the HTTP connection, before the first question."""
        await asyncio.gather(asyncio.to_thread(self.searcher.warm_up), self.reasoner.open_connection())

    async def ask(self, question: str, history: list[ChatTurn] | None = None) -> QueryResult:
        result = None
        async for event in self.run(question, history):
            if isinstance(event, AnswerDone):
                result = event.result
        assert result is not None, "a run always ends with AnswerDone"
        return result

    async def run(self, question: str, history: list[ChatTurn] | None = None) -> AsyncIterator[Event]:
        """The events of one question, in order of happening. Closing the iterator cancels the question."""
        history = list(history or [])[-2 * self.settings.history_turns :]
        # The version the searcher serves now (reading it may touch the KB folder: off the loop). A run is stored
        # under the version its searches actually read, which may be older than the catalogue's during an ingest.
        serving = await asyncio.to_thread(lambda: self.searcher.serving_version)
        if cached := self.cache.get(self.cache.key(question, history, self._fingerprint(serving))):
            async for event in replay(cached):
                yield event
            return
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        recorded: list[Event] = []

        def emit(event: Event) -> None:
            recorded.append(event)
            queue.put_nowait(event)

        question_run = QuestionRun(question=question, history=history, emit_event=emit)
        task = asyncio.create_task(self._answer_question(question_run))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task  # re-raises a programming error instead of ending silently
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)  # nothing of this question outlives it
        if len(question_run.kb_versions) == 1:  # an answer of one KB version (not one straddling a swap)
            (version,) = question_run.kb_versions
            self.cache.remember(self.cache.key(question, history, self._fingerprint(version)), recorded)

    # --- the story of one question ---
    async def _answer_question(self, run: QuestionRun) -> None:
        deps = self.deps
        open_question_slots(self.settings.llm_max_concurrency_per_question)
        await self._opening_notices(run)
        run.sub_queries, run.stage1 = await self._stage1(run)
        async with asyncio.TaskGroup() as tasks:
            gate = AnswerGate()
            gaps = evidence_gaps(run.stage1, None)
            # No evidence at all: nothing to speculate on; the answer step is skipped unless stage 2 finds some.
            speculate = self.speculate and any(a.extracts for a in run.stage1)
            speculative = tasks.create_task(stream_answer(deps, run, run.stage1, gate, gaps)) if speculate else None
            run.verdict = await judge_sufficiency(deps, run, run.stage1)
            too_late = not run.verdict.sufficient and run.elapsed() > self.settings.stage2_deadline
            if too_late:
                run.degrade("stage2", STAGE2_SKIPPED, f"verdict at {run.elapsed():.1f} s, after STAGE2_DEADLINE")
            if run.verdict.sufficient or too_late:
                gate.release()
                run.coverage = assess(run.stage1, gaps)
                answer = await (speculative or self._answer(run, run.stage1, gaps))
            else:
                gate.drop()  # never shown nor stored; cancelled at once so it frees its LLM slot
                if speculative is not None:
                    speculative.cancel()
                run.stage2_queries = run.verdict.additional_sub_queries
                run.stage2 = await self._stage2(run, run.stage2_queries)
                gaps = evidence_gaps(run.analyses, run.verdict, stage2_ran=True)
                run.coverage = assess(run.analyses, gaps)
                answer = await self._answer(run, run.analyses, gaps)
        citations = await check_citations_async(answer, self.kb.catalogue)
        search_mode = "bm25" if self.searcher.bm25_only else "hybrid"
        run.emit(AnswerDone(result=run.result(self.mode, search_mode, answer, citations)))

    async def _answer(self, run: QuestionRun, analyses: list[SubQueryAnalysis], gaps: list[str]) -> str:
        """The report; when no sub-query kept any evidence, the plain abstention instead (no answer model call)."""
        if any(a.extracts for a in analyses):
            return await stream_answer(self.deps, run, analyses, AnswerGate.opened(), gaps)
        searched = [sq.text for sq in [*run.sub_queries, *run.stage2_queries]]
        report = abstention_report(run.question, searched, run.closest_sources())
        await open_answer(run, AnswerGate.opened())
        for i in range(0, len(report), FALLBACK_PIECE):
            run.emit(AnswerToken(text=report[i : i + FALLBACK_PIECE]))
        run.finish("answer")
        return report

    async def _opening_notices(self, run: QuestionRun) -> None:
        if self.mode == "offline":
            run.emit(NoticeEvent(kind="offline", message=OFFLINE_BANNER))
        if await asyncio.to_thread(self.kb.catalogue.document_count) == 0:
            run.emit(NoticeEvent(kind="empty_kb", message=EMPTY_KB_NOTICE))

    async def _stage1(self, run: QuestionRun) -> tuple[list[SubQuery], list[SubQueryAnalysis]]:
        """Search and judge each sub-query the moment it is complete; the question itself from the start."""
        deps = self.deps
        original = SubQuery(id="q0", text=run.question, focus="原问题")
        sub_queries: list[SubQuery] = []
        phases = (Phase(run, "search"), Phase(run, "judgement"))

        def search_and_judge_soon(sub_query: SubQuery) -> asyncio.Task[SubQueryAnalysis]:
            for phase in phases:
                phase.expect()
            return tasks.create_task(search_and_judge(deps, run, sub_query, 1, phases))

        try:
            async with asyncio.TaskGroup() as tasks:
                judged = [search_and_judge_soon(original)]
                async for sub_query in decompose(deps, run):
                    sub_queries.append(sub_query)
                    judged.append(search_and_judge_soon(sub_query))
                run.emit(DecompositionReady(sub_queries=sub_queries))
                for phase in phases:
                    phase.close()  # nothing more to search: each stage ends with its last call
        finally:
            for phase in phases:
                phase.end()
        return sub_queries, [task.result() for task in judged]

    async def _stage2(self, run: QuestionRun, sub_queries: list[SubQuery]) -> list[SubQueryAnalysis]:
        run.start("stage2")
        run.emit(Stage2Started(sub_queries=sub_queries))
        hits = await search(self.deps, run, sub_queries, stage=2)
        fresh = [[h for h in found if h.chunk_id not in run.stage1_chunks] for found in hits]  # judged once only
        analyses = await self._judge_all(run, sub_queries, fresh, stage=2)
        run.finish("stage2")
        return analyses

    async def _judge_all(
        self, run: QuestionRun, sub_queries: list[SubQuery], hits, stage: int, phase: Phase | None = None
    ) -> list[SubQueryAnalysis]:
        async with asyncio.TaskGroup() as tasks:
            judged = [
                tasks.create_task(judge(self.deps, run, sq, found, stage, phase))
                for sq, found in zip(sub_queries, hits, strict=True)
            ]
        return [task.result() for task in judged]

    def _fingerprint(self, kb_version: int) -> list:
        """Everything besides the question that decides an answer: a change makes cached answers stale."""
        s = self.settings
        return [
            kb_version,
            self.mode,
            s.embedding_model,
            s.bm25_top_k,
            s.semantic_top_k,
            s.bm25_threshold,
            s.semantic_threshold,
            s.semantic_floor,
            s.decomposition_model,
            s.relevance_judge_model,
            s.sufficiency_judge_model,
            s.answer_generation_model,
            s.answer_generation_temperature,
        ]
