"""Satisfaction metrics for the clinic's administrators: satisfaction, feedback rate, degraded / no-evidence /
partial answers, stage-2 rate, TTFT — each a share of the answers with its meaning in plain Chinese.

`compute_metrics` reads the answer records and feedback rows (the arithmetic in a worker thread); `system_status`
reads the catalogue (call it in a thread too); `render_body` draws the figures with inline SVG charts (no scripts,
no CDN: the page works on a clinic's closed network). The admin area serves them at /metrics and /metrics.json
(clincite/web/admin/routes.py), to admins only.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter, defaultdict

from clincite.core.stats import percentile
from clincite.report.inert import html_text
from clincite.retrieval.rerank import OFF_STATUS
from clincite.web.datalayer import ClinCiteDataLayer

TTFT_BUCKETS = [1, 2, 3, 5, 8, 13]  # seconds: histogram edges
RECENT_THUMBS_DOWN = 20


def ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


async def compute_metrics(layer: ClinCiteDataLayer, status: dict | None = None) -> dict:
    """The figures of /metrics: two database reads, then the arithmetic in a worker thread (the rows of every answer
    ever given would otherwise be walked on the event loop, which every chat shares)."""
    answers = await layer.query(
        'SELECT "stepId", "createdAt", ttft, total, cached, stage2, degradations, unverified_citations, mode, '
        "timings, coverage FROM answer_records"
    )
    # Only ratings of a real answer, in the thread that answer belongs to: rows aimed at made-up ids (written by
    # Chainlit's unchecked /feedback before the owner check) must not move the satisfaction figures.
    rows = await layer.query(
        'SELECT f.id, f."forId", f.value, f."createdAt" FROM feedbacks f JOIN answer_records a '
        'ON a."stepId" = f."forId" AND a."threadId" = f."threadId" ORDER BY f."createdAt"'
    )
    figures = await asyncio.to_thread(summarise, answers, rows)
    recent = await layer.recent_negative_feedback(RECENT_THUMBS_DOWN)
    figures["recent_thumbs_down"] = [{**row, "createdAt": str(row["createdAt"])} for row in recent]
    figures["status"] = status or {}
    return figures


def summarise(answers: list[dict], rows: list[dict]) -> dict:
    latest: dict[str, dict] = {}
    for row in rows:  # a changed rating replaces the earlier one for the same answer
        latest[row["forId"]] = row
    feedback = list(latest.values())
    answer_day = {a["stepId"]: str(a["createdAt"])[:10] for a in answers}

    per_day: dict[str, dict] = defaultdict(lambda: {"answers": 0, "rated": 0, "up": 0, "down": 0})
    for answer in answers:
        per_day[str(answer["createdAt"])[:10]]["answers"] += 1
    for row in feedback:
        day = per_day[answer_day.get(row["forId"]) or str(row["createdAt"])[:10]]
        day["rated"] += 1
        day["up" if int(row["value"]) == 1 else "down"] += 1

    up = sum(1 for r in feedback if int(r["value"]) == 1)
    down = len(feedback) - up
    fresh = [a for a in answers if not a["cached"]]
    ttfts = [float(a["ttft"]) for a in fresh if a["ttft"] is not None]
    degradations: Counter[str] = Counter()  # answers with at least one degradation of each kind
    for answer in answers:
        degradations.update({component.split(":")[0] for component in json.loads(answer["degradations"] or "[]")})
    answered_ids = {a["stepId"] for a in answers}
    degraded = sum(1 for a in answers if json.loads(a["degradations"] or "[]"))
    with_coverage = sum(1 for a in answers if a["coverage"])
    rated_answers = sum(1 for r in feedback if r["forId"] in answered_ids)
    return {
        "answers": len(answers),
        "rated": len(feedback),
        "rated_answers": rated_answers,
        "feedback_coverage": ratio(rated_answers, len(answers)),
        "thumbs_up": up,
        "thumbs_down": down,
        "satisfaction": ratio(up, up + down),
        "per_day": [
            {"day": day, **counts, "satisfaction": ratio(counts["up"], counts["up"] + counts["down"])}
            for day, counts in sorted(per_day.items())
        ],
        "ttft_p50": percentile(ttfts, 50),
        "ttft_p95": percentile(ttfts, 95),
        "ttft_histogram": _histogram(ttfts),
        "stage_seconds_p50": _stage_p50(fresh),
        "cached_answers": len(answers) - len(fresh),
        "stage2_rate": ratio(sum(1 for a in fresh if a["stage2"]), len(fresh)),
        "degraded_answers": degraded,
        "degraded_rate": ratio(degraded, len(answers)),
        "degradations": dict(degradations),
        "degradation_rates": {kind: ratio(count, len(answers)) for kind, count in degradations.items()},
        "failed_questions": degradations.get("failed", 0),
        "unverified_citations": sum(int(a["unverified_citations"] or 0) for a in answers),
        "offline_answers": sum(1 for a in answers if a["mode"] == "offline"),
        # Answers recorded before coverage existed (coverage NULL) are left out of both shares.
        "no_evidence_rate": ratio(sum(1 for a in answers if a["coverage"] == "no_evidence"), with_coverage),
        "partial_rate": ratio(sum(1 for a in answers if a["coverage"] == "partial"), with_coverage),
    }


def system_status() -> dict:
    """What the clinic's IT needs to see at a glance: answer mode, search mode and why semantic search is off.

    Reads the catalogue (SQLite): call it off the event loop (`asyncio.to_thread(system_status)`)."""
    from clincite.web import state

    app = state.current()
    searcher = app.service.searcher
    return {
        "mode": app.service.mode,
        "search": "bm25" if searcher.bm25_only else "hybrid",
        "embedding_model": app.settings.embedding_model,
        "embedding_problem": searcher.warning,
        **searcher.reranker_status,
        "documents": searcher.kb.catalogue.document_count(),
        "kb_version": searcher.kb.catalogue.version,
        "serving_version": searcher.serving_version,
    }


STAGES = {
    "decomposition": "问题分解",
    "search": "检索",
    "judgement": "相关性判断",
    "sufficiency": "充分性判断",
    "stage2": "第二阶段检索",
    "answer": "生成回答（全文）",
    "ttft": "首字",
}


def _stage_p50(answers: list[dict]) -> dict[str, float | None]:
    """Where time goes: the median seconds of each stage over fresh (not cached) answers."""
    timings = [json.loads(a["timings"] or "{}") for a in answers]
    return {stage: percentile([t[stage] for t in timings if stage in t], 50) for stage in STAGES}


def _histogram(values: list[float]) -> list[dict]:
    edges = [0, *TTFT_BUCKETS, float("inf")]
    return [
        {
            "label": f"{lo:g}–{hi:g} 秒" if hi != float("inf") else f"≥{lo:g} 秒",
            "count": sum(1 for v in values if lo <= v < hi),
        }
        for lo, hi in itertools.pairwise(edges)
    ]


# ---------------------------------------------------------------------------------------------------------------
# The page (its frame and the admin check are clincite/web/admin's)
# ---------------------------------------------------------------------------------------------------------------

# What each kind of degradation means, in the words of a clinic lead: what fell back, and to what.
DEGRADATION_LABELS = {
    "embeddings": "语义检索不可用（向量模型未加载），改为仅关键词检索",
    "vector_store": "向量库无法访问或超时，改为仅关键词检索",
    "bm25_index": "关键词索引不可用",
    "decomposition": "问题分解失败或超时，直接用原问题检索",
    "judge": "相关性判断失败或超时，直接采用检索到的原文",
    "sufficiency": "充分性判断失败或超时，按“证据充分”作答",
    "stage2": "来不及进行第二阶段检索，只用首轮证据作答",
    "answer": "回答生成失败或首字过慢，改为原文摘录报告",
    "failed": "问题处理出错，没有给出回答",
}


def _bars(items: list[tuple[str, float, str]], max_value: float, color: str, empty: str = "暂无数据") -> str:
    """A bar chart of HTML rows (label, a bar drawn as a stretched inline SVG, the value's text): it reflows on a
    phone, needs no script and no inline style (the admin pages' CSP allows neither)."""
    if not items:
        return f'<p class="empty">{html_text(empty)}</p>'
    rows = []
    for label, value, shown in items:
        width = 0 if not max_value else max(0.0, min(100.0, 100 * value / max_value))
        rows.append(
            f'<div class="bar-row"><div class="bar-label">{html_text(label)}</div><div class="bar-line">'
            f'<svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true"><rect width="{width:.1f}" '
            f'height="10" rx="1" fill="{color}"/></svg><span>{html_text(shown)}</span></div></div>'
        )
    return f'<div class="bars">{"".join(rows)}</div>'


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _sec(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} 秒"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}（{_pct(ratio(part, whole))}）" if whole else "—"


def render_body(m: dict) -> str:
    """The figures as shares, each with what it means; the charts; the system status; the latest thumbs-down."""
    answers = m["answers"]
    causes = sorted(m["degradations"].items(), key=lambda item: -item[1])
    main_cause = (
        "主要原因：" + "；".join(f"{DEGRADATION_LABELS.get(k, k)}（{v} 个）" for k, v in causes[:2])
        if causes
        else "没有降级"
    )
    cards = [
        (
            "满意度",
            _pct(m["satisfaction"]),
            f"被评价的回答中好评（点赞）的占比：好评 {m['thumbs_up']}、差评 {m['thumbs_down']}。",
        ),
        (
            "反馈率",
            _pct(m["feedback_coverage"]),
            f"{m['rated_answers']}/{answers} 个回答收到了好评或差评。（这是“有多少回答被评价”，"
            "不是回答中的“证据覆盖”。）",
        ),
        (
            "降级的回答",
            _pct(m["degraded_rate"]),
            f"{m['degraded_answers']}/{answers} 个回答中至少有一个环节改用了备用方案"
            f"（回答仍给出，但可能不如正常时完整）。{main_cause}。",
        ),
        (
            "无证据的回答",
            _pct(m["no_evidence_rate"]),
            "知识库中找不到相关原文、因此不作结论的回答占比。这些问题列在“未覆盖的问题”中。",
        ),
        (
            "部分回答",
            _pct(m["partial_rate"]),
            "证据只覆盖了所问的部分方面（回答里写明“证据覆盖：部分回答”）的回答占比。",
        ),
        (
            "第二阶段检索",
            _pct(m["stage2_rate"]),
            "首轮证据不足、又追加检索的回答占比（不含缓存回答）；目标低于 20%。",
        ),
        (
            "首字时间 中位数 / 95%",
            f"{_sec(m['ttft_p50'])} / {_sec(m['ttft_p95'])}",
            f"从提问到回答出现第一个字的时间；不含直接复用的缓存回答（{m['cached_answers']} 个）。",
        ),
        (
            "未核验的引文",
            str(m["unverified_citations"]),
            "引文在所注来源中逐字找不到的条数（回答中已标出）。",
        ),
    ]
    card_html = "".join(
        f'<div class="card"><div class="label">{html_text(a)}</div><div class="value">{html_text(b)}</div>'
        f'<div class="note">{html_text(c)}</div></div>'
        for a, b, c in cards
    )
    days = [
        (
            d["day"],
            d["satisfaction"] or 0.0,
            f"{_pct(d['satisfaction'])}（好评 {d['up']}、差评 {d['down']}，共 {d['answers']} 个回答）",
        )
        for d in m["per_day"]
    ]
    ttft = [(b["label"], b["count"], f"{b['count']} 个回答") for b in m["ttft_histogram"]]
    degraded = [(DEGRADATION_LABELS.get(k, k), v / answers if answers else 0, _share(v, answers)) for k, v in causes]
    stages = [(STAGES[k], v, f"{v:.2f} 秒") for k, v in m["stage_seconds_p50"].items() if v is not None]
    return f"""<p class="hint">共 {answers} 个回答。下面每个数字都是占比，并写明它的含义。</p>
<div class="cards">{card_html}</div>
{_status_html(m.get("status") or {})}
<section class="panel"><h2>降级原因（占全部回答的比例）</h2>
<p class="hint">一个回答可能同时有几种降级。</p>{_bars(degraded, 1.0, "#d97706", "没有降级的回答。")}</section>
<section class="panel"><h2>最近的差评</h2>{_thumbs_down_html(m.get("recent_thumbs_down") or [])}
<p><a href="/admin/review">到审阅台处理 →</a></p></section>
<section class="panel"><h2>每日满意度</h2>{_bars(days, 1.0, "#0f766e")}</section>
<section class="panel"><h2>首字时间分布</h2>{_bars(ttft, max([c for _, c, _ in ttft] or [0]), "#2563eb")}</section>
<section class="panel"><h2>各环节耗时（中位数）</h2>
{_bars(stages, max([v for _, v, _ in stages] or [0]), "#7c3aed")}</section>
<p class="hint"><a href="/metrics.json">以 JSON 查看这些数字</a></p>"""


def _reranker_line(status: dict) -> str:
    model = status.get("reranker_model")
    if not model:
        return OFF_STATUS
    return model + ("（⚠️ 不可用，见下）" if status.get("reranker_problem") else "")


def _status_html(status: dict) -> str:
    """The app's modes, explained once here for the administrators (the chat shows clinicians one short line)."""
    if not status:
        return ""
    if status.get("mode") == "offline":
        mode = (
            "离线演示模式：未配置大语言模型（OPENAI_API_KEY），回答由规则从知识库原文逐字摘录拼接，"
            "不做归纳。配置 API Key 后重启即为正式模式。"
        )
    else:
        mode = "大语言模型：问题分解、相关性与充分性判断、回答生成均由模型完成。"
    if status.get("search") == "hybrid":
        search = "混合检索：关键词（BM25）与语义向量同时检索。"
    else:
        search = "⚠️ 仅关键词（BM25）检索：语义检索不可用，近义说法可能检索不到。"
    rows = [
        ("回答方式", mode),
        ("检索方式", search),
        ("向量模型", status.get("embedding_model") or "—"),
        ("知识库文档数", str(status.get("documents", "—"))),
        ("知识库版本", str(status.get("kb_version", "—"))),
        ("重排模型", _reranker_line(status)),
    ]
    table = "".join(f"<tr><th>{html_text(k)}</th><td>{html_text(v)}</td></tr>" for k, v in rows)
    problem = status.get("embedding_problem")
    detail = (
        f'<p class="problem">语义检索不可用的原因：{html_text(problem)}（修复方法见 README “The embedding model”）</p>'
        if problem
        else ""
    )
    if reranker_problem := status.get("reranker_problem"):
        detail += f'<p class="problem">{html_text(reranker_problem)}</p>'
    return f'<section class="panel"><h2>系统状态</h2><table class="status">{table}</table>{detail}</section>'


def _thumbs_down_html(rows: list[dict]) -> str:
    if not rows:
        return '<p class="empty">暂无差评</p>'
    items = []
    for row in rows[:5]:
        thread = html_text(row.get("threadId") or "")
        link = f'<a href="/admin/review/thread/{thread}">查看整段对话</a>' if thread else ""
        items.append(
            f'<div class="down"><div class="meta">{html_text(str(row.get("createdAt") or "")[:16])} · '
            f"{html_text(row.get('userIdentifier') or '—')} · {link}</div>"
            f"<div><b>问题：</b>{html_text(row.get('question') or '')}</div>"
            f"<div><b>意见：</b>{html_text(row.get('comment') or '（未填写）')}</div></div>"
        )
    return "".join(items)
