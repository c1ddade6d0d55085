"""JSON documents (a disease knowledge base's records, an export of articles): one record is one document, titled by
its own name, its fields read as text — never the braces, quotes and escapes of the file — and a broken file is
refused with a reason a librarian can act on.

Every record here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_other_styles import library, tldr

from clincite.ingest.loaders import SkipFile, load_document

STYE = {
    "basic_info": {
        "name": "睑腺炎（演示）",
        "desc": "睑腺炎俗称针眼，是眼睑腺体的急性化脓性炎症，多由金黄色葡萄球菌感染引起。",
        "cure_lasttime": "1-2周",
        "cure_department": ["眼科"],
    },
    "prevent_info": "注意用眼卫生，不用脏手揉眼。\r\n睑缘炎、屈光不正未矫正者应及时诊治，减少复发。",
    "nursing_info": "护理要点如下：\n1.早期局部热敷，每次10至15分钟，每日3至4次。\n"
    "2.出现脓头时切忌用手挤压，以免炎症向眶内及颅内扩散。\n3.脓肿成熟后应由医生切开排脓。",
    "inspect_info": ["视力", "裂隙灯检查"],
}

RECORDS = [
    {
        "title": "睑板腺囊肿（演示）",
        "content": "睑板腺囊肿又称霰粒肿，是睑板腺出口阻塞、分泌物潴留形成的慢性肉芽肿，一般无明显疼痛。",
    },
    {
        "title": "倒睫（演示）",
        "content": "倒睫指睫毛向后生长触及眼球。少数几根可用拔除或电解法处理，较多者需手术矫正。",
    },
]


def test_a_record_reads_as_its_fields_titled_by_its_name(tmp_path):
    path = tmp_path / "stye_record.json"
    path.write_text(json.dumps(STYE, ensure_ascii=False), encoding="utf-8")
    document = load_document(path)
    assert document.title == "睑腺炎（演示）"
    assert "俗称针眼" in document.text and "切忌用手挤压" in document.text
    assert not any(mark in document.text for mark in ('{"', '":', "\\n", "\\r"))
    assert "cure_lasttime：1-2周" in document.text  # a short field keeps its key: "1-2周" alone says nothing
    assert "视力、裂隙灯检查" in document.text
    # the lead-in keeps its list, one item a line
    assert "护理要点如下：\n1.早期局部热敷" in document.text


async def test_a_question_on_a_json_record_is_answered_from_its_field_and_cites_its_name(tmp_path):
    service = library(tmp_path, {"stye_record.json": json.dumps(STYE, ensure_ascii=False)})
    result = await service.ask("长针眼冒出脓头了，能自己挤掉吗？")
    assert "切忌用手挤压" in tldr(result.answer), result.answer
    assert "《睑腺炎（演示）》" in result.answer
    assert result.citations and all(c.verified for c in result.citations)


async def test_a_file_of_records_gives_each_record_its_own_section(tmp_path):
    service = library(tmp_path, {"eyelid_notes.json": json.dumps(RECORDS, ensure_ascii=False)})
    result = await service.ask("倒睫只有几根的话怎么处理？")
    assert "拔除或电解" in tldr(result.answer), result.answer
    assert result.citations and result.citations[0].heading_path[-1:] == ["倒睫（演示）"]


@pytest.mark.parametrize(
    "content",
    ['{"name": "青光眼（演示）", "desc": "眼压升高', b"\xff\xfe\x00garbage", "[1, 2,]"],
)
def test_a_broken_json_file_is_refused_with_a_reason(tmp_path, content):
    path = tmp_path / "broken.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(SkipFile) as refused:
        load_document(path)
    assert "JSON" in str(refused.value) or "二进制" in str(refused.value) or "编码" in str(refused.value)


def test_json_lines_read_one_record_a_line(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in RECORDS), encoding="utf-8")
    document = load_document(Path(path))
    assert "霰粒肿" in document.text and "电解法" in document.text
    assert [s.heading_path for s in document.sections if s.heading_path] == [["睑板腺囊肿（演示）"], ["倒睫（演示）"]]


def test_a_broken_line_of_json_lines_is_named_by_its_line(tmp_path):
    path = tmp_path / "notes.jsonl"
    good = json.dumps(RECORDS[0], ensure_ascii=False)
    path.write_text(f'{good}\n{good}\n{{"title": "断行"\n', encoding="utf-8")
    with pytest.raises(SkipFile, match="第 3 行"):
        load_document(path)


def test_a_cut_off_record_says_so_in_chinese(tmp_path):
    path = tmp_path / "cut_off.json"
    path.write_text('{"name": "青光眼（演示）", "desc": "眼压升高', encoding="utf-8")
    with pytest.raises(SkipFile) as refused:
        load_document(path)
    reason = str(refused.value)
    assert "第 1 行" in reason and "字符串没有结束" in reason, reason
    assert reason.index("字符串没有结束") < reason.index("(invalid JSON")  # the English is the log's part only
