"""Popular-science news articles (found on the stop-40 blind library: 人民网「科普中国」 articles saved by a crawler,
one plain-text file per article, a lead paragraph and no headings), and the ways a parent asks of them:

- a date (《指南（2024年版）》、2023年5月) is no answer to "几年、多久": it is when, not how long;
- a story's subject the library never names (红烧肉) is not found by the question after it either ("要不要先焯水？");
- a word that places the question in time (将来、平时) never decides what a passage must name;
- "哪几个时期" asks which ones, not how many; a text that stages a disease (分期：…期；…期) classifies it;
- "有啥缺点" asks the risks and drawbacks; "定期检查" is answered by a text saying how often (每年检查);
- "另外问下，…" with a subject of its own (教室采光) asks a new question, medical word or not;
- "近视率有多高" asks a rate;
- a plain text's short first line (an article's heading) heads the text: it is never quoted as the answer;
- "该用哪个浓度" asks a concentration (a figure in %), and 浓度 written inside 低浓度阿托品 is not it;
- a TL;DR never ends in a lead-in ("…的传闻。例如："): it takes the lines the lead-in leads into;
- a drug class asked of (散瞳药) is named by a text naming its members (阿托品眼膏、托吡卡胺);
- the asker's 马上 is the text's 立即;
- "哪个孕周" asks a week of pregnancy: 长期 (of 长期护理机构) does not answer it.

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders.text import plain_document
from clincite.offline.questions import analyse

GUIDE_NEWS = """近视防治指南更新解读（演示）
本文为演示材料，用于软件测试，不作为临床依据。

国家卫生健康委近日发布《近视防治指南（2024年版）》，针对近视的矫正和控制，列出框架眼镜、角膜接触镜、低浓度阿托品滴眼液和手术矫正4类方式。

专家介绍，新版指南增加了公共卫生层面的近视防控分期：近视前驱期，重点是增加户外活动、减少近距离用眼；近视发展期，在医生指导下采取矫正和控制措施；高度近视期，定期监测眼轴和眼底；病理性近视期，出现视物变形等情况应立即就诊。

近视手术只是“摘镜”，不能改变已经拉长的眼球，术后仍然需要每年散瞳检查眼底，以防眼底并发症。

角膜塑形镜（OK镜）可以延缓近视进展，但价格较高，摘戴和护理主要靠家长，佩戴不当还可能出现角膜感染等并发症风险。

准备报考军校的孩子，将来如果做近视手术，一般要选择角膜激光手术，晶体植入术可能不符合招生要求。

2022年我国儿童青少年总体近视率为51.9%，6岁儿童近视率为12.7%。
"""

HERB_NEWS = """狗尾草熬水能治近视吗（演示）
本文为演示材料，用于软件测试，不作为临床依据。

网上流传用狗尾草熬水给孩子喝来治近视的说法。专家表示，目前没有任何证据表明狗尾草熬水能改善或治愈近视，孩子近视应到正规医院验光配镜。
"""

LIGHTING_NEWS = """教室采光照明抽检（演示）
本文为演示材料，用于软件测试，不作为临床依据。

疾控部门将对托育机构、幼儿园和中小学校的教室采光、照度等情况进行抽检。抽检按辖区内学校总数的至少5%进行，每个地区不少于5所。
"""

CYCLOPLEGIA_NEWS = """散瞳验光问答（演示）
本文为演示材料，用于软件测试，不作为临床依据。

散瞳验光可以放松睫状肌，区分真性近视和调节引起的假性近视。散瞳后度数下降的部分属于调节因素，剩下的度数才是真性近视。
"""


NEWS = {
    "近视防治指南更新解读（演示）.txt": GUIDE_NEWS,
    "狗尾草熬水能治近视吗（演示）.txt": HERB_NEWS,
    "教室采光照明抽检（演示）.txt": LIGHTING_NEWS,
    "散瞳验光问答（演示）.txt": CYCLOPLEGIA_NEWS,
}


async def test_a_date_is_no_answer_to_how_long(tmp_path):
    service = library(tmp_path, NEWS)
    for question in ("低浓度阿托品一般要点几年？", "低浓度阿托品要用多少年？"):
        result = await service.ask(question)
        assert "未找到" in tldr(result.answer), result.answer[:400]  # not 《指南（2024年版）》


async def test_a_subject_the_library_never_names_is_not_found_by_the_next_question(tmp_path):
    service = library(tmp_path, {"狗尾草熬水能治近视吗（演示）.txt": HERB_NEWS})
    result = await service.ask("红烧肉怎么做才能肥而不腻？要不要先焯水？")
    assert "未找到" in tldr(result.answer) and "没有任何证据" not in result.answer, result.answer[:400]


async def test_a_word_placing_the_question_in_time_does_not_decide(tmp_path):
    service = library(tmp_path, {"近视防治指南更新解读（演示）.txt": GUIDE_NEWS.replace("将来如果", "如果")})
    result = await service.ask("儿子想考军校，将来做近视手术该选激光还是晶体植入？")
    assert "角膜激光手术" in tldr(result.answer), result.answer[:400]


async def test_which_stages_asks_for_the_stages(tmp_path):
    assert analyse("把近视分成了哪几个时期？").quantity == ""
    assert analyse("分成几个时期？").quantity == "number"
    service = library(tmp_path, {"近视防治指南更新解读（演示）.txt": GUIDE_NEWS})
    result = await service.ask("2024版近视防治指南在公共卫生层面把近视分成了哪几个时期？")
    assert "近视前驱期" in tldr(result.answer), result.answer[:400]


async def test_drawbacks_and_regular_checks_are_answered_in_the_texts_words(tmp_path):
    service = library(tmp_path, {"近视防治指南更新解读（演示）.txt": GUIDE_NEWS})
    history = [ChatTurn(role="user", content="OK镜能延缓近视吗？"), ChatTurn(role="assistant", content="……")]
    result = await service.ask("那它有啥缺点？", history)
    assert "并发症风险" in tldr(result.answer), result.answer[:400]
    result = await service.ask("做完近视手术以后，还需要定期检查眼底吗？")
    assert "每年散瞳检查眼底" in tldr(result.answer), result.answer[:400]


async def test_another_question_announced_with_a_subject_of_its_own_is_new(tmp_path):
    service = library(
        tmp_path, {"教室采光照明抽检（演示）.txt": LIGHTING_NEWS, "散瞳验光问答（演示）.txt": CYCLOPLEGIA_NEWS}
    )
    first = "孩子散瞳以后度数降了50度，这50度算什么？"
    history = [ChatTurn(role="user", content=first), ChatTurn(role="assistant", content="……")]
    result = await service.ask("另外问下，学校教室的采光照明国家会抽查吗？抽多少所？", history)
    assert "不少于5所" in result.answer.split("### 论据与来源")[0], result.answer[:400]
    assert "散瞳" not in result.sub_queries[0].text, [q.text for q in result.sub_queries]


def test_a_rate_asked_how_high_is_a_ratio():
    assert analyse("现在我国小孩近视率到底有多高？").quantity == "比例"


def test_a_plain_texts_short_first_line_heads_it():
    document = plain_document(HERB_NEWS, "herb")
    body = "".join(document.text[s.start : s.end] for s in document.sections)
    assert "狗尾草熬水能治近视吗（演示）" not in body and "没有任何证据" in body, body
    assert all(s.heading_path[:1] == ["狗尾草熬水能治近视吗（演示）"] for s in document.sections)
    opening_sentence = "专家表示，狗尾草熬水不能治近视。\n孩子近视应到正规医院验光配镜。\n"
    document = plain_document(opening_sentence, "herb")
    assert "不能治近视" in "".join(document.text[s.start : s.end] for s in document.sections)


async def test_the_title_line_is_never_the_answer(tmp_path):
    service = library(tmp_path, NEWS)
    result = await service.ask("狗尾草熬水能治近视吗？喝多久有效？")
    assert "没有任何证据" in tldr(result.answer), result.answer[:400]


ATROPINE_NOTES = """# 低浓度阿托品（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 适用人群

低浓度阿托品用于进展较快的学龄儿童，近视进展迅速（每年加深75度以上）者可与光学矫正联合使用。

## 常用浓度

临床研究中常用0.01%、0.025%和0.05%三种浓度。
"""


async def test_the_measure_asked_is_not_found_inside_the_drugs_name(tmp_path):
    """ "该用哪个浓度": 浓度 inside 低浓度阿托品 says nothing of which one; a figure in 度 is no concentration."""
    service = library(tmp_path, {"低浓度阿托品（演示）.md": ATROPINE_NOTES})
    result = await service.ask("低浓度阿托品该用哪个浓度？")
    assert "0.025%" in tldr(result.answer), result.answer[:400]
    (tmp_path / "other").mkdir()
    service = library(tmp_path / "other", {"低浓度阿托品（演示）.md": ATROPINE_NOTES.split("## 常用浓度")[0]})
    result = await service.ask("低浓度阿托品到底是0.01%还是0.05%的？该用哪个浓度？")
    assert "未找到" in tldr(result.answer), result.answer[:400]


RUMOUR_NEWS = """近视度数能降下来吗（演示）
本文为演示材料，用于软件测试，不作为临床依据。

网上常有近视度数降低甚至痊愈的传闻。例如：
有人近视500度，常年在户外工作，几年后说不用戴眼镜了。
有人当了护林员，说视力越来越好。

专家解释，真性近视是眼轴变长造成的，眼轴不能缩短，所以度数不会真正降低；所谓“降低”多是假性近视的成分消失，或者老花抵消了一部分近视。
"""


async def test_a_lead_in_is_never_the_tldr_without_what_it_leads_into(tmp_path):
    service = library(tmp_path, {"近视度数能降下来吗（演示）.txt": RUMOUR_NEWS})
    lead = tldr((await service.ask("网上说近视度数能降低，现实里“度数降低”一般是怎么回事？")).answer)
    assert not lead.removesuffix("【1】").endswith("：") and "有人近视500度" in lead, lead


CYCLOPLEGICS = """散瞳验光用药（演示）
本文为演示材料，用于软件测试，不作为临床依据。

1%阿托品眼膏作用最强、持续时间长，适用于6岁以下儿童。复方托吡卡胺滴眼液作用最弱、恢复最快，适用于12岁以上人群。
"""


async def test_a_drug_class_asked_of_is_named_by_its_members(tmp_path):
    service = library(tmp_path, {**NEWS, "散瞳验光用药（演示）.txt": CYCLOPLEGICS})
    result = await service.ask("医生说散瞳药有好几种，阿托品眼膏和托吡卡胺分别适合多大的孩子用？")
    assert "未找到" not in tldr(result.answer) and "适用于" in tldr(result.answer), result.answer[:400]


HIGH_MYOPIA = """高度近视随访（演示）
本文为演示材料，用于软件测试，不作为临床依据。

高度近视者应每年检查眼底。病理性近视期如视力稳定可定期随访；如突然出现视力下降、视物变形、眼前黑影增多或持续闪光感，应立即就医。
"""


async def test_the_askers_right_away_is_the_texts_immediately(tmp_path):
    """马上 (the asker's word) and 立即 (the text's) say the same: the one word of the question a text did not have."""
    service = library(tmp_path, {**NEWS, "高度近视随访（演示）.txt": HIGH_MYOPIA})
    result = await service.ask("病理性近视的人，出现哪些情况要马上去医院？")
    assert "视物变形" in tldr(result.answer), result.answer[:400]


FLU_VACCINE = """流感疫苗接种（演示）
本文为演示材料，用于软件测试，不作为临床依据。

接种流感疫苗是预防流感最有效的手段。优先推荐以下人群接种：60岁及以上的老年人；养老机构、长期护理机构等人群聚集场所的人员；孕妇；6～59月龄儿童。
"""


async def test_a_week_of_pregnancy_is_asked_in_weeks(tmp_path):
    """ "哪个孕周" asks a point in pregnancy: 长期 (of 长期护理机构) and 6～59月龄 do not answer it."""
    assert analyse("孕妇接种流感疫苗，哪个孕周打最合适？").quantity == "孕周"
    service = library(tmp_path, {**NEWS, "流感疫苗接种（演示）.txt": FLU_VACCINE})
    result = await service.ask("孕妇接种流感疫苗，哪个孕周打最合适？")
    assert "未找到" in tldr(result.answer), result.answer[:400]
