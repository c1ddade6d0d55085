"""Product and device pages (商品页、说明书摘要、品牌页、眼镜店网志): what an optical shop keeps about what it fits and
sells. A product page gives its facts as a table whose bars the text keeps ("学名 | HYPROMELLOSE… |"), one row a
line; a shop writes from its own experience ("以下三类人"); a clinician at the counter asks in everyday words (牌子,
舒服, 多少度 for a temperature, 一副 for one pair of lenses) and goes on from a comparison ("RGP硬镜和软镜比…").

Found on the stop-63 blind library (product pages, shop and clinic pages, device instructions). The texts here are
written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_news_reports import chat
from test_other_styles import library, tldr

from clincite.ingest.loaders.text import plain_document
from clincite.offline.questions import analyse

EYE_DROP_PAGE = (
    "演示牌人工泪液滴眼液（演示材料）\n"
    "演示牌人工泪液用于暂时缓解眼睛干涩引起的不适，每次1-2滴。\n"
    "项目 | 说明 |\n"
    "中文名 | 演示牌人工泪液滴眼液 |\n"
    "学名 | HYPROMELLOSE（羟丙甲纤维素） |\n"
    "适应症 | 暂时缓解眼睛干涩引起的灼热感与刺激感。 |\n"
    "禁忌症 | 对主要成分或任何添加物过敏者，请勿使用。 |\n"
    "保存方式 | 30℃以下储存，避免阳光直射。 |\n"
)

# The same rows a paragraph each, as another page's text keeps them
EYE_DROP_SHEET = (
    "演示牌润眼液（演示材料）\n\n"
    "学名 | CARMELLOSE SODIUM（羧甲基纤维素钠） |\n\n"
    "禁忌症 | 对主要成分或任何添加物过敏者，请勿使用。 |\n\n"
    "用法 | 每次1-2滴，一日数次。 |\n"
)

SHOP_BLOG = (
    "OK镜适合哪些人（演示材料）\n"
    "根据我们门店多年的验配经验，需要OK镜的大致是以下三类人：\n"
    "1）不适合或不想做激光矫视手术的成年人\n"
    "2）近视加深很快的儿童\n"
    "3）不希望孩子白天戴眼镜的家长\n"
)

LENS_CARE = (
    "角膜塑形镜的护理（演示材料）\n"
    "1、护理时要用硬性透气性接触镜专用的护理液，切勿使用软性镜片护理液。\n"
    "2、镜盒每次用后要清洗晾干，并定期更换。\n"
)

RGP_PAGE = (
    "RGP硬性隐形眼镜（演示材料）\n"
    "与软性隐形眼镜相比，RGP透氧性更高，成像更清晰，也不易沉淀蛋白。\n"
    "RGP保养相对简单，使用寿命较长，正确护理下，一副镜片一般可使用一到两年。\n"
)

SOFT_LENS_PAGE = (
    "软镜的使用周期（演示材料）\n软镜按更换周期分为日抛、月抛等：日抛软镜每天更换，月抛软镜开封后一般使用一个月。\n"
)

EYE_MASK_REVIEW = (
    "蒸汽眼罩评测（演示材料）\n"
    "蒸汽眼罩的温度并不是越高越好，一般在40-45℃时敷眼较为舒适，温度过高有低温烫伤的风险。\n"
    "发热时间也并非越长越好，多数产品的发热时间约为20分钟。\n"
)


def pages() -> dict[str, str]:
    return {
        "人工泪液-商品页.txt": EYE_DROP_PAGE,
        "OK镜-眼镜店网志.txt": SHOP_BLOG,
        "角膜塑形镜护理-论坛帖.txt": LENS_CARE,
        "RGP硬镜-诊所页.txt": RGP_PAGE,
        "软镜-选购指南.txt": SOFT_LENS_PAGE,
        "蒸汽眼罩-评测.txt": EYE_MASK_REVIEW,
    }


def test_a_plain_texts_table_rows_stay_one_row_a_line():
    """A web page's table saved as text, its bars kept: each row ends at its last bar, though the rows run as wide as
    the text's wrapped paragraphs — no row is joined to the next."""
    text = plain_document(EYE_DROP_PAGE, "人工泪液-商品页").text
    lines = [line for line in text.split("\n") if line.strip()]
    assert "学名 | HYPROMELLOSE（羟丙甲纤维素） |" in lines, lines
    assert "保存方式 | 30℃以下储存，避免阳光直射。 |" in lines, lines


async def test_the_row_labelled_with_what_is_asked_answers_not_a_row_of_another_aspect(tmp_path: Path):
    """ "主要成分学名是什么": the row labelled 学名 gives it; the 禁忌症 row mentions 主要成分 in passing and answers a
    contraindication, not the ingredient asked."""
    service = library(tmp_path, {**pages(), "润眼液-说明书.txt": EYE_DROP_SHEET})
    said = tldr((await service.ask("演示牌人工泪液的主要成分学名是什么？")).answer)
    assert "HYPROMELLOSE" in said and "禁忌" not in said, said
    said = tldr((await service.ask("演示牌润眼液的主要成分学名是什么？")).answer)
    assert "CARMELLOSE" in said and "禁忌" not in said, said


async def test_a_temperature_asked_as_how_many_degrees_is_answered_in_celsius(tmp_path: Path):
    """ "放在多少度以下保存": 30℃ is the number of degrees asked, and 储存 is the 保存 of the question."""
    service = library(tmp_path, pages())
    said = tldr((await service.ask("演示牌人工泪液平时要放在多少度以下保存？")).answer)
    assert "30℃以下储存" in said, said
    said = tldr((await service.ask("蒸汽眼罩热到多少度用起来最舒服？")).answer)
    assert "40-45℃" in said, said


def test_whose_experience_the_asker_goes_by_is_no_word_to_find():
    """ "照那家眼镜店视光师的经验": the shop and its optometrist are whose word it is; OK镜 is what is asked about."""
    asked = analyse("照那家眼镜店视光师的经验，来配OK镜的主要是哪几类人？")
    told = {t.text for t in asked.terms if t.scene}
    assert {"眼镜店", "视光师"} <= told, [(t.text, t.scene) for t in asked.terms]


async def test_the_kinds_of_people_a_shop_counts_answer_which_kinds_come(tmp_path: Path):
    """ "以下三类人" is how a text sorts them (三类), though it never writes 分类."""
    service = library(tmp_path, pages())
    answer = (await service.ask("照那家眼镜店视光师的经验，来配OK镜的主要是哪几类人？")).answer
    said = tldr(answer)
    assert "未找到" not in said, answer
    assert "激光矫视手术的成年人" in said, said


async def test_soft_lenses_named_either_way_are_one_thing(tmp_path: Path):
    """软性隐形眼镜 of the question is the 软性镜片 of the text."""
    service = library(tmp_path, pages())
    said = tldr((await service.ask("OK镜能不能拿软性隐形眼镜的护理液来洗？")).answer)
    assert "切勿使用软性镜片护理液" in said, said


def test_what_a_thing_is_compared_against_is_not_its_subject():
    """ "RGP硬镜和软镜比有哪些好处": the soft lens is what RGP is measured against; a follow-up goes on with RGP, and
    一副 (one pair) counts, it names nothing."""
    assert analyse("RGP硬镜和软镜比有哪些好处？").subject == "RGP"
    asked = analyse("那正常护理的话，一副能用多久？", ["RGP硬镜和软镜比有哪些好处？"])
    words = {t.text for t in asked.terms}
    assert "RGP" in words and "软镜" not in words and "一副" not in words, words


async def test_how_long_a_pair_lasts_follows_on_from_the_comparison(tmp_path: Path):
    service = library(tmp_path, pages())
    turns = await chat(service, "RGP硬镜和软镜比有哪些好处？")
    said = tldr((await service.ask("那正常护理的话，一副能用多久？", turns)).answer)
    assert "一到两年" in said, said


async def test_the_more_the_better_asked_twice_goes_on_with_the_product(tmp_path: Path):
    """ "越热越好", "越长越好": the 越…越 the asker compares by is no word; the follow-up is about the eye mask."""
    assert {t.text for t in analyse("蒸汽眼罩是不是越热越好？").terms} == {"蒸汽眼罩", "好"}
    service = library(tmp_path, pages())
    turns = await chat(service, "蒸汽眼罩是不是越热越好？")
    result = await service.ask("那发热时间呢，是不是越长越好？", turns)
    assert "蒸汽眼罩" in " ".join(q.text for q in result.sub_queries), result.sub_queries
    assert "发热时间也并非越长越好" in tldr(result.answer), result.answer
