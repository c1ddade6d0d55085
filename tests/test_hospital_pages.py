"""Hospitals' patient-service pages, as a clinic saves them from the web: a department's introduction, an
examination notice whose numbered items run on under one label ("二、常规检查"), a centre's list of what it checks,
a pre-admission notice, a specialty clinic's "以下情况应到…就诊" list. Each is asked the way a patient or a
clinician asks before a visit, and answered from what it says.

Found on the stop-68 blind library (hospital department and visit-notice pages). The texts here are written for
these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

import pytest
from test_news_reports import chat
from test_other_styles import conclusion, library, tldr

from clincite.offline.questions import analyse

# An examination notice: its numbered items run on under one label, a dilation item among them.
EXAM_NOTICE = (
    "眼科常规检查须知（演示材料）\n\n"
    "一、就诊\n\n"
    "1、普通患者按取号顺序就诊，请在诊室外等候。\n\n"
    "二、常规检查\n\n"
    "所有患者均需先查视力，医生再结合裂隙灯、眼压等检查作出诊断。\n\n"
    "1、常规检查包括裂隙灯检查、眼压、电脑验光和眼底照相，部分患者查眼底需要散瞳。\n\n"
    "2、散瞳注意事项\n\n"
    "⑴ 散瞳是往眼里滴散瞳眼药水，滴后需闭眼15分钟左右。\n\n"
    "⑵ 散瞳后约4-6小时内怕光、看近模糊，之后可自行恢复；糖尿病患者瞳孔不易散大，恢复可能更慢。\n\n"
    "⑶ 查眼底当天建议乘车前来，尽量不要自己开车。\n"
)

# A centre's page: what its equipment measures, and a questionnaire beside it.
DRY_EYE_CLINIC = (
    "干眼门诊介绍（演示材料）\n\n"
    "问卷评估\n\n"
    "患者按过去一周的感受填写干眼问卷，医生据总分判断轻重。\n\n"
    "设备检查\n\n"
    "借助专用检查设备，可分别测出：泪膜破裂时间、泪河高度、睑板腺开口状况、眨眼是否完全等。\n"
)

# A pre-admission notice: what to bring, in the hospital's own words (入院, 身份证), not the asker's (住院, 证件).
ADMISSION = (
    "眼科患者入院前须知（演示材料）\n\n"
    "一、需自备的生活用品\n\n"
    "宽松开衫、防滑拖鞋、洗漱用品；近视患者请带框架眼镜，不要戴隐形眼镜入院。\n\n"
    "二、必带资料\n\n"
    "身份与医保：本人身份证、医保卡原件。\n\n"
    "诊疗资料：既往病历、各项术前检查报告。\n\n"
    "三、特殊用药\n\n"
    "糖尿病患者：降糖药、胰岛素遵医嘱按时使用，不要自行停药。\n"
)

# A specialty clinic's page: who should come, as a list of signs.
STRABISMUS_CLINIC = (
    "斜弱视门诊简介（演示材料）\n\n"
    "本门诊诊治斜视、弱视及儿童屈光不正。\n\n"
    "孩子出现以下情况应到斜弱视门诊就诊：\n\n"
    "①眼位偏斜或“对眼”；\n\n"
    "②视物歪头；\n\n"
    "③视物重影。\n"
)

# A refractive-surgery notice that says how long before a recruits' medical the operation must be done.
SURGERY_FOR_RECRUITS = (
    "近视手术与征兵体检（演示材料）\n\n"
    "征兵体检规定：屈光不正经激光手术后满半年、无并发症、裸眼视力达标者方可合格。\n\n"
    "计划秋季入伍的，2月底前完成手术才能满足半年的要求。\n"
)

NEWBORN_SCREENING = (
    "新生儿眼病筛查（演示材料）\n\n"
    "筛查项目包括外眼检查、红光反射和眼底检查。\n\n"
    "足月新生儿建议在出生后4至6周做首次眼病筛查；早产儿按矫正胎龄另行安排。\n"
)

OPTOMETRY_CENTRE = (
    "视光中心服务介绍（演示材料）\n\n"
    "本院视光中心位于门诊楼二层，2020年起为市民提供验光配镜服务。\n\n"
    "服务范围：\n\n"
    "  • 视力及度数检查\n"
    "  • 眼压检查\n"
    "  • 放瞳验光\n"
    "  • 眼底照相\n"
)

# Pages on other specialties, as a hospital's site lists them beside the eye ones.
OTHER_DEPARTMENTS = {
    "胃镜检查-须知.txt": "胃镜检查须知（演示材料）\n\n检查前一晚十点后禁食，检查当天早上不要喝水。\n",
    "睡眠门诊-简介.txt": "睡眠门诊简介（演示材料）\n\n本门诊诊治失眠、打鼾和睡眠呼吸暂停。\n",
    "儿童看东西-姿势.txt": (
        "孩子看东西的姿势（演示材料）\n\n孩子读书写字时总是凑得很近、眯眼，多见于近视，应到眼科门诊验光。\n"
    ),
}


def hospital_library() -> dict[str, str]:
    return {
        "眼科常规检查-须知.txt": EXAM_NOTICE,
        "干眼门诊-检查介绍.txt": DRY_EYE_CLINIC,
        "眼科住院-入院须知.txt": ADMISSION,
        "斜弱视门诊-简介.txt": STRABISMUS_CLINIC,
        "近视手术-征兵体检.txt": SURGERY_FOR_RECRUITS,
        "新生儿眼病筛查.txt": NEWBORN_SCREENING,
        "视光中心-服务.txt": OPTOMETRY_CENTRE,
        **OTHER_DEPARTMENTS,
    }


async def asked(tmp_path, question: str):
    """The question asked of the hospital pages, as a clinician asks it in the app."""
    return await library(tmp_path, hospital_library()).ask(question)


# (question, what the TL;DR must say): each asked in a clinician's words, answered in the page's
LEADS = {
    # "二、常规检查" labels the section an examination one; its item still says how long dilation lasts
    "a notice's item answers in the asker's word under another label": ("散瞳以后多久能恢复？", "4-6小时"),
    "the drops asked by their everyday name are the text's dilating drops": (
        "做检查点了散瞳药水以后要闭眼多长时间？",
        "闭眼15分钟",
    ),
    "items asked for are the list that never names their kind": ("干眼门诊的仪器检查都能测出哪些指标？", "泪河高度"),
    # 住院 is the notice's 入院; 证件 are its 身份证 and 医保卡
    "papers asked for are the documents a notice names": ("眼科住院前要带哪些证件？", "身份证"),
    # 住院前 says when; the drugs are what is asked of, not a 胰岛素住院 to find written together
    "a visit placing the question in time is no part of its subject": (
        "我有糖尿病，降糖药和胰岛素住院前还照常用吗？",
        "遵医嘱按时使用",
    ),
    "a sign told with a durative is the sign the list names": ("孩子看东西总歪着头，该去看哪个门诊？", "视物歪头"),
}


@pytest.mark.parametrize("question,lead", LEADS.values(), ids=LEADS.keys())
async def test_a_page_answers_a_clinicians_words_with_its_own(tmp_path, question, lead):
    result = await asked(tmp_path, question)
    assert lead in tldr(result.answer), result.answer[:500]


async def test_a_bound_on_the_time_asked_is_no_word_the_text_must_have(tmp_path):
    question = "打算明年去当兵，近视激光手术最晚要提前多久做完？"
    bound = next(t for t in analyse(question).terms if t.text == "最晚")
    assert bound.scene, bound  # it ranks a passage that has it; none is missed for lacking it
    result = await asked(tmp_path, question)
    assert "半年" in tldr(result.answer), result.answer[:500]


def test_there_points_back_at_the_place_asked_of_before():
    before = "医院的视光中心开在哪里？"
    ask = analyse("那里都能做哪些检查？", [before])
    searched = ask.sub_queries()[0][0].split()
    assert ask.follow_up and "里都" not in ask.resolved and searched[0] in before, (ask.resolved, searched)
    own = analyse("眼睛那里红了一块，要紧吗？")
    assert "那里" not in own.sub_queries()[0][0], own.sub_queries()


async def test_a_follow_up_goes_on_with_the_screening_asked_of(tmp_path):
    # "去查" is going for it, no other kind of the 筛查 of the last question
    service = library(tmp_path, hospital_library())
    turns = await chat(service, "新生儿眼病筛查查哪些项目？")
    result = await service.ask("那足月的宝宝第一次什么时候去查？", turns)
    assert "筛查" in result.sub_queries[0].text, [q.text for q in result.sub_queries]
    assert "4至6周" in tldr(result.answer), result.answer[:500]


async def test_the_hong_kong_word_for_dilating_is_dilating(tmp_path):
    result = await asked(tmp_path, "视光中心能不能做散瞳验光？")
    assert "放瞳验光" in conclusion(result.answer), result.answer[:500]
