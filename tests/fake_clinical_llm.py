"""A fake LLM for the four ClinCite agents, served over real HTTP by `FakeOpenAIServer`.

It answers each agent the way a well-behaved model would — sub-queries, verbatim extracts, a verdict, a report in the
required format: like a model, it reads the user message it receives (`read_*` below turn the prompt text back into
data) and answers with the offline reasoner's steps, so every byte still travels through the `openai` client and
pydantic-ai. The same replies are available in-process as FunctionModels (`in_process_models`). Agents are told
apart by model name (see `llm_settings`).
Faults and latency are injected per agent:

    llm = ClinicalLLM()
    llm.script["relevance_judge"] = [Reply(status=429, retry_after=0)]   # next judge request: 429, then normal
    llm.always["answer_generation"] = Reply(cut_after_chars=40)          # every answer stream is cut
    with FakeOpenAIServer(llm) as server:
        service = TwoStageQueryService(llm_settings(settings, server.base_url))
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from fake_openai_server import (
    ChatRequest,
    FakeOpenAIServer,
    LatencyProfile,
    Reply,
    _content_text,
)
from pydantic import SecretStr
from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from clincite.core.settings import Settings
from clincite.core.shapes import ChatTurn, Hit, RelevantExtract, SubQuery, SubQueryAnalysis
from clincite.llm import prompts as fmt
from clincite.llm.prompts import load_prompt
from clincite.offline import OfflineReasoner

AGENTS = ("decomposition", "relevance_judge", "sufficiency_judge", "answer_generation")
# Output tokens per call of a gpt-4.1-like model: 2–3 short sub-queries as JSON; one verbatim sentence and a
# one-line sub-answer; a verdict with one line of reasoning; a report with 3–4 quoted evidence items.
DEFAULT_OUTPUT_TOKENS = {"decomposition": 32, "relevance_judge": 56, "sufficiency_judge": 28, "answer_generation": 480}
MODEL_PREFIX = "fake-"


@dataclass
class AgentLatency:
    """One agent's simulated speed: its replies take ttft + output_tokens / tokens_per_second, whatever they say."""

    ttft: float = 0.0  # seconds to first token
    tokens_per_second: float = 80.0
    output_tokens: int = 0  # 0: pace by the reply's real length
    chars_per_token: float = 1.5

    def seconds(self) -> float:
        """The simulated duration of one complete reply."""
        return self.ttft + (self.output_tokens / self.tokens_per_second if self.output_tokens else 0.0)

    def apply(self, reply: Reply, stream: bool) -> Reply:
        text = reply.content if reply.content is not None else json.dumps(reply.output, ensure_ascii=False)
        real_tokens = max(len(text) / self.chars_per_token, 1.0)
        tokens = self.output_tokens or real_tokens
        if stream:  # the server paces a stream by characters: scale the speed so the whole reply takes `tokens`
            return replace(reply, ttft=self.ttft, tokens_per_second=self.tokens_per_second * real_tokens / tokens)
        return replace(reply, ttft=self.ttft, tokens_per_second=self.tokens_per_second, completion_tokens=int(tokens))


@dataclass
class ClinicalLLM:
    script: dict[str, list[Reply | None]] = field(default_factory=dict)  # consumed one per request
    always: dict[str, Reply] = field(default_factory=dict)  # applied to every request of that agent
    latency: dict[str, AgentLatency] = field(default_factory=dict)
    verdict: dict | None = None  # force the sufficiency judge's output
    insufficient: Callable[[str], bool] | None = None  # questions for which the sufficiency judge asks for stage 2
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(AGENTS, 0))

    def __call__(self, request: ChatRequest) -> Reply:
        agent = agent_of(request)
        self.calls[agent] = self.calls.get(agent, 0) + 1
        prompt = first_user_text(request)
        reply = self._normal_reply(agent, prompt)
        latency = self.latency.get(agent)
        if latency:
            reply = latency.apply(reply, request.stream)
        queued = self.script.get(agent)
        override = queued.pop(0) if queued else None
        override = override or self.always.get(agent)
        if override is not None:
            reply = _merge(reply, override)
        return reply

    def _normal_reply(self, agent: str, prompt: str) -> Reply:
        if agent == "decomposition":
            return Reply(output=decompose_reply(prompt))
        if agent == "relevance_judge":
            return Reply(output=judge_reply(prompt))
        if agent == "sufficiency_judge":
            return Reply(output=self._verdict(prompt))
        return Reply(content=answer_reply(prompt))

    def _verdict(self, prompt: str) -> dict:
        if self.verdict is not None:
            return self.verdict
        question = section(prompt, fmt.ORIGINAL_QUESTION, [fmt.ANALYSES])
        if self.insufficient and self.insufficient(question):
            return {
                "sufficient": False,
                "confidence": "medium",
                "covered_aspects": [],
                "missing_key_aspects": ["长期安全性"],
                "reasoning": "缺少长期安全性证据。",
                "additional_sub_queries": [
                    {"text": f"{question.strip('？?')}的长期安全性", "focus": "不良反应"},
                    {"text": f"{question.strip('？?')}的随访要求", "focus": "随访"},
                ],
            }
        return sufficiency_reply(prompt)


# --- the model reads its prompt (the formats of clincite/prompts.py) and answers with the offline steps -----------

REASONER = OfflineReasoner(notice="")
_SUB_QUERY = re.compile(r"^(\S+?)｜(.*?)(?:（维度：([^）]*)）)?$")
_FRAGMENT = re.compile(r'<片段 id="([^"]*)" 来源="([^"]*)" 标题="([^"]*)">\n(.*?)\n</片段>', re.S)
_EXTRACT = re.compile(r"^- 《([^》]+)》“(.*)”$")
_EVIDENCE = re.compile(r"^\[E\d+\] 《([^》]+)》“(.*)”（子查询：(.*)）$")


def section(prompt: str, marker: str, next_markers: list[str]) -> str:
    start = prompt.find(marker)
    if start < 0:
        return ""
    start += len(marker)
    ends = [e for e in (prompt.find(m, start) for m in next_markers) if e >= 0]
    return prompt[start : min(ends) if ends else len(prompt)].strip()


def read_history(text: str) -> list[ChatTurn]:
    turns = []
    for line in text.splitlines():
        for prefix, role in (("用户：", "user"), ("助手：", "assistant")):
            if line.startswith(prefix):
                turns.append(ChatTurn(role=role, content=line[len(prefix) :]))
    return turns


def read_sub_query(line: str) -> SubQuery:
    match = _SUB_QUERY.match(line.strip())
    if not match:
        return SubQuery(id="q1", text=line.strip())
    return SubQuery(id=match.group(1), text=match.group(2), focus=match.group(3) or "")


def decompose_reply(prompt: str) -> dict:
    question = section(prompt, fmt.QUESTION, [])
    history = read_history(section(prompt, fmt.HISTORY, [fmt.QUESTION]))
    return {"sub_queries": [d.model_dump() for d in REASONER.plan(question, history)]}


def judge_reply(prompt: str) -> dict:
    sub_query = read_sub_query(section(prompt, fmt.SUB_QUERY, [fmt.ORIGINAL_QUESTION]))
    question = section(prompt, fmt.ORIGINAL_QUESTION, [fmt.FRAGMENTS])
    hits = []
    for chunk_id, source, title, text in _FRAGMENT.findall(prompt):
        title, *headings = title.split(" > ")
        hits.append(
            Hit(chunk_id=chunk_id, source=source, title=title, heading_path=headings, text=text, found_by=["bm25"])
        )
    return REASONER.assess(sub_query, question, [], hits).model_dump()


def read_analyses(prompt: str) -> list[SubQueryAnalysis]:
    analyses = []
    for block in re.split(r"^### ", section(prompt, fmt.ANALYSES, [fmt.ADDITIONAL_LIMIT]), flags=re.M)[1:]:
        lines = block.splitlines()
        extracts = [
            RelevantExtract(source=m.group(1), chunk_id="", text=m.group(2)) for m in map(_EXTRACT.match, lines) if m
        ]
        analyses.append(
            SubQueryAnalysis(
                sub_query=read_sub_query(lines[0]),
                sub_answer="",
                extracts=extracts,
                confidence="medium" if extracts else "low",
            )
        )
    return analyses


def sufficiency_reply(prompt: str) -> dict:
    """Like the prompt asks ("默认判定为充分", stage 2 in < 20 % of questions): sufficient when any evidence was found;
    otherwise the offline verdict, which asks for one more search per aspect."""
    limit = int(section(prompt, fmt.ADDITIONAL_LIMIT, []) or 0)
    analyses = read_analyses(prompt)
    if any(a.extracts for a in analyses):
        return {
            "sufficient": True,
            "confidence": "medium",
            "covered_aspects": [a.sub_query.focus for a in analyses if a.extracts],
            "missing_key_aspects": [],
            "additional_sub_queries": [],
            "reasoning": "摘录覆盖了问题的核心要点。",
        }
    return REASONER.verdict(analyses, limit).model_dump()


def answer_reply(prompt: str) -> str:
    """The extractive report from the 【证据摘录】 lines, with the 证据缺口 line when the prompt lists gaps."""
    grouped: dict[str, list[RelevantExtract]] = {}
    for line in section(prompt, fmt.EVIDENCE, [fmt.GAPS]).splitlines():
        if match := _EVIDENCE.match(line):
            grouped.setdefault(match.group(3), []).append(
                RelevantExtract(source=match.group(1), chunk_id="", text=match.group(2))
            )
    analyses = [
        SubQueryAnalysis(
            sub_query=SubQuery(id=f"q{i}", text=text), sub_answer="", extracts=extracts, confidence="medium"
        )
        for i, (text, extracts) in enumerate(grouped.items(), 1)
    ]
    gaps = [g for g in section(prompt, fmt.GAPS, []).split("、") if g]
    return REASONER.report(analyses, gaps)


def _last_prompt(messages) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _structured_model(reply: Callable[[str], dict]) -> FunctionModel:
    async def respond(messages, info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, reply(_last_prompt(messages)))])

    async def stream(messages, info: AgentInfo):
        payload = json.dumps(reply(_last_prompt(messages)), ensure_ascii=False)
        yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="fake")}
        for i in range(0, len(payload), 24):
            yield {0: DeltaToolCall(json_args=payload[i : i + 24])}

    return FunctionModel(respond, stream_function=stream)


def _text_model() -> FunctionModel:
    async def respond(messages, info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(answer_reply(_last_prompt(messages)))])

    async def stream(messages, info: AgentInfo):
        report = answer_reply(_last_prompt(messages))
        for i in range(0, len(report), 12):
            yield report[i : i + 12]

    return FunctionModel(respond, stream_function=stream)


def in_process_models() -> dict[str, FunctionModel]:
    """The fake clinical LLM as FunctionModels: the LLM path in-process, without HTTP (tests override agents)."""
    return {
        "decomposition": _structured_model(decompose_reply),
        "relevance_judge": _structured_model(judge_reply),
        "sufficiency_judge": _structured_model(sufficiency_reply),
        "answer_generation": _text_model(),
    }


def agent_of(request: ChatRequest) -> str:
    """Which agent sent this: by model name (fake-<agent>) or, for any other name, by its system prompt."""
    if request.model.startswith(MODEL_PREFIX):
        return request.model.removeprefix(MODEL_PREFIX)
    system = request.system_text()
    for agent in AGENTS:
        if load_prompt(agent)[:60] in system:
            return agent
    return "answer_generation" if request.output_mode == "text" else "decomposition"


def _merge(normal: Reply, override: Reply) -> Reply:
    """The override's non-default fields win; content/output fall back to the normal answer."""
    changes = {name: value for name, value in vars(override).items() if value != getattr(Reply(), name)}
    return replace(normal, **changes)


def first_user_text(request: ChatRequest) -> str:
    """The agent's prompt: the first user message (validation retries append more)."""
    for message in request.messages:
        if message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def llm_settings(settings: Settings, base_url: str, **overrides) -> Settings:
    """Settings that send each agent to the fake server under its own model name."""
    agents = {f"{name}_model": MODEL_PREFIX + name for name in AGENTS}
    return settings.model_copy(
        update={
            "openai_api_key": SecretStr("test-key"),
            "openai_base_url": base_url,
            "offline_mode": "off",
            "answer_cache_size": 0,
            **agents,
            **overrides,
        }
    )


def agent_requests(server, agent: str) -> list[ChatRequest]:
    return [r for r in server.requests if r.model == MODEL_PREFIX + agent]


def dump(request: ChatRequest) -> str:
    return json.dumps(request.body, ensure_ascii=False)[:2000]


def main(argv: list[str] | None = None) -> None:
    """Serve the fake clinical LLM, e.g. to watch `python query.py` take the LLM path over HTTP:

    python tests/fake_clinical_llm.py --port 8765
    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=test python query.py "低浓度阿托品的副作用？" --json
    """
    import argparse
    import time

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--ttft", type=float, default=0.5, help="seconds to first token")
    parser.add_argument("--tps", type=float, default=80.0, help="output tokens per second")
    args = parser.parse_args(argv)
    llm = ClinicalLLM(latency={a: AgentLatency(args.ttft, args.tps, n) for a, n in DEFAULT_OUTPUT_TOKENS.items()})
    with FakeOpenAIServer(llm, LatencyProfile(chars_per_token=1.5), port=args.port) as server:
        print(f"fake clinical LLM at {server.base_url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
