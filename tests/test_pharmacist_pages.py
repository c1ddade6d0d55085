"""Pharmacists' question-and-answer pages and medication columns, as a clinic saves them from the web: an FAQ's
"Q:…?" over its "A:…下列几点:" and numbered points, a credit line at the end ("资料来源:…提供"), a byline first
("作者 / …藥師"), Taiwanese drug words (抗組織胺), a product's name jieba cuts into pieces (四味珍层冰硼滴眼液).
Each is read as its author meant it, and a clinician's everyday ways of asking find what it says.

Found on the stop-67 blind library (pharmacist Q&A pages). The texts here are written for these tests in our own
words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import conclusion, library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders.text import plain_document
from clincite.offline.questions import analyse

# An FAQ page: the answer opens on "A:" under the question, then numbered points, then where it came from.
STEROID_FAQ = (
    "Q:开封后的眼药水怎么保存?\n"
    "A:开封后的眼药水要避光、避热、防潮,一个月内未用完应丢弃（演示材料）。\n"
    "Q:使用类固醇眼药水要注意什么?\n"
    "A:使用类固醇眼药水请注意下 列几点:\n"
    "(1)须经医师诊断确有需要才使用,避免自行长期使用。\n"
    "(2)长期使用者要定期到眼科测量眼压。\n"
    "(3)有青光眼病史或高度近视者应谨慎使用。\n"
    "资料来源:《用药问答手册》,某药学基金会提供\n"
)

ALLERGY_DRUGS = (
    "過敏性結膜炎的用藥（演示材料）\n"
    "口服抗組織胺也可用於過敏性結膜炎,尤其合併過敏性鼻炎的病人。\n"
    "口服抗組織胺會減少淚液分泌,可能讓乾眼症狀加重,乾眼病人若必須服用,可多補充人工淚液減輕這類副作用帶來的不適。\n"
)

ETHAMBUTOL = (
    "乙胺丁醇与视力（演示材料）\n"
    "乙胺丁醇可引起球后视神经炎,表现为视力模糊、红绿色觉异常。\n"
    "幼儿难以准确描述视力变化,不便监测,因此一般不建议5岁以下婴幼儿使用乙胺丁醇。\n"
)

OTC_DROPS = (
    "珍层冰硼滴眼液使用提醒（演示材料）\n"
    "四味珍层冰硼滴眼液属于非处方药,不需要处方就能买到,但用药前有几个细节要留意。\n"
    "①先看自己的症状是否符合说明书写的适应症,拿不准时最好谨慎使用。\n"
    "②如果眼睛发红,多提示眼部有炎症,不宜自行使用这类滴眼液,应先去医院就诊。\n"
)

# A column's opening on screening, which names children and says what they "可以" do; and what the drops are made of.
SCREENING = (
    "學童視力檢查（演示材料）\n"
    "許多縣市的國小學生每年可以免費做一次視力檢查,發現近視後,醫師常會開立散瞳劑給孩子在家中使用。\n"
)
MYDRIATICS = (
    "散瞳劑的成分\n"
    "臨床常用的散瞳劑有tropicamide與atropine兩種成分:tropicamide屬於短效散瞳劑,atropine屬於長效散瞳劑（演示材料）。\n"
)

# Pharmacists' answers on other medicines, as such a page lists them beside the eye ones.
OTHER_MEDICINES = {
    "降压药-漏服.txt": (
        "降压药漏服了怎么办（演示材料）\n发现漏服时若离下次服药时间还远,可以尽快补服;若已接近下次服药时间,不要加倍补服。\n"
    ),
    "抗生素-消炎.txt": "抗生素不是消炎药（演示材料）\n抗生素针对细菌感染,对病毒引起的感冒无效,不应自行服用。\n",
    "二甲双胍-手术.txt": (
        "二甲双胍与手术（演示材料）\n需要做手术的糖尿病病人,一般在手术前一天停用二甲双胍,术后肾功能稳定再恢复使用。\n"
    ),
    "高血压-用药.txt": "高血压用药提醒（演示材料）\n降压药需长期规律服用,不要因为血压正常就自行停药。\n",
}

BYLINE_FIRST = (
    "作者 / 王小明藥師\n\n散瞳劑可以放鬆睫狀肌,改善假性近視（演示材料）。\n\n使用後可能畏光,外出可戴帽子或太陽眼鏡。\n"
)


def pharmacist_library() -> dict[str, str]:
    return {
        "眼药储存-类固醇问答.txt": STEROID_FAQ,
        "过敏性结膜炎-用药.txt": ALLERGY_DRUGS,
        "乙胺丁醇-视力.txt": ETHAMBUTOL,
        "冰硼滴眼液-提醒.txt": OTC_DROPS,
        "学童视力检查.txt": SCREENING,
        "散瞳剂-成分.txt": MYDRIATICS,
        **OTHER_MEDICINES,
    }


def evidence_in(file: str, text: str, ask, aspects: list[str], frequencies: dict[str, int]) -> list:
    """What the offline judge keeps of one passage for the question's first part, in a library of 1000 passages
    whose words occur as often as `frequencies` says (`TermStats`)."""
    from test_other_styles import _Counts

    from clincite.core.shapes import Hit
    from clincite.offline import relevance

    part = relevance.Part(ask.sub_queries()[0][0], aspects, None)
    passage = Hit(chunk_id="c1", source=file, title=Path(file).stem, heading_path=[], text=text, found_by=["bm25"])
    return relevance.judge(ask, part, [passage], _Counts(1000, frequencies))


async def tldr_of(tmp_path: Path, question: str, history: list[str] = ()) -> str:
    """The TL;DR a chat on the pharmacist library gets for a question (after the user's earlier ones)."""
    turns = [ChatTurn(role="user", content=asked) for asked in history]
    return tldr((await library(tmp_path, pharmacist_library()).ask(question, turns)).answer)


async def test_an_faq_answer_under_its_question_is_no_exam_option(tmp_path: Path):
    """ "A:" under "Q:…?" opens the answer (not option A of an exam item), and the credit line says nothing."""
    said = await tldr_of(tmp_path, "长期点类固醇眼药水要注意什么？")
    assert "定期到眼科测量眼压" in said and "资料来源" not in said, said


async def test_a_taiwanese_drug_word_is_the_mainland_one(tmp_path: Path):
    """抗組織胺 is the 抗组胺药 a mainland asker names."""
    said = await tldr_of(tmp_path, "本身有干眼，因为过敏还得吃抗组胺药，需要注意什么？")
    assert "人工淚液" in said, said


def test_young_children_asked_of_are_the_infants_a_text_names():
    """ "那5岁以下的小孩能用吗？" in a library that seldom writes for children: 小孩 decides, and the 婴幼儿 a text
    names are the children asked of."""
    ask = analyse("那5岁以下的小孩能用吗？为什么？", ["吃抗结核药乙胺丁醇对眼睛有什么影响？"])
    frequencies = {"小孩": 2, "孩子": 2, "乙胺丁醇": 3, "抗结核": 3, "岁": 40, "婴幼儿": 2}
    evidence = evidence_in("乙胺丁醇-视力.txt", ETHAMBUTOL, ask, ask.aspects, frequencies)
    assert evidence and "5岁以下婴幼儿" in evidence[0].text, evidence


async def test_where_the_asker_would_buy_it_is_not_what_is_asked(tmp_path: Path):
    """去药店买…来点: the shop is the asker's picture (a library that never writes 药店 still answers); the product,
    cut by jieba into pieces, is one name."""
    question = "眼睛发红了，能不能自己去药店买四味珍层冰硼滴眼液来点？"
    assert analyse(question).subject == "四味珍层冰硼"
    result = await library(tmp_path, pharmacist_library()).ask(question)
    assert result.citations and "应先去医院就诊" in conclusion(result.answer), result.answer


def test_what_a_drug_is_made_of_is_the_same_for_children():
    """给孩子…的散瞳药水 in a library that seldom writes for children (孩子 in 4 of 1000 passages): who the drops are
    given to decides which passage gives a dose, not which says what they are made of."""
    ask = analyse("给孩子控制近视的散瞳药水，分别是什么成分？")
    assert ask.aspects == ["成分"]
    frequencies = {"孩子": 4, "控制": 30, "近视": 300, "散瞳药": 20, "散瞳剂": 20, "成分": 15}
    evidence = evidence_in("散瞳剂-成分.txt", MYDRIATICS, ask, ["成分"], frequencies)
    assert evidence and "tropicamide屬於短效散瞳劑" in evidence[0].text, evidence


async def test_a_passage_sharing_only_the_askers_scene_and_a_modal_word_answers_nothing(tmp_path: Path):
    """A child who drank eye drops: the screening column names children and says 可以, and answers nothing of it."""
    columns = {"学童视力检查.txt": SCREENING, "散瞳剂-成分.txt": MYDRIATICS}
    result = await library(tmp_path, columns).ask("小孩不小心把一瓶眼药水喝下去了，要怎么处理？")
    assert not result.citations, result.answer


def test_a_byline_heads_nothing():
    document = plain_document(BYLINE_FIRST, "散瞳剂-药师解析")
    assert all("作者" not in " ".join(section.heading_path) for section in document.sections), document.sections


def test_what_the_asker_would_do_is_no_coined_name():
    """想换贵 is 想 + 换 + 贵, no product's name."""
    ask = analyse(
        "那想换贵一点的特殊功能晶体呢，从什么时候开始可以只补差价？", ["台湾做白内障手术，普通人工晶体要自己花钱吗？"]
    )
    assert ask.subject != "想换贵" and "想换贵" not in [t.text for t in ask.subjects], ask.subject


def test_a_follow_up_asking_how_much_asks_its_own_question_of_the_drug_before():
    """ "那术中要配成多大浓度？" asks a figure of the last question's drug, not its 禁忌证 and 原因 again."""
    before = "白内障摘除术中用α-糜蛋白酶，多大年龄以下的患者禁用？为什么？"
    ask = analyse("那术中要配成多大浓度？", [before])
    assert "糜蛋白酶" in [t.text for t in ask.terms] and not ask.aspects, ([t.text for t in ask.terms], ask.aspects)
