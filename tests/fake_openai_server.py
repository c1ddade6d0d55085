"""A real-HTTP fake of an OpenAI-compatible ``/v1/chat/completions`` endpoint.

The ``openai`` SDK and pydantic-ai's ``OpenAIChatModel`` talk to it over real sockets
(JSON and SSE), so tests exercise the whole client stack: request building, SDK
retries, SSE parsing, output-tool / native / prompted structured output, and
validation retries. The same server simulates latency (time to first token and
tokens/s) for the latency benchmark.

Usage in a test::

    from fake_openai_server import FakeOpenAIServer, LatencyProfile, Reply

    def responder(req: ChatRequest) -> Reply:          # may also be ``async def``
        if req.output_mode == "text":
            return Reply(content="根据指南……")
        return Reply(output={"relevant": True, "extract": "…"})

    with FakeOpenAIServer(responder, LatencyProfile(ttft=0.2, tokens_per_second=80)) as srv:
        provider = OpenAIProvider(base_url=srv.base_url, api_key="test")
        agent = Agent(OpenAIChatModel("m", provider=provider), output_type=Relevance)
        ...
        assert len(srv.requests) == 1 and srv.requests[0].output_mode == "tool"

The responder sees a :class:`ChatRequest` (the parsed request, the detected output
mode, the output JSON schema, and ``attempt`` — how many earlier requests had an
identical ``messages`` list, i.e. SDK-level retries) and returns a :class:`Reply`
(text ``content`` or structured ``output``, or an error ``status``, plus latency and
fault-injection knobs). Notes:

* SDK retries (429/5xx) resend the *same* messages, so ``attempt`` counts them.
  pydantic-ai *validation* retries append feedback messages, so the messages differ and
  ``attempt`` is 0 again; use ``index`` (position in ``srv.requests``) or your own
  counter for "fail once, then succeed" across validation retries.
* ``Reply.output`` is sent as ``final_result`` tool-call arguments in tool mode and as
  the message text (JSON) in native / prompted / text mode. ``Reply.content`` is always
  sent as plain text (in tool mode that makes pydantic-ai either accept JSON text or
  ask for a tool call).
* For ``status != 200`` the error message is ``Reply.content`` if set. A responder that
  raises gets a 500 with ``x-should-retry: false`` (so the SDK does not retry it) and
  the exception is stored in ``srv.errors``.
* ``stop()`` closes idle connections and cancels requests still in flight after 0.2 s
  (their clients get a connection error).
* Sync responders run on the server's event loop: don't block in them (use
  ``Reply.delay`` / ``ttft`` for latency).
* ``cut_after_chars`` (streaming only): the server sends exactly that many characters
  of content/arguments, then raises inside the SSE generator, so uvicorn closes the
  socket without the terminating HTTP chunk and without ``data: [DONE]``. The client's
  h11 parser sees "peer closed connection without sending complete message body
  (incomplete chunked read)". With openai 3.52 the consumer's ``async for`` over the
  stream raises ``openai.APIConnectionError`` (``__cause__``: ``httpx2.RemoteProtocolError``)
  after the first ``cut_after_chars`` characters have arrived; pydantic-ai's ``run_stream``
  / ``stream_text`` raises ``pydantic_ai.exceptions.ModelConnectionError`` (``__cause__``:
  that ``APIConnectionError``). Neither retries a stream that failed mid-way. uvicorn's
  "Exception in ASGI application" log line for this deliberate cut is filtered out.
* Pacing: streamed replies send the first chunk (role + first piece) after
  ``delay + ttft`` (headers go out after ``delay``), then pieces of a few characters
  on an absolute schedule of ``tokens_per_second * chars_per_token`` characters/s.
  Non-streamed replies are sent after ``delay + ttft + completion_tokens / tps``.

CLI for manual runs (serves :func:`default_responder`)::

    python tests/fake_openai_server.py --port 8765 --ttft 0.5 --tps 80
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = [
    "ChatRequest",
    "FakeOpenAIServer",
    "LatencyProfile",
    "Reply",
    "Responder",
    "default_responder",
    "minimal_instance",
]

OutputMode = Literal["tool", "native", "prompted", "text"]

# pydantic-ai's PromptedOutput template says "...compatible with this schema:\n\n{schema}\n\n..."
_PROMPTED_MARKERS = ("compatible with this schema",)


# ---------------------------------------------------------------------------
# Public data types
# ---------------------------------------------------------------------------


@dataclass
class Reply:
    """What the fake model answers for one request."""

    content: str | None = None  # plain text (answer generation), streamed if the request streams
    output: Any = None  # structured output (a dict/list, JSON-serialisable)
    status: int = 200  # non-200 → an OpenAI-style JSON error body with this status
    retry_after: float | None = None  # adds a Retry-After header (seconds)
    delay: float = 0.0  # extra seconds before the response headers are sent (timeouts)
    ttft: float | None = None  # seconds to first token (defaults to server latency profile)
    tokens_per_second: float | None = None  # streaming speed (defaults to profile); also total time when non-streamed
    invalid_json: bool = False  # send output as broken JSON (truncated) to trigger validation retries
    cut_after_chars: int | None = None  # streaming: drop the connection after this many characters of content
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class ChatRequest:
    """What the responder sees."""

    model: str
    messages: list[dict]  # as received
    stream: bool
    output_mode: OutputMode  # detected from the request
    tool_name: str | None  # name of the output tool when tool mode
    body: dict  # the raw JSON
    attempt: int  # how many requests with an identical messages list came before (0 first)
    index: int = 0  # position in FakeOpenAIServer.requests
    output_schema: dict | None = None  # JSON schema of the structured output (tool/native/prompted), if found

    def system_text(self) -> str:
        """All system/developer messages joined with newlines."""
        return "\n".join(
            _content_text(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer")
        )

    def user_text(self) -> str:
        """All user messages joined with newlines (content may be a string or a list of parts)."""
        return "\n".join(_content_text(m.get("content")) for m in self.messages if m.get("role") == "user")


Responder = Callable[[ChatRequest], Reply | Awaitable[Reply]]


@dataclass(frozen=True)
class LatencyProfile:
    ttft: float = 0.0  # seconds before the first token / before a non-streamed response
    tokens_per_second: float = 0.0  # 0 = infinitely fast
    chars_per_token: float = 1.5  # Chinese ≈ 1.5 chars/token; paces streaming and non-streamed bodies


# ---------------------------------------------------------------------------
# Request parsing helpers
# ---------------------------------------------------------------------------


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "".join(parts)
    return str(content)


def _all_message_text(messages: list[dict]) -> str:
    out = []
    for m in messages:
        out.append(_content_text(m.get("content")))
        for tc in m.get("tool_calls") or []:
            out.append(str((tc.get("function") or {}).get("arguments") or ""))
    return "".join(out)


def _extract_json_object(text: str) -> dict | None:
    """The first JSON object embedded in ``text`` that parses (used for the prompted-mode schema)."""
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, _ = decoder.raw_decode(text, i)
            if isinstance(obj, dict):
                return obj
        except json.JSONDecodeError:
            pass
        i = text.find("{", i + 1)
    return None


def _detect_mode(body: dict, messages: list[dict]) -> tuple[OutputMode, str | None, dict | None]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    tool_names = [(t.get("function") or {}).get("name") for t in tools]
    tool_choice = body.get("tool_choice")

    chosen: str | None = None
    if isinstance(tool_choice, dict):
        chosen = (tool_choice.get("function") or {}).get("name")
    if chosen is None:
        chosen = next((n for n in tool_names if n and n.startswith("final_result")), None)
    if chosen is None and tool_choice == "required" and tool_names:
        chosen = tool_names[0]
    if chosen is not None:
        schema = next(
            (
                (t.get("function") or {}).get("parameters")
                for t in tools
                if (t.get("function") or {}).get("name") == chosen
            ),
            None,
        )
        return "tool", chosen, schema

    rf = body.get("response_format")
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        return "native", None, (rf.get("json_schema") or {}).get("schema")

    system = "\n".join(_content_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    json_object = isinstance(rf, dict) and rf.get("type") == "json_object"
    lowered = system.lower()
    if json_object or any(marker in lowered for marker in _PROMPTED_MARKERS):
        schema = None
        for marker in _PROMPTED_MARKERS:
            pos = lowered.find(marker)
            if pos != -1:
                schema = _extract_json_object(system[pos:])
                break
        return "prompted", None, schema
    return "text", None, None


# ---------------------------------------------------------------------------
# minimal_instance: schema-valid minimal data (used by the CLI default responder)
# ---------------------------------------------------------------------------


def minimal_instance(schema: dict | bool | None, root: dict | None = None) -> Any:
    """A minimal value valid against ``schema`` (object/array/string/number/integer/boolean/
    null/enum/const/anyOf/oneOf/allOf/$ref/$defs). Arrays get one item (or ``minItems``);
    objects get their required properties (all properties if ``required`` is absent but
    ``additionalProperties`` is false, as with strict schemas)."""
    if schema is None or schema is True or schema == {}:
        return {}
    if schema is False:
        return None
    root = root if root is not None else schema
    if "$ref" in schema:
        return minimal_instance(_resolve_ref(schema["$ref"], root), root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = schema[key]
            non_null = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            return minimal_instance((non_null or options)[0], root)
    if schema.get("allOf"):
        merged: dict = {}
        for sub in schema["allOf"]:
            sub = _resolve_ref(sub["$ref"], root) if isinstance(sub, dict) and "$ref" in sub else sub
            if isinstance(sub, dict):
                for k, v in sub.items():
                    if k == "properties":
                        merged.setdefault("properties", {}).update(v)
                    elif k == "required":
                        merged.setdefault("required", []).extend(v)
                    else:
                        merged[k] = v
        merged.update({k: v for k, v in schema.items() if k != "allOf"})
        return minimal_instance(merged, root)

    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), typ[0] if typ else None)
    if typ is None:
        if "properties" in schema:
            typ = "object"
        elif "items" in schema:
            typ = "array"
        else:
            return {}

    if typ == "object":
        props: dict = schema.get("properties") or {}
        if "required" in schema:
            names = [n for n in schema["required"] if n in props] + [n for n in schema["required"] if n not in props]
        elif schema.get("additionalProperties") is False:
            names = list(props)
        else:
            names = []
        return {n: minimal_instance(props.get(n, {}), root) if n in props else "x" for n in names}
    if typ == "array":
        if isinstance(schema.get("prefixItems"), list):
            return [minimal_instance(s, root) for s in schema["prefixItems"]]
        n = max(1, int(schema.get("minItems", 1)))
        if "maxItems" in schema:
            n = min(n, int(schema["maxItems"]))
        return [minimal_instance(schema.get("items", {}), root) for _ in range(n)]
    if typ == "string":
        fmt = schema.get("format")
        special = {
            "date-time": "2024-01-01T00:00:00Z",
            "date": "2024-01-01",
            "time": "00:00:00",
            "email": "a@example.com",
            "uri": "https://example.com",
            "url": "https://example.com",
            "uuid": "00000000-0000-0000-0000-000000000000",
        }
        if fmt in special:
            return special[fmt]
        return "示" * max(1, int(schema.get("minLength", 1)))
    if typ in ("number", "integer"):
        value: float = 0
        if "minimum" in schema:
            value = max(value, schema["minimum"])
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            value = schema["exclusiveMinimum"] + (1 if typ == "integer" else 0.5)
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            value = schema["exclusiveMaximum"] - (1 if typ == "integer" else 0.5)
        return math.ceil(value) if typ == "integer" else value
    if typ == "boolean":
        return False
    if typ == "null":
        return None
    return {}


def _resolve_ref(ref: str, root: dict) -> dict:
    if not ref.startswith("#"):
        return {}
    node: Any = root
    for part in ref.lstrip("#").strip("/").split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def default_responder(req: ChatRequest) -> Reply:
    """CLI default: a short Chinese sentence for text, minimal schema-valid data for structured output."""
    if req.output_mode == "text":
        return Reply(content="（假模型）这是一个用于本地测试的回答。")
    return Reply(output=minimal_instance(req.output_schema) if req.output_schema else {})


# ---------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------


class _StreamCut(Exception):
    """Raised inside the SSE generator to make uvicorn drop the connection (cut_after_chars)."""


class _DropStreamCutLogs(logging.Filter):
    """Hide uvicorn's error logs for deliberate cuts and for requests cancelled by stop()."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "timeout graceful shutdown exceeded" in record.getMessage():
            return False
        exc = record.exc_info[1] if record.exc_info else None
        return not _is_expected(exc)


def _is_expected(exc: BaseException | None) -> bool:
    if exc is None:
        return False
    if isinstance(exc, (_StreamCut, asyncio.CancelledError)):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_expected(e) for e in exc.exceptions)
    return _is_expected(exc.__cause__) if isinstance(exc.__cause__, BaseException) else False


_uvicorn_error_logger = logging.getLogger("uvicorn.error")
if not any(isinstance(f, _DropStreamCutLogs) for f in _uvicorn_error_logger.filters):
    _uvicorn_error_logger.addFilter(_DropStreamCutLogs())

_ERROR_KINDS = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout", "timeout"),
    409: ("conflict", "conflict"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "gateway_timeout"),
}

_PIECE_CHARS = 3  # characters per streamed piece (≈ 2 Chinese tokens)


def _error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    typ, code = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error", str(status)))
    return JSONResponse(
        {"error": {"message": message, "type": typ, "param": None, "code": code}}, status_code=status, headers=headers
    )


def _format_seconds(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


class FakeOpenAIServer:
    """uvicorn + starlette in a background thread (own event loop). See the module docstring."""

    MODEL_IDS = ("fake-model", "fake-model-mini")

    def __init__(
        self,
        responder: Responder,
        profile: LatencyProfile = LatencyProfile(),
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.responder = responder
        self.profile = profile
        self.host = host
        self.port = port
        self.requests: list[ChatRequest] = []
        self.errors: list[BaseException] = []  # exceptions raised by the responder
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._thread_exc: BaseException | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    # -- lifecycle ---------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout: float = 10.0) -> FakeOpenAIServer:
        if self._thread is not None:
            raise RuntimeError("server already started")
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            lifespan="off",
            log_level="warning",
            log_config=None,  # don't reconfigure the process's logging
            access_log=False,
            ws="none",
            timeout_graceful_shutdown=0.2,  # stop() cancels in-flight requests quickly
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"fake-openai-{id(self):x}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"fake OpenAI server failed to start: {self._thread_exc!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("fake OpenAI server did not start in time")
            time.sleep(0.005)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            assert self._server is not None
            loop.run_until_complete(self._server.serve())
        except BaseException as exc:  # SystemExit from a failed bind, etc.
            self._thread_exc = exc
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(timeout=5)
        self._thread = None
        self._server = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # -- endpoints ----------------------------------------------------------

    async def _models(self, request: Request) -> Response:
        created = int(time.time())
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": m, "object": "model", "created": created, "owned_by": "fake"} for m in self.MODEL_IDS],
            }
        )

    async def _chat_completions(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("body must be a JSON object with a 'messages' list")
        except (ValueError, UnicodeDecodeError) as exc:
            return _error_response(400, f"invalid request body: {exc}")

        messages: list[dict] = body["messages"]
        mode, tool_name, schema = _detect_mode(body, messages)
        key = json.dumps(messages, sort_keys=True, ensure_ascii=False)
        with self._lock:
            attempt = self._seen.get(key, 0)
            self._seen[key] = attempt + 1
            req = ChatRequest(
                model=str(body.get("model", "")),
                messages=messages,
                stream=bool(body.get("stream")),
                output_mode=mode,
                tool_name=tool_name,
                body=body,
                attempt=attempt,
                index=len(self.requests),
                output_schema=schema if isinstance(schema, dict) else None,
            )
            self.requests.append(req)

        try:
            reply = self.responder(req)
            if inspect.isawaitable(reply):
                reply = await reply
            if not isinstance(reply, Reply):
                raise TypeError(f"responder returned {type(reply).__name__}, expected Reply")
        except Exception as exc:
            self.errors.append(exc)
            return _error_response(500, f"fake server responder raised {exc!r}", {"x-should-retry": "false"})

        if reply.delay > 0:
            await asyncio.sleep(reply.delay)

        if reply.status != 200:
            headers = {}
            if reply.retry_after is not None:
                headers["retry-after"] = _format_seconds(reply.retry_after)
                headers["retry-after-ms"] = str(round(reply.retry_after * 1000))
            return _error_response(reply.status, reply.content or f"fake error {reply.status}", headers)

        # What to send: tool-call arguments or text.
        as_tool = reply.output is not None and mode == "tool" and tool_name is not None
        if reply.output is not None:
            text = json.dumps(reply.output, ensure_ascii=False)
            if reply.invalid_json:
                text = text[: max(1, len(text) // 2)]
        else:
            text = reply.content or ""
            if reply.invalid_json:
                text = text[: max(1, len(text) // 2)]

        profile = self.profile
        ttft = profile.ttft if reply.ttft is None else reply.ttft
        tps = profile.tokens_per_second if reply.tokens_per_second is None else reply.tokens_per_second
        cpt = profile.chars_per_token if profile.chars_per_token > 0 else 1.5
        prompt_tokens = (
            reply.prompt_tokens if reply.prompt_tokens is not None else len(_all_message_text(messages)) // 2
        )
        completion_tokens = (
            reply.completion_tokens if reply.completion_tokens is not None else math.ceil(len(text) / cpt)
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        model = req.model or self.MODEL_IDS[0]
        finish_reason = "tool_calls" if as_tool else "stop"

        if not req.stream:
            gen_time = completion_tokens / tps if tps > 0 else 0.0
            if ttft + gen_time > 0:
                await asyncio.sleep(ttft + gen_time)
            message: dict[str, Any] = {"role": "assistant", "content": None if as_tool else text, "refusal": None}
            if as_tool:
                message["tool_calls"] = [
                    {"id": call_id, "type": "function", "function": {"name": tool_name, "arguments": text}}
                ]
            return JSONResponse(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "system_fingerprint": None,
                    "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
                    "usage": usage,
                }
            )

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chars_per_second = tps * cpt if tps > 0 else 0.0
        cut = reply.cut_after_chars

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            obj: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            if include_usage:
                obj["usage"] = None
            return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()

        def piece_delta(piece: str, first: bool) -> dict:
            if as_tool:
                tc: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
                if first:
                    tc = {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool_name, "arguments": piece},
                    }
                delta: dict[str, Any] = {"tool_calls": [tc]}
                if first:
                    delta = {"role": "assistant", "content": None, **delta}
                return delta
            return {"role": "assistant", "content": piece} if first else {"content": piece}

        async def events():
            if ttft > 0:
                await asyncio.sleep(ttft)
            t0 = time.monotonic()
            limit = len(text) if cut is None else min(cut, len(text))
            sent = 0
            first = True
            while first or sent < limit:
                piece = text[sent : min(sent + _PIECE_CHARS, limit)]
                if chars_per_second > 0 and not first:
                    wait = t0 + sent / chars_per_second - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                yield piece_delta(piece, first)
                first = False
                sent += len(piece)
            if cut is not None:
                raise _StreamCut(f"cut after {sent} characters")
            yield {}  # finish chunk marker

        async def sse():
            async for delta in events():
                if delta == {}:
                    yield chunk({}, finish_reason)
                else:
                    yield chunk(delta)
            if include_usage:
                usage_chunk = {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": None,
                    "choices": [],
                    "usage": usage,
                }
                yield f"data: {json.dumps(usage_chunk, ensure_ascii=False)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(
            sse(), media_type="text/event-stream", headers={"cache-control": "no-cache", "x-accel-buffering": "no"}
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible chat completions server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--ttft", type=float, default=0.0, help="seconds to first token")
    parser.add_argument("--tps", type=float, default=0.0, help="tokens per second (0 = instant)")
    parser.add_argument("--chars-per-token", type=float, default=1.5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    profile = LatencyProfile(ttft=args.ttft, tokens_per_second=args.tps, chars_per_token=args.chars_per_token)
    srv = FakeOpenAIServer(default_responder, profile, host=args.host, port=args.port).start()
    print(f"fake OpenAI server on {srv.base_url} (ttft={args.ttft}s, tps={args.tps}); Ctrl-C to stop", flush=True)
    try:
        while srv._thread is not None and srv._thread.is_alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
