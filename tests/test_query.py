"""TwoStageQueryService orchestration: stages, overlap, follow-ups, degradation, speculation, offline mode, cache."""

from __future__ import annotations

import asyncio
import contextlib
import json

import numpy as np
import pytest
from conftest import ATROPINE, ORTHO_K, SAMPLE_KB, make_settings
from fake_clinical_llm import _last_prompt, decompose_reply, in_process_models, judge_reply, read_sub_query, section
from pydantic import SecretStr
from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

import query
from clincite.core.settings import Settings
from clincite.core.shapes import (
    AnswerDone,
    AnswerToken,
    ChatTurn,
    DecompositionReady,
    DegradedEvent,
    JudgementDone,
    NoticeEvent,
    PathChosen,
    QueryResult,
    SearchDone,
    SearchStarted,
    Stage2Started,
    StageFinished,
    StageStarted,
)
from clincite.ingest.pipeline import Ingestor
from clincite.kb.embeddings import Embedder
from clincite.kb.store import KnowledgeBase
from clincite.llm import prompts as fmt
from clincite.llm.agents import build_agents
from clincite.retrieval.search import HybridSearcher
from query import TwoStageQueryService

QUESTION = "低浓度阿托品控制近视的效果和副作用？"
WAIT_BOUND = 10.0  # seconds a gated fake model waits for the service before giving up


def last_prompt(messages) -> str:
    return _last_prompt(messages)


def structured(build, delay: float = 0.0, fail: Exception | None = None, calls: list | None = None) -> FunctionModel:
    """A FunctionModel answering through the output tool with build(prompt); optional latency, failure, call log."""

    async def answer(messages) -> dict:
        prompt = last_prompt(messages)
        if calls is not None:
            calls.append(prompt)
        await asyncio.sleep(delay)
        if fail:
            raise fail
        return build(prompt)

    async def respond(messages, info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, await answer(messages))])

    async def stream(messages, info: AgentInfo):
        payload = json.dumps(await answer(messages), ensure_ascii=False)
        yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="t")}
        for i in range(0, len(payload), 10):
            yield {0: DeltaToolCall(json_args=payload[i : i + 10])}

    return FunctionModel(respond, stream_function=stream)


def text_model(pieces_for, delay: float = 0.0) -> FunctionModel:
    """A streamed text model: pieces_for(prompt, call_number) gives the pieces (an Exception piece is raised)."""
    calls = []

    async def stream(messages, info: AgentInfo):
        calls.append(last_prompt(messages))
        for piece in pieces_for(last_prompt(messages), len(calls)):
            await asyncio.sleep(delay)
            if isinstance(piece, Exception):
                raise piece
            yield piece

    async def respond(messages, info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[TextPart("".join(p for p in pieces_for(last_prompt(messages), 0) if isinstance(p, str)))]
        )

    model = FunctionModel(respond, stream_function=stream)
    model.calls = calls
    return model


def server_error() -> ModelHTTPError:
    return ModelHTTPError(status_code=500, model_name="test", body={"error": "boom"})


@pytest.fixture()
def service(kb_settings: Settings, searcher: HybridSearcher) -> TwoStageQueryService:
    """The LLM path in-process: the four agents on the fake clinical LLM's FunctionModels; tests override one."""
    settings = kb_settings.model_copy(update={"answer_cache_size": 0})
    return TwoStageQueryService(settings, searcher, agents=build_agents(settings, models=in_process_models()))


@pytest.fixture()
def offline_service(kb_settings: Settings, searcher: HybridSearcher) -> TwoStageQueryService:
    return TwoStageQueryService(kb_settings.model_copy(update={"answer_cache_size": 0}), searcher)


async def collect(service, question=QUESTION, history=None):
    events = [event async for event in service.run(question, history)]
    done = [e for e in events if isinstance(e, AnswerDone)]
    assert len(done) == 1 and events[-1] is done[0]
    return events, done[0].result


def sufficient(_prompt):
    return {
        "sufficient": True,
        "confidence": "high",
        "covered_aspects": ["疗效", "副作用"],
        "missing_key_aspects": [],
        "additional_sub_queries": [],
        "reasoning": "证据覆盖了疗效与副作用。",
    }


def insufficient(_prompt):
    return {
        "sufficient": False,
        "confidence": "medium",
        "covered_aspects": ["疗效"],
        "missing_key_aspects": ["停药后反弹"],
        "additional_sub_queries": [{"text": "停用低浓度阿托品后可能出现近视反弹", "focus": "注意事项"}],
        "reasoning": "缺少停药反弹的信息。",
    }


# --- stages ----------------------------------------------------------------------------------------------------


async def test_offline_report_has_three_sections_and_every_quote_verifies(offline_service):
    events, result = await collect(offline_service)
    assert result.mode == "offline"
    assert any(isinstance(e, NoticeEvent) and e.kind == "offline" for e in events)
    assert "**TL;DR：**" in result.answer and "### 完整结论" in result.answer and "### 论据与来源" in result.answer
    assert len(result.citations) >= 3
    assert all(c.verified for c in result.citations) and result.unverified_citations == 0
    assert {c.source for c in result.citations} >= {"低浓度阿托品临床应用指南（演示）"}
    assert "畏光" in result.answer.split("### 论据与来源")[0], "the side effects asked for are in the answer itself"
    assert result.coverage.status == "answered"
    streamed = "".join(e.text for e in events if isinstance(e, AnswerToken))
    assert streamed == result.answer
    # One sub-query per aspect asked, each about the subject, no question words ("的效果和副作用？" is not searched).
    assert [sq.focus for sq in result.sub_queries] == ["疗效", "不良反应"]
    assert all(sq.text.startswith("低浓度阿托品") for sq in result.sub_queries)
    assert not any(word in sq.text for sq in result.sub_queries for word in ("？", "和", "的效果"))
    assert result.timings["ttft"] <= result.timings["total"]
    assert {"decomposition", "search", "judgement", "sufficiency", "answer"} <= set(result.timings)


def stage_events(events) -> list[tuple[str, str]]:
    return [(type(e).__name__, e.stage) for e in events if isinstance(e, StageStarted | StageFinished)]


def position(events, predicate) -> list[int]:
    return [i for i, e in enumerate(events) if predicate(e)]


@pytest.mark.parametrize("path", ["offline", "llm_stage2"])
async def test_every_stage_sends_its_own_started_and_finished_event(path, offline_service, service):
    """What a renderer needs to open and close each step: no stage is left for it to guess the end of."""
    if path == "offline":
        events, result = await collect(offline_service)
    else:
        with service.agents.sufficiency_judge.override(model=structured(insufficient)):
            events, result = await collect(service)
    started = [e.stage for e in events if isinstance(e, StageStarted)]
    finished = [e.stage for e in events if isinstance(e, StageFinished)]
    expected = {"decomposition", "search", "judgement", "sufficiency", "answer"} | (
        {"stage2"} if path == "llm_stage2" else set()
    )
    assert sorted(started) == sorted(finished) == sorted(expected), stage_events(events)
    for stage in expected:  # each finished after it started
        assert (
            position(events, lambda e, s=stage: isinstance(e, StageStarted) and e.stage == s)[0]
            < position(events, lambda e, s=stage: isinstance(e, StageFinished) and e.stage == s)[0]
        )
    end_of = {
        stage: position(events, lambda e, s=stage: isinstance(e, StageFinished) and e.stage == s)[0]
        for stage in ("search", "judgement")
    }
    searches = position(events, lambda e: isinstance(e, SearchDone) and e.stage == 1)
    judgements = position(events, lambda e: isinstance(e, JudgementDone) and e.stage == 1)
    assert max(searches) < end_of["search"] and max(judgements) < end_of["judgement"]
    assert len(searches) == len(judgements) == len(result.sub_queries) + 1  # and the question itself (q0)
    searches_started = [e.sub_query.id for e in events if isinstance(e, SearchStarted)]
    assert sorted(searches_started) == sorted(e.sub_query.id for e in events if isinstance(e, SearchDone)), (
        "every search says when it starts"
    )


async def test_stage2_runs_only_when_the_verdict_asks_for_it(service):
    agents = service.agents
    with agents.sufficiency_judge.override(model=structured(sufficient)):
        events, result = await collect(service)
    assert not any(isinstance(e, Stage2Started) for e in events)
    assert result.stage2_queries == []

    with agents.sufficiency_judge.override(model=structured(insufficient)):
        events, result = await collect(service)
    started = [e for e in events if isinstance(e, Stage2Started)]
    assert len(started) == 1 and started[0].sub_queries[0].text == "停用低浓度阿托品后可能出现近视反弹"
    assert [q.text for q in result.stage2_queries] == ["停用低浓度阿托品后可能出现近视反弹"]
    stage2 = [a for a in result.analyses if a.sub_query.id.startswith("s2-")]
    assert len(stage2) == 1


async def test_stage2_judges_only_passages_stage1_has_not_judged(service):
    def wants_ortho_k_too(_prompt):  # a stage-2 query whose hits mix stage-1 passages (atropine) and new ones
        return {
            **insufficient(_prompt),
            "additional_sub_queries": [{"text": "低浓度阿托品联合角膜塑形镜控制近视", "focus": "联合治疗"}],
        }

    with service.agents.sufficiency_judge.override(model=structured(wants_ortho_k_too)):
        events, _ = await collect(service)
    searched = {e.stage: set() for e in events if isinstance(e, SearchDone)}
    for e in events:
        if isinstance(e, SearchDone):
            searched[e.stage].update(h.chunk_id for h in e.hits)
    assert searched[2] & searched[1] and searched[2] - searched[1], "stage 2 found old and new passages"
    judged_again = [e for e in events if isinstance(e, JudgementDone) and e.stage == 2]
    extracts = {x.chunk_id for judged in judged_again for x in judged.analysis.extracts}
    assert extracts, "the new passages were judged and gave extracts"
    assert extracts <= searched[2] - searched[1], "passages judged in stage 1 are not judged again"


class Seen:
    """The sub-queries a fake model has seen so far, and a bounded wait until it has seen some: a concurrent service
    gets there at once, a serial one never does and the test's assertions then fail."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self._changed = asyncio.Event()

    def add(self, sub_query_id: str) -> None:
        self.ids.add(sub_query_id)
        self._changed.set()

    async def include(self, wanted: set[str]) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WAIT_BOUND):
                while not wanted <= self.ids:
                    self._changed.clear()
                    await self._changed.wait()


async def test_judges_start_as_sub_queries_arrive_and_run_concurrently(service):
    agents = service.agents
    drafts = [
        {"text": "低浓度阿托品延缓近视进展的疗效", "focus": "疗效数据"},
        {"text": "低浓度阿托品常见不良反应包括畏光和近视力下降", "focus": "不良反应"},
        {"text": "使用低浓度阿托品期间的随访间隔", "focus": "随访"},
    ]
    payload = json.dumps({"sub_queries": drafts}, ensure_ascii=False)
    two_drafts_written = payload.index("}", payload.index("}") + 1) + 1
    called, returned = Seen(), Seen()
    subs = {"q1", "q2", "q3"}

    async def slow_stream(messages, info: AgentInfo):
        yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="d")}
        for i in range(0, len(payload), 8):
            await asyncio.sleep(0.02)
            yield {0: DeltaToolCall(json_args=payload[i : i + 8])}
            if i < two_drafts_written <= i + 8:  # the model is still writing while the first sub-query is judged
                await called.include({"q1"})
                await returned.include({"q0"})

    async def judge(messages, info: AgentInfo) -> ModelResponse:
        prompt = last_prompt(messages)
        judged = read_sub_query(section(prompt, fmt.SUB_QUERY, [fmt.ORIGINAL_QUESTION])).id
        called.add(judged)
        if judged in subs:  # each sub-query's judge is still out when the last one starts
            await called.include(subs)
        returned.add(judged)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, judge_reply(prompt))])

    with (
        agents.decomposition.override(model=FunctionModel(stream_function=slow_stream)),
        agents.relevance_judge.override(model=FunctionModel(judge)),
        agents.sufficiency_judge.override(model=structured(sufficient)),
    ):
        events, _ = await collect(service)

    order = [(type(e).__name__, getattr(getattr(e, "sub_query", None), "id", None)) for e in events]
    ready = order.index(("DecompositionReady", None))
    started = {sq: i for i, (kind, sq) in enumerate(order) if kind == "JudgementStarted"}
    finished = {e.analysis.sub_query.id: i for i, e in enumerate(events) if isinstance(e, JudgementDone)}
    assert set(started) == {"q0", "q1", "q2", "q3"}
    assert started["q0"] < ready and started["q1"] < ready, "judging starts before decomposition has finished"
    assert finished["q0"] < ready, "the question's own judge overlaps the decomposition"
    assert max(started[q] for q in subs) < min(finished[q] for q in subs), "the sub-queries' judges overlap"


async def test_follow_up_reaches_the_decomposition_with_history(service):
    from clincite.core.shapes import ChatTurn

    calls: list[str] = []
    history = [
        ChatTurn(role="user", content="低浓度阿托品控制近视的效果如何？"),
        ChatTurn(role="assistant", content="**TL;DR：** 0.05% 效果最好。"),
    ]
    with service.agents.decomposition.override(model=structured(decompose_reply, calls=calls)):
        _, result = await collect(service, "那副作用呢？", history)
    assert "低浓度阿托品控制近视的效果如何" in calls[0] and "那副作用呢" in calls[0]
    assert result.sub_queries[0].text.startswith("低浓度阿托品副作用")  # resolved against the history
    assert any(c.source.startswith("低浓度阿托品") for c in result.citations)


# --- degradation (docs/architecture.md, "When things fail") --------------------------------------------------------


async def test_failed_decomposition_searches_the_question_itself(service):
    with service.agents.decomposition.override(model=structured(decompose_reply, fail=server_error())):
        events, result = await collect(service)
    assert [sq.text for sq in result.sub_queries] == [QUESTION]
    assert [d.component for d in result.degradations] == ["decomposition"]
    assert any(isinstance(e, DegradedEvent) and "问题分解失败" in e.degradation.message for e in events)
    assert result.citations and all(c.verified for c in result.citations)


async def test_failed_judge_hands_on_its_top_hits_with_low_confidence(service):
    calls: list[str] = []

    def judge_or_fail(prompt):
        if "q1｜" in prompt:
            raise server_error()
        return judge_reply(prompt)

    def build(prompt):
        calls.append(prompt)
        return judge_or_fail(prompt)

    with service.agents.relevance_judge.override(model=structured(build)):
        events, result = await collect(service)
    failed = next(a for a in result.analyses if a.sub_query.id == "q1")
    assert failed.degraded and failed.confidence == "low" and len(failed.extracts) == 2
    search = next(e for e in events if getattr(e, "sub_query", None) and e.sub_query.id == "q1" and hasattr(e, "hits"))
    assert [x.chunk_id for x in failed.extracts] == [h.chunk_id for h in search.hits[:2]]
    assert [d.component for d in result.degradations] == ["judge:q1"]
    assert "### 论据与来源" in result.answer


async def test_failed_sufficiency_judge_counts_as_sufficient(service):
    with service.agents.sufficiency_judge.override(model=structured(sufficient, fail=server_error())):
        events, result = await collect(service)
    assert result.sufficiency.sufficient and result.sufficiency.degraded
    assert not any(isinstance(e, Stage2Started) for e in events)
    assert [d.component for d in result.degradations] == ["sufficiency"]
    assert result.answer.startswith("**TL;DR：**") and "### 论据与来源" in result.answer


async def test_answer_cut_midway_keeps_the_partial_text_and_lists_the_sources(service):
    pieces = ["**TL;DR：** 0.05% 低浓度阿托品", "效果最好【1】。\n\n### 完整结论\n低浓度", server_error()]
    with service.agents.answer_generation.override(model=text_model(lambda p, n: pieces)):
        events, result = await collect(service)
    streamed = "".join(e.text for e in events if isinstance(e, AnswerToken))
    assert streamed == result.answer
    assert result.answer.startswith("**TL;DR：** 0.05% 低浓度阿托品效果最好【1】。")
    assert "回答生成中途中断" in result.answer and "### 已找到的来源" in result.answer
    assert result.citations and all(c.verified for c in result.citations)
    assert min(c.number for c in result.citations) == 2  # numbering continues after the partial text's 【1】
    assert [d.component for d in result.degradations] == ["answer"]


async def test_answer_failing_before_its_first_token_still_gives_the_evidence(service):
    with service.agents.answer_generation.override(model=text_model(lambda p, n: [server_error()])):
        _, result = await collect(service)
    assert result.answer.startswith("> ⚠️ 回答生成失败")
    assert len(result.citations) >= 2 and all(c.verified for c in result.citations)


async def test_missing_embedding_model_is_announced_and_search_goes_on(kb_settings, sample_kb):
    settings = kb_settings.model_copy(update={"embedding_model": "/nonexistent/model", "answer_cache_size": 0})
    service = TwoStageQueryService(settings, HybridSearcher(settings, sample_kb, Embedder(settings.embedding_model)))
    events, result = await collect(service)
    notices = [e for e in events if isinstance(e, NoticeEvent) and e.kind == "bm25_only"]
    assert len(notices) == 1 and "EMBEDDING_MODEL" in notices[0].message
    assert result.search_mode == "bm25" and result.citations


# --- speculation, citations, cache ----------------------------------------------------------------------------


async def test_a_speculative_answer_never_reaches_the_user_when_stage2_runs(service):
    def pieces(prompt, call):  # call 1 is the speculative run, call 2 the answer after stage 2
        return ["SPECULATIVE-TEXT ", "不应出现"] if call == 1 else ["FINAL-ANSWER ", "**TL;DR：** 含第二阶段证据。"]

    answer = text_model(pieces)
    with (
        service.agents.sufficiency_judge.override(model=structured(insufficient, delay=0.3)),
        service.agents.answer_generation.override(model=answer),
    ):
        events, result = await collect(service)
    assert len(answer.calls) == 2, "the speculative answer ran while the sufficiency judge was thinking"
    streamed = "".join(e.text for e in events if isinstance(e, AnswerToken))
    assert "SPECULATIVE" not in streamed and "SPECULATIVE" not in result.answer
    assert streamed.startswith("FINAL-ANSWER")
    answer_started = next(i for i, e in enumerate(events) if isinstance(e, StageStarted) and e.stage == "answer")
    stage2 = next(i for i, e in enumerate(events) if isinstance(e, Stage2Started))
    assert stage2 < answer_started


async def test_a_sufficient_verdict_releases_the_speculative_answer(service):
    answer = text_model(lambda p, n: ["**TL;DR：** 已生成。"])
    with (
        service.agents.sufficiency_judge.override(model=structured(sufficient, delay=0.2)),
        service.agents.answer_generation.override(model=answer),
    ):
        events, result = await collect(service)
    assert len(answer.calls) == 1
    assert result.answer == "**TL;DR：** 已生成。"
    verdict = next(i for i, e in enumerate(events) if type(e).__name__ == "SufficiencyReady")
    first_token = next(i for i, e in enumerate(events) if isinstance(e, AnswerToken))
    assert verdict < first_token


async def test_quotes_not_in_the_source_are_flagged(service):
    report = (
        "**TL;DR：** 示例【1】【2】\n\n### 完整结论\n示例。\n\n### 论据与来源\n"
        "**【1】真实原文**\n说明：x\n来源：《低浓度阿托品临床应用指南（演示）》\n"
        "原文：“低浓度阿托品总体安全性良好，但仍可能出现以下副作用”\n\n"
        "**【2】编造原文**\n说明：x\n来源：《低浓度阿托品临床应用指南（演示）》\n原文：“阿托品可以完全治愈近视。”\n"
    )
    with service.agents.answer_generation.override(model=text_model(lambda p, n: [report])):
        _, result = await collect(service)
    verified = {c.number: c.verified for c in result.citations}
    assert verified == {1: True, 2: False}
    assert result.unverified_citations == 1
    assert result.citations[0].chunk_id and result.citations[0].heading_path


async def test_every_paragraph_of_a_quote_is_checked_not_its_first_line(service):
    real = "浓度越高，畏光和调节幅度下降等副作用越明显，0.05%组调节幅度下降约2D，而0.01%组影响很小。"
    report = (
        "**TL;DR：** 示例【1】【2】\n\n### 完整结论\n示例。\n\n### 论据与来源\n"
        "**【1】两段都在原文**\n说明：x\n来源：《低浓度阿托品临床应用指南（演示）》\n"
        f"原文：“{real}\n\n副作用的处理\n\n对于畏光明显者，可建议户外佩戴遮阳帽或变色镜片”\n\n"
        "**【2】第二段是编的**\n说明：x\n来源：《低浓度阿托品临床应用指南（演示）》\n"
        f"原文：“{real}\n\n停药后近视不会反弹，可放心停用。”\n"
    )
    with service.agents.answer_generation.override(model=text_model(lambda p, n: [report])):
        _, result = await collect(service)
    assert {c.number: c.verified for c in result.citations} == {1: True, 2: False}
    assert "对于畏光明显者" in result.citations[0].quote  # the whole quote is what the source view highlights


async def test_answer_cache_replays_and_ingestion_invalidates_it(tmp_path):
    settings = make_settings(tmp_path)  # its own KB: the ingest below must not change the session's sample KB
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([SAMPLE_KB / ORTHO_K])
    searcher = HybridSearcher(settings, kb)
    service = TwoStageQueryService(settings, searcher)
    _, first = await collect(service, "角膜塑形镜的禁忌症有哪些？")
    events, second = await collect(service, "角膜塑形镜的禁忌症有哪些？ ")
    assert not first.cached and second.cached
    assert second.answer == first.answer
    assert any(isinstance(e, NoticeEvent) and e.kind == "cached" for e in events)
    assert any(isinstance(e, DecompositionReady) for e in events), "the steps are replayed too"
    Ingestor(settings, kb).run([SAMPLE_KB / ATROPINE])  # any ingest makes the cached answers stale …
    searcher.refresh()  # … once the searcher serves what it published
    _, third = await collect(service, "角膜塑形镜的禁忌症有哪些？")
    assert not third.cached
    kb.close()


async def test_an_answer_given_while_the_searcher_still_served_the_old_kb_is_not_replayed_after_the_swap(tmp_path):
    """The window between ingest's catalogue commit and the searcher's swap: a question asked then is answered from
    the old index. Its answer belongs to the old version; once the new index is served it must not be replayed."""
    settings = make_settings(tmp_path, kb_reload_interval=3600)  # the searcher swaps only when told to (refresh)
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([SAMPLE_KB / ORTHO_K])
    searcher = HybridSearcher(settings, kb)
    service = TwoStageQueryService(settings, searcher)
    question = "低浓度阿托品有哪些副作用？"
    _, before = await collect(service, question)
    assert before.coverage.status == "no_evidence"
    Ingestor(settings, kb).run([SAMPLE_KB / ATROPINE])  # the catalogue's version moves on at once …
    _, in_the_window = await collect(service, question)  # … while the searcher still reads the old index
    assert in_the_window.coverage.status == "no_evidence" and "知识库中未找到" in in_the_window.answer
    searcher.refresh()  # the new index swapped in
    _, after = await collect(service, question)
    assert not after.cached, "the answer of the old index was replayed after the new one was served"
    assert after.coverage.status != "no_evidence"
    assert any(ATROPINE.removesuffix(".md") in c.source for c in after.citations)
    kb.close()


class LoopWatch:
    """Wraps an object: records each method called from the thread that runs the event loop (a blocking read)."""

    def __init__(self, wrapped, on_loop: list[str]):
        self._wrapped, self._on_loop = wrapped, on_loop

    def __getattr__(self, name):
        value = getattr(self._wrapped, name)
        if not callable(value):
            if asyncio._get_running_loop() is not None:
                self._on_loop.append(name)
            return value

        def watched(*args, **kwargs):
            if asyncio._get_running_loop() is not None:
                self._on_loop.append(name)
            return value(*args, **kwargs)

        return watched


async def test_the_question_path_reads_the_kb_off_the_event_loop(kb_settings, sample_kb, monkeypatch):
    """Every clinician's chat shares one event loop: the catalogue (SQLite) and the published index pointer (a file)
    are read in threads, including for the answer cache's key, on a first question and on a cached one."""
    from clincite.kb import bm25

    on_loop: list[str] = []
    kb = KnowledgeBase(kb_settings)
    kb.catalogue = LoopWatch(kb.catalogue, on_loop)
    published = bm25.BM25Index.published

    def watched_published(folder):
        if asyncio._get_running_loop() is not None:
            on_loop.append("BM25Index.published")
        return published(folder)

    monkeypatch.setattr(bm25.BM25Index, "published", staticmethod(watched_published))
    searcher = HybridSearcher(kb_settings.model_copy(update={"kb_reload_interval": 0.001}), kb)
    service = TwoStageQueryService(kb_settings, searcher)
    _, first = await collect(service, "角膜塑形镜的禁忌症有哪些？")
    _, second = await collect(service, "角膜塑形镜的禁忌症有哪些？")
    assert first.citations and second.cached
    assert on_loop == [], f"read on the event loop: {sorted(set(on_loop))}"


def test_offline_detection_is_not_fooled_by_chainlits_ci_key(kb_settings):
    assert kb_settings.model_copy(update={"openai_api_key": SecretStr("sk-FAKE-OPENAI-API-KEY")}).offline
    assert kb_settings.model_copy(update={"openai_api_key": SecretStr("")}).offline
    assert not kb_settings.model_copy(update={"openai_api_key": SecretStr("sk-real-looking-key")}).offline
    assert kb_settings.model_copy(update={"openai_api_key": SecretStr("sk-real"), "offline_mode": "on"}).offline


def test_cli_json_matches_the_contract(kb_settings, sample_kb, run_cli):
    env = {"CI": "true", "OPENAI_API_KEY": "sk-FAKE-OPENAI-API-KEY"}  # Chainlit's CI key counts as no key
    out = run_cli(query.main, [QUESTION, "--json", "--kb", kb_settings.kb_dir], env)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert {
        "question",
        "mode",
        "sub_queries",
        "analyses",
        "sufficiency",
        "stage2_queries",
        "answer",
        "citations",
        "timings",
        "usage",
    } <= set(payload)
    assert payload["mode"] == "offline"
    assert set(payload["analyses"][0]) >= {"sub_query", "sub_answer", "confidence", "missing", "extracts"}
    assert set(payload["analyses"][0]["extracts"][0]) == {"source", "chunk_id", "text"}
    assert all(set(c) >= {"source", "chunk_id", "quote", "verified"} and c["verified"] for c in payload["citations"])
    assert "ttft" in payload["timings"]
    assert payload["usage"] == {}, "offline mode calls no model: there is no token usage to report"
    assert payload["coverage"] == {"status": "answered", "missing": []}
    assert "问题分解" in out.stderr, "the steps are shown while the JSON goes to stdout"
    assert "✓ 检索" in out.stderr and "✓ 相关性判断" in out.stderr, "search and judgement say when they are done"
    assert ATROPINE.removesuffix(".md") in out.stderr


# --- the fast path: a question that asks one thing -----------------------------------------------------------------

SIMPLE = "角膜塑形镜的禁忌症有哪些？"


def slow_decomposition(seconds: float) -> FunctionModel:
    """A decomposition that takes its time: the fast path must not wait for it."""
    drafts = json.dumps(
        {"sub_queries": [{"text": "角膜塑形镜的禁忌证包括眼部活动性炎症和中重度干眼", "focus": "禁忌证"}]},
        ensure_ascii=False,
    )

    async def stream(messages, info: AgentInfo):
        yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="d")}
        await asyncio.sleep(seconds)
        yield {0: DeltaToolCall(json_args=drafts)}

    async def respond(messages, info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(seconds)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.loads(drafts))])

    return FunctionModel(respond, stream_function=stream)


async def test_a_simple_question_is_answered_from_its_own_evidence_while_the_decomposition_still_runs(service):
    with service.agents.decomposition.override(model=slow_decomposition(30)):
        async with asyncio.timeout(20):  # safety only: the fast path never waits for the 30 s decomposition
            events, result = await collect(service, SIMPLE)
    (chosen,) = [e for e in events if isinstance(e, PathChosen)]
    assert chosen.path == "fast" and chosen.label == "简单问题：直接检索"
    assert not any(isinstance(e, DecompositionReady) for e in events), "answered before the decomposition finished"
    assert [a.sub_query.id for a in result.analyses] == ["q0"] and result.sub_queries == []
    assert result.sufficiency.sufficient, "the sufficiency judge still guarded it"
    assert result.citations and all(c.verified for c in result.citations)
    finished = [e.stage for e in events if isinstance(e, StageFinished)]
    assert "decomposition" in finished, "the decomposition step was closed when it was stopped"


async def test_a_not_sufficient_verdict_on_the_fast_path_falls_back_to_the_whole_pipeline(service):
    verdicts: list[str] = []

    def only_q0_is_not_enough(prompt):
        verdicts.append(prompt)
        if "q1｜" not in prompt:  # the fast path's verdict: the question's own evidence only
            return insufficient(prompt)
        return sufficient(prompt)

    speculative_first = ["FAST-PATH-DRAFT "]

    def report(prompt, call):
        return speculative_first if call == 1 else ["**TL;DR：** 完整流程的回答。"]

    with (
        service.agents.decomposition.override(model=slow_decomposition(0.3)),
        service.agents.sufficiency_judge.override(model=structured(only_q0_is_not_enough)),
        service.agents.answer_generation.override(model=text_model(report, delay=0.05)),
    ):
        events, result = await collect(service, SIMPLE)
    paths = [e.path for e in events if isinstance(e, PathChosen)]
    assert paths == ["fast", "fallback"]
    assert len(verdicts) == 2 and "q1｜" in verdicts[1], "the whole stage 1 was judged again for sufficiency"
    assert [a.sub_query.id for a in result.analyses] == ["q0", "q1"]
    streamed = "".join(e.text for e in events if isinstance(e, AnswerToken))
    assert "FAST-PATH-DRAFT" not in streamed and "完整流程的回答" in result.answer


async def test_a_composite_question_goes_the_full_way(service):
    events, result = await collect(service, QUESTION)  # 效果和副作用: two aspects
    (chosen,) = [e for e in events if isinstance(e, PathChosen)]
    assert chosen.path == "full" and "2 个方面" in chosen.reason
    assert len(result.sub_queries) == 2


async def test_the_fast_path_works_offline_too(offline_service):
    events, result = await collect(offline_service, SIMPLE)
    assert [e.path for e in events if isinstance(e, PathChosen)] == ["fast"]
    assert [a.sub_query.id for a in result.analyses] == ["q0"]
    assert result.coverage.status == "answered" and "不宜验配" in result.answer


async def test_the_fast_path_can_be_switched_off(kb_settings, searcher):
    settings = kb_settings.model_copy(update={"answer_cache_size": 0, "fast_path": False})
    service = TwoStageQueryService(settings, searcher, agents=build_agents(settings, models=in_process_models()))
    events, result = await collect(service, SIMPLE)
    assert not any(isinstance(e, PathChosen) for e in events) and result.sub_queries


# --- the similar-question cache ------------------------------------------------------------------------------------


@pytest.fixture()
def cached_service(kb_settings, searcher) -> TwoStageQueryService:
    """Offline, with the answer cache on (its own cache: a fresh service)."""
    return TwoStageQueryService(kb_settings.model_copy(update={"answer_cache_size": 64}), searcher)


async def test_the_same_question_in_other_words_is_answered_from_the_cache_and_labelled(cached_service):
    _, first = await collect(cached_service, "角膜塑形镜的适应证有哪些？")
    events, again = await collect(cached_service, "OK镜适合哪些人？")
    assert not first.cached and again.cached
    assert again.answer == first.answer and again.question == "OK镜适合哪些人？"
    (notice,) = [e for e in events if isinstance(e, NoticeEvent) and e.kind == "cached"]
    assert notice.message == "与之前的问题“角膜塑形镜的适应证有哪些？”相同，直接给出当时的回答（知识库未变）。"
    assert again.timings["ttft"] < first.timings["total"] + 1  # (replayed: no stage ran; see bench for figures)
    assert not any(isinstance(e, SearchStarted) for e in events[: events.index(notice)])


async def test_another_aspect_of_the_same_topic_is_not_taken_for_the_same_question(cached_service):
    await collect(cached_service, "低浓度阿托品有哪些副作用？")
    _, other = await collect(cached_service, "低浓度阿托品有哪些禁忌？")
    assert not other.cached
    assert "禁忌" in other.answer or "不宜" in other.answer or "慎用" in other.answer


async def test_an_answer_given_with_chat_history_never_stands_for_another_question(cached_service):
    """The cache holds answers of the knowledge base, not of a clinician's chat: an answer generated with chat turns in
    its prompt is replayed for the very same turns only, never for someone's similar question."""
    history = [
        ChatTurn(role="user", content="低浓度阿托品控制近视的效果如何？"),
        ChatTurn(role="assistant", content="**TL;DR：** 可延缓近视进展……"),
    ]
    _, in_a_chat = await collect(cached_service, "低浓度阿托品的副作用有哪些？", history)
    assert not in_a_chat.cached
    _, standalone = await collect(cached_service, "低浓度阿托品有哪些不良反应？")  # the same question, no chat
    assert not standalone.cached, "an answer made with a clinician's chat history stood for a fresh question"


async def test_a_follow_up_is_resolved_before_it_is_looked_up(cached_service):
    _, first = await collect(cached_service, "低浓度阿托品的副作用有哪些？")
    history = [
        ChatTurn(role="user", content="低浓度阿托品控制近视的效果如何？"),
        ChatTurn(role="assistant", content="**TL;DR：** 可延缓近视进展……"),
    ]
    events, follow_up = await collect(cached_service, "那副作用呢？", history)
    assert follow_up.cached and follow_up.answer == first.answer
    assert any(isinstance(e, NoticeEvent) and "低浓度阿托品的副作用有哪些？" in e.message for e in events)


async def test_reanswer_skips_the_cache_and_a_new_kb_version_never_reuses_it(tmp_path):
    settings = make_settings(tmp_path, kb_reload_interval=3600)
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([SAMPLE_KB / ORTHO_K])
    searcher = HybridSearcher(settings, kb)
    service = TwoStageQueryService(settings, searcher)
    await collect(service, "角膜塑形镜的适应证有哪些？")
    _, anew = await collect_fresh(service, "OK镜适合哪些人？")
    assert not anew.cached, "重新回答 answered from the cache"
    Ingestor(settings, kb).run([SAMPLE_KB / ATROPINE])
    searcher.refresh()
    _, after = await collect(service, "OK镜适合哪些孩子？")
    assert not after.cached, "an answer of the previous KB version stood for a question on the new one"
    kb.close()


async def collect_fresh(service, question):
    events = [event async for event in service.run(question, use_cache=False)]
    return events, events[-1].result


def test_an_embedding_may_judge_the_wording_but_never_the_asks():
    from clincite.question.answer_cache import AnswerCache
    from clincite.question.gist import gist_of

    cache = AnswerCache(8, threshold=0.9)
    fingerprint = ["v1"]
    done = AnswerDone(
        result=QueryResult(
            question="角膜塑形镜晚上戴几个小时？",
            mode="offline",
            sub_queries=[],
            analyses=[],
            sufficiency=None,
            stage2_queries=[],
            answer="**TL;DR：** …",
            citations=[],
            timings={},
            usage={},
        )
    )
    cache.remember("k", [done], fingerprint, vector=np.array([1.0, 0.0]))
    near, far = np.array([0.95, 0.31]), np.array([0.6, 0.8])  # cosine 0.95 and 0.6
    other_words = "角膜塑形镜夜间戴几个小时？"
    assert gist_of(other_words).terms != gist_of("角膜塑形镜晚上戴几个小时？").terms  # words alone: no
    assert cache.find_similar(other_words, fingerprint) is None
    assert cache.find_similar(other_words, fingerprint, near) is not None  # the embedding says yes
    assert cache.find_similar(other_words, fingerprint, far) is None
    assert cache.find_similar("角膜塑形镜夜间戴有什么风险？", fingerprint, near) is None  # another aspect: never
    assert cache.find_similar(other_words, ["v2"], near) is None  # another KB version: never


def test_the_threshold_is_calibrated_so_a_model_that_cannot_tell_close_questions_apart_never_decides():
    from clincite.question.answer_cache import DIFFERENT_PROBES, NEVER, calibrated_threshold

    def encoder(similarity: float):
        def encode(texts):  # each probe pair at the given cosine
            vectors = []
            for _ in range(len(texts) // 2):
                vectors += [np.array([1.0, 0.0]), np.array([similarity, (1 - similarity**2) ** 0.5])]
            return vectors

        return encode

    assert len(DIFFERENT_PROBES) >= 3
    assert calibrated_threshold(0.9, encoder(0.5)) == 0.9  # tells them apart: the setting stands
    assert calibrated_threshold(0.9, encoder(0.93)) == pytest.approx(0.95)  # raised above the probes
    assert calibrated_threshold(0.9, encoder(0.99)) == NEVER  # as good as identical: words only


async def test_with_the_english_test_model_loaded_close_chinese_questions_are_still_told_apart(
    kb_settings, sample_kb, real_embedder
):
    """all-MiniLM-L6-v2 reads most Chinese as unknown tokens (游泳 and 洗澡 score 1.0): its calibration must keep
    it from deciding, or 镜片 and 镜盒 would be one question."""
    searcher = HybridSearcher(kb_settings, sample_kb, real_embedder)
    service = TwoStageQueryService(kb_settings.model_copy(update={"answer_cache_size": 64}), searcher)
    await collect(service, "角膜塑形镜镜片怎么清洗？")
    _, other = await collect(service, "角膜塑形镜镜盒怎么清洗？")
    assert not other.cached
    _, same = await collect(service, "OK镜镜片怎么清洗？")
    assert same.cached


async def test_the_question_itself_is_searched_with_the_names_of_the_aspects_it_asks(offline_service):
    """The fast path answers from the question's own evidence: searched as asked ("…有哪些眼底并发症？") it missed the
    section the guideline calls 主要眼底并发症 that the aspect's name finds (a gate error of bench/bench_gate.py). With
    an LLM the question is searched with the aspect's name added; offline, a question that asks one thing is searched
    and judged as the one sub-query the rules plan, so the fast path answers from the evidence the full way would."""
    from clincite.question.gist import question_search_text

    assert question_search_text("高度近视有哪些眼底并发症？") == "高度近视有哪些眼底并发症？ 风险与并发症"
    events, result = await collect(offline_service, "高度近视有哪些眼底并发症？")
    searched = {e.sub_query.id: e.sub_query.text for e in events if isinstance(e, SearchDone)}
    assert "风险与并发症" in searched["q0"] and "高度近视" in searched["q0"]
    assert [e.path for e in events if isinstance(e, PathChosen)] == ["fast"]
    assert any("主要眼底并发症" in c.heading_path for c in result.citations), [c.heading_path for c in result.citations]
