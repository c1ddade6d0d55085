"""Document text shown in the browser as text: no image fetched, no link made, 【n】 still a working citation.

The browser renders Markdown (with GFM autolinks). A passage is data from a file anyone could have put in the
library, so wherever it appears it must not become markup:

- `inert_text(passage)`: every ASCII punctuation mark is backslash-escaped (CommonMark shows an escaped mark as
  itself), and leading indentation is dropped (an indented line would become a code block, where escapes show). For
  text that is all document: passages, quotes, titles, snippets, sub-answers in the steps and the side panel.
- `inert_report(markdown)`: the report keeps its own headings, bold and lists, but nothing in it can make an image, a
  link, an autolink or HTML: `[ ] ! < \\` and backticks are escaped everywhere, URL and e-mail shapes are broken
  by an invisible word joiner (in `://`, after `www`, before `@`), and quoted text (“…”, 《…》) — verbatim from the
  documents — is inert in full.

Chainlit turns 【n】 into `[【n】](…)` in the browser, after this escaping; an escaped `\\!` before it stays a plain
"!", so the citation keeps working instead of becoming a broken image.
"""

from __future__ import annotations

import re
import string

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_INDENT = re.compile(r"^[ \t]+", re.MULTILINE)
_REPORT_MARKUP = re.compile(r"([\\\[\]!<`])")
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
