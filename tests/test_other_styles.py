"""Libraries written the way other people write (issue 23): the offline answer must not depend on sample_kb's style.

Each test builds a small library in one style nobody on the team would choose for the sample KB — a section per H1
(wiki and blog exports), a bulleted contraindication list, a table, "不适用人群" and "不建议" wording, an
abbreviation, front matter, a document's own citation markers, a PDF whose sub-headings fall inside a passage, one
document alone — and asks what a clinician would ask (no key, BM25-only: what a new user gets).

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SAMPLE_KB, make_settings

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders.text import plain_document
from clincite.ingest.pipeline import Ingestor
from clincite.kb.embeddings import Embedder
from clincite.kb.store import KnowledgeBase
from clincite.offline.questions import analyse
from clincite.retrieval.search import HybridSearcher
from query import TwoStageQueryService

OK_LIST = ["圆锥角膜", "活动性角膜炎", "严重干眼症", "不能按时复查者"]


def library(tmp_path: Path, files: dict[str, str | bytes]) -> TwoStageQueryService:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, content in files.items():
        target = docs / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    settings = make_settings(tmp_path, embedding_model="/nonexistent/model", answer_cache_size=0)
    kb = KnowledgeBase(settings)
    report = Ingestor(settings, kb).run([docs])
    assert report.count("added") == len(files), [(r.name, r.status, r.detail) for r in report.results]
    return TwoStageQueryService(settings, HybridSearcher(settings, kb, Embedder(settings.embedding_model)))


def tldr(answer: str) -> str:
    return answer.split("**TL;DR：**", 1)[1].split("###", 1)[0].strip()


def conclusion(answer: str) -> str:
    return answer.split("### 完整结论", 1)[1].split("### 论据与来源", 1)[0]


GUIDE = """# 角膜塑形镜验配要点（演示）

## 禁忌证

- 圆锥角膜
- 活动性角膜炎
- 严重干眼症
- 不能按时复查者

## 复查

戴镜后第1天、第1周、第1个月和此后每3个月复查一次。
"""


async def test_a_one_document_library_answers_with_the_whole_list(tmp_path):
    """One short guideline: every term is in half its passages or more (a Robertson idf made them worthless), and
    a contraindication list must come back whole — a partial list is a safety defect."""
    service = library(tmp_path, {"角膜塑形镜验配要点（演示）.md": GUIDE})
    result = await service.ask("角膜塑形镜 禁忌证")
    assert result.coverage.status == "answered"
    lead = tldr(result.answer)
    assert all(item in lead for item in OK_LIST), lead
    assert "- " not in lead and "##" not in result.answer.split("### 论据与来源")[1], "no Markdown in quotes"
    assert result.citations and all(c.verified for c in result.citations)


async def test_h1_sections_are_sections(tmp_path):
    """A wiki or blog export uses "# " for every section; the document's title comes from its front matter."""
    text = "---\ntitle: 角膜塑形镜验配要点（演示）\n---\n" + GUIDE.replace(
        "# 角膜塑形镜验配要点（演示）\n\n", ""
    ).replace("## ", "# ")
    service = library(tmp_path, {"ortho-k-notes.md": text})
    result = await service.ask("哪些孩子不能验配角膜塑形镜？")
    assert all(item in tldr(result.answer) for item in OK_LIST), result.answer
    assert result.citations[0].heading_path == ["禁忌证"]
    assert "《角膜塑形镜验配要点（演示）》" in result.answer, "cited by the front matter's title, not 'ortho-k-notes'"
    assert "title:" not in result.answer and "---" not in result.answer.split("### 完整结论")[0]


async def test_not_suitable_wording_answers_a_contraindication_question(tmp_path):
    """ "不适用人群" and "不建议" are how many guidelines word contraindications: that section answers 禁忌证."""
    text = (
        "# 重复低强度红光治疗说明（演示）\n\n## 适用人群\n\n经医生评估的学龄期近视儿童。\n\n"
        "## 不适用人群\n\n存在黄斑病变或眼底异常者不建议使用；无法在家长监督下完成治疗者不宜使用。\n"
    )
    service = library(tmp_path, {"红光治疗说明（演示）.md": text})
    result = await service.ask("红光治疗的禁忌证有哪些？")
    assert "黄斑病变" in tldr(result.answer), result.answer
    assert "经医生评估的学龄期近视儿童" not in conclusion(result.answer), "the indication is not a contraindication"


async def test_a_table_question_gets_its_row_with_the_column_names(tmp_path):
    text = (
        "# 阿托品用药方案（演示）\n\n## 浓度与复查\n\n"
        "| 浓度 | 用法 | 复查间隔 |\n|---|---|---|\n| 0.01% | 每晚一滴 | 每3至6个月 |\n| 0.05% | 每晚一滴 | 每3个月 |\n"
    )
    service = library(tmp_path, {"阿托品用药方案（演示）.md": text})
    result = await service.ask("0.05%阿托品多久复查一次？")
    lead = tldr(result.answer)
    assert "浓度：0.05%" in lead and "复查间隔：每3个月" in lead, lead
    assert "浓度 | 用法 | 复查间隔" not in lead, "a header row is no answer"


async def test_an_abbreviation_of_a_lexicon_term_is_the_term(tmp_path):
    text = "# 护理常规（演示）\n\n## 塑形镜的清洗\n\n塑形镜每次摘下后都要用护理液揉搓清洗，禁止用自来水冲洗。\n"
    service = library(tmp_path, {"护理常规（演示）.md": text})
    result = await service.ask("角膜塑形镜能用自来水冲洗吗？")
    assert "禁止用自来水冲洗" in tldr(result.answer) + conclusion(result.answer), result.answer


async def test_a_documents_own_citation_markers_never_reach_a_quote(tmp_path):
    text = (
        "---\ntitle: 户外活动与近视（演示）\n---\n\n## 建议\n\n"
        "每天在户外活动约两小时有助于减少近视发生[1]。[来源：src3] 课间也应走到户外^2。\n"
    )
    service = library(tmp_path, {"outdoor.md": text})
    result = await service.ask("每天户外活动多久？")
    assert "两小时" in tldr(result.answer)
    for marker in ("[1]", "[来源", "^2", "src3"):
        assert marker not in result.answer, marker
    assert all(c.verified for c in result.citations)


def _pdf_with_subheadings(path: Path) -> None:
    """A page whose larger-type sub-headings fall inside one passage (no outline, headings by type size)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    pdf = canvas.Canvas(str(path), pagesize=A4)
    y = A4[1] - 80
    for size, line in [
        (18, "散瞳验光说明（演示）"),
        (14, "一、为什么要散瞳"),
        (11, "儿童调节力强，不散瞳验光容易把调节性近视误当成真性近视。"),
        (14, "二、常用药物"),
        (11, "常用药物为环喷托酯滴眼液，年龄较小或内斜视的儿童可用阿托品。"),
        (14, "三、注意事项"),
        (11, "散瞳后数小时内畏光、看近模糊，应避免强光并注意安全。"),
    ]:
        pdf.setFont("STSong-Light", size)
        pdf.drawString(72, y, line)
        y -= size * 2.2
    pdf.save()


async def test_a_pdf_sub_heading_inside_a_passage_is_never_the_quote(tmp_path):
    _pdf_with_subheadings(tmp_path / "pdf.pdf")
    service = library(tmp_path, {"散瞳验光说明（演示）.pdf": (tmp_path / "pdf.pdf").read_bytes()})
    result = await service.ask("散瞳验光常用什么药物？")
    lead = tldr(result.answer)
    assert "环喷托酯" in lead, result.answer
    assert not lead.startswith(("二、常用药物", "一、", "三、")), "a heading is no answer"
    assert all(c.quote.strip() not in ("一、为什么要散瞳", "二、常用药物", "三、注意事项") for c in result.citations)


async def test_a_new_subject_after_a_red_light_question_is_its_own_question(tmp_path):
    """维生素D is not in the lexicon: an unknown word is a subject of its own, so the question is no follow-up of the
    red-light one, and a vitamin-D passage can answer it."""
    red_light = (SAMPLE_KB / "重复低强度红光治疗及安全性（演示）.md").read_text(encoding="utf-8")
    vitamin_d = (
        "# 营养与近视（演示）\n\n## 维生素D\n\n补充维生素D对延缓近视进展的作用目前证据有限，不能替代户外活动。\n"
    )
    service = library(tmp_path, {"红光（演示）.md": red_light, "营养与近视（演示）.md": vitamin_d})
    first = await service.ask("重复低强度红光治疗有哪些安全风险？")
    history = [ChatTurn(role="user", content=first.question), ChatTurn(role="assistant", content=first.answer)]
    result = await service.ask("补充维生素D有用吗？", history)
    assert not any("红光" in q.text for q in result.sub_queries), result.sub_queries
    assert "证据有限" in tldr(result.answer) + conclusion(result.answer), result.answer
    assert {c.source for c in result.citations} == {"营养与近视（演示）"}


@pytest.mark.parametrize("follow_up", ["那它的副作用呢？", "这种药停了会反弹吗？"])
async def test_a_follow_up_that_refers_back_keeps_the_subject(tmp_path, follow_up):
    service = library(tmp_path, {"阿托品（演示）.md": (SAMPLE_KB / "低浓度阿托品临床应用指南（演示）.md").read_text()})
    history = [ChatTurn(role="user", content="低浓度阿托品怎么用？"), ChatTurn(role="assistant", content="……")]
    result = await service.ask(follow_up, history)
    assert all("阿托品" in q.text for q in result.sub_queries), result.sub_queries
    assert result.citations and result.coverage.status != "no_evidence"


NEWS_STYLE = """# 白内障术前评估（演示）

【演示材料】依据公开科普要点以自己的语言编写，仅用于软件测试，不可用于临床决策。

白内障患者中，也有一部分同时患有青光眼或葡萄膜炎，这些患者多伴有其他眼病，手术风险高、难度大，术前需要充分评估。
"""

GLAUCOMA_SURGERY = """# 一位青光眼患者的就诊经过（演示）

【演示材料】依据公开科普要点以自己的语言编写，仅用于软件测试，不可用于临床决策。

患者眼压控制稳定后，医生为她进行了青光眼小梁切除手术，术后眼压平稳。
"""


def with_sample_kb() -> dict[str, str]:
    """The sample library, where 手术 is a common word (in many passages), as it is in any eye clinic's."""
    return {path.name: path.read_text(encoding="utf-8") for path in SAMPLE_KB.glob("*.md")}


async def test_two_words_of_a_subject_far_apart_are_not_that_subject(tmp_path):
    """A news-style page names 青光眼 and 手术 in one sentence about cataract patients: it does not say how glaucoma
    is operated on (issue 19's "wrong answer presented as covered")."""
    service = library(tmp_path, {**with_sample_kb(), "白内障（演示）.md": NEWS_STYLE})
    result = await service.ask("青光眼手术方式有哪些？")
    assert result.coverage.status == "no_evidence", result.answer
    assert "手术风险高" not in result.answer


async def test_a_subject_written_together_is_answered(tmp_path):
    news = {"白内障（演示）.md": NEWS_STYLE, "就诊（演示）.md": GLAUCOMA_SURGERY}
    service = library(tmp_path, {**with_sample_kb(), **news})
    result = await service.ask("青光眼手术方式有哪些？")
    assert "小梁切除手术" in tldr(result.answer), result.answer
    assert "手术风险高" not in tldr(result.answer)


BLOG_STYLE = """# 门诊里常被问到的问题（演示）

【演示材料】依据公开科普要点以自己的语言编写，仅用于软件测试，不可用于临床决策。

在门诊被家长问得最多的，大致是三大问题：近视、麦粒肿和眼外伤。

目前号称完全不出现闪辉的人工晶体材料只有少数几种，例如某些新型疏水性丙烯酸酯材料。

那位患者的情况是这样的。这个疾病如果在出生后1到2个月内手术，视力恢复通常更好。
"""


@pytest.mark.parametrize(
    "question,answer",
    [
        ("门诊里最常见的三类问题是什么？", "近视、麦粒肿和眼外伤"),  # 三类 and 里 are no terms: the text says 三大
        ("哪些人工晶体宣称完全没有闪辉？", "号称完全不出现闪辉"),  # the asker's verb 宣称 for the text's 号称
    ],
)
async def test_the_askers_own_wording_does_not_hide_the_answer(tmp_path, question, answer):
    service = library(tmp_path, {**with_sample_kb(), "问答（演示）.md": BLOG_STYLE})
    result = await service.ask(question)
    assert answer in tldr(result.answer), result.answer


def test_a_name_in_latin_letters_is_asked_of_on_its_own():
    from clincite.offline import analyse

    parts = analyse("MiSight和BLINK研究分别减缓了多少？").sub_queries()
    assert len(parts) == 2 and "BLINK" in parts[1][0] and "MiSight" not in parts[1][0], parts


def test_asking_how_a_thing_is_graded_is_a_classification_question():
    from clincite.offline import analyse

    ask = analyse("人工晶体闪辉分几级？")
    assert ask.aspects == ["定义"] and "分级" in ask.sub_queries()[0][0] and not ask.quantity


def test_a_word_the_asker_quotes_is_a_term_however_common():
    from clincite.offline import analyse

    quoted = [t for t in analyse("鞭炮炸伤眼睛后有哪几个“不要”？").terms if t.quoted]
    assert [t.text for t in quoted] == ["不要"] and not quoted[0].generic


async def test_a_short_topic_sentence_brings_its_next_sentence_into_the_tldr(tmp_path):
    service = library(tmp_path, with_sample_kb())
    lead = tldr((await service.ask("重复低强度红光治疗近视的安全性如何？")).answer)
    assert "视网膜光损伤风险" in lead and "病例报告" in lead, lead


def test_an_emphasis_in_quotes_ends_no_sentence():
    """A blogger's "“！延缓近视进展！”的方法只有……" is one sentence: its answer is after the quotation."""
    from clincite.text.units import sentences

    text = "目前有证据的“！延缓近视进展！”的方法只有户外活动等三种。她说：“要小心。”然后离开了。"
    assert [text[a:b] for a, b in sentences(text)] == [
        "目前有证据的“！延缓近视进展！”的方法只有户外活动等三种。",
        "她说：“要小心。”",
        "然后离开了。",
    ]


async def test_a_reference_list_is_never_the_answer(tmp_path):
    guide = (
        "# 神经痛用药要点（演示）\n\n【演示材料】仅用于软件测试，不可用于临床决策。\n\n"
        "## 药物治疗\n\n钙通道调节剂是带状疱疹后神经痛的一线用药之一，具体用法应遵医嘱。\n\n"
        "Smith J, Lee K, et al. Pregabalin 150-600 mg/d for PHN: a multinational efficacy and safety trial. "
        "Clin Drug Investig, 2009, 29(6):393-408. Baron R, et al. Pregabalin in PHN. Pain, 2010, 12(3):45-52.\n"
    )
    service = library(tmp_path, {"神经痛（演示）.md": guide})
    result = await service.ask("普瑞巴林治疗带状疱疹后神经痛的剂量是多少？")
    assert result.coverage.status == "no_evidence" and "Clin Drug Investig" not in result.answer, result.answer


def test_search_does_not_index_a_bibliography():
    from clincite.text.units import without_references

    passage = (
        "普瑞巴林起始剂量为每日150 mg。\n"
        "Smith J, et al. Pregabalin for PHN. Clin Drug Investig, 2009, 29(6):393-408.\n"
        "王某, 等. 普瑞巴林治疗带状疱疹后神经痛［J］. 中国疼痛医学杂志, 2020, 26(5):321-325."
    )
    assert without_references(passage) == "普瑞巴林起始剂量为每日150 mg。"


def test_prevent_with_an_object_asks_about_an_effect_not_for_precautions():
    from clincite.offline import analyse

    assert analyse("户外活动每天多长时间可以预防近视？").aspects == []
    assert analyse("儿童眼外伤怎么预防？").aspects == ["注意事项"]


@pytest.mark.parametrize("question", ["“的”字在这里是什么意思？", "“是”什么意思？"])
async def test_a_quoted_everyday_word_does_not_make_a_question_answerable(tmp_path, question):
    service = library(tmp_path, with_sample_kb())
    result = await service.ask(question)
    assert result.coverage.status == "no_evidence", result.answer


NEWS_SHARE = """# 早产儿眼底筛查（演示）

【演示材料】依据公开科普要点以自己的语言编写，仅用于软件测试，不可用于临床决策。

筛查中心成立以来，已为数千名早产儿做了眼底检查，其中接受治疗后视力得以保住的有一百多人。

近年早产儿在新生儿中的比例上升。其中约两成会因视网膜血管发育不成熟而发生早产儿视网膜病变，需要按时筛查。
"""


async def test_how_many_of_a_group_is_answered_by_a_share_not_a_head_count(tmp_path):
    """ "早产儿里有多少会……" asks a share (两成、20%), not how many people a centre has treated."""
    service = library(tmp_path, {"早产儿眼底筛查（演示）.md": NEWS_SHARE})
    lead = tldr((await service.ask("早产儿里大概有多少会发生视网膜病变？")).answer)
    assert "两成" in lead and "一百多人" not in lead, lead


def test_why_not_asks_a_reason_not_for_contraindications():
    from clincite.offline import analyse

    assert analyse("为什么做过LASIK的人，角膜曲率计测出的K值不能直接拿来算人工晶体？").aspects == ["原因"]
    assert set(analyse("为什么有这些禁忌证？孕妇不能用吗").aspects) == {"原因", "禁忌证"}
    assert "禁忌证" in analyse("PCA治疗癌痛不推荐用哪个阿片药？为什么？").aspects, "two questions, two aspects"


def test_a_verb_with_a_particle_is_as_everyday_as_the_verb():
    """做过、开着 are not in jieba's dictionary: unknown is not rare, they weigh as 做、开 do; a new coinage of
    characters (洁厕灵) stays rare."""
    from clincite.text.tokenizer import get_tokenizer

    tokenizer = get_tokenizer()
    assert tokenizer.general_rarity("做过") < 9 and tokenizer.general_rarity("开着") < 9
    assert tokenizer.general_rarity("洁厕灵") > 15 and tokenizer.general_rarity("青光眼") > 10


async def test_a_library_of_one_document_answers_what_it_is_about(tmp_path):
    """Only the red-light document: every passage is about red light for myopia, yet its safety section never says
    近视 again. A word the library is about (近视 here) is not what decides whether a passage answers."""
    red_light = (SAMPLE_KB / "重复低强度红光治疗及安全性（演示）.md").read_text(encoding="utf-8")
    service = library(tmp_path, {"重复低强度红光治疗及安全性（演示）.md": red_light})
    result = await service.ask("重复低强度红光治疗近视的安全性如何？")
    assert result.coverage.status != "no_evidence" and "安全" in tldr(result.answer), result.answer
    assert (await service.ask("红光治疗会导致白内障吗？")).coverage.status == "no_evidence"


async def test_a_contraindication_question_is_answered_by_the_contraindication_sentence(tmp_path):
    """ "哪些孩子不能点阿托品" matches 点药后… word for word, but only the sentence on 禁用/慎用 answers it."""
    service = library(tmp_path, with_sample_kb())
    lead = tldr((await service.ask("哪些孩子不能点阿托品？")).answer)
    assert "禁用" in lead and "闭角型青光眼" in lead, lead


def test_what_if_asks_what_to_do():
    """ "万一已经伤到了呢？" after a question on prevention asks what to do then, as "家长第一步该干什么" does."""
    from clincite.offline import analyse

    follow_up = analyse("万一已经伤到了呢？", ["儿童眼外伤怎么预防？"])
    assert follow_up.aspects == ["处理"] and any(t.text == "眼外伤" for t in follow_up.terms)
    assert analyse("孩子眼睛里溅进消毒液，家长第一步该干什么？").aspects == ["处理"]


async def test_a_choice_question_is_answered_where_the_text_weighs_the_options(tmp_path):
    """ "A还是B？" asks which one (for whom): the sentence that says when each is used, not the one listing both."""
    text = (
        "# 散瞳药物的选择（演示）\n\n【演示材料】仅用于软件测试，不可用于临床决策。\n\n## 常用药物\n\n"
        "临床常用的睫状肌麻痹剂有托吡卡胺和阿托品两类。阿托品作用最强，适用于6岁以下或伴有内斜视的儿童。"
        "托吡卡胺起效快、恢复快，更适合年龄较大的青少年。\n"
    )
    service = library(tmp_path, {"散瞳药物的选择（演示）.md": text})
    lead = tldr((await service.ask("给孩子散瞳用托吡卡胺还是阿托品？")).answer)
    assert "适用于6岁以下" in lead and "更适合年龄较大" in lead, lead


NIGHT_LIGHT = """# 睡眠光照与儿童近视（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

1999年一项针对2岁前睡眠光照的调查报告：在黑暗中睡觉的儿童近视比例约为10%，在小夜灯下睡觉的约为34%，开着室内照明灯睡觉的约为55%。后来的研究未能重复这一关联，结论仍有争议。

白天充足的户外活动对预防近视的作用更为明确。
"""


async def test_either_of_two_named_things_is_answered_where_the_text_names_one(tmp_path):
    """ "开着小夜灯或者大灯" offers two settings; the text says 室内照明灯, not 大灯: the passage naming 小夜灯
    answers, where both words used to be required."""
    service = library(tmp_path, {"睡眠光照与儿童近视（演示）.md": NIGHT_LIGHT})
    result = await service.ask("开着小夜灯或者大灯睡觉的孩子，近视率分别是多少？")
    assert result.coverage.status != "no_evidence", result.answer
    assert "34%" in tldr(result.answer) and "55%" in tldr(result.answer), result.answer
    assert (await service.ask("开着小夜灯或者大灯睡觉会得白内障吗？")).coverage.status == "no_evidence"


SQUINT_PAGE = """<div class="news-content">
<p style="text-align:center;"><strong>斜视手术有哪些风险？</strong></p>
<span>【演示材料】仅用于软件测试，不可用于临床决策。</span><br />
<span>斜视手术在眼球外部的肌肉上进行，一般不会影响视力。</span><br />
<span>术后早期可能出现短暂复视，多数会逐渐消失。</span><br />
</div>
"""


async def test_a_web_page_without_a_title_is_cited_by_the_question_it_opens_with(tmp_path):
    """A CMS fragment has no <title>; its first line, the question the page answers, is its name (not 3038kp02)."""
    service = library(tmp_path, {"3038kp02.html": SQUINT_PAGE})
    answer = (await service.ask("斜视手术会不会把视力做坏？")).answer
    assert "《斜视手术有哪些风险？》" in answer and "3038kp02" not in answer, answer
    assert "不会影响视力" in tldr(answer), answer


EMERGENCY = """# 就医须知（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 急诊还是门诊

门诊适合慢性、不紧急的问题，可以预约后就诊。

需要立即看急诊的眼病只有少数几种：视网膜中央动脉阻塞、眼球破裂伤、急性闭角型青光眼发作和眼部化学伤。

## 复诊

复诊请携带上次的检查结果。
"""


async def test_the_name_of_the_field_does_not_decide_in_its_own_library(tmp_path):
    """眼科 in "眼科需要挂急诊的病" names the field the whole library is in: the text says 眼病, and answers."""
    service = library(tmp_path, {"就医须知（演示）.md": EMERGENCY})
    lead = tldr((await service.ask("眼科真正需要挂急诊的病有哪些？")).answer)
    assert "视网膜中央动脉阻塞" in lead, lead


DEVICES = """# 角膜曲率测量（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 测量设备

角膜曲率计和多数电脑验光仪测量的只是角膜前表面的曲率，它们看不到角膜后表面。

能够测量角膜后表面的设备并不多，

- 基于Scheimpflug成像的眼前节分析系统
- 前节OCT

选择设备时还要考虑检查时间和费用。
"""


async def test_a_list_is_read_with_the_line_that_leads_into_it(tmp_path):
    """ "哪些设备能测量角膜后表面？" is answered by the list under "能够测量角膜后表面的设备并不多，", whose items do
    not repeat the question's words, not by the sentence that repeats them and names none."""
    service = library(tmp_path, {"角膜曲率测量（演示）.md": DEVICES})
    lead = tldr((await service.ask("哪些设备能测量角膜后表面？")).answer)
    assert "前节OCT" in lead and "Scheimpflug" in lead, lead


def test_a_name_and_its_abbreviation_in_brackets_are_one_term():
    """ "人工晶体闪辉（glistening）" names one thing twice: counted twice, it outweighs the rest of the question."""
    from clincite.offline import analyse

    asked = [
        ("人工晶体闪辉（glistening）会影响视力吗？", "闪辉"),
        ("带状疱疹后神经痛（PHN）怎么治疗？", "带状疱疹后神经痛"),
    ]
    for question, name in asked:
        terms = [t.text for t in analyse(question).terms]
        assert name in terms and not {"glistening", "PHN"} & set(terms), terms


def test_rather_good_is_not_a_comparison():
    """ "一般几岁做比较好？" after a question on 斜视手术 asks at what age to have it: 比较 before an adjective says
    how good, it compares nothing; the question names no subject of its own and carries on the last one."""
    from clincite.offline import analyse

    follow_up = analyse("一般几岁做比较好？", ["斜视手术有什么风险？"])
    assert follow_up.follow_up and follow_up.aspects == [] and follow_up.quantity == "年龄"
    assert "斜视" in [t.text for t in follow_up.terms]
    assert analyse("阿托品和OK镜比较哪个好？").aspects == ["区别"]


INTERVIEW = """<html><head><title>眼科专家在线答疑（演示）</title></head><body>
<p>【演示材料】仅用于软件测试，不可用于临床决策。</p>
<p>[网友小米]问： 您好！我女儿7岁，最近眼睛经常发红发痒，总是揉眼睛，请问这是什么原因？会影响视力吗？</p>
<p>[嘉宾王医生]答： 多数是过敏性结膜炎，一般不会影响视力。避免揉眼，痒得厉害可在医生指导下使用抗过敏滴眼液。</p>
<p>[网友老张]问： 我爱人眼睛也经常发红发痒，请问这是何故？</p>
<p>[嘉宾王医生]答： 参见上一个问题的答案。</p>
</body></html>
"""


async def test_on_a_question_and_answer_page_the_answer_is_the_reply_not_the_question(tmp_path):
    """An interview page: "[网友]问：…" is what a reader asked, the "[嘉宾]答：" line after it is the answer and is
    about what the question line names."""
    service = library(tmp_path, {"眼科专家在线答疑（演示）.html": INTERVIEW})
    answer = (await service.ask("孩子眼睛发红发痒是什么原因？")).answer
    assert "过敏性结膜炎" in tldr(answer) and "请问" not in tldr(answer), answer
    assert "参见" not in answer, "a cross-reference to another answer is no evidence"


INDEX_PAGE = """# 科普文章目录（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 麦粒肿

- 指甲上画十字能治疗麦粒肿？
- 麦粒肿反复长怎么办？
"""

EYELID = """# 儿童眼保健（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 眼皮长包

麦粒肿又叫睑腺炎，是眼睑腺体的急性化脓性炎症。早期可以热敷，并在医生指导下使用抗生素滴眼液或眼膏；如果脓肿成熟、皮肤变薄，应到医院切开排脓，不要自行挤压。
"""


async def test_an_index_of_titles_under_the_subjects_heading_does_not_outrank_the_answer(tmp_path):
    """A table of contents files article titles under "麦粒肿": it is about the subject, but a title that asks a
    question answers nothing; the section that says what to do does."""
    service = library(tmp_path, {"科普文章目录（演示）.md": INDEX_PAGE, "儿童眼保健（演示）.md": EYELID})
    lead = tldr((await service.ask("孩子长麦粒肿怎么办？")).answer)
    assert "热敷" in lead or "切开排脓" in lead, lead


async def test_how_old_is_answered_by_the_age_the_text_gives(tmp_path):
    """ "孩子多大可以戴OK镜？" asks an age: search looks where the text gives one (年龄、岁), here under 适应证."""
    service = library(tmp_path, with_sample_kb())
    lead = tldr((await service.ask("孩子多大可以戴OK镜？")).answer)
    assert "8岁及以上" in lead, lead


def test_which_drug_carries_on_the_last_subject():
    """ "用什么药治疗？" after a question on 纤维肌痛 names no subject of its own: 药 is what every treatment
    question says, not a new topic."""
    from clincite.offline import analyse

    follow_up = analyse("用什么药治疗？", ["纤维肌痛怎么诊断？"])
    assert follow_up.follow_up and follow_up.aspects == ["治疗"], follow_up


async def test_the_reason_given_names_the_word_as_the_quote_writes_it(tmp_path):
    """The text says 夜明灯 where the question says 小夜灯: the 说明 may not claim the quote contains 小夜灯."""
    text = NIGHT_LIGHT.replace("小夜灯", "夜明灯")
    service = library(tmp_path, {**with_sample_kb(), "睡眠光照与儿童近视（演示）.md": text})
    answer = (await service.ask("开着小夜灯睡觉的孩子，近视率是多少？")).answer
    assert "“夜明灯（即小夜灯）”" in answer and "关键词“小夜灯”" not in answer, answer


async def test_the_quoted_list_comes_with_the_line_that_says_what_it_lists(tmp_path):
    """The items alone ("前节OCT") do not say what they are; the clinician reads the lead-in line with them."""
    service = library(tmp_path, {"角膜曲率测量（演示）.md": DEVICES})
    lead = tldr((await service.ask("哪些设备能测量角膜后表面？")).answer)
    assert lead.startswith("能够测量角膜后表面的设备并不多") and "前节OCT" in lead, lead


WARNING_SIGNS = """# 头痛也可能是眼病（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

青光眼引起的头痛常被当作偏头痛，症状反复时应想到查眼压。

出现以下情况时，可能已经患了青光眼，应尽快到眼科检查。①经常眼胀、眉弓疼痛；②看灯光时周围出现彩虹样光圈；③视野逐渐缩小；④直系亲属中有青光眼患者。
"""


async def test_items_run_together_in_one_paragraph_are_read_as_a_list(tmp_path):
    """Web pages run their items together ("①…；②…；③…"): for "哪些情况", that enumeration and the sentence
    announcing it answer, not a sentence that only says 症状."""
    service = library(
        tmp_path, {"头痛也可能是眼病（演示）.html": f"<html><body>{_paragraphs(WARNING_SIGNS)}</body></html>"}
    )
    lead = tldr((await service.ask("出现哪些情况提示可能已经得了青光眼？")).answer)
    assert "出现以下情况时" in lead and "彩虹样光圈" in lead, lead


def _paragraphs(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"<title>{lines[0].lstrip('# ')}</title>" + "".join(f"<p>{line}</p>" for line in lines[1:])


LENS_LIFE = """# 白内障手术问答（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 人工晶体

人工晶体的材料在眼内性质稳定，一般可以终生使用，不需要定期更换。
"""


async def test_for_life_answers_how_long(tmp_path):
    """ "能用多少年" is answered by "终生使用", a length of time written without a number."""
    service = library(tmp_path, {"白内障手术问答（演示）.md": LENS_LIFE})
    lead = tldr((await service.ask("人工晶体能用多少年？")).answer)
    assert "终生使用" in lead, lead


def test_a_demonstrative_in_an_opening_question_names_its_noun():
    """ "作者那个excel" with nothing asked before: there is no earlier topic 那个 could point to, so excel is asked of.
    In a chat, "那个药" still points back."""
    assert "excel" in [t.text for t in analyse("作者那个excel里收了哪些公式？").terms]
    assert "药" not in [t.text for t in analyse("那个药停了会反弹吗？", ["低浓度阿托品的副作用？"]).terms]


IOL_AFTER_LASIK = """# 角膜屈光手术后的人工晶体计算（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 常用方法

近视角膜屈光手术后，常规方法容易低估所需的人工晶体度数，术后出现远视偏差。

临床常用的有Haigis-L、Shammas、Barrett True-K、Masket等公式，各有适用条件。

比较几种结果后再决定度数更稳妥。
"""


FORMULA_HISTORY = """# 人工晶体计算公式的由来（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

传统的人工晶体计算公式依据未做过手术的眼睛的数据建立，默认角膜前后表面的曲率保持固定比例。
"""

DRY_EYE = """# 干眼的居家护理（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 热敷

每天热敷眼睑10分钟，有助于睑板腺分泌物排出。

## 用眼习惯

连续看屏幕时有意识地多眨眼，每隔一段时间远眺休息。

## 人工泪液

症状明显时可按医嘱使用不含防腐剂的人工泪液。
"""


async def test_a_compound_the_text_writes_apart_is_named_and_a_series_answers_which(tmp_path):
    """ "计算公式": the title says 计算, the text 公式 — named. "哪些" is answered by the sentence naming them
    one after another (A、B、C、D), not by the one with most of the question's words."""
    service = library(
        tmp_path,
        {
            "角膜屈光手术后的人工晶体计算（演示）.md": IOL_AFTER_LASIK,
            "干眼（演示）.md": DRY_EYE,
            "公式的由来（演示）.md": FORMULA_HISTORY,
        },
    )
    lead = tldr((await service.ask("角膜屈光手术后有哪些人工晶体计算公式？")).answer)
    assert "Haigis-L" in lead and "Shammas" in lead, lead


DRY_EYE_AFTER_LASIK = """# 角膜屈光手术后干眼（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 原因

角膜屈光手术会切断角膜的部分感觉神经，术后瞬目减少、泪膜稳定性下降，因此容易出现干眼。

## 病程

多数患者的干眼症状在术后3～6个月内逐渐减轻，少数可持续一年以上。

## 治疗

症状轻者使用人工泪液即可；需要长期使用人工泪液时，宜选择不含防腐剂的剂型。
"""

CONJUNCTIVITIS = """# 细菌性结膜炎（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 病程

细菌性结膜炎经规范治疗后，通常1～2周内好转。

## 预防

勤洗手，毛巾和脸盆分开使用。
"""


async def _second_question(service: TwoStageQueryService, first: str, second: str):
    earlier = await service.ask(first)
    history = [ChatTurn(role="user", content=first), ChatTurn(role="assistant", content=earlier.answer)]
    return await service.ask(second, history)


async def test_a_question_naming_nothing_of_its_own_goes_on_about_the_last_subject(tmp_path):
    """ "一般会持续多久？" after a question on dry eye after LASIK asks how long that dry eye lasts, not how long
    whatever the library says lasts (conjunctivitis)."""
    service = library(tmp_path, {"干眼（演示）.md": DRY_EYE_AFTER_LASIK, "结膜炎（演示）.md": CONJUNCTIVITIS})
    result = await _second_question(service, "近视激光手术后为什么容易干眼？", "一般会持续多久？")
    assert any("干眼" in q.text for q in result.sub_queries), result.sub_queries
    assert "3～6个月" in tldr(result.answer), result.answer
    assert "**近视激光手术、干眼：病程**" in conclusion(result.answer), "evidence titled by the subject carried on"


async def test_a_new_subject_the_library_writes_of_with_the_last_one_is_asked_in_its_setting(tmp_path):
    """人工泪液 is written of with 干眼 in this library: "人工泪液选哪种比较好？" after a question on dry eye after
    LASIK is searched in that setting (the sub-query shows it); 维生素D after 红光 is not (the test above)."""
    service = library(tmp_path, {"干眼（演示）.md": DRY_EYE_AFTER_LASIK, "结膜炎（演示）.md": CONJUNCTIVITIS})
    result = await _second_question(service, "近视激光手术后为什么容易干眼？", "人工泪液选哪种比较好？")
    assert any("干眼" in q.text for q in result.sub_queries), result.sub_queries
    assert "不含防腐剂" in tldr(result.answer), result.answer


GOGGLES = """# 儿童眼外伤的预防（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 眼外伤

预防眼外伤，最简单有效的方法是佩戴护目镜。什么时候需要戴护目镜呢？凡是可能有东西飞向眼睛的活动都算。

包括但不限于：

- 使用剪刀、刀具等锐器
- 使用电动工具，或敲打、切割物品
- 接触消毒液、清洁剂等化学液体

一旦受伤，不要揉眼，立即就医。
"""


async def test_a_list_under_a_bare_lead_in_is_read_with_the_paragraph_before(tmp_path):
    """ "包括但不限于：" names nothing; the paragraph before says what the list is of (when to wear goggles)."""
    service = library(tmp_path, {"眼外伤（演示）.md": GOGGLES})
    lead = tldr((await service.ask("哪些时候应该戴护目镜？")).answer)
    assert "使用剪刀" in lead and "化学液体" in lead, lead


GLISTENING = """# 人工晶体闪辉（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 定义

闪辉是人工晶体光学部内出现的充满液体的微小空泡，在裂隙灯下呈许多闪亮的小点。

## 影响因素

### 温度

温度波动越大，越容易析出微空泡，术后早期的闪辉与此有关。

### 材料

各类材料都可能出现闪辉，以疏水性丙烯酸酯人工晶体最为多见。
"""


async def test_the_section_titled_by_the_word_asked_about_answers(tmp_path):
    """ "哪种材料…" is answered under the heading "材料", not by a sentence that only shares "容易"."""
    service = library(tmp_path, {"人工晶体闪辉（演示）.md": GLISTENING})
    result = await _second_question(service, "人工晶体闪辉是什么？", "哪种材料最容易出现？")
    assert "疏水性丙烯酸酯" in tldr(result.answer), result.answer


EYE_INJURY = """# 儿童眼外伤（演示）

【演示材料】仅用于软件测试，不可用于临床决策。

## 眼外伤

激光笔对准眼睛照射很危险，发现孩子这样玩要尽快制止。

一旦受伤，不要揉眼或挤压眼球，立刻送医院。

预防眼外伤，最有效的办法是做危险活动时戴护目镜。
"""


async def test_of_two_sentences_on_what_to_do_the_one_saying_more_of_it_wins_the_tie(tmp_path):
    """ "万一已经伤到了呢？" after a question on preventing eye injuries: "不要揉眼…立刻送医院" says what to do,
    "要尽快制止" only has 尽快 in passing."""
    service = library(tmp_path, {"儿童眼外伤（演示）.md": EYE_INJURY})
    result = await _second_question(service, "儿童眼外伤怎么预防？", "万一已经伤到了呢？")
    assert "立刻送医院" in tldr(result.answer), result.answer


def test_a_comparison_splits_at_its_joiner_not_at_every_word():
    """ "A和B有什么区别" with names the lexicon does not know is two parts, one per joined phrase, each searched with
    the question's other words; before, every content word became a part of its own (腿疼的区别, 痛的区别 …)."""
    ask = analyse("孩子腿疼，生长痛和骨肉瘤的疼有啥区别？")
    assert [[t.text for t in group] for group in ask.compared] == [["生长", "痛"], ["骨肉瘤"]]
    assert [text for text, _, _ in ask.sub_queries()] == ["生长痛的区别 孩子 腿疼 疼", "骨肉瘤的区别 孩子 腿疼 疼"]

    each = analyse("急性中耳炎鼓膜一穿孔，耳痛和发烧分别会怎么变？")  # 一 ("as soon as") is no word to find
    parts = [text for text, _, _ in each.sub_queries()]
    assert len(parts) == 2 and all("急性中耳炎" in p and "鼓膜" in p for p in parts)
    assert parts[0].startswith("耳痛") and parts[1].startswith("发烧")

    longer = analyse("早期喉癌放疗和手术相比，对嗓子发声的影响有什么区别？")  # 早期喉癌 qualifies both
    assert [[t.text for t in group] for group in longer.compared] == [["放疗"], ["手术"]]
    assert all("喉癌" in text for text, _, _ in longer.sub_queries())

    listed = analyse("近视、远视和散光分别是什么原因引起的？")  # "、" joins as "和" does
    assert [[t.text for t in group] for group in listed.compared] == [["近视"], ["远视"], ["散光"]]


def test_a_name_of_letters_and_digits_stays_one_word():
    """DN4 and I-DN4 are two scales: cut into DN + 4 they were one part searching "DN的区别 4 I"."""
    ask = analyse("DN4和I-DN4量表有什么区别？")
    assert [t.text for t in ask.terms] == ["DN4", "I-DN4", "量表"]
    assert [text for text, _, _ in ask.sub_queries()] == ["DN4的区别 量表", "I-DN4的区别 量表"]


def test_colloquial_question_words_ask_as_their_plain_forms():
    """为啥 asks why and 咋办 what to do, as 为什么 and 怎么办 do; 啥 and 娃 are no subject to find."""
    why = analyse("小朋友连着刷几个小时平板，视力为啥会一下子掉下来？")
    assert why.aspects == ["原因"] and "为啥" not in [t.text for t in why.terms]
    assert "处理" in analyse("孩子眼睛进了沙子咋办？").aspects
    assert "啥" not in [t.text for t in analyse("复位做完回家要注意点啥？").terms]


async def test_a_title_with_book_title_marks_is_cited_as_a_title_within_a_title(tmp_path):
    """A page titled 《健康报》：“…” is cited 《〈健康报〉：“…”》: with its own 《》 the citation ended early and the
    quote failed its check although it is in the document word for word."""
    page = (
        "<html><head><title>《健康报》：为病人着想的眼科门诊（演示）</title></head><body>"
        "<h1>《健康报》：为病人着想的眼科门诊（演示）</h1>"
        "<p>该门诊为术后干眼患者设立专门随访，每位患者术后一周、一个月和三个月各复查一次。</p>"
        "<p>门诊还为老年白内障患者提供术前宣教。</p></body></html>"
    )
    service = library(tmp_path, {"3001bd01.html": page})
    result = await service.ask("术后干眼患者多久复查一次？")
    assert result.citations and all(c.verified for c in result.citations)
    assert "《〈健康报〉：为病人着想的眼科门诊（演示）》" in result.answer


def test_a_question_line_in_a_passage_is_never_what_the_conclusion_says():
    """A page asks its own questions between its answers ("…需做哪些检查呢？"): summing up a long extract takes a
    sentence that says something, never the page's question."""
    from clincite.report.extractive import key_unit

    text = (
        "鼓膜穿破流脓后，耳痛顿减，体温即逐渐下降，全身症状明显减轻（演示）。\n\n"
        "急性中耳炎需做哪些检查呢？\n\n"
        "耳内镜检查可见鼓膜充血、肿胀、向外膨出，穿孔后可见脓液从穿孔处涌出，这是诊断的主要依据之一（演示）。"
    )
    assert key_unit(text, "急性中耳炎需做哪些检查") != "急性中耳炎需做哪些检查呢？"


ACUPUNCTURE = """# 癌性疼痛的中医外治（演示）

【演示材料】仅用于软件测试，内容为虚构的示例，不可用于临床决策。

## 针刺

（1）耳穴按压：选取神门、皮质下等耳穴，用王不留行籽贴压，嘱患者每日按压数次。

（2）腕踝针：适用于癌痛，依据疼痛所在区域选取腕踝部进针点，确定针刺方向。

操作要点：局部消毒后沿皮下平刺进针，以不出现酸麻胀痛为宜，用胶布固定针柄。根据疼痛轻重留针30min-4h，重者每日1次。

（3）艾灸：取足三里、关元等穴，每次施灸15分钟。
"""


async def test_a_number_asked_is_found_further_on_in_the_item_that_names_the_subject(tmp_path):
    """ "腕踝针治疗癌痛，一次留针多长时间？" asks for a time: the item that names 腕踝针 opens with how to choose the
    point and gives the time two sentences on. Its 治疗 (with its object, 癌痛) names which use is meant; it is no
    question about treatment that the answer must word. Before, the item's opening line was the only one weighed,
    had no number, and the answer was 未找到."""
    ask = analyse("腕踝针治疗癌痛，一次留针多长时间？")
    assert ask.quantity == "时间" and ask.aspects == []
    service = library(tmp_path, {"癌痛的非药物疗法（演示）.md": ACUPUNCTURE})
    result = await service.ask("腕踝针治疗癌痛，一次留针多长时间？")
    assert "30min-4h" in tldr(result.answer), result.answer
    assert "艾灸" not in tldr(result.answer)
    assert all(c.verified for c in result.citations)


HERBAL = """# 止痛中成药使用注意（演示）

【演示材料】仅用于软件测试，内容为虚构的示例，不可用于临床决策。

## 使用注意事项

使用前应了解中成药的组成。某些止痛中成药含有西药成分，例如示例止痛片中含有吲哚美辛，与西药联合使用时应尽量避免与非甾体消炎镇痛药物同时使用。

含大黄的通便药物长期应用时应关注结肠黑变。
"""


async def test_an_example_of_a_kind_is_asked_of_as_the_kind(tmp_path):
    """ "布洛芬这类NSAIDs" names one drug of a class: a text warning against 非甾体消炎镇痛药物 (NSAIDs in other words)
    answers, though it never names 布洛芬. Before, 布洛芬 was a decisive term no passage named, and NSAIDs had no
    Chinese synonym: 未找到."""
    ask = analyse("示例止痛片可以和布洛芬这类NSAIDs一起吃吗？")
    assert [(t.text, t.either) for t in ask.terms if t.text in ("布洛芬", "NSAIDs")] == [
        ("布洛芬", ""),
        ("NSAIDs", "布洛芬"),
    ]
    service = library(tmp_path, {"止痛中成药使用注意（演示）.md": HERBAL})
    result = await service.ask("示例止痛片可以和布洛芬这类NSAIDs一起吃吗？")
    assert "尽量避免与非甾体消炎镇痛药物同时使用" in tldr(result.answer), result.answer
    assert all(c.verified for c in result.citations)


OPIOID_GUIDE = """# 癌痛药物治疗要点（演示）

【演示材料】仅用于软件测试，内容为虚构的示例，不可用于临床决策。

## 一、阿片类药物相关便秘的处理

阿片类药物相关便秘很常见，且不随用药时间延长而耐受。应在开始用药时同时预防，常用通便药物见表1。

## 二、疼痛评估

疼痛评估应常规、量化、全面、动态，每次随访都应记录疼痛评分。

表1 常用通便药物

| 类别 | 药物 | 说明 |
|---|---|---|
| 渗透性泻药 | 乳果糖口服溶液 | 起效较慢，适合长期使用 |
| 刺激性泻药 | 番泻叶制剂 | 短期使用，避免长期依赖 |
"""


async def test_a_drug_is_covered_by_its_class_and_the_table_the_text_points_to_answers(tmp_path):
    """ "吃吗啡后便秘了" is answered by a section on 阿片类药物 (吗啡 is one), and its "常用通便药物见表1" by that
    table, which the layout put under another heading and which never names 吗啡 or 阿片. Before, 吗啡 was a
    decisive term no passage named: 未找到."""
    titration = (  # a document naming 吗啡 makes it a word the library knows, and so one that decides
        "# 阿片类药物滴定（演示）\n\n【演示材料】仅用于软件测试。\n\n## 滴定\n\n"
        "初次滴定可选用口服吗啡即释片，按疼痛评分调整剂量。\n"
    )
    service = library(tmp_path, {"癌痛药物治疗要点（演示）.md": OPIOID_GUIDE, "阿片类药物滴定（演示）.md": titration})
    result = await service.ask("病人吃吗啡后便秘了，有哪些通便药可以用？")
    assert "未找到" not in tldr(result.answer), result.answer
    evidence = result.answer.split("### 论据与来源", 1)[1]
    assert "不随用药时间延长而耐受" in evidence and "乳果糖口服溶液" in evidence, result.answer
    assert all(c.verified for c in result.citations)


SCREENS = """# 电子产品与儿童视力（演示）

【演示材料】仅用于软件测试，内容为示例改写，不可用于临床决策。

家长常反映孩子连续玩iPad几个小时后看东西模糊。长时间近距离盯着屏幕，睫状肌会持续紧张甚至痉挛，出现假性近视，视力一过性下降，休息后多可部分恢复。

建议每次使用电子产品不超过半小时，之后远眺休息。

另有研究提示，学龄前儿童每天户外活动不足，近视发生更早。
"""


async def test_a_colloquial_why_question_with_a_few_hours_in_it_is_answered_with_the_reason(tmp_path):
    """ "连着刷几个小时平板，视力为啥会一下子掉下来？" asks why: its 几个小时 tells what happened, it asks for no
    number; 掉下来 is the text's 下降 and 平板 its iPad. Before, the question was taken to ask for a number and to
    need the word 掉下来: 未找到."""
    ask = analyse("小朋友连着刷几个小时平板，视力为啥会一下子掉下来？")
    assert ask.aspects == ["原因"] and ask.quantity == ""
    service = library(tmp_path, {"电子产品与儿童视力（演示）.md": SCREENS})
    result = await service.ask("小朋友连着刷几个小时平板，视力为啥会一下子掉下来？")
    assert "睫状肌会持续紧张甚至痉挛" in tldr(result.answer), result.answer
    assert all(c.verified for c in result.citations)


def test_an_age_bound_is_no_subject_a_follow_up_carries_on():
    """ "5岁以下小孩…气道异物" then "那万一真卡住了…管用吗？": the follow-up is about 气道异物. Before, 以下 (of
    "5岁以下") was the first term and became the subject the follow-up searched ("以下的处理 …")."""
    ask = analyse("那万一真卡住了，家里倒提、拍背管用吗？", ["5岁以下小孩哪些食物容易造成气道异物？"])
    assert [t.text for t in ask.terms if t.inherited] == ["气道异物"]
    assert all(text.startswith("气道异物") for text, _, _ in ask.sub_queries())
    assert "以下" not in [t.text for t in analyse("3岁以下的孩子能点阿托品吗？").terms]


def test_a_name_containing_a_question_word_asks_nothing_by_it():
    """ "癌性爆发痛和剂量末疼痛有什么区别？" compares two kinds of pain: the 剂量 inside 剂量末疼痛 asks for no
    dose, and the two names are the two parts. Before, 剂量 was taken for a dose question, which broke the "A和B" apart
    ("癌性的区别 爆发 痛 末 疼痛")."""
    ask = analyse("癌性爆发痛和剂量末疼痛有什么区别？")
    assert ask.quantity == "" and ask.aspects == ["区别"]
    assert [[t.text for t in group] for group in ask.compared] == [["癌性", "爆发痛"], ["剂量末疼痛"]]
    assert analyse("阿托品的剂量是多少？").quantity == "剂量"


class _Counts:
    """Document frequencies as a KB's BM25 index reports them (`TermStats`), for a library of `size` passages."""

    def __init__(self, size: int, frequencies: dict[str, int]):
        self.size, self.frequencies = size, frequencies

    def document_frequency(self, token: str) -> int:
        return self.frequencies.get(token, 0)

    def idf(self, token: str) -> float:
        import math

        return math.log(1 + (self.size - self.document_frequency(token) + 0.5) / (self.document_frequency(token) + 0.5))


def test_who_a_question_is_asked_of_decides_where_the_library_seldom_writes_for_them():
    """ "儿童…用加巴喷丁，起始剂量按体重怎么算？" in a library of adult pain guidelines (儿童 in 4 of 1000 passages):
    a passage giving the adult dose is about someone else, so 儿童 must be named. In a myopia library, where 儿童
    is in half the passages, it is the asker's everyday word and decides nothing."""
    from clincite.offline import relevance

    question = "儿童神经病理性疼痛用加巴喷丁，起始剂量按体重怎么算？"
    ask = analyse(question)
    part = relevance.Part(ask.sub_queries()[0][0], [], None)
    terms = relevance._terms_of(ask, part)
    known = {"神经病理性疼痛": 40, "加巴喷丁": 12, "起始": 30, "体重": 20, "算": 50}

    adult_library = _Counts(1000, {**known, "儿童": 4})
    decisive = relevance._decisive(relevance._weigh(terms, adult_library))
    assert "儿童" in [w.term.text for w in decisive]

    children_library = _Counts(1000, {**known, "儿童": 500})
    decisive = relevance._decisive(relevance._weigh(terms, children_library))
    assert "儿童" not in [w.term.text for w in decisive]


GLASSES = "# 框架眼镜（演示）\n\n【演示材料】仅用于软件测试。\n\n单焦框架眼镜矫正近视，应每天佩戴并定期复查。\n"

ORTHO_K_EFFECT = """# 儿童近视防控方法（演示）

【演示材料】仅用于软件测试，内容为示例改写，不可用于临床决策。

## 角膜塑形镜

角膜塑形镜（OK镜）是一种夜间佩戴的特殊设计硬性透气性接触镜。

研究显示可以显著减缓近视进展，尤其是在6-8岁开始佩戴时效果最好。

## 户外活动

每天户外活动2小时有助于预防近视发生。
"""


async def test_a_number_further_on_must_be_about_what_was_asked(tmp_path):
    """ "角膜塑形镜每晚要戴几个小时？" asks for hours: a section naming the lens that gives only an age ("6-8岁开始
    佩戴") does not answer it, and the library says so. Before, 几个小时 asked for any number, and the age was taken
    for the answer (the held-out library's one false answer). A number further on in a section also has to name
    something asked, not only the asker's everyday 戴."""
    service = library(tmp_path, {"儿童近视防控方法（演示）.md": ORTHO_K_EFFECT, "框架眼镜（演示）.md": GLASSES})
    result = await service.ask("角膜塑形镜每晚要戴几个小时？")
    assert "未找到" in tldr(result.answer), result.answer


SITE_STRINGS = """白内障手术须知（演示）

    cataract_head: "白内障手术须知（演示）｜某眼科中心"
    cataract_title_son1: 手术后要注意什么？
    cataract_text1: 白内障手术后一周内不要让脏水进入眼睛，洗头时可仰头冲洗或请家人帮忙。
    cataract_text2: |
            术后一个月内避免游泳，
            以免眼部感染。
    cataract_text3: 术后两星期内晚上睡觉时要戴上护眼罩，以免无意中揉眼或碰撞。
    cataract_btn1: 立即预约检查
    cataract_sign_title: 术后出现以下情况请立即复诊
    cataract_sign1: 眼痛加剧
    cataract_sign2: 视力骤降
    cataract_sign3: 眼红加重
    cataract_sign4: 分泌物增多
    cataract_sign5: 看到闪光
    cataract_note: '*以上为演示内容，不作临床建议'
"""


async def test_a_key_value_file_is_read_as_its_values(tmp_path):
    """A web site's string file saved as text (YAML lines "cataract_text1: …"): the keys name things for programs;
    no quote or TL;DR opens with one, and a value carried on the lines after "|" is text like any other."""
    service = library(tmp_path, {"白内障手术须知（演示）.txt": SITE_STRINGS})
    washing = await service.ask("白内障做完以后洗头要注意什么？")
    assert "仰头冲洗" in tldr(washing.answer)
    swimming = await service.ask("白内障术后多久可以去游泳？")
    assert "一个月" in tldr(swimming.answer)
    shield = await service.ask("白内障做完晚上睡觉要戴眼罩，一般戴几个星期？")  # 两星期: a count in words
    assert "两星期" in tldr(shield.answer)
    for result in (washing, swimming, shield):
        assert not re.search(r"cataract_\w+:", result.answer), result.answer
        assert result.citations and all(c.verified for c in result.citations)


def test_a_text_of_labelled_lines_for_people_keeps_its_labels():
    """Lines labelled in English for a reader ("VA: 0.8", "IOP: 15 mmHg") are not a program's keys: kept as written."""
    record = (
        "验光记录（演示）\n\nVA: 右眼 0.8，左眼 1.0\nIOP: 15 mmHg\nSphere: -2.50 D\nAxial: 24.6 mm\nPlan: 半年后复查\n"
    )
    text = plain_document(record, "验光记录（演示）").text
    assert "IOP: 15 mmHg" in text and "Plan: 半年后复查" in text


def test_the_short_values_of_a_key_value_file_stay_apart():
    """A table kept as keys, a cell each ("exam_item1: 眼底照相"): a text of such short lines is not a web page cut at
    every inline tag, whose lines run on to a sentence's end; its cells stay apart."""
    exams = ["眼底照相", "视野分析", "眼压测量", "医学验光", "角膜地形图", "眼轴测量"]
    strings = "检查项目（演示）\n\n" + "".join(f"    exam_item{i}: {name}\n" for i, name in enumerate(exams, 1))
    text = plain_document(strings, "检查项目（演示）").text
    assert "眼底照相\n\n视野分析" in text and "exam_item" not in text


AMD_ADVICE = """# 预防老年性黄斑变性（演示）

## 生活方式

戒烟

吸烟者患老年性黄斑变性的风险约为不吸烟者的2至4倍。

控制血压

高血压会损害视网膜的小血管，应定期测量，遵医嘱用药。

均衡饮食

多吃深绿色蔬菜和鱼类，有助于保护黄斑。

定期检查

五十岁以后宜每年检查一次眼底。
"""


async def test_a_number_asked_of_a_labelled_list_comes_with_its_item(tmp_path):
    """Labels, each over the paragraph that explains it: a TL;DR of the labels alone ("戒烟；控制血压；…") drops the
    number asked. The item that gives it leads; 抽烟 is the 吸烟 the leaflet writes, and "增加多少" asks for 倍."""
    service = library(tmp_path, {"预防老年性黄斑变性（演示）.md": AMD_ADVICE})
    result = await service.ask("抽烟会让得黄斑变性的风险增加多少？")
    assert "2至4倍" in tldr(result.answer), result.answer
    assert result.citations and all(c.verified for c in result.citations)


AMBLYOPIA_KINDS = """# 弱视的类型（演示）

## 常见类型

斜视性弱视

斜视使两眼不能同时注视同一目标，大脑抑制偏斜眼的图像，久之该眼视力发育受阻。

屈光参差性弱视

两眼屈光度相差较大（如球镜相差1.50D以上）时，度数较高的眼成像模糊，大脑偏用另一眼，易形成弱视。

屈光不正性弱视

双眼都有较高的远视、近视或散光而未及时矫正，双眼视力发育均受影响。

形觉剥夺性弱视

先天性白内障、上睑下垂等遮挡视线所致，需要尽早处理遮挡的原因。
"""


async def test_the_item_a_labelled_list_gives_of_the_subject_asked_answers(tmp_path):
    """A list of kinds, each a label over its paragraph: asked of one kind, the TL;DR is that kind's item, not the
    labels of all four."""
    service = library(tmp_path, {"弱视的类型（演示）.md": AMBLYOPIA_KINDS})
    result = await service.ask("屈光参差性弱视是怎么形成的？")
    lead = tldr(result.answer)
    assert "度数较高的眼成像模糊" in lead and "形觉剥夺性弱视" not in lead, result.answer
    assert result.citations and all(c.verified for c in result.citations)


PSS_NOTE = """# 青光眼睫状体炎综合征（演示）

青光眼睫状体炎综合征又称Posner-Schlossman综合征，多见于20至50岁的青壮年，常为单眼反复发作。

发作时眼压明显升高，可伴轻度睫状体炎，视力多为轻度下降。

治疗以局部降眼压和抗炎为主，发作间歇期眼压多可恢复正常。
"""


async def test_who_gets_a_disease_is_not_who_a_treatment_suits(tmp_path):
    """ "什么人容易得" asks who is prone ("多见于20至50岁的青壮年"), which authors write in words of every kind; it is
    not the 适应证 that "什么人" alone asks, whose passages must say 适合、适用."""
    service = library(tmp_path, {"青光眼睫状体炎综合征（演示）.md": PSS_NOTE})
    result = await service.ask("青光眼睫状体炎综合征一般是什么人容易得？")
    assert "20至50岁" in tldr(result.answer), result.answer
