"""The frame of every admin page: navigation, styles and script from /admin/static, the response headers.

Pages are plain server-rendered HTML (no framework, no CDN: the clinic's network may be closed) that read well at
390 px as on a desktop. Text from documents, models and clinicians goes in through `html_text` / `markdown_html`
(clincite/report/inert.py); nothing else is written into a page unescaped.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from importlib import resources

from fastapi.responses import HTMLResponse, Response

from clincite.report.inert import html_text
from clincite.web.admin.guard import CSRF_FIELD, Viewer, csrf_token

STATIC_ROUTE = "/clincite/static"  # public: nothing in them is secret, and the 403 page needs them too
STATIC_TYPES = {"admin.css": "text/css; charset=utf-8", "admin.js": "text/javascript; charset=utf-8"}
STATIC_FILES = tuple(STATIC_TYPES)
NAV = [
    ("library", "/admin/library", "知识库"),
    ("users", "/admin/users", "用户"),
    ("review", "/admin/review", "审阅台"),
    ("gaps", "/admin/review/gaps", "未覆盖的问题"),
    ("metrics", "/metrics", "指标"),
]
# Only our own static files; no inline script; forms and fetches go to this origin only; never framed.
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@functools.cache
def static_bytes(name: str) -> bytes:
    return resources.files("clincite.web.admin").joinpath("static", name).read_bytes()


@functools.cache
def static_version() -> str:
    """Part of the CSS and script URLs: a new release's files are fetched, not taken from the browser's cache."""
    return hashlib.sha256(b"".join(static_bytes(name) for name in STATIC_FILES)).hexdigest()[:12]


async def static_file(name: str) -> Response:
    """The admin pages' stylesheet and script (named with a content hash by the pages, so cached for a day)."""
    if name not in STATIC_TYPES:
        return Response(status_code=404)
    cache = {"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"}
    return Response(static_bytes(name), media_type=STATIC_TYPES[name], headers=cache)


def csrf_field(viewer: Viewer) -> str:
    return f'<input type="hidden" name="{CSRF_FIELD}" value="{csrf_token(viewer)}">'


def page(title: str, body: str, viewer: Viewer | None, active: str = "", status_code: int = 200) -> HTMLResponse:
    nav = "".join(
        f'<a href="{href}"{" class=active aria-current=page" if key == active else ""}>{label}</a>'
        for key, href, label in NAV
    )
    who = (
        f'<span class="who">{html_text(viewer.display_name)}（管理员）</span>'
        if viewer is not None and viewer.is_admin
        else ""
    )
    token = f'<meta name="csrf-token" content="{csrf_token(viewer)}">' if viewer is not None else ""
    header = (
        f'<header><a class="brand" href="/">ClinCite</a><nav>{nav}</nav>{who}'
        f'<a class="back" href="/">返回问答</a></header>'
        if viewer is not None and viewer.is_admin
        else '<header><a class="brand" href="/">ClinCite</a><a class="back" href="/">返回问答</a></header>'
    )
    document = f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>{html_text(title)} · ClinCite 管理</title>
<meta name="viewport" content="width=device-width, initial-scale=1">{token}
<link rel="icon" href="/public/favicon.svg">
<link rel="stylesheet" href="{STATIC_ROUTE}/admin.css?v={static_version()}">
<script src="{STATIC_ROUTE}/admin.js?v={static_version()}" defer></script>
</head><body>{header}<main><h1>{html_text(title)}</h1>
{body}
</main></body></html>"""
    return HTMLResponse(document, status_code=status_code, headers=SECURITY_HEADERS)


def notice(text: str, kind: str = "info") -> str:
    return f'<p class="notice {kind}" role="status">{html_text(text)}</p>'


def when(value) -> str:
    """A stored time (ISO text in UTC as Chainlit writes it, or seconds since the epoch) in the server's time zone."""
    if value is None or value == "":
        return "—"
    try:
        if isinstance(value, int | float):
            moment = dt.datetime.fromtimestamp(value, dt.UTC)
        else:
            moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
    except (ValueError, OverflowError, OSError):
        return html_text(str(value)[:16])
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")
