"""TwoStageQueryService: a clinician's question → a streamed, cited mini-report.

    python query.py "低浓度阿托品控制近视的效果和副作用？"          # steps + streamed report in the terminal
    python query.py "…" --json                                     # the DESIGN §4 object
    python query.py "…" --retrieve --json                          # retrieval only, no LLM

Stage 1: the decomposition streams its sub-queries; each one is searched and judged as soon as it is complete, and
the question itself is searched and judged from the first millisecond. The sufficiency judge then runs while the
answer is already being generated speculatively: its tokens reach the user only if the verdict is "sufficient";
otherwise they are dropped and stage 2 searches the additional sub-queries. Every failure degrades (DESIGN §7).
`run()` yields typed events (models.py); the CLI here and the Chainlit app render the same stream.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import sys
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

from clincite.agents import Agents, build_agents
from clincite.citations import (
    format_evidence_item,
    parse_citations,
    snap_to_chunk,
    verify_citations,
)
from clincite.kb import KnowledgeBase
from clincite.logs import quiet_libraries
from clincite.naming import display_source, strip_source_name
from clincite.prompts import (
    answer_prompt,
    decomposition_prompt,
    judge_prompt,
    sufficiency_prompt,
)
from clincite.search import HybridSearcher
from clincite.settings import Settings, get_settings
from clincite.shapes import (
    STAGE_LABELS,
    AgentUsage,
    AnswerDone,
    AnswerToken,
    ChatTurn,
    Chunk,
    Citation,
    DecompositionReady,
    Degradation,
    DegradedEvent,
    Event,
    Hit,
    JudgementDone,
    JudgementStarted,
    JudgeOutput,
    NoticeEvent,
    QueryResult,
    RelevantExtract,
    SearchDone,
    SearchStageState,
    Stage2Started,
    StageFinished,
    StageStarted,
    SubQuery,
    SubQueryAnalysis,
    SufficiencyReady,
    SufficiencyVerdict,
)

log = logging.getLogger("clincite.query")

Pipeline = Literal["overlapped", "stage_serial", "serial"]
OFFLINE_BANNER = "离线演示模式：未配置大语言模型，回答由规则从原文抽取拼接，仅供演示。"
FALLBACK_EXTRACTS = 2  # a failed judge hands on its sub-query's top hits, unjudged
ANSWER_REPLAY_PIECE = 40  # characters per token event when a cached or fallback report is replayed
Emit = Callable[[Event], None]


# ---------------------------------------------------------------------------------------------------------------
# One run's bookkeeping
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class RunState:
    question: str
    history: list[ChatTurn]
    emit: Emit
    started: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    spans: dict[str, list[float]] = field(default_factory=dict)
    usage: dict[str, AgentUsage] = field(default_factory=dict)
    degradations: list[Degradation] = field(default_factory=list)
    first_token_at: float | None = None
    judged_chunks: set[str] = field(default_factory=set)
    bm25_notice_sent: bool = False
    search_announced: bool = False

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def span(self, name: str, start: float, end: float) -> None:
        """Stretch a stage's [first start, last end] window; the stage's timing is its width."""
        window = self.spans.setdefault(name, [start, end])
        window[0], window[1] = min(window[0], start), max(window[1], end)

    def add_usage(self, agent: str, usage) -> None:
        total = self.usage.setdefault(agent, AgentUsage())
        total.requests += usage.requests
        total.input_tokens += usage.input_tokens or 0
        total.output_tokens += usage.output_tokens or 0

    def degrade(self, component: str, message: str, error: BaseException | str) -> None:
        detail = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        log.warning("Degraded %s: %s", component, detail)
        degradation = Degradation(component=component, message=message, error=detail[:500])
        self.degradations.append(degradation)
        self.emit(DegradedEvent(degradation=degradation))


class AnswerGate:
    """Holds a speculative answer's tokens until the sufficiency verdict releases them (or drops them)."""

    def __init__(self, open_: bool, emit_token: Callable[[str], None]):
        self._open = open_
        self._emit_token = emit_token
        self._held: list[str] = []
        self.dropped = False
        self.released = asyncio.Event()
        if open_:
            self.released.set()

    def token(self, text: str) -> None:
        if self.dropped:
            return
        if self._open:
            self._emit_token(text)
        else:
            self._held.append(text)

    def release(self) -> None:
        self._open = True
        if self._held:
            self._emit_token("".join(self._held))
            self._held.clear()
        self.released.set()

    def drop(self) -> None:
        """The verdict wants stage 2: forget what was held; the generator stops at its next token."""
        self.dropped = True
        self._held.clear()
        self.released.set()


# ---------------------------------------------------------------------------------------------------------------
# The service
# ---------------------------------------------------------------------------------------------------------------


class TwoStageQueryService:
    """Four agents over hybrid search; `run()` yields events, `ask()` returns the final result."""

    def __init__(self, settings: Settings | None = None, searcher: HybridSearcher | None = None,
                 agents: Agents | None = None, pipeline: Pipeline = "overlapped"):
        self.settings = settings or get_settings()
        self.searcher = searcher or HybridSearcher(self.settings)
        self._agents = agents
        # "overlapped" is the product; the two baselines exist so the benchmark can run (not estimate) them.
        self.pipeline = pipeline
        self._cache: OrderedDict[str, list[Event]] = OrderedDict()

    @property
    def agents(self) -> Agents:
        # Built on first use, inside the running event loop: the HTTP client belongs to that loop.
        if self._agents is None:
            self._agents = build_agents(self.settings)
        return self._agents

    @property
    def mode(self) -> str:
        return self.agents.mode

    @property
    def kb(self) -> KnowledgeBase:
        return self.searcher.kb

    async def warm_up(self) -> None:
        """jieba, BM25, Chroma, the embedding model, the agents and the HTTP connection, before the first question."""
        await asyncio.gather(asyncio.to_thread(self.searcher.warm_up), self.agents.open_connection())

    async def ask(self, question: str, history: list[ChatTurn] | None = None) -> QueryResult:
        result = None
        async for event in self.run(question, history):
            if isinstance(event, AnswerDone):
                result = event.result
        assert result is not None
        return result

    async def run(self, question: str, history: list[ChatTurn] | None = None) -> AsyncIterator[Event]:
        """The events of one question, in order of happening."""
        history = list(history or [])[-2 * self.settings.history_turns:]
        key = self._cache_key(question, history)
        if key in self._cache:
            self._cache.move_to_end(key)
            async for event in self._replay(self._cache[key]):
                yield event
            return
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        recorded: list[Event] = []

        def emit(event: Event) -> None:
            if isinstance(event, AnswerToken) and state.first_token_at is None:
                state.first_token_at = state.elapsed()
            recorded.append(event)
            queue.put_nowait(event)

        state = RunState(question=question, history=history, emit=emit)
        task = asyncio.create_task(self._pipeline(state))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task  # re-raises a programming error instead of ending silently
        finally:
            if not task.done():
                task.cancel()
        if not recorded or not isinstance(recorded[-1], AnswerDone):
            return
        if not recorded[-1].result.degradations:  # only clean answers are worth replaying
            self._remember(key, recorded)

    # --- the pipeline ---
    async def _pipeline(self, state: RunState) -> None:
        agents = self.agents
        if agents.mode == "offline":
            state.emit(NoticeEvent(kind="offline", message=OFFLINE_BANNER))
        if self.kb.catalogue.document_count() == 0:
            state.emit(NoticeEvent(kind="empty_kb", message="知识库为空：请先运行 `python ingest.py 文档目录/` 导入指南文档。"))

        search_state = SearchStageState(question=state.question, history=state.history)
        stage1_runner = self._stage1_overlapped if self.pipeline == "overlapped" else self._stage1_serial
        sub_queries, stage1 = await stage1_runner(state)
        search_state.stage1_sub_queries = sub_queries
        search_state.stage1_analyses = stage1

        def emit_token(text: str) -> None:
            state.emit(AnswerToken(text=text))

        gate = AnswerGate(open_=False, emit_token=emit_token)
        speculative = None
        if self.pipeline == "overlapped":
            speculative = asyncio.create_task(self._generate_answer(state, stage1, gate))
        verdict = await self._sufficiency(state, stage1)

        if verdict.sufficient:
            if speculative is None:
                speculative = asyncio.create_task(self._generate_answer(state, stage1, gate))
            gate.release()
            answer = await speculative
        else:
            gate.drop()  # the speculative answer is never shown nor stored; it stops at its next token
            search_state.needs_stage2 = True
            search_state.stage2_sub_queries = verdict.additional_sub_queries
            search_state.stage2_analyses = await self._stage2(state, verdict.additional_sub_queries)
            final_gate = AnswerGate(open_=True, emit_token=emit_token)
            answer = await self._generate_answer(state, search_state.analyses, final_gate)
            if speculative is not None:
                if not speculative.done():
                    speculative.cancel()
                await asyncio.gather(speculative, return_exceptions=True)

        state.emit(AnswerDone(result=self._result(state, search_state, verdict, answer)))

    async def _stage1_overlapped(self, state: RunState) -> tuple[list[SubQuery], list[SubQueryAnalysis]]:
        """Search and judge each sub-query the moment it is complete; the question itself from the start."""
        original = SubQuery(id="q0", text=state.question, focus="原问题")
        tasks = [asyncio.create_task(self._search_and_judge(state, original, stage=1))]
        sub_queries = []
        async for sub_query in self._decompose(state):
            sub_queries.append(sub_query)
            tasks.append(asyncio.create_task(self._search_and_judge(state, sub_query, stage=1)))
        state.emit(DecompositionReady(sub_queries=sub_queries))
        return sub_queries, list(await asyncio.gather(*tasks))

    async def _stage1_serial(self, state: RunState) -> tuple[list[SubQuery], list[SubQueryAnalysis]]:
        """A baseline: decomposition, then all searches, then the judges (together, or one by one in "serial")."""
        sub_queries = [sq async for sq in self._decompose(state, stream=False)]
        state.emit(DecompositionReady(sub_queries=sub_queries))
        every = [SubQuery(id="q0", text=state.question, focus="原问题"), *sub_queries]
        hits = await self._search_batch(state, every, stage=1)
        judgements = [self._judge(state, sq, h, 1) for sq, h in zip(every, hits)]
        if self.pipeline == "serial":
            return sub_queries, [await judgement for judgement in judgements]
        return sub_queries, list(await asyncio.gather(*judgements))

    async def _stage2(self, state: RunState, sub_queries: list[SubQuery]) -> list[SubQueryAnalysis]:
        started = state.elapsed()
        state.emit(StageStarted(stage="stage2", label=STAGE_LABELS["stage2"]))
        state.emit(Stage2Started(sub_queries=sub_queries))
        hits = await self._search_batch(state, sub_queries, stage=2)
        fresh = [[h for h in hs if h.chunk_id not in state.judged_chunks] for hs in hits]  # judged once only
        judgements = [self._judge(state, sq, h, 2) for sq, h in zip(sub_queries, fresh)]
        if self.pipeline == "serial":
            analyses = [await judgement for judgement in judgements]
        else:
            analyses = await asyncio.gather(*judgements)
        self._finish(state, "stage2", started)
        return list(analyses)

    # --- decomposition ---
    async def _decompose(self, state: RunState, stream: bool = True) -> AsyncIterator[SubQuery]:
        """Sub-queries as each one is complete (streamed), or the question itself if decomposition fails."""
        started = state.elapsed()
        state.emit(StageStarted(stage="decomposition", label=STAGE_LABELS["decomposition"]))
        agent = self.agents.decomposition
        prompt = decomposition_prompt(state.question, state.history)
        seen: set[str] = set()
        limit = self.settings.max_sub_queries

        def accept(text: str, focus: str) -> SubQuery | None:
            text = text.strip()
            if not text or text in seen or len(seen) >= limit:
                return None
            seen.add(text)
            return SubQuery(id=f"q{len(seen)}", text=text, focus=focus.strip())

        emitted: list[SubQuery] = []
        try:
            async with asyncio.timeout(self.settings.decomposition.budget):
                if stream:
                    async for draft in _stream_list_items(agent, prompt, "sub_queries", state):
                        if sub_query := accept(draft.text, draft.focus):
                            emitted.append(sub_query)
                            yield sub_query
                else:
                    result = await agent.run(prompt)
                    state.add_usage("decomposition", result.usage)
                    for draft in result.output.sub_queries:
                        if sub_query := accept(draft.text, draft.focus):
                            emitted.append(sub_query)
                            yield sub_query
        except Exception as exc:  # any model failure degrades; the chat goes on
            state.degrade("decomposition", "问题分解失败，已直接用原问题检索。", exc)
        if not emitted:
            yield SubQuery(id="q1", text=state.question, focus="原问题")
        self._finish(state, "decomposition", started)

    # --- search ---
    async def _search_and_judge(self, state: RunState, sub_query: SubQuery, stage: int) -> SubQueryAnalysis:
        hits = (await self._search_batch(state, [sub_query], stage))[0]
        return await self._judge(state, sub_query, hits, stage)

    async def _search_batch(self, state: RunState, sub_queries: list[SubQuery], stage: int) -> list[list[Hit]]:
        started = state.elapsed()
        if not state.search_announced:
            state.search_announced = True
            state.emit(StageStarted(stage="search", label=STAGE_LABELS["search"]))
        results = await self.searcher.search_many([sq.text for sq in sub_queries])
        if self.searcher.bm25_only and not state.bm25_notice_sent:
            state.bm25_notice_sent = True
            state.emit(NoticeEvent(kind="bm25_only", message=self.searcher.warning or "语义检索不可用，仅使用 BM25。"))
        state.span("search" if stage == 1 else "search_stage2", started, state.elapsed())
        for sub_query, hits in zip(sub_queries, results):
            state.emit(SearchDone(stage=stage, sub_query=sub_query, hits=hits))
        return results

    # --- relevance judge ---
    async def _judge(self, state: RunState, sub_query: SubQuery, hits: list[Hit], stage: int) -> SubQueryAnalysis:
        started = state.elapsed()
        state.emit(JudgementStarted(stage=stage, sub_query=sub_query))
        state.judged_chunks.update(h.chunk_id for h in hits)
        if not hits:
            analysis = SubQueryAnalysis(sub_query=sub_query, sub_answer="知识库中没有检索到相关片段。", extracts=[],
                                        confidence="low", missing=[sub_query.focus or sub_query.text])
        else:
            try:
                async with asyncio.timeout(self.settings.relevance_judge.budget):
                    result = await self.agents.relevance_judge.run(judge_prompt(sub_query, state.question, hits))
                state.add_usage("relevance_judge", result.usage)
                analysis = to_analysis(sub_query, result.output, hits)
            except Exception as exc:
                state.degrade(f"judge:{sub_query.id}", f"子查询“{sub_query.text}”的相关性判断失败，已直接使用检索到的前几段原文。", exc)
                analysis = fallback_analysis(sub_query, hits)
        state.span("judgement" if stage == 1 else "judgement_stage2", started, state.elapsed())
        state.emit(JudgementDone(stage=stage, analysis=analysis))
        return analysis

    # --- sufficiency ---
    async def _sufficiency(self, state: RunState, analyses: list[SubQueryAnalysis]) -> SufficiencyVerdict:
        started = state.elapsed()
        state.emit(StageStarted(stage="sufficiency", label=STAGE_LABELS["sufficiency"]))
        limit = self.settings.max_additional_queries
        try:
            async with asyncio.timeout(self.settings.sufficiency_judge.budget):
                result = await self.agents.sufficiency_judge.run(sufficiency_prompt(state.question, analyses, limit))
            state.add_usage("sufficiency_judge", result.usage)
            out = result.output
            extra = [SubQuery(id=f"s2-{i}", text=d.text.strip(), focus=d.focus.strip())
                     for i, d in enumerate(out.additional_sub_queries[:limit], 1) if d.text.strip()]
            verdict = SufficiencyVerdict(sufficient=out.sufficient or not extra, confidence=out.confidence,
                                         covered_aspects=out.covered_aspects,
                                         missing_key_aspects=out.missing_key_aspects,
                                         additional_sub_queries=[] if out.sufficient else extra,
                                         reasoning=out.reasoning)
        except Exception as exc:
            state.degrade("sufficiency", "充分性判断失败，已按“证据充分”直接生成回答。", exc)
            verdict = SufficiencyVerdict(sufficient=True, confidence="low", reasoning="充分性判断失败，按充分处理。",
                                         degraded=True)
        state.emit(SufficiencyReady(verdict=verdict))
        self._finish(state, "sufficiency", started)
        return verdict

    # --- answer ---
    async def _generate_answer(self, state: RunState, analyses: list[SubQueryAnalysis], gate: AnswerGate) -> str:
        """Stream the report through the gate; on failure keep what streamed and add the sources found."""
        await asyncio.sleep(0)
        started = state.elapsed()
        agent = self.agents.answer_generation
        text = ""
        announced = False
        try:
            async with asyncio.timeout(self.settings.answer_generation.budget):
                async with agent.run_stream(answer_prompt(state.question, state.history, analyses)) as stream:
                    deltas = stream.stream_text(delta=True, debounce_by=None)
                    try:
                        async for delta in deltas:
                            if gate.dropped:  # leave the stream the orderly way, inside its own task
                                break
                            if not announced:
                                announced = True
                                await self._announce_answer(state, gate)
                            text += delta
                            gate.token(delta)
                    finally:
                        # Closed here, inside the run's context: left to the garbage collector, a cancelled
                        # stream's generators log "generator didn't stop after athrow()".
                        await deltas.aclose()
                    state.add_usage("answer_generation", stream.usage)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if gate.dropped:
                return ""
            if not announced:
                await self._announce_answer(state, gate)
            if text:
                notice = "\n\n> ⚠️ 回答生成中途中断，以上为已生成的部分；以下列出已检索到的原文来源。\n\n"
                state.degrade("answer", "回答生成中途中断：已保留已生成的部分，并附上已找到的来源。", exc)
            else:
                notice = "> ⚠️ 回答生成失败，以下直接列出已检索到的原文证据（未经模型归纳）。\n\n"
                state.degrade("answer", "回答生成失败：已改为直接列出检索到的原文证据。", exc)
            tail = notice + sources_section(analyses, first_number=_last_marker(text) + 1)
            for i in range(0, len(tail), ANSWER_REPLAY_PIECE):
                gate.token(tail[i:i + ANSWER_REPLAY_PIECE])
            text += tail
        await gate.released.wait()
        if gate.dropped:
            return ""
        self._finish(state, "answer", started)
        return text

    async def _announce_answer(self, state: RunState, gate: AnswerGate) -> None:
        # The answer step starts for the user when its tokens can be shown, not while it is still speculative.
        await gate.released.wait()
        if not gate.dropped and "answer_started" not in state.timings:
            state.timings["answer_started"] = round(state.elapsed(), 3)
            state.emit(StageStarted(stage="answer", label=STAGE_LABELS["answer"]))

    # --- result ---
    def _finish(self, state: RunState, stage: str, started: float) -> None:
        now = state.elapsed()
        state.span(stage, started, now)
        if stage in STAGE_LABELS:
            state.emit(StageFinished(stage=stage, seconds=round(now - started, 3)))

    def _result(self, state: RunState, search_state: SearchStageState, verdict: SufficiencyVerdict,
                answer: str) -> QueryResult:
        citations = self.check_citations(answer)
        timings = {name: round(end - start, 3) for name, (start, end) in state.spans.items()}
        timings["ttft"] = round(state.first_token_at if state.first_token_at is not None else state.elapsed(), 3)
        timings["total"] = round(state.elapsed(), 3)
        return QueryResult(
            question=state.question, mode=self.agents.mode, sub_queries=search_state.stage1_sub_queries,
            analyses=search_state.analyses, sufficiency=verdict, stage2_queries=search_state.stage2_sub_queries,
            answer=answer, citations=citations, timings=timings, usage=state.usage,
            degradations=state.degradations, unverified_citations=sum(1 for c in citations if not c.verified),
            search_mode="bm25" if self.searcher.bm25_only else "hybrid",
        )

    def check_citations(self, answer: str) -> list[Citation]:
        citations = parse_citations(answer)
        if not citations:
            return []
        named = {strip_source_name(c.source) for c in citations}
        chunks: dict[str, list[Chunk]] = {
            source: self.kb.catalogue.chunks_of(source)
            for source in self.kb.catalogue.documents() if strip_source_name(source) in named
        }
        return verify_citations(citations, chunks)

    # --- answer cache ---
    def _cache_key(self, question: str, history: list[ChatTurn]) -> str:
        s = self.settings
        fingerprint = json.dumps([
            " ".join(question.split()), [t.model_dump() for t in history], self.kb.catalogue.version,
            self.agents.mode, s.embedding_model, s.bm25_top_k, s.semantic_top_k, s.bm25_threshold,
            s.semantic_threshold, s.decomposition.model, s.relevance_judge.model, s.sufficiency_judge.model,
            s.answer_generation.model, s.answer_generation.temperature,
        ], ensure_ascii=False)
        return hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()

    def _remember(self, key: str, events: list[Event]) -> None:
        if self.settings.answer_cache_size <= 0:
            return
        self._cache[key] = events
        while len(self._cache) > self.settings.answer_cache_size:
            self._cache.popitem(last=False)

    async def _replay(self, events: list[Event]) -> AsyncIterator[Event]:
        started = time.perf_counter()
        yield NoticeEvent(kind="cached", message="这是缓存的回答：同一问题、同一知识库版本和设置下已生成过，直接重放。")
        for event in events:
            if isinstance(event, AnswerDone):
                elapsed = round(time.perf_counter() - started, 3)
                timings = {**event.result.timings, "ttft": elapsed, "total": elapsed}
                yield AnswerDone(result=event.result.model_copy(update={"cached": True, "timings": timings}))
            else:
                yield event


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


async def _stream_list_items(agent, prompt: str, field_name: str, state: RunState) -> AsyncIterator:
    """Items of a list field as soon as each is complete (validated partials).

    The last item of a partial may still be truncated, so it is only taken once the next one has begun or the stream
    has ended. pydantic-ai cannot retry a streamed attempt whose output fails validation, so that case asks again
    without streaming (with the agent's retries); items seen twice are de-duplicated by the caller.
    """
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    taken = 0
    try:
        async with agent.iter(prompt) as run:
            async for node in run:
                if not Agent.is_model_request_node(node):
                    continue
                async with node.stream(run.ctx) as stream:
                    async for partial in stream.stream_output(debounce_by=None):
                        items = getattr(partial, field_name, None) or []
                        for item in items[taken:-1]:
                            yield item
                        taken = max(taken, len(items) - 1)
            state.add_usage(agent.name, run.usage)
            output = run.result.output
    except UnexpectedModelBehavior as exc:
        log.info("Streamed %s output failed validation (%s); asking again without streaming", agent.name, exc)
        result = await agent.run(prompt)
        state.add_usage(agent.name, result.usage)
        output, taken = result.output, 0
    for item in getattr(output, field_name)[taken:]:
        yield item


def to_analysis(sub_query: SubQuery, output: JudgeOutput, hits: list[Hit]) -> SubQueryAnalysis:
    """The judge's output with every extract pinned to a real chunk, verbatim (snapped) or dropped."""
    by_id = {h.chunk_id: h for h in hits}
    extracts: list[RelevantExtract] = []
    for draft in output.extracts:
        candidates = [by_id[draft.chunk_id]] if draft.chunk_id in by_id else hits
        for hit in candidates:
            text = snap_to_chunk(draft.text, _as_chunk(hit))
            if text:
                extracts.append(RelevantExtract(source=hit.source, chunk_id=hit.chunk_id, text=text))
                break
        else:
            log.info("Dropped an extract not found in its fragment: %.60s", draft.text)
    return SubQueryAnalysis(sub_query=sub_query, sub_answer=output.sub_answer, extracts=extracts,
                            confidence=output.confidence if extracts else "low", missing=output.missing)


def fallback_analysis(sub_query: SubQuery, hits: list[Hit]) -> SubQueryAnalysis:
    return SubQueryAnalysis(
        sub_query=sub_query, sub_answer="（相关性判断失败，以下为检索得分最高的原文，未经判断。）",
        extracts=[RelevantExtract(source=h.source, chunk_id=h.chunk_id, text=h.text) for h in hits[:FALLBACK_EXTRACTS]],
        confidence="low", missing=[], degraded=True,
    )


def _as_chunk(hit: Hit) -> Chunk:
    return Chunk(id=hit.chunk_id, source=hit.source, title=hit.title, heading_path=hit.heading_path, position=0,
                 start=0, end=len(hit.text), text=hit.text, content_hash="")


def sources_section(analyses: list[SubQueryAnalysis], first_number: int = 1) -> str:
    """The evidence found so far as report items: what a clinician gets when answer generation fails."""
    items, seen = [], set()
    for analysis in analyses:
        for extract in analysis.extracts:
            if (extract.chunk_id, extract.text) in seen:
                continue
            seen.add((extract.chunk_id, extract.text))
            items.append(format_evidence_item(first_number + len(items), analysis.sub_query.text,
                                              "检索并判断为相关的原文。", display_source(extract.source),
                                              extract.text))
    return "### 已找到的来源\n" + ("\n\n".join(items) if items else "无") + "\n"


def _last_marker(text: str) -> int:
    import re

    numbers = [int(n) for n in re.findall(r"【(\d+)】", text)]
    return max(numbers, default=0)


# ---------------------------------------------------------------------------------------------------------------
# Terminal renderer and CLI
# ---------------------------------------------------------------------------------------------------------------


class TerminalRenderer:
    """Prints the event stream: the steps as they happen, then the streamed report and its citations."""

    def __init__(self, out=sys.stdout):
        self.out = out

    def __call__(self, event: Event) -> None:
        write = self.out.write
        match event:
            case NoticeEvent(message=message):
                write(f"【提示】{message}\n")
            case StageStarted(stage="answer"):
                write("\n──── 回答 ────\n")
            case StageStarted(label=label):
                write(f"▶ {label}…\n")
            case StageFinished(stage=stage, seconds=seconds) if stage != "answer":
                write(f"✓ {STAGE_LABELS[stage]}（{seconds:.2f} 秒）\n")
            case DecompositionReady(sub_queries=subs):
                for sq in subs:
                    write(f"  · {sq.id} {sq.text}（{sq.focus}）\n")
            case SearchDone(sub_query=sq, hits=hits):
                sources = "、".join(dict.fromkeys(display_source(h.source) for h in hits[:3])) or "无"
                write(f"  · 检索 {sq.id}：{len(hits)} 段（{sources}）\n")
            case JudgementDone(analysis=a):
                write(f"  · 判断 {a.sub_query.id}：{len(a.extracts)} 条摘录，置信度 {a.confidence}\n")
            case SufficiencyReady(verdict=v):
                write(f"  · {'证据充分' if v.sufficient else '证据不足，进入第二阶段检索'}：{v.reasoning}\n")
            case Stage2Started(sub_queries=subs):
                write("  · 追加子查询：" + "；".join(sq.text for sq in subs) + "\n")
            case DegradedEvent(degradation=d):
                write(f"【降级】{d.message}\n")
            case AnswerToken(text=text):
                write(text)
            case AnswerDone(result=r):
                write("\n──── 引用核验 ────\n")
                for c in r.citations:
                    mark = "✓ 原文已核验" if c.verified else "✗ 未在来源中找到此原文"
                    write(f"【{c.number}】《{c.source}》{mark}\n")
                t = r.timings
                write(f"\n首字 {t.get('ttft', 0):.2f} 秒，总计 {t.get('total', 0):.2f} 秒，模式 {r.mode}"
                      f"{'（缓存）' if r.cached else ''}\n")
        self.out.flush()


async def _run_cli(args: argparse.Namespace) -> int:
    settings = get_settings()
    searcher = HybridSearcher(settings, KnowledgeBase(settings, args.kb))
    if args.retrieve:
        hits = await searcher.search(args.question)
        payload = {"question": args.question, "search_mode": "bm25" if searcher.bm25_only else "hybrid",
                   "hits": [h.model_dump(include={"chunk_id", "source", "text", "bm25", "semantic", "found_by"})
                            for h in hits]}
        if searcher.warning:
            print(searcher.warning, file=sys.stderr)
        if args.json:
            print(json.dumps(payload, ensure_ascii=False, indent=2))
        else:
            for h in hits:
                print(f"[{'+'.join(h.found_by)}] 《{display_source(h.source)}》 {h.text[:80]}…")
        return 0
    service = TwoStageQueryService(settings, searcher)
    await service.warm_up()
    render = TerminalRenderer(sys.stderr if args.json else sys.stdout)
    result = None
    async for event in service.run(args.question):
        render(event)
        if isinstance(event, AnswerDone):
            result = event.result
    if args.json and result is not None:
        print(result.model_dump_json(indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ClinCite：基于知识库的循证问答 (ask the knowledge base)")
    parser.add_argument("question", help="临床问题")
    parser.add_argument("--kb", default=None, help="knowledge-base directory (default: KB_DIR)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (DESIGN §4)")
    parser.add_argument("--retrieve", action="store_true", help="retrieval only: print the hits, no LLM")
    args = parser.parse_args(argv)
    quiet_libraries()
    return asyncio.run(_run_cli(args))


if __name__ == "__main__":
    sys.exit(main())
