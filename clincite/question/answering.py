"""The answer stage: the report streamed through the speculation gate, with fallbacks that never lose evidence.

- No token within ANSWER_FIRST_TOKEN_BUDGET seconds (LLM mode): the extractive report (`clincite.report.extractive`),
  every sentence verbatim from the judged extracts, marked as degraded.
- Generation fails before its first token: the evidence found, verbatim; fails midway: what streamed so far plus the
  sources. All of them are visible as a `DegradedEvent`.
"""

from __future__ import annotations

import asyncio
import re

from clincite.core import loopclock
from clincite.core.shapes import AnswerToken, SubQueryAnalysis
from clincite.question.run import StageContext
from clincite.question.speculation import AnswerGate
from clincite.question.stages import Deps
from clincite.report.extractive import evidence_items, extractive_report
from clincite.report.format import sources_section

FALLBACK_PIECE = 40  # characters per token event of a fallback section
MIDWAY_NOTICE = "\n\n> ⚠️ 回答生成中途中断，以上为已生成的部分；以下列出已检索到的原文来源。\n\n"
FAILED_NOTICE = "> ⚠️ 回答生成失败，以下直接列出已检索到的原文证据（未经模型归纳）。\n\n"
LATE_NOTICE = "⚠️ 回答模型在 {budget:g} 秒内没有开始输出，以下报告改为直接从已判断为相关的原文中逐字抽取，未经模型归纳。"


class FirstTokenLate(Exception):
    """The answer model produced nothing within the first-token budget."""

    def __init__(self, budget: float):
        super().__init__(f"no answer token within {budget:g} s")
        self.budget = budget


async def stream_answer(
    deps: Deps, run: StageContext, analyses: list[SubQueryAnalysis], gate: AnswerGate, gaps: list[str] | None = None
) -> str:
    """Stream the report once the gate opens; returns its text ("" when the gate dropped it)."""
    gaps = list(gaps or [])
    streamed: list[str] = []  # what reached the clinician, kept when the stream fails midway
    text = ""
    try:
        async with asyncio.timeout(deps.settings.answer_generation.budget):
            if not await _stream(deps, run, analyses, gate, gaps, streamed):
                return ""
        text = "".join(streamed)
    except asyncio.CancelledError:
        raise
    except FirstTokenLate as exc:
        if not await open_answer(run, gate):
            return ""
        text = _extractive(run, analyses, gaps, exc)
    except Exception as exc:
        text = "".join(streamed)
        if not text and not await open_answer(run, gate):
            return ""
        text += _fallback(run, analyses, text, exc)
    if not text and not await open_answer(run, gate):
        return ""
    run.finish("answer")
    return text


def _first_token_budget(deps: Deps) -> float | None:
    # The offline report is computed locally and starts at once: only a model can be late.
    return deps.settings.answer_first_token_budget if deps.reasoner.mode == "llm" else None


async def _stream(
    deps: Deps,
    run: StageContext,
    analyses: list[SubQueryAnalysis],
    gate: AnswerGate,
    gaps: list[str],
    streamed: list[str],
) -> bool:
    """Emit the report's deltas as they come, into `streamed` too (False: the gate dropped it). The first one must come
    within the first-token budget, opening the model's stream included; the timers run in this task, so a late
    stream is cancelled cleanly."""
    budget = _first_token_budget(deps)
    try:
        async with (
            loopclock.budget(budget) as first_token,
            deps.reasoner.answer(run.question, run.history, analyses, gaps, run.add_usage) as deltas,
        ):
            async for delta in deltas:
                if not streamed:
                    first_token.reschedule(None)  # the budget is for the first token only
                    if not await open_answer(run, gate):
                        return False
                streamed.append(delta)
                run.emit(AnswerToken(text=delta))
    except TimeoutError:
        if streamed or budget is None or not first_token.expired():
            raise
        raise FirstTokenLate(budget) from None
    return True


async def open_answer(run: StageContext, gate: AnswerGate) -> bool:
    """Wait for the verdict; the answer step starts for the user only when its tokens can be shown."""
    if not await gate.wait_open():
        return False
    run.start("answer")
    return True


def _emit_pieces(run: StageContext, text: str) -> None:
    for i in range(0, len(text), FALLBACK_PIECE):
        run.emit(AnswerToken(text=text[i : i + FALLBACK_PIECE]))


def _extractive(run: StageContext, analyses: list[SubQueryAnalysis], gaps: list[str], exc: FirstTokenLate) -> str:
    run.degrade("answer", "回答模型首字过慢：已改为从原文逐字抽取的报告。", exc)
    report = extractive_report(analyses, gaps, LATE_NOTICE.format(budget=exc.budget))
    _emit_pieces(run, report)
    return report


def _fallback(run: StageContext, analyses: list[SubQueryAnalysis], text: str, exc: Exception) -> str:
    if text:
        notice = MIDWAY_NOTICE
        run.degrade("answer", "回答生成中途中断：已保留已生成的部分，并附上已找到的来源。", exc)
    else:
        notice = FAILED_NOTICE
        run.degrade("answer", "回答生成失败：已改为直接列出检索到的原文证据。", exc)
    tail = notice + sources_section(evidence_items(analyses, first_number=_last_marker(text) + 1))
    _emit_pieces(run, tail)
    return tail


def _last_marker(text: str) -> int:
    return max((int(n) for n in re.findall(r"【(\d+)】", text)), default=0)
