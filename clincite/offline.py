"""Offline mode: deterministic, extractive stand-ins for the four LLMs (no network, no key).

They are pydantic-ai `FunctionModel`s behind the very same agents, reading the same user messages (`agents.py`):
sub-queries come from the question's clauses, extracts are the sentences with the most term overlap, and the report
is assembled from verbatim extracts. Good enough to run the app, the browser test and the benchmarks anywhere;
not a substitute for an LLM, and labelled as offline wherever it shows.
"""

from __future__ import annotations

import asyncio
import json
import re

from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

import clincite.prompts as fmt
from clincite.citations import format_evidence_item
from clincite.settings import Settings
from clincite.tokenizer import get_tokenizer

OFFLINE_NOTICE = "离线演示模式：未配置大语言模型 API Key，以下内容由规则从知识库原文中逐字抽取拼接而成，未经模型归纳。"
STREAM_PIECE = 12  # characters per streamed piece of the offline report

# Aspect words → the focus they stand for (order matters: longer, more specific words first).
ASPECTS: list[tuple[str, str]] = [
    ("不良反应", "不良反应"), ("副作用", "不良反应"), ("安全性", "不良反应"), ("风险", "不良反应"),
    ("并发症", "并发症"), ("禁忌症", "禁忌症"), ("禁忌", "禁忌症"), ("适应症", "适应症"), ("适应证", "适应症"),
    ("适合", "适应症"), ("疗效", "疗效数据"), ("效果", "疗效数据"), ("有效", "疗效数据"), ("机制", "机制"),
    ("原理", "机制"), ("随访", "随访"), ("复查", "随访"), ("护理", "注意事项"), ("注意事项", "注意事项"),
    ("浓度", "用法用量"), ("剂量", "用法用量"), ("用法", "用法用量"), ("定义", "定义"), ("标准", "定义"),
    ("处理", "处理"), ("区别", "比较"), ("比较", "比较"),
]
QUESTION_WORDS = re.compile(r"(有哪些|是什么|是多少|有什么|怎么样|怎么办|如何|怎样|怎么|哪些|什么|多少|是否|吗|呢|吧|请问|呀|啊)")
CONNECTORS = "和与及、，,以及或还有"
FOLLOW_UP_START = re.compile(r"^(那|那么|它|它的|这个|这种|其|还有|另外)")
MIN_TOPIC_CHARS = 4


def build_models(settings: Settings) -> dict[str, FunctionModel]:
    return {
        "decomposition": _structured(lambda text: decompose(text, settings.max_sub_queries), "offline-decomposition"),
        "relevance_judge": _structured(judge, "offline-relevance-judge"),
        "sufficiency_judge": _structured(sufficiency, "offline-sufficiency-judge"),
        "answer_generation": FunctionModel(_answer_function, stream_function=_answer_stream,
                                           model_name="offline-answer-generation"),
    }


# ---------------------------------------------------------------------------------------------------------------
# FunctionModel plumbing
# ---------------------------------------------------------------------------------------------------------------


def _last_user_text(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _structured(build, name: str) -> FunctionModel:
    """A model that answers through the output tool, whole or streamed in pieces like a real one."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        payload = build(_last_user_text(messages))
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, payload)])

    async def stream(messages: list[ModelMessage], info: AgentInfo):
        payload = json.dumps(build(_last_user_text(messages)), ensure_ascii=False)
        yield {0: DeltaToolCall(name=info.output_tools[0].name, tool_call_id="offline")}
        for i in range(0, len(payload), 24):
            yield {0: DeltaToolCall(json_args=payload[i:i + 24])}

    return FunctionModel(respond, stream_function=stream, model_name=name)


async def _answer_function(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(assemble_report(_last_user_text(messages)))])


async def _answer_stream(messages: list[ModelMessage], info: AgentInfo):
    report = assemble_report(_last_user_text(messages))
    for i in range(0, len(report), STREAM_PIECE):
        yield report[i:i + STREAM_PIECE]
        await asyncio.sleep(0)


def _section(text: str, marker: str, next_markers: list[str]) -> str:
    start = text.find(marker)
    if start < 0:
        return ""
    start += len(marker)
    ends = [text.find(m, start) for m in next_markers]
    ends = [e for e in ends if e >= 0]
    return text[start:min(ends) if ends else len(text)].strip()


# ---------------------------------------------------------------------------------------------------------------
# Decomposition: topic + aspects, follow-ups resolved against the last user question
# ---------------------------------------------------------------------------------------------------------------


def split_aspects(question: str) -> tuple[str, list[str]]:
    """("低浓度阿托品控制近视", ["效果", "副作用"]) for "低浓度阿托品控制近视的效果和副作用？".

    Works on jieba words (with the domain dictionary), so 浓度 inside 低浓度阿托品 is not mistaken for an aspect.
    """
    aspect_words = {word for word, _ in ASPECTS}
    topic_words: list[str] = []
    aspects: list[str] = []
    for word in get_tokenizer().words(question):
        if word in aspect_words:
            aspects.append(word)
        elif not aspects and not QUESTION_WORDS.fullmatch(word) and not re.fullmatch(r"[\W_]+", word):
            topic_words.append(word)
    topic = "".join(topic_words).strip(CONNECTORS)
    while topic.endswith(("的", "有", "和", "与", "及")):
        topic = topic[:-1]
    return topic, aspects


def focus_of(aspect: str) -> str:
    return next((focus for word, focus in ASPECTS if word == aspect), aspect)


def decompose(prompt: str, max_sub_queries: int = 5) -> dict:
    question = _section(prompt, fmt.QUESTION, [])
    history = _section(prompt, fmt.HISTORY, [fmt.QUESTION])
    topic, aspects = split_aspects(question)
    previous = [line[3:] for line in history.splitlines() if line.startswith("用户：")]
    if previous and (len(topic) < MIN_TOPIC_CHARS or FOLLOW_UP_START.match(question.strip())):
        # A follow-up ("那副作用呢？", "那停药后会反弹吗？"): the subject comes from the last question.
        previous_topic, _ = split_aspects(previous[-1])
        rest = FOLLOW_UP_START.sub("", topic) if topic else ""
        topic = previous_topic + (rest if not aspects else "")
    topic = topic or question.strip("？?。 ")
    drafts = [{"text": f"{topic}的{aspect}", "focus": focus_of(aspect)} for aspect in dict.fromkeys(aspects)]
    if not drafts:
        drafts = [{"text": topic, "focus": "综合"}]
    return {"sub_queries": drafts[:max_sub_queries]}


# ---------------------------------------------------------------------------------------------------------------
# Relevance judge: sentences with the most overlap with the sub-query
# ---------------------------------------------------------------------------------------------------------------

_FRAGMENT = re.compile(r'<片段 id="([^"]*)" 来源="([^"]*)" 标题="[^"]*">\n(.*?)\n</片段>', re.S)
_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]?")
MAX_EXTRACTS = 2
HIGH, MEDIUM = 0.6, 0.34


def _terms(text: str) -> set[str]:
    return set(get_tokenizer().tokenize(get_tokenizer().expand_query(text)))


def judge(prompt: str) -> dict:
    sub_query_line = _section(prompt, fmt.SUB_QUERY, [fmt.ORIGINAL_QUESTION])
    sub_query = sub_query_line.split("｜", 1)[-1]
    sub_query = re.sub(r"（维度：[^）]*）$", "", sub_query)
    wanted = _terms(sub_query)
    scored: list[tuple[float, int, str, str, str]] = []
    for order, (chunk_id, source, text) in enumerate(_FRAGMENT.findall(prompt)):
        for sentence in _SENTENCE.findall(text):
            sentence = sentence.strip()
            if len(sentence) < 8 or sentence.startswith("#"):
                continue
            overlap = len(wanted & _terms(sentence)) / max(len(wanted), 1)
            if overlap > 0:
                scored.append((overlap, -order, chunk_id, source, sentence))
    scored.sort(reverse=True)
    best = scored[0][0] if scored else 0.0
    picked = [s for s in scored if s[0] >= MEDIUM][:MAX_EXTRACTS] or scored[:1]
    extracts = [{"chunk_id": cid, "source": src, "text": sentence} for _, _, cid, src, sentence in picked]
    confidence = "high" if best >= HIGH else "medium" if best >= MEDIUM else "low"
    focus = re.search(r"（维度：([^）]*)）", sub_query_line)
    return {
        "extracts": extracts,
        "sub_answer": extracts[0]["text"] if extracts else "候选片段中没有与该子查询直接相关的内容。",
        "confidence": confidence,
        "missing": [] if confidence != "low" else [focus.group(1) if focus else sub_query],
    }


# ---------------------------------------------------------------------------------------------------------------
# Sufficiency: enough when any sub-query found medium-or-better evidence
# ---------------------------------------------------------------------------------------------------------------


def sufficiency(prompt: str) -> dict:
    question = _section(prompt, fmt.ORIGINAL_QUESTION, [fmt.ANALYSES])
    analyses = _section(prompt, fmt.ANALYSES, [fmt.ADDITIONAL_LIMIT])
    confidences = re.findall(r"置信度：(high|medium|low)", analyses)
    covered = [re.sub(r"（维度：[^）]*）$", "", m.split("｜", 1)[-1]) for m in re.findall(r"^### (.+)$", analyses, re.M)]
    if any(c in ("high", "medium") for c in confidences):
        return {"sufficient": True, "confidence": "medium" if "high" not in confidences else "high",
                "covered_aspects": covered, "missing_key_aspects": [], "additional_sub_queries": [],
                "reasoning": "离线规则：至少一条子查询找到了中等以上相关度的原文证据，视为充分。"}
    return {"sufficient": False, "confidence": "low", "covered_aspects": [], "missing_key_aspects": [question],
            "additional_sub_queries": [{"text": f"{question.strip('？?')}的临床证据", "focus": "综合"}],
            "reasoning": "离线规则：所有子查询的证据相关度都低，追加一次检索。"}


# ---------------------------------------------------------------------------------------------------------------
# Answer: a report in the required structure, every quote copied from an extract
# ---------------------------------------------------------------------------------------------------------------

_EVIDENCE_LINE = re.compile(r"^\[E(\d+)\] 《([^》]+)》“(.*)”（子查询：(.*)）$")
MAX_ITEMS = 4


def assemble_report(prompt: str, notice: bool = True) -> str:
    """The report from the 【证据摘录】 of an answer prompt; `notice` adds the offline label on top."""
    label = f"> {OFFLINE_NOTICE}\n\n" if notice else ""
    evidence = [m.groups() for m in map(_EVIDENCE_LINE.match, _section(prompt, fmt.EVIDENCE, []).splitlines()) if m]
    items = _round_robin(evidence)[:MAX_ITEMS]
    if not items:
        return (f"{label}**TL;DR：** 知识库中没有找到与该问题直接相关的资料。\n\n### 完整结论\n"
                "现有资料未涉及该问题，请补充相关指南或换一种问法。\n\n### 论据与来源\n无\n")
    first_sentence = lambda text: (_SENTENCE.findall(text) or [text])[0].strip()  # noqa: E731
    tldr = f"{first_sentence(items[0][2])}【1】"
    conclusion = "".join(f"{first_sentence(text)}【{i}】" for i, (_, _, text, _) in enumerate(items[:3], 1))
    evidence_md = "\n\n".join(
        format_evidence_item(i, sub_query.rstrip("？?"), f"该段原文与“{sub_query.rstrip('？?')}”直接相关。", source, text)
        for i, (_, source, text, sub_query) in enumerate(items, 1)
    )
    return (f"{label}**TL;DR：** {tldr}\n\n### 完整结论\n{conclusion}\n\n"
            f"### 论据与来源\n{evidence_md}\n")


def _round_robin(evidence: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """One extract per sub-query first, so every aspect of the question gets its evidence item."""
    by_query: dict[str, list[tuple[str, str, str, str]]] = {}
    for item in evidence:
        by_query.setdefault(item[3], []).append(item)
    ordered = []
    while any(by_query.values()):
        for items in by_query.values():
            if items:
                ordered.append(items.pop(0))
    return ordered
