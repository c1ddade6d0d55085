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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clincite.ingest.loaders.base import LEAD_IN_ENDS, DocumentBuilder, LoadedDocument, SkipFile, clean_line
from clincite.ingest.loaders.text import decode_text, labelled_fields, write_fields

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
# a key naming the record by its last word: chinese_name, productName, drug-title, 药品名称, 通用名
_NAME_KEY = re.compile(r"(?:^|[_.\-\s]|(?<=[a-z]))(?:name|title)$|名称$|名$", re.IGNORECASE)
_MACHINE_TOKEN = re.compile(r"[a-z0-9]+(?:[_/][a-z0-9]+)+/?|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?")
_LABEL_SECTION = re.compile(
    r"indication|dosage|administration|adverse|warning|precaution|ingredient|interaction|overdos|storage",
    re.IGNORECASE,
)
# a question bank's item (CMExam's Question/Options/Answer/Explanation, MedQA's question/options/answer_idx, 题干/选项/
# 答案/解析): read as an exam paper prints it, the stem, its options a line each, the key, the explanation
OPTION_KEYS = ("options", "option", "choices", "选项", "备选答案", "备选项")
ANSWER_KEYS = ("answer", "answer_idx", "correct_answer", "答案", "正确答案", "参考答案", "标准答案")
EXPLANATION_KEYS = ("explanation", "analysis", "rationale", "解析", "答案解析", "解释", "分析")
_OPTION_LETTER = re.compile(r"[A-H]")
# A chat turn, as instruction-tuning sets and chat exports write it (ShareGPT's from/value, OpenAI's role/content)
ROLE_KEYS = ("from", "role", "speaker", "sender")
TURN_TEXT_KEYS = ("value", "content", "text", "message")
ASKER_ROLES = {"human", "user", "patient", "患者", "病人", "用户", "提问者"}
ANSWERER_ROLES = {"gpt", "assistant", "doctor", "医生", "大夫", "医师"}  # of a line a speaker labels ("医生：…")
_SPEAKER_LINE = re.compile(r"^\s*([^\s：:]{1,12})\s*[：:]\s*(.*)$", re.DOTALL)
ASKED_HEADING_CHARS = 200  # a question this long is a story told (a consultation's), written as text, not a heading
SKIPPED_ROLES = {"system"}  # a prompt telling a model how to behave: no text a reader asked or was told
# An instruction-tuning pair (Alpaca's instruction/input/output, prompt/completion, query/response)
PROMPT_KEYS = ("instruction", "prompt", "query")
CONTEXT_KEYS = ("input",)
RESPONSE_KEYS = ("output", "response", "completion")
UNIT_KEYS = ("unit", "units", "uom", "单位", "計量單位", "计量单位")
_FIGURE = re.compile(r"[-+]?\d+(?:\.\d+)?")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_MISSING = {"", "nan", "NaN"}  # pandas writes an empty cell as "nan": no text
_WRITTEN_OUT_BREAK = re.compile(r"\\r\\n|\\n|\\r")


@dataclass
class _RecordBuilder(DocumentBuilder):
    """A record's lines once each: a dump's nested parts repeat their parent's fields (product_id、license_number in
    every ingredient and source) and their boilerplate, which say nothing the first time has not."""

    written: set[str] = field(default_factory=set)

    def paragraph(self, text: str) -> None:
        if text.strip() in self.written:
            return
        self.written.add(text.strip())
        super().paragraph(text)

    def next_record(self) -> None:
        self.written = set()


def load_records(path: Path) -> LoadedDocument:
    text = decode_text(path.read_bytes())
    data = _parse(text, lines=path.suffix.lower() == ".jsonl")
    title = _title_of(data) or path.stem
    builder = _RecordBuilder(path.stem)
    builder.heading(1, title)
    if isinstance(data, list) and any(isinstance(item, dict) for item in data):
        for item in data:
            builder.next_record()
            name = _title_of(item) if isinstance(item, dict) else None
            if name and name != title:
                builder.heading(2, name)
            else:
                builder.close_headings(2)
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
    """The first short text under a title key: the record's own, else its parts' in order (two levels down). Failing
    `name`/`title`/…, a key that ends so (chinese_name, drug_title, 药品名称): one in Chinese first, as it is cited."""
    if not isinstance(value, dict) or depth > 2:
        return None
    names = [(key, clean_line(item)) for key, item in value.items() if isinstance(item, str)]
    names = [(key.strip(), item) for key, item in names if 0 < len(item) <= TITLE_CHARS]
    for key, item in names:
        if key.lower() in TITLE_KEYS:
            return item
    named = [item for key, item in names if _NAME_KEY.search(key)]
    if named:
        return next((item for item in named if _HAN.search(item)), named[0])
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
        _write_text(builder, _scalar(value), key, level)


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
    if _exam_item(value):
        value = _write_exam_item(builder, value, skip)
    elif _prompt_and_response(value):
        value = _write_prompt_and_response(builder, value, level)
    for key, item in value.items():
        if not _present(item) or (isinstance(item, str) and clean_line(item) == skip):
            continue
        if _short(item) and _bookkeeping(key, item):
            continue
        if _short(item):
            builder.paragraph(f"{_label(key)}：{_short_text(item)}" if _label(key) else _short_text(item))
            continue
        if level > MAX_DEPTH:
            _write(builder, item, level, skip, depth=depth + 1)
        elif isinstance(item, str) and _names_label_section(key):
            builder.section_break()
            _write_labelled(builder, _label(key), _scalar(item))
        elif _person_wrote(key):
            builder.heading(level, key)
            _write(builder, item, level + 1, skip, depth=depth + 1)
        else:
            builder.section_break()
            _write(builder, item, level, skip, depth=depth + 1)


def _exam_item(value: dict) -> bool:
    """Options and an answer, the options a text, a list or a mapping of plain values (anything deeper is read as
    any record is)."""
    options = [item for key, item in value.items() if key.strip().lower() in OPTION_KEYS]
    answered = any(key.strip().lower() in ANSWER_KEYS for key in value)
    return answered and len(options) == 1 and _plain(options[0])


def _plain(value: Any) -> bool:
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
    return all(not isinstance(item, (dict, list)) for item in items)


def _write_exam_item(builder: DocumentBuilder, item: dict, skip: str | None) -> dict:
    """The stem (unless it heads the record already), each option on a line of its own, "Answer：C", the explanation
    after its key — the shape `clincite.text.choices` reads an exam paper's item by, so the option the key names is
    what the item says. Returns the record's other fields."""
    rest = dict(item)
    stem_key = next((k for k in item if k.strip().lower() in TITLE_KEYS and isinstance(item[k], str)), None)
    if stem_key is not None:
        stem = rest.pop(stem_key)
        if clean_line(stem) != skip:
            for line in _scalar(stem).split("\n"):
                if line.strip():
                    builder.paragraph(line)
    options_key = next(k for k in item if k.strip().lower() in OPTION_KEYS)
    builder.list_items(_option_lines(rest.pop(options_key)))
    for keys in (ANSWER_KEYS, EXPLANATION_KEYS):
        key = next((k for k in rest if k.strip().lower() in keys), None)
        if key is None or not _present(rest[key]) or not _plain(rest[key]):
            continue
        lines = [line for line in _short_text_lines(rest.pop(key)) if line.strip()]
        if lines:
            builder.paragraph(f"{_label(key)}：{lines[0].strip()}")
            for line in lines[1:]:
                builder.paragraph(line)
    return rest


def _dialogue(items: list) -> bool:
    """A list of chat turns, each a speaker and what was said, at least one of them a question asked."""
    turns = [_turn(item) for item in items]
    return len(turns) >= 2 and all(turns) and any(role in ASKER_ROLES for role, _ in turns if role)


def _turn(item: Any) -> tuple[str, str] | None:
    """(speaker, what was said) of a turn written as a record, or as a line its speaker labels ("病人：…", MedDialog's
    utterances); None for anything else."""
    if isinstance(item, str):
        labelled = _SPEAKER_LINE.match(item)
        if labelled is None or labelled.group(1).lower() not in ASKER_ROLES | ANSWERER_ROLES:
            return None
        return labelled.group(1).lower(), labelled.group(2)
    if not isinstance(item, dict):
        return None
    role = next((item[k] for k in item if k.strip().lower() in ROLE_KEYS and isinstance(item[k], str)), None)
    said = next((item[k] for k in item if k.strip().lower() in TURN_TEXT_KEYS and isinstance(item[k], str)), None)
    return (role.strip().lower(), said) if role is not None and said is not None else None


def _write_dialogue(builder: DocumentBuilder, items: list, level: int) -> None:
    """What the asker said heads what the answerer said after it, as a Q&A page's question heads its answer: the
    answer ("结膜；泪器；眼眶") is about what was asked ("眼肿瘤的发病部位是什么？"), which it seldom repeats. The
    speakers' labels (human、gpt) are no text of anyone's."""
    for role, said in filter(None, map(_turn, items)):
        if role in SKIPPED_ROLES or not _present(said):
            continue
        asked = clean_line(_scalar(said)) if role in ASKER_ROLES else ""
        if asked and len(asked) <= ASKED_HEADING_CHARS:
            builder.heading(level, asked)
        else:  # a patient's long story is text of its own, not a heading over every passage of the answer
            _write_text(builder, _scalar(said), "")


def _prompt_and_response(value: dict) -> bool:
    keys = {key.strip().lower() for key, item in value.items() if isinstance(item, str)}
    return bool(keys & set(PROMPT_KEYS)) and bool(keys & set(RESPONSE_KEYS))


def _write_prompt_and_response(builder: DocumentBuilder, item: dict, level: int) -> dict:
    """An instruction-tuning pair: the instruction (with its input, the case it is about) heads the response, as a
    chat's question heads its answer. Returns the record's other fields."""
    rest = dict(item)
    asked = [
        clean_line(_scalar(rest.pop(key)))
        for keys in (PROMPT_KEYS, CONTEXT_KEYS)
        for key in [next((k for k in item if k.strip().lower() in keys and isinstance(item[k], str)), None)]
        if key is not None
    ]
    answer_key = next(k for k in rest if k.strip().lower() in RESPONSE_KEYS and isinstance(rest[k], str))
    answer = rest.pop(answer_key)
    heading = " ".join(part for part in asked if part and part not in _MISSING)
    if 0 < len(heading) <= ASKED_HEADING_CHARS:
        builder.heading(level, heading)
    elif heading:
        builder.paragraph(heading)
    if _present(answer):
        _write_text(builder, _scalar(answer), "")
    return rest


def _option_lines(options: Any) -> list[str]:
    """Options as lines "A. …": a mapping by letter (MedQA), a list, or one text with a line each."""
    if isinstance(options, dict):
        return [f"{clean_line(str(k))}. {_short_text(v)}" for k, v in options.items() if _present(v)]
    if isinstance(options, list):
        lines = [_short_text(v) for v in options if _present(v)]
        if all(_OPTION_LETTER.match(line[:1]) for line in lines):
            return lines
        return [f"{letter}. {line}" for letter, line in zip("ABCDEFGH", lines)]
    return [line.strip() for line in _scalar(options).split("\n") if line.strip()]


def _short_text_lines(value: Any) -> list[str]:
    if isinstance(value, (dict, list)):
        return [_short_text(value)]
    return _scalar(value).split("\n")


def _write_list(builder: DocumentBuilder, items: list, level: int, skip: str | None, key: str, depth: int) -> None:
    if _dialogue(items):
        _write_dialogue(builder, items, level)
        return
    texts = [item for item in items if _present(item) and not isinstance(item, (dict, list))]
    if texts and len(texts) == len(items) and all(_short(item) for item in texts):
        _write_text(builder, "、".join(_short_text(item) for item in texts), key)
        return
    for item in items:
        if isinstance(item, dict):
            _write_row(builder, item, level, skip, depth + 1)
        elif isinstance(item, list):
            _write(builder, item, level, skip, depth=depth + 1)
        elif _present(item):
            _write_text(builder, _scalar(item), "")


def _write_row(builder: _RecordBuilder, row: dict, level: int, skip: str | None, depth: int) -> None:
    """One of a record's list of like things (an ingredient: its name, role and strength): its short fields one line,
    "substance：Cetrimide；role：preservative", as a table's row is read, so a line that answers names what it is of."""
    fields = [
        (key, item)
        for key, item in _with_units(row).items()
        if _present(item) and _in_row(item) and not _bookkeeping(key, item) and _short_text(item) != skip
    ]
    fields = _first_of_each_value(fields)
    lines = [f"{_label(key)}：{_short_text(item)}" if _label(key) else _short_text(item) for key, item in fields]
    # the parent's fields a row repeats (license_number in every ingredient) were said once already
    line = "；".join(line for line in lines if line not in builder.written)
    if line:
        builder.paragraph(line)
    rest = {key: item for key, item in row.items() if not (_present(item) and _in_row(item))}
    if rest:
        _write_object(builder, rest, level, skip, depth)


def _first_of_each_value(fields: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A field repeating another's value in other letters (substance_normalized: cetrimide after Cetrimide) adds
    nothing to the row's line."""
    kept, seen = [], set()
    for key, item in fields:
        value = _short_text(item).casefold()
        if value not in seen:
            seen.add(value)
            kept.append((key, item))
    return kept


def _with_units(row: dict) -> dict:
    """A figure and its unit in fields of their own ("strength": "30.000000", "unit": "MG") read as one figure,
    "strength：30.000000 MG", as a label prints it: apart, the figure says nothing of what it measures."""
    out: dict = {}
    for key, item in row.items():
        last = next(reversed(out), None)
        figure = out.get(last) if last is not None else None
        measured = isinstance(figure, (str, int, float)) and bool(_FIGURE.fullmatch(str(figure).strip()))
        if key.strip().lower() in UNIT_KEYS and isinstance(item, str) and measured:
            out[last] = f"{str(figure).strip()} {item.strip()}"
            continue
        out[key] = item
    return out


def _in_row(value: Any) -> bool:
    """A field a row's line holds: a short one, or one line that makes no sentence ("preservative / antimicrobial
    preservative")."""
    if _short(value):
        return True
    text = _scalar(value).strip() if not isinstance(value, (dict, list)) else ""
    return 0 < len(text) <= SHORT_VALUE_CHARS * 2 and "\n" not in text and not re.search(r"[。！？；]", text)


def _write_labelled(builder: DocumentBuilder, label: str, text: str) -> None:
    """A label's field: one line "indication_raw：…", or its lines as the list the label leads in."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) == 1:
        builder.paragraph(f"{label}：{lines[0].strip()}")
    elif lines:
        builder.paragraph(f"{label}：")
        builder.list_items(lines)


def _write_text(builder: DocumentBuilder, text: str, key: str, level: int = 2) -> None:
    """A value's lines: a lead-in ending in "：" keeps the lines after it as its list; a text of labelled fields (a
    drug handbook's monograph kept as one string) its fields under their labels."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return
    if len(lines) >= 3 and (fields := labelled_fields(text)) is not None:
        write_fields(builder, fields, level)
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
        elif item.strip() not in _MISSING if isinstance(item, str) else item is not None:
            return True
    return False


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "是" if value else "否"
    # a spreadsheet's cell exported with its line breaks written out ("A 角膜\\nB 巩膜"): the breaks it means
    return _WRITTEN_OUT_BREAK.sub("\n", str(value)).replace("\\t", " ").replace("\t", " ")


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


def _bookkeeping(key: str, value: Any) -> bool:
    """A program's field holding a program's token (product_id: eye_formal_065, status: leaflet_unavailable, a
    timestamp, a path): the dump's bookkeeping, which no reader asks about and no question should match."""
    return not _person_wrote(key) and isinstance(value, str) and bool(_MACHINE_TOKEN.fullmatch(value.strip()))


def _names_label_section(key: str) -> bool:
    """A program's key naming a section of a drug label (indication_raw, dosage_and_administration, adverse_reactions:
    openFDA's and registers' fields) labels its text: it says what the text is, which the text itself seldom does."""
    return bool(_LABEL_SECTION.search(key))


def _person_wrote(key: str) -> bool:
    """病因、"Clinical features": a heading; cause_info, desc, symptomDetail: a program's name for the field."""
    key = key.strip()
    if not _PROGRAM_NAME.fullmatch(key):
        return bool(key)
    return key[:1].isupper() and not re.search(r"[_\d$]|[a-z][A-Z]", key)
