"""The 知识库 page: the documents of the library, their passages, upload / replace / delete, and the change log.

    GET  /admin/library[?q=名称]             the documents (search by name), the upload form, the queue, skipped files
    GET  /admin/library/queue                the queue as an HTML fragment (the page's script polls it every second)
    GET  /admin/library/document?source=…    one document's passages as search sees them (section path, pages)
    POST /admin/api/library/upload           files (+ `replace` = a document's name): staged, queued (JSON)
    POST /admin/library/delete               `source`: queued for deletion

Every change goes through `ingest_jobs` (the same ingest as the command line, in a child process, one at a time) and
lands in the change log with who asked for it. Catalogue reads run in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.datastructures import UploadFile

from clincite.core.naming import display_source
from clincite.report.inert import html_text
from clincite.web import state
from clincite.web.admin import changes
from clincite.web.admin.guard import Viewer
from clincite.web.admin.ingest_jobs import (
    FILE_STATUS,
    IngestJob,
    IngestQueue,
    JobFile,
    judge_upload,
    new_folder,
    queue_for,
    reason_type,
    remove_folder,
    safe_file_name,
    write_staged,
)
from clincite.web.admin.layout import SECURITY_HEADERS, csrf_field, notice, page, when
from clincite.web.sources import pages_label

log = logging.getLogger("clincite.admin")
UPLOAD_ROUTE = "/admin/api/library/upload"
FORMATS = {
    ".pdf": "PDF",
    ".docx": "DOCX",
    ".html": "HTML",
    ".htm": "HTML",
    ".md": "Markdown",
    ".markdown": "Markdown",
    ".json": "JSON",
    ".jsonl": "JSON",
}
MULTIPART_OVERHEAD = 64 * 1024  # per file: part headers and boundaries
ACCEPT = ".pdf,.docx,.html,.htm,.md,.markdown,.txt,.text,.json,.jsonl"
JOB_TITLES = {"upload": "上传", "replace": "替换", "delete": "删除"}
STATE_LABELS = {"queued": "排队中", "running": "进行中", "done": "已完成", "failed": "失败"}


def kb():
    return state.current().service.kb


def queue() -> IngestQueue:
    app = state.current()
    return queue_for(app.settings, app.service.kb.dir, record_job, serve_new_version)


async def serve_new_version() -> None:
    """The app's searcher swaps in what the ingest published now, rather than at its next periodic check: a question
    asked the moment the page says "已完成" already sees the change."""
    try:
        await asyncio.to_thread(state.current().service.searcher.refresh, True)
    except Exception:
        log.exception("Swapping in the new KB version failed; the periodic check will retry")


async def record_job(job: IngestJob) -> None:
    """The change log entries of a finished job: one per file, with its outcome."""
    layer = state.current().data_layer
    for file in job.files:
        outcome = FILE_STATUS.get(file.status, file.status)
        if file.chunks and file.status in ("added", "updated", "unchanged"):
            outcome += f"，{file.chunks} 个片段"
        if file.detail:
            outcome += f"：{file.detail}"
        if job.state == "failed" and not file.finished:
            outcome = f"失败：{job.message}"
        target = file.name if job.kind != "replace" else f"{file.name}（替换）"
        await changes.record(layer, job.actor, job.kind, target, outcome)


# --- the page -----------------------------------------------------------------------------------------------------


async def library_page(request: Request, viewer: Viewer) -> Response:
    query = (request.query_params.get("q") or "").strip()
    documents, skipped = await asyncio.to_thread(lambda: (kb().catalogue.library(), kb().catalogue.skipped_files()))
    shown = [d for d in documents if not query or query.lower() in f"{d['source']} {d['title']}".lower()]
    log = await changes.recent(state.current().data_layer, changes.LIBRARY_ACTIONS, limit=30)
    settings = state.current().settings
    body = f"""
<section class="panel" id="upload">
  <h2>上传文档</h2>
  <form id="upload-form" action="{UPLOAD_ROUTE}" method="post" enctype="multipart/form-data" data-upload>
    {csrf_field(viewer)}
    <label class="drop" id="drop-zone">
      <input type="file" name="files" multiple accept="{ACCEPT}" id="upload-input" class="visually-hidden">
      <span class="button secondary">选择文件</span>
      <span>或把文件拖到这里（可多选）</span>
      <small>支持 PDF、DOCX、HTML、Markdown、TXT、JSON；每个文件不超过 {settings.ingest_max_file_mb:g} MB，
      一次最多 {settings.upload_max_files} 个。文件名即引用名称，请先按希望被引用的样子命名。</small>
    </label>
    <ul class="chosen" id="chosen"></ul>
    <button type="submit">上传并导入</button>
    <progress id="upload-bar" max="100" value="0" hidden></progress>
    <p class="hint" id="upload-status" role="status"></p>
  </form>
</section>
<section class="panel">
  <h2>导入队列</h2>
  <p class="hint">同一时间只导入一批文件，后到的排队等候；导入完成后，正在使用的问答几秒内即可检索到新内容。</p>
  <div id="queue" data-poll="/admin/library/queue">{queue_html()}</div>
</section>
<section class="panel">
  <h2>文档（{len(documents)}）</h2>
  <form class="search" method="get" action="/admin/library">
    <input type="search" name="q" value="{html_text(query)}" placeholder="按名称搜索" aria-label="按名称搜索">
    <button type="submit">搜索</button>{' <a href="/admin/library">清除</a>' if query else ""}
  </form>
  {documents_table(shown, viewer, query)}
</section>
{skipped_html(skipped)}
<section class="panel">
  <h2>变更记录</h2>
  {changes.table(log)}
</section>"""
    return page("知识库", body, viewer, active="library")


def documents_table(documents: list[dict], viewer: Viewer, query: str) -> str:
    if not documents:
        empty = f"没有名称含“{html_text(query)}”的文档。" if query else "知识库还是空的。"
        return f'<p class="empty">{empty}</p>'
    rows = []
    for d in documents:
        source = d["source"]
        link = f"/admin/library/document?source={quote(source)}"
        suffix = Path(source).suffix.lower()
        kind = FORMATS.get(suffix, suffix.lstrip(".").upper() or "—")
        pages = f"{d['pages']} 页 · " if d["pages"] else ""
        rows.append(
            f'<tr><td class="name"><a href="{html_text(link)}">《{html_text(display_source(source, d["title"]))}》</a>'
            f'<div class="phone-only hint">{kind} · {pages}{d["chunks"]} 个片段 · 更新于 {when(d["ingested_at"])}</div>'
            f'</td><td class="file">{html_text(source)}</td><td class="wide-only nowrap">{kind}</td>'
            f'<td class="wide-only num">{d["pages"] or "—"}</td><td class="wide-only num">{d["chunks"]}</td>'
            f'<td class="wide-only nowrap">{when(d["added_at"])}</td>'
            f'<td class="wide-only nowrap">{when(d["ingested_at"])}</td>'
            f'<td class="actions">{replace_form(source, viewer)}{delete_form(source, viewer)}</td></tr>'
        )
    return (
        '<table class="list documents"><thead><tr><th>引用名称</th><th>文件</th><th>格式</th><th class="num">页数</th>'
        '<th class="num">片段</th><th>首次导入</th><th>最近更新</th><th>操作</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def replace_form(source: str, viewer: Viewer) -> str:
    suffix = Path(source).suffix.lower()
    return (
        f'<form class="inline" action="{UPLOAD_ROUTE}" method="post" enctype="multipart/form-data" data-upload>'
        f'{csrf_field(viewer)}<input type="hidden" name="replace" value="{html_text(source)}">'
        f'<label class="button secondary">替换<input type="file" name="files" accept="{suffix}" '
        f'class="visually-hidden" data-autosubmit aria-label="用新文件替换 {html_text(source)}"></label></form>'
    )


def delete_form(source: str, viewer: Viewer) -> str:
    return (
        f'<form class="inline" action="/admin/library/delete" method="post" '
        f'data-confirm="删除《{html_text(display_source(source))}》？它的片段和向量会一并删除，问答中不再引用它。">'
        f'{csrf_field(viewer)}<input type="hidden" name="source" value="{html_text(source)}">'
        f'<button type="submit" class="danger">删除</button></form>'
    )


def skipped_html(skipped: list[dict]) -> str:
    if not skipped:
        return ""
    rows = "".join(
        f"<tr><td data-label=文件>{html_text(s['source'])}</td><td data-label=原因>{html_text(s['reason'])}</td>"
        f"<td data-label=时间>{when(s['skipped_at'])}</td></tr>"
        for s in skipped
    )
    return (
        f'<section class="panel"><h2>未导入的文件（{len(skipped)}）</h2>'
        '<p class="hint">这些文件在导入时被跳过，原因如下；修正后重新上传即可。</p>'
        '<table class="list"><thead><tr><th>文件</th><th>原因</th><th>时间</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def queue_html() -> str:
    jobs = queue().jobs()
    if not jobs:
        return '<p class="empty">队列为空。</p>'
    return "".join(job_html(job) for job in jobs)


def job_html(job: IngestJob) -> str:
    now = time.time()
    position = queue().position(job)
    label = STATE_LABELS[job.state] + (f"（前面还有 {position - 1} 批）" if position > 1 else "")
    if job.state == "running" and job.step:
        label += f" · {job.step}"
    left = job.seconds_left(now)
    done_files = sum(1 for f in job.files if f.finished)
    summary = f"{done_files}/{len(job.files)} 个文件 · {job.fraction * 100:.0f}%"
    if left is not None:
        summary += f" · 剩余约 {max(1, round(left))} 秒"
    files = "".join(
        f'<li class="file {f.status}"><span class="name">{html_text(f.name)}</span>'
        f'<span class="status">{html_text(file_status(f))}</span>'
        + (f'<span class="detail">{html_text(f.detail)}</span>' if f.detail else "")
        + "</li>"
        for f in job.files
    )
    refused = "".join(
        f'<li class="file refused"><span class="name">{html_text(name)}</span><span class="status">未接收</span>'
        f'<span class="detail">{html_text(reason)}</span></li>'
        for name, reason in job.refused
    )
    message = f'<p class="hint">{html_text(job.message)}</p>' if job.message else ""
    return (
        f'<div class="job {job.state}" data-job="{job.id}" data-state="{job.state}">'
        f'<div class="job-head"><b>{JOB_TITLES[job.kind]}</b> · {html_text(job.actor)} · {when(job.submitted)}'
        f'<span class="state">{html_text(label)}</span></div>'
        + (
            f'<progress max="100" value="{job.fraction * 100:.0f}" aria-label="导入进度"></progress>'
            f'<div class="hint">{summary}</div>'
            if job.files
            else ""
        )
        + f'<ul class="files">{files}{refused}</ul>{message}</div>'
    )


def file_status(f: JobFile) -> str:
    if f.status == "reading" and f.pages_total:
        return f"读取中：第 {f.pages_done}/{f.pages_total} 页"
    text = FILE_STATUS.get(f.status, f.status)
    if f.chunks and f.status in ("added", "updated", "unchanged"):
        text += f"（{f.chunks} 个片段）"
    return text


async def queue_fragment(request: Request, viewer: Viewer) -> Response:
    return HTMLResponse(queue_html(), headers=SECURITY_HEADERS)


# --- one document's passages --------------------------------------------------------------------------------------


async def document_page(request: Request, viewer: Viewer) -> Response:
    source = request.query_params.get("source") or ""
    catalogue = kb().catalogue
    record, chunks = await asyncio.to_thread(lambda: (catalogue.documents().get(source), catalogue.chunks_of(source)))
    if record is None:
        missing = notice("知识库中没有这个文档（可能已被删除或替换）。", "warn")
        return page("文档不存在", missing, viewer, "library", 404)
    items = "".join(
        f'<article class="passage"><div class="where">#{c.position + 1}'
        + (f" · {html_text(' › '.join(c.heading_path))}" if c.heading_path else "")
        + (f" · {pages_label(c.pages)}" if c.pages else "")
        + f' · {len(c.text)} 字</div><div class="text">{html_text(c.text)}</div></article>'
        for c in chunks
    )
    body = (
        f'<p><a href="/admin/library">← 返回知识库</a></p><p class="meta">文件：{html_text(source)} · '
        f"{len(chunks)} 个片段 · 最近更新 {when(record.ingested_at)}</p>"
        '<p class="hint">下面是检索时看到的片段原文（含所在章节与页码），按文档顺序排列。</p>'
        f"{items or '<p class=empty>这个文档没有片段。</p>'}"
    )
    return page(f"《{display_source(source, record.title)}》的片段", body, viewer, "library")


# --- changes ------------------------------------------------------------------------------------------------------


async def upload(request: Request, viewer: Viewer) -> Response:
    """Stage the files sent and queue their ingest. Sizes are checked before the body is read, each file's type
    before it is written anywhere of ours; what is refused is said per file."""
    app = state.current()
    settings = app.settings
    limit = settings.upload_max_files * (settings.ingest_max_file_mb * 1024 * 1024 + MULTIPART_OVERHEAD)
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        return _answer(request, 411, {"error": "上传请求缺少长度信息（Content-Length），请用页面上的上传表单。"})
    if int(length) > limit:
        return _answer(
            request,
            413,
            {
                "error": f"上传内容过大：一次最多 {settings.upload_max_files} 个文件，"
                f"每个不超过 {settings.ingest_max_file_mb:g} MB。"
            },
        )
    try:
        form = await request.form(max_files=settings.upload_max_files, max_fields=10)
    except Exception as exc:  # the multipart parser's own limits and errors
        detail = str(getattr(exc, "detail", exc))
        if "Too many files" in detail:
            return _answer(request, 413, {"error": f"一次最多上传 {settings.upload_max_files} 个文件。"})
        log.warning("Upload not readable: %s: %s", type(exc).__name__, detail)
        return _answer(request, 400, {"error": "上传内容无法读取，请用页面上的上传表单重试。"})
    uploads = [item for item in form.getlist("files") if isinstance(item, UploadFile) and item.filename]
    replace = form.get("replace")
    replace = replace if isinstance(replace, str) and replace else None
    if not uploads:
        return _answer(request, 400, {"error": "没有选择文件。"})
    known = await asyncio.to_thread(kb().catalogue.documents)
    if replace is not None and (replace not in known or len(uploads) != 1):
        return _answer(request, 400, {"error": "替换时请为一个已有文档选择一个新文件。"})
    job = IngestJob(kind="replace" if replace else "upload", actor=viewer.identifier, files=[], replaces=replace)
    job.folder = await asyncio.to_thread(new_folder, settings, job.id)
    try:
        await stage(job, uploads, known, settings)
    finally:
        await form.close()
    if not job.files:
        remove_folder(job.folder)
    if replace is not None and job.files:
        job.old_path = known[replace].path
    for name, reason in job.refused:
        await changes.record(app.data_layer, viewer.identifier, "upload_refused", name, reason)
    queue().submit(job)
    status = 202 if job.files else 422
    return _answer(
        request,
        status,
        {
            "job": job.id,
            "position": queue().position(job),
            "accepted": [f.name for f in job.files],
            "refused": [{"name": n, "reason": r} for n, r in job.refused],
        },
    )


async def stage(job: IngestJob, uploads: list[UploadFile], known: dict, settings) -> None:
    """Each file judged on its own: a refused file costs the others nothing."""
    names: set[str] = set()
    busy = queue()
    for item in uploads:
        client_name = item.filename or ""
        name = safe_file_name(client_name)
        shown = client_name.replace("\\", "/").rsplit("/", 1)[-1][:200] or "（无名文件）"
        if name is None:
            job.refused.append((shown, reason_type(Path(shown).suffix.lower())))
            continue
        if job.replaces is not None:
            if Path(name).suffix.lower() != Path(job.replaces).suffix.lower():
                kind = FORMATS.get(Path(job.replaces).suffix.lower(), Path(job.replaces).suffix)
                job.refused.append(
                    (shown, f"替换文件须与原文档格式相同（原为 {kind}）；其他格式请作为新文档上传，再删除旧文档")
                )
                continue
            name = job.replaces  # the document keeps its name: clinicians keep seeing the same 《…》
        elif name in known:
            job.refused.append((shown, f"知识库中已有同名文档《{display_source(name)}》：要更新它，请在列表中点“替换”"))
            continue
        if name in names or busy.busy_with(name):
            job.refused.append((shown, "同名文件已在本次上传或导入队列中"))
            continue
        if item.size is not None and item.size > settings.ingest_max_file_mb * 1024 * 1024:
            job.refused.append(
                (shown, f"文件大小 {item.size / 1048576:.1f} MB，超过上限 {settings.ingest_max_file_mb:g} MB")
            )
            continue
        data = await asyncio.to_thread(_read_all, item)
        reason = await asyncio.to_thread(judge_upload, name, data, settings)
        if reason is not None:
            job.refused.append((shown, reason))
            continue
        await asyncio.to_thread(write_staged, job.folder, name, data)
        names.add(name)
        job.files.append(JobFile(name=name))


def _read_all(item: UploadFile) -> bytes:
    item.file.seek(0)
    return item.file.read()


async def delete(request: Request, viewer: Viewer) -> Response:
    form = await request.form()
    source = form.get("source")
    known = await asyncio.to_thread(kb().catalogue.documents)
    if not isinstance(source, str) or source not in known:
        return page("无法删除", notice("知识库中没有这个文档。", "warn"), viewer, "library", 404)
    if queue().busy_with(source):
        return page("请稍候", notice("这个文档正在导入或删除中，请等当前任务完成。", "warn"), viewer, "library", 409)
    job = IngestJob(kind="delete", actor=viewer.identifier, files=[JobFile(name=source)], remove=[source])
    job.old_path = known[source].path
    queue().submit(job)
    return RedirectResponse("/admin/library#queue", status_code=303)


def _answer(request: Request, status: int, payload: dict) -> Response:
    """JSON for the page's script; a plain form post (no script) goes back to the page, which shows the queue."""
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse(payload, status_code=status, headers={"Cache-Control": "no-store"})
    return RedirectResponse("/admin/library#queue", status_code=303)
