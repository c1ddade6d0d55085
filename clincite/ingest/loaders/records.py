"""JSON and JSON Lines: a record (a disease's entry of a knowledge base, an exported article, a Q&A pair) as text.

    {"name": "弱视", "desc": "弱视是……", "cause_info": "……包括：\\n1、……", "inspect_info": ["视力", "屈光检查"]}

reads as the document 《弱视》: its title from the first short `name`/`title`/`标题`/… value, every long value a
section (headed by its key when the key is words a person wrote, "病因"; a program's name, `cause_info`, only
breaks the section), every short value one line "key：value" (a number without its key says nothing), a list of
short values one line joined with "、". A file holding a list of records (or JSON Lines) gives one section per
record, headed by the record's own name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from clincite.ingest.loaders.base import LEAD_IN_ENDS, DocumentBuilder, LoadedDocument, SkipFile, clean_line
from clincite.ingest.loaders.text import decode_text

TITLE_KEYS = ("title", "name", "标题", "名称", "题目", "疾病名称", "病名", "topic", "subject", "question", "问题")
TITLE_CHARS = 60  # a longer value is text, not a name
SHORT_VALUE_CHARS = 40  # a value this short without a sentence in it is a field of the record: one "key：value" line
MAX_DEPTH = 6  # deeper nesting heads no section: its values are text under the last heading
MAX_NESTING = 40  # deeper still (a machine's dump) reads as its texts in order, walked without recursion
# json's messages, as a librarian reads them (the English stays in the log part of the reason)
_JSON_ERRORS = {
    "Unterminated string": "字符串没有结束，文件可能被截断",
    "Expecting value": "此处缺少值，文件可能被截断或为空",
    "Expecting ',' delimiter": "缺少逗号",
    "Expecting ':' delimiter": "缺少冒号",
    "Expecting property name": "键名须用英文双引号括起",
    "Extra data": "一个 JSON 之后还有多余内容（每行一条记录的文件请用 .jsonl）",
    "Invalid control character": "字符串中有未转义的控制字符",
    "Invalid \\escape": "字符串中有无效的转义符",
}
_PROGRAM_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_.$-]*")


def load_records(path: Path) -> LoadedDocument:
    text = decode_text(path.read_bytes())
    data = _parse(text, lines=path.suffix.lower() == ".jsonl")
    title = _title_of(data) or path.stem
    builder = DocumentBuilder(path.stem)
    builder.heading(1, title)
    if isinstance(data, list) and any(isinstance(item, dict) for item in data):
        for item in data:
            name = _title_of(item) if isinstance(item, dict) else None
            if name and name != title:
                builder.heading(2, name)
            else:
                builder.section_break()
            _write(builder, item, level=3, skip=name)
    else:
        _write(builder, data, level=2, skip=title)
    return builder.build()


def _parse(text: str, lines: bool) -> Any:
    if not lines:
        return _parsed(text, 0)
    return [_parsed(line, number) for number, line in enumerate(text.splitlines()) if line.strip()]


def _parsed(text: str, lines_before: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = exc.lineno + lines_before
        why = next((chinese for english, chinese in _JSON_ERRORS.items() if exc.msg.startswith(english)), "格式不符")
        raise SkipFile(
            f"JSON 格式错误（第 {line} 行第 {exc.colno} 列：{why}），请检查文件是否完整 (invalid JSON: {exc.msg} "
            f"at line {line} column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise SkipFile("JSON 嵌套层数过深，无法作为文档读取 (JSON nested too deeply)") from exc


def _title_of(value: Any, depth: int = 0) -> str | None:
    """The first short text under a title key: the record's own, else its parts' in order (two levels down)."""
    if not isinstance(value, dict) or depth > 2:
        return None
    for key, item in value.items():
        if key.strip().lower() in TITLE_KEYS and isinstance(item, str) and 0 < len(clean_line(item)) <= TITLE_CHARS:
            return clean_line(item)
    for item in value.values():
        if found := _title_of(item, depth + 1):
            return found
    return None


def _write(builder: DocumentBuilder, value: Any, level: int, skip: str | None, key: str = "", depth: int = 0) -> None:
    if depth > MAX_NESTING:
        _write_leaves(builder, value)
    elif isinstance(value, dict):
        _write_object(builder, value, level, skip, depth)
    elif isinstance(value, list):
        _write_list(builder, value, level, skip, key, depth)
    elif _present(value):
        _write_text(builder, _scalar(value), key)


def _write_leaves(builder: DocumentBuilder, value: Any) -> None:
    """Nesting deeper than anyone writes for people (a machine's dump): its texts in order, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += reversed(list(item.values()))
        elif isinstance(item, list):
            stack += reversed(item)
        elif _present(item):
            _write_text(builder, _scalar(item), "")


def _write_object(builder: DocumentBuilder, value: dict, level: int, skip: str | None, depth: int) -> None:
    for key, item in value.items():
        if not _present(item) or (isinstance(item, str) and clean_line(item) == skip):
            continue
        if _short(item):
            builder.paragraph(f"{_label(key)}：{_short_text(item)}" if _label(key) else _short_text(item))
            continue
        if level > MAX_DEPTH:
            _write(builder, item, level, skip, depth=depth + 1)
        elif _person_wrote(key):
            builder.heading(level, key)
            _write(builder, item, level + 1, skip, depth=depth + 1)
        else:
            builder.section_break()
            _write(builder, item, level, skip, depth=depth + 1)


def _write_list(builder: DocumentBuilder, items: list, level: int, skip: str | None, key: str, depth: int) -> None:
    texts = [item for item in items if _present(item) and not isinstance(item, (dict, list))]
    if texts and len(texts) == len(items) and all(_short(item) for item in texts):
        _write_text(builder, "、".join(_short_text(item) for item in texts), key)
        return
    for item in items:
        if isinstance(item, (dict, list)):
            _write(builder, item, level, skip, depth=depth + 1)
        elif _present(item):
            _write_text(builder, _scalar(item), "")


def _write_text(builder: DocumentBuilder, text: str, key: str) -> None:
    """A value's lines: a lead-in ending in "：" keeps the lines after it as its list."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return
    if len(lines) == 1 and key and _label(key) and len(lines[0]) <= SHORT_VALUE_CHARS:
        builder.paragraph(f"{_label(key)}：{lines[0]}")
        return
    if len(lines) > 1 and lines[0].rstrip().endswith(LEAD_IN_ENDS):
        builder.paragraph(lines[0])
        builder.list_items(lines[1:])
        return
    for line in lines:
        builder.paragraph(line)


def _present(value: Any) -> bool:
    """Some text or figure somewhere in the value (walked without recursion: a dump may nest deeply)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += item.values()
        elif isinstance(item, list):
            stack += item
        elif item.strip() if isinstance(item, str) else item is not None:
            return True
    return False


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "是" if value else "否"
    return str(value).replace("\t", " ")


def _short(value: Any) -> bool:
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) and _short(v) for v in value if _present(v)) and (
            len(_short_text(value)) <= SHORT_VALUE_CHARS * 2
        )
    if isinstance(value, dict):
        return False
    text = _scalar(value).strip()
    return len(text) <= SHORT_VALUE_CHARS and "\n" not in text and not re.search(r"[。！？；]", text.rstrip("。"))


def _short_text(value: Any) -> str:
    if isinstance(value, list):
        return "、".join(clean_line(_scalar(v)) for v in value if _present(v))
    return clean_line(_scalar(value))


def _label(key: str) -> str:
    return clean_line(key) if key else ""


def _person_wrote(key: str) -> bool:
    """病因、"Clinical features": a heading; cause_info, desc, symptomDetail: a program's name for the field."""
    key = key.strip()
    if not _PROGRAM_NAME.fullmatch(key):
        return bool(key)
    return key[:1].isupper() and not re.search(r"[_\d$]|[a-z][A-Z]", key)
