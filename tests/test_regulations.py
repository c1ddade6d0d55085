"""Statutes and standards: "第八条 …" paragraphs under "第二章 …" headings, the rule a clinician needs (a driver's
eyesight, how long a certificate stays valid, when an injury is assessed) one clause among many on other matters,
in formal words (驾驶证、公共汽车) the asker puts colloquially (驾照、公交). And the everyday ways of asking that such
texts bring out: how long a paper stays valid ("开出来以后多长时间内有效"), now or later ("马上就能做，还是要等一段
时间"), what caused something ("是啥引起的"), the most common one ("最常见的是哪种").

Found on the stop-51 blind library (Chinese laws, regulations and a forensic injury-grading standard in Markdown).
The texts here are written for these tests in our own words (演示材料，仅用于软件测试，不作为法律或临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_drug_monographs import after
from test_other_styles import conclusion, library, tldr

from clincite.offline.questions import analyse

DRIVERS = """# 机动车驾驶人身体条件规定（演示）

## 第二章 申请条件

第八条 申请机动车驾驶证的人，应当符合下列身体条件：

（一）视力：申请大型客车准驾车型的，两眼裸视力或者矫正视力达到对数视力表5.0以上；申请其他准驾车型的，两眼裸视力或者矫正视力达到对数视力表4.9以上。

（二）辨色力：无红绿色盲。

第九条 有视力矫正的驾驶人驾驶机动车时，应当佩戴眼镜。

## 第三章 监督管理

第二十条 驾驶人因出国等原因，无法在规定时间内提交身体条件证明的，\
可以在驾驶证有效期内或者有效期届满一年内申请延期办理。

第二十一条 年龄在70周岁以上的驾驶人，应当每年提交一次身体条件证明。

身体条件证明自出具之日起六个月内有效。
"""

INJURIES = """# 损伤程度鉴定规则（演示）

## 总则

鉴定时机：以组织器官功能障碍为主要鉴定依据的，在损伤90日后进行鉴定；疑难、复杂的损伤，在伤情稳定后进行鉴定。

## 眼部损伤

外伤性白内障、外伤性青光眼，鉴定为轻伤二级。

外伤后出现斜视、复视的，鉴定为轻伤二级。
"""

TRANSIT = """# 残疾人乘车优待办法（演示）

第五条 盲人持有效证件免费乘坐市内公共汽车、电车和轨道交通。

第六条 视力残疾人可以携带导盲犬乘坐公共交通工具，并应当出示导盲犬证。
"""

SCHOOLS = """# 学校卫生工作规定（演示）

## 第二章 学校卫生工作要求

第八条 学校应当合理安排学生的学习时间，保证学生每天有充足的睡眠和课间休息。

第九条 教室的采光、照明、课桌椅和黑板应当符合国家有关标准，并定期检查和调整。

第十条 学校应当做好近视眼、弱视、沙眼、龋齿等学生常见疾病的群体预防和矫治工作。

第十一条 学校应当每学期组织一次学生视力检查，并把结果告知家长。

## 第三章 学校卫生工作管理

第十二条 卫生行政部门应当组织医疗单位对学生进行健康检查和常见病矫治，接受转诊治疗。

第十三条 教育行政部门应当把学校卫生工作纳入督导内容，并配备必要的卫生技术人员。

第十四条 学校发生传染病时，应当及时报告当地卫生行政部门，并配合做好防控工作。

第十五条 学校应当建立学生健康档案，档案随学生升学转学移交。
"""

INFECTIONS = """# 传染病防治办法（演示）

## 第二章 预防

第二十七条 生产、经营、使用消毒器械、卫生用品、一次性医疗器材、隐形眼镜等产品，必须符合国家有关标准，\
不符合的不得生产、经营和使用。

## 第六章 罚则

第六十六条 有下列行为之一的，由卫生行政部门责令限期改正，可以处五千元以下的罚款：

（一）供应的饮用水不符合国家卫生标准的；

（二）生产、经营、使用消毒器械、卫生用品、一次性医疗器材、隐形眼镜等产品不符合国家卫生标准，可能造成传染病传播、扩散的；

（三）未按规定对传染病病人的排泄物进行消毒处理的。
"""

CATARACT_NOTES = """# 白内障术后并发症（演示笔记）

白内障术后的并发症包括眼内炎、角膜水肿、黄斑囊样水肿和后发性白内障等。
眼内炎少见但后果严重，多在术后一周内出现眼痛和视力下降，须立即处理。
其中后发性白内障最为常见，可在门诊用YAG激光切开混浊的后囊。
"""


def regulations(tmp_path: Path):
    return library(
        tmp_path,
        {
            "驾驶人身体条件.md": DRIVERS,
            "损伤鉴定.md": INJURIES,
            "乘车优待.md": TRANSIT,
            "学校卫生.md": SCHOOLS,
            "传染病防治.md": INFECTIONS,
            "白内障术后.md": CATARACT_NOTES,
        },
    )


async def test_how_long_a_paper_stays_valid_is_the_figure_its_words_follow(tmp_path: Path):
    service = regulations(tmp_path)
    result = await service.ask("驾照体检开的那张身体条件证明，开出来以后多长时间内有效？")
    assert "六个月内有效" in tldr(result.answer), result.answer
    assert "延期" not in tldr(result.answer)  # 有效期 of another article is not the certificate's


def test_valid_within_a_time_is_no_question_of_whether_a_treatment_works():
    asked = analyse("眼药水开封以后多久内有效？")
    assert "疗效" not in asked.aspects and "有效" in [t.text for t in asked.terms]
    assert "疗效" in analyse("阿托品点多久有效？").aspects  # how soon it works: still its effect
    # "开的那张": a classifier after a demonstrative names nothing
    assert "张" not in [t.text for t in analyse("驾照体检开的那张身体条件证明多久内有效？").terms]


async def test_a_colloquial_name_finds_the_formal_one(tmp_path: Path):
    service = regulations(tmp_path)
    result = await service.ask("考驾照的话，视力要达到多少？")
    assert "4.9以上" in tldr(result.answer), result.answer
    result = await service.ask("盲人坐市内公交需要出示什么？")
    assert "持有效证件" in tldr(result.answer), result.answer


async def test_now_or_later_asks_when(tmp_path: Path):
    asked = analyse("眼外伤要做伤情鉴定，是受伤后马上就能做，还是要等一段时间？")
    assert not asked.choice and asked.quantity == "时间" and "区别" not in asked.aspects
    service = regulations(tmp_path)
    result = await service.ask("伤情鉴定是受伤后马上就能做，还是要等一段时间？")
    assert "90日后" in tldr(result.answer), result.answer


def test_what_caused_it_asks_the_cause_and_what_it_causes_does_not():
    assert analyse("眼睛长胬肉是啥引起的？").aspects == ["原因"]
    assert analyse("多半是由什么造成的？").aspects == ["原因"]
    assert "原因" not in analyse("糖尿病会引起什么眼病？").aspects


async def test_the_most_common_one_is_the_one_the_text_calls_so(tmp_path: Path):
    service = regulations(tmp_path)
    result = await service.ask("白内障术后最常见的并发症是什么？")
    said = tldr(result.answer)
    assert "后发性白内障最为常见" in said, result.answer
    assert "最为常见" in said + conclusion(result.answer)


async def test_which_grade_a_case_is_given_is_no_question_of_how_grades_are_divided(tmp_path: Path):
    assert analyse("眼睛受伤以后继发了白内障，法医鉴定一般定几级？").aspects == []
    assert analyse("高血压分几级？").aspects == ["定义"]  # how grades are divided: a classification
    service = regulations(tmp_path)
    result = await service.ask("外伤后继发了白内障，鉴定一般定几级？")
    assert "轻伤二级" in tldr(result.answer), result.answer


async def test_a_class_of_diseases_is_found_where_the_text_writes_it_out(tmp_path: Path):
    service = regulations(tmp_path)
    result = await service.ask("学校要对哪些学生常见病做群体预防？里面跟眼睛有关的是哪几种？")  # text: 常见疾病
    assert "近视眼、弱视、沙眼" in tldr(result.answer), result.answer


async def test_what_a_rule_requires_is_the_sentence_that_says_must(tmp_path: Path):
    service = regulations(tmp_path)
    result = await service.ask("传染病防治的法规里，对隐形眼镜有什么要求？")
    assert "必须符合国家有关标准" in tldr(result.answer), result.answer  # the rule, not the penalty for breaking it


async def test_the_same_question_of_another_subject_carries_what_was_asked(tmp_path: Path):
    first = "眼睛受伤以后继发了白内障，伤情鉴定一般定几级？"
    then = analyse("那如果伤后出现斜视呢？", [first])
    assert "鉴定" in [t.text for t in then.terms if t.context], then.terms  # what was asked, searched and weighed
    service = regulations(tmp_path)
    result = await service.ask("那如果伤后出现斜视、看东西重影呢？", await after(service, first))
    assert "斜视、复视的，鉴定为轻伤二级" in tldr(result.answer), result.answer
