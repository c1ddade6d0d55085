"""An instruction-tuning set or a chat export (ShareGPT's conversations, OpenAI's messages, Alpaca's
instruction/output): each record is a question someone asked and the answer given. The question heads its answer, as
a Q&A page's does, so an answer that never repeats what it answers ("那他霉素" under "真菌性角膜炎首选什么滴眼液？")
is found by the question and quoted with it; the speakers' labels (human、gpt) are nobody's text.

Found on the stop-48 blind library (a medical SFT set whose answers are often bare lists from a knowledge graph:
"结膜；泪器；眼眶"). Every record here is written for these tests in our own words (演示材料，仅用于软件测试，不作为临床
依据); the facts are standard textbook ophthalmology.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_other_styles import library, tldr

from clincite.ingest.loaders import load_document
from clincite.offline.questions import analyse


def chat(question: str, answer: str) -> str:
    """One ShareGPT line, with the system prompt such sets often carry."""
    turns = [
        {"from": "system", "value": "你是一名眼科助手（演示）。"},
        {"from": "human", "value": question},
        {"from": "gpt", "value": answer},
    ]
    return json.dumps({"conversations": turns}, ensure_ascii=False)


FUNGAL = chat("真菌性角膜炎首选哪种抗真菌滴眼液？（演示）", "那他霉素")
CORNEA = chat("正常成人角膜中央厚度大约是多少？（演示）", "约0.5毫米")
TUMOURS = chat("眼部肿瘤好发于哪些部位？（演示）", "眼睑；结膜；眼眶；眼内")
FACIAL = chat("不能闭眼可能是什么疾病的表现？（演示）", "周围性面神经麻痹；甲状腺相关眼病所致的严重眼球突出")
BLIND = chat(
    "暴盲的病因病机是什么？（演示）",
    "本病多因情志内伤、肝气郁结，气滞血瘀，阻塞目络；或阴虚火旺，上扰清窍所致。",
)


def test_a_conversation_reads_as_its_question_over_its_answer(tmp_path: Path):
    path = tmp_path / "sft.jsonl"
    path.write_text(FUNGAL + "\n" + CORNEA, encoding="utf-8")
    document = load_document(path)
    assert "真菌性角膜炎首选哪种抗真菌滴眼液？（演示）" in [
        s.heading_path[-1] for s in document.sections if s.heading_path
    ]
    assert "那他霉素" in document.text
    for label in ("human", "gpt", "from", "value", "你是一名眼科助手"):
        assert label not in document.text, document.text


def test_openai_messages_and_alpaca_pairs_read_the_same_way(tmp_path: Path):
    messages = tmp_path / "messages.jsonl"
    record = {
        "messages": [
            {"role": "user", "content": "真菌性角膜炎首选哪种抗真菌滴眼液？（演示）"},
            {"role": "assistant", "content": "那他霉素"},
        ]
    }
    messages.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    alpaca = tmp_path / "alpaca.json"
    pairs = [{"instruction": "真菌性角膜炎首选哪种抗真菌滴眼液？（演示）", "input": "", "output": "那他霉素"}]
    alpaca.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
    for path in (messages, alpaca):
        document = load_document(path)
        headings = [s.heading_path[-1] for s in document.sections if s.heading_path]
        assert "真菌性角膜炎首选哪种抗真菌滴眼液？（演示）" in headings, (path.name, document.text)
        assert "那他霉素" in document.text
        for label in ("user", "assistant", "instruction", "output", "role"):
            assert label not in document.text, document.text


async def test_a_bare_answer_is_found_by_its_question_and_quoted_with_it(tmp_path):
    service = library(tmp_path, {"真菌.jsonl": FUNGAL, "角膜.jsonl": CORNEA, "肿瘤.jsonl": TUMOURS})
    result = await service.ask("真菌性角膜炎一般首选什么滴眼液？")
    summary = tldr(result.answer)
    assert "那他霉素" in summary, result.answer
    assert "真菌性角膜炎" in summary  # the question it answers comes with it: alone "那他霉素" is a label
    result = await service.ask("正常人角膜中间大概有多厚？")
    assert "0.5毫米" in tldr(result.answer), result.answer  # a figure of three characters is an answer too


async def test_what_a_patient_cannot_do_is_the_story_not_a_contraindication(tmp_path):
    """ "闭不上眼、不能眨眼，要考虑哪些病？": 不能 tells the sign; no question about who must not use something."""
    ask = analyse("病人闭不上眼、不能眨眼，要考虑哪些病？")
    assert "禁忌证" not in ask.aspects
    assert "禁忌证" in analyse("哪些人不能戴角膜塑形镜？").aspects
    assert "禁忌证" in analyse("不适合戴角膜塑形镜的，是哪些孩子？").aspects
    service = library(tmp_path, {"面瘫.jsonl": FACIAL, "真菌.jsonl": FUNGAL})
    result = await service.ask("病人闭不上眼，要考虑哪些病？")
    assert "面神经麻痹" in tldr(result.answer), result.answer


async def test_who_calls_it_so_is_not_what_is_asked(tmp_path):
    """ "中医说的暴盲": the library need not say 中医 for its text on 暴盲 to answer."""
    ask = analyse("中医说的暴盲，病因病机一般怎么讲？")
    assert next(t for t in ask.terms if t.text == "中医").scene
    service = library(tmp_path, {"暴盲.jsonl": BLIND, "真菌.jsonl": FUNGAL})
    result = await service.ask("中医说的暴盲，病因病机一般怎么讲？")
    assert "气滞血瘀" in tldr(result.answer), result.answer


def test_how_it_is_confirmed_is_asked_but_after_it_is_confirmed_is_when():
    assert "诊断" in analyse("风牵偏视要做哪些检查来确诊？").aspects
    assert "诊断" not in analyse("沙眼确诊后吃什么药？").aspects


def test_a_long_story_told_is_text_not_a_heading(tmp_path: Path):
    """A consultation's question can be a page of history: it stays text, never a heading over every passage."""
    story = "孩子今年八岁，" + "最近看黑板眯眼，" * 40 + "需要配眼镜吗？（演示）"
    path = tmp_path / "dialogue.jsonl"
    path.write_text(chat(story, "建议先到医院做睫状肌麻痹验光，明确屈光状态后再决定。（演示）"), encoding="utf-8")
    document = load_document(path)
    assert not any(story in s.heading_path for s in document.sections if s.heading_path)
    assert story in document.text and "睫状肌麻痹验光" in document.text


def test_a_transcript_of_labelled_lines_reads_the_same_way(tmp_path: Path):
    """MedDialog's shape: the consultation as lines its speakers label."""
    record = {
        "description": "演示：家长咨询孩子揉眼",
        "utterances": [
            "病人：孩子春天总揉眼睛、眼痒，是不是过敏？（演示）",
            "医生：眼痒、季节性发作，多考虑过敏性结膜炎，可冷敷并在医生指导下使用抗过敏滴眼液。（演示）",
        ],
    }
    path = tmp_path / "dialog.json"
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    document = load_document(path)
    headings = [s.heading_path[-1] for s in document.sections if s.heading_path]
    assert "孩子春天总揉眼睛、眼痒，是不是过敏？（演示）" in headings, document.text
    assert "多考虑过敏性结膜炎" in document.text
    assert "病人：" not in document.text and "医生：" not in document.text
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"items": ["注意：避光保存。", "提示：开封后一个月内用完。"]}, ensure_ascii=False))
    assert "注意：避光保存。" in load_document(notes).text  # labelled lines that are no speakers stay as written


def test_the_next_record_is_not_under_the_last_records_question(tmp_path: Path):
    first = {
        "source": "演示",
        "utterances": ["病人：孩子总揉眼睛是过敏吗？（演示）", "医生：多考虑过敏性结膜炎。（演示）"],
    }
    second = {
        "source": "演示二",
        "utterances": ["患者：近视手术后多久能游泳？（演示）", "医生：术后一个月内避免游泳。（演示）"],
    }
    path = tmp_path / "dialogs.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in (first, second)), encoding="utf-8")
    document = load_document(path)
    under_first = [s for s in document.sections if s.heading_path == ["孩子总揉眼睛是过敏吗？（演示）"]]
    assert under_first and all("演示二" not in document.text[s.start : s.end] for s in under_first), document.sections
