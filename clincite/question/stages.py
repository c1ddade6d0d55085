"""The stages of a question, in the order the data flows: decomposition → search → relevance judge → sufficiency.

Each stage is a function of the pipeline's dependencies (`Deps`) and the run it works for, seen as a `StageContext`
(emit events, count usage, degrade); it returns its result and leaves the run's state to the run and the service.
Each one emits its own started and finished events, and degrades instead of failing (docs/architecture.md, failure
table): a late or failed model call takes its fallback and says so as a `DegradedEvent`. Search and judgement are
many calls at once (one per sub-query): a `Phase` opens their stage at the first call and closes it after the last.
The answer stage lives in `clincite.question.answering`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from clincite.core.settings import Settings
from clincite.core.shapes import (
    Chunk,
    Hit,
    JudgementDone,
    JudgementStarted,
    JudgeOutput,
    NoticeEvent,
    RelevantExtract,
    SearchDone,
    SearchStarted,
    Stage,
    SubQuery,
    SubQueryAnalysis,
    SufficiencyReady,
    SufficiencyVerdict,
)
from clincite.question.reasoner import Reasoner
from clincite.question.run import StageContext
from clincite.report.citations import snap_to_chunk
from clincite.retrieval.search import HybridSearcher

log = logging.getLogger("clincite.question.stages")

FALLBACK_EXTRACTS = 2  # a failed judge hands on its sub-query's top hits, unjudged
BM25_ONLY_FALLBACK = "语义检索不可用，仅使用 BM25。"


@dataclass
class Deps:
    """What every stage needs: the settings, the searcher and the reasoner (LLM agents or offline)."""

    settings: Settings
    searcher: HybridSearcher
    reasoner: Reasoner


class Phase:
    """A stage made of many calls (stage 1's searches, its judgements): started at its first call, finished when it
    is closed (no more calls will be expected) and every expected call has ended.

        phase.expect()                 # when a call is planned (its task created)
        with phase.call(): ...         # the call itself
        phase.close()                  # no more calls will be planned
        phase.end()                    # finished now, whatever is still planned (the question was cut short)
    """

    def __init__(self, ctx: StageContext, stage: Stage):
        self.ctx, self.stage = ctx, stage
        self.pending = 0
        self.closed = False

    def expect(self, calls: int = 1) -> None:
        self.pending += calls

    @contextmanager
    def call(self) -> Iterator[None]:
        self.ctx.start(self.stage)  # once per stage and run: the first call opens it
        try:
            yield
        finally:
            self.pending -= 1
            self._finish_if_done()

    def close(self) -> None:
        self.closed = True
        self._finish_if_done()

    def end(self) -> None:
        self.ctx.finish(self.stage)

    def _finish_if_done(self) -> None:
        if self.closed and self.pending <= 0:
            self.ctx.finish(self.stage)


# --- decomposition ---------------------------------------------------------------------------------------------


async def decompose(deps: Deps, run: StageContext, stream: bool = True) -> AsyncIterator[SubQuery]:
    """Sub-queries as each one is complete (streamed), or the question itself if decomposition fails."""
    run.start("decomposition")
    accept = _sub_query_acceptor(deps.settings.max_sub_queries)
    emitted = 0
    try:
        async with asyncio.timeout(deps.settings.decomposition.budget):
            async for draft in deps.reasoner.decompose(run.question, run.history, run.add_usage, stream=stream):
                if sub_query := accept(draft.text, draft.focus):
                    emitted += 1
                    yield sub_query
    except Exception as exc:  # any model failure degrades; the chat goes on
        run.degrade("decomposition", "问题分解失败，已直接用原问题检索。", exc)
    if not emitted:
        yield SubQuery(id="q1", text=run.question, focus="原问题")
    run.finish("decomposition")


def _sub_query_acceptor(limit: int):
    seen: set[str] = set()

    def accept(text: str, focus: str) -> SubQuery | None:
        text = text.strip()
        if not text or text in seen or len(seen) >= limit:
            return None
        seen.add(text)
        return SubQuery(id=f"q{len(seen)}", text=text, focus=focus.strip())

    return accept


# --- search ------------------------------------------------------------------------------------------------------


async def search(
    deps: Deps, run: StageContext, sub_queries: list[SubQuery], stage: int, phase: Phase | None = None
) -> list[list[Hit]]:
    with phase.call() if phase else nullcontext():
        for sub_query in sub_queries:
            run.emit(SearchStarted(stage=stage, sub_query=sub_query))
        searcher = deps.searcher
        depth = getattr(deps.reasoner, "search_depth", None)  # the offline judge reads deeper than an LLM can afford
        results = await searcher.search_many([sq.text for sq in sub_queries], depth=depth)
        degradation = getattr(results, "degradation", None)  # what failed during this very call (SearchResults)
        if searcher.bm25_only or degradation is not None:  # the run shows this notice once
            notice = getattr(results, "notice", None) or searcher.warning or BM25_ONLY_FALLBACK
            run.emit(NoticeEvent(kind="bm25_only", message=notice))
        version = getattr(results, "version", None)
        for sub_query, hits in zip(sub_queries, results, strict=True):
            run.emit(
                SearchDone(stage=stage, sub_query=sub_query, hits=hits, kb_version=version, degradation=degradation)
            )
    return results


async def search_and_judge(
    deps: Deps, run: StageContext, sub_query: SubQuery, stage: int, phases: tuple[Phase, Phase] | None = None
) -> SubQueryAnalysis:
    searching, judging = phases or (None, None)
    hits = (await search(deps, run, [sub_query], stage, searching))[0]
    return await judge(deps, run, sub_query, hits, stage, judging)


# --- relevance judge ---------------------------------------------------------------------------------------------


async def judge(
    deps: Deps, run: StageContext, sub_query: SubQuery, hits: list[Hit], stage: int, phase: Phase | None = None
) -> SubQueryAnalysis:
    with phase.call() if phase else nullcontext():
        run.emit(JudgementStarted(stage=stage, sub_query=sub_query))
        analysis = await _judged(deps, run, sub_query, hits)
        run.emit(JudgementDone(stage=stage, analysis=analysis))
    return analysis


async def _judged(deps: Deps, run: StageContext, sub_query: SubQuery, hits: list[Hit]) -> SubQueryAnalysis:
    if not hits:
        analysis = SubQueryAnalysis(
            sub_query=sub_query,
            sub_answer="知识库中没有检索到相关片段。",
            extracts=[],
            confidence="low",
            missing=[sub_query.focus or sub_query.text],
        )
    else:
        try:
            async with asyncio.timeout(deps.settings.relevance_judge.budget):
                output = await deps.reasoner.judge(sub_query, run.question, run.history, hits, run.add_usage)
            analysis = to_analysis(sub_query, output, hits)
        except Exception as exc:
            run.degrade(
                f"judge:{sub_query.id}",
                f"子查询“{sub_query.text}”的相关性判断失败，已直接使用检索到的前几段原文。",
                exc,
            )
            analysis = fallback_analysis(sub_query, hits)
    return analysis


def to_analysis(sub_query: SubQuery, output: JudgeOutput, hits: list[Hit]) -> SubQueryAnalysis:
    """The judge's output with every extract pinned to a real chunk, verbatim (snapped) or dropped."""
    by_id = {h.chunk_id: h for h in hits}
    extracts: list[RelevantExtract] = []
    for draft in output.extracts:
        candidates = [by_id[draft.chunk_id]] if draft.chunk_id in by_id else hits
        for hit in candidates:
            text = snap_to_chunk(draft.text, _as_chunk(hit))
            if text:
                basis = draft.basis if text == draft.text else None  # a snapped extract is no longer what it explained
                extracts.append(RelevantExtract(source=hit.source, chunk_id=hit.chunk_id, text=text, basis=basis))
                break
        else:
            log.info("Dropped an extract not found in its fragment: %.60s", draft.text)
    return SubQueryAnalysis(
        sub_query=sub_query,
        sub_answer=output.sub_answer,
        extracts=extracts,
        confidence=output.confidence if extracts else "low",
        missing=output.missing,
    )


def fallback_analysis(sub_query: SubQuery, hits: list[Hit]) -> SubQueryAnalysis:
    return SubQueryAnalysis(
        sub_query=sub_query,
        sub_answer="（相关性判断失败，以下为检索得分最高的原文，未经判断。）",
        extracts=[RelevantExtract(source=h.source, chunk_id=h.chunk_id, text=h.text) for h in hits[:FALLBACK_EXTRACTS]],
        confidence="low",
        missing=[],
        degraded=True,
    )


def _as_chunk(hit: Hit) -> Chunk:
    return Chunk(
        id=hit.chunk_id,
        source=hit.source,
        title=hit.title,
        heading_path=hit.heading_path,
        position=0,
        start=0,
        end=len(hit.text),
        text=hit.text,
        content_hash="",
    )


# --- sufficiency -------------------------------------------------------------------------------------------------


async def judge_sufficiency(deps: Deps, run: StageContext, analyses: list[SubQueryAnalysis]) -> SufficiencyVerdict:
    run.start("sufficiency")
    limit = deps.settings.max_additional_queries
    try:
        async with asyncio.timeout(deps.settings.sufficiency_judge.budget):
            out = await deps.reasoner.sufficiency(run.question, analyses, limit, run.add_usage)
        extra = [
            SubQuery(id=f"s2-{i}", text=d.text.strip(), focus=d.focus.strip())
            for i, d in enumerate(out.additional_sub_queries[:limit], 1)
            if d.text.strip()
        ]
        verdict = SufficiencyVerdict(
            sufficient=out.sufficient or not extra,
            confidence=out.confidence,
            covered_aspects=out.covered_aspects,
            missing_key_aspects=out.missing_key_aspects,
            additional_sub_queries=[] if out.sufficient else extra,
            reasoning=out.reasoning,
        )
    except Exception as exc:
        run.degrade("sufficiency", "充分性判断失败，已按“证据充分”直接生成回答。", exc)
        verdict = SufficiencyVerdict(
            sufficient=True, confidence="low", reasoning="充分性判断失败，按充分处理。", degraded=True
        )
    run.emit(SufficiencyReady(verdict=verdict))
    run.finish("sufficiency")
    return verdict
