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
import mimetypes
import re
import unicodedata
from pathlib import Path
from urllib.parse import quote as url_quote

from clincite.core.naming import display_source
from clincite.core.settings import PROJECT_DIR
from clincite.core.shapes import Chunk, Citation
from clincite.kb.catalogue import Catalogue
from clincite.report.citations import normalise
from clincite.report.inert import inert_text

ORIGINAL_ROUTE = "/clincite/original"
PASSAGE_ROUTE = "/clincite/passage"
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
        lines.append(
            highlighted_markdown(chunk.text, locate_quote(chunk.text, citation.quote) if citation.verified else None)
        )
        links = [
            f"[打开原文{'（' + pages_label(pages) + '）' if pages else ''}]({original_url(chunk.source, pages)})",
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


def original_document(catalogue: Catalogue, source: str) -> tuple[Path, str, str | None] | None:
    """(path, media type, decoded text or None) of a KB document's original file; None unless the catalogue lists
    it and it still exists. Text formats come back decoded (Big5, UTF-16 … read correctly in the browser)."""
    record = catalogue.documents().get(source)
    if record is None:
        return None
    path = Path(record.path)
    if not path.is_absolute() or not path.is_file():
        return None
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        from clincite.ingest.loaders import decode_text

        return path, "text/plain", decode_text(path.read_bytes())
    media_type = {
        ".pdf": "application/pdf",
        ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ".html": "text/plain",
        ".htm": "text/plain",
    }.get(suffix, mimetypes.guess_type(path.name)[0] or "application/octet-stream")
    if suffix in (".html", ".htm"):
        from clincite.ingest.loaders.webpage import decode_html

        return path, media_type, decode_html(path.read_bytes())  # shown as its source text: never run
    return path, media_type, None


def render_passage_page(catalogue: Catalogue, chunk_id: str, quote: str = "") -> str | None:
    found = catalogue.get_chunks([chunk_id]).get(chunk_id)
    if found is None:
        return None
    chunks = catalogue.chunks_of(found.source)
    index = next((i for i, c in enumerate(chunks) if c.id == chunk_id), 0)
    around = chunks[max(0, index - 1) : index + 2]

    def block(chunk: Chunk) -> str:
        current = chunk.id == chunk_id
        text = chunk.text
        span = locate_quote(text, quote) if current and quote else None
        body = (
            (
                html.escape(text[: span[0]])
                + "<mark>"
                + html.escape(text[span[0] : span[1]])
                + "</mark>"
                + html.escape(text[span[1] :])
            )
            if span
            else html.escape(text)
        )
        where = " · ".join(filter(None, [html.escape(" › ".join(chunk.heading_path)), pages_label(chunk.pages)]))
        label = "当前片段" if current else ("上一段" if chunk.position < found.position else "下一段")
        link = "" if current else f' <a href="{passage_url(chunk.id)}">以此为中心</a>'
        return (
            f'<section class="{"current" if current else "other"}"><div class="where">{label}'
            f'{" · " + where if where else ""}{link}</div><div class="text">{body}</div></section>'
        )

    title = html.escape(found.title)
    original = html.escape(original_url(found.source, found.pages))
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>{title} · 原文片段</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: -apple-system, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", sans-serif;
       margin: 1.5rem auto; max-width: 860px; padding: 0 1rem; color: #1f2937; background: #f8fafc; line-height: 1.8; }}
h1 {{ font-size: 1.25rem; }} a {{ color: #0f766e; }}
section {{ background: white; border-radius: 10px; padding: .8rem 1.1rem; margin: .8rem 0;
          box-shadow: 0 1px 3px rgba(0,0,0,.08); }}
section.other {{ color: #64748b; }} section.current {{ border-left: 4px solid #0f766e; }}
.where {{ font-size: .85rem; color: #64748b; margin-bottom: .3rem; }}
.text {{ white-space: pre-wrap; }} mark {{ background: #fef08a; padding: 0 1px; }}
</style></head><body>
<h1>《{title}》</h1>
<p>文件：{html.escape(found.source)} · <a href="{original}">打开原文</a></p>
{"".join(block(c) for c in around)}
</body></html>"""
