"""The HTTP transport of the LLM client: a streamed reply is read at a pace, its chunks merged before the SDK sees them.

    client = AsyncOpenAI(http_client=DefaultAsyncHttpxClient(transport=coalescing_transport()), …)
    ModelSettings(extra_headers=read_pace_header(0.1))     # this agent's streams: at most one read per 0.1 s

Why: each streamed chunk costs the app ~0.5 ms of event-loop time in the `openai` client and pydantic-ai, whatever it
carries. Twenty clinicians' reports stream ~800 chunks a second, enough to saturate the one loop that also runs every
other question's early stages. So a reader task takes the bytes off the connection as they arrive, and the SDK is
handed, at most once per the request's read pace, one chunk with every text (or tool-argument) delta that arrived
meanwhile. The first chunk is handed on at once, and so is anything that is not a plain delta (a finish, usage, an
error, `[DONE]`, a role change) with whatever came before it: a stream's first token and its end are never late.
A stream with CRLF framing or compressed bytes, or a request without a pace, passes through as it came.
The pace travels as a request header that this transport removes before the request leaves the process.

A reply whose end is not urgent (the report: its end only closes the message) may also be *held*: after each read
off the connection the reader waits out the pace before it reads again, so the bytes of many tokens wait in the
socket and come in one read, one wake-up of the event loop instead of one per token (the report: ~270 reads of a
~6 s reply become ~60; 0.095 → 0.068 s of loop CPU per report at 80 tok/s). The first token still goes on at once;
the end of a held reply may come up to one pace later. A reply whose last token matters at once (the decomposition:
its last sub-query starts a search) is not held.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2

LLM_CONNECTION_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)  # the SDK's defaults
READ_PACE_HEADER = "x-clincite-read-pace"
HOLD = "hold"  # in the pace header: wait out the pace between reads off the connection too
EVENT_END = b"\n\n"
DATA_PREFIX = b"data: "
CHUNK_OBJECT = "chat.completion.chunk"
# Fields a mergeable chunk may carry; any other field (a new API feature) leaves the chunk as it came.
CHUNK_FIELDS = {
    *("id", "object", "created", "model", "system_fingerprint", "service_tier", "choices", "usage", "obfuscation"),
}
CHOICE_FIELDS = {"index", "delta", "finish_reason", "logprobs"}
TEXT_DELTA_FIELDS = {"role", "content", "refusal"}
TOOL_DELTA_FIELDS = {"role", "content", "refusal", "tool_calls"}
TOOL_CALL_FIELDS = {"index", "id", "type", "function"}


def read_pace_header(seconds: float, hold: bool = False) -> dict[str, str]:
    """Extra request headers that ask this transport to hand the streamed reply on at most once per `seconds`; with
    `hold`, also to read it off the connection at most once per `seconds` (its end may then come that much later)."""
    return {READ_PACE_HEADER: f"{seconds:g} {HOLD}" if hold else f"{seconds:g}"}


def coalescing_transport(**transport_options: Any) -> httpx2.AsyncBaseTransport:
    """An HTTP transport (connection pool options as `httpx2.AsyncHTTPTransport`) that paces streamed replies."""
    return CoalescingTransport(httpx2.AsyncHTTPTransport(**transport_options))


class CoalescingTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport):
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        pace, hold = _take_pace(request)
        response = await self._inner.handle_async_request(request)
        content_type = response.headers.get("content-type", "")
        encoding = response.headers.get("content-encoding", "identity")
        if pace > 0 and content_type.startswith("text/event-stream") and encoding == "identity":
            response.stream = PacedEventStream(response.stream, pace, hold)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _take_pace(request: httpx2.Request) -> tuple[float, bool]:
    """The request's pace in seconds (0: none) and whether its reads are held; the header is removed."""
    value = request.headers.pop(READ_PACE_HEADER, None)
    if value is None:
        return 0.0, False
    seconds, _, hold = value.partition(" ")
    try:
        return max(0.0, float(seconds)), hold == HOLD
    except ValueError:
        return 0.0, False


class PacedEventStream(httpx2.AsyncByteStream):
    """The body of one SSE reply. A reader task frames the events as they arrive; each step of the consumer waits
    until `pace` has passed since its last step (or an event that ends a run of deltas has come), then gets
    everything that arrived, runs of deltas merged. Iterated again after a break (the SDK drains the body after
    `[DONE]`), it goes on where it stopped. Held (`hold`): after a read that came off the connection, the reader
    waits out the pace before it asks for more, unless what came must not wait (the end, an error)."""

    def __init__(self, raw: httpx2.AsyncByteStream, pace: float, hold: bool = False):
        self._raw = raw
        self._pace = pace
        self._hold = hold
        self._events: list[bytes | _Delta] = []  # complete events: a mergeable delta, or bytes to hand on as-is
        self._partial = b""  # the start of an event whose end has not arrived yet
        self._more = asyncio.Event()  # something arrived
        self._due = asyncio.Event()  # something arrived that must not wait: a non-delta event, an error, the end
        self._ended = False
        self._error: Exception | None = None
        self._reader: asyncio.Task | None = None
        self._last_step = float("-inf")

    # --- the reader task ---
    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        # Whether the loop has turned since the last piece: if so, this piece came off the connection (a read that
        # waited); if not, it is the next HTTP chunk of the bytes the last read brought, already in memory.
        turned = [True]
        try:
            async for data in self._raw:
                fresh = turned[0]
                self._frame(data)
                if self._hold and fresh and self._pace > 0 and not self._due.is_set():
                    # Anything arriving meanwhile stays in the socket (anyio stops reading between reads): the next
                    # read takes it all at once.
                    await asyncio.sleep(self._pace)
                turned[0] = False
                loop.call_soon(turned.__setitem__, 0, True)
        except Exception as exc:  # handed to the consumer after the events that came before it
            self._error = exc
        finally:
            self._ended = True
            if self._partial:
                self._events.append(self._partial)
                self._partial = b""
            self._more.set()
            self._due.set()

    def _frame(self, data: bytes) -> None:
        if b"\r" in data or self._pace == 0:  # CRLF framing is not ours to parse: hand everything on as it comes
            self._pace = 0.0
            self._events.append(self._partial + data)
            self._partial = b""
            self._more.set()
            self._due.set()
            return
        *complete, self._partial = (self._partial + data).split(EVENT_END)
        for raw in complete:
            chunk = _mergeable_chunk(raw)
            self._events.append(_Delta(chunk, raw + EVENT_END) if chunk is not None else raw + EVENT_END)
            if chunk is None:
                self._due.set()
        if complete:
            self._more.set()

    # --- the consumer ---
    async def __aiter__(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        if self._reader is None:
            self._reader = loop.create_task(self._read(), name="clincite-llm-stream-reader")
        while self._events or not self._ended:
            if not self._events:
                self._more.clear()
                await self._more.wait()
            await self._wait_for_pace(loop)
            events, self._events = self._events, []
            self._due.clear()
            self._last_step = loop.time()
            if block := _merge(events):
                yield block
        if self._error is not None:
            raise self._error

    async def _wait_for_pace(self, loop: asyncio.AbstractEventLoop) -> None:
        left = self._last_step + self._pace - loop.time()
        if left <= 0 or self._due.is_set():
            return
        try:
            async with asyncio.timeout(left):
                await self._due.wait()
        except TimeoutError:
            pass

    async def aclose(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        await self._raw.aclose()


@dataclass
class _Delta:
    """A mergeable chunk as it arrived; its bytes are handed on unchanged unless another chunk was merged into it."""

    chunk: dict
    raw: bytes
    merged: bool = False

    def encoded(self) -> bytes:
        return _encode(self.chunk) if self.merged else self.raw


def _merge(events: list[bytes | _Delta]) -> bytes:
    """The events as bytes, each run of mergeable chunks of one stream and kind made one chunk."""
    out: list[bytes] = []
    run: _Delta | None = None
    for event in events:
        if isinstance(event, _Delta) and run is not None and _extend(run.chunk, event.chunk):
            run.merged = True
            continue
        if run is not None:
            out.append(run.encoded())
            run = None
        if isinstance(event, _Delta):
            run = event
        else:
            out.append(event)
    if run is not None:
        out.append(run.encoded())
    return b"".join(out)


def _mergeable_chunk(raw: bytes) -> dict | None:
    """The chunk of a one-line `data:` event that is a plain text or tool-argument delta, else None."""
    if not raw.startswith(DATA_PREFIX) or b"\n" in raw:
        return None
    try:
        chunk = json.loads(raw[len(DATA_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(chunk, dict) or chunk.get("object") != CHUNK_OBJECT or not chunk.keys() <= CHUNK_FIELDS:
        return None
    choices = chunk.get("choices")
    if chunk.get("usage") is not None or not isinstance(choices, list) or len(choices) != 1:
        return None
    choice = choices[0]
    if not isinstance(choice, dict) or not choice.keys() <= CHOICE_FIELDS:
        return None
    if choice.get("finish_reason") is not None or choice.get("logprobs") is not None:
        return None
    delta = choice.get("delta")
    if not isinstance(delta, dict) or delta.get("refusal") is not None or _delta_kind(delta) is None:
        return None
    chunk.pop("obfuscation", None)  # random padding, meaningless once chunks are merged
    return chunk


def _delta_kind(delta: dict) -> str | None:
    calls = delta.get("tool_calls")
    if calls is not None:
        if not delta.keys() <= TOOL_DELTA_FIELDS or delta.get("content") is not None:
            return None
        if not isinstance(calls, list) or len(calls) != 1 or not isinstance(calls[0], dict):
            return None
        call, function = calls[0], calls[0].get("function")
        if not call.keys() <= TOOL_CALL_FIELDS or not isinstance(function, dict):
            return None
        if not function.keys() <= {"name", "arguments"} or not isinstance(function.get("arguments", ""), str):
            return None
        return "tool"
    if delta.keys() <= TEXT_DELTA_FIELDS and isinstance(delta.get("content"), str):
        return "text"
    return None


def _extend(run: dict, chunk: dict) -> bool:
    """Append `chunk`'s delta to `run`'s when both are the same kind of delta of one stream and choice."""
    if run["id"] != chunk["id"] or run.get("model") != chunk.get("model"):
        return False
    run_choice, choice = run["choices"][0], chunk["choices"][0]
    run_delta, delta = run_choice["delta"], choice["delta"]
    if run_choice.get("index") != choice.get("index") or delta.get("role") is not None:
        return False
    kind = _delta_kind(run_delta)
    if kind != _delta_kind(delta):
        return False
    if kind == "text":
        run_delta["content"] += delta["content"]
        return True
    run_call, call = run_delta["tool_calls"][0], delta["tool_calls"][0]
    function = call["function"]
    if run_call.get("index") != call.get("index") or any(x is not None for x in (call.get("id"), call.get("type"))):
        return False
    if function.get("name") is not None:  # a new tool call begins
        return False
    run_function = run_call["function"]
    run_function["arguments"] = run_function.get("arguments", "") + function.get("arguments", "")
    return True


def _encode(chunk: dict) -> bytes:
    return DATA_PREFIX + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode() + EVENT_END
