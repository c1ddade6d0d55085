"""Every line a reader gives is in some passage: a loaded document's text lies in its sections, their heading lines
or its title. A line outside them is in no chunk, so no question can find it and no answer quote it — the reader
"loses" it without a word (found on the stop-46 run over all development libraries: an outline export's run of
headings that head nothing lost 10,830 characters of one library, a PDF's running heads and a Markdown list under
empty headings lost hundreds more).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SAMPLE_KB
from nasty_corpus import build

from clincite.ingest.loaders import LoadedDocument, SkipFile, load_document


def lost_lines(document: LoadedDocument) -> list[str]:
    kept = [False] * len(document.text)
    for section in document.sections:
        start = section.heading_start if section.heading_start is not None else section.start
        kept[start : section.end] = [True] * (section.end - start)
    if document.text.startswith(document.title):
        kept[: len(document.title)] = [True] * len(document.title)
    headings = {heading.strip() for section in document.sections for heading in section.heading_path}
    outside = "".join(char if not keep else "\n" for char, keep in zip(document.text, kept))
    return [line.strip() for line in outside.split("\n") if line.strip() and line.strip() not in headings]


def test_the_sample_library_loses_no_line():
    for path in sorted(Path(SAMPLE_KB).iterdir()):
        assert lost_lines(load_document(path)) == [], path.name


def test_no_added_file_of_the_nasty_corpus_loses_a_line(tmp_path):
    manifest = build(tmp_path / "corpus")
    added = [name for name, expect in manifest.items() if expect.status == "added"]
    assert added
    for name in added:
        assert lost_lines(load_document(tmp_path / "corpus" / name)) == [], name


@pytest.mark.parametrize(
    "markdown",
    [
        "# 笔记（演示）\n\n### 甲\n\n#### 短标签\n\n#### 句子一，说的是内容。\n\n#### 句子二\n\n### 乙\n\n正文。\n",
        "# 笔记（演示）\n\n正文在前。\n\n## 一\n\n## 二\n\n## 三\n",
        "# 笔记（演示）\n\n正文在前。\n\n## 空标题\n\n### 更深的空标题\n\n## 收尾\n",
    ],
    ids=["a run after a short label", "sibling headings after the text", "a deeper one, then a shallower"],
)
def test_headings_that_head_nothing_stay_in_the_text(tmp_path, markdown):
    path = tmp_path / "笔记（演示）.md"
    path.write_text(markdown, encoding="utf-8")
    assert lost_lines(load_document(path)) == []


def test_a_file_of_labels_only_has_no_passage(tmp_path):
    """Headings that head nothing are text only where the document says something: "## 标题1" … "## 标题50" and
    nothing else is no document (skipped as having no text), while an outline export's sentences are one."""
    path = tmp_path / "目录（演示）.md"
    path.write_text("".join(f"## 标题{i}\n\n" for i in range(50)), encoding="utf-8")
    with pytest.raises(SkipFile, match="没有正文"):
        load_document(path)
    path.write_text(
        "# 笔记（演示）\n\n## 角膜\n\n### 角膜分五层，由外向内为上皮层、前弹力层、基质层、后弹力层和内皮层\n",
        encoding="utf-8",
    )
    assert load_document(path).sections
