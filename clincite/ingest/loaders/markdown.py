"""Markdown as its authors write it: front matter, headings of any level, lists, tables, emphasis, links, footnotes.

    document = load_markdown(text, fallback_title="toddler-preschool-eye-care")

Parsed with markdown-it-py (MIT; CommonMark plus GFM tables), then written through `DocumentBuilder` like every
other format, so the stored text is what a clinician reads, not Markdown source: a heading is its own line ("禁忌证",
not "## 禁忌证"), a list item is one line without its bullet, `**粗体**` is 粗体, a link is its text, an image or an
HTML comment is nothing, a table row is "列名：值 | 列名：值". In an outline (a list whose items have lists of their
own: study notes, mind maps) an item that is a label heads its sub-items as a heading would ("圆锥角膜" › "症状" ›
"青春期前后视力下降"): the nesting is what says whose 症状 a line is. Raw HTML blocks (a blog post exported with its
page, "<h2>…</h2><p>…</p>") are read as a web page's body is: their headings, paragraphs and tables, no tags or styles.
The verbatim check and the passage highlight then work on the same text the quote was taken from.

Front matter is metadata, never passage text: YAML (`---`), TOML (`+++`) and Nikola's HTML-comment block
(`<!-- .. title: 儿童眼保健 -->`); its `title` becomes the document's title.
"""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import dataclass, field

from clincite.ingest.loaders.base import (
    LEAD_IN_ENDS,
    DocumentBuilder,
    LoadedDocument,
    clean_line,
    reads_as_sentence,
    table_lines,
)
from clincite.ingest.loaders.webpage import BodyText

log = logging.getLogger("clincite.loaders.markdown")

_YAML_BLOCK = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_TOML_BLOCK = re.compile(r"\A\+\+\+[ \t]*\n(.*?)\n\+\+\+[ \t]*(?:\n|\Z)", re.S)
_COMMENT_BLOCK = re.compile(r"\A<!--(.*?)-->[ \t]*(?:\n|\Z)", re.S)
# One field per line; an empty one (".. tags:") stays empty instead of taking the next line as its value
_NIKOLA_FIELD = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*$", re.M)
# Pelican / MultiMarkdown: "Title: …" lines at the very top, ended by a blank line.
_KEY_VALUE_BLOCK = re.compile(r"\A((?:[A-Za-z][\w-]*[ \t]*:[^\n]*\n)+)\n")
TITLE_KEYS = ("title", "标题", "name")
# markdown-it's default (20) drops every line of a list nested past ten levels, which a mind map's export reaches
MAX_NESTING = 64
LABEL_WITH_COLON_CHARS = 8  # "临床表现：" labels its sub-items; a longer line ending in "：" leads into its list


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """(metadata, body): the front matter block read into a flat dict of strings, and the text after it."""
    stripped = text.lstrip("\ufeff")
    lead = len(text) - len(stripped)
    for pattern, parse in (
        (_YAML_BLOCK, _parse_yaml),
        (_TOML_BLOCK, _parse_toml),
        (_COMMENT_BLOCK, _parse_nikola),
        (_KEY_VALUE_BLOCK, _parse_key_values),
    ):
        match = pattern.match(stripped)
        if not match:
            continue
        metadata = parse(match.group(1))
        if metadata is not None:
            return metadata, text[lead + match.end() :]
    return {}, text


def _flat(raw) -> dict[str, str] | None:
    if not isinstance(raw, dict):
        return None
    flat = {}
    for key, value in raw.items():
        if isinstance(value, list | tuple):
            value = "、".join(str(v) for v in value)
        flat[str(key).strip().lower()] = clean_line(str(value)) if value is not None else ""
    return flat


def _parse_yaml(block: str) -> dict[str, str] | None:
    import yaml

    try:
        return _flat(yaml.safe_load(block))
    except yaml.YAMLError as exc:
        log.info("Front matter is not valid YAML (%s); treated as text", exc)
        return None


def _parse_toml(block: str) -> dict[str, str] | None:
    try:
        return _flat(tomllib.loads(block))
    except tomllib.TOMLDecodeError as exc:
        log.info("Front matter is not valid TOML (%s); treated as text", exc)
        return None


def _parse_nikola(block: str) -> dict[str, str] | None:
    fields = _NIKOLA_FIELD.findall(block)
    return {key.lower(): clean_line(value) for key, value in fields} if fields else None


def _parse_key_values(block: str) -> dict[str, str] | None:
    pairs = [line.split(":", 1) for line in block.splitlines() if line.strip()]
    metadata = {key.strip().lower(): clean_line(value) for key, value in pairs}
    return metadata if "title" in metadata else None  # only a block that declares a title is front matter


def front_matter_title(metadata: dict[str, str]) -> str:
    return next((metadata[key] for key in TITLE_KEYS if metadata.get(key)), "")


def load_markdown(text: str, fallback_title: str) -> LoadedDocument:
    """Markdown source → clean text with sections, lists and tables (see the module docstring)."""
    from markdown_it import MarkdownIt

    metadata, body = split_front_matter(text)
    builder = DocumentBuilder(fallback_title, title=front_matter_title(metadata) or None, metadata=metadata)
    parser = MarkdownIt("commonmark", {"html": True, "maxNesting": MAX_NESTING}).enable(["table", "strikethrough"])
    tokens = parser.parse(body)
    if tokens and max(token.level for token in tokens) >= MAX_NESTING - 1:
        # markdown-it stops reading a block nested this deep and drops the rest: read every line as plain text
        log.warning("Markdown nested %d levels deep or more: read as plain text so no line is lost", MAX_NESTING)
        from clincite.ingest.loaders.text import plain_document

        return plain_document(text, fallback_title)
    _Writer(builder).write(tokens)
    return builder.build()


@dataclass
class _Item:
    """A list item as written: its paragraphs, then what is nested in it (items, or a table as `rows`)."""

    lines: list[str] = field(default_factory=list)
    children: list[_Item] = field(default_factory=list)
    rows: list[list[str]] | None = None

    def heads(self) -> bool:
        """A label over a list of its own ("症状", "房水循环"), not a sentence that happens to have sub-items nor a
        lead-in read with its list ("出现以下情况应尽快就诊：")."""
        if len(self.lines) != 1 or not any(c.lines or c.rows for c in self.children):
            return False
        line = clean_line(self.lines[0])
        lead_in = line.endswith(LEAD_IN_ENDS) and len(line) > LABEL_WITH_COLON_CHARS
        return not lead_in and not reads_as_sentence(line)


class _Writer:
    """Walks markdown-it's block tokens into the builder: one call per heading, paragraph, list and table."""

    def __init__(self, builder: DocumentBuilder):
        self.builder = builder
        self.list_depth = 0
        self.outline: list[_Item] = []  # the items of the list being read, top level
        self.open_items: list[_Item] = []
        self.table: list[list[str]] | None = None
        self.heading_level = 0
        self.html: BodyText | None = None  # one parser for all the HTML blocks: a <head> or <style> spans several

    def write(self, tokens) -> None:
        for token in tokens:
            handler = getattr(self, f"_{token.type}", None)
            if handler is not None:
                handler(token)

    def _html_block(self, token) -> None:
        if self.html is None:
            self.html = BodyText(self.builder)
        self.html.feed(token.content)
        self.html.flush()

    # --- block structure ---
    def _heading_open(self, token) -> None:
        self.heading_level = int(token.tag[1])

    def _heading_close(self, token) -> None:
        self.heading_level = 0

    def _bullet_list_open(self, token) -> None:
        self.list_depth += 1

    _ordered_list_open = _bullet_list_open

    def _bullet_list_close(self, token) -> None:
        self.list_depth -= 1
        if self.list_depth == 0 and self.outline:
            base = self.builder.path[-1][0] if self.builder.path else 1
            self._write_items(self.outline, base + 1)
            self.outline = []

    _ordered_list_close = _bullet_list_close

    def _list_item_open(self, token) -> None:
        item = _Item()
        (self.open_items[-1].children if self.open_items else self.outline).append(item)
        self.open_items.append(item)

    def _list_item_close(self, token) -> None:
        self.open_items.pop()

    def _write_items(self, items: list[_Item], level: int) -> None:
        """Items that head a list of their own become headings at `level` over it; the rest are lines of a list."""
        lines: list[str] = []
        for item in items:
            if item.rows is not None or item.heads():
                if lines:
                    self.builder.list_items(lines)
                    lines = []
                if item.rows is not None:
                    self.builder.table(item.rows)
                    continue
                self.builder.heading(level, item.lines[0])
                self._write_items(item.children, level + 1)
                self.builder.close_headings(level)  # the item's siblings are under its parent again
            elif _outlined(item.children):
                # "眼球：正常直径 23 - 24 mm" says something itself: a line, and its outline goes on under it
                self.builder.list_items([*lines, *item.lines])
                lines = []
                self._write_items(item.children, level)
            else:
                lines += _flat_lines(item)
        if lines:
            self.builder.list_items(lines)

    def _table_open(self, token) -> None:
        self.table = []

    def _tr_open(self, token) -> None:
        if self.table is not None:
            self.table.append([])

    def _table_close(self, token) -> None:
        if self.table and self.open_items:
            self.open_items[-1].children.append(_Item(rows=self.table))  # in its place among the items
        elif self.table:
            self.builder.table(self.table)
        self.table = None

    def _fence(self, token) -> None:
        self._text(token.content)

    _code_block = _fence

    def _inline(self, token) -> None:
        text = inline_text(token)
        if self.table is not None:
            if self.table:
                self.table[-1].append(text)
        elif self.heading_level:
            self.builder.heading(self.heading_level, text)
        else:
            self._text(text)

    def _text(self, text: str) -> None:
        if self.open_items:
            if text.strip():
                self.open_items[-1].lines.append(text)
        else:
            self.builder.paragraph(text)


def _outlined(items: list[_Item]) -> bool:
    return any(item.rows is not None or item.heads() or _outlined(item.children) for item in items)


def _flat_lines(item: _Item) -> list[str]:
    """An item and everything nested in it, one line each, in reading order (a table nested in it as its rows)."""
    if item.rows is not None:
        return table_lines(item.rows)
    return [*item.lines, *(line for child in item.children for line in _flat_lines(child))]


def inline_text(token) -> str:
    """An inline token as a reader sees it: emphasis, code marks, links and images gone, line breaks kept, inline
    math as it reads (`plain_math`)."""
    return plain_math(_inline_parts(token))


def _inline_parts(token) -> str:
    parts: list[str] = []
    for child in token.children or []:  # an image's alt text is its own children: never passage text
        kind = child.type
        if kind in ("text", "code_inline"):
            parts.append(child.content)
        elif kind == "softbreak":
            parts.append(_soft_break(parts))
        elif kind == "hardbreak" or (kind == "html_inline" and child.content.lower().startswith("<br")):
            parts.append("\n")
    return "".join(parts).strip()


def _soft_break(parts: list[str]) -> str:
    """A line wrap in the source: nothing between Chinese characters, a space between Latin words."""
    before = parts[-1][-1:] if parts else ""
    return " " if before.isascii() and before.isalnum() else ""


# Inline TeX as PDF-to-Markdown converters (MinerU, Marker, Nougat) write a paper's figures: "$ 2 6 . 9 \\% $",
# "$ 1 0 0 { \\sim } 2 5 0 \\mathrm { m m } $". Read as a clinician reads the PDF: "26.9%", "100~250mm".
_BESIDE_CHINESE = "[\u4e00-\u9fff，。；：、（）]"
_INLINE_MATH = re.compile(rf"(?:(?<={_BESIDE_CHINESE})[ \t])?\$([^$\n]{{1,200}})\$(?:[ \t](?={_BESIDE_CHINESE}))?")
_TEX_MARK = re.compile(r"[\\{}^_]|\d\s+[\d.%]")  # what tells TeX from a price ("$100 and $200")
_TEX_FONT = re.compile(
    r"\\(?:mathrm|mathbf|mathit|mathsf|mathtt|boldsymbol|operatorname|textbf|textrm|text|bf|rm|it|mathcal|mathbb|dot|ddot|hat|bar|overline|underline|tilde|vec|left|right)\b\s*"
)
_TEX_SYMBOLS = {
    r"\sim": "~",
    r"\pm": "±",
    r"\times": "×",
    r"\leqslant": "≤",
    r"\geqslant": "≥",
    r"\leq": "≤",
    r"\geq": "≥",
    r"\le": "≤",
    r"\ge": "≥",
    r"\cdot": "·",
    r"\approx": "≈",
    r"\mu": "μ",
    r"\alpha": "α",
    r"\beta": "β",
    r"\gamma": "γ",
    r"\kappa": "κ",
    r"\chi": "χ",
    r"\circ": "°",
    r"\degree": "°",
    r"\%": "%",
    r"\lt": "<",
    r"\gt": ">",
    r"\ast": "*",
    r"\prime": "′",
    r"\quad": "",
    r"\,": "",
    r"\;": "",
    r"\!": "",
    r"\ ": "",
}
_SUPERSCRIPT = re.compile(r"\^\{([0-9+\-]+)\}|\^([0-9+\-])")
_SUPERSCRIPTS = str.maketrans("0123456789+-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻")


def plain_math(text: str) -> str:
    """Each inline `$…$` that is TeX and only figures, units, Greek letters and operators, written plainly; any
    other (a fraction, a matrix, a price) as written."""
    return _INLINE_MATH.sub(_plain_formula, text) if "$" in text else text


def _plain_formula(found: re.Match) -> str:
    body = found.group(1)
    if not _TEX_MARK.search(body):
        return found.group(0)
    plain = _TEX_FONT.sub("", body)
    for command in sorted(_TEX_SYMBOLS, key=len, reverse=True):
        plain = plain.replace(command, _TEX_SYMBOLS[command])
    if "\\" in plain:
        return found.group(0)  # \frac, \sqrt …: no plain reading
    plain = re.sub(r"\s+", "", plain)
    plain = _SUPERSCRIPT.sub(lambda m: (m.group(1) or m.group(2)).translate(_SUPERSCRIPTS), plain)
    plain = re.sub(r"_\{([^{}]*)\}|_(.)", lambda m: m.group(1) or m.group(2) or "", plain)
    plain = plain.replace("{", "").replace("}", "")
    return plain if plain and "^" not in plain and "$" not in plain else found.group(0)
