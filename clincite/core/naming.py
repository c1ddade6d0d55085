"""The names clinicians see for a source document.

A document is cited by its file name ("低浓度阿托品临床应用指南（演示）"), which is what a clinic's guideline folder
is organised by. Files exported from web sites, blogs and document systems are often named by an identifier
("3089kp01", "a3f9e2b1c4") or a web slug ("toddler-preschool-eye-care") that a Chinese-speaking clinician does not
cite by: those are cited by the document's own title instead (front matter, the PDF/DOCX title, the HTML `<title>`)
when it has one in Chinese. CITED_NAME chooses: "auto" (that rule), "file" (always the file name), "title" (always
the title).

The cited name is what the LLM sees and writes in 《…》, so the citation check accepts both names of a document.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

CitedName = Literal["auto", "file", "title"]
SUFFIXES = {".md", ".markdown", ".txt", ".text", ".pdf", ".docx", ".html", ".htm", ".json", ".jsonl"}
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# A "word": three or more Latin letters with a vowel ("guideline", "scan", "myopia"); "kp", "xq", "a3f9" are not.
_WORD = re.compile(r"[A-Za-z]*[aeiouyAEIOUY][A-Za-z]*")

_NESTED = str.maketrans({"《": "〈", "》": "〉"})

_mode: CitedName = "auto"
_titles: dict[str, str] = {}


def configure(mode: CitedName) -> None:
    """Set the naming rule for this process (from the CITED_NAME setting)."""
    global _mode
    _mode = mode


def remember_title(source: str, title: str) -> None:
    """The catalogue tells the titles of the documents it reads, so a bare source name can be displayed."""
    _titles[source] = title


def file_stem(source: str) -> str:
    # A source is the path inside the folder ingested: "科室甲/指南.md" and "科室乙/指南.md" are two documents, so
    # the folders stay in the name (only the extension goes).
    return str(Path(source).with_suffix("")) if Path(source).suffix.lower() in SUFFIXES else source


def looks_like_identifier(name: str) -> bool:
    """No CJK character and no word: "3089kp01", "IMG_0001", "a3f9e2b1c4", "20240101-003"."""
    if _CJK.search(name):
        return False
    return not any(len(word) >= 3 for word in _WORD.findall(re.sub(r"[^A-Za-z]+", " ", name)))


def display_source(source: str, title: str | None = None) -> str:
    """The name clinicians see and the LLM cites: the file name, or the document's title (see module doc)."""
    stem = file_stem(source)
    title = (title if title is not None else _titles.get(source, "")).strip()
    if not title or title == stem or _mode == "file":
        return nested(stem)
    if _mode == "title" or looks_like_identifier(stem) or (not _CJK.search(stem) and _CJK.search(title)):
        return nested(title)
    return nested(stem)


def nested(name: str) -> str:
    """A name cited inside 《…》 writes its own book-title marks as 〈…〉, as Chinese does for a title within a title
    (《〈健康报〉：……》); left as 《》 they would end the citation early and fail its check."""
    return name.translate(_NESTED)


def source_names(source: str, title: str | None = None) -> set[str]:
    """Every name a report may cite this document by (file name, cited name), normalised for comparison."""
    return {strip_source_name(source), strip_source_name(display_source(source, title))}


def strip_source_name(name: str) -> str:
    """《低浓度阿托品临床应用指南（演示）.md》 and 《低浓度阿托品临床应用指南（演示）》 name the same source."""
    name = nested(name.strip())
    return re.sub(r"\.(md|markdown|txt|text|pdf|docx|html?|jsonl?)$", "", name, flags=re.I)
