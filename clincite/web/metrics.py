"""Satisfaction metrics: 👍/(👍+👎) overall and per day, feedback coverage, TTFT, stage-2 rate, degradations.

`compute_metrics` reads the answer records and feedback rows; `render_page` draws them as an HTML page with inline
SVG charts (no scripts, no CDN: the page works on a clinic's closed network). The app serves both at /metrics and
/metrics.json, behind login.
"""

from __future__ import annotations

import html
import itertools
import json
from collections import Counter, defaultdict

from clincite.web.datalayer import ClinCiteDataLayer

TTFT_BUCKETS = [1, 2, 3, 5, 8, 13]  # seconds: histogram edges
RECENT_THUMBS_DOWN = 20
ANSWER_PREVIEW_CHARS = 600


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (rank - low), 3)


def ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


async def compute_metrics(layer: ClinCiteDataLayer, status: dict | None = None) -> dict:
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
    degradations: Counter[str] = Counter()
    for answer in answers:
        for component in json.loads(answer["degradations"] or "[]"):
            degradations[component.split(":")[0]] += 1
    answered_ids = {a["stepId"] for a in answers}
    return {
        "answers": len(answers),
        "rated": len(feedback),
        "rated_answers": sum(1 for r in feedback if r["forId"] in answered_ids),
        "feedback_coverage": ratio(sum(1 for r in feedback if r["forId"] in answered_ids), len(answers)),
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
        "degraded_answers": sum(1 for a in answers if json.loads(a["degradations"] or "[]")),
        "degradations": dict(degradations),
        "failed_questions": degradations.get("failed", 0),
        "unverified_citations": sum(int(a["unverified_citations"] or 0) for a in answers),
        "offline_answers": sum(1 for a in answers if a["mode"] == "offline"),
        # Answers recorded before coverage existed (coverage NULL) are left out of both shares.
        "no_evidence_rate": ratio(
            sum(1 for a in answers if a["coverage"] == "no_evidence"), sum(1 for a in answers if a["coverage"])
        ),
        "partial_rate": ratio(
            sum(1 for a in answers if a["coverage"] == "partial"), sum(1 for a in answers if a["coverage"])
        ),
        "recent_thumbs_down": [
            {**row, "createdAt": str(row["createdAt"])}
            for row in await layer.recent_negative_feedback(RECENT_THUMBS_DOWN)
        ],
        "status": status or {},
    }


def system_status() -> dict:
    """What the clinic's IT needs to see at a glance: answer mode, search mode and why semantic search is off."""
    from clincite.web import state

    app = state.current()
    searcher = app.service.searcher
    return {
        "mode": app.service.mode,
        "search": "bm25" if searcher.bm25_only else "hybrid",
        "embedding_model": app.settings.embedding_model,
        "embedding_problem": searcher.warning,
        "documents": searcher.kb.catalogue.document_count(),
        "kb_version": searcher.kb.catalogue.version,
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
# The page
# ---------------------------------------------------------------------------------------------------------------


def _bars(items: list[tuple[str, float, str]], max_value: float, color: str) -> str:
    """A horizontal bar chart as inline SVG: (label, value, value text) per bar."""
    if not items:
        return '<p class="empty">暂无数据</p>'
    row, width, label_w = 28, 760, 120
    height = row * len(items) + 8
    parts = [f'<svg viewBox="0 0 {width} {height}" width="100%" role="img">']
    for i, (label, value, shown) in enumerate(items):
        y = 4 + i * row
        bar = 0 if not max_value else (width - label_w - 70) * value / max_value
        parts.append(
            f'<text x="0" y="{y + 18}" font-size="13">{html.escape(label)}</text>'
            f'<rect x="{label_w}" y="{y + 4}" width="{bar:.1f}" height="18" rx="3" fill="{color}"/>'
            f'<text x="{label_w + bar + 6:.1f}" y="{y + 18}" font-size="13">{html.escape(shown)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _sec(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} 秒"


def render_page(m: dict) -> str:
    days = [
        (
            d["day"],
            d["satisfaction"] or 0.0,
            f"{_pct(d['satisfaction'])}（{d['up']}👍 {d['down']}👎 / {d['answers']} 个回答）",
        )
        for d in m["per_day"]
    ]
    ttft = [(b["label"], b["count"], str(b["count"])) for b in m["ttft_histogram"]]
    degraded = [(k, v, str(v)) for k, v in sorted(m["degradations"].items())]
    stages = [(STAGES[k], v, f"{v:.2f} 秒") for k, v in m["stage_seconds_p50"].items() if v is not None]
    cards = [
        ("满意度", _pct(m["satisfaction"]), f"{m['thumbs_up']} 👍 / {m['thumbs_down']} 👎"),
        ("获得反馈的回答", f"{m['rated_answers']} / {m['answers']}", f"覆盖率 {_pct(m['feedback_coverage'])}"),
        (
            "首字时间 p50 / p95",
            f"{_sec(m['ttft_p50'])} / {_sec(m['ttft_p95'])}",
            f"不含缓存回答 {m['cached_answers']} 个",
        ),
        ("第二阶段检索比例", _pct(m["stage2_rate"]), "目标 < 20%"),
        ("降级的回答", str(m["degraded_answers"]), f"未核验引文 {m['unverified_citations']} 条"),
        ("知识库无证据的回答", _pct(m["no_evidence_rate"]), f"部分回答（有证据缺口） {_pct(m['partial_rate'])}"),
    ]
    card_html = "".join(
        f'<div class="card"><div class="label">{html.escape(a)}</div><div class="value">'
        f'{html.escape(b)}</div><div class="note">{html.escape(c)}</div></div>'
        for a, b, c in cards
    )
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>ClinCite 满意度指标</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/public/favicon.svg">
<style>
body {{ font-family: -apple-system, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif; margin: 2rem;
       color: #1f2937; background: #f8fafc; }}
h1 {{ font-size: 1.5rem; }} h2 {{ font-size: 1.1rem; margin-top: 2rem; }}
.cards {{ display: flex; flex-wrap: wrap; gap: 1rem; }}
.card {{ background: white; border-radius: 10px; padding: 1rem 1.25rem; min-width: 180px;
        box-shadow: 0 1px 3px rgba(0,0,0,.08); }}
.label {{ color: #64748b; font-size: .85rem; }} .value {{ font-size: 1.6rem; font-weight: 600; margin: .25rem 0; }}
.note {{ color: #64748b; font-size: .8rem; }} .chart {{ background: white; border-radius: 10px; padding: 1rem;
        max-width: 900px; box-shadow: 0 1px 3px rgba(0,0,0,.08); }}
.empty {{ color: #94a3b8; }} a {{ color: #0f766e; }}
table.status th {{ text-align: left; color: #64748b; font-weight: normal; padding-right: 1.5rem; }}
.problem {{ color: #b45309; font-size: .85rem; }} .down {{ border-bottom: 1px solid #e2e8f0; padding: .6rem 0; }}
.down .meta {{ color: #64748b; font-size: .8rem; }} pre {{ white-space: pre-wrap; font-size: .8rem; }}
</style></head><body>
<h1>ClinCite 满意度指标</h1>
<p><a href="/">返回问答</a> · <a href="/metrics.json">JSON</a></p>
<div class="cards">{card_html}</div>
{_status_html(m.get("status") or {})}
<h2>最近的 👎 反馈</h2>{_thumbs_down_html(m.get("recent_thumbs_down") or [])}
<h2>每日满意度</h2><div class="chart">{_bars(days, 1.0, "#0f766e")}</div>
<h2>首字时间分布</h2><div class="chart">{_bars(ttft, max([c for _, c, _ in ttft] or [0]), "#2563eb")}</div>
<h2>各环节耗时（中位数）</h2><div class="chart">{_bars(stages, max([v for _, v, _ in stages] or [0]), "#7c3aed")}</div>
<h2>降级次数（按环节）</h2>
<div class="chart">{_bars(degraded, max([c for _, c, _ in degraded] or [0]), "#d97706")}</div>
</body></html>"""


def _status_html(status: dict) -> str:
    if not status:
        return ""
    mode = "离线演示模式（未配置大语言模型）" if status.get("mode") == "offline" else "大语言模型"
    search = "混合检索（BM25 + 语义）" if status.get("search") == "hybrid" else "⚠️ 仅 BM25 关键词检索"
    rows = [
        ("回答方式", mode),
        ("检索方式", search),
        ("向量模型", status.get("embedding_model") or "—"),
        ("知识库文档数", str(status.get("documents", "—"))),
        ("知识库版本", str(status.get("kb_version", "—"))),
    ]
    table = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    problem = status.get("embedding_problem")
    detail = f'<p class="problem">{html.escape(problem)}</p>' if problem else ""
    return f'<h2>系统状态</h2><div class="chart"><table class="status">{table}</table>{detail}</div>'


def _thumbs_down_html(rows: list[dict]) -> str:
    if not rows:
        return '<div class="chart"><p class="empty">暂无 👎 反馈</p></div>'
    items = []
    for row in rows:
        answer = row.get("answer") or ""
        preview = answer[:ANSWER_PREVIEW_CHARS] + ("…" if len(answer) > ANSWER_PREVIEW_CHARS else "")
        thread = html.escape(row.get("threadId") or "", quote=True)
        link = f'<a href="/thread/{thread}">打开对话</a>' if thread else ""
        items.append(
            f'<div class="down"><div class="meta">{html.escape(str(row.get("createdAt") or "")[:19])} · '
            f"{html.escape(row.get('userIdentifier') or '—')} · {link}</div>"
            f"<div><b>问题：</b>{html.escape(row.get('question') or '')}</div>"
            f"<div><b>意见：</b>{html.escape(row.get('comment') or '（未填写）')}</div>"
            f"<details><summary>回答</summary><pre>{html.escape(preview)}</pre></details></div>"
        )
    return '<div class="chart">' + "".join(items) + "</div>"
