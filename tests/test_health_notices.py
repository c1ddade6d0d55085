"""Public-health notices, policy explanations and official Q&A (卫健委、疾控、药监、卫生署): the body that issued a
guideline, a programme's rules and figures, the sign to act on. The asker names the body as people say it (卫健委 for
国家卫生健康委, 药监局), the money in the currency the notice gives (8,000港元), a sign in everyday words (中暑的苗头
for 中暑先兆, 发红 for 眼红, 流眼泪 for 流泪, 彻底治好 for 根治, 晒太阳 for 阳光), a Taiwanese 人工水晶體 as a 人工晶体
and its 差額 as a 差价; "都查哪些项目" asks for the items, not for a word 哪些项目; "这样下去" goes on with the last
question's subject, and a place (香港的…计划) says whose programme it is, not what is asked about.

Found on the stop-59 blind library (official notices, press releases, interviews and regulators' Q&A pages in
Simplified and Traditional characters). The notices here are written for these tests in our own words (演示材料，
仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_news_reports import chat
from test_other_styles import library, tldr

from clincite.offline.questions import analyse

INTERVIEW = (
    "国家卫生健康委在线访谈：解读儿童青少年近视防控适宜技术指南（演示材料）\n"
    "10:02\n主持人\n请问专家，《儿童青少年近视防控适宜技术指南》的主要内容是什么？\n"
    "10:03\n专家\n《指南》提出的核心技术包括：筛查视力不良与近视、建立视力健康档案、培养健康用眼行为、建设视觉友好环境、"
    "增加日间户外活动、规范视力健康监测与评估、科学诊疗与矫治。\n"
    "10:05\n主持人\n户外活动为什么能预防近视？\n"
    "10:06\n专家\n户外阳光中的自然光能促进视网膜分泌多巴胺，从而抑制眼轴过快增长，降低近视发生的风险。\n"
)

SCHOOL_CHECK = (
    "市卫生局：小学生凭护眼卡享每年一次免费视力检查（演示材料）\n"
    "发布时间：2023-09-01 来源：市卫生局\n"
    "市卫生局提供在读小学生每年1次免费视力检查，检查内容包括散瞳验光、裸眼视力、矫正视力以及裂隙灯检查，"
    "家长持护眼卡及孩子的医保卡到合作眼科医院即可预约。\n"
)

HEAT = (
    "高温天气健康防护提示（演示材料）\n"
    "一、老年人、儿童和慢性病患者应避开午后高温时段外出。\n"
    "二、出现头晕、乏力、大量出汗、心慌等中暑先兆症状时，应立即转移到阴凉通风处，补充淡盐水，必要时及时就医。\n"
    "编辑：某某 审核：某某\n"
)

CATARACT_SCHEME = (
    "耀眼行动：政府资助白内障手术计划简介（演示材料）\n"
    "该计划由医院管理局推出，让轮候公立医院白内障手术的病人到私营眼科机构接受手术。\n"
    "申请流程：\n"
    "- 须先登记电子健康纪录\n"
    "- 于资助到期日前完成手术前评估及白内障手术\n"
    "- 只需支付不高于8,000港元的自付额，其余费用由计划资助\n"
    "参加者须已在公立医院白内障手术轮候名单上，并适合接受局部麻醉手术。\n"
)

OK_LENS = (
    "角膜塑形镜验配与使用提示（演示材料）\n"
    "来源：某市疾病预防控制中心\n"
    "角膜塑形镜只能延缓近视加深，无法根治近视，停戴后效果会逐渐消退，需要长期规范使用。\n"
    "使用者应按时复查；若出现眼红、流泪、视力模糊等异常，应立即停戴并就医。\n"
)

LENS_CO_PAYMENT = (
    "特殊功能人工水晶體自付差額問答（演示材料）\n"
    "◎一般功能人工水晶體健保有給付嗎？\n"
    "符合白內障手術規範者，其使用的一般功能人工水晶體屬於健保給付範圍。\n"
    "◎特殊功能人工水晶體可以自付差額嗎？\n"
    "健保自96年10月1日起，開放白內障病人以自付差額方式選用特殊功能人工水晶體。\n"
)

EYE_DROPS = (
    "省药监局提醒：眼药水也有禁忌（演示材料）\n"
    "激素类眼药水的名称中多带有“龙”“松”等字样，须遵医嘱使用，不可自行长期使用。\n"
    "眼药水开封后一般不得超过4周，人工泪液等单支包装开封后24小时内用完。\n"
)

OLDER_EYES = (
    "长者眼科检查服务（演示材料）\n"
    "视力开始退化的长者容易在家中发生意外和跌倒，严重时可导致骨折。\n"
    "定期眼科检查有助及早发现白内障、青光眼和黄斑病变。\n"
)

MYOPIA_GROWING = (
    "暑假护眼提醒（演示材料）\n"
    "近视度数不断加深时，眼球的眼轴会被拉长，这种变化难以逆转，日后可能带来视网膜脱离、黄斑部病变，严重者甚至失明。\n"
)


def notices() -> dict[str, str]:
    """Every notice above, one library, as a clinic keeps them."""
    return {
        "近视防控适宜技术访谈-某网.txt": INTERVIEW,
        "小学生免费视力检查-某卫生局.txt": SCHOOL_CHECK,
        "高温健康提示-某区政府.txt": HEAT,
        "白内障手术资助计划-某诊所.txt": CATARACT_SCHEME,
        "角膜塑形镜提示-某疾控.txt": OK_LENS,
        "人工水晶体自付差额-某网.txt": LENS_CO_PAYMENT,
        "眼药水禁忌-某药监局.txt": EYE_DROPS,
        "长者眼科检查-某社区.txt": OLDER_EYES,
        "暑假护眼-某报.txt": MYOPIA_GROWING,
    }


async def test_the_body_that_issued_a_guideline_is_named_as_people_say_it(tmp_path: Path):
    """卫健委 is the 国家卫生健康委 of the interview: the core techniques are listed, not "未找到"."""
    service = library(tmp_path, notices())
    said = tldr((await service.ask("卫健委那个近视防控适宜技术指南，说的核心技术到底是哪几样？")).answer)
    assert "筛查视力不良与近视" in said, said


async def test_which_items_are_checked_is_asked_by_the_items_not_a_word_哪些项目(tmp_path: Path):
    service = library(tmp_path, notices())
    said = tldr((await service.ask("小学生的免费视力检查都查哪些项目？")).answer)
    assert "散瞳验光、裸眼视力、矫正视力以及裂隙灯检查" in said, said


async def test_a_sign_in_everyday_words_finds_the_notices_own(tmp_path: Path):
    """中暑的苗头 is the notice's 中暑先兆."""
    service = library(tmp_path, notices())
    said = tldr((await service.ask("天热出现中暑的苗头了该怎么办？")).answer)
    assert "应立即转移到阴凉通风处" in said, said


async def test_a_price_is_given_in_the_currency_the_notice_writes(tmp_path: Path):
    """ "最多要掏多少钱": "不高于8,000港元的自付额" gives the figure, in Hong Kong dollars — the item as words, without
    the page's "- " mark."""
    service = library(tmp_path, notices())
    answer = (await service.ask("参加耀眼行动做白内障手术，病人自己最多要掏多少钱？")).answer
    said = tldr(answer)
    assert "8,000港元" in said, said
    assert not said.startswith("-") and "；-" not in answer and "；- " not in answer, answer


async def test_whether_ok_lenses_cure_myopia_is_answered_by_无法根治(tmp_path: Path):
    service = library(tmp_path, notices())
    said = tldr((await service.ask("戴OK镜能不能把小孩的近视彻底治好？")).answer)
    assert "无法根治近视" in said, said


async def test_red_and_watering_eyes_under_a_lens_are_the_notices_眼红_流泪(tmp_path: Path):
    service = library(tmp_path, notices())
    turns = await chat(service, "孩子戴OK镜，平时有什么要注意的？")
    said = tldr((await service.ask("戴着它要是眼睛发红、老流眼泪怎么办？", turns)).answer)
    assert "应立即停戴并就医" in said, said


async def test_a_taiwanese_人工水晶體_and_its_差額_are_the_askers_人工晶体_and_差价(tmp_path: Path):
    service = library(tmp_path, notices())
    said = tldr((await service.ask("想换特殊功能的人工晶体，从什么时候开始可以只补差价？")).answer)
    assert "96年10月1日" in said, said


async def test_a_drugs_name_is_what_the_notice_calls_its_名称(tmp_path: Path):
    service = library(tmp_path, notices())
    said = tldr((await service.ask("眼药水有没有办法从药名上看出来是激素类的？")).answer)
    assert "“龙”“松”" in said, said


async def test_sunshine_asked_of_is_the_sunlight_the_expert_explains(tmp_path: Path):
    service = library(tmp_path, notices())
    said = tldr((await service.ask("为什么多在户外晒晒太阳就能预防近视？")).answer)
    assert "多巴胺" in said, said


async def test_old_people_asked_of_are_the_notices_长者(tmp_path: Path):
    service = library(tmp_path, notices())
    said = tldr((await service.ask("家里老人为什么要定期查眼睛？")).answer)
    assert "容易在家中发生意外和跌倒" in said, said


async def test_going_on_like_this_goes_on_with_the_last_questions_subject(tmp_path: Path):
    """ "这样下去会引起哪些眼病？" after a question on rising myopia is asked of 近视, not of nothing."""
    asked = analyse("这样下去会引起哪些眼病？", ["近视度数一直往上涨，眼球会发生什么变化？"])
    assert asked.follow_up and "近视" in asked.resolved, asked.resolved
    service = library(tmp_path, notices())
    turns = await chat(service, "近视度数一直往上涨，眼球会发生什么变化？")
    said = tldr((await service.ask("这样下去会引起哪些眼病？", turns)).answer)
    assert "视网膜脱离" in said, said


def test_a_place_says_whose_programme_it_is_not_what_is_asked_about():
    assert analyse("台北的护眼护照是什么？").subject != "台北"
    assert analyse("香港的耀眼行动是个什么计划？").subject != "香港"


def test_an_interviews_clock_heads_nothing():
    """An online interview's transcript opens on its clock ("17:07"): no passage is said to be "原文位于“17:07”"."""
    from clincite.ingest.loaders.text import plain_document

    transcript = (
        "17:07\n\n主持人\n\n各位网友大家好，欢迎收看在线访谈。\n\n17:10\n\n专家\n\n指南提出的核心技术共有七项。\n"
    )
    document = plain_document(transcript, "近视防控访谈-某网")
    assert all("17:07" not in section.heading_path for section in document.sections), document.sections


def test_a_reposted_pages_breadcrumbs_are_not_its_heading():
    """A repost opens on its site's breadcrumbs: its title line below them heads the page, not "首页 > 资讯 > …"."""
    from clincite.ingest.loaders.text import plain_document

    page = (
        "首页 > 资讯 > 角膜塑形镜验配避坑指南\n\n角膜塑形镜验配避坑指南\n\n2025-06-28 来源：某市疾控\n\n"
        "角膜塑形镜应在具备眼科诊疗科目的医疗机构验配，验配前须做全面眼部检查。\n"
    )
    document = plain_document(page, "角膜塑形镜验配-某疾控转载")
    headings = [heading for section in document.sections for heading in section.heading_path]
    assert headings == ["角膜塑形镜验配避坑指南"], headings
