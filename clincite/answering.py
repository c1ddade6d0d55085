"""The answer stage: the report streamed through the speculation gate, with a fallback that never loses evidence.

If generation fails before its first token the clinician gets the evidence found, verbatim; if it fails midway,
what streamed so far plus the sources. Both are visible as a `DegradedEvent`.
"""

from __future__ import annotations

import asyncio
import re

from clincite.citations import format_evidence_item
from clincite.naming import display_source
from clincite.prompts import answer_prompt
from clincite.run import QuestionRun
from clincite.shapes import STAGE_LABELS, AnswerToken, StageStarted, SubQueryAnalysis
from clincite.speculation import AnswerGate
from clincite.stages import Deps

FALLBACK_PIECE = 40  # characters per token event of a fallback section
MIDWAY_NOTICE = "\n\n> ⚠️ 回答生成中途中断，以上为已生成的部分；以下列出已检索到的原文来源。\n\n"
FAILED_NOTICE = "> ⚠️ 回答生成失败，以下直接列出已检索到的原文证据（未经模型归纳）。\n\n"


async def stream_answer(deps: Deps, run: QuestionRun, analyses: list[SubQueryAnalysis], gate: AnswerGate) -> str:
    """Stream the report once the gate opens; returns its text ("" when the gate dropped it)."""
    started = run.elapsed()
    agent = deps.agents.answer_generation
    text = ""
    try:
        async with asyncio.timeout(deps.settings.answer_generation.budget):
            async with agent.run_stream(answer_prompt(run.question, run.history, analyses)) as stream:
                deltas = stream.stream_text(delta=True, debounce_by=None)
                try:
                    async for delta in deltas:
                        if not text and not await _open(run, gate):
                            return ""
                        text += delta
                        run.emit(AnswerToken(text=delta))
                finally:
                    # Closed here, inside the run's context: left to the garbage collector, a cancelled stream's
                    # generators log "generator didn't stop after athrow()".
                    await deltas.aclose()
                run.add_usage("answer_generation", stream.usage)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if not text and not await _open(run, gate):
            return ""
        text += _fallback(run, analyses, text, exc)
    if not text and not await _open(run, gate):
        return ""
    run.finish("answer", started)
    return text


async def _open(run: QuestionRun, gate: AnswerGate) -> bool:
    """Wait for the verdict; the answer step starts for the user only when its tokens can be shown."""
    if not await gate.wait_open():
        return False
    if run.answer_started_at is None:
        run.answer_started_at = run.elapsed()
        run.emit(StageStarted(stage="answer", label=STAGE_LABELS["answer"]))
    return True


def _fallback(run: QuestionRun, analyses: list[SubQueryAnalysis], text: str, exc: Exception) -> str:
    if text:
        notice = MIDWAY_NOTICE
        run.degrade("answer", "回答生成中途中断：已保留已生成的部分，并附上已找到的来源。", exc)
    else:
        notice = FAILED_NOTICE
        run.degrade("answer", "回答生成失败：已改为直接列出检索到的原文证据。", exc)
    tail = notice + sources_section(analyses, first_number=_last_marker(text) + 1)
    for i in range(0, len(tail), FALLBACK_PIECE):
        run.emit(AnswerToken(text=tail[i:i + FALLBACK_PIECE]))
    return tail


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
    return max((int(n) for n in re.findall(r"【(\d+)】", text)), default=0)
