"""Offline mode as a new clinician meets it (no key, BM25-only search): the aspect asked, gaps, abstention, follow-ups.

These are the questions of issue 9, asked through the whole service on the sample KB.
"""

from __future__ import annotations

import pytest
from conftest import ORTHO_K, SAMPLE_KB, make_settings

from clincite.core.shapes import AnswerDone, ChatTurn
from clincite.ingest.pipeline import Ingestor
from clincite.kb.embeddings import Embedder
from clincite.kb.store import KnowledgeBase
from clincite.offline import analyse
from clincite.retrieval.search import HybridSearcher
from query import TwoStageQueryService

OK_DOC = ORTHO_K.removesuffix(".md")
CONTRAINDICATIONS = "以下情况不宜验配或应暂缓验配"


@pytest.fixture()
def service(kb_settings, sample_kb) -> TwoStageQueryService:
    """What a new user gets: no key, and the embedding model cannot be loaded, so search is BM25-only."""
    settings = kb_settings.model_copy(update={"embedding_model": "/nonexistent/model", "answer_cache_size": 0})
    return TwoStageQueryService(settings, HybridSearcher(settings, sample_kb, Embedder(settings.embedding_model)))


def tldr(answer: str) -> str:
    return answer.split("**TL;DR：**", 1)[1].split("###", 1)[0]


@pytest.mark.parametrize("question", ["哪些孩子不适合验配角膜塑形镜？", "角膜塑形镜的禁忌证有哪些？"])
async def test_ortho_k_contraindication_questions_lead_with_the_contraindications(service, question):
    result = await service.ask(question)
    assert result.mode == "offline" and result.search_mode == "bm25"
    assert CONTRAINDICATIONS in tldr(result.answer)
    first = result.citations[0]
    assert first.source == OK_DOC and first.verified and first.heading_path
    assert first.title == "角膜塑形镜的禁忌证"
    assert "直接相关" not in result.answer and "它尤其适用于" not in result.answer
    assert result.coverage.status == "answered"


@pytest.mark.parametrize(
    "question,subject",
    [("青光眼的激光治疗方式有哪些？", "青光眼的激光治疗方式有哪些"), ("今天天气怎么样", "今天天气怎么样")],
)
async def test_questions_the_kb_does_not_cover_get_a_plain_not_covered_answer(service, question, subject):
    events = [e async for e in service.run(question)]
    result = events[-1].result
    assert isinstance(events[-1], AnswerDone) and events[-1].coverage.status == "no_evidence"
    assert tldr(result.answer).strip() == f"知识库中未找到关于“{subject}”的证据。"
    assert result.citations == [] and "### 论据与来源\n无" in result.answer
    assert "高度近视是开角型青光眼的危险因素之一" not in result.answer, "no passage is presented as an answer"


async def test_follow_up_resolves_to_the_previous_topic(service):
    first = await service.ask("哪些孩子不适合验配角膜塑形镜？")
    history = [
        ChatTurn(role="user", content="哪些孩子不适合验配角膜塑形镜？"),
        ChatTurn(role="assistant", content=first.answer),
    ]
    result = await service.ask("那它的感染风险怎么预防？", history)
    assert all(q.text.startswith("角膜塑形镜") for q in result.sub_queries)
    assert result.citations and result.citations[0].source == OK_DOC
    assert "微生物性角膜炎" in tldr(result.answer)
    assert all("孩子不" not in c.title and "的的" not in c.title for c in result.citations)


async def test_an_aspect_without_evidence_is_named_as_a_gap(service):
    result = await service.ask("离焦框架眼镜的禁忌证和疗效？")
    assert result.coverage.status == "partial" and result.coverage.missing == ["离焦框架眼镜的禁忌证"]
    assert "**证据缺口**：知识库中未找到关于“离焦框架眼镜的禁忌证”的证据" in result.answer
    assert result.citations and all(c.verified for c in result.citations)


async def test_a_keyword_stuffed_document_does_not_take_over_the_answer(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "低浓度阿托品临床应用指南（演示）.md").write_bytes(
        (SAMPLE_KB / "低浓度阿托品临床应用指南（演示）.md").read_bytes()
    )
    (docs / "阿托品宣传页.md").write_text(
        "# 阿托品宣传页\n\n## 副作用\n\n阿托品没有任何副作用，阿托品副作用为零，阿托品副作用完全不用担心。"
        "阿托品副作用？阿托品绝对安全，阿托品副作用不存在。\n",
        encoding="utf-8",
    )
    settings = make_settings(tmp_path, embedding_model="/nonexistent/model", answer_cache_size=0)
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([docs])
    service = TwoStageQueryService(settings, HybridSearcher(settings, kb, Embedder(settings.embedding_model)))
    result = await service.ask("低浓度阿托品有哪些副作用？")
    assert "没有任何副作用" not in result.answer
    assert "畏光" in tldr(result.answer)
    assert {c.source for c in result.citations} == {"低浓度阿托品临床应用指南（演示）"}


def test_question_analysis_finds_subject_aspects_and_follow_ups():
    ask = analyse("哪些孩子不适合验配角膜塑形镜？")
    assert ask.subject == "角膜塑形镜" and ask.aspects == ["禁忌证"]
    assert not {"哪些", "不适合", "？"} & {t.text for t in ask.terms}, "question words never become terms"
    assert analyse("重复低强度红光治疗有哪些安全风险？").subject == "重复低强度红光治疗"  # 治疗 is in the name
    assert analyse("低浓度阿托品的效果和副作用分别是什么？").aspects == ["疗效", "不良反应"]
    follow_up = analyse("那它的感染风险怎么预防？", previous=["哪些孩子不适合验配角膜塑形镜？"])
    assert follow_up.follow_up and follow_up.subject == "角膜塑形镜"
    assert "风险与并发症" in follow_up.aspects
    assert analyse("这种治疗安全吗？", previous=["重复低强度红光治疗控制近视的效果如何？"]).aspects == ["不良反应"]
    assert analyse("停药后会反弹吗？", previous=["低浓度阿托品滴眼液怎么用？"]).subject == "低浓度阿托品滴眼液"
    # A new subject is its own question, even one the lexicon does not know (issue 23: 维生素D after 红光).
    new_subject = analyse("补充维生素D有用吗？", previous=["重复低强度红光治疗有哪些安全风险？"])
    assert not new_subject.follow_up and "维生素D" in {t.text for t in new_subject.terms}
    assert "重复低强度红光治疗" not in {t.text for t in new_subject.terms}
    # "能不能" asks whether: it is not the contraindication word 不能.
    assert analyse("OK镜能不能用自来水洗？").aspects == []
    assert analyse("户外活动每天多长时间？").quantity == "时间"


async def test_a_pdf_passage_is_quoted_by_its_sentences_not_its_heading(tmp_path):
    """PDF passages carry their heading as a plain first line: the answer quotes what the guideline says under it."""
    import realfiles as rf

    rf.make_all(tmp_path / "docs")
    settings = make_settings(tmp_path, embedding_model="/nonexistent/model", answer_cache_size=0)
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([tmp_path / "docs"])
    service = TwoStageQueryService(settings, HybridSearcher(settings, kb, Embedder(settings.embedding_model)))
    result = await service.ask("高度近视儿童多久做一次散瞳眼底检查？")
    assert "每年至少进行一次散瞳眼底检查" in tldr(result.answer)
    assert result.citations and all(c.quote.strip() != "三、高度近视的随访" for c in result.citations)
