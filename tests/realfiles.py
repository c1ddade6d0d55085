"""Real guideline-like files made by the tests: a 3-page Chinese PDF, a DOCX, an HTML page, Big5/GB18030/UTF-16 texts.

All medical content here is demo material (演示), written for these tests; it is deliberately plain and conservative.
"""

from __future__ import annotations

from pathlib import Path

PDF_NAME = "儿童近视防控指南（演示）.pdf"
DOCX_NAME = "阿托品用药方案（演示）.docx"
HTML_NAME = "3089kp01.html"  # an identifier-like file name, as exported by a hospital web site
HTML_TITLE = "角膜塑形镜护理须知（演示）"
BIG5_NAME = "近視防控衛教（演示）.txt"
GB18030_NAME = "红光治疗注意事项（演示）.txt"
UTF16_NAME = "散瞳验光说明（演示）.txt"

PDF_HEADER = "儿童近视防控指南（演示） 内部学习资料"
PDF_PAGE3_SENTENCE = "高度近视儿童建议每年至少进行一次散瞳眼底检查，重点观察视网膜周边变性和黄斑区改变。"
PDF_TABLE_ROW = "浓度：0.01% | 用法：每晚睡前每眼1滴 | 复查间隔：每3至6个月"
DOCX_ROW = "体重：20–30 kg | 演示剂量：每次 250 mg | 给药间隔：每 12 小时"
HTML_ROW = "护理步骤：揉搓清洗 | 要点：每次摘镜后用护理液揉搓镜片两面各20秒"
BIG5_TEXT = "戶外活動是預防兒童近視的重要措施，建議每天戶外活動時間累計達到兩小時。"
GB18030_TEXT = "重复低强度红光治疗期间应定期复查眼底，如出现持续畏光或视物异常应暂停治疗并就诊。"
UTF16_TEXT = "儿童首次验光建议在睫状肌麻痹下进行，以排除调节因素造成的假性近视。"

_LONG_1 = (
    "近视是儿童和青少年最常见的屈光不正。近视发生越早，成年后发展为高度近视的风险越高，因此防控的重点是推迟近视"
    "发生并减缓其进展速度。本指南为演示资料，仅用于软件测试，不构成任何诊疗建议，临床决策请以正式发布的指南为准。"
)
_LONG_2 = (
    "儿童应建立屈光发育档案，定期检查视力、屈光度和眼轴长度。眼轴长度的增长速度比单次验光结果更能反映近视进展，"
    "复查时应使用同一台仪器测量，以便前后比较。"
)
_LONG_3 = (
    "低浓度阿托品滴眼液是延缓儿童近视进展的常用药物之一。用药前应向家长说明可能出现的畏光和近距离视物模糊，"
    "多数儿童可以耐受；如出现过敏反应，应停药并及时就诊。"
)
_LONG_4 = (
    "高度近视的儿童和青少年眼底并发症的风险较高。"
    + PDF_PAGE3_SENTENCE
    + "发现视网膜裂孔等病变时，应转诊至眼底病专科进一步处理。"
)


def make_pdf(path: Path) -> Path:
    """Three A4 pages: a running header and a page-number footer on each, a ruled table on page 2."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    body = ParagraphStyle("body", fontName="STSong-Light", fontSize=11, leading=17, wordWrap="CJK", spaceAfter=10)
    h1 = ParagraphStyle("h1", parent=body, fontSize=18, leading=24, spaceAfter=14)
    h2 = ParagraphStyle("h2", parent=body, fontSize=14, leading=20, spaceAfter=8)

    def furniture(canvas, doc):
        canvas.saveState()
        canvas.setFont("STSong-Light", 9)
        canvas.drawString(20 * mm, A4[1] - 12 * mm, PDF_HEADER)
        canvas.drawCentredString(A4[0] / 2, 10 * mm, f"第 {doc.page} 页 共 3 页")
        canvas.restoreState()

    table = Table(
        [
            ["浓度", "用法", "复查间隔"],
            ["0.01%", "每晚睡前每眼1滴", "每3至6个月"],
            ["0.05%", "每晚睡前每眼1滴", "每3个月"],
        ],
        colWidths=[30 * mm, 60 * mm, 40 * mm],
    )
    table.setStyle(
        TableStyle([("FONT", (0, 0), (-1, -1), "STSong-Light", 10), ("GRID", (0, 0), (-1, -1), 0.5, colors.black)])
    )
    story = [
        Paragraph("儿童近视防控指南（演示）", h1),
        Paragraph("一、概述", h2),
        Paragraph(_LONG_1, body),
        Paragraph(_LONG_2, body),
        PageBreak(),
        Paragraph("二、低浓度阿托品", h2),
        Paragraph(_LONG_3, body),
        Paragraph("演示用的浓度、用法与复查间隔见下表。", body),
        table,
        Spacer(1, 8 * mm),
        PageBreak(),
        Paragraph("三、高度近视的随访", h2),
        Paragraph(_LONG_4, body),
    ]
    SimpleDocTemplate(str(path), pagesize=A4, title="", topMargin=25 * mm, bottomMargin=25 * mm).build(
        story, onFirstPage=furniture, onLaterPages=furniture
    )
    return path


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("阿托品用药方案（演示）", level=0)
    document.add_heading("适用范围", level=1)
    document.add_paragraph("本文件为软件测试用的演示资料，剂量数值均为虚构，不得用于临床。")
    document.add_heading("按体重的演示剂量", level=1)
    document.add_paragraph("下表按体重列出演示剂量与给药间隔。")
    table = document.add_table(rows=1, cols=3)
    for cell, text in zip(table.rows[0].cells, ["体重", "演示剂量", "给药间隔"]):
        cell.text = text
    for row in [
        ("10–20 kg", "每次 125 mg", "每 12 小时"),
        ("20–30 kg", "每次 250 mg", "每 12 小时"),
        ("30 kg 以上", "每次 500 mg", "每 12 小时"),
    ]:
        for cell, text in zip(table.add_row().cells, row):
            cell.text = text
    document.add_heading("注意事项", level=1)
    document.add_paragraph("用药期间如出现皮疹或呼吸困难，应立即停药并就医。")
    document.save(str(path))
    return path


def make_html(path: Path) -> Path:
    path.write_text(
        f"""\ufeff<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{HTML_TITLE} - 某某眼科医院</title></head>
<body><header><nav><a href="/">首页</a> | <a href="/ks">科室介绍</a> | <a href="/zj">专家团队</a>
| <a href="/gh">预约挂号</a></nav></header>
<aside><h3>热门文章</h3><ul><li><a href="/a">医院新闻一则</a></li><li><a href="/b">医院新闻二则</a></li></ul></aside>
<main><article><h1>{HTML_TITLE}</h1>
<p>角膜塑形镜需要每天规范护理，护理不当会增加角膜感染的风险。本页为演示资料，仅用于软件测试。</p>
<h2>日常护理步骤</h2>
<p>下表列出演示用的护理步骤与要点。</p>
<table><tr><th>护理步骤</th><th>要点</th></tr>
<tr><td>揉搓清洗</td><td>每次摘镜后用护理液揉搓镜片两面各20秒</td></tr>
<tr><td>冲洗</td><td>用护理液冲洗，不得使用自来水</td></tr>
<tr><td>镜盒更换</td><td>镜盒每三个月更换一次</td></tr></table>
<h2>何时就诊</h2>
<p>出现眼红、眼痛、分泌物增多或视力下降时，应立即停戴并就诊。</p>
</article></main>
<footer>版权所有 © 2024 某某眼科医院 | 备案号 00000000 | 联系电话 000-0000000</footer></body></html>
""",
        encoding="utf-8",
    )
    return path


def make_texts(folder: Path) -> list[Path]:
    big5 = folder / BIG5_NAME
    big5.write_bytes(("近視防控衛教（演示）\n\n" + BIG5_TEXT + "\n本文為演示資料，僅供軟體測試。\n").encode("big5"))
    gb = folder / GB18030_NAME
    gb.write_bytes(
        ("红光治疗注意事项（演示）\n\n" + GB18030_TEXT + "\n本文为演示资料，仅供软件测试。\n").encode("gb18030")
    )
    utf16 = folder / UTF16_NAME
    # Windows Notepad "Unicode": UTF-16-LE with a BOM and CRLF line ends, plus a stray control character.
    utf16.write_bytes(b"\xff\xfe" + ("散瞳验光说明（演示）\r\n\r\n" + UTF16_TEXT + "\x07\r\n").encode("utf-16-le"))
    return [big5, gb, utf16]


def make_all(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "pdf": make_pdf(folder / PDF_NAME),
        "docx": make_docx(folder / DOCX_NAME),
        "html": make_html(folder / HTML_NAME),
    }
    files.update(zip(("big5", "gb18030", "utf16"), make_texts(folder)))
    return files
