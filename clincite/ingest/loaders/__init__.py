"""Loading documents: every format becomes one clean text + sections (+ page offsets for PDF).

    document = load_document(Path("指南.pdf"))     # raises SkipFile with a reason (Chinese) for unusable files

One module per format: `text` (charset detection, Markdown), `pdf` (pdfplumber), `word` (python-docx),
`webpage` (trafilatura), `records` (JSON: a record's fields as sections). All of them build through
`base.DocumentBuilder`, so chunking sees one shape.
"""

from __future__ import annotations

from pathlib import Path

from clincite.ingest.loaders.base import LoadedDocument, Section, SkipFile, clean_text, table_lines
from clincite.ingest.loaders.markdown import load_markdown
from clincite.ingest.loaders.text import decode_text, plain_document

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text"}
HTML_SUFFIXES = {".html", ".htm"}
RECORD_SUFFIXES = {".json", ".jsonl"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | RECORD_SUFFIXES | {".pdf", ".docx"}
SUPPORTED_NAMES = "md、txt、pdf、docx、html、json"

__all__ = [
    "SUPPORTED_NAMES",
    "SUPPORTED_SUFFIXES",
    "LoadedDocument",
    "Section",
    "SkipFile",
    "clean_text",
    "decode_text",
    "load_document",
    "load_markdown",
    "plain_document",
    "table_lines",
]


def load_document(path: Path) -> LoadedDocument:
    """Read one file into text and sections; raises SkipFile with a reason for anything unusable."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise SkipFile(f"不支持的文件类型 “{suffix or '无扩展名'}”（支持 {SUPPORTED_NAMES}）")
    if path.stat().st_size == 0:
        raise SkipFile("文件为空 (empty file)")
    if suffix == ".pdf":
        from clincite.ingest.loaders.pdf import load_pdf

        document = load_pdf(path)
    elif suffix == ".docx":
        from clincite.ingest.loaders.word import load_docx

        document = load_docx(path)
    elif suffix in RECORD_SUFFIXES:
        from clincite.ingest.loaders.records import load_records

        document = load_records(path)
    elif suffix in HTML_SUFFIXES:
        from clincite.ingest.loaders.webpage import load_html

        document = load_html(path)
    else:
        text = decode_text(path.read_bytes())
        markdown = suffix in (".md", ".markdown")
        document = load_markdown(text, path.stem) if markdown else plain_document(text, path.stem)
    if not any(document.text[s.start : s.end].strip() for s in document.sections):
        raise SkipFile("文件中没有正文文字 (no text)")
    return document
