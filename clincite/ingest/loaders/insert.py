"""A drug's package insert (药品说明书) as drug-information sites and pharmacies show it: the fields the insert format
sets (【适应症】, 【用法用量】, 【禁忌】 …), each under its label. Sites write the labels every way — "【禁 忌】" with a
space, "- 【规格】5ml" as a list, "[成份]…。 [性状]…" run on in one line, or a label alone on its line above its
value — and never repeat what a field is about inside it ("一次1滴，一天2次" says nothing of 用法), so each field is
read as a section its label heads, as a guideline's heading heads its text.

The labels are the insert format's own (China's rules for drug inserts: 化学药品和生物制品说明书规范细则, the
Chinese-medicine ones, and the names sites give them), not any one library's: a text is read as an insert only when
at least `MIN_INSERT_FIELDS` different ones of them label its fields.
"""

from __future__ import annotations

import bisect
import re

from clincite.ingest.loaders.base import DocumentBuilder
from clincite.text.script import fold

# The insert format's fields and the names sites give them, as the rules list them (one word a label)
INSERT_LABELS = frozenset(
    """
    药品名称 通用名称 商品名称 商品名 英文名称 汉语拼音 产品名称 成份 成分 主要成份 主要成分 性状 作用类别
    适应症 适应证 功能主治 主治功能 功能与主治 作用与用途 适用范围 规格 用法用量 用法与用量 剂量与用法 用法 用量
    不良反应 禁忌 禁忌症 禁忌证 注意事项 警示语 警示 特殊人群 孕妇及哺乳期妇女用药 孕妇及哺乳期用药 孕妇用药 哺乳期用药
    儿童用药 老年用药 老年患者用药 老人用药 药物相互作用 相互作用 药物过量 过量 临床试验 药理毒理 药理作用 毒理研究
    药代动力学 贮藏 储藏 贮存 储存 包装 有效期 执行标准 批准文号 生产企业 生产厂家 生产厂商 核准日期 修改日期
    """.split()  # noqa: SIM905 (a word list reads as the rules print it)
)
MIN_INSERT_FIELDS = 3  # different labels of the insert format: a text with fewer is not an insert
NAME_LABELS = ("通用名称", "药品名称", "产品名称", "商品名称", "品名")  # the fields that name the drug, first first
NAME_LEVEL = 2  # the drug's name heads the fields (not level 1: a file named as the drug would take it for its title)
FIELD_LEVEL = 3  # … so short fields pack into one passage under it, each unit under its own label
MAX_NAME_CHARS = 30
_NAMED = re.compile(rf"(?:{'|'.join(NAME_LABELS)})\s*[:：]\s*([^\s\[【,，。；;：:]+)")  # "通用名称: 盐酸金霉素眼膏"
# "【禁 忌】", "[成份]": a label in brackets, anywhere (sites run several fields into one line)
_BRACKETED = re.compile(r"[【\[]\s*((?:[\u4e00-\u9fff][ \t\u3000]*){2,14}?(?:/[\u4e00-\u9fff]{2,8})*)\s*[】\]]")
# "适应症" alone on its line above its value (a colon after it, or spaces inside, as written)
_BARE = re.compile(r"^[ \t\u3000]*((?:[\u4e00-\u9fff][ \t\u3000]*){2,14}?)[ \t\u3000]*[:：]?[ \t\u3000]*$", re.M)
_LEADING = " \t\u3000\n:：-"  # what stands between a label and its value ("【通用名称】: 蒙脱石散", "- 【规格】…")


def _insert_label(written: str) -> str | None:
    """The label as the insert format names it ("禁忌" of "禁 忌"; "功能主治/适应症" as written; a Traditional page's
    "不良反應" as written), or None."""
    label = re.sub(r"[ \t\u3000]+", "", written)
    return label if any(fold(part) in INSERT_LABELS for part in label.split("/")) else None


def insert_fields(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(the text before the first field, [(label, value)] of each field in order) of a package insert; None for any
    other text. A field left empty by the site ("[禁忌]" and nothing after it) has the value ""."""
    marks = [(m.start(), m.end(), label) for m in _BRACKETED.finditer(text) if (label := _insert_label(m.group(1)))]
    starts = [start for start, *_ in marks]  # in order, apart: a bare label inside a bracketed one is that one
    for match in _BARE.finditer(text):
        label = _insert_label(match.group(1))
        at = bisect.bisect_left(starts, match.end())
        if label and not (at and marks[at - 1][1] > match.start()):
            marks.append((match.start(), match.end(), label))
    if len({label for *_, label in marks}) < MIN_INSERT_FIELDS:
        return None
    marks.sort()
    ends = [start for start, *_ in marks[1:]] + [len(text)]
    fields = [(label, text[end:next_start].strip(_LEADING)) for (_, end, label), next_start in zip(marks, ends)]
    return text[: marks[0][0]].strip(_LEADING), fields


def drug_name(before: str, fields: list[tuple[str, str]]) -> str:
    """The drug's name as its insert gives it ("通用名称:妥布霉素滴眼液" under 【药品名称】, "品名:近视乐眼药水", a
    "通用名称:…" line before the bracketed fields), or ""."""
    named = [value for wanted in NAME_LABELS for label, value in fields if fold(label) == wanted and value]
    for value in [*named, before]:
        found = _NAMED.search(value) or (None if value is before else re.match(r"\s*(\S+)", value))
        name = found.group(1) if found else ""
        if 2 <= len(name) <= MAX_NAME_CHARS and re.search(r"[\u4e00-\u9fff]", name):
            return name
    return ""


def write_insert(builder: DocumentBuilder, before: str, fields: list[tuple[str, str]]) -> None:
    """The page's lines before the insert as paragraphs, then the drug's name as a heading over the fields, and each
    field that has a value a section its label heads: the name stands over every passage, as a monograph's heading
    does, and the short fields of one insert pack into passages together (`chunking.chunk_document`)."""
    for line in before.split("\n"):
        if line.strip():
            builder.paragraph(line.strip())
    # a page that starts at 【成份】 names the drug nowhere but in its title (the file's name)
    builder.heading(NAME_LEVEL, drug_name(before, fields) or builder.title or builder.fallback_title)
    for label, value in fields:
        if not value:
            continue
        builder.heading(FIELD_LEVEL, label)
        for line in value.split("\n"):
            if line.strip():
                builder.paragraph(line.strip())
