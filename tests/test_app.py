"""The Chainlit app in-process: what on_message sends for one question (steps, streamed report, source elements)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid

import pytest
from conftest import chainlit_app, make_settings

from clincite.web.datalayer import ensure_schema
from clincite.web.render import final_content, source_elements

_session = None  # the chat `ask` continues when fresh_chat=False


class Captured:
    def __init__(self):
        self.events: list[tuple[str, dict | str]] = []

    def of(self, kind: str) -> list:
        return [payload for k, payload in self.events if k == kind]


@pytest.fixture(scope="module")
def app_module(kb_settings, sample_kb, tmp_path_factory):
    """app.py loaded the way `chainlit run` loads it, on the session's sample KB, persistence off."""
    data = tmp_path_factory.mktemp("app")
    settings = make_settings(data, kb_dir=kb_settings.kb_dir)
    # The app records every answer (and tells the clinician when it could not: a toast); its tables must exist.
    asyncio.run(ensure_schema(settings.db_url))
    with chainlit_app(settings, data) as (_, module):
        yield module


def use_context():
    from chainlit.context import ChainlitContext, context_var
    from chainlit.emitter import BaseChainlitEmitter
    from chainlit.session import HTTPSession

    session = HTTPSession(id=str(uuid.uuid4()), client_type="webapp", thread_id=str(uuid.uuid4()))
    context_var.set(ChainlitContext(session, emitter=BaseChainlitEmitter(session)))


async def ask(app_module, text: str, history=None, fresh_chat: bool = True) -> Captured:
    """One turn through the registered handlers, with an emitter that records what would go to the browser."""
    import chainlit as cl
    from chainlit.config import config
    from chainlit.context import ChainlitContext, context_var
    from chainlit.emitter import BaseChainlitEmitter
    from chainlit.session import HTTPSession

    captured = Captured()

    class CaptureEmitter(BaseChainlitEmitter):
        async def send_step(self, step_dict):
            captured.events.append(("step", dict(step_dict)))

        async def update_step(self, step_dict):
            captured.events.append(("update", dict(step_dict)))

        async def stream_start(self, step_dict):
            captured.events.append(("stream_start", dict(step_dict)))

        async def send_token(self, id, token, is_sequence=False, is_input=False):
            captured.events.append(("token", token))
            captured.events.append(("streamed", {"token": token, "is_sequence": is_sequence}))

        async def send_element(self, element_dict):
            captured.events.append(("element", dict(element_dict)))

        async def send_toast(self, message, type="info"):
            captured.events.append(("toast", message))

        async def emit(self, event, data):
            captured.events.append((event, data))

    global _session
    if fresh_chat or _session is None:
        _session = HTTPSession(id=str(uuid.uuid4()), client_type="webapp", thread_id=str(uuid.uuid4()))
    session = _session
    context_var.set(ChainlitContext(session, emitter=CaptureEmitter(session)))
    if fresh_chat:
        await config.code.on_chat_start()
    if history is not None:
        cl.user_session.set("history", list(history))
    await config.code.on_message(cl.Message(content=text, type="user_message"))
    return captured


async def test_a_question_renders_steps_a_streamed_report_and_linked_sources(app_module):
    captured = await ask(app_module, "低浓度阿托品控制近视的效果和副作用？")
    steps = {s["name"]: s for s in captured.of("step") if s["type"] == "tool"}
    assert {"问题分解", "检索", "相关性判断", "充分性判断"} <= set(steps)
    assert "第二阶段检索" not in steps
    children = [s for s in captured.of("step") if s.get("parentId") == steps["检索"]["id"]]
    names = [c["name"] for c in children]  # in words: what was searched, not an id (q0, q1 …)
    assert len(names) == 3 and "检索：原问题" in names and all(n.startswith("检索：") for n in names), names
    assert not any(re.search(r"\bq\d|s\d-\d", n) for n in names)
    hits = next(c["output"] for c in children if c["name"] == "检索：原问题")
    assert "命中" in hits and "BM25" not in hits  # found by 关键词/语义, no raw scores
    decomposition = [u for u in captured.of("update") if u["id"] == steps["问题分解"]["id"] and u.get("output")]
    assert "低浓度阿托品的不良反应" in decomposition[-1]["output"]
    # Each step closes when its own stage says it has finished: the search step before the last judgement is in.
    order = [(kind, payload) for kind, payload in captured.events if kind in ("step", "update")]
    search_closed = next(
        i for i, (kind, s) in enumerate(order) if kind == "update" and s["id"] == steps["检索"]["id"] and s.get("end")
    )
    last_judgement = max(
        i for i, (kind, s) in enumerate(order) if kind == "step" and s.get("parentId") == steps["相关性判断"]["id"]
    )
    assert search_closed < last_judgement

    streamed = captured.of("stream_start")[0]["output"] + "".join(captured.of("token"))
    assert streamed.startswith("> 离线演示模式")  # the report streamed before it was sent whole
    assert len(captured.of("token")) >= 1
    answers = [s for s in captured.of("step") if s["type"] == "assistant_message" and s["name"] == "ClinCite"]
    assert len(answers) == 1
    answer = answers[0]
    assert "### 论据与来源" in answer["output"] and "引用核验" in answer["output"]
    assert "证据覆盖：所问各方面均找到了原文证据" in answer["output"]

    elements = captured.of("element")
    names = [e["name"] for e in elements]
    assert sorted(names) == sorted(f"【{i}】" for i in range(1, len(names) + 1)) and len(names) >= 3
    for element in elements:
        assert element["forId"] == answer["id"] and element["display"] == "side"
        assert element["name"] in answer["output"]  # the marker in the report is the link
    notices = [s["output"] for s in captured.of("step") if s["name"] == "系统提示"]
    assert len(notices) == 1 and "演示模式" in notices[0], notices  # one short mode notice
    assert not captured.of("toast")  # and no toast on top of it
    again = await ask(app_module, "角膜塑形镜的适应症？", fresh_chat=False)
    assert not [s for s in again.of("step") if s["name"] == "系统提示"]  # once per chat, not per answer


async def test_unverified_quotes_are_marked_in_the_message_and_the_side_panel(app_module):
    from clincite.core.shapes import Citation, QueryResult
    from clincite.report.citations import UNVERIFIED_LABEL

    result = QueryResult(
        question="q",
        mode="llm",
        sub_queries=[],
        analyses=[],
        sufficiency=None,
        stage2_queries=[],
        answer="**TL;DR：** x【1】\n\n### 论据与来源\n**【1】标题**\n说明：x\n来源：《甲》\n原文：“编造的句子”\n",
        citations=[Citation(number=1, source="甲", quote="编造的句子", verified=False)],
        timings={"ttft": 1.0, "total": 2.0},
        usage={},
        unverified_citations=1,
    )
    use_context()
    content = final_content(result, [])
    assert UNVERIFIED_LABEL in content and "1 条未能核验" in content
    element = source_elements(result.citations, {})[0]
    assert element.name == "【1】" and "未能在来源中逐字找到" in element.content


async def test_a_follow_up_uses_the_threads_history(app_module):
    import chainlit as cl

    first = await ask(app_module, "低浓度阿托品控制近视的效果如何？")
    assert first.of("element")
    history = cl.user_session.get("history")
    assert [t.role for t in history] == ["user", "assistant"]
    follow_up = await ask(app_module, "那副作用呢？", history)
    steps = [s for s in follow_up.of("update") if s.get("name") == "问题分解" and s.get("output")]
    assert "低浓度阿托品" in steps[-1]["output"] and "副作用" in steps[-1]["output"]


async def test_on_chat_resume_rebuilds_the_history_from_the_thread(app_module):
    import chainlit as cl
    from chainlit.config import config

    thread = {
        "id": "t",
        "steps": [
            {"type": "user_message", "name": "doctor", "output": "OK镜适合哪些孩子？"},
            {
                "type": "assistant_message",
                "name": "系统提示",
                "output": "🧪 演示模式",
                "metadata": json.dumps({"clincite_notice": "mode"}),
            },
            {"type": "assistant_message", "name": "ClinCite", "output": "**TL;DR：** 8 岁以上……"},
        ],
        "metadata": json.dumps({}),
    }
    use_context()
    await config.code.on_chat_resume(thread)
    history = cl.user_session.get("history")
    assert [(t.role, t.content[:6]) for t in history] == [("user", "OK镜适合哪"), ("assistant", "**TL;D")]
    assert cl.user_session.get("notices_shown") == {"mode"}  # a reopened chat does not repeat its mode notice


async def test_a_dropped_speculative_answer_never_reaches_the_message(app_module):
    """An "insufficient" verdict: the speculative report is neither streamed nor stored."""
    from fake_clinical_llm import in_process_models
    from test_query import insufficient, structured, text_model

    from clincite.llm.agents import build_agents
    from clincite.question.reasoner import LLMReasoner
    from clincite.web import state

    service = state.current().service
    offline = service.reasoner  # the app runs offline; this test needs the LLM path's speculation
    service.reasoner = LLMReasoner(build_agents(service.settings, models=in_process_models()))
    agents = service.agents

    def pieces(prompt, call):
        return ["SPECULATIVE ", "草稿"] if call == 1 else ["**TL;DR：** 第二阶段之后的回答。"]

    try:
        with (
            agents.sufficiency_judge.override(model=structured(insufficient, delay=0.3)),
            agents.answer_generation.override(model=text_model(pieces)),
        ):
            captured = await ask(app_module, "阿托品停药后会怎样？")
    finally:
        service.reasoner = offline
    sent = [s for s in captured.of("step") if s["type"] == "assistant_message" and s["name"] == "ClinCite"]
    streamed = "".join(s["output"] for s in captured.of("stream_start")) + "".join(captured.of("token"))
    assert len(sent) == 1 and "第二阶段之后的回答" in sent[0]["output"]
    assert "SPECULATIVE" not in sent[0]["output"] and "SPECULATIVE" not in streamed
    assert any(s["name"] == "第二阶段检索" for s in captured.of("step"))


async def test_the_streamed_report_grows_by_what_is_new_and_stays_inert(app_module, monkeypatch):
    """What the browser shows while the report streams is the report so far made inert (a link split across tokens
    included), and each update adds only what is new: the report is not sent again whole at every flush."""
    from fake_clinical_llm import in_process_models
    from test_query import text_model

    from clincite.llm.agents import build_agents
    from clincite.question.reasoner import LLMReasoner
    from clincite.report.inert import inert_report
    from clincite.web import render, state

    pieces = ["**TL;DR：** 见[指南](htt", "p://evil.example/x) 与 “原文", "引用” 及 www", ".example.com ！["]
    pieces += [f"第{i}段：低浓度阿托品的疗效与不良反应，详见下文。\n" for i in range(40)]
    monkeypatch.setattr(render, "FLUSH_SECONDS", 0.0)  # every piece flushed: the most updates a report can get
    service = state.current().service
    offline = service.reasoner
    service.reasoner = LLMReasoner(build_agents(service.settings, models=in_process_models()))
    try:
        with service.agents.answer_generation.override(model=text_model(lambda prompt, call: pieces)):
            captured = await ask(app_module, "低浓度阿托品的疗效？")
    finally:
        service.reasoner = offline
    (start,) = [s for s in captured.of("stream_start") if s["name"] == "ClinCite"]
    shown, sent = start["output"], len(start["output"])
    states = [shown]
    for update in captured.of("streamed"):  # as the page applies them: a sequence replaces, a token is appended
        shown = update["token"] if update["is_sequence"] else shown + update["token"]
        sent += len(update["token"])
        states.append(shown)
    report = "".join(pieces)
    assert shown == inert_report(report)
    ends = [sum(len(p) for p in pieces[: i + 1]) for i in range(len(pieces))]
    renderings = {inert_report(report[:end]) for end in ends}
    assert all(state in renderings for state in states[1:])  # at every point: the report so far, made inert
    assert not any(re.search(r"(?<!\\)(\]\(|!\[)", state) for state in states)  # never a link or an image
    assert len(states) > 20 and sent < 1.5 * len(shown)  # ~40 updates, about one report's worth of text in all
