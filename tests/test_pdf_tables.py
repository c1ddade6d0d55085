"""Three-line tables (三线表) in PDFs: a top rule, a rule under the header, a bottom rule and no vertical rules, the
way Chinese guidelines set their recommendations. Read as rows with their column names, apart from the running
text; rules that are not a table's (a page's header rule, rules between two columns of text) leave the text alone.

The PDFs are drawn here with reportlab. Their content is demo material (演示): follow-up intervals for adults with
type 2 diabetes in broad strokes (HbA1c every 3 months, every 6 months once stable at target; a yearly eye
examination and urine albumin-to-creatinine ratio), written in our own words; not for clinical use.
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import library, tldr

from clincite.ingest.loaders import load_document

CAPTION = "表1 2型糖尿病随访检查间隔（演示）"
HEADER = ["检查项目", "随访间隔", "说明"]
ROWS = [
    ["糖化血红蛋白", "每3个月", "达标且稳定者每6个月"],
    ["眼底检查", "每年1次", "筛查视网膜病变"],
    ["尿白蛋白/肌酐比值", "每年1次", "筛查糖尿病肾病"],
]
NOTE = "注：本表为演示材料，不可用于临床。"
BODY = "糖尿病患者应定期随访，随访内容包括血糖控制情况和并发症筛查，具体间隔见下表。"
COLUMNS_X = [72, 200, 300]  # where each column's cells start
FONT = "STSong-Light"


def _canvas(path: Path):
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont(FONT))
    return canvas.Canvas(str(path), pagesize=A4), A4[1]


def _rule(pdf, y: float, width: float, x0: float = 72, x1: float = 520) -> None:
    pdf.setLineWidth(width)
    pdf.line(x0, y, x1, y)


def three_line_pdf(path: Path) -> Path:
    """One page: a paragraph, the captioned three-line table, its note."""
    pdf, height = _canvas(path)
    pdf.setFont(FONT, 11)
    pdf.drawString(72, height - 80, BODY)
    pdf.setFont(FONT, 10.5)
    pdf.drawCentredString(296, height - 120, CAPTION)
    y = height - 130
    _rule(pdf, y, 1.2)  # top rule
    pdf.setFont(FONT, 10)
    for x, name in zip(COLUMNS_X, HEADER):
        pdf.drawString(x, y - 15, name)
    _rule(pdf, y - 21, 0.6)  # under the header
    for index, row in enumerate(ROWS):
        for x, cell in zip(COLUMNS_X, row):
            pdf.drawString(x, y - 38 - 18 * index, cell)
    bottom = y - 38 - 18 * (len(ROWS) - 1) - 8
    _rule(pdf, bottom, 1.2)  # bottom rule
    pdf.setFont(FONT, 9)
    pdf.drawString(72, bottom - 16, NOTE)
    pdf.save()
    return path


LEFT = [
    "糖尿病足的预防重在每日检查双足，",
    "发现破溃、红肿应及时就诊，",
    "鞋袜应宽松合脚，避免赤足行走。",
]
RIGHT = [
    "低血糖时应立即进食含糖食物，",
    "十五分钟后复测血糖，",
    "仍低者重复处理并及时就医。",
]


def two_column_pdf(path: Path) -> Path:
    """One page of two-column body text between full-width rules (a running header's rule, a rule across the
    middle, a footer rule): rules and aligned columns, but no caption and no table."""
    pdf, height = _canvas(path)
    pdf.setFont(FONT, 9)
    pdf.drawString(72, height - 50, "演示期刊 2024年第1期")
    _rule(pdf, height - 56, 0.6)
    pdf.setFont(FONT, 10.5)
    for block, top in enumerate((height - 90, height - 200)):
        if block:
            _rule(pdf, top + 20, 0.6)
        for index, (left, right) in enumerate(zip(LEFT, RIGHT)):
            pdf.drawString(72, top - 16 * index, left)
            pdf.drawString(310, top - 16 * index, right)
    _rule(pdf, 60, 0.6)
    pdf.save()
    return path


def test_a_three_line_table_is_read_as_rows_with_its_column_names(tmp_path):
    document = load_document(three_line_pdf(tmp_path / "随访（演示）.pdf"))
    lines = document.text.splitlines()
    assert CAPTION in lines, document.text  # the caption is a line of its own
    # Each row says which table it is from (its caption's title) and what each value is.
    title = "表1：2型糖尿病随访检查间隔（演示）"
    assert f"{title} | 检查项目：眼底检查 | 随访间隔：每年1次 | 说明：筛查视网膜病变" in lines, document.text
    assert f"{title} | 检查项目：糖化血红蛋白 | 随访间隔：每3个月 | 说明：达标且稳定者每6个月" in lines, document.text
    assert "眼底检查每年1次" not in document.text  # no cells glued together as running text
    assert document.text.count("筛查糖尿病肾病") == 1  # each cell read once, with its table
    assert NOTE in lines and BODY in lines  # the note and the paragraph stay text, apart from the table


def test_rules_between_two_columns_of_text_are_no_table(tmp_path):
    document = load_document(two_column_pdf(tmp_path / "两栏（演示）.pdf"))
    assert " | " not in document.text and "：" not in document.text, document.text
    for line in LEFT + RIGHT:  # every line of text is still text (the columns' reading order is not tested here)
        assert line in document.text, document.text


async def test_a_question_answered_by_a_three_line_table_row_gets_that_row(tmp_path):
    service = library(tmp_path, {"随访（演示）.pdf": three_line_pdf(tmp_path / "table.pdf").read_bytes()})
    result = await service.ask("2型糖尿病患者多久做一次眼底检查？")
    lead = tldr(result.answer)
    assert "检查项目：眼底检查" in lead and "随访间隔：每年1次" in lead, lead  # the row, with its column names
