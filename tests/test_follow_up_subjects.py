"""What a follow-up goes on with: the thing the last question was about, never a span of time it told ("还是要等一段
时间", "先躺一会儿") nor a verb jieba ran together ("要盖够"); and a name the asker points at ("那个紧皮膏") is what the
follow-up asks of, not a class pointing back.

Found on follow-ups across the blind libraries of stops 51–63 (a forensic guide, an amblyopia leaflet, an old eye
textbook, a lens-fitting page). The texts here are written for these tests in our own words (演示材料，仅用于软件测试，
不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_news_reports import chat
from test_other_styles import library, tldr

from clincite.offline.questions import analyse

PATCHING = (
    "弱视遮盖治疗（演示材料）\n"
    "遮盖治疗是单眼弱视的常用方法，把视力较好的眼遮住，让弱视眼多用。"
    "每天遮盖的时间由医生根据弱视程度决定，常见为每天2至6小时。"
    "视力提高后不要突然停止遮盖，应在医生指导下逐渐减少遮盖时间，以免视力回退。\n"
)

LENS_CLEANING = (
    "角膜塑形镜的护理（演示材料）\n"
    "摘镜后用专用护理液揉搓清洗镜片，再放入盒中浸泡。镜盒每周清洗并晾干，每三个月更换一次。\n"
)


def carried(question: str, before: str) -> list[str]:
    return [t.text for t in analyse(question, [before]).terms if t.inherited]


def test_a_span_of_time_the_last_question_told_is_not_what_a_follow_up_goes_on_with():
    """ "是受伤后马上就能做，还是要等一段时间？": 一段时间 is when, not what; the follow-up asks on about the 伤情."""
    before = "眼外伤要做伤情鉴定，是受伤后马上就能做，还是要等一段时间？"
    assert analyse(before).subject != "一段时间"
    assert "一段时间" not in carried("那伤情比较疑难复杂的呢？什么时候鉴定？", before)


def test_a_verb_run_together_with_its_complement_is_no_name():
    """jieba writes "要盖够" as one word; it is 要 + 盖够, an everyday verb, not a product's name: 弱视 is the
    subject."""
    before = "弱视做遮盖，一天要盖够几个小时？盖全天效果会不会更好？"
    assert analyse(before).subject == "弱视"
    assert "弱视" in carried("那前后一共要盖多久？视力上来了能马上停吗？", before)


async def test_a_follow_up_on_patching_is_answered_from_the_amblyopia_text(tmp_path: Path):
    service = library(tmp_path, {"弱视遮盖治疗.txt": PATCHING, "角膜塑形镜护理.txt": LENS_CLEANING})
    turns = await chat(service, "弱视做遮盖，一天要盖够几个小时？")
    result = await service.ask("那视力上来了能马上停吗？", turns)
    searched = [q.text for q in result.sub_queries]  # the steps a clinician sees: what was looked up
    assert any("弱视" in q for q in searched), searched
    assert "不要突然停止遮盖" in tldr(result.answer), result.answer


def test_a_name_pointed_at_with_a_demonstrative_is_what_the_follow_up_asks_of():
    """ "那個緊皮膏要怎麼用？" after a question on 倒睫: 紧皮膏 is the ointment named, kept as a term; "这种药" still
    points back through its class."""
    before = "我妈睫毛往里倒着扎眼睛，老流泪怕光。光吃药能治好吗？"
    named = [t.text for t in analyse("那個緊皮膏要怎麼用？一天塗幾次？", [before]).terms]
    assert "紧皮膏" in named, named
    pointed = [t.text for t in analyse("这种药一天用几次？", [before]).terms]
    assert "药" not in pointed, pointed


ANGIOGRAPHY = (
    "眼底荧光血管造影检查须知（演示材料）\n"
    "检查前需要散瞳。散瞳后几个小时内看近处模糊、怕光，检查当天请不要自己开车。"
    "造影剂会让皮肤和尿液暂时发黄，一般一两天内随尿液排出，不必紧张。\n"
)

FUNDUS_SCREENING = (
    "糖尿病患者的眼底检查（演示材料）\n"
    "糖尿病患者应每年做一次眼底检查，病变较重者遵医嘱缩短间隔。视力明显下降时，应避免夜间开车。\n"
)


def test_a_follow_up_goes_on_with_the_whole_procedure_the_last_question_named():
    """ "刚做完眼底造影…": 造影 is written onto 眼底 — the chat is about the angiography, not any 眼底 text."""
    before = "我爸刚做完眼底造影，回家发现脸上和小便都发黄，这正常吗？"
    carried_on = [t.text for t in analyse("那检查当天我能自己开车回家吗？", [before]).terms if t.context]
    assert carried_on[:2] == ["眼底", "造影"], carried_on


async def test_driving_after_the_angiography_is_searched_and_answered_as_the_angiography(tmp_path: Path):
    service = library(tmp_path, {"眼底造影须知.txt": ANGIOGRAPHY, "糖尿病眼底检查.txt": FUNDUS_SCREENING})
    turns = await chat(service, "我爸刚做完眼底造影，回家发现脸上和小便都发黄，这正常吗？")
    result = await service.ask("那检查当天我能自己开车回家吗？", turns)
    searched = [q.text for q in result.sub_queries]
    assert any("造影" in q for q in searched), searched
    assert "检查当天请不要自己开车" in tldr(result.answer), result.answer
