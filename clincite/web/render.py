"""Draws the query service's event stream in Chainlit: steps, one streamed report message, its source elements."""

from __future__ import annotations

import asyncio
import json
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
    NoticeEvent,
    PathChosen,
    QueryResult,
    SearchDone,
    Stage2Started,
    StageFinished,
    StageStarted,
    SubQueryRewritten,
    SufficiencyReady,
)
from clincite.report.citations import mark_unverified
from clincite.report.format import coverage_line as format_coverage_line
from clincite.report.inert import inert_report, inert_text
from clincite.users.store import ADMIN
from clincite.web.sources import pages_label, source_markdown, with_pages

ANSWER_AUTHOR = "ClinCite"
NOTICE_AUTHOR = "系统提示"
MODE_NOTICE = "mode"
# What a clinician needs to know of the app's mode, in one line each (the first of them per chat is shown).
MODE_NOTICES = {
    "offline": "🧪 演示模式：回答由规则从原文摘录拼接，未经大语言模型归纳；请点击【n】核对原文。",
    "bm25_only": "⚠️ 当前仅用关键词检索，换个说法可能检索到更多；请点击【n】核对原文。",
}
REANSWER_ACTION = "reanswer"  # app.py's action callback
REANSWER_LABEL = "重新回答"
FLUSH_SECONDS = 0.1  # tokens go in batches, ten a second: each batch re-renders the report and sends what is new
SNIPPET_CHARS = 80
CONFIDENCE = {"high": "高", "medium": "中", "low": "低"}
FOUND_BY = {"bm25": "关键词", "semantic": "语义"}
LABEL_CHARS = 24  # of a sub-query in a step's name
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
        self.shown = ""  # the report so far as the browser shows it (made inert)
        self.last_flush = 0.0
        self.late_degradations: list[str] = []
        self.result: QueryResult | None = None

    async def handle(self, event: Event) -> None:
        match event:
            case NoticeEvent():
                await self.notice(event)
            case StageStarted(stage="answer"):
                self.message = cl.Message(content="", author=ANSWER_AUTHOR)
            case StageStarted(stage=stage):
                await self.open_step(stage)
            case StageFinished(stage=stage) if stage in self.steps:
                await self.close_step(stage)
            case DecompositionReady(sub_queries=subs, merged=merged):
                step = self.steps.get("decomposition") or await self.open_step("decomposition")
                step.output = "\n".join(
                    f"{i}. **{inert_text(sq.text)}**（维度：{inert_text(sq.focus or '综合')}"
                    + (f"；依赖 {sq.depends_on} 的答案" if sq.depends_on else "")
                    + "）"
                    for i, sq in enumerate(subs, 1)
                ) + "".join(f"\n- 与 {m.into} 重复，已合并：{inert_text(m.text)}" for m in merged)
                await step.update()
            case PathChosen(label=label, reason=reason):
                await self.child_of_run(label, inert_text(reason))
            case SubQueryRewritten(original=before, rewritten=after, bridge=bridge):
                found = (
                    f"用 {before.depends_on} 的答案“{inert_text(bridge)}”改写"
                    if bridge
                    else "前一步没有找到可用的答案，按原句检索"
                )
                await self.child(
                    "search",
                    f"改写 {after.id}",
                    f"原句：{inert_text(before.text)}\n\n{found}：**{inert_text(after.text)}**",
                )
            case SearchDone():
                await self.search_done(event)
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
                else:  # a degradation can name a sub-query (model output): shown as text, never as markup
                    await cl.Message(content=f"⚠️ {inert_text(d.message)}", author=NOTICE_AUTHOR).send()
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

    async def child_of_run(self, name: str, output: str) -> None:
        """A step with nothing under it, done at once (the fast-path gate's choice)."""
        step = cl.Step(name=name, type="tool", parent_id=self.run_step_id, show_input=False)
        step.start = utc_now()
        step.output = output
        step.end = utc_now()
        await step.send()

    async def child(self, parent: str, name: str, output: str) -> None:
        step = cl.Step(name=name, type="tool", parent_id=self.steps[parent].id, show_input=False)
        step.start = utc_now()
        step.output = output
        step.end = utc_now()
        await step.send()

    async def search_done(self, event: SearchDone) -> None:
        parent = "stage2" if event.stage == 2 else "search"  # opened by its StageStarted
        lines = [f"**{inert_text(event.sub_query.text)}**\n"]
        for i, hit in enumerate(event.hits, 1):
            # In words, not scores: which retriever found the passage, and where it stands in its document.
            found = "、".join(FOUND_BY.get(way, way) for way in hit.found_by) or "检索"
            where = "，".join(filter(None, [" › ".join(hit.heading_path[-1:]), pages_label(hit.pages)]))
            snippet = inert_text(hit.text.replace("\n", " ")[:SNIPPET_CHARS])
            lines.append(
                f"{i}. 《{inert_text(display_source(hit.source))}》{'（' + inert_text(where) + '）' if where else ''}"
                f" {snippet}…（{found}命中）"
            )
        if not event.hits:
            lines.append("没有检索到相关片段。")
        await self.child(parent, step_label("检索", event.sub_query), "\n".join(lines))

    async def judgement_done(self, event: JudgementDone) -> None:
        parent = "stage2" if event.stage == 2 else "judgement"  # opened by its StageStarted
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
        await self.child(parent, step_label("判断", a.sub_query), output)

    async def notice(self, event: NoticeEvent) -> None:
        """One short mode notice per chat (offline, keyword-only search: a clinician can act on neither, so once is
        enough; the details are on /metrics for the admins); the other notices once per chat, "cached" every time."""
        shown: set = cl.user_session.get("notices_shown") or set()
        kind = MODE_NOTICE if event.kind in MODE_NOTICES else event.kind
        if kind != "cached" and kind in shown:
            return
        shown.add(kind)
        cl.user_session.set("notices_shown", shown)
        if kind == MODE_NOTICE:
            message = MODE_NOTICES[event.kind]
            if (getattr(cl.user_session.get("user"), "metadata", None) or {}).get("role") == ADMIN:
                message += "（原因与处理方法见[指标页](/metrics)）"
            await cl.Message(content=message, author=NOTICE_AUTHOR, metadata={"clincite_notice": MODE_NOTICE}).send()
            return
        icon = {"cached": "⚡", "empty_kb": "📂"}.get(kind, "")
        # The service's notice texts are shown as text (through the one inert renderer), like everything it sends.
        await cl.Message(content=f"{icon} {inert_text(event.message)}".strip(), author=NOTICE_AUTHOR).send()

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
            # The whole report so far is made inert (a link or image can span several tokens, so escaping token by
            # token could not see it); only what it adds to the shown one is sent — a few dozen characters, not the
            # whole report ten times a second — unless the new rendering changed what is already shown: then it
            # replaces it.
            self.streamed += "".join(self.buffer)
            self.buffer.clear()
            rendered = inert_report(self.streamed)
            if rendered.startswith(self.shown):
                await self.message.stream_token(rendered[len(self.shown) :])
            else:
                await self.message.stream_token(rendered, is_sequence=True)
            self.shown = rendered

    async def answer_done(self, result: QueryResult) -> None:
        self.result = result
        await self.flush()
        await self.close_open_steps()
        message = self.message or cl.Message(content="", author=ANSWER_AUTHOR)
        message.content = final_content(result, self.late_degradations)
        cited = [c.chunk_id for c in result.citations if c.chunk_id]
        message.elements = source_elements(result.citations, await asyncio.to_thread(self.chunks, cited))
        if result.cached:  # answered from the cache: one click answers it anew from the knowledge base
            message.actions = [
                cl.Action(
                    name=REANSWER_ACTION, payload={"question": result.question}, label=REANSWER_LABEL, icon="refresh-cw"
                )
            ]
        await message.send()


def step_label(action: str, sub_query) -> str:
    """A step named in words by what it searched or judged ("检索：原问题", "判断：阿托品的不良反应"), not its id."""
    if sub_query.id == "q0":
        return f"{action}：原问题"
    text = " ".join(sub_query.text.split())
    text = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    return f"{action}：{text}"


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
    footer += [f"⚠️ {inert_text(message)}" for message in late_degradations]
    timing = f"首字 {result.timings.get('ttft', 0):.1f} 秒 · 总计 {result.timings.get('total', 0):.1f} 秒"
    footer.append(timing + (" · 缓存" if result.cached else ""))  # the mode is said once per chat, not per answer
    return body.rstrip() + "\n\n---\n" + "  \n".join(footer)


def coverage_line(result: QueryResult) -> str:
    """How far the evidence answers the question, in the clinician's words (the one report format's). The aspects are
    the judges' words and sub-queries — model output — and made inert before the browser sees them."""
    coverage = result.coverage.model_copy(update={"missing": [inert_text(m) for m in result.coverage.missing]})
    return format_coverage_line(coverage)


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


def notices_in(thread: dict) -> set[str]:
    """The once-per-chat notices a resumed thread has already shown (so reopening it does not repeat them)."""
    shown = set()
    for step in thread.get("steps", []):
        metadata = step.get("metadata") or {}
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except ValueError:
                metadata = {}
        if isinstance(metadata, dict) and metadata.get("clincite_notice"):
            shown.add(str(metadata["clincite_notice"]))
    return shown
