"""Three more ways real libraries are written (found on blind libraries nobody on the team wrote, stop 33):

- a guideline's text copied out of its PDF into a .txt: lines wrapped at the page width, page numbers on lines of
  their own, justified lines letter-spaced ("目 前 是 我 国"), headings numbered 一、/（一）;
- a web page's text saved line by line at every inline tag ("直径\\n~\\n4nm\\n。");
- a blog post exported to Markdown with its HTML page inside (front matter, then <h2>/<p>);
- a clinic in Taiwan or Hong Kong writing in Traditional characters, asked in either script.

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

import pytest
from test_other_styles import conclusion, library, tldr

from clincite.ingest.loaders import load_document
from clincite.text.script import fold

WRAPPED_TXT = """关于印发儿童屈光检查规范（演示）的通知
1
附件
儿童屈光检查规范（演示）
一、概述
本规范为演示材料，用于说明儿童屈光检查的一般流程，不作为临床依据。儿童的调节力较
强，未使用睫状肌麻痹剂时验光结果容易偏向近视，因此初次验光和可疑病例应在睫状肌麻痹
下进行。
二、睫状肌麻痹验光
（一）适用人群
初 次 验 光 的 儿 童 、 远 视 或 斜 视 儿 童 以 及 矫 正 视 力 不 达 标
者，应当在睫状肌麻痹下验光。
2
（二）用药方法
1.环喷托酯滴眼液：每 5 分钟滴 1 次，共 2 次，末次滴药后 30 分钟
至 60 分钟验光。
2.阿托品眼用凝胶：每日 2 次，连续 3 天至 5 天后验光，适用于内斜视
儿童。
三、复查
验光后应在 1 个月至 3 个月内复查，远视储备不足的儿童宜缩短复查间
隔。
"""

FRAGMENTED_TXT = """儿童腹泻补液要点（演示）
一、补液原则
轻中度脱水
首选
口服补液盐
，不能口服或重度脱水者给予
静脉补液
。
二、饮食
腹泻期间
继续
母乳喂养
，不必禁食。
"""


def test_a_guideline_copied_out_of_its_pdf_reads_as_paragraphs_under_its_headings(tmp_path):
    path = tmp_path / "儿童屈光检查规范（演示）.txt"
    path.write_text(WRAPPED_TXT, encoding="utf-8")
    document = load_document(path)
    text = document.text
    # wrapped lines joined, letter-spacing and page numbers gone
    assert "儿童的调节力较强，未使用睫状肌麻痹剂时验光结果容易偏向近视" in text
    assert "初次验光的儿童、远视或斜视儿童以及矫正视力不达标者，应当在睫状肌麻痹下验光。" in text
    assert "\n2\n" not in text and "\n1\n" not in text
    # the numbered headings are sections; a numbered item that wraps on is a paragraph of its own
    paths = [section.heading_path for section in document.sections]
    assert ["二、睫状肌麻痹验光", "（二）用药方法"] in paths
    assert ["三、复查"] in paths
    assert "1.环喷托酯滴眼液：每 5 分钟滴 1 次，共 2 次，末次滴药后 30 分钟至 60 分钟验光。" in text
    assert "\n\n2.阿托品眼用凝胶" in text


def test_a_web_page_saved_at_every_tag_reads_as_sentences(tmp_path):
    path = tmp_path / "儿童腹泻补液要点（演示）.txt"
    path.write_text(FRAGMENTED_TXT, encoding="utf-8")
    text = load_document(path).text
    assert "轻中度脱水首选口服补液盐，不能口服或重度脱水者给予静脉补液。" in text
    assert "腹泻期间继续母乳喂养，不必禁食。" in text


def test_a_text_of_one_paragraph_per_line_keeps_its_paragraphs(tmp_path):
    lines = [
        "户外活动与近视（演示）",
        "每天在户外活动两小时，有助于减少儿童近视的发生，这是多项研究一致的方向。",
        "阳光下的高照度可能促进视网膜多巴胺释放，从而抑制眼轴过快增长。",
        "户外活动不能代替已近视儿童的光学矫正。",
    ]
    path = tmp_path / "户外活动与近视（演示）.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    text = load_document(path).text
    for line in lines[1:]:
        assert f"\n\n{line}" in text  # each its own paragraph, none run into the next


async def test_a_wrapped_guideline_answers_a_number_question(tmp_path):
    service = library(tmp_path, {"儿童屈光检查规范（演示）.txt": WRAPPED_TXT})
    result = await service.ask("环喷托酯散瞳验光，末次滴药后多久可以验光？")
    assert "30 分钟至 60 分钟" in tldr(result.answer) + conclusion(result.answer)
    bare = "".join(WRAPPED_TXT.split())
    assert result.citations and all(c.verified and "".join(c.quote.split()) in bare for c in result.citations)


BLOG_EXPORT = """---
title: "隐形眼镜过夜戴有多危险（演示）"
tags: ["隐形眼镜", "角膜炎"]
---

## 文章摘要
> 一位配戴者过夜戴镜后角膜感染的案例（演示）。

---

## 完整文章内容

<!DOCTYPE html>
<html lang="zh">
<head>
<title>隐形眼镜过夜戴有多危险（演示）</title>
<style>
.post-body img{max-width:100%}
</style>
</head>
<body>
<h2>为什么按时点药还会加重</h2>
<p>细菌可以在镜片和角膜表面形成<strong>生物膜</strong>，抗生素难以穿透这层保护膜，所以有人按时点药，病情仍然加重（演示）。</p>

<h2>怎样降低风险</h2>
<p>不要戴镜过夜，护理液每天更换，镜盒定期更换（演示）。</p>
</body>
</html>
"""


def test_the_html_page_inside_a_markdown_export_is_its_text(tmp_path):
    path = tmp_path / "overnight-lens.md"
    path.write_text(BLOG_EXPORT, encoding="utf-8")
    document = load_document(path)
    assert document.title == "隐形眼镜过夜戴有多危险（演示）"
    assert "抗生素难以穿透这层保护膜" in document.text
    assert "<p>" not in document.text and "max-width" not in document.text
    assert ["为什么按时点药还会加重"] in [section.heading_path for section in document.sections]


async def test_a_blog_export_answers_from_its_html_body(tmp_path):
    service = library(tmp_path, {"overnight-lens.md": BLOG_EXPORT})
    result = await service.ask("隐形眼镜引起的角膜感染，为什么按时点抗生素还会加重？")
    assert "生物膜" in tldr(result.answer) + conclusion(result.answer)


TRADITIONAL = """# 散瞳檢查須知（演示）

## 檢查後注意事項

散瞳後瞳孔放大，約需 4 至 6 小時才會恢復，期間畏光、看近模糊，檢查完當天不要自己開車回家（演示）。

## 適用對象

需要檢查眼底或驗光的病人。
"""


@pytest.mark.parametrize(
    "question",
    ["散瞳检查完当天可以自己开车回家吗？", "散瞳檢查完當天可以自己開車回家嗎？"],
    ids=["asked-in-simplified", "asked-in-traditional"],
)
async def test_a_traditional_library_answers_in_either_script_quoting_its_own_characters(tmp_path, question):
    service = library(tmp_path, {"散瞳檢查須知（演示）.md": TRADITIONAL})
    result = await service.ask(question)
    said = tldr(result.answer) + conclusion(result.answer)
    assert "當天不要自己開車回家" in said  # the document's own characters, not a Simplified rewrite
    assert result.citations and all(c.verified and c.quote in TRADITIONAL for c in result.citations)


def test_folding_keeps_every_offset():
    text = "兒童近視與乾眼症：每日配戴不超過 8 小時。"
    assert fold(text) == "儿童近视与干眼症：每日配戴不超过 8 小时。"
    assert len(fold(text)) == len(text)
    assert fold("近视防控") == "近视防控"
