"""Fair shares of the LLM: one question never holds more calls in flight than its cap, and Stop frees them.

The slow models below are handed to `build_agents` as the endpoint's models, so the product wraps them in its own
caps (clincite.llm.agents, clincite.llm.slots) exactly as it wraps the real endpoint: remove the per-question cap
there and the first two tests fail.
"""

from __future__ import annotations

import asyncio
import json

from fake_clinical_llm import in_process_models
from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from clincite.core.shapes import StageStarted, SufficiencyReady
from clincite.llm.agents import build_agents
from clincite.question.service import TwoStageQueryService

SUB_QUERIES = {"sub_queries": [{"text": f"低浓度阿托品的第{i}个方面", "focus": "综合"} for i in range(1, 6)]}
NO_EXTRACTS = {"extracts": [], "sub_answer": "无", "confidence": "low", "missing": []}


class InFlight:
    """A slow judge model that records how many of its calls ran at once."""

    def __init__(self, delay: float):
        self.delay, self.now, self.peak, self.calls = delay, 0, 0, 0

    def model(self) -> FunctionModel:
        async def respond(messages, info: AgentInfo) -> ModelResponse:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
            try:
                await asyncio.sleep(self.delay)
            finally:
                self.now -= 1
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, NO_EXTRACTS)])

        return FunctionModel(respond)


def decomposition_model() -> FunctionModel:
    async def respond(messages, info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, SUB_QUERIES)])

    async def stream(messages, info: AgentInfo):
        yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="d")}
        yield {0: DeltaToolCall(json_args=json.dumps(SUB_QUERIES, ensure_ascii=False))}

    return FunctionModel(respond, stream_function=stream)


def service_on(settings, searcher, **models) -> TwoStageQueryService:
    """The service with the product's agents, and so its caps, on these models (the fake clinical LLM for the rest)."""
    return TwoStageQueryService(
        settings, searcher, agents=build_agents(settings, models={**in_process_models(), **models})
    )


async def test_a_question_with_six_judgements_runs_at_most_its_cap_at_once(kb_settings, searcher):
    settings = kb_settings.model_copy(
        update={"llm_max_concurrency_per_question": 2, "answer_cache_size": 0, "fast_path": False}
    )
    judges = InFlight(delay=0.2)
    service = service_on(settings, searcher, decomposition=decomposition_model(), relevance_judge=judges.model())
    await service.ask("低浓度阿托品控制近视的效果？")
    assert judges.calls == 6  # the question itself and five sub-queries were all judged …
    assert judges.peak == 2  # … never more than two at a time


async def test_two_questions_each_get_their_own_cap(kb_settings, searcher):
    settings = kb_settings.model_copy(
        update={"llm_max_concurrency_per_question": 2, "answer_cache_size": 0, "fast_path": False}
    )
    judges = InFlight(delay=0.2)
    service = service_on(settings, searcher, decomposition=decomposition_model(), relevance_judge=judges.model())
    await asyncio.gather(service.ask("低浓度阿托品控制近视的效果？"), service.ask("角膜塑形镜的护理要点？"))
    assert judges.calls >= 12 and judges.peak == 4  # two at a time each, side by side


async def test_stop_during_sufficiency_cancels_every_task_of_the_question(kb_settings, searcher):
    settings = kb_settings.model_copy(update={"answer_cache_size": 0, "fast_path": False})
    slow = InFlight(delay=30)
    service = service_on(settings, searcher, sufficiency_judge=slow.model())
    before = asyncio.all_tasks()
    events = service.run("低浓度阿托品的副作用有哪些？")
    async for event in events:
        assert not isinstance(event, SufficiencyReady), "the slow sufficiency judge answered"
        if isinstance(event, StageStarted) and event.stage == "sufficiency":
            break
    async with asyncio.timeout(5):
        while not slow.now:  # the sufficiency judge is thinking and the speculative answer has started
            await asyncio.sleep(0.01)
    await events.aclose()  # what Stop and a disconnect do
    await asyncio.sleep(0.05)
    assert slow.now == 0, "the sufficiency call was not cancelled"
    assert asyncio.all_tasks() - before == set(), "a task of the stopped question outlived it"


async def test_a_late_insufficient_verdict_answers_without_stage_two(kb_settings, searcher):
    """A slow stage 1 must not be followed by a second search round: the first report token would come too late."""
    settings = kb_settings.model_copy(update={"stage2_deadline": 0.01, "answer_cache_size": 0, "fast_path": False})
    service = TwoStageQueryService(settings, searcher, agents=build_agents(settings, models=in_process_models()))

    async def insufficient(messages, info: AgentInfo) -> ModelResponse:
        verdict = {
            "sufficient": False,
            "confidence": "low",
            "missing_key_aspects": ["停药后反弹"],
            "additional_sub_queries": [{"text": "阿托品停药后的反弹", "focus": "停药"}],
            "reasoning": "缺停药",
        }
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])

    with service.agents.sufficiency_judge.override(model=FunctionModel(insufficient)):
        result = await service.ask("低浓度阿托品的副作用有哪些？")
    assert not result.sufficiency.sufficient and not result.stage2_queries
    assert [d.component for d in result.degradations] == ["stage2"]
    assert "论据与来源" in result.answer  # answered from the evidence found in stage 1
