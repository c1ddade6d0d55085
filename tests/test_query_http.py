"""The service through real HTTP: the openai client and pydantic-ai talking to a local OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest
from fake_clinical_llm import AgentLatency, ClinicalLLM, agent_requests, first_user_text, llm_settings
from fake_openai_server import FakeOpenAIServer, Reply

import query
from clincite.core.shapes import (
    BRIDGE_SLOT,
    AnswerToken,
    DecompositionReady,
    DegradedEvent,
    JudgementDone,
    NoticeEvent,
    SearchDone,
    SearchStarted,
    SubQueryRewritten,
)
from query import TwoStageQueryService

QUESTION = "低浓度阿托品控制近视的效果和副作用？"


@pytest.fixture()
def llm():
    return ClinicalLLM()


@pytest.fixture()
def server(llm):
    with FakeOpenAIServer(llm) as srv:
        yield srv


def make_service(kb_settings, searcher, server, **overrides) -> TwoStageQueryService:
    return TwoStageQueryService(llm_settings(kb_settings, server.base_url, **overrides), searcher)


async def run(service, question=QUESTION):
    events = [e async for e in service.run(question)]
    return events, events[-1].result


async def test_a_full_question_end_to_end_over_http(kb_settings, searcher, server, llm):
    # The report takes half a second to write, so there is a stream to see (an instant one arrives as one read).
    llm.latency["answer_generation"] = AgentLatency(tokens_per_second=960, output_tokens=480)
    service = make_service(kb_settings, searcher, server)
    events, result = await run(service)
    assert result.mode == "llm"
    assert not any(isinstance(e, NoticeEvent) and e.kind == "offline" for e in events)
    assert not result.degradations
    assert [sq.text for sq in result.sub_queries] == ["低浓度阿托品的疗效", "低浓度阿托品的不良反应"]
    assert "### 论据与来源" in result.answer and "离线" not in result.answer
    assert result.citations and all(c.verified for c in result.citations)
    assert len([e for e in events if isinstance(e, AnswerToken)]) > 3, "the report arrived as a stream"

    assert len(agent_requests(server, "decomposition")) == 1
    assert len(agent_requests(server, "relevance_judge")) == 3  # q0 (the question) + two sub-queries
    assert len(agent_requests(server, "sufficiency_judge")) == 1
    answer = agent_requests(server, "answer_generation")
    assert len(answer) == 1 and answer[0].stream and answer[0].output_mode == "text"
    decomposition = agent_requests(server, "decomposition")[0]
    assert decomposition.stream and decomposition.output_mode == "tool"
    assert "肯定句" in decomposition.system_text()  # the Chinese prompt from prompts/ is what the model sees
    for name in ("decomposition", "relevance_judge", "sufficiency_judge", "answer_generation"):
        assert result.usage[name].requests >= 1 and result.usage[name].output_tokens > 0


@pytest.mark.parametrize("mode,expected", [("prompted", "prompted"), ("native", "native")])
async def test_structured_output_without_tool_calling(kb_settings, searcher, server, mode, expected):
    service = make_service(kb_settings, searcher, server, llm_output_mode=mode)
    _, result = await run(service)
    assert not result.degradations
    assert {r.output_mode for r in server.requests if r.model != "fake-answer_generation"} == {expected}
    assert all(c.verified for c in result.citations)


async def test_rate_limit_is_retried_and_the_answer_is_whole(kb_settings, searcher, server, llm):
    llm.script["decomposition"] = [Reply(status=429, retry_after=0)]
    llm.script["sufficiency_judge"] = [Reply(status=503, retry_after=0)]
    service = make_service(kb_settings, searcher, server)
    _, result = await run(service)
    assert not result.degradations
    assert [r.attempt for r in agent_requests(server, "decomposition")] == [0, 1]
    assert len(agent_requests(server, "sufficiency_judge")) == 2
    assert len(result.sub_queries) == 2


async def test_persistent_server_errors_degrade_the_stage(kb_settings, searcher, server, llm):
    llm.always["relevance_judge"] = Reply(status=500)
    service = make_service(kb_settings, searcher, server, llm_max_retries=1)
    events, result = await run(service)
    assert len(agent_requests(server, "relevance_judge")) == 3 * 2  # each judge: first try + 1 retry
    assert sorted(d.component for d in result.degradations) == ["judge:q0", "judge:q1", "judge:q2"]
    stage1 = [a for a in result.analyses if not a.sub_query.id.startswith("s2-")]
    assert len(stage1) == 3 and all(a.degraded and a.confidence == "low" and a.extracts for a in stage1)
    assert sum(isinstance(e, DegradedEvent) for e in events) == 3
    assert all(c.verified for c in result.citations)


async def test_a_timeout_degrades_instead_of_hanging(kb_settings, searcher, server, llm):
    llm.always["sufficiency_judge"] = Reply(delay=5)
    service = make_service(kb_settings, searcher, server, sufficiency_judge_timeout=0.3, sufficiency_judge_budget=0.5)
    _, result = await run(service)
    assert [d.component for d in result.degradations] == ["sufficiency"]
    assert result.sufficiency.sufficient and result.sufficiency.degraded
    assert result.timings["sufficiency"] < 2
    assert "### 论据与来源" in result.answer


async def test_invalid_json_is_retried_once_then_degrades(kb_settings, searcher, server, llm):
    llm.script["decomposition"] = [Reply(invalid_json=True)]
    _, result = await run(make_service(kb_settings, searcher, server))
    assert not result.degradations and len(result.sub_queries) == 2
    assert len(agent_requests(server, "decomposition")) == 2

    llm.always["decomposition"] = Reply(invalid_json=True)
    _, result = await run(make_service(kb_settings, searcher, server))
    assert [d.component for d in result.degradations] == ["decomposition"]
    assert [sq.text for sq in result.sub_queries] == [QUESTION]


async def test_an_answer_stream_cut_midway_keeps_what_arrived(kb_settings, searcher, server, llm):
    llm.always["answer_generation"] = Reply(cut_after_chars=60)
    events, result = await run(make_service(kb_settings, searcher, server))
    streamed = "".join(e.text for e in events if isinstance(e, AnswerToken))
    assert streamed == result.answer
    assert result.answer.startswith("**TL;DR：**")
    assert "回答生成中途中断" in result.answer and "### 已找到的来源" in result.answer
    assert [d.component for d in result.degradations] == ["answer"]
    assert result.citations and all(c.verified for c in result.citations)


def test_cli_runs_through_http_when_a_base_url_is_set(kb_settings, sample_kb, server, run_cli):
    env = {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": server.base_url,
        **{
            f"{a.upper()}_MODEL": f"fake-{a}"
            for a in ("decomposition", "relevance_judge", "sufficiency_judge", "answer_generation")
        },
    }
    out = run_cli(query.main, [QUESTION, "--json", "--kb", kb_settings.kb_dir], env)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["mode"] == "llm" and payload["citations"]
    assert {r.model for r in server.requests} == {
        "fake-decomposition",
        "fake-relevance_judge",
        "fake-sufficiency_judge",
        "fake-answer_generation",
    }


async def test_no_evidence_abstains_without_calling_the_answer_model(kb_settings, searcher, server):
    """Every judge (over HTTP) returns no extract: the plain "not covered" report, no answer request at all."""
    events, result = await run(make_service(kb_settings, searcher, server), "青光眼的激光治疗方式有哪些？")
    assert agent_requests(server, "relevance_judge"), "the judges were asked"
    assert all(not a.extracts for a in result.analyses)
    assert agent_requests(server, "answer_generation") == []
    assert result.coverage.status == "no_evidence" and events[-1].coverage == result.coverage
    assert result.answer.startswith("**TL;DR：** 知识库中未找到关于“青光眼的激光治疗方式有哪些”的证据。")
    assert "### 论据与来源\n无" in result.answer and result.citations == []
    closest = max(
        (h for e in events if isinstance(e, SearchDone) for h in e.hits), key=lambda h: h.score
    ).source.removesuffix(".md")
    assert f"《{closest}》" in result.answer, "the closest document searched is named"
    streamed = "".join(e.text for e in events if isinstance(e, AnswerToken))
    assert streamed == result.answer


async def test_missing_aspects_after_stage2_reach_the_answer_prompt_and_the_report(kb_settings, searcher, server, llm):
    llm.verdict = {
        "sufficient": False,
        "confidence": "medium",
        "covered_aspects": ["疗效", "副作用"],
        "missing_key_aspects": ["成人使用的长期安全性"],
        "reasoning": "缺少成人长期使用的证据。",
        "additional_sub_queries": [{"text": "成人长期使用低浓度阿托品的安全性数据", "focus": "成人安全性"}],
    }
    llm.nothing_on = lambda sub_query: sub_query.startswith("成人")  # the sample KB has no data on adults
    _, result = await run(make_service(kb_settings, searcher, server))
    assert [q.text for q in result.stage2_queries] == ["成人长期使用低浓度阿托品的安全性数据"]
    answer_requests = agent_requests(server, "answer_generation")  # the last one: after stage 2
    prompt = first_user_text(answer_requests[-1])
    assert "【证据缺口】成人使用的长期安全性" in prompt
    assert result.coverage.status == "partial" and result.coverage.missing == ["成人使用的长期安全性"]
    assert "**证据缺口**：知识库中未找到关于“成人使用的长期安全性”的证据" in result.answer
    assert result.citations and all(c.verified for c in result.citations)


async def test_a_late_first_token_gives_the_extractive_report(kb_settings, searcher, server, llm):
    llm.always["answer_generation"] = Reply(delay=3)
    service = make_service(kb_settings, searcher, server, answer_first_token_budget=0.5)
    _, result = await run(service)
    assert [d.component for d in result.degradations] == ["answer"]
    assert "首字过慢" in result.degradations[0].message
    assert result.answer.startswith("> ⚠️ 回答模型在 0.5 秒内没有开始输出")
    assert "### 论据与来源" in result.answer and "畏光" in result.answer
    assert result.citations and all(c.verified for c in result.citations), [
        (c.source, c.quote) for c in result.citations if not c.verified
    ]
    assert result.timings["ttft"] < 2.5, "the clinician did not wait for the late model"


# --- dependent sub-queries and merged near-duplicates (the decomposition's schema over the wire) ------------------

DEPENDENT_QUESTION = "角膜塑形镜最常见的严重并发症应该怎么处理？"


async def test_a_dependent_sub_query_waits_for_its_parent_and_is_searched_with_the_bridge_entity(
    kb_settings, searcher, server
):
    events, result = await run(make_service(kb_settings, searcher, server), DEPENDENT_QUESTION)
    schema = json.dumps(agent_requests(server, "decomposition")[0].body, ensure_ascii=False)
    assert "depends_on" in schema, "the decomposition's output schema offers depends_on"
    (ready,) = [e for e in events if isinstance(e, DecompositionReady)]
    assert [(sq.id, sq.depends_on) for sq in ready.sub_queries] == [("q1", None), ("q2", "q1")]
    assert ready.sub_queries[1].text == f"{BRIDGE_SLOT}的处理原则与方法"

    (rewritten,) = [e for e in events if isinstance(e, SubQueryRewritten)]
    assert rewritten.bridge == "微生物性角膜炎"  # what the parent's evidence says the most serious complication is
    assert rewritten.original.text == f"{BRIDGE_SLOT}的处理原则与方法"
    assert rewritten.rewritten.text == "微生物性角膜炎的处理原则与方法"

    def at(predicate) -> int:
        return next(i for i, e in enumerate(events) if predicate(e))

    parent_judged = at(lambda e: isinstance(e, JudgementDone) and e.analysis.sub_query.id == "q1")
    child_searched = at(lambda e: isinstance(e, SearchStarted) and e.sub_query.id == "q2")
    assert parent_judged < events.index(rewritten) < child_searched, "q2 waited for q1's judged answer"
    assert at(lambda e: isinstance(e, SearchStarted) and e.sub_query.id == "q1") < parent_judged
    (child_search,) = [e for e in events if isinstance(e, SearchDone) and e.sub_query.id == "q2"]
    assert child_search.sub_query.text == "微生物性角膜炎的处理原则与方法"
    judged_texts = [first_user_text(r) for r in agent_requests(server, "relevance_judge")]
    assert any("q2｜微生物性角膜炎的处理原则与方法" in text for text in judged_texts), "the judge read the rewrite"
    assert [sq.text for sq in result.sub_queries][1] == "微生物性角膜炎的处理原则与方法"


async def test_near_duplicate_sub_queries_are_merged_before_search(kb_settings, searcher, server, llm):
    drafts = [
        {"text": "低浓度阿托品的不良反应", "focus": "不良反应"},
        {"text": "低浓度阿托品的疗效", "focus": "疗效"},
        {"text": "低浓度阿托品的副作用", "focus": "副作用"},  # the first one again, in other words
    ]
    llm.script["decomposition"] = [Reply(output={"sub_queries": drafts})]
    events, _ = await run(make_service(kb_settings, searcher, server))
    (ready,) = [e for e in events if isinstance(e, DecompositionReady)]
    assert [sq.text for sq in ready.sub_queries] == ["低浓度阿托品的不良反应", "低浓度阿托品的疗效"]
    assert [(m.text, m.into) for m in ready.merged] == [("低浓度阿托品的副作用", "q1")]
    searched = {e.sub_query.id for e in events if isinstance(e, SearchDone)}
    assert searched == {"q0", "q1", "q2"} and len(agent_requests(server, "relevance_judge")) == 3
