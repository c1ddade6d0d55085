"""Tests for tests/fake_openai_server.py: real HTTP through the real openai / pydantic-ai clients."""

from __future__ import annotations

import time

import openai
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ModelSettings, NativeOutput, PromptedOutput
from pydantic_ai import models as pai_models
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelHTTPError,
    ModelTimeoutError,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

try:  # tests/ is on sys.path in pytest's default (rootdir-less package) import mode
    from fake_openai_server import (
        ChatRequest,
        FakeOpenAIServer,
        LatencyProfile,
        Reply,
        minimal_instance,
    )
except ImportError:  # tests/ became a package
    from tests.fake_openai_server import (
        ChatRequest,
        FakeOpenAIServer,
        LatencyProfile,
        Reply,
        minimal_instance,
    )


class Relevance(BaseModel):
    relevant: bool
    extract: str


ANSWER = "根据指南，成人高血压的诊断阈值为诊室血压≥140/90 mmHg。"
OUTPUT = {"relevant": True, "extract": "诊室血压≥140/90 mmHg"}


@pytest.fixture(autouse=True)
def _allow_model_requests(monkeypatch):
    # A project conftest may disable real model requests; these tests need real HTTP.
    monkeypatch.setattr(pai_models, "ALLOW_MODEL_REQUESTS", True)


def agent_for(srv: FakeOpenAIServer, output_type=str, **kw) -> Agent:
    provider = OpenAIProvider(base_url=srv.base_url, api_key="test")
    return Agent(OpenAIChatModel("m", provider=provider), output_type=output_type, **kw)


def echo_responder(req: ChatRequest) -> Reply:
    if req.output_mode == "text":
        return Reply(content=ANSWER)
    return Reply(output=OUTPUT)


# --- (1) openai SDK --------------------------------------------------------------------------


async def test_openai_text_and_stream_and_models():
    with FakeOpenAIServer(echo_responder) as srv:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="test")
        try:
            r = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "问题"}])
            assert r.choices[0].message.content == ANSWER
            assert r.choices[0].finish_reason == "stop"
            assert r.usage is not None and r.usage.completion_tokens > 0 and r.usage.prompt_tokens == 1

            stream = await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "问题2"}],
                stream=True,
                stream_options={"include_usage": True},
            )
            deltas, usage = [], None
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    deltas.append(chunk.choices[0].delta.content)
                if chunk.usage:
                    usage = chunk.usage
            assert "".join(deltas) == ANSWER and len(deltas) > 3
            assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens

            models = await client.models.list()
            assert len(models.data) >= 2
        finally:
            await client.close()
    assert [r.output_mode for r in srv.requests] == ["text", "text"]
    assert srv.requests[1].stream and srv.requests[0].user_text() == "问题"


# --- (2) pydantic-ai structured output in all three modes, streamed text ----------------------


@pytest.mark.parametrize(
    "wrap, mode",
    [(lambda t: t, "tool"), (NativeOutput, "native"), (PromptedOutput, "prompted")],
    ids=["tool", "native", "prompted"],
)
async def test_pydantic_ai_structured_output(wrap, mode):
    with FakeOpenAIServer(echo_responder) as srv:
        agent = agent_for(srv, wrap(Relevance), instructions="你是相关性评审。")
        result = await agent.run("文档：……")
    assert result.output == Relevance(**OUTPUT)
    (req,) = srv.requests
    assert req.output_mode == mode
    assert "相关性评审" in req.system_text() and "文档" in req.user_text()
    assert req.output_schema is not None and set(req.output_schema["properties"]) == {"relevant", "extract"}
    if mode == "tool":
        assert req.tool_name == "final_result"
    # the CLI's minimal_instance builds schema-valid data from what pydantic-ai sent
    Relevance.model_validate(minimal_instance(req.output_schema))


async def test_pydantic_ai_run_stream_text():
    with FakeOpenAIServer(echo_responder, LatencyProfile(tokens_per_second=2000)) as srv:
        agent = agent_for(srv)
        deltas = []
        async with agent.run_stream("问题") as res:
            async for d in res.stream_text(delta=True, debounce_by=None):
                deltas.append(d)
        assert "".join(deltas) == ANSWER and len(deltas) > 3
        assert res.usage.output_tokens > 0
    assert srv.requests[0].stream and srv.requests[0].body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("wrap", [lambda t: t, NativeOutput, PromptedOutput], ids=["tool", "native", "prompted"])
async def test_pydantic_ai_run_stream_structured_output(wrap):
    long = {"relevant": True, "extract": "长" * 40}
    with FakeOpenAIServer(lambda req: Reply(output=long)) as srv:
        partials = []
        async with agent_for(srv, wrap(Relevance)).run_stream("q") as res:
            async for p in res.stream_output(debounce_by=None):
                partials.append(p)
    assert partials[-1] == Relevance(**long) and len(partials) > 3  # arrived in pieces


# --- (3) faults ------------------------------------------------------------------------------


async def test_429_then_success_is_retried_by_sdk():
    def responder(req: ChatRequest) -> Reply:
        return Reply(status=429, retry_after=0) if req.attempt == 0 else Reply(content="ok")

    with FakeOpenAIServer(responder) as srv:
        result = await agent_for(srv).run("q")
    assert result.output == "ok"
    assert len(srv.requests) == 2 and [r.attempt for r in srv.requests] == [0, 1]


async def test_persistent_500_raises_model_http_error():
    with FakeOpenAIServer(lambda req: Reply(status=500, content="boom")) as srv:
        provider = OpenAIProvider(openai_client=openai.AsyncOpenAI(base_url=srv.base_url, api_key="t", max_retries=0))
        agent = Agent(OpenAIChatModel("m", provider=provider))
        with pytest.raises(ModelHTTPError) as ei:
            await agent.run("q")
    assert ei.value.status_code == 500 and "boom" in str(ei.value.body)
    assert len(srv.requests) == 1


async def test_invalid_json_once_then_valid_through_pydantic_ai_retry():
    def responder(req: ChatRequest) -> Reply:
        return Reply(output=OUTPUT, invalid_json=(req.index == 0))

    with FakeOpenAIServer(responder) as srv:
        result = await agent_for(srv, Relevance, retries=1).run("q")
    assert result.output == Relevance(**OUTPUT)
    assert len(srv.requests) == 2 and srv.requests[1].attempt == 0  # feedback changed the messages
    assert len(srv.requests[1].messages) > len(srv.requests[0].messages)


async def test_cut_stream_raises_in_openai_consumer():
    with FakeOpenAIServer(lambda req: Reply(content=ANSWER, cut_after_chars=10)) as srv:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        got = []
        try:
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "q"}], stream=True
            )
            with pytest.raises(openai.APIConnectionError) as ei:
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        got.append(chunk.choices[0].delta.content)
        finally:
            await client.close()
    # openai 3.52 wraps the transport error: APIConnectionError <- httpx2.RemoteProtocolError
    assert "".join(got) == ANSWER[:10]
    assert isinstance(ei.value, openai.APIConnectionError), repr(ei.value)
    assert "incomplete chunked read" in repr(ei.value.__cause__)
    assert len(srv.requests) == 1  # a mid-stream failure is not retried by the SDK


async def test_cut_stream_raises_in_pydantic_ai_run_stream():
    with FakeOpenAIServer(lambda req: Reply(content=ANSWER, cut_after_chars=10)) as srv:
        agent = agent_for(srv)
        got = []
        with pytest.raises(ModelConnectionError) as ei:
            async with agent.run_stream("q") as res:
                async for d in res.stream_text(delta=True, debounce_by=None):
                    got.append(d)
    # pydantic-ai: ModelConnectionError <- openai.APIConnectionError <- httpx2.RemoteProtocolError
    assert "".join(got) == ANSWER[:10]
    assert isinstance(ei.value, ModelConnectionError), repr(ei.value)
    assert isinstance(ei.value.__cause__, openai.APIConnectionError)
    assert len(srv.requests) == 1


async def test_delay_triggers_client_timeout():
    with FakeOpenAIServer(lambda req: Reply(content="late", delay=1.0)) as srv:
        provider = OpenAIProvider(openai_client=openai.AsyncOpenAI(base_url=srv.base_url, api_key="t", max_retries=0))
        agent = Agent(OpenAIChatModel("m", provider=provider))
        with pytest.raises(ModelTimeoutError):
            await agent.run("q", model_settings=ModelSettings(timeout=0.2))


async def test_responder_exception_is_500_without_sdk_retry():
    def responder(req: ChatRequest) -> Reply:
        raise ValueError("bug in test responder")

    with FakeOpenAIServer(responder) as srv, pytest.raises(ModelHTTPError) as ei:
        await agent_for(srv).run("q")
    assert ei.value.status_code == 500 and len(srv.requests) == 1
    assert isinstance(srv.errors[0], ValueError)


# --- (4) latency simulation --------------------------------------------------------------------


async def test_latency_profile_delays_first_delta():
    async def responder(req: ChatRequest) -> Reply:  # async responders work too
        return Reply(content="短回答，十个字左右。")

    with FakeOpenAIServer(responder, LatencyProfile(ttft=0.2, tokens_per_second=100)) as srv:
        agent = agent_for(srv)
        t0 = time.perf_counter()
        first = None
        async with agent.run_stream("q") as res:
            async for _ in res.stream_text(delta=True, debounce_by=None):
                if first is None:
                    first = time.perf_counter() - t0
    assert first is not None and first >= 0.15


def test_minimal_instance_handles_refs_and_unions():
    schema = {
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"k": {"enum": ["a", "b"]}, "n": {"type": "integer", "minimum": 3}},
                "required": ["k", "n"],
            }
        },
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "number"}]},
            "flag": {"type": "boolean"},
            "s": {"type": "string"},
        },
        "required": ["items", "maybe", "flag", "s"],
    }
    assert minimal_instance(schema) == {"items": [{"k": "a", "n": 3}], "maybe": 0, "flag": False, "s": "示"}
