"""Patients' own accounts, as a clinic saves them from blogs and forums: a day-by-day story told in the first person,
figures written out in words (四十几毫米汞柱、十九万多), the doctor's words quoted ("也就是…综合征"), and an
operation's preparations told as "全麻手术需要做全套的术前检查". Each is asked the way a clinician or a patient asks
about it, and answered from what the author wrote — or not at all where the story never says it.

Found on the stop-69 blind library (patients' first-person accounts). The texts here are written for these tests in
our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

import re

import pytest
from test_other_styles import conclusion, library, tldr

from clincite.offline.questions import analyse

NOT_FOUND = "知识库中未找到"

# A patient's story of a pressure attack: the first time at a tonometer, the readings in words, the doctor's name
# for it in short and in full.
PRESSURE_ATTACK = (
    "我的青睫综合征经历（演示材料）\n\n"
    "第一次发作那天早上醒来，右眼像蒙了一层雾，我以为只是没睡好。\n\n"
    "在眼科，我第一次见到了测眼压的仪器，它朝眼睛喷了一股气。结果很快出来：左眼眼压十几毫米汞柱，"
    "右眼超过了四十几毫米汞柱。\n\n"
    "医生看完报告说：“你这是青睫综合征。”我没听懂，他又说：“也就是青光眼睫状体炎综合征。”\n"
)

# A mother's account of her daughter's operation: the preparations told, never named "手术之前".
CHILD_OPERATION = (
    "陪女儿做霰粒肿手术（演示材料）\n\n"
    "女儿上眼皮长了个包，检查下来是霰粒肿，热敷两周也没消，医生说只能全麻手术切除。\n\n"
    "手术准备\n\n"
    "全麻手术需要做全套的术前检查，包括验血、心电图、拍胸片等，医生开了一叠检查单。\n\n"
    "检查那天女儿哭了一上午，我陪着她讲故事。\n"
)

# An ICL diary that says how soon the author read again, and nothing of swimming.
ICL_DIARY = (
    "ICL手术两个月记（演示材料）\n\n"
    "我角膜太薄，医生建议做ICL晶体植入。术后第二天我就能正常看东西了，第三天看书基本没问题。\n\n"
    "术前每天按医嘱滴眼药水，术中两只眼一起做，全程没什么痛感。\n"
)

# A Taiwanese account: the lens replaced, in the author's words, and what it cost.
LENS_REPLACEMENT = (
    "我的眼睛手术之旅（演示材料）\n\n"
    "医生说我不适合雷射，也不适合眼内镜，但我开始有白内障了，可以更换水晶体。\n\n"
    "结果手术费健保可以支付，但水晶体两眼就要十九万多，我的医疗险补助了一半以上。\n"
)

# A young man's story of a red eye: what he tried himself and how it went.
RED_EYE = (
    "熬夜后眼睛红痛的经历（演示材料）\n\n"
    "那天熬夜打游戏，半夜右眼一阵疼痛，第二天同事说我右眼很红。我嫌去医院麻烦，去药店买了瓶氧氟沙星自己点。"
    "谁想到从早点到晚，眼红一点都没消退，晚上眼睛还更疼了。\n\n"
    "第三天看东西像隔了一层雾，我才去医院挂号。医生用裂隙灯照了半天，然后问：“还有啥表现？”"
    "后来才知道这是虹膜睫状体炎。\n"
)

# A parent who tried the child's drops once, and why she stopped.
PARENT_TRIAL = (
    "散瞳眼药水，我为什么不再给孩子点（演示材料）\n\n"
    "医生让孩子每晚点散瞳眼药水控制近视，我想知道孩子点了是什么滋味，就自己点了一次。"
    "我感受到眼睛一整天畏光，看近处模糊，非常不舒服。\n\n"
    "后来我改成多带孩子去户外活动，少看手机。\n"
)

OTHER_STORIES = {
    "拔智齿-经历.txt": "拔智齿记（演示材料）\n\n拔完智齿当天只能吃流食，医生嘱咐24小时内不要漱口。\n",
    "膝关节手术-康复.txt": "半月板手术康复记（演示材料）\n\n术后六周内拄拐，三个月后才慢慢恢复慢跑。\n",
}


# The library as a clinic would load it: the eye stories and two of other operations beside them
STORIES = {
    "眼压升高-就诊经历.txt": PRESSURE_ATTACK,
    "霰粒肿-陪女儿手术.txt": CHILD_OPERATION,
    "ICL手术-两个月记.txt": ICL_DIARY,
    "白内障换晶体-手术之旅.txt": LENS_REPLACEMENT,
    "红眼-自己点药经历.txt": RED_EYE,
    "散瞳眼药水-家长试点.txt": PARENT_TRIAL,
    **OTHER_STORIES,
}


# (question, what the TL;DR must say): each asked in a clinician's words, answered in the author's
LEADS = {
    # "第一次见到" is the first time, no figure; "四十几毫米汞柱" is one
    "a reading written in words is the figure asked, an ordinal is none": (
        "青睫综合征发作那只眼的眼压能高到多少？",
        "四十几毫米汞柱",
    ),
    # "包括验血、心电图、拍胸片等" lists what is asked for, though only two marks part its items
    "a sentence saying what it includes is the list asked for": (
        "小孩做霰粒肿全麻手术之前要先做哪些检查？",
        "验血、心电图、拍胸片",
    ),
    # "也就是青光眼睫状体炎综合征" spells out the abbreviation, with no 是指 to say it defines
    "a full name asked is the longer name the abbreviation stands for": (
        "青睫综合征的全称是什么？",
        "青光眼睫状体炎综合征",
    ),
    # whether a drug worked is told by whether the trouble went away: "眼红一点都没消退"
    "what came of a remedy tells whether it worked": ("眼睛红了自己买氧氟沙星点了一天，有用吗？", "没消退"),
    # the doctor's "还有啥表现？" is a question in the story, no account of the signs
    "a question someone in the story asks tells nothing": ("虹膜睫状体炎刚开始有哪些表现？", "一阵疼痛"),
    "the asker's feeling is the author's 感受": ("家长自己试点了一次孩子的散瞳眼药水，是什么感觉？", "一整天畏光"),
}


@pytest.mark.parametrize("question,lead", LEADS.values(), ids=LEADS.keys())
async def test_an_account_answers_a_clinicians_words_with_its_own(tmp_path, question, lead):
    result = await library(tmp_path, STORIES).ask(question)
    assert lead in tldr(result.answer), result.answer[:500]


async def test_what_one_may_do_after_an_operation_must_be_written(tmp_path):
    # the diary tells how soon the author read again; swimming it never mentions
    result = await library(tmp_path, STORIES).ask("做完ICL晶体植入，术后多久才能去游泳？")
    assert NOT_FOUND in tldr(result.answer), result.answer[:500]


async def test_a_lens_replaced_is_the_artificial_lens_asked_of(tmp_path):
    # "更换水晶体" puts an artificial lens in; its price is written in words with 万
    result = await library(tmp_path, STORIES).ask("换人工水晶体的话，手术费健保给不给付？水晶体要花多少钱？")
    said = conclusion(result.answer)
    assert "健保可以支付" in said and "十九万多" in said, result.answer[:600]
    assert "证据缺口" not in result.answer, result.answer[:600]


def test_a_time_before_an_operation_is_the_texts_abbreviation():
    # texts write 术前检查、术后护理 where an asker writes 手术之前、手术以后
    before = {t.text: t.variants for t in analyse("霰粒肿手术之前要做哪些检查？").terms}
    after = {t.text: t.variants for t in analyse("白内障手术以后多久能洗头？").terms}
    assert "术前" in before["之前"] and "术后" in after["以后"], (before, after)
    bedtime = {t.text: t.variants for t in analyse("睡觉之前能点眼药水吗？").terms}
    assert "术前" not in bedtime.get("之前", []), bedtime


async def test_why_a_passage_was_kept_names_each_keyword_once(tmp_path):
    # the part on the full name has 综合征 as its subject and as a decisive term
    question = "医生说我是“青睫综合征”，这全称是什么病？发作那只眼的眼压能高到多少？"
    result = await library(tmp_path, STORIES).ask(question)
    bases = [extract.basis.explanation for analysis in result.analyses for extract in analysis.extracts]
    assert bases, result.answer[:500]
    for basis in bases:
        named = re.findall(r"“([^”]+)”", basis.split("包含问题中的关键词")[-1]) if "关键词" in basis else []
        assert len(named) == len(set(named)), basis
