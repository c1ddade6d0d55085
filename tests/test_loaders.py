"""Loaders that keep structure, on real files made here: a 3-page Chinese PDF (running header, page-number footer,
a ruled table), a DOCX with a dosing table, an HTML page with a table and site furniture, Big5 / GB18030 / UTF-16
texts. Each is ingested into a real KB and retrieved with the right page, row and text (`query.py --retrieve --json`).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import realfiles as rf
from conftest import ROOT, make_settings

from clincite.core import naming
from clincite.ingest.chunking import chunk_document
from clincite.ingest.loaders import SkipFile, load_document, table_lines
from clincite.ingest.pipeline import Ingestor
from clincite.kb.catalogue import Catalogue
from clincite.kb.store import KnowledgeBase
from clincite.retrieval.search import HybridSearcher


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return rf.make_all(tmp_path_factory.mktemp("real-docs"))


@pytest.fixture(scope="module")
def real_kb(files, tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("real-kb"))
    kb = KnowledgeBase(settings)
    report = Ingestor(settings, kb).run([files["pdf"].parent])
    assert report.count("added") == 6, [(r.name, r.status, r.detail) for r in report.results]
    return settings, kb


# --- PDF --------------------------------------------------------------------------------------------------------


def test_pdf_pages_headings_and_joined_lines(files):
    document = load_document(files["pdf"])
    assert document.title == "儿童近视防控指南（演示）"
    assert len(document.page_starts) == 3
    assert rf.PDF_HEADER not in document.text  # the running header is gone
    assert "第 1 页" not in document.text and "共 3 页" not in document.text  # and the footers
    # Line wraps inside a sentence are joined: the long sentence of page 3 is one unbroken string.
    assert rf.PDF_PAGE3_SENTENCE in document.text
    assert document.page_at(document.text.index(rf.PDF_PAGE3_SENTENCE)) == 3
    assert [s.heading_path for s in document.sections] == [["一、概述"], ["二、低浓度阿托品"], ["三、高度近视的随访"]]


def test_pdf_table_rows_are_lines_with_their_column_names(files):
    document = load_document(files["pdf"])
    assert rf.PDF_TABLE_ROW in document.text.splitlines()
    assert document.page_at(document.text.index(rf.PDF_TABLE_ROW)) == 2
    assert document.text.count("每3至6个月") == 1  # table cells are not read a second time as loose text


def test_pdf_chunks_carry_their_pages(files):
    document = load_document(files["pdf"])
    chunks = chunk_document(document, files["pdf"].name, 60, 200)
    assert all(c.pages and 1 <= c.pages[0] <= c.pages[1] <= 3 for c in chunks)
    page3 = [c for c in chunks if rf.PDF_PAGE3_SENTENCE in c.text]
    assert page3 and page3[0].pages == [3, 3]
    for chunk in chunks:
        assert chunk.text == document.text[chunk.start : chunk.end]


def test_a_sentence_running_over_a_page_break_is_one_sentence_on_both_pages(tmp_path):
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    path = tmp_path / "跨页（演示）.pdf"
    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setFont("STSong-Light", 11)
    pdf.drawString(72, 120, "近视儿童应在专业机构定期复查，复查内容包括视力、屈光度")
    pdf.showPage()
    pdf.setFont("STSong-Light", 11)
    pdf.drawString(72, A4[1] - 100, "和眼轴长度，以便及时调整防控方案。")
    pdf.save()
    document = load_document(path)
    sentence = "复查内容包括视力、屈光度和眼轴长度，以便及时调整防控方案。"
    assert sentence in document.text
    chunk = chunk_document(document, path.name, 10, 200)[0]
    assert chunk.pages == [1, 2]


def test_an_encrypted_pdf_is_skipped_with_its_reason(tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret")
    with open(tmp_path / "locked.pdf", "wb") as f:
        writer.write(f)
    with pytest.raises(SkipFile, match="加密"):
        load_document(tmp_path / "locked.pdf")


# --- DOCX, HTML ---------------------------------------------------------------------------------------------------


def test_docx_keeps_its_dosing_table_and_style_headings(files):
    document = load_document(files["docx"])
    assert document.title == "阿托品用药方案（演示）"
    assert rf.DOCX_ROW in document.text.splitlines()
    assert document.page_starts is None
    table_section = next(s for s in document.sections if rf.DOCX_ROW in document.text[s.start : s.end])
    assert table_section.heading_path == ["按体重的演示剂量"]


def test_html_main_content_without_furniture_title_from_the_page(files):
    document = load_document(files["html"])
    assert document.title == rf.HTML_TITLE  # <title> without the site name
    assert rf.HTML_ROW in document.text.splitlines()  # cells not glued: "护理步骤：揉搓清洗 | 要点：…"
    for furniture in ("预约挂号", "医院新闻", "备案号", "版权所有"):
        assert furniture not in document.text
    assert "\ufeff" not in document.text and "  " not in document.text


# --- text encodings -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, sentence", [("big5", rf.BIG5_TEXT), ("gb18030", rf.GB18030_TEXT), ("utf16", rf.UTF16_TEXT)]
)
def test_chinese_encodings_are_detected(files, key, sentence):
    document = load_document(files[key])
    assert sentence in document.text
    assert "\x07" not in document.text and "\r" not in document.text  # control characters and CRs removed


def test_undetectable_bytes_are_skipped_not_indexed_as_garbage(tmp_path):
    import random

    noise = bytes(random.Random(7).randrange(128, 256) for _ in range(3000))
    (tmp_path / "noise.txt").write_bytes(noise)
    with pytest.raises(SkipFile, match=r"编码|二进制"):
        load_document(tmp_path / "noise.txt")


def test_table_lines_repeat_the_header_into_every_row():
    assert table_lines([["药物", "剂量"], ["甲", "1 mg"], ["乙", ""]]) == [
        "药物 | 剂量",
        "药物：甲 | 剂量：1 mg",
        "药物：乙",
    ]
    assert table_lines([["只有一列"], ["值"]]) == ["只有一列", "值"]


# --- the KB: ingest, retrieve, names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, source, text, pages",
    [
        ("高度近视儿童多久做一次散瞳眼底检查", rf.PDF_NAME, rf.PDF_PAGE3_SENTENCE, [3, 3]),
        ("0.01%阿托品的复查间隔", rf.PDF_NAME, rf.PDF_TABLE_ROW, [2, 2]),
        ("体重20–30 kg 的演示剂量是多少", rf.DOCX_NAME, rf.DOCX_ROW, None),
        ("角膜塑形镜揉搓清洗的要点", rf.HTML_NAME, rf.HTML_ROW, None),
        ("每天戶外活動時間", rf.BIG5_NAME, rf.BIG5_TEXT, None),
        ("红光治疗期间复查眼底", rf.GB18030_NAME, rf.GB18030_TEXT, None),
        ("睫状肌麻痹验光", rf.UTF16_NAME, rf.UTF16_TEXT, None),
    ],
)
async def test_each_file_is_retrieved_with_its_page_row_and_text(real_kb, question, source, text, pages):
    settings, kb = real_kb
    hits = await HybridSearcher(settings, kb).search(question, mode="bm25")
    top = hits[0]
    assert (top.source, top.pages) == (source, pages)
    assert text in top.text


def test_identifier_file_names_are_cited_by_the_documents_title(real_kb):
    _, kb = real_kb
    kb.catalogue.documents()
    assert naming.display_source(rf.HTML_NAME) == rf.HTML_TITLE
    assert naming.display_source(rf.PDF_NAME) == "儿童近视防控指南（演示）"  # a readable file name stays
    assert naming.source_names(rf.HTML_NAME, rf.HTML_TITLE) == {"3089kp01", rf.HTML_TITLE}
    try:
        naming.configure("file")
        assert naming.display_source(rf.HTML_NAME) == "3089kp01"
        naming.configure("title")
        assert naming.display_source("低浓度指南.md", "低浓度阿托品临床应用指南") == "低浓度阿托品临床应用指南"
    finally:
        naming.configure("auto")
    assert naming.looks_like_identifier("3089kp01") and naming.looks_like_identifier("a3f9e2b1c4")
    assert not naming.looks_like_identifier("myopia-guideline-2023") and not naming.looks_like_identifier("指南")


def test_citing_a_document_by_its_title_verifies(real_kb):
    from clincite.question.citation_check import check_citations

    _, kb = real_kb
    answer = f"**【1】护理要点**\n说明：演示。\n来源：《{rf.HTML_TITLE}》\n原文：“每次摘镜后用护理液揉搓镜片两面各20秒”"
    [citation] = check_citations(answer, kb.catalogue)
    assert citation.verified and citation.chunk_id and citation.heading_path == ["日常护理步骤"]


@pytest.mark.slow
def test_retrieve_json_has_title_heading_path_and_pages(real_kb):
    settings, kb = real_kb
    out = subprocess.run(
        [sys.executable, "query.py", "高度近视儿童散瞳眼底检查", "--retrieve", "--json", "--kb", str(kb.dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "EMBEDDING_MODEL": settings.embedding_model},
    )
    assert out.returncode == 0, out.stderr
    top = json.loads(out.stdout)["hits"][0]
    assert top["source"] == rf.PDF_NAME and top["title"] == "儿童近视防控指南（演示）"
    assert top["heading_path"] == ["三、高度近视的随访"] and top["pages"] == [3, 3]


def test_catalogue_upgrades_in_place_with_pages(tmp_path):
    """A catalogue written before pages existed gains the column and keeps its chunks (pages null)."""
    import sqlite3

    db = sqlite3.connect(tmp_path / "catalogue.sqlite3", isolation_level=None)
    db.executescript(  # the first release's schema, as it was written then
        """CREATE TABLE documents (source TEXT PRIMARY KEY, path TEXT NOT NULL, title TEXT NOT NULL,
            file_hash TEXT NOT NULL, chunk_count INTEGER NOT NULL, ingested_at REAL NOT NULL);
        CREATE TABLE chunks (id TEXT PRIMARY KEY, source TEXT NOT NULL REFERENCES documents(source) ON DELETE CASCADE,
            title TEXT NOT NULL, heading_path TEXT NOT NULL, position INTEGER NOT NULL, start INTEGER NOT NULL,
            "end" INTEGER NOT NULL, text TEXT NOT NULL, content_hash TEXT NOT NULL);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"""
    )
    db.execute("INSERT INTO documents VALUES ('a.md', '/x/a.md', 'A', 'h', 1, 0)")
    db.execute("""INSERT INTO chunks VALUES ('c1', 'a.md', 'A', '[]', 0, 0, 4, '旧的片段', 'h')""")
    db.close()
    catalogue = Catalogue(tmp_path / "catalogue.sqlite3")
    assert catalogue.schema_version >= 2
    [chunk] = catalogue.all_chunks()
    assert chunk.text == "旧的片段" and chunk.pages is None


def test_a_pdf_page_read_as_interleaved_glyphs_is_read_in_drawing_order():
    """Journal PDFs whose glyphs of two neighbouring lines overlap come out of a positional reading interleaved;
    the loader then takes the page in drawing order (pypdf), which reads as words. Demo text, not clinical advice."""
    from clincite.ingest.loaders.pdf import _garbled

    first = "低浓度阿托品滴眼液每晚睡前使用一次，常见的不良反应是畏光和看近模糊，多数儿童可以耐受。"
    second = "角膜塑形镜需要每天摘镜后清洗消毒，出现眼红眼痛时应立即停戴并及时到医院复查。"
    drawing_order = (first + second) * 3
    interleaved = "".join(a + b for a, b in zip(first, second)) * 3
    assert _garbled(interleaved, drawing_order)
    assert not _garbled(drawing_order, drawing_order)
    assert not _garbled("表格", drawing_order[:20])  # too little Chinese to tell: the positional reading stays


def _interleaved_pdf(path, pages, header, footer):
    """A PDF whose body lines are drawn in pairs over each other, glyphs interleaved (as on many journal pages), so
    pdfplumber's positional reading is garbled and the loader reads every page in drawing order (pypdf). Each page
    carries a running header with the page number on alternating sides ("· 72 · 杂志…", "杂志… · 73 ·") and a footer."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    pdf = canvas.Canvas(str(path), pagesize=A4)
    height = A4[1]
    for number, (pairs, last) in enumerate(pages, 1):
        mark = f"· {70 + number} ·"
        pdf.setFont("STSong-Light", 9)
        pdf.drawString(50, height - 40, f"{mark} {header}" if number % 2 == 0 else f"{header} {mark}")
        y = height - 120
        for pair in pairs:
            for text, dx, dy in zip(pair, (0, 8), (0, 1)):  # the second line half a glyph to the right
                line = pdf.beginText(50 + dx, y - dy)
                line.setFont("STSong-Light", 8)
                line.setCharSpace(8)
                line.textLine(text)
                pdf.drawText(line)
            y -= 30
        if last:
            pdf.setFont("STSong-Light", 9)
            pdf.drawString(50, y, last)
        pdf.drawString(50, 30, footer)
        pdf.showPage()
    pdf.save()
    return path


def test_running_header_and_footer_are_dropped_from_pages_read_in_drawing_order(tmp_path):
    """Pages read by pypdf have no positions, so their running header and footer are found as lines that recur at
    the start or end of most pages (digits and page-number marks aside); the body stays whole, and a body line that
    recurs at the end of only two of five pages is kept. Demo text, not clinical advice."""
    import pdfplumber
    from pypdf import PdfReader

    from clincite.ingest.loaders.pdf import _garbled, _pypdf_text, _read_page

    header, footer, note = (
        "演示眼科杂志 2026 年 4 月第 3 卷第 2 期 Demo Eye J, Vol. 3, No. 2",
        "仅供演示",
        "注：方案由医生确定。",
    )
    kinds = ["屈光参差性弱视", "斜视性弱视", "形觉剥夺性弱视", "屈光不正性弱视", "双眼弱视"]
    pages = [
        (
            [
                (
                    f"{kind}的治疗应尽早开始，先在睫状肌麻痹验光后配戴合适的眼镜。",
                    f"戴镜后{kind}患儿视力提高停滞时，再由医生决定其他治疗。",
                ),
                (
                    f"{kind}患儿复查时应记录最佳矫正视力、治疗时长和依从情况。",
                    f"家长应按医嘱带{kind}患儿定期复查，不要自行停止治疗。",
                ),
            ],
            note if number in (2, 4) else "",
        )
        for number, kind in enumerate(kinds, 1)
    ]
    path = _interleaved_pdf(tmp_path / "演示杂志.pdf", pages, header, footer)
    reader = PdfReader(str(path))
    with pdfplumber.open(str(path)) as pdf:  # the premise: every page goes the pypdf way
        for number, page in enumerate(pdf.pages, 1):
            lines = _read_page(page, number)[0]
            assert _garbled(" ".join(line.text for line in lines), _pypdf_text(reader, number))

    document = load_document(path)
    assert "演示眼科杂志" not in document.text and "Demo Eye J" not in document.text
    assert footer not in document.text and "· 7" not in document.text
    for pairs, _ in pages:
        for first, second in pairs:
            assert first + second in document.text  # drawn one after the other: one paragraph, nothing between
    assert document.text.count(note) == 2


def test_running_header_inside_the_crop_box_of_a_printers_file_is_dropped(tmp_path):
    """A printer's PDF has a media box larger than the page (bleed, crop marks): the header sits in the top margin of
    the crop box, the page as shown, though below the top tenth of the media box. Demo text, not clinical advice."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import RectangleObject
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    header, bleed, size = "演示眼科杂志 2026 年第 3 卷", 60, (595, 842)
    media = (size[0] + 2 * bleed, size[1] + 2 * bleed)
    bodies = ["弱视治疗应尽早开始，先配戴合适的眼镜。", "遮盖时长由医生根据复查结果调整。", "复查时记录最佳矫正视力。"]
    printed = tmp_path / "printed.pdf"
    pdf = canvas.Canvas(str(printed), pagesize=media)
    for number, body in enumerate(bodies, 1):
        pdf.setFont("STSong-Light", 9)
        pdf.drawString(bleed + 50, media[1] - bleed - 40, f"{header} · {number} ·")  # 100 pt from the media top
        pdf.setFont("STSong-Light", 11)
        pdf.drawString(bleed + 50, media[1] - bleed - 200, body)
        pdf.showPage()
    pdf.save()
    writer = PdfWriter(clone_from=PdfReader(str(printed)))
    for page in writer.pages:
        page.cropbox = RectangleObject((bleed, bleed, bleed + size[0], bleed + size[1]))
    path = tmp_path / "印厂文件.pdf"
    with open(path, "wb") as f:
        writer.write(f)
    assert 0.1 * media[1] < 100  # the premise: below the media box's top margin, inside the crop box's

    document = load_document(path)
    assert "演示眼科杂志" not in document.text
    assert all(body in document.text for body in bodies)
