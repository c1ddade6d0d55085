"""Study notes written as an outline: almost nothing but nested bullets ("圆锥角膜" › "症状" › "青春期前后视力下降"),
a comparison grid whose corner cell is empty, terse "病因：…" lines. The nesting is what says whose 症状 a line is, so
an item that is a label heads its sub-items as a heading would; a grid's row label stays with every value of its row.
And the everyday questions such notes get: what a sign points to ("提示哪里出了问题"), whether a lump is an
infection, how one feels after using a drop.

Found on the stop-50 blind library (a medical student's revision outline of ophthalmology in Markdown). The notes
here are written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_drug_monographs import OLOPATADINE, as_json_string
from test_other_styles import conclusion, library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders.base import table_lines
from clincite.ingest.loaders.markdown import load_markdown

CORNEA_NOTES = """# 角膜病（演示笔记）

## 角膜先天异常
1. 圆锥角膜
    - 症状
        - 多在青春期前后出现视力下降
        - 进行性不规则散光
        - Munson 征
    - 治疗：早期配框架眼镜或硬性透气性接触镜，进展期角膜交联，晚期角膜移植

## 角膜炎
1. 鉴别诊断

    |          | 细菌性角膜炎   | 真菌性角膜炎   |
    |----------|----------------|----------------|
    | 诱因     | 外伤、戴接触镜 | 植物性外伤     |
    | 前房积脓 | 稀薄，可见液平 | 黏稠，常无液平 |

1. 治疗：控制感染
"""

NEURO_NOTES = """# 视觉障碍（演示笔记）

1. 视野缺损 <!--IMPORTANT-->
    - 双眼颞侧偏盲：多见于视交叉病变，如垂体瘤
    - 同向性偏盲：见于视交叉以后的视路病变
1. 眼肌麻痹
    - 动眼神经麻痹
        - 上睑下垂
        - 瞳孔散大
"""

EYELID_NOTES = """# 眼睑病（演示笔记）

## 睑板腺囊肿（霰粒肿）
1. 病因：睑板腺出口阻塞，分泌物潴留形成的无菌性慢性肉芽肿
1. 特点：无痛性结节，与皮肤不粘连
1. 治疗：小的可热敷观察，大的手术刮除

## 睑腺炎（麦粒肿）
1. 病因：细菌感染，多为金黄色葡萄球菌
1. 治疗：早期热敷，局部抗生素
"""


def section_text(document, path: list[str]) -> str:
    return "".join(document.text[s.start : s.end] for s in document.sections if s.heading_path == path)


def test_an_outline_item_that_is_a_label_heads_its_sub_items():
    document = load_markdown(CORNEA_NOTES, "角膜病")
    assert "青春期前后" in section_text(document, ["角膜先天异常", "圆锥角膜", "症状"])
    # the label's sibling after its sub-items is under the label's parent again, not under 症状
    assert "角膜交联" in section_text(document, ["角膜先天异常", "圆锥角膜"])
    assert "角膜交联" not in section_text(document, ["角膜先天异常", "圆锥角膜", "症状"])
    assert document.text.count("圆锥角膜") == 1  # a heading is the item's line as written, once


def test_a_list_of_sentences_with_sub_items_stays_one_list():
    guide = """# 就诊提示（演示）

- 出现以下情况应尽快就诊：
    - 视力突然下降
    - 眼痛伴头痛、恶心
- 戴镜后眼红、畏光时，先停戴，再复查。
"""
    document = load_markdown(guide, "就诊提示")
    assert [s.heading_path for s in document.sections if document.text[s.start : s.end].strip()] == [[]]
    assert "出现以下情况应尽快就诊：\n视力突然下降\n眼痛伴头痛、恶心\n戴镜后眼红" in document.text


def test_a_comparison_grid_with_an_empty_corner_labels_each_row():
    rows = [["", "细菌性角膜炎", "真菌性角膜炎"], ["诱因", "外伤", "植物性外伤"], ["前房积脓", "稀薄", ""]]
    assert table_lines(rows) == [
        "细菌性角膜炎 | 真菌性角膜炎",
        "诱因 | 细菌性角膜炎：外伤 | 真菌性角膜炎：植物性外伤",
        "前房积脓 | 细菌性角膜炎：稀薄",
    ]
    assert table_lines([["\\", "A", "B"], ["症状", "眼痛", "眼痒"]])[1] == "症状 | A：眼痛 | B：眼痒"


def outline_library(tmp_path: Path):
    return library(
        tmp_path,
        {
            "角膜病.md": CORNEA_NOTES,
            "视觉障碍.md": NEURO_NOTES,
            "眼睑病.md": EYELID_NOTES,
            "奥洛他定.json": as_json_string(OLOPATADINE),
        },
    )


async def test_an_age_asked_is_answered_by_a_stage_of_life(tmp_path: Path):
    service = outline_library(tmp_path)
    result = await service.ask("圆锥角膜一般什么年纪开始视力下降？")
    assert "青春期前后" in tldr(result.answer), result.answer
    assert "前房积脓" not in result.answer  # the note's other sections are not the answer


async def test_what_a_sign_points_to_is_the_line_that_names_it(tmp_path: Path):
    service = outline_library(tmp_path)
    result = await service.ask("双眼颞侧偏盲一般提示哪里出了问题？")
    assert "视交叉病变" in tldr(result.answer), result.answer
    assert "动眼神经" not in tldr(result.answer)


async def test_whether_a_lump_is_an_infection_asks_its_cause(tmp_path: Path):
    service = outline_library(tmp_path)
    result = await service.ask("眼皮上长了个不痛的小疙瘩，医生说是霰粒肿，这是细菌感染吗？")
    said = tldr(result.answer) + conclusion(result.answer)
    assert "无菌性慢性肉芽肿" in said, result.answer
    assert "金黄色葡萄球菌" not in said  # 麦粒肿's cause is another lump's


async def test_a_row_of_a_grid_answers_for_the_column_asked(tmp_path: Path):
    service = outline_library(tmp_path)
    result = await service.ask("真菌性角膜炎的前房积脓有什么特点？")
    assert "真菌性角膜炎：黏稠，常无液平" in tldr(result.answer), result.answer
    assert "植物性外伤" not in tldr(result.answer)  # the row asked, not the whole grid


async def test_how_one_may_feel_after_using_a_drop_asks_its_adverse_reactions(tmp_path: Path):
    service = outline_library(tmp_path)
    first = "奥洛他定滴眼液一天点几次？"
    turns = [
        ChatTurn(role="user", content=first),
        ChatTurn(role="assistant", content=(await service.ask(first)).answer),
    ]
    result = await service.ask("那点完眼睛可能会有啥不舒服？", turns)
    assert "烧灼感" in tldr(result.answer) + conclusion(result.answer), result.answer


async def test_which_treatment_comes_first_is_asked_of_a_text_that_never_says_first_choice(tmp_path: Path):
    squint = """# 儿童斜视（演示笔记）

## 调节性内斜视
多在1～3岁出现，与未矫正的远视有关。
配戴足矫远视的眼镜往往就能使眼位变正，这通常是第一步。

## 婴儿型内斜视
出生后6个月内出现，斜视角大，多需手术矫正。
"""
    service = library(tmp_path, {"儿童斜视.md": squint, "角膜病.md": CORNEA_NOTES, "眼睑病.md": EYELID_NOTES})
    result = await service.ask("调节性内斜视一般几岁出现，首选怎么处理？")  # 首选 is in no text: it never decides
    said = tldr(result.answer) + conclusion(result.answer)
    assert "1～3岁出现" in said and "配戴足矫远视的眼镜" in said, result.answer


async def test_a_list_of_sources_is_no_answer_whatever_its_heading_says(tmp_path: Path):
    tips = """# 护眼小贴士（演示）

## 户外活动
每天户外活动2小时以上，有助于预防近视。

## 参考来源
1. 某眼科学会（演示）. "屏幕时间与儿童视力：家长手册." 2020.
2. 某卫生部门（演示）. "儿童屏幕时间建议." 2021.
"""
    service = library(tmp_path, {"护眼小贴士.md": tips, "角膜病.md": CORNEA_NOTES, "眼睑病.md": EYELID_NOTES})
    result = await service.ask("儿童屏幕时间建议是怎么说的？")
    assert "家长手册" not in result.answer and "2021" not in tldr(result.answer), result.answer


async def test_two_parts_answered_by_two_rows_of_one_grid_get_each_its_row(tmp_path: Path):
    redness = """# 结膜病（演示笔记）

## 充血的鉴别
1. 结膜充血与睫状充血

    |          | 结膜充血     | 睫状充血                           |
    |----------|--------------|------------------------------------|
    | 颜色     | 鲜红         | 暗红                               |
    | 部位     | 近穹窿部明显 | 近角膜缘明显                       |
    | 临床意义 | 多见于结膜炎 | 多见于角膜炎、虹膜睫状体炎、急性青光眼 |
"""
    service = library(tmp_path, {"结膜病.md": redness, "角膜病.md": CORNEA_NOTES, "眼睑病.md": EYELID_NOTES})
    result = await service.ask("睫状充血一般提示哪些病？和结膜充血颜色上有什么不同？")
    said = tldr(result.answer)
    assert "虹膜睫状体炎" in said and "暗红" in said, result.answer
    assert "近穹窿部明显" not in said  # the rows asked, not the grid
    assert result.answer.count("原文：") == 1  # one quote, cited once for both parts


def test_an_outline_nested_deeper_than_a_parser_reads_loses_no_line():
    for depth in (30, 400):  # a mind map's export; a hostile file
        outline = "".join("    " * level + f"- 第{level}层\n" for level in range(depth))
        document = load_markdown("# 导图（演示）\n\n" + outline, "导图")
        missing = [level for level in range(depth) if f"第{level}层" not in document.text]
        assert not missing, (depth, missing[:5])
