"""Markdown as its authors write it: front matter, headings of any level, lists, tables, emphasis, links, footnotes.

    document = load_markdown(text, fallback_title="toddler-preschool-eye-care")

Parsed with markdown-it-py (MIT; CommonMark plus GFM tables), then written through `DocumentBuilder` like every
other format, so the stored text is what a clinician reads, not Markdown source: a heading is its own line ("禁忌证",
not "## 禁忌证"), a list item is one line without its bullet, `**粗体**` is 粗体, a link is its text, an image or an
HTML comment is nothing, a table row is "列名：值 | 列名：值". Raw HTML blocks (a blog post exported with its page,
"<h2>…</h2><p>…</p>") are read as a web page's body is: their headings, paragraphs and tables, no tags or styles.
The verbatim check and the passage highlight then work on the same text the quote was taken from.

Front matter is metadata, never passage text: YAML (`---`), TOML (`+++`) and Nikola's HTML-comment block
(`<!-- .. title: 儿童眼保健 -->`); its `title` becomes the document's title.
"""

from __future__ import annotations

import logging
import re
import tomllib

from clincite.ingest.loaders.base import DocumentBuilder, LoadedDocument, clean_line
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
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    _Writer(builder).write(parser.parse(body))
    return builder.build()


class _Writer:
    """Walks markdown-it's block tokens into the builder: one call per heading, paragraph, list and table."""

    def __init__(self, builder: DocumentBuilder):
        self.builder = builder
        self.list_depth = 0
        self.items: list[str] = []
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
        if self.list_depth == 0 and self.items:
            self.builder.list_items(self.items)
            self.items = []

    _ordered_list_close = _bullet_list_close

    def _table_open(self, token) -> None:
        self.table = []

    def _tr_open(self, token) -> None:
        if self.table is not None:
            self.table.append([])

    def _table_close(self, token) -> None:
        if self.table:
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
        if self.list_depth:
            if text.strip():
                self.items.append(text)
        else:
            self.builder.paragraph(text)


def inline_text(token) -> str:
    """An inline token as a reader sees it: emphasis, code marks, links and images gone, line breaks kept."""
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
