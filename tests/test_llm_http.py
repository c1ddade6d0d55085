"""The LLM client's HTTP transport (clincite.llm.transport): streamed replies read at a pace, their chunks merged.

Over real HTTP (the fake OpenAI server, the real `openai` client): what a reader of the stream gets is exactly what
the model sent, in fewer chunks when the reply is paced, with the first token and the end never held back. Framing
cases a real server does not produce (CRLF, an event split across reads) use httpx's MockTransport.
"""

from __future__ import annotations

import asyncio
import json

import httpx2
import openai
import pytest
from fake_openai_server import ChatRequest, FakeOpenAIServer, LatencyProfile, Reply
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from clincite.llm.transport import READ_PACE_HEADER, CoalescingTransport, coalescing_transport, read_pace_header

# Demo text (not clinical guidance): long enough to stream as ~60 pieces of 3 characters.
REPORT = (
    "【演示】低浓度阿托品滴眼液可延缓部分儿童近视进展，常见不良反应为畏光和近距离视物模糊。"
    "角膜塑形镜需在专业验配和规范护理下使用，以降低角膜感染风险。"
    "每天保证足够的户外活动时间有助于预防近视发生。"
)
PIECE = 3  # characters per streamed piece of the fake server
MESSAGES = [{"role": "user", "content": "演示问题"}]


def client_for(server: FakeOpenAIServer) -> AsyncOpenAI:
    transport = coalescing_transport()
    return AsyncOpenAI(
        api_key="test", base_url=server.base_url, http_client=DefaultAsyncHttpxClient(transport=transport)
    )


async def open_stream(client: AsyncOpenAI, pace: float | None, **request):
    headers = read_pace_header(pace) if pace else None
    create = client.chat.completions.create
    return await create(model="m", messages=MESSAGES, stream=True, extra_headers=headers, **request)


async def read_stream(client: AsyncOpenAI, pace: float | None) -> list[str]:
    """The content of each chunk the SDK hands on, in order."""
    stream = await open_stream(client, pace)
    pieces = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    return pieces


def reply_with(content: str, **kw):
    def responder(request: ChatRequest) -> Reply:
        return Reply(content=content, **kw)

    return responder


async def test_a_paced_reply_arrives_whole_in_fewer_chunks():
    # 600 characters a second: ~20 pieces arrive during each 0.1 s the reader waits.
    with FakeOpenAIServer(reply_with(REPORT), LatencyProfile(tokens_per_second=400)) as server:
        client = client_for(server)
        unpaced = await read_stream(client, pace=None)
        paced = await read_stream(client, pace=0.1)
    assert "".join(unpaced) == REPORT and "".join(paced) == REPORT
    assert len(unpaced) == -(-len(REPORT) // PIECE)  # without a pace, every piece as the server sent it
    assert len(paced) <= len(unpaced) // 3


async def test_the_first_token_is_handed_on_alone():
    # The first piece comes 0.4 s before the second: a reader that held it back for company would merge them.
    with FakeOpenAIServer(reply_with(REPORT, tokens_per_second=5), LatencyProfile()) as server:
        stream = await open_stream(client_for(server), pace=1.0)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                assert chunk.choices[0].delta.content == REPORT[:PIECE]
                break
        await stream.close()


async def test_a_stream_cut_midway_raises_after_the_text_that_came_before():
    with FakeOpenAIServer(reply_with(REPORT, cut_after_chars=42), LatencyProfile(tokens_per_second=400)) as server:
        client = client_for(server)
        received: list[str] = []
        with pytest.raises(openai.APIConnectionError):
            stream = await open_stream(client, pace=0.1)
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    received.append(chunk.choices[0].delta.content)
    assert "".join(received) == REPORT[:42]


async def test_a_structured_reply_streams_its_tool_arguments_whole():
    output = {"sub_queries": [{"text": f"子查询{i}：阿托品的副作用", "focus": "安全性"} for i in range(6)]}

    def responder(request: ChatRequest) -> Reply:
        return Reply(output=output)

    with FakeOpenAIServer(responder, LatencyProfile(tokens_per_second=400)) as server:
        client = client_for(server)
        tool = {
            "type": "function",
            "function": {"name": "final_result", "parameters": {"type": "object", "properties": {}}},
        }
        stream = await open_stream(client, pace=0.1, tools=[tool], tool_choice="required")
        arguments, names, chunks = "", [], 0
        async for chunk in stream:
            for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                chunks += 1
                names += [call.function.name] if call.function.name else []
                arguments += call.function.arguments or ""
    assert json.loads(arguments) == output
    assert names == ["final_result"]  # the call's opening chunk stays its own: a new call is never merged into one
    assert chunks < len(arguments) // PIECE


async def test_closing_a_stream_early_leaves_no_reader_behind():
    with FakeOpenAIServer(reply_with(REPORT, tokens_per_second=20), LatencyProfile()) as server:
        stream = await open_stream(client_for(server), pace=0.1)
        async for _ in stream:
            break
        await stream.close()
    readers = [t for t in asyncio.all_tasks() if t.get_name() == "clincite-llm-stream-reader" and not t.done()]
    assert readers == []


# --- framing, byte for byte ------------------------------------------------------------------------------------


def sse_transport(parts: list[bytes], seen: list[httpx2.Request]) -> CoalescingTransport:
    async def body():
        for part in parts:
            yield part
            await asyncio.sleep(0.01)

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    return CoalescingTransport(httpx2.MockTransport(handler))


async def read_body(transport: CoalescingTransport, pace: float) -> list[bytes]:
    url, headers = "http://llm/v1/chat/completions", read_pace_header(pace)
    async with httpx2.AsyncClient(transport=transport) as client, client.stream("POST", url, headers=headers) as r:
        return [part async for part in r.aiter_raw()]


def chunk(content: str, **delta) -> bytes:
    event = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content, **delta}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"


async def test_the_pace_header_never_leaves_the_process():
    seen: list[httpx2.Request] = []
    await read_body(sse_transport([chunk("甲"), b"data: [DONE]\n\n"], seen), pace=0.1)
    assert READ_PACE_HEADER not in seen[0].headers


async def test_crlf_framed_streams_pass_through_untouched():
    parts = [b'data: {"a": 1}\r\n\r\n', b'data: {"a": 2}\r\n\r\n', b"data: [DONE]\r\n\r\n"]
    assert b"".join(await read_body(sse_transport(parts, []), pace=0.1)) == b"".join(parts)


async def test_an_event_split_across_reads_is_put_back_together():
    whole = chunk("阿托品") + chunk("副作用") + b"data: [DONE]\n\n"
    parts = [whole[:10], whole[10:45], whole[45:]]
    body = b"".join(await read_body(sse_transport(parts, []), pace=0.1))
    events = [e for e in body.split(b"\n\n") if e]
    assert events[-1] == b"data: [DONE]"
    assert all(e.startswith(b"data: ") for e in events)
    text = "".join(json.loads(e[6:])["choices"][0]["delta"]["content"] for e in events[:-1])
    assert text == "阿托品副作用"


async def test_a_role_change_or_a_finish_is_never_merged_away():
    finish = chunk("")
    finish = finish.replace(b'"finish_reason": null', b'"finish_reason": "stop"')
    parts = [chunk("", role="assistant") + chunk("甲") + chunk("乙") + finish + b"data: [DONE]\n\n"]
    events = [e for e in b"".join(await read_body(sse_transport(parts, []), pace=0.1)).split(b"\n\n") if e]
    decoded = [json.loads(e[6:]) for e in events[:-1]]
    assert decoded[0]["choices"][0]["delta"] == {"content": "甲乙", "role": "assistant"}
    assert decoded[-1]["choices"][0]["finish_reason"] == "stop"
    assert events[-1] == b"data: [DONE]"


@pytest.mark.parametrize("hold", [False, True])
async def test_a_held_reply_is_not_read_off_the_connection_until_its_pace_has_passed(hold):
    # The report's reads are held: what the model sends meanwhile waits in the socket and comes in one read later.
    pulled = []

    async def body():
        for i in range(5):
            await asyncio.sleep(0)  # each part comes off the network: the event loop turns before it
            pulled.append(i)
            yield chunk(f"第{i}段")
        yield b"data: [DONE]\n\n"

    transport = CoalescingTransport(
        httpx2.MockTransport(
            lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())
        )
    )
    url, headers = "http://llm/v1/chat/completions", read_pace_header(10.0, hold=hold)
    async with httpx2.AsyncClient(transport=transport) as client, client.stream("POST", url, headers=headers) as r:
        parts = r.aiter_raw()
        first = await anext(parts)
        await asyncio.sleep(0.05)  # time enough for the reader to take every part, unless it holds
        await parts.aclose()
    assert json.loads(first.split(b"\n\n")[0][6:])["choices"][0]["delta"]["content"] == "第0段"  # at once, alone
    assert pulled == ([0] if hold else [0, 1, 2, 3, 4])
