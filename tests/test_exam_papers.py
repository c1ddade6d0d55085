"""A clinic's exam papers and question banks (found on the stop-43 blind library: medical students' ophthalmology
exam papers in Word, one question after another with its options and "答案：D"), and a patient who tells a story
before asking:

- a multiple-choice item says its stem with the option its key names: the item with "D. 角膜基质内可见卫星灶和免疫
  环" and "答案：D" answers "真菌性角膜炎有什么特征性表现", never the item before it on another disease;
- an explanation on the key's line ("答案：D  解析：…其中眶内段最长") is part of what the item says and is quoted
  with it;
- an item whose question ("最可能的诊断是：") follows its case on the line before ("5. 患者，男，68岁，…樱桃红斑。")
  is read from the case;
- an item without a key answers nothing, and a guideline's lettered list (no question over it) is still a list;
- options cut apart from their item by a passage's bounds ("B. …" with no stem) are no answer either;
- a case analysis's answer that names the disease only in the line before ("（1）临床诊断：视网膜中央动
  脉阻塞"; "（2）…黄金窗口期…90～120分钟") answers "查出来是视网膜中央动脉阻塞，最好在多长时间内抢救？":
  the passage writes the question's very phrase, so its words (视网膜 … 动脉) are spoken of together
  there; 最好、查出来 only frame the question;
- an exam's questions and tasks are no answer, its marks and notes aside ("（1）…是什么？（4分）", "2. 简述…的鉴别要
  点。", "问题1（诊断）：…", "…是什么？请写出诊断依据。"); the reference answer after them is;
- "等一下要散瞳查眼底，检查完当天可以开车吗？": 散瞳 and 眼底 place the question, the asking clause (开车) picks the
  sentence; and words on either side of a comma never make one term (查眼底，检查 is no 眼底检查).

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import library, tldr

from clincite.offline.questions import analyse
from clincite.text.choices import choice_items, stray_options

EXAM_PAPER = """# 眼科期末练习题（演示）

本文为演示材料，用于软件测试，不作为临床依据。

1. 春季角结膜炎睑结膜的典型体征是
A. 滤泡形成
B. 结膜乳头呈铺路石样
C. 伪膜形成
D. 结膜下出血
答案：B

2. 真菌性角膜炎的特征性临床表现是
A. 角膜溃疡呈地图状
B. 角膜溃疡呈树枝状
C. 角膜溃疡呈匍行性进展
D. 角膜基质内可见卫星灶和免疫环
答案：D
解析：真菌性角膜炎病灶致密、表面干燥，周围可见伪足、卫星灶和免疫环。

3. 单纯疱疹病毒性角膜炎上皮型的典型表现是 A. 树枝状溃疡 B. 卫星灶 C. 前房积脓 D. 角膜穿孔
答案：A

4. 关于视神经的解剖分段，眶内段的长度约为？
A. 1mm
B. 9mm
C. 16mm
D. 25mm
答案：D  解析：视神经分为眼内段、眶内段、管内段和颅内段四段，其中眶内段最长，约25mm。
"""

UNKEYED = """# 眼科自测题（演示）

本文为演示材料，用于软件测试，不作为临床依据。

下列哪项是细菌性角膜炎最常见的致病菌？
A. 铜绿假单胞菌
B. 白色念珠菌
C. 棘阿米巴
D. 腺病毒
"""

DILATION_LEAFLET = """# 散瞳检查须知（演示）

本文为演示材料，用于软件测试，不作为临床依据。

点散瞳药水可放大瞳孔，便于对白内障、眼底（玻璃体、视网膜和视神经）进行更详细的检查。

散瞳后注意事项：

1、瞳孔放大后会暂时视物模糊、怕光，所以当日不要自己开车或骑车回家。

2、一般约4～6小时后视力恢复，少数人需要更久。
"""


async def test_a_question_bank_item_answers_with_the_option_its_key_names(tmp_path):
    service = library(tmp_path, {"眼科期末练习题（演示）.md": EXAM_PAPER})
    result = await service.ask("真菌性角膜炎有什么特征性的表现？")
    said = tldr(result.answer)
    # the item whole, its key with it: a bare "D. …" would say nothing of what it answers
    assert "真菌性角膜炎的特征性临床表现是" in said and "卫星灶和免疫环" in said and "答案：D" in said, said
    assert "铺路石" not in said, said  # the item before it, on another disease
    result = await service.ask("单纯疱疹病毒性角膜炎上皮型长什么样？")
    said = tldr(result.answer)
    assert "树枝状溃疡" in said and "答案：A" in said and "真菌性" not in said, result.answer[:600]


async def test_an_items_explanation_on_its_keys_line_is_part_of_what_it_says(tmp_path):
    service = library(tmp_path, {"眼科期末练习题（演示）.md": EXAM_PAPER})
    result = await service.ask("视神经分成哪几段？哪一段最长？")
    said = tldr(result.answer)
    assert "眶内段的长度约为" in said and "答案：D" in said, result.answer[:600]  # the item whole, not its key line
    assert "其中眶内段最长" in result.answer, result.answer[:800]  # quoted with its explanation


def exam_docx(paragraphs: list[str]) -> bytes:
    """A Word exam paper as students hand it in: one paragraph per line, no list styles."""
    import io

    from docx import Document

    document = Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


CASE_ITEM = [
    "眼科期末练习题（演示）",
    "本文为演示材料，用于软件测试，不作为临床依据。",
    "5. 患者，男，68岁，右眼突然无痛性视力下降1小时，眼底见黄斑樱桃红斑。",
    "最可能的诊断是：",
    "A. 视网膜中央静脉阻塞",
    "B. 视网膜中央动脉阻塞",
    "C. 孔源性视网膜脱离",
    "答案：B",
]


async def test_an_item_is_read_from_the_case_told_before_its_question(tmp_path):
    service = library(tmp_path, {"眼科期末练习题（演示）.docx": exam_docx(CASE_ITEM), **RETINA_LIBRARY})
    result = await service.ask("右眼突然无痛性视力下降，眼底黄斑樱桃红斑，最可能是什么病？")
    said = tldr(result.answer)
    assert "樱桃红斑" in said and "B. 视网膜中央动脉阻塞" in said and "答案：B" in said, result.answer[:600]


async def test_an_item_without_a_key_answers_nothing(tmp_path):
    service = library(tmp_path, {"眼科自测题（演示）.md": UNKEYED, "散瞳检查须知（演示）.md": DILATION_LEAFLET})
    result = await service.ask("细菌性角膜炎最常见的致病菌是什么？")
    assert result.citations == [] and "未找到" in tldr(result.answer), result.answer[:400]


def test_a_lettered_list_with_no_question_over_it_is_no_choice_item():
    guideline = "推荐强度分为：\nA. 强推荐\nB. 弱推荐\nC. 不推荐\n"
    assert choice_items(guideline) == [] and stray_options(guideline) == []
    cut = "B. 眼眶由5块骨组成\nC. 眶内侧壁最薄\n6. 下列哪一段最长？\nA. 眼内段\n"  # a passage's bounds cut two items
    assert [cut[a:b] for a, b in stray_options(cut)] == ["B. 眼眶由5块骨组成", "C. 眶内侧壁最薄", "A. 眼内段"]
    eight = "".join(f"{letter}. 选项{letter}\n" for letter in "ABCDEFGH")  # every letter a key may name, then one more
    assert len(choice_items(f"下列哪项正确？\n{eight}A. 又一行\n答案：H\n")[0].options) == 8
    assert len(choice_items("下列哪项正确？ " + eight.replace("\n", " ") + "A. 又一个 B. 再一个")) == 1
    item = choice_items("婴幼儿通常是哪种屈光状态？ A. 近视 B. 远视 C. 正视 D. 散光\n标准答案：B\n")[0]
    assert item.answered and len(item.options) == 4


def test_options_printed_two_to_a_line_are_one_item():
    """Papers save room with "A. 10分钟 B. 20分钟" on one line and "C. … D. … E. …" on the next: one item, whose key
    names its option; without it the options were read as sentences of their own, and a bare "A. 10分钟 B. 20分钟；
    C. 30分钟" could be the TL;DR of a question asking how long."""
    paper = (
        "4、右眼被石灰烧伤，在现场用清水冲洗伤眼，应至少冲洗多久？\n"
        "A. 10分钟 B. 20分钟\nC. 30分钟 D. 50分钟 E. 60分钟\n正确答案：C\n"
    )
    (item,) = choice_items(paper)
    assert [paper[a:b] for a, b in item.options] == ["A. 10分钟", "B. 20分钟", "C. 30分钟", "D. 50分钟", "E. 60分钟"]
    assert [paper[a:b] for a, b in item.keyed] == ["C. 30分钟"]


def test_lettered_steps_under_a_lead_in_announcing_them_are_the_texts_own_list():
    """ "可采取以下措施：" names no question (以下 without 哪, a colon not after 是/为): the A/B/C after it are the
    text's advice, not a keyless item, which would answer nothing."""
    advice = "可采取以下措施减少泪液蒸发：\nA. 保持室内湿度适中\nB. 避免风扇直吹\nC. 多风时戴防风镜\n"
    assert choice_items(advice) == [] and stray_options(advice) == []
    asked = "下列关于干眼的描述正确的是：\nA. 甲\nB. 乙\nC. 丙\n答案：B\n"
    assert len(choice_items(asked)) == 1


CASE_ANSWERS = """# 眼底病病例分析参考答案（演示）

本文为演示材料，用于软件测试，不作为临床依据。

（1）临床诊断：右眼视网膜中央动脉阻塞，多见于有高血压、动脉硬化的老年人。

（2）抢救时间：临床抢救的黄金窗口期通常在发病后90～120分钟之内，必须争分夺秒。

（3）紧急处理：吸氧，按摩眼球，前房穿刺降低眼压，扩张血管。
"""

RETINA_NOTES = """# 眼底检查要点（演示）

本文为演示材料，用于软件测试，不作为临床依据。

检眼镜下可见视网膜血管走行，动脉较静脉细，正常动静脉管径比约为2:3。
"""


RETINA_LIBRARY = {  # 视网膜 in every document: a word of kind in this library, 动脉 the rare one
    "视网膜脱离（演示）.md": "# 视网膜脱离（演示）\n\n本文为演示材料，用于软件测试，不作为临床依据。\n\n"
    "视网膜脱离常有闪光感和眼前黑影，视网膜裂孔需尽早封闭。\n",
    "糖尿病视网膜病变（演示）.md": "# 糖尿病视网膜病变（演示）\n\n本文为演示材料，用于软件测试，不作为临床依据。\n\n"
    "糖尿病患者应每年检查视网膜，控制血糖可延缓视网膜病变。\n",
    "视网膜色素变性（演示）.md": "# 视网膜色素变性（演示）\n\n本文为演示材料，用于软件测试，不作为临床依据。\n\n"
    "视网膜色素变性早期表现为夜盲，视野逐渐缩小。\n",
}


async def test_a_case_answer_naming_the_disease_the_line_before_answers_its_question(tmp_path):
    files = {"眼底病病例分析参考答案（演示）.md": CASE_ANSWERS, "眼底检查要点（演示）.md": RETINA_NOTES}
    service = library(tmp_path, {**files, **RETINA_LIBRARY})
    result = await service.ask("老人突然一只眼看不见了，查出来是视网膜中央动脉阻塞，最好在多长时间内抢救？")
    assert "90～120分钟" in tldr(result.answer), result.answer[:600]


async def test_the_asking_clause_picks_the_sentence_the_told_one_placed(tmp_path):
    service = library(tmp_path, {"散瞳检查须知（演示）.md": DILATION_LEAFLET})
    result = await service.ask("等一下要散瞳查眼底，检查完当天可以自己开车回家吗？")
    assert "不要自己开车" in tldr(result.answer), result.answer[:600]


def test_words_on_either_side_of_a_comma_are_never_one_term():
    words = [t.text for t in analyse("等一下要散瞳查眼底，检查完当天可以开车吗？").terms]
    assert "眼底" in words and "眼底检查" not in words, words
    assert "眼底检查" in [t.text for t in analyse("眼底检查后能开车吗？").terms]


def test_words_that_frame_a_question_are_not_what_it_asks():
    words = [t.text for t in analyse("查出来是视网膜中央动脉阻塞，最好在多长时间内抢救？").terms]
    assert "最好" not in words and "查出" not in words and "查出来" not in words, words
    assert "抢救" in words and "动脉" in words, words


CASE_PAPER = """# 结膜炎病例分析（演示）

本文为演示材料，用于软件测试，不作为临床依据。

2. 简述急性细菌性、病毒性和过敏性结膜炎的分泌物特点。（6分）

问题：

（1）三种结膜炎的分泌物各有什么特点？（3分）

（2）如何据此鉴别？（请至少写出两点）。（3分）

参考答案：细菌性结膜炎分泌物为黄色脓性；病毒性结膜炎分泌物为水样或浆液性；过敏性结膜炎分泌物呈黏丝状。
"""


async def test_an_exams_questions_and_tasks_are_no_answer_its_reference_answer_is(tmp_path):
    service = library(tmp_path, {"结膜炎病例分析（演示）.md": CASE_PAPER, **RETINA_LIBRARY})
    result = await service.ask("细菌性、病毒性和过敏性结膜炎的分泌物有什么不同？")
    said = tldr(result.answer)
    assert "黄色脓性" in said and "黏丝状" in said, result.answer[:600]
    assert "简述" not in said and "（3分）" not in said, said
