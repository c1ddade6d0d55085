"""Reranking on the whole question (RERANKER_MODEL): the real sentence-transformers CrossEncoder code path, on a small
cross-encoder built from what the tests ship (all-MiniLM-L6-v2 with a one-score head, saved to a folder), and the
status /metrics shows when no reranker is set or it cannot be loaded."""

from __future__ import annotations

import re

import pytest
from conftest import TEST_MODEL, make_settings
from fake_clinical_llm import in_process_models, judge_reply
from test_query import collect, structured

from clincite.core.shapes import SearchDone
from clincite.llm.agents import build_agents
from clincite.question.service import TwoStageQueryService
from clincite.retrieval.search import HybridSearcher
from clincite.web.datalayer import ClinCiteDataLayer, ensure_schema
from clincite.web.metrics import compute_metrics, render_body

QUESTION = "低浓度阿托品控制近视的效果和副作用？"
FRAGMENT_ID = re.compile(r'<片段 id="([^"]+)"')


@pytest.fixture(scope="module")
def cross_encoder_folder(tmp_path_factory):
    """A CrossEncoder folder as a clinic would point RERANKER_MODEL at: MiniLM with a fresh (seeded) scoring head."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(7)
    folder = tmp_path_factory.mktemp("cross-encoder") / "minilm-cross-encoder"
    CrossEncoder(TEST_MODEL, num_labels=1, device="cpu").save(str(folder))
    return folder


def service_with(settings, kb_settings, sample_kb, judged: list[str]) -> TwoStageQueryService:
    searcher = HybridSearcher(settings, sample_kb)
    agents = build_agents(
        settings, models={**in_process_models(), "relevance_judge": structured(judge_reply, calls=judged)}
    )
    return TwoStageQueryService(settings, searcher, agents=agents)


@pytest.mark.slow
async def test_each_judge_reads_its_hits_best_first_for_the_whole_question(
    kb_settings, sample_kb, cross_encoder_folder
):
    from sentence_transformers import CrossEncoder

    settings = kb_settings.model_copy(
        update={"reranker_model": str(cross_encoder_folder), "answer_cache_size": 0, "fast_path": False}
    )
    judged: list[str] = []
    service = service_with(settings, kb_settings, sample_kb, judged)
    events, result = await collect(service, QUESTION)
    assert result.citations and not result.degradations

    fused = {e.sub_query.id: [h.chunk_id for h in e.hits] for e in events if isinstance(e, SearchDone)}
    texts = {h.chunk_id: h.text for e in events if isinstance(e, SearchDone) for h in e.hits}
    reference = CrossEncoder(str(cross_encoder_folder), device="cpu")  # the same model, scored independently
    reordered = 0
    for prompt in judged:
        sub_query = re.search(r"【子查询】(\S+?)｜", prompt).group(1)
        seen = FRAGMENT_ID.findall(prompt)
        assert sorted(seen) == sorted(fused[sub_query]), "the judge saw every hit of its sub-query"
        scores = reference.predict([(QUESTION, texts[cid]) for cid in seen])
        assert list(scores) == sorted(scores, reverse=True), f"{sub_query}: not best first for the whole question"
        reordered += seen != fused[sub_query]
    assert reordered, "the cross-encoder changed no judge's order: this test could not tell it ran"
    scored_lists = [ids for ids in fused.values() if len(ids) > 1]
    union = {cid for ids in scored_lists for cid in ids}
    assert service.searcher.reranker.pairs_scored == len(union), "a passage found by two sub-queries scored twice"


async def test_an_unavailable_reranker_keeps_the_fused_order_and_metrics_say_why(kb_settings, sample_kb, tmp_path):
    settings = kb_settings.model_copy(
        update={"reranker_model": str(tmp_path / "no-such-model"), "answer_cache_size": 0, "fast_path": False}
    )
    judged: list[str] = []
    service = service_with(settings, kb_settings, sample_kb, judged)
    events, result = await collect(service, QUESTION)
    assert result.citations and not result.degradations, "the question is answered as without a reranker"
    fused = {e.sub_query.id: [h.chunk_id for h in e.hits] for e in events if isinstance(e, SearchDone)}
    for prompt in judged:
        sub_query = re.search(r"【子查询】(\S+?)｜", prompt).group(1)
        assert FRAGMENT_ID.findall(prompt) == fused[sub_query]

    status = service.searcher.reranker_status
    assert status["reranker_model"] == str(tmp_path / "no-such-model")
    assert "重排模型不可用" in status["reranker_problem"] and "RERANKER_MODEL" in status["reranker_problem"]
    app_settings = make_settings(tmp_path)
    await ensure_schema(app_settings.db_url)
    layer = ClinCiteDataLayer(app_settings)
    try:
        page = render_body(await compute_metrics(layer, {"mode": "offline", "search": "hybrid", **status}))
    finally:
        await layer.engine.dispose()
    assert "重排模型" in page and "不可用" in page and "重排模型不可用：无法加载" in page


def test_metrics_say_when_no_reranker_is_set(running_app):
    client = running_app.login("doctor_a")
    try:
        page = client.get("/metrics").text
        status = client.get("/metrics.json").json()["status"]
    finally:
        client.close()
    assert "重排模型" in page and "未启用（RERANKER_MODEL 未设置）" in page
    assert status["reranker_model"] is None and status["reranker_problem"] is None
