"""Document text shown in the browser as text: no image fetched, no link made, 【n】 still a working citation.

The browser renders Markdown (with GFM autolinks). A passage is data from a file anyone could have put in the
library, so wherever it appears it must not become markup:

- `inert_text(passage)`: every ASCII punctuation mark is backslash-escaped (CommonMark shows an escaped mark as
  itself), and leading indentation is dropped (an indented line would become a code block, where escapes show). For
  text that is all document: passages, quotes, titles, snippets, sub-answers in the steps and the side panel.
- `inert_report(markdown)`: the report keeps its own headings, bold and lists, but nothing in it can make an image, a
  link, an autolink, HTML or a strikethrough: `[ ] ! < ~ \\` and backticks are escaped everywhere (a range,
  "1.00~-2.00D … 3~5d", would otherwise strike out the text between its two tildes), URL and e-mail shapes are broken
  by an invisible word joiner (in `://`, after `www`, before `@`), and quoted text (“…”, 《…》) — verbatim from the
  documents — is inert in full.

Pages the app renders itself (the admin pages, the original view of a Markdown or text document) use `html_text`
for text and `markdown_html` for Markdown shown as its structure (CommonMark without HTML, links or images).

Chainlit turns 【n】 into `[【n】](…)` in the browser, after this escaping; an escaped `\\!` before it stays a plain
"!", so the citation keeps working instead of becoming a broken image.
"""

from __future__ import annotations

import functools
import html
import re
import string

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_INDENT = re.compile(r"^[ \t]+", re.MULTILINE)
_REPORT_MARKUP = re.compile(r"([\\\[\]!<`~])")  # ~: a range, "1.00~-2.00D … 3~5d", is no strikethrough
WORD_JOINER = "\u2060"
_URL_SCHEME = re.compile(r"(?<=[A-Za-z0-9]):(?=//)")
_WWW = re.compile(r"(?i)(?<![A-Za-z0-9])(www)\.")
_QUOTED = re.compile(r"“[^”\n]*”?|《[^》\n]*》?")


def _unlinkable(text: str) -> str:
    # GFM autolinks are found in the rendered *text* (after escapes are resolved), so escaping cannot stop them: an
    # invisible WORD JOINER inside `://`, after `www` and before `@` breaks the URL and e-mail patterns instead.
    text = _URL_SCHEME.sub(":" + WORD_JOINER, text)
    text = _WWW.sub(r"\1" + WORD_JOINER + ".", text)
    return text.replace("@", WORD_JOINER + "@")


def inert_text(text: str) -> str:
    """Document text as Markdown that renders exactly as the text: nothing in it is markup."""
    return _PUNCTUATION.sub(r"\\\1", _unlinkable(_INDENT.sub("", text)))


def _inert_prose(text: str) -> str:
    return _REPORT_MARKUP.sub(r"\\\1", _unlinkable(text))


def inert_report(markdown: str) -> str:
    """A report (model output that quotes documents) with its own formatting, and no way to fetch or link."""
    parts, last = [], 0
    for match in _QUOTED.finditer(markdown):
        parts.append(_inert_prose(markdown[last : match.start()]))
        parts.append(inert_text(match.group()))
        last = match.end()
    parts.append(_inert_prose(markdown[last:]))
    return "".join(parts)


# --- HTML pages rendered on the server (the admin pages, the original view) ---------------------------------------
def html_text(text: str) -> str:
    """Document or model text inside HTML of our own: every character shown as itself (quotes too, for attributes)."""
    return html.escape(text, quote=True)


@functools.cache
def _markdown_renderer():
    from markdown_it import MarkdownIt

    # CommonMark without raw HTML; tables on; links, autolinks and images off: a document's (or a model's) Markdown
    # keeps its headings, lists, emphasis and tables, and nothing in it can fetch, link or run. A line break inside a
    # paragraph stays one, as in the chat (an evidence item's 说明 / 来源 / 原文 lines).
    return (
        MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True})
        .enable("table")
        .disable(["link", "image", "autolink", "html_inline", "html_block"])
    )


def markdown_html(markdown: str, mark_lines: tuple[int, int] | None = None, mark_id: str = "passage") -> str:
    """Markdown as HTML text structure: headings, paragraphs, lists, emphasis, tables; never links, images or HTML.

    `mark_lines` (first, last line, 0-based, inclusive): the top-level blocks overlapping those lines get the class
    `mark` and the first of them the id `mark_id` (a page scrolls to `#passage` by itself).
    """
    renderer = _markdown_renderer()
    tokens = renderer.parse(markdown)
    if mark_lines is not None:
        first, last = mark_lines
        marked = False
        for token in tokens:
            if token.level != 0 or token.nesting == -1 or not token.map:
                continue
            start, end = token.map  # [start, end) line range of the block
            if start <= last and end > first:
                token.attrJoin("class", "mark")
                if not marked:
                    token.attrSet("id", mark_id)
                    marked = True
    return renderer.renderer.render(tokens, renderer.options, {})
