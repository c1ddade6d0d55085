"""Health news reports (健康新闻): a reporter tells a patient's story and quotes the doctor, with datelines, sources
and editors' lines around it. The answer is the doctor's sentence or the story's outcome, written in the paper's
words where the asker uses everyday ones: 头疼 for 头痛, 肠胃 for 胃肠道, 散瞳 for 瞳孔散大, 空着肚子 for
禁食; pupils (小学生) where the paper writes of children (儿童); "什么眼病" where the story names the disease.

Found on the stop-58 blind library (news pages from papers, TV stations and portals in Simplified and Traditional
characters). The reports here are written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.offline.questions import analyse
from clincite.question.service import TwoStageQueryService

OUTDOORS = (
    "孩子近视低龄化 专家建议每天户外两小时（演示材料）\n"
    "本报讯（记者 王某 通讯员 李某）暑假过半，市眼科医院视光门诊前来验光的孩子明显增多。\n"
    "“近视一旦发生就不可逆。”该院视光中心主任张医生介绍，一项针对本市学龄儿童的调查显示，儿童平均每天户外活动只有约"
    "70分钟，远低于建议的每天2小时。\n"
    "张医生提醒，户外的自然光有助于延缓近视发生，家长应安排孩子每天累计户外活动2小时以上。\n"
    "责任编辑：赵某\n"
)

ATROPINE = (
    "低浓度阿托品能否预防近视？研究给出答案（演示材料）\n"
    "2024-05-10 10:21 来源：某晚报\n"
    "近视发病越来越早，能不能在孩子近视之前就把它挡住？这是不少家长关心的问题。某大学眼科中心近日公布了一项为期两年的"
    "研究结果。\n"
    "研究团队招募了数百名4至9岁、尚未近视、父母至少一方近视的儿童，随机分为0.05%阿托品组、0.01%阿托品组与安慰剂组，"
    "每晚睡前每只眼滴1滴，每4个月复查一次屈光度和眼轴。\n"
    "结果显示，0.05%阿托品组两年内的近视发生率明显低于安慰剂组，快速近视偏移的孩子也更少；0.01%组与安慰剂组的差别"
    "则不明显。研究人员认为，浓度是效果的关键。\n"
    "“近视一旦出现就不可逆，越早出现，将来发展成高度近视的风险越高。”研究负责人说，这项研究为高风险儿童提供了一种"
    "可能的预防手段，但何时开始、用多久，仍要由医生根据孩子的情况决定。\n"
    "研究负责人表示，阿托品眼药水最常见的副作用是畏光，0.05%组出现畏光的比例与安慰剂组相差不大，多数孩子可以耐受，"
    "但须在医生指导下使用，不可自行购买。\n"
    "专家同时提醒，药物不能代替户外活动，孩子每天仍应保证2小时以上的户外时间。\n"
    "责任编辑：钱某\n"
)

SALTY_DISHES = (
    "退休教師做菜越來越鹹 原來是眼睛出了問題（演示材料）\n"
    "〔記者某某／台北報導〕一名68歲退休教師近半年看東西越來越模糊，夜間開車覺得對面車燈特別刺眼，"
    "做菜時把食譜上的2匙鹽看成5匙，家人抱怨菜越來越鹹，就醫後才知道是白內障。\n"
    "眼科醫師表示，白內障是水晶體逐漸混濁，多見於年長者，影響日常生活時可考慮手術。\n"
    "請繼續往下閱讀...\n"
)

HEADACHE = (
    "头痛呕吐 病根竟在眼睛（演示材料）\n"
    "本报讯 近日气温骤降，市人民医院眼科接诊的急性青光眼患者明显增多。\n"
    "该院眼科主任表示，老年人突然出现头痛、呕吐，不要只想到胃肠道疾病，也可能是急性闭角型青光眼发作，"
    "情绪激动、在昏暗环境中久留都可能诱发。\n"
)

FLOATERS = (
    "视力1.0也要查眼底？医生：飞蚊症别大意（演示材料）\n"
    "一名视力1.0的患者偶尔看到眼前有小黑点飘动，医生为其瞳孔散大后详细检查眼底，发现视网膜周边已有一个裂孔，"
    "及时做了激光治疗。\n"
    "医生解释，视网膜像贴在眼球内壁的一层薄纸，只要有一个小裂孔，日常活动中眼球反复受到震动牵拉，时间一长，"
    "小裂孔就会发展成大范围的视网膜脱离。\n"
    "医生提醒，飞蚊突然增多或出现闪光感，应尽快就医。\n"
)

DIABETES = (
    "糖友视力骤降 竟是眼底出血（演示材料）\n"
    "荆楚网消息（通讯员 某某）57岁的李先生有15年糖尿病史，近日右眼视力突然下降，检查发现玻璃体出血。\n"
    "医生介绍，病程超过10年的糖尿病患者，大多会出现不同程度的视网膜病变。\n"
    "医生提醒，糖尿病患者确诊后应每年检查一次眼底，并每三个月检查一次糖化血红蛋白。\n"
)

CATARACT_DAY = (
    "白內障手術注意事項（演示材料）\n"
    "1.手術當天可正常飲食，不用禁食，局部麻醉者避免吃太刺激的食物。\n"
    "2.手術當天請家屬陪同。\n"
)


def newsroom() -> dict[str, str]:
    """Every report above, one library: each is weighed against the others as in a clinic's real collection."""
    return {
        "儿童户外活动-某报.txt": OUTDOORS,
        "低浓度阿托品预防近视-某晚报.txt": ATROPINE,
        "退休教师白内障-某报.txt": SALTY_DISHES,
        "头痛呕吐青光眼-某报.txt": HEADACHE,
        "飞蚊症查眼底-某报.txt": FLOATERS,
        "糖尿病眼底出血-某报.txt": DIABETES,
    }


async def chat(service: TwoStageQueryService, question: str) -> list[ChatTurn]:
    """The chat after one question: it and its report."""
    first = await service.ask(question)
    return [ChatTurn(role="user", content=question), ChatTurn(role="assistant", content=first.answer)]


async def test_pupils_asked_of_are_answered_by_what_a_report_says_of_children(tmp_path: Path):
    """小学生 are children: "儿童平均每天户外活动只有约70分钟" answers how long pupils spend outdoors."""
    service = library(tmp_path, newsroom())
    said = tldr((await service.ask("本市的小学生平时一天在户外待多长时间？")).answer)
    assert "每天户外活动只有约70分钟" in said, said


async def test_putting_a_drug_in_asks_nothing_a_report_on_the_drug_must_write(tmp_path: Path):
    """ "那滴了以后最常见的副作用是什么？" after low-dose atropine: the side effect, not the trial's "每晚…滴一次"."""
    service = library(tmp_path, newsroom())
    turns = await chat(service, "孩子还没近视，现在开始滴低浓度阿托品能预防吗？")
    said = tldr((await service.ask("那滴了以后最常见的副作用是什么？", turns)).answer)
    assert "最常见的副作用是畏光" in said, said


async def test_the_disease_asked_for_is_the_one_the_story_names(tmp_path: Path):
    """ "最后查出来是什么眼病？": the story's outcome (白內障) answers; no text calls it 眼病."""
    service = library(tmp_path, newsroom())
    answer = (await service.ask("家里老人做菜越来越咸，看食谱把盐的分量看错了，最后查出来是什么眼病？")).answer
    assert "就醫後才知道是白內障" in tldr(answer), answer
    assert "**越来越**" not in answer, answer  # an adverb names no part of the answer


async def test_everyday_words_for_symptoms_find_the_papers_own(tmp_path: Path):
    """头疼、肠胃 are the paper's 头痛、胃肠道."""
    service = library(tmp_path, newsroom())
    said = tldr((await service.ask("老人这两天头疼、想吐，家里以为是肠胃不好，会不会是眼睛的问题？")).answer)
    assert "也可能是急性闭角型青光眼发作" in said, said


async def test_散瞳_is_the_reports_瞳孔散大(tmp_path: Path):
    service = library(tmp_path, newsroom())
    said = tldr((await service.ask("视力挺好，就是偶尔眼前有小黑点飘，有必要散瞳仔细查眼底吗？")).answer)
    assert "发现视网膜周边已有一个裂孔" in said, said


async def test_how_much_of_a_thing_decides_nothing(tmp_path: Path):
    """整片 of "发展成整片脱离" says how much of the retina comes off, as 一片 would; the text never writes it."""
    service = library(tmp_path, newsroom())
    said = tldr((await service.ask("视网膜上只有一个很小的洞，为什么时间长了会发展成整片脱离？")).answer)
    assert "小裂孔就会发展成大范围的视网膜脱离" in said, said


async def test_a_question_opening_on_那_goes_on_with_the_last_ones_subject(tmp_path: Path):
    """ "那平时除了查眼底，多久要查一次糖化？" after a question on 糖尿病 is searched with 糖尿病."""
    asked = analyse("那平时除了查眼底，多久要查一次糖化？", ["得了糖尿病一般多少年以后眼底开始出问题？"])
    assert asked.follow_up and "糖尿病" in asked.resolved, asked.resolved
    service = library(tmp_path, newsroom())
    turns = await chat(service, "得了糖尿病一般多少年以后眼底开始出问题？")
    result = await service.ask("那平时除了查眼底，多久要查一次糖化？", turns)
    assert any("糖尿病" in q.text for q in result.sub_queries), [q.text for q in result.sub_queries]
    assert "每三个月检查一次糖化血红蛋白" in tldr(result.answer), result.answer


async def test_an_empty_stomach_is_asked_of_where_a_sheet_says_禁食(tmp_path: Path):
    service = library(tmp_path, {"白内障手术注意事项-某诊所.txt": CATARACT_DAY, "头痛呕吐青光眼-某报.txt": HEADACHE})
    said = tldr((await service.ask("明天做白内障手术，早上还能吃早饭吗？要不要空着肚子去？")).answer)
    assert "不用禁食" in said, said


def test_whether_a_product_is_靠谱_asks_how_well_it_works():
    assert analyse("网上卖的护眼仪、按摩器，靠不靠谱？").aspects == ["疗效"]


def test_a_laser_pointer_is_one_thing_asked_about():
    assert analyse("小孩子玩的激光笔，功率多小就足以把眼睛照坏？").subject == "激光笔"
