"""Chapters of popular-science and medical books as reading sites show them: a chapter on vitamin A and night
blindness, a magazine's piece on high myopia, a chapter comparing the eye with a camera, a new book's launch on
diabetic eye disease — asked the way a patient or a clinician tells a sign in everyday words ("一到晚上就看不清东西",
"度数高的近视眼"), names a part by its everyday name (眼皮) or a disease by its wider name (眼底病变), or asks which
part it is (哪个部件) in a word no text writes. Each is answered from what the chapter says, or not at all where it
never says it.

Found on the stop-71 blind library (book chapters on reading sites). The texts here are written for these tests in our
own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import library, tldr

from clincite.offline.lexicon import get_lexicon
from clincite.offline.questions import analyse

NOT_FOUND = "知识库中未找到"

VITAMIN_A = (
    "第6章 维生素A与夜盲症（演示材料）\n\n"
    "上一章 目录 下一章\n\n"
    "维生素A缺乏最早的表现是夜盲症，患者在昏暗的光线下看东西很吃力。"
    "维生素A最好的来源是动物肝脏、蛋黄和奶类，深绿色和橙黄色的蔬菜里含有胡萝卜素，也能在体内变成维生素A。\n"
)

GRATITUDE = (
    "同类推荐（演示材料）\n\n《学会感恩》：感恩的心让我们在生活中不缺少温暖，美好的品格会从你的身体里自然流露出来。\n"
)

HIGH_MYOPIA = (
    "高度近视者的潜在危险（演示材料）\n\n"
    "很多人以为近视只要戴副眼镜就行了。其实高度近视的眼轴过长，眼球壁被拉长变薄，"
    "视网膜也随之变得菲薄，容易出现裂孔，进而发生视网膜脱离，不及时治疗可导致失明。\n"
)

CAMERA = (
    "第三章 眼睛怎样看东西（演示材料）\n\n"
    "眼睛的构造和照相机很像。\n\n"
    "1. 眼睑\n\n"
    "眼睑的作用和照相机的镜头盖和快门相同，既能挡住灰尘，又能限制进入眼睛的光线。\n\n"
    "2. 晶状体\n\n"
    "晶状体相当于照相机的镜头。照相机靠移动镜头对焦，眼睛则靠晶状体变薄变厚来调节焦距。\n"
)

NEW_BOOK = (
    "别让糖尿病夺走视力——新书发布（演示材料）\n\n"
    "我国糖尿病患者越来越多，其中约三成患有糖尿病视网膜病变，估计人数已超过三千万。"
    "这本科普书用问答的形式讲了筛查和治疗。\n"
)

SHELF = {
    "维生素A与夜盲症.txt": VITAMIN_A,
    "同类推荐.txt": GRATITUDE,
    "高度近视者的潜在危险.txt": HIGH_MYOPIA,
    "眼睛与照相机.txt": CAMERA,
    "糖网新书发布.txt": NEW_BOOK,
}


def test_a_sign_told_in_everyday_words_is_asked_by_its_name():
    ask = analyse("一到晚上光线暗就看不清东西，是身体缺了什么？")
    named = {t.text: t for t in ask.terms}
    assert "夜盲症" in named, ask.terms
    # the description's words only tell the sign: none of them is what a passage must name
    assert named["晚上"].scene and named["光线"].scene
    assert "高度近视" in {t.text for t in analyse("为什么度数高的近视眼容易视网膜脱落？").terms}
    assert "飞蚊症" in {t.text for t in analyse("眼前老有小黑点飘来飘去，要紧吗？").terms}
    # a question naming the sign itself gets no second name, and one that describes nothing none at all
    assert "（" not in analyse("高度近视度数很高的人要注意什么？").resolved
    assert "（" not in analyse("晚上开车要注意什么？").resolved


async def test_night_blindness_described_is_answered_by_the_chapter_on_it(tmp_path: Path):
    result = await library(tmp_path, SHELF).ask("一到晚上光线暗就看不清东西，是身体缺了什么？")
    assert "维生素A缺乏" in tldr(result.answer), result.answer[:600]
    assert "感恩" not in result.answer, result.answer[:600]


async def test_high_myopia_told_as_a_high_degree_is_answered(tmp_path: Path):
    result = await library(tmp_path, SHELF).ask("为什么度数高的近视眼容易出现视网膜脱落？")
    assert "眼轴过长" in tldr(result.answer), result.answer[:600]


async def test_the_everyday_name_of_a_part_and_a_kind_no_text_writes(tmp_path: Path):
    # 眼皮 is the 眼睑 a text names; 部件 is the kind of answer wanted, which the chapter gives as 镜头盖和快门
    assert "眼睑" in get_lexicon().variants("眼皮")
    result = await library(tmp_path, SHELF).ask("都说眼睛像照相机，眼皮相当于相机的哪个部件？")
    assert "镜头盖和快门" in tldr(result.answer), result.answer[:600]


async def test_a_disease_of_the_fundus_is_named_by_the_part_it_is_of(tmp_path: Path):
    # 眼底病变 of a diabetic is written 糖尿病视网膜病变 (视网膜 is of the 眼底); a population is no such class
    lex = get_lexicon()
    assert "视网膜病变" in lex.variants("眼底病变")
    assert lex.variants("儿童近视") == ["儿童近视"]
    result = await library(tmp_path, SHELF).ask("得了糖尿病的人里，大概有多大比例会出现眼底病变？")
    assert "约三成" in tldr(result.answer), result.answer[:600]


async def test_a_sign_the_library_never_names_is_still_not_found(tmp_path: Path):
    # floaters are neither named nor described on this shelf
    result = await library(tmp_path, SHELF).ask("眼前老有小黑点飘来飘去，要不要紧？")
    assert NOT_FOUND in tldr(result.answer), result.answer[:600]


def test_a_kind_asked_for_is_the_askers_word_but_a_name_asked_for_is_not():
    # "哪个部件": the chapter names the part; "哪个品牌": a library that names no brand cannot answer
    assert {t.text for t in analyse("眼皮相当于相机的哪个部件？").terms if t.kind} == {"部件"}
    assert not any(t.kind for t in analyse("红光仪具体推荐哪个品牌？").terms)
    # "什么抗真菌眼药水": the word qualifies the drops asked of, no kind of answer
    assert not any(t.kind for t in analyse("真菌性角膜炎应该用什么抗真菌眼药水？").terms)


# 演示材料: a handbook's table of contents as an e-book page shows it, one heading and its page a line
CONTENTS = (
    "".join(
        f"第{chapter}章 {title} {page}\n"
        + "".join(f"{n}、{title}的第{n}部分 {page + i}\n" for i, n in enumerate("一二三四五"))
        for chapter, (title, page) in zip(
            "一二三四五六七八",
            [
                ("眼科基础", 1),
                ("眼屈光学基础", 34),
                ("眼应用光学基础", 71),
                ("验光技术", 90),
                ("眼镜验配", 120),
                ("接触镜", 150),
                ("低视力", 180),
                ("双眼视", 200),
            ],
            strict=True,
        )
    )
    + "第九章 屈光不正的初步检查流程 59\n一、目的和适用范围 59\n二、初步检查的流程及要求 59\n"
    + "第十章 低视力康复 230\n一、"
)


async def test_a_table_of_contents_says_on_which_page_not_what(tmp_path: Path):
    # "一、目的和适用范围 59" has the question's words and says nothing of who the check suits
    result = await library(tmp_path, {"眼视光手册目录.txt": CONTENTS, **SHELF}).ask("屈光不正的初步检查适用于哪些人？")
    assert NOT_FOUND in tldr(result.answer), result.answer[:600]
