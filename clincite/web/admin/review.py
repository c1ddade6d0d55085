"""The review desk: clinicians' 👎 and 👍 with their comments, read in place, marked handled; any thread read-only;
the questions the library could not answer, grouped and exportable.

    GET  /admin/review[?kind=down|up|all&state=open|handled|all]   ratings with question, answer and sources
    POST /admin/review/handled                                      feedback_id, handled (1|0), back
    GET  /admin/review/thread/{thread_id}                           a whole thread, read-only, for any reviewer
    GET  /admin/review/gaps                                         no-evidence / partial questions, grouped
    GET  /admin/review/gaps.csv                                     the same as CSV (UTF-8 with BOM, for Excel)

Answers and passages are shown from what the chat stored (the report's Markdown and its 【n】 passages, both already
inert) as text structure through `markdown_html`; nothing from a thread is written into a page unescaped.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from clincite.report.inert import html_text, markdown_html
from clincite.web import state
from clincite.web.admin import changes
from clincite.web.admin.guard import Viewer
from clincite.web.admin.layout import SECURITY_HEADERS, csrf_field, notice, page, when
from clincite.web.datalayer import ClinCiteDataLayer
from clincite.web.render import ANSWER_AUTHOR, NOTICE_AUTHOR

LIST_LIMIT = 100
KINDS = {"down": ("差评", 0), "up": ("好评", 1), "all": ("全部评价", None)}
THUMBS = {0: '<span class="thumb down">差评</span>', 1: '<span class="thumb up">好评</span>'}
STATES = {"open": "未处理", "handled": "已处理", "all": "全部"}
COVERAGE = {"answered": "证据完整", "partial": "部分回答", "no_evidence": "无证据"}
CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def layer() -> ClinCiteDataLayer:
    return state.current().data_layer


def _marks(prefix: str, values: list[str]) -> tuple[str, dict[str, str]]:
    names = {f"{prefix}{i}": value for i, value in enumerate(values)}
    return ", ".join(f":{name}" for name in names) or "NULL", names


# --- reading the database -----------------------------------------------------------------------------------------


async def ratings(db: ClinCiteDataLayer, kind: str, handled: str, limit: int = LIST_LIMIT) -> list[dict]:
    """The latest rating of each answer, newest first, with the question and the review state."""
    await db.flush_steps()
    value = KINDS[kind][1]
    where = ["1=1"]
    if value is not None:
        where.append("f.value = :value")
    if handled == "open":
        where.append('r."feedbackId" IS NULL')
    elif handled == "handled":
        where.append('r."feedbackId" IS NOT NULL')
    return await db.query(
        'SELECT f.id, f."forId", f."threadId", f.value, f.comment, f."createdAt", a.question, a.coverage, '
        'a."userIdentifier" AS asker, r."handledBy", r."handledAt" FROM feedbacks f '
        'JOIN answer_records a ON a."stepId" = f."forId" AND a."threadId" = f."threadId" '
        'LEFT JOIN feedback_reviews r ON r."feedbackId" = f.id '
        f'WHERE {" AND ".join(where)} ORDER BY f."createdAt" DESC LIMIT :limit',
        {"value": value, "limit": limit} if value is not None else {"limit": limit},
    )


async def counts(db: ClinCiteDataLayer) -> dict[tuple[str, str], int]:
    rows = await db.query(
        'SELECT f.value, r."feedbackId" IS NOT NULL AS handled, COUNT(*) AS n FROM feedbacks f '
        'JOIN answer_records a ON a."stepId" = f."forId" AND a."threadId" = f."threadId" '
        'LEFT JOIN feedback_reviews r ON r."feedbackId" = f.id GROUP BY f.value, r."feedbackId" IS NOT NULL'
    )
    found: Counter[tuple[str, str]] = Counter()
    for row in rows:
        kind = "up" if int(row["value"]) == 1 else "down"
        handled = "handled" if row["handled"] else "open"
        for k in (kind, "all"):
            for h in (handled, "all"):
                found[(k, h)] += int(row["n"])
    return found


async def answers_of(db: ClinCiteDataLayer, run_ids: list[str]) -> dict[str, dict]:
    """The report message of each run step (the answer a rating is about)."""
    if not run_ids:
        return {}
    marks, names = _marks("r", run_ids)
    rows = await db.query(
        f'SELECT id, "parentId", output, "createdAt" FROM steps WHERE "parentId" IN ({marks}) '
        "AND type = 'assistant_message' AND name = :author ORDER BY \"createdAt\"",
        {**names, "author": ANSWER_AUTHOR},
    )
    return {row["parentId"]: row for row in rows}  # the last report of a run wins


async def sources_of(db: ClinCiteDataLayer, message_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
    """The 【n】 passages stored with each report message: (name, Markdown), in citation order."""
    if not message_ids:
        return {}
    marks, names = _marks("m", message_ids)
    rows = await db.query(
        f'SELECT "forId", name, "objectKey" FROM elements WHERE "forId" IN ({marks}) AND "objectKey" IS NOT NULL',
        names,
    )
    storage = db.storage_provider
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows:
        data = await stored_bytes(storage, row["objectKey"])
        if data is not None:
            found[row["forId"]].append((row["name"], data.decode("utf-8", errors="replace")))
    for items in found.values():
        items.sort(key=lambda item: int(re.sub(r"\D", "", item[0]) or 0))
    return found


async def stored_bytes(storage, object_key: str) -> bytes | None:
    """An element's stored file: from the shared database (several workers), or the files folder (one machine),
    never outside it."""
    if hasattr(storage, "read"):
        return await storage.read(object_key)

    def read() -> bytes | None:
        root = Path(storage.root).resolve()
        path = (root / object_key).resolve()
        return path.read_bytes() if path.is_relative_to(root) and path.is_file() else None

    return await asyncio.to_thread(read)


# --- the list -----------------------------------------------------------------------------------------------------


async def review_page(request: Request, viewer: Viewer) -> Response:
    kind = request.query_params.get("kind", "down")
    handled = request.query_params.get("state", "open")
    kind = kind if kind in KINDS else "down"
    handled = handled if handled in STATES else "open"
    rows = await ratings(layer(), kind, handled)
    answers = await answers_of(layer(), [r["forId"] for r in rows])
    sources = await sources_of(layer(), [a["id"] for a in answers.values()])
    tally = await counts(layer())
    back = f"/admin/review?{urlencode({'kind': kind, 'state': handled})}"
    tabs = (
        "".join(
            f'<a class="tab{" active" if k == kind else ""}" href="/admin/review?'
            f'{urlencode({"kind": k, "state": handled})}">{label}（{tally[(k, handled)]}）</a>'
            for k, (label, _) in KINDS.items()
        )
        + '<span class="sep"></span>'
        + "".join(
            f'<a class="tab{" active" if h == handled else ""}" href="/admin/review?'
            f'{urlencode({"kind": kind, "state": h})}">{label}（{tally[(kind, h)]}）</a>'
            for h, label in STATES.items()
        )
    )
    items = "".join(rating_html(r, answers.get(r["forId"]), sources, viewer, back) for r in rows)
    body = (
        f'<nav class="tabs">{tabs}</nav>'
        '<p class="hint">临床医生对回答的评价（含意见）、所问问题、回答与来源原文。处理完一条（如已补充指南、'
        "已回复提问人）后标记为已处理；“查看整段对话”以只读方式打开提问人的整个对话。</p>"
        + (items or '<p class="empty">没有符合条件的评价。</p>')
    )
    return page("审阅台", body, viewer, active="review")


def rating_html(row: dict, answer: dict | None, sources: dict, viewer: Viewer, back: str) -> str:
    thumbs = THUMBS[int(row["value"])]
    passages = sources.get(answer["id"], []) if answer else []
    state_html = (
        f'<span class="badge done">已处理 · {html_text(row["handledBy"])} · {when(row["handledAt"])}</span>'
        if row.get("handledBy")
        else '<span class="badge open">未处理</span>'
    )
    return (
        f'<article class="rating" id="rating-{html_text(row["id"])}">'
        f'<div class="meta">{thumbs} {html_text(row.get("asker") or "—")} · '
        f"{when(row['createdAt'])} · {COVERAGE.get(row.get('coverage') or '', '—')} {state_html}</div>"
        f'<div class="question"><b>问题：</b>{html_text(row.get("question") or "")}</div>'
        f'<div class="comment"><b>意见：</b>{html_text(row.get("comment") or "（未填写）")}</div>'
        f"{answer_html(answer, passages)}"
        f'<div class="row-actions"><a href="/admin/review/thread/{html_text(row["threadId"])}'
        f'#answer-{html_text(answer["id"] if answer else "")}">查看整段对话</a>'
        f"{handled_form(row, viewer, back)}</div></article>"
    )


def answer_html(answer: dict | None, passages: list[tuple[str, str]]) -> str:
    if answer is None:
        return '<p class="empty">（回答未保存）</p>'
    sources = "".join(
        f'<div class="source"><div class="source-name">{html_text(name)}</div>{markdown_html(text)}</div>'
        for name, text in passages
    )
    shown = f'<details class="sources"><summary>来源原文（{len(passages)}）</summary>{sources}</details>'
    return (
        f'<details class="answer" open><summary>回答</summary><div class="md">{markdown_html(answer["output"] or "")}'
        f"</div></details>" + (shown if sources else "")
    )


def handled_form(row: dict, viewer: Viewer, back: str) -> str:
    handled = bool(row.get("handledBy"))
    return (
        f'<form class="inline" method="post" action="/admin/review/handled">{csrf_field(viewer)}'
        f'<input type="hidden" name="feedback_id" value="{html_text(row["id"])}">'
        f'<input type="hidden" name="handled" value="{"0" if handled else "1"}">'
        f'<input type="hidden" name="back" value="{html_text(back)}">'
        f'<button type="submit" class="{"secondary" if handled else ""}">'
        f"{'改为未处理' if handled else '标记为已处理'}</button></form>"
    )


async def mark_handled(db: ClinCiteDataLayer, feedback_id: str, by: str | None) -> str | None:
    """Mark a rating handled by `by`, or not handled (None); returns its question, None for no such rating."""
    rows = await db.query(
        'SELECT f.id, a.question FROM feedbacks f JOIN answer_records a ON a."stepId" = f."forId" WHERE f.id = :id',
        {"id": feedback_id},
    )
    if not rows:
        return None
    if by is not None:
        await db.execute(
            'INSERT INTO feedback_reviews ("feedbackId", "handledBy", "handledAt") VALUES (:id, :by, :at) '
            'ON CONFLICT ("feedbackId") DO UPDATE SET "handledBy" = :by, "handledAt" = :at',
            {"id": feedback_id, "by": by, "at": await db.get_current_timestamp()},
        )
    else:
        await db.execute('DELETE FROM feedback_reviews WHERE "feedbackId" = :id', {"id": feedback_id})
    return rows[0]["question"] or ""


async def set_handled(request: Request, viewer: Viewer) -> Response:
    form = await request.form()
    feedback_id = str(form.get("feedback_id") or "")
    handled = form.get("handled") == "1"
    back = str(form.get("back") or "/admin/review")
    if urlsplit(back).netloc or not back.startswith("/admin/"):  # only back to our own pages
        back = "/admin/review"
    question = await mark_handled(layer(), feedback_id, viewer.identifier if handled else None)
    if question is None:
        return page("评价不存在", notice("没有这条评价。", "warn"), viewer, "review", 404)
    action = "feedback_handled" if handled else "feedback_unhandled"
    await changes.record(layer(), viewer.identifier, action, question[:80])
    return RedirectResponse(back, status_code=303)


# --- a thread, read-only ------------------------------------------------------------------------------------------


async def thread_page(thread_id: str, request: Request, viewer: Viewer) -> Response:
    await layer().flush_steps()
    found = await layer().query(
        'SELECT id, name, "userIdentifier", "createdAt" FROM threads WHERE id = :id', {"id": thread_id}
    )
    if not found:
        return page("对话不存在", notice("没有这个对话（可能已被删除）。", "warn"), viewer, "review", 404)
    thread = found[0]
    steps = await layer().query(
        'SELECT id, name, type, "parentId", output, "createdAt" FROM steps WHERE "threadId" = :id '
        'ORDER BY "createdAt", id',
        {"id": thread_id},
    )
    feedback = await layer().query(
        'SELECT f.id, f."forId", f.value, f.comment, f."createdAt", r."handledBy", r."handledAt" FROM feedbacks f '
        'LEFT JOIN feedback_reviews r ON r."feedbackId" = f.id WHERE f."threadId" = :id ORDER BY f."createdAt"',
        {"id": thread_id},
    )
    ratings_by_run = {row["forId"]: row for row in feedback}
    reports = [s for s in steps if s["type"] == "assistant_message" and s["name"] == ANSWER_AUTHOR]
    sources = await sources_of(layer(), [s["id"] for s in reports])
    back = f"/admin/review/thread/{thread_id}"
    children: dict[str | None, list[dict]] = defaultdict(list)
    for step in steps:
        children[step["parentId"]].append(step)
    turns = []
    for message in (s for s in steps if s["type"] == "user_message"):
        parts = [f'<div class="bubble user"><div class="who">提问</div>{html_text(message["output"] or "")}</div>']
        for run in children.get(message["id"], []):
            parts.append(run_html(run, children, ratings_by_run.get(run["id"]), sources, viewer, back))
        turns.append(f'<section class="turn">{"".join(parts)}</section>')
    body = (
        '<p><a href="/admin/review">← 返回审阅台</a></p>'
        f'<p class="meta">提问人：{html_text(thread["userIdentifier"] or "—")} · 开始于 {when(thread["createdAt"])}'
        " · 只读：这里不能继续提问，也不会改变对话。</p>"
        + ("".join(turns) or '<p class="empty">这个对话没有内容。</p>')
    )
    return page(f"对话：{thread['name'] or '（无标题）'}", body, viewer, "review")


def run_html(run: dict, children: dict, rating: dict | None, sources: dict, viewer: Viewer, back: str) -> str:
    """What one question produced: the steps (collapsed), notices, the report, its sources and its rating."""
    out, process = [], []

    def walk(step: dict, depth: int) -> None:
        for child in children.get(step["id"], []):
            if child["type"] == "assistant_message":
                if child["name"] == ANSWER_AUTHOR:
                    out.append(
                        f'<div class="bubble answer" id="answer-{html_text(child["id"])}"><div class="who">回答</div>'
                        f'<div class="md">{markdown_html(child["output"] or "")}</div>'
                        + "".join(
                            f'<details class="source"><summary>来源 {html_text(name)}</summary>'
                            f"{markdown_html(text)}</details>"
                            for name, text in sources.get(child["id"], [])
                        )
                        + "</div>"
                    )
                else:
                    who = "系统提示" if child["name"] == NOTICE_AUTHOR else child["name"]
                    out.append(f'<div class="bubble note">{html_text(who)}：{html_text(child["output"] or "")}</div>')
            elif child["type"] not in ("user_message", "run"):
                process.append(
                    f'<div class="step" style="margin-left:{depth}rem"><b>{html_text(child["name"])}</b>'
                    f'<div class="md">{markdown_html(child["output"] or "")}</div></div>'
                )
                walk(child, depth + 1)

    walk(run, 0)
    steps = (
        f'<details class="process"><summary>检索与判断过程（{len(process)} 步）</summary>{"".join(process)}</details>'
    )
    if rating is not None:
        thumbs = THUMBS[int(rating["value"])]
        state_html = (
            f"已处理 · {html_text(rating['handledBy'])} · {when(rating['handledAt'])}"
            if rating.get("handledBy")
            else "未处理"
        )
        out.append(
            f'<div class="rating-inline" id="rating-{html_text(rating["id"])}">{thumbs} '
            f"{html_text(rating.get('comment') or '（未填写意见）')} · {when(rating['createdAt'])} · {state_html}"
            f"{handled_form(rating, viewer, back)}</div>"
        )
    return (steps if process else "") + "".join(out)


# --- what the library does not cover ------------------------------------------------------------------------------


def question_key(question: str) -> str:
    """Questions asked in slightly different writing count as one: width, case, spaces and punctuation ignored."""
    text = unicodedata.normalize("NFKC", question).lower()
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith(("P", "Z", "S", "C")))


def group_gaps(rows: list[dict]) -> list[dict]:
    groups: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: str(r["createdAt"])):
        key = question_key(row["question"] or "")
        if not key:
            continue
        group = groups.setdefault(
            key, {"question": "", "count": 0, "no_evidence": 0, "partial": 0, "missing": Counter(), "last": ""}
        )
        group["question"] = row["question"]  # the latest wording
        group["count"] += 1
        group[row["coverage"]] += 1
        group["last"] = row["createdAt"]
        try:
            group["missing"].update(json.loads(row.get("coverage_missing") or "[]"))
        except ValueError:
            pass
    # The most asked first; among equals, the most recent first.
    by_recency = sorted(groups.values(), key=lambda g: str(g["last"]), reverse=True)
    return sorted(by_recency, key=lambda g: -g["count"])


async def gap_rows(db: ClinCiteDataLayer) -> list[dict]:
    return await db.query(
        'SELECT question, coverage, coverage_missing, "createdAt", "userIdentifier" FROM answer_records '
        "WHERE coverage IN ('no_evidence', 'partial')"
    )


async def gaps_page(request: Request, viewer: Viewer) -> Response:
    groups = await asyncio.to_thread(group_gaps, await gap_rows(layer()))
    total = await layer().query("SELECT COUNT(*) AS n FROM answer_records WHERE coverage IS NOT NULL")
    answered = int(total[0]["n"]) if total else 0
    asked = sum(g["count"] for g in groups)
    rows = "".join(
        f"<tr><td data-label=问题>{html_text(g['question'])}</td><td data-label=次数>{g['count']}</td>"
        f"<td data-label=无证据>{g['no_evidence']}</td><td data-label=部分回答>{g['partial']}</td>"
        f"<td data-label=知识库未涵盖>{html_text('、'.join(m for m, _ in g['missing'].most_common(5))) or '—'}</td>"
        f"<td data-label=最近一次>{when(g['last'])}</td></tr>"
        for g in groups
    )
    share = f"{asked / answered * 100:.1f}%" if answered else "—"
    body = (
        f'<p class="hint">共 {answered} 个回答中，有 {asked} 个（{share}）没有找到证据或只部分回答，'
        f"归为 {len(groups)} 个问题（写法略有不同的同一问题算作一个）。被问得越多的，越值得补充相应的指南。</p>"
        '<p><a class="button" href="/admin/review/gaps.csv" download>导出 CSV</a></p>'
        + (
            '<table class="list gaps"><thead><tr><th>问题</th><th>次数</th><th>无证据</th><th>部分回答</th>'
            f"<th>知识库未涵盖的方面</th><th>最近一次</th></tr></thead><tbody>{rows}</tbody></table>"
            if groups
            else '<p class="empty">还没有无证据或部分回答的问题。</p>'
        )
    )
    return page("未覆盖的问题", body, viewer, active="gaps")


def _cell(value) -> str:
    """A CSV cell Excel will not run as a formula."""
    text = str(value)
    return "'" + text if text.startswith(CSV_FORMULA) else text


def gaps_csv_text(groups: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["问题", "次数", "无证据次数", "部分回答次数", "知识库未涵盖的方面", "最近一次"])
    for g in groups:
        writer.writerow(
            [
                _cell(g["question"]),
                g["count"],
                g["no_evidence"],
                g["partial"],
                _cell("、".join(m for m, _ in g["missing"].most_common())),
                when(g["last"]),
            ]
        )
    return "\ufeff" + buffer.getvalue()  # the BOM makes Excel read UTF-8


async def gaps_csv(request: Request, viewer: Viewer) -> Response:
    groups = await asyncio.to_thread(group_gaps, await gap_rows(layer()))
    return Response(
        gaps_csv_text(groups),
        media_type="text/csv; charset=utf-8",
        headers={**SECURITY_HEADERS, "Content-Disposition": "attachment; filename*=UTF-8''gaps.csv"},
    )
