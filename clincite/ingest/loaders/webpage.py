"""HTML with trafilatura (Apache-2.0): the main content without navigation, sidebars and footers; tables as rows.

trafilatura's XML output keeps headings (`<head rend="h2">`), paragraphs, lists and tables (`<row><cell>`), which
the builder turns into sections and "列名：值" lines. The title is the page's `<title>` (without a trailing site name),
else its first heading. Pages trafilatura finds no main content in fall back to a plain parse of the body.
"""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

from clincite.ingest.loaders.base import DocumentBuilder, LoadedDocument, SkipFile, clean_line
from clincite.ingest.loaders.text import decode_text

KEPT_SHARE = 0.5  # trafilatura's text against the whole body's: below this, it lost the article, not furniture
TITLE_LINE_CHARS = 40
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-]+)""", re.I)
_TITLE_SEPARATORS = re.compile(r"\s+[-–—|_]\s+|\s*[｜|]\s*|_")


def decode_html(data: bytes) -> str:
    """The charset a page declares wins (GB2312 pages are read as GB18030, its superset); else detection."""
    match = _META_CHARSET.search(data[:4096])
    if match and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        name = match.group(1).decode("ascii").lower()
        name = {"gb2312": "gb18030", "gbk": "gb18030", "big5": "big5hkscs"}.get(name, name)
        try:
            return decode_text_strict(data, name)
        except (LookupError, UnicodeDecodeError):
            pass
    return decode_text(data)


def decode_text_strict(data: bytes, encoding: str) -> str:
    from clincite.ingest.loaders.base import clean_text

    return clean_text(data.decode(encoding))


def load_html(path: Path) -> LoadedDocument:
    import trafilatura
    from lxml import etree

    markup = without_hidden_words(decode_html(path.read_bytes()))
    page_title = _page_title(markup)
    xml = trafilatura.extract(
        markup,
        output_format="xml",
        include_tables=True,
        include_formatting=False,
        include_comments=False,
        include_links=False,
        include_images=False,
        favor_recall=True,
    )
    builder = DocumentBuilder(path.stem)
    if xml:
        root = etree.fromstring(xml.encode("utf-8"))
        main = root.find("main")
        _walk(main if main is not None else root, builder)
    document = builder.build()
    whole = _fallback(markup, path.stem)
    if not document.sections or len(document.text) < KEPT_SHARE * len(whole.text):
        # trafilatura keeps the main content of a page, but drops text that sits in bare <span>…<br/> runs (pages
        # exported from editors and CMS fragments): when it kept less than half, the plain parse of the body wins.
        document = whole
    document.title = page_title or _first_line_title(document) or document.title
    if not document.sections:
        raise SkipFile("网页中没有正文文字 (no main content)")
    return document


# Words a reader never sees: a forum's anti-copy noise (Discuz's <font class="jammer">, <span style="display:none">)
# and anything else hidden inline, which would otherwise be quoted as the page's text. Only inline elements: a
# hidden <div> is as often a tab's panel that a click shows.
_HIDDEN_INLINE = (
    "//*[contains(concat(' ', normalize-space(@class), ' '), ' jammer ')]"
    "|//*[self::span or self::font or self::i or self::em or self::b or self::small or self::ins or self::del]"
    "[contains(translate(@style, ' ', ''), 'display:none')"
    " or contains(translate(@style, ' ', ''), 'visibility:hidden')]"
)


def without_hidden_words(markup: str) -> str:
    """The page without the inline text it hides (see `_HIDDEN_INLINE`); the page as it was when it has none."""
    if "jammer" not in markup and "display" not in markup and "visibility" not in markup:
        return markup
    import lxml.html
    from lxml import etree

    try:
        root = lxml.html.document_fromstring(markup)
    except (ValueError, etree.ParserError):
        return markup
    hidden = root.xpath(_HIDDEN_INLINE)
    if not hidden:
        return markup
    for element in hidden:
        element.drop_tree()  # its tail (the text after it) stays
    return lxml.html.tostring(root, encoding="unicode")


def _walk(element, builder: DocumentBuilder) -> None:
    for child in element:
        tag = child.tag
        if tag == "head":
            rend = child.get("rend") or "h2"
            level = int(rend[1]) if re.fullmatch(r"h[1-6]", rend) else 2
            builder.heading(level, "".join(child.itertext()))
        elif tag == "table":
            rows = []
            for row in child.iter("row"):
                rows.append(["".join(cell.itertext()) for cell in row.findall("cell")])
            builder.table(rows)
        elif tag == "list":
            for item in child.findall("item"):
                builder.paragraph(clean_line("".join(item.itertext())))
        elif tag in ("p", "quote", "code"):
            for line in _lines(child):
                builder.paragraph(line)
        elif len(child):
            _walk(child, builder)
        elif (child.text or "").strip():
            builder.paragraph(clean_line(child.text))


def _lines(paragraph) -> list[str]:
    """A paragraph's lines: pages from editors and CMSs break a "paragraph" into its real paragraphs and list
    items with <br/> (trafilatura's <lb/>), "临床表现有以下几点：<br/>①…<br/>②…": read as one run, the list is
    hidden."""
    lines, current = [], [paragraph.text or ""]
    for element in paragraph:
        if element.tag == "lb":
            lines.append("".join(current))
            current = []
        else:
            current.append("".join(element.itertext()))
        current.append(element.tail or "")
    lines.append("".join(current))
    return [clean for clean in (clean_line(line) for line in lines) if clean]


def _first_line_title(document: LoadedDocument) -> str:
    """A page without <title> or <h1> (a CMS fragment) that opens with a short line, not a sentence: its title. A
    health page is often titled by the question it answers ("斜视手术有什么风险和后遗症？"); a reader's question
    quoted first ("问：…？") is not a title."""
    first = document.text.lstrip().split("\n", 1)[0].strip()
    if not first or len(first) > TITLE_LINE_CHARS or first.endswith(("。", "！", ".", "：", ":")):
        return ""
    return "" if first.endswith(("？", "?")) and first.startswith(("问：", "问:")) else first


def _page_title(markup: str) -> str:
    """`<title>` without a trailing site name ("指南全文 - 某某医院" → "指南全文"), else the first <h1>."""
    match = re.search(r"<title[^>]*>(.*?)</title>", markup, re.I | re.S)
    title = clean_line(html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))) if match else ""
    if title:
        parts = [p for p in _TITLE_SEPARATORS.split(title) if p.strip()]
        if len(parts) > 1 and len(parts[0].strip()) >= 4:
            title = parts[0].strip()
        return title
    match = re.search(r"<h1[^>]*>(.*?)</h1>", markup, re.I | re.S)
    return clean_line(html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))) if match else ""


class BodyText(html.parser.HTMLParser):
    """Headings, paragraphs and table rows of HTML, without scripts and page furniture, into a builder: the
    fallback of a page trafilatura finds no main content in, and the HTML blocks of a Markdown file."""

    SKIP = frozenset({"script", "style", "head", "nav", "footer", "header", "aside", "form", "noscript", "template"})
    BLOCKS = frozenset({"p", "div", "li", "section", "article", "ul", "ol", "br", "blockquote", "pre"})

    def __init__(self, builder: DocumentBuilder):
        super().__init__(convert_charrefs=True)
        self.builder = builder
        self.skip = 0
        self.buffer: list[str] = []
        self.heading = 0
        self.rows: list[list[str]] | None = None
        self.cell: list[str] | None = None

    def flush(self) -> None:
        text = clean_line("".join(self.buffer))
        self.buffer.clear()
        if text:
            if self.heading:
                self.builder.heading(self.heading, text)
            else:
                self.builder.paragraph(text)

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif self.skip:
            return
        elif tag == "table":
            self.flush()
            self.rows = []
        elif tag == "tr" and self.rows is not None:
            self.rows.append([])
        elif tag in ("td", "th") and self.rows is not None:
            self.cell = []
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.heading = int(tag[1])
        elif tag in self.BLOCKS and self.rows is None:
            self.flush()

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif self.skip:
            return
        elif tag in ("td", "th") and self.rows is not None and self.cell is not None:
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table" and self.rows is not None:
            self.builder.table(self.rows)
            self.rows = None
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.heading = 0
        elif tag in self.BLOCKS and self.rows is None:
            self.flush()

    def handle_data(self, data):
        if self.skip:
            return
        if self.cell is not None:
            self.cell.append(data)
        elif self.rows is None:
            self.buffer.append(data)


def _fallback(markup: str, fallback_title: str) -> LoadedDocument:
    builder = DocumentBuilder(fallback_title)
    parser = BodyText(builder)
    parser.feed(markup)
    parser.close()
    parser.flush()
    return builder.build()
