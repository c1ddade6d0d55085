"""Faults (issue 11): every agent hanging, Stop mid-question (service and app), the vector store down.

Real parts throughout: the fake OpenAI-compatible server over HTTP (tests/fake_openai_server.py), the openai client and
pydantic-ai, jieba-BM25, and in the last test a real Chroma server (`chroma run`) that is stopped and started again.
No timing targets here (those live in bench/): the bounds asserted are derived from the configured budgets, and the
other waits are safety limits far above them, so a regression fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from conftest import SAMPLE_KB, chainlit_app, make_settings
from fake_clinical_llm import AGENTS, ClinicalLLM, agent_requests, llm_settings
from fake_openai_server import FakeOpenAIServer, Reply

from clincite.core.settings import Settings
from clincite.core.shapes import AnswerDone, AnswerToken, NoticeEvent, SearchDone, StageStarted
from clincite.ingest.pipeline import Ingestor
from clincite.kb.embeddings import get_embedder
from clincite.kb.store import KnowledgeBase
from clincite.question.service import TwoStageQueryService
from clincite.retrieval.search import HybridSearcher

QUESTION = "低浓度阿托品控制近视的效果和副作用？"
NEXT_QUESTION = "角膜塑形镜的适应症有哪些？"
HANG = 120.0  # seconds a hanging request would take: far beyond every budget of these tests
# Everything that is not waiting for the LLM: jieba, BM25, one embedding call, the citation check, on 2 shared cores.
NON_LLM_WORK = 5.0
# Per-stage budgets small enough to keep the test short, each request timeout inside its stage budget.
SHORT_BUDGETS = {
    "decomposition_timeout": 0.8,
    "decomposition_budget": 1.0,
    "relevance_judge_timeout": 0.8,
    "relevance_judge_budget": 1.0,
    "sufficiency_judge_timeout": 0.8,
    "sufficiency_judge_budget": 1.0,
    "answer_generation_timeout": 0.8,
    "answer_generation_budget": 3.0,
    "answer_first_token_budget": 1.0,
}


@pytest.fixture()
def llm():
    return ClinicalLLM()


@pytest.fixture()
def server(llm):
    with FakeOpenAIServer(llm) as srv:
        yield srv


def answer_first_token_limit(settings: Settings) -> float:
    """How long the answer stage may wait for its first token before it falls back to the extractive report."""
    return min(settings.answer_first_token_budget, settings.answer_generation.budget)


def first_token_bound(settings: Settings) -> float:
    """The latest the report's first token may come when every agent hangs, from the configured budgets alone.

    The question itself is searched and judged from the start, the decomposition's sub-queries once it gives up; then
    the sufficiency judge and the (speculative) answer run side by side, and the answer shows its first token once
    the verdict is in (a late verdict counts as "sufficient").
    """
    stage1 = settings.decomposition.budget + settings.relevance_judge.budget
    return stage1 + max(settings.sufficiency_judge.budget, answer_first_token_limit(settings))


def llm_limiter(service: TwoStageQueryService):
    """The process-wide LLM limiter behind the agents' models (pydantic-ai's ConcurrencyLimiter)."""
    model = service.agents.answer_generation.model
    for _ in range(10):  # a few wrappers deep at most
        if hasattr(model, "_limiter"):
            return model._limiter
        model = model.wrapped
    raise AssertionError("no concurrency limiter around the agents' model")


async def wait_for(condition, what: str, limit: float = 20.0) -> None:
    """Poll a condition on another thread's state (the fake server's request list); fail after `limit` seconds."""
    try:
        async with asyncio.timeout(limit):
            while not condition():  # noqa: ASYNC110 (nothing to await: the server runs on its own thread)
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"waited {limit:g} s for {what}") from None


# --- every agent hanging ---------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_every_agent_hanging_gives_the_extractive_report_within_the_budgets(kb_settings, searcher, server, llm):
    for agent in AGENTS:
        llm.always[agent] = Reply(delay=HANG)
    settings = llm_settings(kb_settings, server.base_url, **SHORT_BUDGETS)
    service = TwoStageQueryService(settings, searcher)
    started = time.perf_counter()
    first_token = None
    result = None
    async with asyncio.timeout(HANG / 2):  # safety only: a missing budget fails here instead of hanging
        async for event in service.run(QUESTION):
            if isinstance(event, AnswerToken) and first_token is None:
                first_token = time.perf_counter() - started
            if isinstance(event, AnswerDone):
                result = event.result
    assert first_token is not None and result is not None
    assert first_token <= first_token_bound(settings) + NON_LLM_WORK, (first_token, first_token_bound(settings))
    components = {d.component.split(":")[0] for d in result.degradations}
    assert {"decomposition", "judge", "sufficiency", "answer"} <= components  # each stage took its fallback
    # The evidence found, verbatim: the clinician is not left with nothing, and nothing in it is made up.
    assert result.answer.strip() and result.citations and all(c.verified for c in result.citations)


# --- Stop mid-question ---------------------------------------------------------------------------------------------


async def test_stop_during_sufficiency_frees_every_task_and_llm_slot(kb_settings, searcher, server, llm):
    """Closing the event iterator (what the app does on Stop or a disconnect) while the sufficiency judge is thinking
    and the speculative answer holds its stream open: nothing of the question outlives it, and with the whole LLM
    capacity (2 calls) taken by it before, the next question gets every call through at once."""
    llm.always["sufficiency_judge"] = Reply(delay=HANG)
    settings = llm_settings(kb_settings, server.base_url, llm_max_concurrency=2)
    service = TwoStageQueryService(settings, searcher)
    limiter = llm_limiter(service)
    before = asyncio.all_tasks()
    events = service.run(QUESTION)
    async for event in events:
        if isinstance(event, StageStarted) and event.stage == "sufficiency":
            break
    await wait_for(
        lambda: agent_requests(server, "sufficiency_judge") and agent_requests(server, "answer_generation"),
        "the sufficiency judge and the speculative answer both at the LLM",
    )
    assert limiter.running_count == 2  # the question holds the whole capacity now
    await events.aclose()
    await asyncio.sleep(0)  # let cancelled HTTP streams finish closing
    assert asyncio.all_tasks() - before == set(), "a task of the stopped question outlived it"
    assert limiter.running_count == 0, "the stopped question still holds LLM slots"

    del llm.always["sufficiency_judge"]
    async with asyncio.timeout(HANG / 2):  # safety only: held slots would make the next question wait for HANG
        result = await service.ask(NEXT_QUESTION)
    assert not result.degradations, [d.component for d in result.degradations]  # no call waited past its budget


@pytest.fixture()
def hanging_app(kb_settings, sample_kb, server, llm, tmp_path):
    """app.py loaded as `chainlit run` loads it, on the sample KB and the fake LLM, persistence off."""
    llm.always["sufficiency_judge"] = Reply(delay=HANG)
    settings = llm_settings(make_settings(tmp_path, kb_dir=kb_settings.kb_dir), server.base_url, llm_max_concurrency=2)
    with chainlit_app(settings, tmp_path) as (app, _):
        yield app


async def test_the_apps_stop_cancels_the_question(hanging_app, server):
    """Chainlit's Stop (`stop` socket event) cancels the session's current task: the on_message handler."""
    import chainlit as cl
    from chainlit.config import config
    from chainlit.context import ChainlitContext, context_var
    from chainlit.emitter import BaseChainlitEmitter
    from chainlit.session import HTTPSession

    before = asyncio.all_tasks()
    session = HTTPSession(id=str(uuid.uuid4()), client_type="webapp", thread_id=str(uuid.uuid4()))
    context_var.set(ChainlitContext(session, emitter=BaseChainlitEmitter(session)))
    await config.code.on_chat_start()
    handler = asyncio.create_task(config.code.on_message(cl.Message(content=QUESTION, type="user_message")))
    await wait_for(
        lambda: agent_requests(server, "sufficiency_judge") and agent_requests(server, "answer_generation"),
        "the sufficiency judge and the speculative answer both at the LLM",
    )
    limiter = llm_limiter(hanging_app.service)
    assert limiter.running_count == 2
    handler.cancel()  # chainlit.socket.stop: session.current_task.cancel()
    await asyncio.gather(handler, return_exceptions=True)
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set(), "a task of the stopped question outlived it"
    assert limiter.running_count == 0, "the stopped question still holds LLM slots"


# --- the vector store down -----------------------------------------------------------------------------------------


async def ask_with_events(service: TwoStageQueryService, question: str):
    events = []
    async with asyncio.timeout(HANG):  # safety only
        async for event in service.run(question):
            events.append(event)
    return events, events[-1].result


def semantic_hits(events) -> int:
    return sum("semantic" in h.found_by for e in events if isinstance(e, SearchDone) for h in e.hits)


async def test_vector_store_down_answers_bm25_only_with_a_notice_and_recovers(tmp_path, chroma_server, server):
    settings = llm_settings(
        make_settings(
            tmp_path / "data",
            chroma_host="127.0.0.1",
            chroma_port=chroma_server.port,
            vector_store_retry=0.5,
            vector_store_timeout=3.0,
        ),
        server.base_url,
    )
    kb = KnowledgeBase(settings)
    report = Ingestor(settings, kb).run([SAMPLE_KB])
    assert report.count("added") == 10
    assert kb.vectors(settings.embedding_model).count() > 0  # the vectors live in the Chroma server
    service = TwoStageQueryService(settings, HybridSearcher(settings, kb, get_embedder(settings)))

    events, result = await ask_with_events(service, QUESTION)
    assert result.search_mode == "hybrid" and not result.degradations
    assert semantic_hits(events), "hybrid search found nothing through the Chroma server"

    chroma_server.stop()
    events, result = await ask_with_events(service, NEXT_QUESTION)
    assert "### 论据与来源" in result.answer and result.citations, "no answer while the vector store is down"
    assert result.search_mode == "bm25"
    assert any(isinstance(e, NoticeEvent) and e.kind == "bm25_only" for e in events), "no notice to the clinician"
    recorded = [d.component for d in result.degradations]  # checked last: the recovery below is worth knowing too

    chroma_server.start()
    await asyncio.sleep(settings.vector_store_retry)
    events, result = await ask_with_events(service, "高度近视需要警惕哪些并发症？")
    assert result.search_mode == "hybrid" and not result.degradations, "search did not recover by itself"
    assert semantic_hits(events)
    assert recorded, "the BM25-only answer is not recorded as degraded (so /metrics cannot count it)"
