"""One question's run: its events, and the state they add up to (timings, usage, degradations, what was searched).

The service creates a `QuestionRun` per question. Stages see it only as a `StageContext`: they emit events, count
usage and degrade, and return their results; they never write its fields. The run keeps its own state from the
events it forwards (`_record`, the one place that writes it), and the service puts the stages' results in it.
`emit_event` sends each event on to whoever renders the run (the web app, the terminal, a test).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from clincite.core.shapes import (
    STAGE_LABELS,
    AgentUsage,
    AnswerToken,
    ChatTurn,
    Citation,
    Coverage,
    Degradation,
    DegradedEvent,
    Event,
    JudgementDone,
    JudgementStarted,
    Mode,
    NoticeEvent,
    QueryResult,
    SearchDone,
    SearchStarted,
    Stage,
    StageFinished,
    StageStarted,
    SubQuery,
    SubQueryAnalysis,
    SufficiencyVerdict,
)

log = logging.getLogger("clincite.question.run")

Emit = Callable[[Event], None]
# Sub-query events whose [first start, last end] window is a timing of their own (QueryResult.timings).
WINDOWS = {
    (SearchStarted, 1): "search",
    (SearchStarted, 2): "search_stage2",
    (JudgementStarted, 1): "judgement",
    (JudgementStarted, 2): "judgement_stage2",
}
ENDS = {SearchDone: SearchStarted, JudgementDone: JudgementStarted}
REPEATABLE_NOTICES = {"cached"}  # every other notice is shown once per run


class StageContext(Protocol):
    """What a stage may do to the run it works for: read the question, tell (events), count and degrade."""

    question: str
    history: list[ChatTurn]

    def emit(self, event: Event) -> None: ...

    def start(self, stage: Stage) -> None: ...

    def finish(self, stage: Stage) -> None: ...

    def degrade(self, component: str, message: str, error: BaseException | str) -> None: ...

    def add_usage(self, agent: str, usage) -> None: ...

    def elapsed(self) -> float: ...


@dataclass
class QuestionRun:
    question: str
    history: list[ChatTurn]
    emit_event: Emit
    started: float = field(default_factory=time.perf_counter)
    # --- kept from the events (`_record`) ---
    spans: dict[str, list[float]] = field(default_factory=dict)
    usage: dict[str, AgentUsage] = field(default_factory=dict)
    degradations: list[Degradation] = field(default_factory=list)
    notices_sent: set[str] = field(default_factory=set)
    first_token_at: float | None = None
    open_stages: dict[str, float] = field(default_factory=dict)  # stage → when it started
    stage1_chunks: set[str] = field(default_factory=set)  # every chunk stage 1 found (and so judged)
    closest: dict[str, float] = field(default_factory=dict)  # source → best fused search score, for an abstention
    kb_versions: set[int] = field(default_factory=set)  # the KB versions its searches read
    _open_calls: dict[tuple, float] = field(default_factory=dict)
    # --- the stages' results, put here by the service ---
    sub_queries: list[SubQuery] = field(default_factory=list)
    stage1: list[SubQueryAnalysis] = field(default_factory=list)
    verdict: SufficiencyVerdict | None = None
    stage2_queries: list[SubQuery] = field(default_factory=list)
    stage2: list[SubQueryAnalysis] = field(default_factory=list)
    coverage: Coverage = field(default_factory=lambda: Coverage(status="no_evidence"))

    @property
    def analyses(self) -> list[SubQueryAnalysis]:
        return [*self.stage1, *self.stage2]

    # --- the StageContext ---
    def emit(self, event: Event) -> None:
        if self._record(event):
            self.emit_event(event)

    def start(self, stage: Stage) -> None:
        """StageStarted, unless the stage is open already (a stage of many calls is opened by its first)."""
        if stage not in self.open_stages:
            self.emit(StageStarted(stage=stage, label=STAGE_LABELS[stage]))

    def finish(self, stage: Stage) -> None:
        """StageFinished with the seconds since the stage started; nothing for a stage that is not open."""
        started = self.open_stages.get(stage)
        if started is not None:
            self.emit(StageFinished(stage=stage, seconds=round(self.elapsed() - started, 3)))

    def degrade(self, component: str, message: str, error: BaseException | str) -> None:
        detail = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        log.warning("Degraded %s: %s", component, detail)
        self.emit(DegradedEvent(degradation=Degradation(component=component, message=message, error=detail[:500])))

    def add_usage(self, agent: str, usage) -> None:
        total = self.usage.setdefault(agent, AgentUsage())
        total.requests += usage.requests
        total.input_tokens += usage.input_tokens or 0
        total.output_tokens += usage.output_tokens or 0

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    # --- the one writer of the state above ---
    def _record(self, event: Event) -> bool:
        """Keep what the event says about the run; False: the event is not passed on (a notice already shown)."""
        now = self.elapsed()
        match event:
            case NoticeEvent(kind=kind):
                if kind in self.notices_sent and kind not in REPEATABLE_NOTICES:
                    return False
                self.notices_sent.add(kind)
            case StageStarted(stage=stage):
                self.open_stages.setdefault(stage, now)
            case StageFinished(stage=stage):
                started = self.open_stages.pop(stage, now - event.seconds)
                window = self.spans.setdefault(stage, [started, now])  # a stage run twice: from first to last
                window[0], window[1] = min(window[0], started), max(window[1], now)
            case SearchStarted() | JudgementStarted():
                self._open_calls[(type(event), event.stage, event.sub_query.id)] = now
            case SearchDone():
                self._close_call(SearchStarted, event.stage, event.sub_query.id, now)
                for hit in event.hits:
                    self.closest[hit.source] = max(self.closest.get(hit.source, 0.0), hit.score)
                if event.stage == 1:
                    self.stage1_chunks.update(hit.chunk_id for hit in event.hits)
                if event.kb_version is not None:
                    self.kb_versions.add(event.kb_version)
                known = {d.component for d in self.degradations}
                if event.degradation is not None and event.degradation.component not in known:
                    # Counted in the answer record and /metrics; the clinician already has the search's notice.
                    self.degradations.append(event.degradation)
            case JudgementDone():
                self._close_call(JudgementStarted, event.stage, event.analysis.sub_query.id, now)
            case AnswerToken():
                if self.first_token_at is None:
                    self.first_token_at = now
            case DegradedEvent(degradation=degradation):
                self.degradations.append(degradation)
        return True

    def _close_call(self, kind: type, stage: int, sub_query_id: str, now: float) -> None:
        started = self._open_calls.pop((kind, stage, sub_query_id), now)
        window = self.spans.setdefault(WINDOWS[(kind, stage)], [started, now])
        window[0], window[1] = min(window[0], started), max(window[1], now)

    # --- reading it ---
    def closest_sources(self) -> list[str]:
        return sorted(self.closest, key=lambda source: -self.closest[source])

    def result(self, mode: Mode, search_mode: str, answer: str, citations: list[Citation]) -> QueryResult:
        timings = {name: round(end - start, 3) for name, (start, end) in self.spans.items()}
        timings["ttft"] = round(self.first_token_at if self.first_token_at is not None else self.elapsed(), 3)
        timings["total"] = round(self.elapsed(), 3)
        return QueryResult(
            question=self.question,
            mode=mode,
            sub_queries=self.sub_queries,
            analyses=self.analyses,
            sufficiency=self.verdict,
            stage2_queries=self.stage2_queries,
            answer=answer,
            citations=citations,
            timings=timings,
            usage=self.usage,
            degradations=self.degradations,
            unverified_citations=sum(1 for c in citations if not c.verified),
            search_mode=search_mode,
            coverage=self.coverage,
        )
