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
import logging
from collections.abc import AsyncIterator

from clincite.core.settings import Settings
from clincite.core.shapes import (
    AnswerDone,
    AnswerToken,
    ChatTurn,
    Event,
    NoticeEvent,
    PathChosen,
    QueryResult,
    Stage2Started,
    SubQuery,
    SubQueryAnalysis,
    SubQueryRewritten,
)
from clincite.kb.embeddings import HashingEmbedder
from clincite.kb.store import KnowledgeBase
from clincite.llm.agents import Agents
from clincite.llm.slots import open_question_slots
from clincite.offline.questions import written_together
from clincite.question.answer_cache import NEVER, AnswerCache, calibrated_threshold, replay
from clincite.question.answering import FALLBACK_PIECE, open_answer, stream_answer
from clincite.question.citation_check import check_citations_async
from clincite.question.dependent import bridge_entity, rewrite
from clincite.question.gate import FALLBACK_LABEL, PathChoice, choose_path
from clincite.question.gist import resolved_follow_up
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

log = logging.getLogger("clincite.question.service")

OFFLINE_BANNER = "离线演示模式：未配置大语言模型，回答由规则从原文抽取拼接，仅供演示。"
STAGE2_SKIPPED = "前面的步骤用时过长：已跳过第二阶段检索，直接依据已找到的证据回答。"
QUESTION_VECTORS_KEPT = 64  # question embeddings kept: a question looked up and then remembered is embedded once
EMPTY_KB_NOTICE = "知识库为空：请先运行 `python ingest.py 文档目录/` 导入指南文档。"
SEMANTIC_PARTS = ("embeddings", "vector_store")  # a degradation of either: this question was searched BM25-only


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
        self.cache = AnswerCache(settings.answer_cache_size, settings.similar_question_threshold)
        self._similar_threshold: float | None = None  # calibrated for the embedding model on first use
        self._vectors: dict[str, object] = {}  # the latest questions' embeddings (oldest first)

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

    async def run(
        self, question: str, history: list[ChatTurn] | None = None, use_cache: bool = True
    ) -> AsyncIterator[Event]:
        """The events of one question, in order of happening. Closing the iterator cancels the question.
        `use_cache=False`: answered anew (the clinician's 重新回答), and the new answer replaces the cached one."""
        history = list(history or [])[-2 * self.settings.history_turns :]
        # The version the searcher serves now (reading it may touch the KB folder: off the loop). A run is stored
        # under the version its searches actually read, which may be older than the catalogue's during an ingest.
        serving = await asyncio.to_thread(lambda: self.searcher.serving_version)
        if use_cache and (cached := await self._cached(question, history, self._fingerprint(serving))):
            async for event in replay(cached, question):
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
        # With no answer cache there is nothing to remember (nor a question to embed for it: a model call per question).
        if self.settings.answer_cache_size > 0 and len(question_run.kb_versions) == 1:
            # an answer of one KB version (not one straddling a swap)
            (version,) = question_run.kb_versions
            fingerprint = self._fingerprint(version)
            standalone = not history and self.settings.similar_question_cache  # no private context in the answer
            vector = await self._question_vector(question) if standalone else None
            key = self.cache.key(question, history, fingerprint)
            self.cache.remember(key, recorded, fingerprint if standalone else None, vector)

    async def _cached(self, question: str, history: list[ChatTurn], fingerprint: list):
        """The same question (and chat turns) answered before; else one that means the same, answered without chat
        history — a follow-up is first resolved to the question it stands for."""
        if self.settings.answer_cache_size <= 0:
            return None
        if exact := self.cache.get(self.cache.key(question, history, fingerprint)):
            return exact
        if not self.settings.similar_question_cache:
            return None
        standalone = await self._standalone(question, history)
        vector = await self._question_vector(standalone)
        return self.cache.find_similar(standalone, fingerprint, vector, self._similar_threshold)

    async def _question_vector(self, text: str):
        """The question's embedding when an embedding model is loaded that can tell close questions apart (the
        hashing embedder is no model; see answer_cache.calibrated_threshold); None otherwise: the similar-question
        cache then compares words only. Never loads a model on the question path."""
        embedder = self.searcher.embedder
        if isinstance(embedder, HashingEmbedder) or embedder.error is not None or not embedder.loaded:
            return None
        if self._similar_threshold is None:  # once per process, on the first question with the model loaded
            self._similar_threshold = await asyncio.to_thread(
                calibrated_threshold, self.settings.similar_question_threshold, embedder.encode_queries
            )
            log.info("Similar-question cosine threshold for %s: %.3f", embedder.model_name, self._similar_threshold)
        if self._similar_threshold >= NEVER:
            return None
        text = " ".join(text.split())
        if (vector := self._vectors.get(text)) is None:
            # The question is embedded when it is looked up, and its answer remembered under the same vector.
            vector = (await asyncio.to_thread(embedder.encode_queries, [text]))[0]
            self._vectors[text] = vector
            while len(self._vectors) > QUESTION_VECTORS_KEPT:
                self._vectors.pop(next(iter(self._vectors)))
        return vector

    async def _standalone(self, question: str, history: list[ChatTurn]) -> str:
        """The question as it stands without the chat: a follow-up resolved ("一般会持续多久？" → what of what)."""
        if not history:
            return question
        # Whether a new subject goes with the chat's last one is the KB's word (its index), read off the loop.
        return await asyncio.to_thread(
            lambda: resolved_follow_up(question, history, written_together(self.searcher.term_stats())) or question
        )

    async def _path(self, run: QuestionRun) -> PathChoice:
        if not run.history:
            return choose_path(run.question, run.history)
        return await asyncio.to_thread(
            lambda: choose_path(run.question, run.history, written_together(self.searcher.term_stats()))
        )

    # --- the story of one question ---
    async def _answer_question(self, run: QuestionRun) -> None:
        open_question_slots(self.settings.llm_max_concurrency_per_question)
        await self._opening_notices(run)
        choice = await self._path(run) if self.settings.fast_path else None
        if choice is not None:
            run.emit(PathChosen(path="fast" if choice.fast else "full", label=choice.label, reason=choice.reason))
        answer = None
        async with asyncio.TaskGroup() as tasks:
            question_judged: asyncio.Future[SubQueryAnalysis] = asyncio.get_running_loop().create_future()
            stage1 = tasks.create_task(self._stage1(run, question_judged))
            if choice is not None and choice.fast:
                answer = await self._fast_path(run, tasks, question_judged, stage1)
            if answer is None:
                run.sub_queries, run.stage1 = await stage1
        if answer is None:
            answer = await self._full_path(run)
        citations = await check_citations_async(answer, self.kb.catalogue)
        semantic_skipped = any(d.component in SEMANTIC_PARTS for d in run.degradations)  # e.g. an ingest writing
        search_mode = "bm25" if self.searcher.bm25_only or semantic_skipped else "hybrid"
        run.emit(AnswerDone(result=run.result(self.mode, search_mode, answer, citations)))

    async def _fast_path(
        self,
        run: QuestionRun,
        tasks: asyncio.TaskGroup,
        question_judged: asyncio.Future[SubQueryAnalysis],
        stage1: asyncio.Task,
    ) -> str | None:
        """A simple question: the answer from the question's own judged evidence (q0), speculatively while the
        sufficiency judge looks at it; the rest of stage 1 is stopped once the verdict says "sufficient". None:
        the fast path does not hold (no evidence, or not sufficient), and the full pipeline goes on."""
        deps = self.deps
        question = await question_judged
        if not question.extracts:
            run.emit(PathChosen(path="fallback", label=FALLBACK_LABEL, reason="用原问题直接检索没有找到证据。"))
            return None
        gate = AnswerGate()
        speculative = tasks.create_task(stream_answer(deps, run, [question], gate, []))
        verdict = await judge_sufficiency(deps, run, [question])
        if not verdict.sufficient:
            gate.drop()
            speculative.cancel()
            reason = "充分性判断认为只凭原问题检索到的证据还不够：等待问题分解的各子查询。"
            run.emit(PathChosen(path="fallback", label=FALLBACK_LABEL, reason=reason))
            return None
        gate.release()
        stage1.cancel()  # the decomposition and its sub-queries are not needed: their LLM slots are free at once
        run.stage1, run.verdict = [question], verdict
        run.coverage = assess([question], evidence_gaps([question], verdict))
        return await speculative

    async def _full_path(self, run: QuestionRun) -> str:
        """Sufficiency while the answer is generated speculatively; stage 2 when the verdict wants more."""
        deps = self.deps
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
                return await (speculative or self._answer(run, run.stage1, gaps))
            gate.drop()  # never shown nor stored; cancelled at once so it frees its LLM slot
            if speculative is not None:
                speculative.cancel()
            run.stage2_queries = run.verdict.additional_sub_queries
            run.stage2 = await self._stage2(run, run.stage2_queries)
            gaps = evidence_gaps(run.analyses, run.verdict, stage2_ran=True)
            run.coverage = assess(run.analyses, gaps)
            return await self._answer(run, run.analyses, gaps)

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

    async def _stage1(
        self, run: QuestionRun, question_judged: asyncio.Future[SubQueryAnalysis] | None = None
    ) -> tuple[list[SubQuery], list[SubQueryAnalysis]]:
        """Search and judge each sub-query the moment it is complete, the question itself from the start (its
        analysis also goes to `question_judged`, for the fast path); a dependent sub-query once its parent is judged,
        rewritten with the bridge entity. Returns the sub-queries as searched and every analysis, q0 first."""
        deps = self.deps
        # A follow-up's search text asks the KB's index whether a new subject goes with the last one: off the loop.
        text = (
            await asyncio.to_thread(self.reasoner.question_search_text, run.question, run.history)
            if run.history
            else self.reasoner.question_search_text(run.question, run.history)
        )
        original = SubQuery(id="q0", text=text, focus="原问题")
        phases = (Phase(run, "search"), Phase(run, "judgement"))

        def soon(job) -> asyncio.Task[SubQueryAnalysis]:
            for phase in phases:
                phase.expect()
            return tasks.create_task(job)

        async def judge_question() -> SubQueryAnalysis:
            analysis = await search_and_judge(deps, run, original, 1, phases)
            if question_judged is not None and not question_judged.done():
                question_judged.set_result(analysis)
            return analysis

        async def after_parent(sub_query: SubQuery, parent: asyncio.Task[SubQueryAnalysis]) -> SubQueryAnalysis:
            judged_parent = await parent
            bridge = bridge_entity(judged_parent, run.question)
            rewritten = rewrite(sub_query, bridge)
            run.emit(SubQueryRewritten(original=sub_query, rewritten=rewritten, bridge=bridge))
            return await search_and_judge(deps, run, rewritten, 1, phases)

        try:
            async with asyncio.TaskGroup() as tasks:
                judged = {original.id: soon(judge_question())}
                async for sub_query in decompose(deps, run):
                    parent = judged.get(sub_query.depends_on or "")
                    job = (
                        after_parent(sub_query, parent) if parent else search_and_judge(deps, run, sub_query, 1, phases)
                    )
                    judged[sub_query.id] = soon(job)
                for phase in phases:
                    phase.close()  # nothing more to search: each stage ends with its last call
        finally:
            for phase in phases:
                phase.end()
        analyses = [task.result() for task in judged.values()]
        return [a.sub_query for a in analyses[1:]], analyses

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
