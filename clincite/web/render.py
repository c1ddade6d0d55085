"""Draws the query service's event stream in Chainlit: steps, one streamed report message, its source elements."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import chainlit as cl
from chainlit.utils import utc_now

from clincite.core.naming import display_source
from clincite.core.shapes import (
    STAGE_LABELS,
    AnswerDone,
    AnswerToken,
    Chunk,
    Citation,
    DecompositionReady,
    DegradedEvent,
    Event,
    JudgementDone,
    JudgementStarted,
    NoticeEvent,
    QueryResult,
    SearchDone,
    Stage2Started,
    StageFinished,
    StageStarted,
    SufficiencyReady,
)
from clincite.report.citations import mark_unverified
from clincite.report.format import coverage_line as format_coverage_line
from clincite.report.inert import inert_report, inert_text
from clincite.web.sources import source_markdown, with_pages

ANSWER_AUTHOR = "ClinCite"
NOTICE_AUTHOR = "系统提示"
BM25_ONLY_NOTICE = "语义检索暂不可用，本次仅用关键词检索（原因与修复方法见 /metrics 的系统状态）。"
FLUSH_SECONDS = 0.1  # tokens go in batches, ten a second: each batch re-sends and re-renders the whole report
SNIPPET_CHARS = 80
CONFIDENCE = {"high": "高", "medium": "中", "low": "低"}
ChunkLookup = Callable[[list[str]], dict[str, Chunk]]


class ChainlitRenderer:
    """Draws service events as Chainlit steps, one streamed message and one side element per citation."""

    def __init__(self, run_step_id: str | None, chunks: ChunkLookup):
        self.chunks = chunks
        self.run_step_id = run_step_id
        self.steps: dict[str, cl.Step] = {}
        self.message: cl.Message | None = None
        self.buffer: list[str] = []
        self.streamed = ""  # the report so far, as the model wrote it
        self.last_flush = 0.0
        self.late_degradations: list[str] = []
        self.result: QueryResult | None = None

    async def handle(self, event: Event) -> None:
        match event:
            case NoticeEvent():
                await self.notice(event)
            case StageStarted(stage="answer"):
                self.message = cl.Message(content="", author=ANSWER_AUTHOR)
            case StageStarted(stage="search"):
                await self.open_step("search")
            case StageStarted(stage="sufficiency"):
                for done in ("search", "judgement"):  # every stage-1 search and judgement has finished by now
                    if done in self.steps:
                        await self.close_step(done)
                await self.open_step("sufficiency")
            case StageStarted(stage=stage) if stage in ("decomposition", "stage2"):
                await self.open_step(stage)
            case StageFinished(stage=stage) if stage in self.steps:
                await self.close_step(stage)
            case DecompositionReady(sub_queries=subs):
                step = self.steps.get("decomposition") or await self.open_step("decomposition")
                step.output = "\n".join(
                    f"{i}. **{inert_text(sq.text)}**（维度：{inert_text(sq.focus or '综合')}）"
                    for i, sq in enumerate(subs, 1)
                )
                await step.update()
            case SearchDone():
                await self.search_done(event)
            case JudgementStarted(stage=1) if "judgement" not in self.steps:
                await self.open_step("judgement")
            case JudgementDone():
                await self.judgement_done(event)
            case SufficiencyReady(verdict=v):
                step = self.steps.get("sufficiency") or await self.open_step("sufficiency")
                step.output = (
                    f"**结论：{'证据充分' if v.sufficient else '证据不足，需要第二阶段检索'}**"
                    f"（置信度 {CONFIDENCE[v.confidence]}）\n\n"
                    f"- 已覆盖：{inert_text('、'.join(v.covered_aspects)) or '—'}\n"
                    f"- 缺失的关键方面：{inert_text('、'.join(v.missing_key_aspects)) or '无'}\n"
                    f"- 理由：{inert_text(v.reasoning) or '—'}"
                )
                await step.update()
            case Stage2Started(sub_queries=subs):
                step = self.steps.get("stage2") or await self.open_step("stage2")
                step.output = "追加子查询：\n" + "\n".join(
                    f"- {inert_text(sq.text)}（{inert_text(sq.focus or '')}）" for sq in subs
                )
                await step.update()
            case DegradedEvent(degradation=d):
                if self.message is not None:  # keep the answer the last message (it carries the feedback buttons)
                    self.late_degradations.append(d.message)
                else:
                    await cl.Message(content=f"⚠️ {d.message}", author=NOTICE_AUTHOR).send()
            case AnswerToken(text=text):
                await self.token(text)
            case AnswerDone(result=result):
                await self.answer_done(result)

    # --- steps ---
    async def open_step(self, stage: str) -> cl.Step:
        step = cl.Step(name=STAGE_LABELS[stage], type="tool", parent_id=self.run_step_id, show_input=False)
        step.start = utc_now()
        self.steps[stage] = step
        await step.send()
        return step

    async def close_step(self, stage: str) -> None:
        step = self.steps[stage]
        if step.end is None:
            step.end = utc_now()
            await step.update()

    async def close_open_steps(self) -> None:
        for stage in list(self.steps):
            await self.close_step(stage)

    async def child(self, parent: str, name: str, output: str) -> None:
        step = cl.Step(name=name, type="tool", parent_id=self.steps[parent].id, show_input=False)
        step.start = utc_now()
        step.output = output
        step.end = utc_now()
        await step.send()

    async def search_done(self, event: SearchDone) -> None:
        parent = "stage2" if event.stage == 2 else "search"
        if parent not in self.steps:
            await self.open_step(parent)
        lines = [f"**{inert_text(event.sub_query.text)}**\n"]
        for i, hit in enumerate(event.hits, 1):
            scores = "，".join(
                filter(
                    None,
                    [
                        f"BM25 {hit.bm25:.2f}" if hit.bm25 is not None else "",
                        f"语义 {hit.semantic:.2f}" if hit.semantic is not None else "",
                    ],
                )
            )
            snippet = inert_text(hit.text.replace("\n", " ")[:SNIPPET_CHARS])
            lines.append(f"{i}. 《{inert_text(display_source(hit.source))}》（{scores}）{snippet}…")
        if not event.hits:
            lines.append("没有检索到相关片段。")
        await self.child(parent, f"检索 {event.sub_query.id}", "\n".join(lines))

    async def judgement_done(self, event: JudgementDone) -> None:
        parent = "stage2" if event.stage == 2 else "judgement"
        if parent not in self.steps:
            await self.open_step(parent)
        a = event.analysis
        # Sub-answers and extracts are document text (or model text made from it): shown, never rendered as markup.
        extracts = (
            "\n".join(
                f"> 《{inert_text(display_source(x.source))}》“{inert_text(' '.join(x.text.split()))}”\n"
                for x in a.extracts
            )
            or "（无相关摘录）"
        )
        output = (
            f"**{inert_text(a.sub_query.text)}**\n\n置信度：{CONFIDENCE[a.confidence]}"
            f"{'（判断失败，直接使用检索结果）' if a.degraded else ''}\n\n子回答：{inert_text(a.sub_answer)}\n\n"
            f"{extracts}\n缺失方面：{inert_text('、'.join(a.missing)) or '无'}"
        )
        await self.child(parent, f"判断 {a.sub_query.id}", output)

    async def notice(self, event: NoticeEvent) -> None:
        shown: set = cl.user_session.get("notices_shown") or set()
        if event.kind != "cached" and event.kind in shown:
            return
        shown.add(event.kind)
        cl.user_session.set("notices_shown", shown)
        icon = {"offline": "🧪", "bm25_only": "⚠️", "cached": "⚡", "empty_kb": "📂"}[event.kind]
        # The embedding problem's details and fix are for the clinic's IT (log, ingest.py, /metrics), not the chat.
        message = BM25_ONLY_NOTICE if event.kind == "bm25_only" else event.message
        await cl.Message(content=f"{icon} {message}", author=NOTICE_AUTHOR).send()

    # --- the answer ---
    async def token(self, text: str) -> None:
        if self.message is None:
            self.message = cl.Message(content="", author=ANSWER_AUTHOR)
        self.buffer.append(text)
        now = time.perf_counter()
        if now - self.last_flush >= FLUSH_SECONDS:
            await self.flush()
            self.last_flush = now

    async def flush(self) -> None:
        if self.buffer and self.message is not None:
            # The whole report so far, made inert, replaces the shown one: a link or image can span several tokens,
            # so escaping token by token could not see it.
            self.streamed += "".join(self.buffer)
            self.buffer.clear()
            await self.message.stream_token(inert_report(self.streamed), is_sequence=True)

    async def answer_done(self, result: QueryResult) -> None:
        self.result = result
        await self.flush()
        await self.close_open_steps()
        message = self.message or cl.Message(content="", author=ANSWER_AUTHOR)
        message.content = final_content(result, self.late_degradations)
        cited = [c.chunk_id for c in result.citations if c.chunk_id]
        message.elements = source_elements(result.citations, await asyncio.to_thread(self.chunks, cited))
        await message.send()


def final_content(result: QueryResult, late_degradations: list[str]) -> str:
    body = inert_report(with_pages(mark_unverified(result.answer, result.citations), result.citations))
    checked = sum(1 for c in result.citations if c.verified)
    # Say exactly what was checked: that each quote stands verbatim in the passage it cites, not that the passage
    # answers the question (relevance is the judge's call) nor that the conclusion is right.
    footer = [
        f"引用核验（原文逐字核对）：{checked}/{len(result.citations)} 条引文已在所注来源的段落中逐字找到"
        + (f"，⚠️ {result.unverified_citations} 条未能核验（在所注来源中找不到）" if result.unverified_citations else "")
        + "。这只证明引文确有出处；是否切题、结论是否恰当，请点击【n】对照原文判断。"
        if result.citations
        else "引用核验：本回答没有引用任何原文。"
    ]
    footer.append(coverage_line(result))
    footer += [f"⚠️ {message}" for message in late_degradations]
    timing = f"首字 {result.timings.get('ttft', 0):.1f} 秒 · 总计 {result.timings.get('total', 0):.1f} 秒"
    footer.append(
        timing + (" · 缓存" if result.cached else "") + (" · 离线演示模式" if result.mode == "offline" else "")
    )
    return body.rstrip() + "\n\n---\n" + "  \n".join(footer)


def coverage_line(result: QueryResult) -> str:
    """How far the evidence answers the question, in the clinician's words (the one report format's)."""
    return format_coverage_line(result.coverage)


def source_elements(citations: list[Citation], chunks: dict[str, Chunk]) -> list[cl.Text]:
    """One side element per citation, named 【n】 so the marker in the report is the link (no 【1】/【12】 clash).

    Chainlit (2.11+) would open the side panel by itself with every passage of the thread; public/custom.js keeps it
    closed until a clinician clicks a 【n】, and the panel then shows that citation's passage only.
    """
    elements = []
    seen: set[int] = set()
    for citation in citations:
        if citation.number in seen:
            continue
        seen.add(citation.number)
        content = source_markdown(citation, chunks.get(citation.chunk_id or ""))
        elements.append(cl.Text(name=f"【{citation.number}】", content=content, display="side"))
    return elements
