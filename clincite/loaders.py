"""Loading documents: every format becomes text + sections with character offsets into that text.

    document = load_document(Path("指南.pdf"))     # raises SkipFile with a reason (Chinese) for unusable files
"""

from __future__ import annotations

import html.parser
import re
from dataclasses import dataclass
from pathlib import Path

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text"}
HTML_SUFFIXES = {".html", ".htm"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf", ".docx"}


class SkipFile(Exception):
    """A file that cannot be ingested; the message (Chinese) is what the user sees."""


@dataclass
class Section:
    heading_path: list[str]
    start: int  # body offsets in LoadedDocument.text
    end: int
    heading_start: int | None = None  # where the section's own heading line starts (None: no heading)


@dataclass
class LoadedDocument:
    title: str
    text: str
    sections: list[Section]


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM), then GB18030 — the two encodings Chinese clinics' files come in."""
    if b"\x00" in data[:8192]:
        raise SkipFile("看起来是二进制文件，不是文本 (binary content)")
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise SkipFile("无法解码：既不是 UTF-8 也不是 GB18030 编码 (undecodable text)")


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def parse_markdown(text: str, fallback_title: str) -> LoadedDocument:
    """Sections at headings; the first level-1 heading is the title."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    title = None
    body_start = 0
    heading_start: int | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        match = _MD_HEADING.match(line.rstrip("\r\n"))
        if match:
            sections.append(Section([h for _, h in path], body_start, offset, heading_start))
            level, heading = len(match.group(1)), match.group(2).strip()
            if level == 1 and title is None:
                title = heading
                path = []
                heading_start = None
            else:
                path = [(lv, h) for lv, h in path if lv < level] + [(level, heading)]
                heading_start = offset
            body_start = offset + len(line)
        offset += len(line)
    sections.append(Section([h for _, h in path], body_start, len(text), heading_start))
    return LoadedDocument(title or fallback_title, text, [s for s in sections if text[s.start:s.end].strip()])


def plain_document(text: str, title: str) -> LoadedDocument:
    return LoadedDocument(title, text, [Section([], 0, len(text))] if text.strip() else [])


def load_pdf(path: Path) -> LoadedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("PDF 已加密，需要密码才能读取 (encrypted PDF)")
        pages = [page.extract_text() or "" for page in reader.pages]
    except SkipFile:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, NotImplementedError) as exc:
        raise SkipFile(f"PDF 文件损坏或无法解析 ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # pypdf raises many private error types on broken files
        raise SkipFile(f"PDF 文件损坏或无法解析 ({type(exc).__name__}: {exc})") from exc
    text = "\n\n".join(p.strip() for p in pages)
    if not text.strip():
        raise SkipFile("PDF 中没有可提取的文字（可能是扫描件，需要先做 OCR） (no text layer)")
    return plain_document(text, path.stem)


def load_docx(path: Path) -> LoadedDocument:
    import zipfile

    import docx

    try:
        document = docx.Document(str(path))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise SkipFile(f"DOCX 文件损坏或不是 Word 文档 ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:
        raise SkipFile(f"DOCX 文件无法打开 ({type(exc).__name__}: {exc})") from exc
    lines = []
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        level = _docx_heading_level(paragraph.style.name if paragraph.style is not None else "")
        lines.append(f"{'#' * level} {text}" if level else text)
    return parse_markdown("\n\n".join(lines), path.stem)


def _docx_heading_level(style_name: str) -> int:
    match = re.match(r"(?:heading|标题)\s*(\d)", style_name.strip().lower())
    if match:
        return int(match.group(1))
    return 1 if style_name.strip().lower() in ("title", "标题") else 0


class _HtmlToMarkdown(html.parser.HTMLParser):
    BLOCKS = {"p", "div", "li", "br", "tr", "section", "article", "table", "ul", "ol"}
    SKIP = {"script", "style", "head", "nav", "footer"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif re.fullmatch(r"h[1-6]", tag) or tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def load_html(path: Path) -> LoadedDocument:
    parser = _HtmlToMarkdown()
    parser.feed(decode_text(path.read_bytes()))
    text = re.sub(r"\n{3,}", "\n\n", "".join(parser.parts)).strip()
    text = "\n".join(line.strip() for line in text.splitlines())
    return parse_markdown(text, path.stem)


def load_document(path: Path) -> LoadedDocument:
    """Read one file into text and sections; raises SkipFile with a reason for anything unusable."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise SkipFile(f"不支持的文件类型 “{suffix or '无扩展名'}”（支持 md、txt、pdf、docx、html）")
    if path.stat().st_size == 0:
        raise SkipFile("文件为空 (empty file)")
    if suffix == ".pdf":
        document = load_pdf(path)
    elif suffix == ".docx":
        document = load_docx(path)
    elif suffix in HTML_SUFFIXES:
        document = load_html(path)
    else:
        text = decode_text(path.read_bytes())
        document = parse_markdown(text, path.stem) if suffix in (".md", ".markdown") else plain_document(text, path.stem)
    if not any(document.text[s.start:s.end].strip() for s in document.sections):
        raise SkipFile("文件中没有正文文字 (no text)")
    return document
