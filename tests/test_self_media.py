"""Self-media articles (公众号、头条号、小红书笔记): a hospital's or a blogger's post, written to be shared. It opens on
a reader's question in quotes ("“…能不能也用来预防？”"), states what many believe before saying it is wrong, lists
warning signs under emoji bullets (❌ ✅ 👉), and is asked of in a parent's words ("先滴点阿托品预防一下", "青光眼
体质的人"), often as a story that asks what happened ("这是怎么回事？") and goes on about the answer.

Found on the stop-61 blind library (self-media articles in Simplified and Traditional characters). The posts here are
written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_news_reports import chat
from test_other_styles import library, tldr

from clincite.offline.questions import analyse

FLOATERS_POST = (
    "眼前飘着小黑点？别慌（演示材料）\n"
    "你有没有过这种体验：眼前突然出现小黑点、小细丝，像蚊子一样飘来飘去，怎么揉眼都赶不走？\n"
    "这在医学上叫做飞蚊症，是眼球里的玻璃体随着年龄增长液化、混浊造成的。\n"
    "飞蚊症不只是老人才有，高度近视的年轻人也常常提前出现。\n"
)

WARNING_SIGNS_POST = (
    "飞蚊症什么时候要看急诊（演示材料）\n"
    "大多数飞蚊症不需要治疗，但要留意它的变化。\n"
    "如果飞蚊出现以下情况，请立刻去看医生：\n"
    "❌ 黑影突然增多，像下雨一样\n"
    "❌ 眼前出现闪光感\n"
    "❌ 视力突然下降，像有帘子挡住视线\n"
)

ATROPINE_POST = (
    "阿托品能不能用来预防近视？（演示材料）\n"
    "“孩子还没近视，远视储备不够了，能不能先滴阿托品预防？”\n"
    "这类问题博主几乎每天都会遇到。\n"
    "目前低浓度阿托品获批的用途是延缓已经近视的儿童近视加深，用于尚未近视的孩子属于超出说明书的用法，要由医生评估。\n"
    "远视储备不足的孩子，首先要保证每天两小时户外活动，并定期复查。\n"
    "低浓度阿托品是怎么控制近视的？它能减缓眼轴变长，从而延缓近视加深。\n"
    "已经近视的孩子用上低浓度阿托品，常见的副作用是畏光和看近处模糊，多数较轻。\n"
)

BLUE_LIGHT_POST = (
    "防蓝光眼镜能防近视吗（演示材料）\n"
    "很多人都认为，佩戴防蓝光眼镜能够预防近视。\n"
    "但其实，这是个误区。\n"
    "目前没有充分的科学证据表明防蓝光眼镜能预防近视，它最多减轻一些看屏幕时的视疲劳。\n"
)

GLAUCOMA_POST = (
    "头痛眼痛还呕吐，可能是急性青光眼（演示材料）\n"
    "前房浅、房角窄的人，在以下情况容易诱发急性闭角型青光眼发作：\n"
    "① 在黑暗的环境里待得太久，或者情绪激动；\n"
    "② 使用散瞳药或某些感冒药；\n"
    "③ 一次喝下大量的水。\n"
)

MYOPIA_FAQ = (
    "孩子近视了先别急着配镜（演示材料）\n"
    "15岁以下第一次查出近视的孩子，应先由眼科医生检查，排除假性近视后再配镜。\n"
    "假性近视是睫状肌痉挛引起的，散瞳放松睫状肌后度数会消失或大幅减少；真性近视则是眼轴变长，散瞳后度数依然存在。\n"
)


STYE_POST = (
    "针眼别乱挤（演示材料）\n"
    "麦粒肿俗称针眼，是眼睑腺体的急性细菌感染，先是眼皮红肿疼痛，几天后出现小脓头。然后脓头破溃，经过7～10天会痊愈。\n"
    "在家可以每天热敷几次，千万不要自己挤，以免感染扩散。\n"
)


DRY_EYE_POST = (  # a phrase a line, as an official account's post is laid out
    "干眼症防治（演示材料）\n"
    "电子屏幕看得久了\n"
    "眼睛总觉得又干又涩\n"
    "很多人怀疑自己是不是得了干眼症\n"
    "我国干眼症的患病率约为21%～30%\n"
    "也就是说\n"
    "大约每4到5个人里就有1人\n"
)


def posts() -> dict[str, str]:
    return {
        "飞蚊症-某医院公众号.txt": FLOATERS_POST,
        "飞蚊症急诊-某眼科号.txt": WARNING_SIGNS_POST,
        "阿托品能否预防-某博主.txt": ATROPINE_POST,
        "防蓝光眼镜-某自媒体.txt": BLUE_LIGHT_POST,
        "急性青光眼-某医院公众号.txt": GLAUCOMA_POST,
        "近视配镜-某视光号.txt": MYOPIA_FAQ,
        "针眼-某公众号转帖.txt": STYE_POST,
        "干眼症防治-某公众号.txt": DRY_EYE_POST,
    }


async def test_a_story_that_asks_what_happened_goes_on_with_the_name_the_answer_gave(tmp_path: Path):
    """ "眼前总有小黑影飘来飘去，这是怎么回事？" is answered by 飞蚊症; "那是不是只有上了年纪的人才会有？" asks of
    飞蚊症, not of the 黑影 the story told."""
    service = library(tmp_path, posts())
    turns = await chat(service, "眼前总有小黑影飘来飘去，这是怎么回事？")
    assert "飞蚊症" in tldr(turns[-1].content), turns[-1].content
    result = await service.ask("那是不是只有上了年纪的人才会有？", turns)
    searched = " ".join(q.text for q in [*result.sub_queries, *(a.sub_query for a in result.analyses)])
    assert "飞蚊症" in searched, searched
    assert "高度近视的年轻人也常常提前出现" in result.answer, result.answer


async def test_a_qualifier_asked_on_its_own_names_a_kind_of_the_last_subject(tmp_path: Path):
    """ "那假性跟真性要怎么分？" after a question on 近视 asks how 假性近视 and 真性近视 differ, which the sentence
    naming both answers."""
    first = "孩子学校检查说近视了，可以直接去眼镜店配眼镜吗？"
    asked = analyse("那假性跟真性要怎么分？", [first])
    subjects = {t.text for t in asked.subjects}
    assert {"假性近视", "真性近视"} <= subjects, subjects
    assert "近视" not in subjects
    assert "区别" in asked.aspects
    service = library(tmp_path, posts())
    turns = await chat(service, first)
    said = tldr((await service.ask("那假性跟真性要怎么分？", turns)).answer)
    assert "真性近视则是眼轴变长" in said, said


async def test_a_verb_and_the_little_after_it_are_no_word_the_library_lacks(tmp_path: Path):
    """ "先滴点低浓度阿托品预防一下": jieba's 先滴 / 滴点 are 先, 滴 and 点 (a little), not a rare word no post writes —
    the post on atropine for children without myopia answers, and the reader's quoted question is not the answer."""
    service = library(tmp_path, posts())
    answer = (await service.ask("我家娃还没近视，就是远视储备不够，能不能先滴点低浓度阿托品预防一下？")).answer
    said = tldr(answer)
    assert "未找到" not in said, answer
    assert "能不能先滴阿托品预防" not in said, said
    assert "超出说明书的用法" in answer, answer


async def test_what_many_believe_comes_with_the_sentence_saying_it_is_wrong(tmp_path: Path):
    service = library(tmp_path, posts())
    said = tldr((await service.ask("给孩子买副防蓝光眼镜，能不能防近视？")).answer)
    assert "这是个误区" in said, said


async def test_warning_signs_under_emoji_bullets_are_the_list_asked_for(tmp_path: Path):
    """Each ❌ line is an item of the list the lead-in announces, and the TL;DR gives the list whole."""
    service = library(tmp_path, {k: v for k, v in posts().items() if k != "飞蚊症-某医院公众号.txt"})
    said = tldr((await service.ask("眼前老有小黑点飘，出现哪些情况得马上去医院？")).answer)
    for sign in ("黑影突然增多", "眼前出现闪光感", "像有帘子挡住视线"):
        assert sign in said, said


async def test_a_constitution_the_asker_names_is_who_they_are_not_what_is_asked(tmp_path: Path):
    """ "青光眼体质的人": 体质 says whom the question is about; no post writes it, and none needs to."""
    service = library(tmp_path, posts())
    said = tldr((await service.ask("有青光眼体质的人，哪些情况容易让它急性发作？")).answer)
    assert "散瞳药" in said, said


async def test_a_thing_the_asker_counts_is_no_products_name(tmp_path: Path):
    """ "还有个小脓头": 小脓头, a word no dictionary has, is what the asker sees (个), not a product; both questions are
    asked of the 针眼 it tells of, and "能不能自己挤？" is answered by the post's advice. How many days is said by the
    sentence that goes on from the one naming it ("然后脓头破溃，经过7～10天会痊愈")."""
    question = "眼皮上长了个针眼，红肿还有个小脓头，一般几天能好？能不能自己挤？"
    assert analyse(question).subject == "针眼"
    service = library(tmp_path, posts())
    answer = (await service.ask(question)).answer
    conclusion = answer.split("### 论据")[0]
    assert "千万不要自己挤" in conclusion, answer
    assert "7～10天" in conclusion and "证据缺口" not in conclusion, answer


async def test_a_condition_told_in_a_follow_up_leaves_the_subject_the_last_ones(tmp_path: Path):
    """ "那真近视了用上，一般会有哪些副作用？" after a question on 低浓度阿托品: 近视 says when, 用上 uses the
    atropine, whose side effects are asked."""
    first = "低浓度阿托品到底是怎么控制孩子近视的？"
    assert analyse("那真近视了用上，一般会有哪些副作用？", [first]).subject == "低浓度阿托品"
    service = library(tmp_path, posts())
    turns = await chat(service, first)
    said = tldr((await service.ask("那真近视了用上，一般会有哪些副作用？", turns)).answer)
    assert "畏光和看近处模糊" in said, said


async def test_how_common_asks_a_rate(tmp_path: Path):
    """ "有多常见" asks how many have it (a 比例), which the post's line with a percentage gives — not the line that
    retells the asker's dry, gritty eyes."""
    service = library(tmp_path, posts())
    said = tldr((await service.ask("老盯手机电脑眼睛又干又涩，干眼症在咱们国家到底有多常见？")).answer)
    assert "21%～30%" in said, said


NETEASE_POST = (
    "网易首页 > 网易号 > 正文 申请入驻\n\n"
    "开学季将至,别让“红眼病”搅了新学期,这几招赶紧码住（演示材料）\n\n"
    "0\n分享至\n\n"
    "红眼病多由病毒或细菌引起，可以通过接触患者用过的毛巾、玩具和门把手传播。\n"
)


def test_a_posts_title_of_three_clauses_heads_it_not_the_sites_trail():
    """A 网易号 page saved as text opens on the site's breadcrumb trail; the post's title below it, three clauses
    strung with commas, shares its words with the file's name and heads the post."""
    from clincite.ingest.loaders.text import plain_document

    document = plain_document(NETEASE_POST, "开学红眼病-某网易号")
    body = next(s for s in document.sections if "毛巾" in document.text[s.start : s.end])
    assert body.heading_path and body.heading_path[-1].startswith("开学季将至"), body.heading_path
