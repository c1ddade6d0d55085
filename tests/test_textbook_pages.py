"""Libraries of study pages and tagged articles (found on the stop-37 blind library, a residency-review site's HTML
chapters of an ophthalmology textbook, and on the stop-33 one of an optometrist's tagged blog posts):

- "弱视一般分成哪几种？": the page lists the kinds as cards, each a short heading over its paragraph, after the
  section's opening definition: the answer is the kinds, and the TL;DR names every one of them;
- "白内障怎么还会引起青光眼？是什么道理？": 是什么道理 asks why, it is no word a passage must have;
- a question on 绿脓杆菌角膜炎 is answered by a section of an article its author tagged 角膜炎, although that
  section only says 绿脓杆菌: the tags say what every passage of the article is about;
- "医保能报销吗" asks what the library never says (医保 is an abbreviated noun, jieba's "j"): it abstains;
- the asker's 眼药水 is the text's 滴眼液, and "那有没有眼药水可以改善？" still asks about the last subject;
- the answer given in a chapter's quiz is quoted without the quiz's next question;
- Nikola's empty metadata fields stay empty (`.. tags:` used to take the next line, ".. category:", as its value).

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import conclusion, library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders import load_markdown
from clincite.kb.catalogue import MAX_TOPIC_CHARS
from clincite.text.units import split_units

STRABISMUS_PAGE = """<!DOCTYPE html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>第15章 · 斜视与弱视（演示）</title></head>
<body>
<nav><a href="ch14.html">上一章</a> <a href="ch16.html">下一章</a></nav>
<main>
<h1>斜视与弱视（演示）</h1>
<p>本页为演示材料，概述斜视与弱视的基础知识，用于软件测试，不作为临床依据。</p>
<h2>弱视的定义与分类</h2>
<p>弱视是指眼球没有明显器质性病变，但最佳矫正视力低于同龄正常水平，源于视觉发育期内异常的视觉经验。</p>
<div class="cards">
<div class="card"><h3>斜视性弱视</h3><p>斜视眼的图像长期被大脑抑制以避免复视，久之该眼形成弱视。</p></div>
<div class="card"><h3>屈光不正性弱视</h3><p>双眼有较高且未矫正的屈光不正，视网膜成像长期模糊所致，常双眼发生。</p></div>
<div class="card"><h3>屈光参差性弱视</h3><p>两眼度数相差较大，度数较高的一眼成像持续模糊而发生弱视。</p></div>
<div class="card"><h3>形觉剥夺性弱视</h3>
<p>先天性白内障、上睑下垂等遮挡光线进入眼内所致，程度最重，需尽早解除遮挡。</p></div>
</div>
<h2>治疗时机</h2>
<p>弱视治疗越早效果越好，视觉发育关键期内视觉系统可塑性最强，错过关键期后疗效明显下降。</p>
</main>
<footer>眼科学习站（演示）</footer>
</body></html>
"""

CATARACT_PAGE = """<html><head><meta charset="utf-8"><title>第10章 · 白内障（演示）</title></head><body>
<h1>白内障（演示）</h1>
<p>本页为演示材料，用于软件测试，不作为临床依据。</p>
<h2>白内障的并发症</h2>
<p>膨胀期的晶状体吸水肿胀、体积增大，把虹膜向前推，使前房变浅、房角变窄，可诱发急性闭角型青光眼。</p>
<p>过熟期晶状体皮质液化溢出，可引起晶状体溶解性青光眼和葡萄膜炎。</p>
<h2>手术时机</h2>
<p>视力下降已影响日常生活和工作时即可考虑手术，不必等到完全成熟。</p>
</body></html>
"""

PHARMACOLOGY_PAGE = """<html><head><meta charset="utf-8"><title>第20章 · 眼科药理学（演示）</title></head><body>
<h1>眼科药理学（演示）</h1>
<p>本页为演示材料，用于软件测试，不作为临床依据。</p>
<h2>随堂小测</h2>
<p>1. 前列腺素类似物如何降低眼压？</p>
<p>前列腺素类似物（如拉坦前列素）主要通过增加葡萄膜巩膜途径的房水外流来降低眼压，通常每日只需点一次。</p>
<p>2. 毛果芸香碱属于哪一类药物？</p>
<p>毛果芸香碱是缩瞳药，通过缩小瞳孔、开放房角来降低眼压。</p>
<p>3. 长期局部使用糖皮质激素最需要警惕哪些并发症？</p>
<p>长期点用糖皮质激素可引起眼压升高（激素性青光眼）和后囊下白内障，还可能加重或诱发角膜感染，需定期复查眼压。</p>
<p>4. 儿童验光为什么常用睫状肌麻痹剂？</p>
<p>儿童调节力强，不放松调节时验光容易高估近视、低估远视，睫状肌麻痹后测得的屈光度更接近真实状态。</p>
</body></html>
"""

KERATITIS_POST = """---
title: "隐形眼镜与细菌感染：一位验光师的提醒（演示）"
tags: ["隐形眼镜", "角膜炎", "眼睛感染"]
---

本文为演示材料，用于软件测试，不作为临床依据。

## 隐形眼镜为什么会招来细菌

镜片长时间配戴、护理液污染或过夜配戴，都会让角膜上皮缺氧受损，细菌更容易侵入。

## 点了抗生素为什么还会恶化

绿脓杆菌能在镜片和角膜表面形成生物膜，这层保护膜让抗生素难以渗入，所以有些人明明按时点了抗生素，病情仍然恶化得很快，需要尽快到眼科就诊。
"""

DRY_EYE_DROPS = """# 干眼的药物治疗（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 环孢素滴眼液

环孢素滴眼液（如Restasis）可以减轻与干眼相关的眼表炎症，起效较慢，一般需要连续使用约三个月才能看到明显效果。

## 人工泪液

人工泪液可以补充泪液、润滑眼表，不含防腐剂的剂型更适合需要长期频繁使用的人。
"""

PRESBYOPIA_POST = """# 老花眼知多少（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 老花眼的成因

随着年龄增长，晶状体逐渐变硬、弹性下降，睫状肌的调节力减弱，看近处时无法清晰对焦，这就是老花眼。

## 老花眼的矫正方法

最常用的是配戴老花镜或渐进多焦点眼镜。也有缩瞳剂滴眼液，通过缩小瞳孔增加景深来暂时改善看近，效果可持续数小时，但不适合所有人。
"""


async def test_the_kinds_a_page_lists_as_cards_answer_which_kinds_there_are(tmp_path):
    service = library(tmp_path, {"斜视与弱视（演示）.html": STRABISMUS_PAGE})
    result = await service.ask("孩子体检查出来弱视，弱视一般分成哪几种？")
    summary = tldr(result.answer)
    kinds = ["斜视性弱视", "屈光不正性弱视", "屈光参差性弱视", "形觉剥夺性弱视"]
    assert all(kind in summary for kind in kinds), summary
    assert "成像长期模糊所致" not in summary  # the TL;DR names the kinds; 论据与来源 quotes their paragraphs
    assert "成像长期模糊所致" in result.answer
    assert result.citations and all(c.verified for c in result.citations)


async def test_what_is_the_reason_asks_why_and_is_no_word_to_find(tmp_path):
    service = library(tmp_path, {"白内障（演示）.html": CATARACT_PAGE})
    result = await service.ask("白内障怎么还会引起青光眼？是什么道理？")
    answered = "".join((tldr(result.answer) + conclusion(result.answer)).split())
    assert "可诱发急性闭角型青光眼" in answered, result.answer[:400]


async def test_the_authors_tags_say_what_every_passage_of_the_article_is_about(tmp_path):
    service = library(tmp_path, {"隐形眼镜与细菌感染（演示）.md": KERATITIS_POST})
    result = await service.ask("绿脓杆菌角膜炎的病人明明按时点了抗生素，为什么还是恶化很快？")
    assert "抗生素难以渗入" in tldr(result.answer), result.answer[:400]


async def test_what_the_library_never_says_of_a_drug_it_describes_is_not_answered(tmp_path):
    service = library(tmp_path, {"干眼的药物治疗（演示）.md": DRY_EYE_DROPS})
    result = await service.ask("干眼用的环孢素眼药水（Restasis）在国内医保能报销吗？")
    assert "未找到" in tldr(result.answer), result.answer[:400]


async def test_the_askers_eye_drops_are_the_texts_and_a_follow_up_on_them_keeps_its_subject(tmp_path):
    service = library(
        tmp_path, {"干眼的药物治疗（演示）.md": DRY_EYE_DROPS, "老花眼知多少（演示）.md": PRESBYOPIA_POST}
    )
    result = await service.ask("医生开了环孢素眼药水，一般要点多久才有效果？")
    assert "三个月" in tldr(result.answer), result.answer[:400]

    first = "老花眼是怎么造成的？"
    history = [ChatTurn(role="user", content=first), ChatTurn(role="assistant", content="……")]
    result = await service.ask("那有没有眼药水可以改善？", history)
    answered = "".join((tldr(result.answer) + conclusion(result.answer)).split())
    assert "缩瞳剂滴眼液" in answered, result.answer[:400]
    assert "老花" in result.sub_queries[0].text, [q.text for q in result.sub_queries]


async def test_an_answer_in_a_quiz_is_quoted_without_the_next_question(tmp_path):
    service = library(tmp_path, {"眼科药理学（演示）.html": PHARMACOLOGY_PAGE})
    result = await service.ask("医生开了拉坦前列素，这药是靠什么降眼压的？一天要点几次？")
    assert "每日只需点一次" in tldr(result.answer), result.answer[:400]
    assert "毛果芸香碱属于哪一类药物" not in result.answer, result.answer


async def test_a_hostile_documents_tags_are_read_only_so_far_and_answer_nothing(tmp_path):
    tags = ", ".join(["青光眼", "医保", "报销", "手术"] * 5000)
    body = "## 说明\n\n本文为演示材料。青光眼是一组以视神经损害为特征的眼病。\n"
    hostile = f"---\ntitle: 标签很多的文档（演示）\ntags: [{tags}]\n---\n\n{body}"
    service = library(tmp_path, {"标签很多的文档（演示）.md": hostile})
    topics = service.searcher.kb.catalogue.document_topics()
    assert 0 < len(topics["标签很多的文档（演示）.md"]) <= MAX_TOPIC_CHARS
    result = await service.ask("青光眼手术医保能报销吗？")
    assert "未找到" in tldr(result.answer), result.answer[:400]


def test_an_empty_nikola_field_stays_empty():
    text = "<!--\n.. title: 老花眼知多少（演示）\n.. tags:\n.. category:\n.. type: text\n-->\n\n正文（演示）。\n"
    document = load_markdown(text, "presbyopia")
    assert document.title == "老花眼知多少（演示）"
    assert document.metadata["tags"] == "" and document.metadata["category"] == ""
    assert document.metadata["type"] == "text"


def test_short_label_lines_each_over_a_paragraph_are_one_list():
    text = (
        "斜视性弱视\n\n大脑抑制斜视眼的图像。\n\n屈光不正性弱视\n\n成像长期模糊。\n\n屈光参差性弱视\n\n一眼成像模糊。"
    )
    (unit,) = split_units(text)
    assert unit.kind == "list"
    assert [text[s:e].split("\n", 1)[0] for s, e in unit.items] == ["斜视性弱视", "屈光不正性弱视", "屈光参差性弱视"]
    two = "斜视性弱视\n\n大脑抑制斜视眼的图像。\n\n屈光不正性弱视\n\n成像长期模糊。"
    assert all(u.kind == "sentence" for u in split_units(two))  # two labelled paragraphs are not yet a series
