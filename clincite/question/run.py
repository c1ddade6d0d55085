"""One question's run: everything the stages find, time, spend and degrade, in one state object.

The service creates a `QuestionRun` per question; each stage reads what it needs from it and records its outcome.
`emit` sends an event to whoever renders the run (the web app, the terminal, a test).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

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
    Hit,
    Mode,
    QueryResult,
    StageFinished,
    SubQuery,
    SubQueryAnalysis,
    SufficiencyVerdict,
)

log = logging.getLogger("clincite.question.run")

Emit = Callable[[Event], None]


@dataclass
class QuestionRun:
    question: str
    history: list[ChatTurn]
    emit_event: Emit
    started: float = field(default_factory=time.perf_counter)
    spans: dict[str, list[float]] = field(default_factory=dict)
    usage: dict[str, AgentUsage] = field(default_factory=dict)
    degradations: list[Degradation] = field(default_factory=list)
    notices_sent: set[str] = field(default_factory=set)
    search_announced: bool = False
    first_token_at: float | None = None
    answer_started_at: float | None = None
    judged_chunks: set[str] = field(default_factory=set)
    sub_queries: list[SubQuery] = field(default_factory=list)
    stage1: list[SubQueryAnalysis] = field(default_factory=list)
    verdict: SufficiencyVerdict | None = None
    stage2_queries: list[SubQuery] = field(default_factory=list)
    stage2: list[SubQueryAnalysis] = field(default_factory=list)
    closest: dict[str, float] = field(default_factory=dict)  # source → best fused search score, for an abstention
    coverage: Coverage = field(default_factory=lambda: Coverage(status="no_evidence"))

    @property
    def analyses(self) -> list[SubQueryAnalysis]:
        return [*self.stage1, *self.stage2]

    def emit(self, event: Event) -> None:
        if isinstance(event, AnswerToken) and self.first_token_at is None:
            self.first_token_at = self.elapsed()
        self.emit_event(event)

    def note_hits(self, hits: list[Hit]) -> None:
        for hit in hits:
            self.closest[hit.source] = max(self.closest.get(hit.source, 0.0), hit.score)

    def closest_sources(self) -> list[str]:
        return sorted(self.closest, key=lambda source: -self.closest[source])

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def span(self, name: str, start: float, end: float) -> None:
        """Stretch a stage's [first start, last end] window; the stage's timing is its width."""
        window = self.spans.setdefault(name, [start, end])
        window[0], window[1] = min(window[0], start), max(window[1], end)

    def finish(self, stage: str, started: float) -> None:
        """Close a stage's window and tell the renderers (internal spans such as search_stage2 stay silent)."""
        now = self.elapsed()
        self.span(stage, started, now)
        if stage in STAGE_LABELS:
            self.emit(StageFinished(stage=stage, seconds=round(now - started, 3)))

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
