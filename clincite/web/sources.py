"""The source view: what a clinician sees to check a claim — in the side panel, on the passage page, as the original.

- `source_markdown(citation, chunk)`: the side-panel content behind 【n】: 《title》 · section path · 第 N 页, whether
  the quote was found verbatim, the evidence item it supports, the passage with the quote highlighted in place, and
  two links: "打开原文" (a PDF opens at #page=N) and the neighbouring passages.
- `render_passage_page(catalogue, chunk_id, quote)`: an HTML page with the passage between its neighbours, walkable.
- `original_document(catalogue, source)`: the original file of a KB document (only files the catalogue lists).

Document text is made inert (`clincite.report.inert.inert_text`) before any markup of ours is added around it, so the
highlight survives and nothing in a document can become a link or an image.
"""

from __future__ import annotations

import html
import re
import unicodedata
from pathlib import Path
from urllib.parse import quote as url_quote

from clincite.core.naming import display_source
from clincite.core.settings import PROJECT_DIR
from clincite.core.shapes import Chunk, Citation, Segment
from clincite.kb.catalogue import Catalogue
from clincite.kb.store import KnowledgeBase
from clincite.report.citations import normalise
from clincite.report.inert import html_text, inert_text, markdown_html
from clincite.web.originals import stored_text

ORIGINAL_ROUTE = "/clincite/original"
PASSAGE_ROUTE = "/clincite/passage"
VIEW_ROUTE = "/clincite/view"
AVATAR = PROJECT_DIR / "public" / "favicon.svg"
TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text"}


def pages_label(pages: list[int] | None) -> str:
    if not pages:
        return ""
    first, last = pages
    return f"第 {first} 页" if first == last else f"第 {first}–{last} 页"


def original_url(source: str, pages: list[int] | None = None) -> str:
    url = f"{ORIGINAL_ROUTE}/{url_quote(source)}"
    return url + (f"#page={pages[0]}" if pages and source.lower().endswith(".pdf") else "")


def view_url(chunk_id: str) -> str:
    """A Markdown or text document rendered as a page, scrolled to this passage."""
    return f"{VIEW_ROUTE}/{chunk_id}#passage"


def original_link(chunk: Chunk) -> str:
    """Where "打开原文" goes: Markdown and text as a rendered page at the passage, a PDF at its page, others as the
    file."""
    if Path(chunk.source).suffix.lower() in TEXT_SUFFIXES:
        return view_url(chunk.id)
    return original_url(chunk.source, chunk.pages)


def passage_url(chunk_id: str, quote: str = "") -> str:
    return f"{PASSAGE_ROUTE}/{chunk_id}" + (f"?quote={url_quote(quote)}" if quote else "")


def locate_quote(text: str, quote: str) -> tuple[int, int] | None:
    """Where the quote stands in the passage (offsets into `text`), compared the way the citation check compares."""
    needle = normalise(quote)
    if not needle:
        return None
    folded, origin = [], []
    for index, char in enumerate(text):
        for piece in normalise(char):
            folded.append(piece)
            origin.append(index)
    found = "".join(folded).find(needle)
    if found < 0:
        return None
    return origin[found], origin[found + len(needle) - 1] + 1


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith(("P", "S", "Z")) or char.isspace()


def highlighted_markdown(text: str, span: tuple[int, int] | None) -> str:
    """The passage as inert Markdown with the quote in ***bold italic*** (styled as a highlight by custom.css).

    Emphasis markers are put around each line of the quote separately, with leading/trailing punctuation left
    outside: CommonMark does not open or close emphasis next to punctuation that touches a CJK character.
    """
    if span is None:
        return inert_text(text)
    start, end = span
    parts = [inert_text(text[:start])]
    for i, line in enumerate(text[start:end].split("\n")):
        if i:
            parts.append("\n")
        core_start, core_end = 0, len(line)
        while core_start < core_end and _is_punctuation(line[core_start]):
            core_start += 1
        while core_end > core_start and _is_punctuation(line[core_end - 1]):
            core_end -= 1
        if core_start == core_end:
            parts.append(inert_text(line))
            continue
        parts.append(
            inert_text(line[:core_start])
            + "***"
            + inert_text(line[core_start:core_end])
            + "***"
            + inert_text(line[core_end:])
        )
    parts.append(inert_text(text[end:]))
    # Blank lines keep paragraphs; single newlines (table rows) become Markdown hard breaks.
    return "".join(parts).replace("\n\n", "\u0000").replace("\n", "  \n").replace("\u0000", "\n\n")


# --- Markdown in a passage, shown as the structure a reader sees -------------------------------------------------
MARKDOWN_SUFFIXES = {".md", ".markdown"}
HEADING_MARK = "\ue010"  # private use: "this line is a heading", turned into a heading by each renderer
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_MD_QUOTE = re.compile(r"^ {0,3}>[ \t]?")
_MD_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+")
_MD_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_MD_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


def readable_text(text: str, source: str, segments: list[Segment] | None = None) -> str:
    """A passage as its reader sees it, heading lines marked HEADING_MARK for the renderer.

    The loaders say which lines are headings (`Chunk.segments`), and write no Markdown syntax into passages. Passages
    ingested before that (no segments) of a Markdown document still carry it: their heading lines lose their #s, and
    quote, list and table markup, emphasis markers and links (shown as their text) go too.
    """
    headings = [segment for segment in segments or [] if segment.heading]
    if headings:
        for segment in sorted(headings, key=lambda seg: seg.start, reverse=True):
            text = text[: segment.start] + HEADING_MARK + text[segment.start :]
        return text
    if segments or Path(source).suffix.lower() not in MARKDOWN_SUFFIXES:
        return text
    lines = []
    for line in text.split("\n"):
        if _MD_TABLE_RULE.match(line) and "-" in line:
            continue
        heading = _MD_HEADING.match(line)
        if heading:
            lines.append(HEADING_MARK + heading.group(1))
            continue
        line = _MD_BULLET.sub(lambda m: m.group(1) + "• ", _MD_QUOTE.sub("", line))
        if line.strip().startswith("|") and line.strip().endswith("|") and len(line.strip()) > 1:
            line = " | ".join(cell.strip() for cell in line.strip()[1:-1].split("|"))
        lines.append(_MD_EMPHASIS.sub(r"\2", _MD_LINK.sub(r"\1", _MD_IMAGE.sub(r"\1", line))))
    return "\n".join(lines)


def readable_markdown(text: str, span: tuple[int, int] | None) -> str:
    """`readable_text` with the quote highlighted, as inert Markdown: heading lines become small headings."""
    shown = highlighted_markdown(text, span)
    return re.sub(rf"(^|\n){HEADING_MARK}", r"\1#### ", shown)


def readable_html(text: str, span: tuple[int, int] | None) -> str:
    """`readable_text` with the quote in <mark>, as HTML lines (for a `white-space: pre-wrap` block)."""
    out, offset = [], 0
    for line in text.split("\n"):
        start, end = offset, offset + len(line)
        offset = end + 1
        heading = line.startswith(HEADING_MARK)
        if span and span[0] < end and span[1] > start:
            a, b = max(span[0], start) - start, min(span[1], end) - start
            body = html.escape(line[:a]) + "<mark>" + html.escape(line[a:b]) + "</mark>" + html.escape(line[b:])
        else:
            body = html.escape(line)
        body = body.replace(HEADING_MARK, "")
        out.append(f'<strong class="heading">{body}</strong>' if heading else body)
    return "\n".join(out)


_ITEM = re.compile(r"\*\*\s*【(\d+)】")
_SOURCE_LINE = re.compile(r"(来源\s*[：:]\s*《[^》\n]+》)")


def with_pages(report: str, citations: list[Citation]) -> str:
    """ "来源：《指南》" of an evidence item becomes "来源：《指南》（第 3 页）" when its quote was found on a page."""
    pages = {c.number: c.pages for c in citations if c.verified and c.pages}
    if not pages:
        return report
    items = list(_ITEM.finditer(report))
    parts, last = [], 0
    for index, match in enumerate(items):
        end = items[index + 1].start() if index + 1 < len(items) else len(report)
        number = int(match.group(1))
        if number in pages:
            parts.append(report[last : match.start()])
            label = pages_label(pages[number])
            parts.append(
                _SOURCE_LINE.sub(
                    lambda m, label=label: f"{m.group(1)}（{label}）", report[match.start() : end], count=1
                )
            )
            last = end
    parts.append(report[last:])
    return "".join(parts)


def source_markdown(citation: Citation, chunk: Chunk | None) -> str:
    """The side-panel content behind one 【n】."""
    title = chunk.title if chunk else display_source(citation.source)
    where = [f"《{inert_text(title)}》"]
    heading_path = chunk.heading_path if chunk else citation.heading_path
    if heading_path:
        where.append(inert_text(" › ".join(heading_path)))
    pages = chunk.pages if chunk else citation.pages
    if pages:
        where.append(pages_label(pages))
    lines = ["#### " + " · ".join(where)]
    if chunk and display_source(chunk.source, chunk.title) != chunk.source:
        lines.append(f"文件：{inert_text(chunk.source)}")
    status = (
        "✅ 原文逐字核对：引文与下方高亮的原文一致（只说明引文出处属实，是否切题请对照原文判断）"
        if citation.verified and chunk
        else "⚠️ 未能在来源中逐字找到这段引文，请谨慎对待，并以原始文件为准。"
    )
    lines.append(status)
    if citation.title:
        lines.append(f"支持的论据：【{citation.number}】{inert_text(citation.title)}")
    if chunk:
        lines.append("---")
        text = readable_text(chunk.text, chunk.source, chunk.segments)
        lines.append(readable_markdown(text, locate_quote(text, citation.quote) if citation.verified else None))
        links = [
            f"[打开原文{'（' + pages_label(pages) + '）' if pages else ''}]({original_link(chunk)})",
            f"[查看前后段落]({passage_url(chunk.id, citation.quote)})",
        ]
        lines.append("---")
        lines.append(" · ".join(links))
    else:
        lines.append(f"引文：“{inert_text(citation.quote)}”")
    return "\n\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Routes' helpers: the routes hand in the KB catalogue of the app
# ---------------------------------------------------------------------------------------------------------------


# The pages below share their look; light and dark, and a highlight that stays readable in both.
PAGE_STYLE = """
:root { --text: #1f2937; --muted: #64748b; --bg: #f8fafc; --panel: #ffffff; --accent: #0f766e;
        --mark: #fef08a; --mark-text: #1f2937; --passage: #fefce8; }
@media (prefers-color-scheme: dark) {
  :root { --text: #e5e7eb; --muted: #94a3b8; --bg: #0f172a; --panel: #111827; --accent: #2dd4bf;
          --mark: #854d0e; --mark-text: #fef9c3; --passage: #292524; }
}
body { font-family: -apple-system, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC",
       sans-serif; margin: 1.5rem auto; max-width: 860px; padding: 0 1rem; color: var(--text); background: var(--bg);
       line-height: 1.8; }
h1 { font-size: 1.25rem; } a { color: var(--accent); }
mark { background: var(--mark); color: var(--mark-text); padding: 0 1px; border-radius: 2px; }
"""


def render_passage_page(catalogue: Catalogue, chunk_id: str, quote: str = "") -> str | None:
    found = catalogue.get_chunks([chunk_id]).get(chunk_id)
    if found is None:
        return None
    chunks = catalogue.chunks_of(found.source)
    index = next((i for i, c in enumerate(chunks) if c.id == chunk_id), 0)
    around = chunks[max(0, index - 1) : index + 2]

    def block(chunk: Chunk) -> str:
        current = chunk.id == chunk_id
        text = readable_text(chunk.text, chunk.source, chunk.segments)  # headings as headings, never ### marks
        body = readable_html(text, locate_quote(text, quote) if current and quote else None)
        where = " · ".join(filter(None, [html.escape(" › ".join(chunk.heading_path)), pages_label(chunk.pages)]))
        label = "当前片段" if current else ("上一段" if chunk.position < found.position else "下一段")
        link = "" if current else f' <a href="{passage_url(chunk.id)}">以此为中心</a>'
        return (
            f'<section class="{"current" if current else "other"}"><div class="where">{label}'
            f'{" · " + where if where else ""}{link}</div><div class="text">{body}</div></section>'
        )

    title = html.escape(found.title)
    original = html.escape(original_link(found))
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>{title} · 原文片段</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{PAGE_STYLE}
section {{ background: var(--panel); border-radius: 10px; padding: .8rem 1.1rem; margin: .8rem 0;
          box-shadow: 0 1px 3px rgba(0,0,0,.08); }}
section.other {{ color: var(--muted); }} section.current {{ border-left: 4px solid var(--accent); }}
.where {{ font-size: .85rem; color: var(--muted); margin-bottom: .3rem; }}
.text {{ white-space: pre-wrap; }} .text .heading {{ display: inline-block; margin-top: .3rem; }}
</style></head><body>
<h1>《{title}》</h1>
<p>文件：{html.escape(found.source)} · <a href="{original}">打开原文</a></p>
{"".join(block(c) for c in around)}
</body></html>"""


# ---------------------------------------------------------------------------------------------------------------
# "打开原文" of a Markdown or text document: the whole document rendered, the passage marked and scrolled to
# ---------------------------------------------------------------------------------------------------------------


def passage_lines(original: str, passage: str) -> tuple[int, int] | None:
    """The lines (0-based, inclusive) of the original that hold the passage: the passage is a slice of the loader's
    cleaned text, so it is found as the citation check finds quotes; failing the whole, by its head and tail."""
    span = locate_quote(original, passage)
    if span is None:
        compact = "".join(passage.split())
        head = locate_quote(original, compact[:40])
        tail = locate_quote(original, compact[-40:])
        if head is None:
            return None
        span = (head[0], tail[1] if tail and tail[1] > head[0] else head[1])
    return original.count("\n", 0, span[0]), original.count("\n", 0, max(span[0], span[1] - 1))


def _without_front_matter(text: str) -> str:
    """A leading YAML front matter block is metadata, not text: blanked (line numbers stay as they were)."""
    if not text.startswith("---\n"):
        return text
    end = text.find("\n---", 4)
    if end < 0:
        return text
    return "\n" * text.count("\n", 0, end + 4) + text[end + 4 :]


def _text_paragraphs(text: str, marked: tuple[int, int] | None) -> str:
    """Plain text as paragraphs (blank lines), line breaks kept; the paragraphs holding the passage marked."""
    out, block, first = [], [], 0
    lines = text.split("\n")
    for number, line in enumerate([*lines, ""]):
        if line.strip():
            if not block:
                first = number
            block.append(line)
            continue
        if block:
            last = first + len(block) - 1
            hit = marked is not None and first <= marked[1] and last >= marked[0]
            attributes = ""
            if hit:
                attributes = ' class="mark"' + ("" if any('id="passage"' in p for p in out) else ' id="passage"')
            out.append(f"<p{attributes}>" + "<br>".join(html_text(row) for row in block) + "</p>")
            block = []
    return "\n".join(out)


def render_document_view(kb: KnowledgeBase, chunk_id: str) -> str | None:
    """A Markdown or text document as a page (Markdown as its structure, never links, images or HTML), with the
    passage marked and the page scrolled to it (#passage); None when it cannot be shown this way. The text is the
    original as ingested (the KB's original store), never a file read from the document folder now."""
    chunk = kb.catalogue.get_chunks([chunk_id]).get(chunk_id)
    if chunk is None or Path(chunk.source).suffix.lower() not in TEXT_SUFFIXES:
        return None
    text = stored_text(kb, chunk.source)
    if text is None:
        return None
    original = _without_front_matter(text.replace("\r\n", "\n").replace("\r", "\n"))
    marked = passage_lines(original, chunk.text)
    if Path(chunk.source).suffix.lower() in MARKDOWN_SUFFIXES:
        body = markdown_html(original, mark_lines=marked)
    else:
        body = _text_paragraphs(original, marked)
    title = html.escape(chunk.title)
    where = " · ".join(filter(None, [html.escape(" › ".join(chunk.heading_path)), pages_label(chunk.pages)]))
    note = f"高亮处为所引片段（{where}）" if where else "高亮处为所引片段"
    if marked is None:
        note = "未能在原文中定位所引片段（文件可能已更新），以下为全文"
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>{title} · 原文</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{PAGE_STYLE}
.meta {{ color: var(--muted); font-size: .9rem; }}
article {{ background: var(--panel); border-radius: 10px; padding: .6rem 1.3rem;
          box-shadow: 0 1px 3px rgba(0,0,0,.08); }}
article h1 {{ font-size: 1.3rem; }} article h2 {{ font-size: 1.15rem; }}
article h3, article h4 {{ font-size: 1.05rem; }}
article table {{ border-collapse: collapse; }}
article th, article td {{ border: 1px solid var(--muted); padding: .2rem .5rem; }}
article blockquote {{ margin: .5rem 0; padding-left: .8rem; border-left: 3px solid var(--accent);
                     color: var(--muted); }}
.mark {{ background: var(--passage); outline: 2px solid var(--mark); outline-offset: 4px; border-radius: 2px; }}
#passage {{ scroll-margin-top: 4rem; }}
</style></head><body>
<h1>《{title}》</h1>
<p class="meta">文件：{html.escape(chunk.source)} · {note} ·
<a href="{html.escape(passage_url(chunk.id))}">查看前后段落</a></p>
<article>{body}</article>
</body></html>"""
