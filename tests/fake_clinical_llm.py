"""A fake LLM for the four ClinCite agents, served over real HTTP by `FakeOpenAIServer`.

It answers each agent the way a plain, well-behaved model would — sub-queries, verbatim extracts, a verdict, a report
in the required format. Like a model, it reads the user message it receives (`read_*` below turn the prompt text back
into data) and answers by simple rules of its own: shared wording, never the offline answerer's relevance rules (a test
of the LLM path would otherwise test the offline answerer again). Every byte travels through the `openai` client and
pydantic-ai. The same replies are available in-process as FunctionModels (`in_process_models`). Agents are told apart
by model name (see `llm_settings`).
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
from clincite.core.shapes import BRIDGE_SLOT, ChatTurn, RelevantExtract, SubQuery, SubQueryAnalysis
from clincite.llm import prompts as fmt
from clincite.llm.prompts import load_prompt
from clincite.report.format import EvidenceItem, compose

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
    nothing_on: Callable[[str], bool] | None = None  # sub-queries the judge finds no extract for, whatever it reads
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
            sub_query = section(prompt, fmt.SUB_QUERY, [fmt.ORIGINAL_QUESTION])
            if self.nothing_on and self.nothing_on(read_sub_query(sub_query).text):
                return Reply(output={"extracts": [], "sub_answer": "片段中没有相关内容。", "confidence": "low"})
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


# --- the model reads its prompt (the formats of clincite/llm/prompts.py) and answers by rules of its own -----------

_SUB_QUERY = re.compile(r"^(\S+?)｜(.*?)(?:（维度：([^）]*)）)?$")
_FRAGMENT = re.compile(r'<片段 id="([^"]*)" 来源="([^"]*)" 标题="([^"]*)">\n(.*?)\n</片段>', re.S)
_EXTRACT = re.compile(r"^- 《([^》]+)》“(.*)”$")
_EVIDENCE = re.compile(r"^\[E\d+\] 《([^》]+)》“(.*)”（子查询：(.*)）$")
_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]?")
# What the fake model knows of question wording: aspects people ask about, and words that only frame a question.
ASPECTS = {
    "效果": "疗效",
    "疗效": "疗效",
    "有效": "疗效",
    "副作用": "不良反应",
    "不良反应": "不良反应",
    "安全": "不良反应",
    "禁忌": "禁忌证",
    "不适合": "禁忌证",
    "适合": "适应证",
    "适应证": "适应证",
    "复查": "随访",
    "随访": "随访",
    "用法": "用法用量",
    "剂量": "用法用量",
    "风险": "风险",
    "并发症": "风险",
    "感染": "风险",
}
FRAMING = (
    "请问",
    "分别是什么",
    "分别",
    "是什么",
    "有哪些",
    "哪些",
    "怎么样",
    "如何",
    "怎么",
    "吗",
    "呢",
    "？",
    "?",
    "。",
)
FOLLOW_UP_OPENERS = ("那么", "那", "它的", "它", "其", "这种", "该")
SUBJECT_END = ("控制", "的", "有", "是", "能", "会", "怎么", "如何", "多久", "适合", "不适合", "对")
JUDGE_EXTRACTS = 2
MIN_OVERLAP = 3  # character pairs a sentence (with its fragment's title) must share with the sub-query
OVERLAP_SHARE = 0.3  # … and at least this share of the sub-query's pairs
MIN_SENTENCE = 8


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


def _plain(question: str) -> str:
    for word in FRAMING:
        question = question.replace(word, "")
    return question.strip()


def _subject(question: str) -> str:
    """The words before the first verb-like word: "低浓度阿托品控制近视的效果如何" → "低浓度阿托品"."""
    text = _plain(question)
    cut = min((i for i in (text.find(w) for w in SUBJECT_END) if i > 0), default=len(text))
    return text[:cut]


# A question whose second half needs the first half's answer ("…最常见的严重并发症应该怎么处理？"): a dependent pair, as
# the decomposition prompt's rule 9 asks (the answer's name is left as a slot for the pipeline to fill).
_DEPENDENT = re.compile(
    r"^(?P<subject>.+?)最常见的(?P<what>(?:严重)?(?:并发症|不良反应|副作用))(?:应该|该|要)?(?:怎么|如何)(?P<act>处理|治疗|应对)"
)


def dependent_pair(question: str) -> list[dict] | None:
    match = _DEPENDENT.match(question.strip())
    if not match:
        return None
    return [
        {"text": f"{match['subject']}最常见、最严重的{match['what']}及其发生率", "focus": "并发症"},
        {"text": f"{BRIDGE_SLOT}的{match['act']}原则与方法", "focus": match["act"], "depends_on": 1},
    ]


def decompose_reply(prompt: str) -> dict:
    """One sub-query per aspect word the question names (two or more), else the question itself; a follow-up that
    opens with 那/它 gets the previous question's subject in front."""
    question = section(prompt, fmt.QUESTION, [])
    if pair := dependent_pair(question):
        return {"sub_queries": pair}
    previous = [t.content for t in read_history(section(prompt, fmt.HISTORY, [fmt.QUESTION])) if t.role == "user"]
    text = _plain(question)
    if previous and question.startswith(FOLLOW_UP_OPENERS):
        for opener in FOLLOW_UP_OPENERS:
            text = text.removeprefix(opener)
        text = _subject(previous[-1]) + text.lstrip("的")
    named = list(dict.fromkeys(aspect for word, aspect in ASPECTS.items() if word in text))
    if len(named) >= 2:
        subject = _subject(text)
        return {"sub_queries": [{"text": f"{subject}的{aspect}", "focus": aspect} for aspect in named]}
    return {"sub_queries": [{"text": text or question, "focus": named[0] if named else "综合"}]}


def _bigrams(text: str) -> set[str]:
    return {
        text[i : i + 2] for i in range(len(text) - 1) if not set(text[i : i + 2]) & set("，。、；：？！的了是在和与及")
    }


def judge_reply(prompt: str) -> dict:
    """The sentences of the fragments that share the most wording with the sub-query, copied verbatim."""
    sub_query = read_sub_query(section(prompt, fmt.SUB_QUERY, [fmt.ORIGINAL_QUESTION]))
    wanted = _bigrams(sub_query.text)
    subject = _bigrams(_subject(sub_query.text))
    needed = max(MIN_OVERLAP, round(OVERLAP_SHARE * len(wanted)))
    scored = []
    for chunk_id, source, title, text in _FRAGMENT.findall(prompt):
        context = _bigrams(title)
        for sentence in (s.strip() for s in _SENTENCE.findall(text)):
            shared = wanted & (_bigrams(sentence) | context)
            about = not subject or bool(subject & shared)  # it speaks of what the sub-query is about
            if len(sentence) >= MIN_SENTENCE and sentence[-1] in "。！？!?" and len(shared) >= needed and about:
                scored.append((len(shared), len(scored), chunk_id, source, sentence))
    best = sorted(scored, key=lambda s: (-s[0], s[1]))[:JUDGE_EXTRACTS]
    if not best:
        return {"extracts": [], "sub_answer": "片段中没有相关内容。", "confidence": "low", "missing": [sub_query.text]}
    extracts = [{"chunk_id": cid, "source": source, "text": sentence} for _, _, cid, source, sentence in best]
    return {"extracts": extracts, "sub_answer": best[0][4], "confidence": "high", "missing": []}


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
    """Like the prompt asks ("默认判定为充分", stage 2 in < 20 % of questions): sufficient, whether the evidence covers
    the question or the KB plainly has nothing on it (a second search with other words would find the same). Tests
    that need stage 2 script the verdict (`ClinicalLLM.verdict`, `ClinicalLLM.insufficient`)."""
    covered = [a.sub_query.focus for a in read_analyses(prompt) if a.extracts]
    return {
        "sufficient": True,
        "confidence": "medium" if covered else "low",
        "covered_aspects": covered,
        "missing_key_aspects": [],
        "additional_sub_queries": [],
        "reasoning": "摘录覆盖了问题的核心要点。" if covered else "知识库中没有相关内容，再检索也不会有。",
    }


def answer_reply(prompt: str) -> str:
    """A report in the required format from the 【证据摘录】 lines: the first excerpt leads the TL;DR, every excerpt is
    an evidence item quoted as given, and the 证据缺口 line names the gaps the prompt lists."""
    items: list[EvidenceItem] = []
    conclusion: list[str] = []
    for line in section(prompt, fmt.EVIDENCE, [fmt.GAPS]).splitlines():
        if match := _EVIDENCE.match(line):
            source, quote, sub_query = match.groups()
            items.append(EvidenceItem(len(items) + 1, sub_query, f"该段原文回答了“{sub_query}”。", source, quote))
            conclusion.append(f"- **{sub_query}**：{quote}【{len(items)}】")
    gaps = [g for g in section(prompt, fmt.GAPS, []).split("、") if g]
    if not items:
        return compose("未找到可引用的原文。", [], gaps, [])
    lead = _SENTENCE.findall(items[0].quote)[0].strip() if _SENTENCE.findall(items[0].quote) else items[0].quote
    return compose(f"{lead}【1】", conclusion, gaps, items)


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
