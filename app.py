"""ClinCite web app (Chainlit): renders the query service's event stream; holds no pipeline logic.

    make run                                    # offline demo on the sample KB: http://localhost:8000
    chainlit run app.py -h --port 8000          # the same, directly

Each stage becomes a collapsible step, the report streams into one message, every 【n】 in it opens the verbatim
source passage in the side panel, 👍/👎 go to the database, and /metrics shows the satisfaction figures.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time

import chainlit as cl
from chainlit.auth.cookie import get_token_from_cookies
from chainlit.auth.jwt import decode_jwt
from chainlit.data import get_data_layer
from chainlit.server import app as fastapi_app
from chainlit.types import ThreadDict
from chainlit.utils import utc_now
from fastapi import Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response

from agents import display_source
from citations import mark_unverified
from datalayer import FILES_ROUTE, ClinCiteDataLayer, ensure_schema
from kb import Chunk
from metrics import compute_metrics, render_page
from models import (STAGE_LABELS, AnswerDone, AnswerToken, ChatTurn, Citation, DecompositionReady, DegradedEvent,
                    Event, JudgementDone, JudgementStarted, NoticeEvent, QueryResult, SearchDone, Stage2Started,
                    StageFinished, StageStarted, SufficiencyReady)
from query import OFFLINE_BANNER, TwoStageQueryService
from search import quiet_libraries
from settings import PROJECT_DIR, get_settings
from users import UserStore, check_login, ensure_auth_secret

log = logging.getLogger("clincite.app")
ANSWER_AUTHOR = "ClinCite"
NOTICE_AUTHOR = "系统提示"
FLUSH_SECONDS = 0.04  # tokens are sent in batches: one socket event and one markdown re-parse per batch
SNIPPET_CHARS = 80
CONFIDENCE = {"high": "高", "medium": "中", "low": "低"}
STARTERS = [
    ("低浓度阿托品", "低浓度阿托品控制近视的效果和副作用？"),
    ("OK镜适应症", "角膜塑形镜（OK镜）的适应症和禁忌症有哪些？"),
    ("红光治疗安全性", "重复低强度红光治疗近视的安全性如何？"),
    ("高度近视并发症", "高度近视需要警惕哪些并发症？"),
]

quiet_libraries()
settings = get_settings()
ensure_auth_secret(settings)
users = UserStore(settings.users_file)
service = TwoStageQueryService(settings)


# ---------------------------------------------------------------------------------------------------------------
# Start-up, login, data layer
# ---------------------------------------------------------------------------------------------------------------


@cl.data_layer
def data_layer() -> ClinCiteDataLayer:
    return ClinCiteDataLayer(settings)


@cl.on_app_startup
async def on_startup() -> None:
    await ensure_schema(settings.db_url)
    await ingest_sample_kb_if_empty()
    asyncio.create_task(warm_up())


async def ingest_sample_kb_if_empty() -> None:
    """First start: fill an empty knowledge base with the sample documents, in a separate process.

    (Chroma writes hold the GIL for seconds; in this process they would stall every open chat.)
    """
    if service.kb.catalogue.document_count() or not settings.sample_kb_dir.exists():
        return
    log.warning("Knowledge base %s is empty: ingesting %s", service.kb.dir, settings.sample_kb_dir)
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(PROJECT_DIR / "ingest.py"), str(settings.sample_kb_dir), "--kb", str(service.kb.dir),
        cwd=str(PROJECT_DIR), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await process.communicate()
    log.warning("Sample ingest finished (exit %s):\n%s", process.returncode, output.decode("utf-8", "replace"))


async def warm_up() -> None:
    started = time.perf_counter()
    try:
        await service.warm_up()
    except Exception:
        log.exception("Warm-up failed; the first question will load what it needs")
    log.warning("Warm-up done in %.1f s (search: %s)", time.perf_counter() - started,
                "BM25-only" if service.searcher.bm25_only else "hybrid")


@cl.password_auth_callback
def login(username: str, password: str) -> cl.User | None:
    display_name = check_login(settings, users, username, password)
    return cl.User(identifier=username, display_name=display_name, metadata={"role": "clinician"}) \
        if display_name else None


@cl.set_starters
async def starters(user=None, language=None) -> list[cl.Starter]:
    return [cl.Starter(label=label, message=message) for label, message in STARTERS]


@cl.on_chat_start
async def on_chat_start() -> None:
    cl.user_session.set("history", [])
    cl.user_session.set("notices_shown", set())
    for notice in mode_notices():
        await cl.context.emitter.send_toast(notice, "warning")  # a toast keeps the starters on screen


@cl.on_chat_resume
async def on_chat_resume(thread: ThreadDict) -> None:
    history = []
    for step in thread.get("steps", []):
        if step.get("type") == "user_message":
            history.append(ChatTurn(role="user", content=step.get("output") or ""))
        elif step.get("type") == "assistant_message" and step.get("name") == ANSWER_AUTHOR:
            history.append(ChatTurn(role="assistant", content=step.get("output") or ""))
    cl.user_session.set("history", history[-2 * settings.history_turns:])
    cl.user_session.set("notices_shown", set())


def mode_notices() -> list[str]:
    notices = []
    if settings.offline:
        notices.append(OFFLINE_BANNER)
    if service.searcher.bm25_only:
        notices.append("语义检索不可用，当前仅使用 BM25 关键词检索（详见运行日志中的修复方法）。")
    return notices


# ---------------------------------------------------------------------------------------------------------------
# A question
# ---------------------------------------------------------------------------------------------------------------


@cl.on_message
async def on_message(message: cl.Message) -> None:
    history: list[ChatTurn] = cl.user_session.get("history") or []
    renderer = ChainlitRenderer(run_step_id=cl.context.current_step.id if cl.context.current_step else None)
    try:
        async for event in service.run(message.content, history):
            await renderer.handle(event)
    except Exception as exc:  # Chainlit would swallow it: the clinician must see that something went wrong
        log.exception("Question failed")
        await renderer.close_open_steps()
        await cl.ErrorMessage(content=f"抱歉，处理这个问题时出错了：{type(exc).__name__}。请稍后重试或联系管理员。",
                              author=NOTICE_AUTHOR).send()
        return
    result = renderer.result
    if result is None:
        return
    history.extend([ChatTurn(role="user", content=message.content), ChatTurn(role="assistant", content=result.answer)])
    cl.user_session.set("history", history[-2 * settings.history_turns:])
    await record(result, renderer.run_step_id)


async def record(result: QueryResult, run_step_id: str | None) -> None:
    layer = get_data_layer()
    if not isinstance(layer, ClinCiteDataLayer) or run_step_id is None:
        return
    user = cl.user_session.get("user")
    try:
        await layer.record_answer(result, run_step_id, cl.context.session.thread_id,
                                  getattr(user, "identifier", None))
    except Exception:
        log.exception("Answer record not saved (metrics will miss this answer)")


class ChainlitRenderer:
    """Draws service events as Chainlit steps, one streamed message and one side element per citation."""

    def __init__(self, run_step_id: str | None):
        self.run_step_id = run_step_id
        self.steps: dict[str, cl.Step] = {}
        self.message: cl.Message | None = None
        self.buffer: list[str] = []
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
                step.output = "\n".join(f"{i}. **{sq.text}**（维度：{sq.focus or '综合'}）" for i, sq in enumerate(subs, 1))
                await step.update()
            case SearchDone():
                await self.search_done(event)
            case JudgementStarted(stage=1) if "judgement" not in self.steps:
                await self.open_step("judgement")
            case JudgementDone():
                await self.judgement_done(event)
            case SufficiencyReady(verdict=v):
                step = self.steps.get("sufficiency") or await self.open_step("sufficiency")
                step.output = (f"**结论：{'证据充分' if v.sufficient else '证据不足，需要第二阶段检索'}**"
                               f"（置信度 {CONFIDENCE[v.confidence]}）\n\n"
                               f"- 已覆盖：{'、'.join(v.covered_aspects) or '—'}\n"
                               f"- 缺失的关键方面：{'、'.join(v.missing_key_aspects) or '无'}\n"
                               f"- 理由：{v.reasoning or '—'}")
                await step.update()
            case Stage2Started(sub_queries=subs):
                step = self.steps.get("stage2") or await self.open_step("stage2")
                step.output = "追加子查询：\n" + "\n".join(f"- {sq.text}（{sq.focus}）" for sq in subs)
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
        lines = [f"**{event.sub_query.text}**\n"]
        for i, hit in enumerate(event.hits, 1):
            scores = "，".join(filter(None, [f"BM25 {hit.bm25:.2f}" if hit.bm25 is not None else "",
                                            f"语义 {hit.semantic:.2f}" if hit.semantic is not None else ""]))
            snippet = hit.text.replace("\n", " ")[:SNIPPET_CHARS]
            lines.append(f"{i}. 《{display_source(hit.source)}》（{scores}）{snippet}…")
        if not event.hits:
            lines.append("没有检索到相关片段。")
        await self.child(parent, f"检索 {event.sub_query.id}", "\n".join(lines))

    async def judgement_done(self, event: JudgementDone) -> None:
        parent = "stage2" if event.stage == 2 else "judgement"
        if parent not in self.steps:
            await self.open_step(parent)
        a = event.analysis
        extracts = "\n".join(f"> 《{display_source(x.source)}》“{x.text}”\n" for x in a.extracts) or "（无相关摘录）"
        output = (f"**{a.sub_query.text}**\n\n置信度：{CONFIDENCE[a.confidence]}"
                  f"{'（判断失败，直接使用检索结果）' if a.degraded else ''}\n\n子回答：{a.sub_answer}\n\n{extracts}\n"
                  f"缺失方面：{'、'.join(a.missing) or '无'}")
        await self.child(parent, f"判断 {a.sub_query.id}", output)

    async def notice(self, event: NoticeEvent) -> None:
        shown: set = cl.user_session.get("notices_shown") or set()
        if event.kind != "cached" and event.kind in shown:
            return
        shown.add(event.kind)
        cl.user_session.set("notices_shown", shown)
        icon = {"offline": "🧪", "bm25_only": "⚠️", "cached": "⚡", "empty_kb": "📂"}[event.kind]
        await cl.Message(content=f"{icon} {event.message}", author=NOTICE_AUTHOR).send()

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
            await self.message.stream_token("".join(self.buffer))
            self.buffer.clear()

    async def answer_done(self, result: QueryResult) -> None:
        self.result = result
        await self.flush()
        await self.close_open_steps()
        message = self.message or cl.Message(content="", author=ANSWER_AUTHOR)
        message.content = final_content(result, self.late_degradations)
        message.elements = source_elements(result.citations, service.kb.catalogue.get_chunks(
            [c.chunk_id for c in result.citations if c.chunk_id]))
        await message.send()


def final_content(result: QueryResult, late_degradations: list[str]) -> str:
    body = mark_unverified(result.answer, result.citations)
    checked = sum(1 for c in result.citations if c.verified)
    footer = [f"引用核验：{checked}/{len(result.citations)} 条原文已在来源中逐字找到"
              + (f"，⚠️ {result.unverified_citations} 条未能核验" if result.unverified_citations else "")
              + "。点击【n】查看原文。" if result.citations else "本回答没有可核验的引文。"]
    footer += [f"⚠️ {message}" for message in late_degradations]
    timing = f"首字 {result.timings.get('ttft', 0):.1f} 秒 · 总计 {result.timings.get('total', 0):.1f} 秒"
    footer.append(timing + (" · 缓存" if result.cached else "") + (" · 离线演示模式" if result.mode == "offline" else ""))
    return body.rstrip() + "\n\n---\n" + "  \n".join(footer)


def source_elements(citations: list[Citation], chunks: dict[str, Chunk]) -> list[cl.Text]:
    """One side element per citation, named 【n】 so the marker in the report is the link (no 【1】/【12】 clash)."""
    elements = []
    seen: set[int] = set()
    for citation in citations:
        if citation.number in seen:
            continue
        seen.add(citation.number)
        chunk = chunks.get(citation.chunk_id or "")
        heading = " > ".join(citation.heading_path) or "—"
        status = ("✅ 已在来源中逐字核验" if citation.verified
                  else "⚠️ **未能在来源中逐字找到这段引文**，请谨慎对待，并以原始文件为准。")
        context = f"\n\n---\n**所在段落全文**\n\n{chunk.text}" if chunk else ""
        content = (f"### 《{citation.source}》\n\n**章节**：{heading}\n\n{status}\n\n"
                   f"**引文**\n\n> {citation.quote}{context}")
        elements.append(cl.Text(name=f"【{citation.number}】", content=content, display="side"))
    return elements


# ---------------------------------------------------------------------------------------------------------------
# HTTP routes: metrics (login required) and stored source passages (owner only)
# ---------------------------------------------------------------------------------------------------------------


def request_user(request: Request) -> cl.User | None:
    token = get_token_from_cookies(request.cookies)
    header = request.headers.get("authorization", "")
    token = token or (header[7:] if header.lower().startswith("bearer ") else None)
    if not token:
        return None
    try:
        return decode_jwt(token)
    except Exception:
        return None


def metrics_layer() -> ClinCiteDataLayer:
    layer = get_data_layer()
    assert isinstance(layer, ClinCiteDataLayer)
    return layer


async def metrics_json(request: Request) -> Response:
    if request_user(request) is None:
        return JSONResponse({"error": "需要登录 (login required)"}, status_code=401)
    return JSONResponse(await compute_metrics(metrics_layer()))


async def metrics_page(request: Request) -> Response:
    if request_user(request) is None:
        return RedirectResponse("/login", status_code=303)
    return HTMLResponse(render_page(await compute_metrics(metrics_layer())))


async def stored_file(object_key: str, request: Request) -> Response:
    user = request_user(request)
    layer = metrics_layer()
    if user is None:
        return JSONResponse({"error": "需要登录 (login required)"}, status_code=401)
    persisted = await layer.get_user(user.identifier)
    if persisted is None or object_key.split("/", 1)[0] != persisted.id:
        return JSONResponse({"error": "无权访问 (forbidden)"}, status_code=403)
    path = layer.storage_provider.path(object_key)
    if not path.exists():
        return JSONResponse({"error": "not found"}, status_code=404)
    return FileResponse(path, media_type="text/plain; charset=utf-8")


def _add_routes_before_the_spa() -> None:
    """Chainlit's catch-all GET route (the single-page app) would shadow routes added after it."""
    before = len(fastapi_app.router.routes)
    fastapi_app.add_api_route("/metrics.json", metrics_json, methods=["GET"])
    fastapi_app.add_api_route("/metrics", metrics_page, methods=["GET"])
    fastapi_app.add_api_route(FILES_ROUTE + "/{object_key:path}", stored_file, methods=["GET"])
    ours = fastapi_app.router.routes[before:]
    del fastapi_app.router.routes[before:]
    fastapi_app.router.routes[0:0] = ours


_add_routes_before_the_spa()
