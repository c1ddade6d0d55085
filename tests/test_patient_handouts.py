"""Patient handouts (患者须知) as hospitals and clinics put them on their web sites: a site's chrome above the title,
short section names each over a bulleted list ("清潔原則", "日常注意事項"), rules written as prohibitions with their
span ("7天內勿洗臉"), a risk said as one in so many ("約每兩萬位…會有一位"), and a region's own words — 雷射 for
激光, 機車 for 摩托车, 磁振造影 for 核磁共振 — where the asker says them the mainland way.

Found on the stop-57 blind library (pre- and post-operative and examination instructions saved from hospital and
clinic pages, most in Traditional characters). The handouts here are written for these tests in our own words
(演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import library, tldr

from clincite.ingest.loaders.text import plain_document
from clincite.offline.questions import analyse

# A clinic's product page: its list of services first, then the handout's title, an intro and four bulleted sections.
AFTER_LASER = (
    "服務項目:雙眼皮手術、人工水晶體介紹、乾眼治療\n\n"
    "眼科\n\n"
    "近視雷射手術術後注意事項（演示材料）\n\n"
    "產品介紹:\n\n"
    "近視雷射術前需完整評估角膜厚度與眼睛健康狀況,並由醫師 評估\n\n"
    "手術當天\n\n"
    "  • 回家後閉眼休息,依醫師指示服用止痛藥。\n\n"
    "  • 不可揉眼睛。\n\n"
    "清潔原則\n\n"
    "  • 術後兩星期內避免清水、洗面乳接觸眼睛。\n\n"
    "  • 術後一個月內避免游泳、泡湯。\n\n"
    "日常注意事項\n\n"
    "  • 一個月內騎乘機車請戴有面罩之安全帽。\n\n"
    "  • 術後兩星期外出請戴太陽眼鏡。\n"
)

# A hospital's examination handout: numbered rules, and the rare risk said as one in so many examinees.
DILATION = (
    "散瞳檢查須知（演示材料）\n\n"
    "(一)散瞳是為了看清眼底,點散瞳劑後約需三十分鐘以上,瞳孔才會放大。\n\n"
    "(二)檢查後看近處模糊約六小時,請勿開車。\n\n"
    "(三)散瞳藥物偶有副作用,如臉部潮紅、心跳加速;約每三萬位受檢者可能有一位誘發急性青光眼。\n"
)

# An outpatient surgery's after-care sheet: its rules as bullets, each a prohibition with its span.
MINOR_SURGERY = (
    "門診手術後須知（演示材料）\n\n"
    "- 今天請勿打開紗布。\n"
    "- 『5天內勿洗臉;洗頭請至少三天後以躺洗方式』,以免傷口感染。\n"
    "- 如需冰敷,每次約10分鐘。\n"
)

MRI = "磁振造影檢查須知（演示材料）\n\n下列情形不宜接受本檢查:\n1.裝有心臟節律器者。\n2.眼眶內可能留有金屬碎片者。\n"


def test_short_names_over_bulleted_lists_head_them_under_the_title_not_the_sites_chrome():
    sections = plain_document(AFTER_LASER, "近视雷射术后注意事项-某诊所").sections
    paths = [section.heading_path for section in sections]
    title = "近視雷射手術術後注意事項（演示材料）"
    assert [title, "清潔原則"] in paths and [title, "日常注意事項"] in paths, paths
    assert not any(path and path[0].startswith("服務項目") for path in paths), paths


async def test_a_rule_under_its_section_answers_in_the_askers_mainland_words(tmp_path: Path):
    """ "近视激光" is the clinic's 近視雷射, "摩托车" its 機車: the rule under 日常注意事項 answers."""
    service = library(tmp_path, {"近视雷射术后注意事项-某诊所.txt": AFTER_LASER})
    said = tldr((await service.ask("做完近视激光以后骑摩托车上班，要注意什么？")).answer)
    assert "騎乘機車請戴有面罩之安全帽" in said, said


async def test_how_long_a_restriction_lasts_is_answered_by_its_span(tmp_path: Path):
    """ "几天之内不能洗脸" asks how long the rule holds: "5天內勿洗臉" says it, though no 禁忌 word is written."""
    assert "禁忌证" not in analyse("眼科门诊小手术做完以后，几天之内不能洗脸？").aspects
    service = library(tmp_path, {"门诊手术后须知.txt": MINOR_SURGERY, "散瞳检查须知.txt": DILATION})
    said = tldr((await service.ask("眼科门诊小手术做完以后，几天之内不能洗脸？")).answer)
    assert "5天內勿洗臉" in said, said


async def test_a_risk_said_as_one_in_so_many_answers_how_likely(tmp_path: Path):
    """ "概率大概有多高" asks a rate; "約每三萬位受檢者可能有一位" gives it without the word 概率 or a percentage."""
    service = library(tmp_path, {"散瞳检查须知.txt": DILATION, "门诊手术后须知.txt": MINOR_SURGERY})
    said = tldr((await service.ask("听说散瞳药可能诱发急性青光眼，这种情况的概率大概有多高？")).answer)
    assert "每三萬位受檢者可能有一位" in said, said


async def test_the_mainland_name_of_an_examination_finds_the_regions_own(tmp_path: Path):
    service = library(tmp_path, {"磁振造影检查须知.txt": MRI, "散瞳检查须知.txt": DILATION})
    said = tldr((await service.ask("眼眶里可能留着铁屑，能做核磁共振吗？")).answer)
    assert "眼眶內可能留有金屬碎片者" in said, said


# A lens-fitting handout whose title names the lens and 注意事项; its first item is on follow-up visits.
ORTHO_K_NOTES = (
    "OK镜配戴注意事项\n"
    "家长在孩子配戴OK镜期间请注意以下几点（演示材料）:\n"
    "①初戴镜的前3个月内,至少复查4次,请按约定时间到验配处检查。戴镜3个月以后,每3个月定期复查一次。\n"
    "②取戴镜片前一定要洗手。\n"
    "③戴镜前在镜片内滴满润眼液。\n"
)


async def test_a_handouts_title_naming_注意事项_does_not_hide_its_follow_up_item(tmp_path: Path):
    """《OK镜配戴注意事项》 is the title over all the handout says, its follow-up visits too: "复查几次" finds them."""
    service = library(tmp_path, {"OK镜配戴注意事项-某眼科.txt": ORTHO_K_NOTES, "散瞳检查须知.txt": DILATION})
    said = tldr((await service.ask("戴OK镜的头三个月，至少要回去复查几次？")).answer)
    assert "至少复查4次" in said, said


async def test_还是_saying_a_state_goes_on_offers_no_choice(tmp_path: Path):
    """ "看近处还是模糊，会不会有问题？": still blurred — no comparison of 散瞳 and 眼底 is asked, no 区别 missing."""
    asked = "散瞳查完眼底过了一天，看近处还是模糊，会不会有问题？"
    assert "区别" not in analyse(asked).aspects
    assert "区别" in analyse("散瞳验光用托吡卡胺还是阿托品？").aspects
    service = library(tmp_path, {"散瞳检查须知.txt": DILATION, "门诊手术后须知.txt": MINOR_SURGERY})
    answer = (await service.ask(asked)).answer
    assert "看近處模糊約六小時" in tldr(answer) and "区别" not in answer, answer
