"""DOCX with python-docx (MIT): paragraphs and tables in document order, headings from paragraph styles.

Dosing tables are where Word guidelines keep their numbers, so every table row becomes one line
("列名：值 | 列名：值"); merged cells are read once.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from clincite.ingest.loaders.base import DocumentBuilder, LoadedDocument, SkipFile, clean_line


def load_docx(path: Path) -> LoadedDocument:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise SkipFile(f"DOCX 文件损坏或不是 Word 文档 ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:
        raise SkipFile(f"DOCX 文件无法打开 ({type(exc).__name__}: {exc})") from exc
    builder = DocumentBuilder(path.stem)
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            level = heading_level(block)
            if level:
                builder.heading(level, block.text)
            else:
                builder.paragraph(block.text)
        elif isinstance(block, Table):
            builder.table(table_rows(block))
    loaded = builder.build()
    core_title = clean_line(document.core_properties.title or "")
    if loaded.title == path.stem and core_title and not re.search(r"\.(docx?|wps)$", core_title, re.I):
        loaded.title = core_title
    return loaded


def heading_level(paragraph) -> int:
    """Heading N / 标题 N styles (and styles based on them); Title is level 1; else the paragraph's outline level."""
    style = paragraph.style
    while style is not None:
        name = (style.name or "").strip().lower()
        match = re.match(r"(?:heading|标题)\s*(\d)", name)
        if match:
            return int(match.group(1))
        if name in ("title", "标题"):
            return 1
        style = style.base_style
    outline = paragraph._p.find(".//{http://schemas.openxmlformats.org/wordprocessingml/2006/main}outlineLvl")
    if outline is not None:
        value = outline.get("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}val")
        if value is not None and value.isdigit() and int(value) < 9:
            return int(value) + 1
    return 0


def table_rows(table) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells, previous = [], None
        for cell in row.cells:
            if previous is not None and cell._tc is previous:  # a merged cell repeats: read it once
                continue
            previous = cell._tc
            cells.append(clean_line(cell.text))
        rows.append(cells)
    return rows
