"""Pages a clinic saves from health portals and hospital sites: a doctor's short answer that opens with a sentence
listing what its paragraphs then take in turn, a re-posted page with the reading of characters in brackets inside its
words ("時(shí)間"), a keyword line of spam over it and the site's breadcrumbs, a "关键词：" line that sums up with
figures. Each is read as its author meant it, and a clinician's everyday ways of asking (怎么传给别人, 碱烧伤,
怎么预防…感染, 它 after two things named) find what it says.

Found on the stop-54 blind library (portal and hospital pages saved as text). The texts here are written for these
tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import conclusion, library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders.text import plain_document
from clincite.offline.lexicon import get_lexicon
from clincite.offline.questions import analyse

# The opening sentence lists four causes; each paragraph after it takes one, in order, without naming it again.
DRY_EYE = (
    "干眼可能由泪液分泌不足、泪液蒸发过快、睑板腺功能障碍、自身免疫性疾病等原因引起,可通过人工泪液、热敷按摩、"
    "抗炎治疗等方式缓解（演示材料）。\n"
    "年纪增大后泪腺分泌减少,眼睛干涩易疲劳,可以用玻璃酸钠等人工泪液补充。\n"
    "长时间看屏幕、空调房里眨眼少,泪膜容易破裂,应减少连续用眼并增加环境湿度。\n"
    "油脂分泌异常导致泪膜不稳定,常见睑缘充血。需要每天热敷并按摩眼睑,必要时由医生加用抗炎眼药。\n"
    "干燥综合征等疾病会破坏泪腺组织,常伴口干,需要到风湿免疫科系统治疗。\n"
    "平时注意规律作息,少戴隐形眼镜。\n"
)

# A re-posted page: every unsure character carries its reading in brackets (as content farms' converters write them).
AMBLYOPIA_REPOST = (
    "弱視遮蓋要多久(jiǔ)\n"
    "弱視遮蓋的時(shí)間要看弱視的輕重(zhòng),由醫(yī)生根據(jù)複查結果調整(zhěng)（演示材料）。\n"
    "輕度弱視每天遮蓋健眼約2個(gè)小時(shí);中重(zhòng)度弱視每天可能需要遮蓋6個(gè)小時(shí)。\n"
)

# A spam keyword line and breadcrumbs over the page, as a re-posting site leaves them.
ACANTHAMOEBA = (
    "免费观看在线,热门视频一区,最新电影高清\n"
    "您的位置:健康网 > 眼科频道 > 眼科知识 > 预防 > 戴隐形眼镜要防棘阿米巴角膜炎\n"
    "棘阿米巴角膜炎是棘阿米巴原虫感染角膜引起的严重角膜炎,多与隐形眼镜护理不当有关（演示材料）。\n"
    "戴隐形眼镜的人如何预防?\n"
    "1、不要用自来水冲洗镜片或镜盒,只用正规护理液。\n"
    "2、游泳、洗澡时不要戴隐形眼镜。\n"
)

REFRACTIVE = (
    "ICL晶体植入术\n"
    "不切削角膜,把一片可折叠的人工晶体放进眼内来矫正近视（演示材料）。\n"
    "关键词:不切角膜、矫治范围广(近视1800度以内,散光600度以内)、必要时可以取出。\n"
    "ICL植入位置:虹膜之后、自身晶状体之前的后房。\n"
)

ORTHO_K = (
    "角膜塑形镜\n"
    "OK镜适用于近视度数在600度以内、角膜曲率在正常范围的儿童（演示材料）。\n"
    "OK镜需要每晚佩戴8～10小时,白天摘下。\n"
)

PINK_EYE = (
    "红眼病会传染吗\n"
    "会。红眼病即急性细菌性结膜炎,传染性强,主要通过接触传播,比如共用毛巾、脸盆,或揉眼后手上的分泌物沾到门把手上（演示材料）。\n"
)

CHEMICAL_INJURY = (
    "眼部化学伤的急救\n"
    "酸碱溅入眼内,应立即用大量清水持续冲洗至少15分钟,再尽快就医（演示材料）。\n"
    "碱性灼伤渗透快、损伤深,恢复期要定期复查眼压,警惕继发性青光眼。\n"
)


def turns(question: str, result) -> list[ChatTurn]:
    return [ChatTurn(role="user", content=question), ChatTurn(role="assistant", content=result.answer)]


def pages(tmp_path: Path):
    return library(
        tmp_path,
        {
            "干眼的原因和处理.txt": DRY_EYE,
            "弱视遮盖时间.txt": AMBLYOPIA_REPOST,
            "棘阿米巴角膜炎.txt": ACANTHAMOEBA,
            "ICL.txt": REFRACTIVE,
            "OK镜.txt": ORTHO_K,
            "红眼病.txt": PINK_EYE,
            "化学伤.txt": CHEMICAL_INJURY,
        },
    )


def test_paragraphs_after_an_opening_list_are_headed_by_its_topics_in_turn():
    document = plain_document(DRY_EYE, "干眼的原因和处理")
    by_path = {tuple(s.heading_path): document.text[s.start : s.end].strip() for s in document.sections}
    assert by_path[("睑板腺功能障碍",)].startswith("油脂分泌异常"), by_path
    assert by_path[("泪液分泌不足",)].startswith("年纪增大后"), by_path
    first, last = document.sections[0], document.sections[-1]
    assert not first.heading_path and document.text[first.start : first.end].startswith("干眼可能由")
    assert not last.heading_path and "平时注意规律作息" in document.text[last.start : last.end]  # under no topic


def test_numbered_or_self_named_paragraphs_keep_their_own_reading():
    """Paragraphs that open with a number or a topic's name ("1.病因:", "物理治疗是…") say themselves what they are
    on: no topic from the opening sentence is put over them."""
    numbered = (
        "麦粒肿和霰粒肿在病因、症状、治疗等方面不同（演示材料）。\n"
        "1.病因:霰粒肿是睑板腺开口阻塞,麦粒肿是细菌感染。\n"
        "2.症状:霰粒肿多为无痛肿块,麦粒肿红肿疼痛。\n"
        "3.治疗:霰粒肿大的需手术切除,麦粒肿化脓后切开排脓。\n"
    )
    assert all(not section.heading_path for section in plain_document(numbered, "麦粒肿").sections)
    named = "疼痛的处理包括心理治疗、物理治疗、药物治疗等（演示材料）。\n" + "".join(
        f"{name}是综合处理的一部分,由专科医生评估后安排,具体方案因人而异。\n"
        for name in ("心理治疗", "物理治疗", "药物治疗")
    )
    assert all(not section.heading_path for section in plain_document(named, "疼痛").sections)


def test_a_reposted_pages_pinyin_notes_are_taken_out_of_its_words_and_a_textbooks_note_stays():
    document = plain_document(AMBLYOPIA_REPOST, "弱视遮盖时间")
    assert "遮蓋健眼約2個小時" in document.text
    assert "(shí)" not in document.text
    note = "霰(xiàn)粒肿是睑板腺的慢性肉芽肿性炎症，多见于儿童和青年，较大者需要手术刮除（演示材料）。\n"
    assert "霰(xiàn)粒肿" in plain_document(note, "霰粒肿").text  # one reading in a paragraph is the author's


def test_a_spam_keyword_line_heads_nothing():
    document = plain_document(ACANTHAMOEBA, "棘阿米巴角膜炎")
    assert all("免费观看" not in " ".join(section.heading_path) for section in document.sections)


async def test_a_topic_named_only_in_the_opening_list_finds_its_paragraph(tmp_path: Path):
    """The paragraph on MGD is cited under its topic; the opening sentence that lists MGD among three other causes
    is no answer of how to treat it, so never the whole answer."""
    result = await pages(tmp_path).ask("MGD导致的干眼一般怎么处理？")
    line = next((x for x in conclusion(result.answer).splitlines() if "热敷并按摩眼睑" in x), "")
    assert "睑板腺功能障碍" in line.split("**：", 1)[0], result.answer  # "- **干眼：睑板腺功能障碍**：油脂分泌…"


async def test_the_time_asked_is_found_in_a_page_with_pinyin_notes_and_quoted_without_them(tmp_path: Path):
    result = await pages(tmp_path).ask("轻度弱视每天遮几个小时？")
    said = tldr(result.answer)
    assert "2個小時" in said, result.answer
    assert "(" not in said


async def test_a_keyword_line_with_figures_answers_how_much(tmp_path: Path):
    result = await pages(tmp_path).ask("ICL最高能矫正多少度近视？")
    assert "近视1800度以内" in tldr(result.answer), result.answer


async def test_everyday_words_for_spreading_and_for_an_alkali_burn(tmp_path: Path):
    service = pages(tmp_path)
    spread = await service.ask("红眼病是怎么传给别人的？")
    assert "接触传播" in tldr(spread.answer), spread.answer
    burn = await service.ask("碱烧伤的病人恢复期要警惕什么眼压问题？")
    assert "继发性青光眼" in tldr(burn.answer), burn.answer


async def test_how_to_prevent_an_infection_asks_for_precautions_not_breadcrumbs(tmp_path: Path):
    result = await pages(tmp_path).ask("戴隐形眼镜的人怎么预防阿米巴感染？")
    said = tldr(result.answer)
    assert "自来水" in said or "游泳" in said, result.answer
    assert "您的位置" not in said


def test_how_to_prevent_an_infection_is_a_question_of_precautions():
    lexicon = get_lexicon()
    assert analyse("戴隐形眼镜的人怎么预防阿米巴感染？", [], lexicon).aspects == ["注意事项"]
    assert analyse("OK镜有感染的风险吗？", [], lexicon).aspects == ["风险与并发症"]
    assert analyse("可以预防近视吗？", [], lexicon).aspects == []  # whether it prevents, not how


async def test_a_follow_up_goes_on_with_what_the_last_question_was_asked_of(tmp_path: Path):
    """它 after "ICL最高能矫正多少度近视和散光？" is ICL, not 近视 and 散光 (what ICL corrects); after two questions at
    once, "OK镜适合多少度的孩子？角膜曲率有要求吗？", the second asks on about the first one's subject."""
    service = pages(tmp_path)
    asked = "ICL最高能矫正多少度近视和散光？"
    first = await service.ask(asked)
    result = await service.ask("那它放在眼睛里哪个位置？", turns(asked, first))
    assert "虹膜之后" in tldr(result.answer), result.answer
    asked = "OK镜适合多少度的孩子？角膜曲率有要求吗？"
    first = await service.ask(asked)
    result = await service.ask("那一天要戴多久？", turns(asked, first))
    searched = [analysis.sub_query.text for analysis in result.analyses]
    assert any(text.startswith("OK镜") for text in searched), searched
    assert not any("角膜曲率" in text for text in searched), searched


def test_a_follow_up_after_two_things_compared_goes_on_with_both():
    lexicon = get_lexicon()
    follow_up = analyse("那哪个恢复快？", ["全飞秒和ICL有什么区别？"], lexicon)
    assert {"全飞秒", "ICL"} <= {term.text for term in follow_up.terms}
