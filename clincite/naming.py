"""The names clinicians see for a source document."""

from __future__ import annotations

import re
from pathlib import Path


def display_source(source: str) -> str:
    """The name clinicians see: the file name without its extension."""
    return Path(source).stem if Path(source).suffix.lower() in {".md", ".markdown", ".txt", ".text", ".pdf",
                                                                 ".docx", ".html", ".htm"} else source


def strip_source_name(name: str) -> str:
    """《低浓度阿托品临床应用指南（演示）.md》 and 《低浓度阿托品临床应用指南（演示）》 name the same source."""
    name = name.strip()
    return re.sub(r"\.(md|markdown|txt|text|pdf|docx|html?)$", "", name, flags=re.I)
