"""The stages of a question, in the order the data flows: decomposition → search → relevance judge → sufficiency.

Each stage is a function of the pipeline's dependencies (`Deps`) and the run it works for, seen as a `StageContext`
(emit events, count usage, degrade); it returns its result and leaves the run's state to the run and the service.
Each one emits its own started and finished events, and degrades instead of failing (docs/architecture.md, failure
table): a late or failed model call takes its fallback and says so as a `DegradedEvent`. Search and judgement are
many calls at once (one per sub-query): a `Phase` opens their stage at the first call and closes it after the last.
The answer stage lives in `clincite.question.answering`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from clincite.core import loopclock
from clincite.core.settings import Settings
from clincite.core.shapes import (
    BRIDGE_SLOT,
    Chunk,
    DecompositionReady,
    Hit,
    JudgementDone,
    JudgementStarted,
    JudgeOutput,
    MergedSubQuery,
    NoticeEvent,
    RelevantExtract,
    SearchDone,
    SearchStarted,
    Stage,
    SubQuery,
    SubQueryAnalysis,
    SubQueryDraft,
    SufficiencyReady,
    SufficiencyVerdict,
)
from clincite.question.gist import gist_of, near_duplicate
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
    """Sub-queries as each one is complete (streamed), or the question itself if decomposition fails; at the end the
    whole list, with the near-duplicates that were merged (`DecompositionReady`)."""
    run.start("decomposition")
    plan = SubQueryPlan(deps.settings.max_sub_queries)
    try:
        try:
            async with loopclock.budget(deps.settings.decomposition.budget):
                async for draft in deps.reasoner.decompose(run.question, run.history, run.add_usage, stream=stream):
                    if sub_query := plan.accept(draft):
                        yield sub_query
        except Exception as exc:  # any model failure degrades; the chat goes on
            run.degrade("decomposition", "问题分解失败，已直接用原问题检索。", exc)
        if not plan.accepted:
            fallback = SubQuery(id="q1", text=run.question, focus="原问题")
            plan.accepted.append(fallback)
            yield fallback
        run.emit(DecompositionReady(sub_queries=plan.accepted, merged=plan.merged))
    finally:  # also when the question no longer needs it (the fast path answered): the step is closed
        run.finish("decomposition")


class SubQueryPlan:
    """The decomposition's drafts as sub-queries: ids q1…, at most `limit`, a draft that would search for what an
    earlier one already does merged into it (two slots are not spent on one aspect), and `depends_on` (the model
    numbers its drafts from 1) turned into the id of the sub-query it depends on."""

    def __init__(self, limit: int):
        self.limit = limit
        self.accepted: list[SubQuery] = []
        self.merged: list[MergedSubQuery] = []
        self._draft_ids: list[str | None] = []  # per draft, in the model's order: the sub-query that searches it

    def accept(self, draft: SubQueryDraft) -> SubQuery | None:
        text, focus = draft.text.strip(), draft.focus.strip()
        parent = self._parent_of(draft.depends_on)
        if parent is None and BRIDGE_SLOT in text:  # a slot with no parent to fill it: searched without it
            text = text.replace(BRIDGE_SLOT, "").strip()
        twin = None if parent or BRIDGE_SLOT in text else self._twin_of(text)
        if not text or (twin is None and len(self.accepted) >= self.limit):
            self._draft_ids.append(None)
            return None
        if twin is not None:
            self._draft_ids.append(twin.id)
            if text != twin.text:
                self.merged.append(MergedSubQuery(text=text, into=twin.id))
            return None
        sub_query = SubQuery(id=f"q{len(self.accepted) + 1}", text=text, focus=focus, depends_on=parent)
        self.accepted.append(sub_query)
        self._draft_ids.append(sub_query.id)
        return sub_query

    def _parent_of(self, number: int | None) -> str | None:
        if number is None or not 1 <= number <= len(self._draft_ids):
            return None  # none, or one not written yet: the model may only point back
        return self._draft_ids[number - 1]

    def _twin_of(self, text: str) -> SubQuery | None:
        mine = gist_of(text)
        for earlier in self.accepted:
            if earlier.depends_on is None and (earlier.text == text or near_duplicate(mine, gist_of(earlier.text))):
                return earlier
        return None


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
        hits = await deps.searcher.rerank(run.question, hits)  # best first for the whole question (if a reranker)
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
            async with loopclock.budget(deps.settings.relevance_judge.budget):
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
        async with loopclock.budget(deps.settings.sufficiency_judge.budget):
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
