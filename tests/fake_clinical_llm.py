"""A fake LLM for the four ClinCite agents, served over real HTTP by `FakeOpenAIServer`.

It answers each agent the way a well-behaved model would — sub-queries, verbatim extracts, a verdict, a report in the
required format — by running the deterministic offline functions on the prompt it receives, so every byte still
travels through the `openai` client and pydantic-ai. Agents are told apart by model name (see `llm_settings`).
Faults and latency are injected per agent:

    llm = ClinicalLLM()
    llm.script["relevance_judge"] = [Reply(status=429, retry_after=0)]   # next judge request: 429, then normal
    llm.always["answer_generation"] = Reply(cut_after_chars=40)          # every answer stream is cut
    with FakeOpenAIServer(llm) as server:
        service = TwoStageQueryService(llm_settings(settings, server.base_url))
"""

from __future__ import annotations

import json
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

import clincite.offline as offline
from clincite.prompts import load_prompt
from clincite.settings import Settings

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
        return replace(reply, ttft=self.ttft, tokens_per_second=self.tokens_per_second,
                       completion_tokens=int(tokens))


@dataclass
class ClinicalLLM:
    script: dict[str, list[Reply | None]] = field(default_factory=dict)  # consumed one per request
    always: dict[str, Reply] = field(default_factory=dict)  # applied to every request of that agent
    latency: dict[str, AgentLatency] = field(default_factory=dict)
    verdict: dict | None = None  # force the sufficiency judge's output
    insufficient: Callable[[str], bool] | None = None  # questions for which the sufficiency judge asks for stage 2
    calls: dict[str, int] = field(default_factory=lambda: {a: 0 for a in AGENTS})

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
            return Reply(output=offline.decompose(prompt))
        if agent == "relevance_judge":
            return Reply(output=offline.judge(prompt))
        if agent == "sufficiency_judge":
            return Reply(output=self._verdict(prompt))
        return Reply(content=offline.assemble_report(prompt, notice=False))

    def _verdict(self, prompt: str) -> dict:
        if self.verdict is not None:
            return self.verdict
        question = offline._section(prompt, "【原始问题】", ["【子查询分析】"])
        if self.insufficient and self.insufficient(question):
            return {"sufficient": False, "confidence": "medium", "covered_aspects": [],
                    "missing_key_aspects": ["长期安全性"], "reasoning": "缺少长期安全性证据。",
                    "additional_sub_queries": [{"text": f"{question.strip('？?')}的长期安全性", "focus": "不良反应"},
                                               {"text": f"{question.strip('？?')}的随访要求", "focus": "随访"}]}
        return offline.sufficiency(prompt)


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
    return settings.model_copy(update={"openai_api_key": SecretStr("test-key"), "openai_base_url": base_url,
                                       "offline_mode": "off", "answer_cache_size": 0, **agents, **overrides})


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
