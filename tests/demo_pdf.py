"""A three-page demo guideline PDF with a ruled table on page 2, made with reportlab (demo material, 演示).

    python tests/demo_pdf.py out.pdf

The topic (occlusion therapy of childhood amblyopia) is absent from sample_kb/, so a question about it is answered
from this document alone, and abstains once the document is deleted. The figures follow the PEDIG amblyopia
treatment studies (ATS2, 2003): for moderate amblyopia two hours of daily patching did about as well as six, and for
severe amblyopia six hours did about as well as full-time patching. Written in our own words; not for clinical use.
"""

from __future__ import annotations

import sys
from pathlib import Path

TITLE = "儿童弱视遮盖治疗要点（演示）"
FILE_NAME = "儿童弱视遮盖治疗要点（演示）.pdf"
# The question a clinician asks of page 2, and what the answer must contain.
QUESTION = "中度弱视儿童每天遮盖多少小时？"
PAGE_2_FACT = "每日遮盖2小时"

PAGES = [
    [
        ("h1", TITLE),
        ("p", "本文件为软件演示材料，内容根据公开的临床研究结论改写，不可直接用于临床决策。"),
        ("h2", "一、弱视的定义"),
        (
            "p",
            "弱视是视觉发育期内由于单眼斜视、屈光参差、高度屈光不正或形觉剥夺等异常视觉经验引起的"
            "单眼或双眼最佳矫正视力低于相应年龄正常值，或双眼最佳矫正视力相差两行及以上，"
            "且眼部检查无器质性病变。",
        ),
        ("h2", "二、治疗原则"),
        (
            "p",
            "弱视治疗应尽早开始。首先应在睫状肌麻痹验光的基础上配戴合适的眼镜，进行屈光矫正；"
            "相当一部分儿童单纯戴镜数周至数月后视力即有提高。戴镜后视力提高停滞，"
            "且双眼视力仍有差距时，再加用遮盖或压抑治疗。",
        ),
    ],
    [
        ("h2", "三、遮盖治疗的时长"),
        (
            "p",
            "遮盖治疗是用眼贴遮盖视力较好的眼，迫使弱视眼注视。多中心随机对照研究显示，"
            "中度弱视（最佳矫正视力20/40至20/80）的儿童每日遮盖2小时，与每日遮盖6小时的视力提高相近；"
            "重度弱视（最佳矫正视力20/100至20/400）的儿童每日遮盖6小时，与全天遮盖的效果相近。",
        ),
        (
            "table",
            [
                ["弱视程度", "最佳矫正视力", "建议起始遮盖时长"],
                ["中度", "20/40至20/80", "每日遮盖2小时"],
                ["重度", "20/100至20/400", "每日遮盖6小时"],
            ],
        ),
        (
            "p",
            "遮盖期间鼓励儿童进行需要精细视力的近距离活动，例如阅读、绘画或拼图。"
            "遮盖时长应由眼科医生根据年龄、弱视程度和复查结果调整。",
        ),
    ],
    [
        ("h2", "四、随访与注意事项"),
        (
            "p",
            "开始遮盖治疗后一般每4至8周复查一次，检查双眼视力和依从性。"
            "年龄较小的儿童应注意被遮盖眼的视力，警惕遮盖性弱视；一旦出现应及时调整方案。",
        ),
        (
            "p",
            "视力提高并稳定后，不宜骤然停止遮盖，应在数周至数月内逐渐减少遮盖时间，"
            "停止治疗后仍需定期随访，以便及早发现弱视复发。",
        ),
    ],
]


def _font() -> str:
    """A Chinese font reportlab can write with: WenQuanYi Zen Hei when installed (embedded subset), else the
    built-in Adobe CID font STSong-Light."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfbase.ttfonts import TTFont

    wqy = Path("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc")
    if wqy.exists():
        pdfmetrics.registerFont(TTFont("WQY", str(wqy), subfontIndex=0))
        return "WQY"
    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    return "STSong-Light"


def make_demo_pdf(path: Path) -> Path:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    font = _font()
    styles = {
        "h1": ParagraphStyle("h1", fontName=font, fontSize=18, leading=26, spaceAfter=12),
        "h2": ParagraphStyle("h2", fontName=font, fontSize=14, leading=20, spaceBefore=8, spaceAfter=6),
        "p": ParagraphStyle("p", fontName=font, fontSize=11, leading=18, wordWrap="CJK", spaceAfter=6),
    }

    def footer(canvas, document) -> None:
        canvas.saveState()
        canvas.setFont(font, 9)
        canvas.drawCentredString(A4[0] / 2, 28, f"演示材料，不可用于临床 · 第 {document.page} 页")
        canvas.restoreState()

    story = []
    for number, page in enumerate(PAGES):
        if number:
            story.append(PageBreak())
        for kind, content in page:
            if kind == "table":
                table = Table(content, colWidths=[90, 150, 150])
                table.setStyle(
                    TableStyle(
                        [
                            ("FONTNAME", (0, 0), (-1, -1), font),
                            ("FONTSIZE", (0, 0), (-1, -1), 11),
                            ("GRID", (0, 0), (-1, -1), 0.8, colors.black),
                            ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e2e8f0")),
                            ("TOPPADDING", (0, 0), (-1, -1), 5),
                            ("BOTTOMPADDING", (0, 0), (-1, -1), 5),
                        ]
                    )
                )
                story += [Spacer(1, 6), table, Spacer(1, 10)]
            else:
                story.append(Paragraph(content, styles[kind]))
    path.parent.mkdir(parents=True, exist_ok=True)
    SimpleDocTemplate(str(path), pagesize=A4, title=TITLE, author="ClinCite 演示").build(
        story, onFirstPage=footer, onLaterPages=footer
    )
    return path


if __name__ == "__main__":
    print(make_demo_pdf(Path(sys.argv[1] if len(sys.argv) > 1 else FILE_NAME)))
