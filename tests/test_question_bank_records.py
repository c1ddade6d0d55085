"""A question bank exported as JSON Lines (one multiple-choice item a line, as CMExam, MedQA and a school's own
spreadsheet keep them): each item reads as an exam paper prints it, its stem, its options a line each, the key and
the explanation, so a clinician's question ("降眼压药里哪些是肾上腺素受体激动剂？") is answered by the option the key
names and the explanation's sentence that says it — not by a run of five options, four of them wrong.

Found on the stop-47 blind library (the validation split of a national licensing-exam bank with explanations, its
options in one spreadsheet cell with the line breaks written out as "\\n"). Every item here is written for these
tests in our own words (演示材料，仅用于软件测试，不作为临床依据); the facts are standard textbook pharmacology and
anatomy.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders import load_document


def item(question: str, options: list[str], answer: str, explanation: str) -> str:
    """A CMExam-style line: the options in one cell, their line breaks written out."""
    cell = "\\n".join(f"{letter} {text}" for letter, text in zip("ABCDE", options))
    return json.dumps(
        {"Question": question, "Options": cell, "Answer": answer, "Explanation": explanation}, ensure_ascii=False
    )


GLAUCOMA_DRUGS = "\n".join(
    [
        item(
            "下列降眼压药中，属于α₂肾上腺素受体激动剂的是（演示题）",
            ["毛果芸香碱", "噻吗洛尔", "溴莫尼定", "乙酰唑胺", "甘露醇"],
            "C",
            "本题考查降眼压药的分类（演示）。毛果芸香碱（A错）为拟胆碱缩瞳药。噻吗洛尔（B错）为β受体阻断剂。"
            "溴莫尼定为选择性α₂受体激动剂，既减少房水生成，又增加葡萄膜巩膜途径外流（C对）。"
            "乙酰唑胺（D错）为碳酸酐酶抑制剂。甘露醇（E错）为高渗脱水剂。",
        ),
        item(
            "乙酰唑胺降低眼压的主要机制是（演示题）",
            ["收缩瞳孔", "抑制睫状体的碳酸酐酶，减少房水生成", "增加小梁网外流", "阻断β受体", "脱水"],
            "B",
            "乙酰唑胺抑制睫状体上皮的碳酸酐酶，使房水生成减少而降低眼压（B对）。其利尿作用弱，临床很少用于利尿。",
        ),
    ]
)
ANATOMY = "\n".join(
    [
        item(
            "关于屈光不正，错误的是（演示题）",
            [
                "远视眼物像落在视网膜后方",
                "近视眼物像落在视网膜后方",
                "矫正近视用凹透镜",
                "矫正远视用凸透镜",
                "散光多由角膜曲率不等所致",
            ],
            "B",
            "近视是眼轴过长或屈光力过强，平行光线成像于视网膜前方（B错，为本题答案），须用凹透镜矫正。",
        )
    ]
)


def test_an_items_options_are_lines_and_its_key_and_explanation_follow(tmp_path: Path):
    path = tmp_path / "bank.jsonl"
    path.write_text(GLAUCOMA_DRUGS, encoding="utf-8")
    text = load_document(path).text
    assert "\\n" not in text  # the breaks the cell wrote out are line breaks
    assert "\nC 溴莫尼定\n" in text
    assert "Answer：C" in text
    assert "Explanation：本题考查降眼压药的分类" in text
    path.write_text(item("视近物时晶状体（演示题）", ["变薄", "变凸", "不变"], "B", "nan"), encoding="utf-8")
    assert "nan" not in load_document(path).text  # pandas's empty cell is no explanation


def test_options_given_by_letter_read_as_lines(tmp_path: Path):
    """MedQA's shape: options a mapping by letter, the key in answer_idx."""
    path = tmp_path / "medqa.jsonl"
    record = {
        "question": "可抑制房水生成的降眼压药是（演示题）",
        "options": {"A": "毛果芸香碱", "B": "噻吗洛尔", "C": "阿托品", "D": "托吡卡胺"},
        "answer_idx": "B",
    }
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    text = load_document(path).text
    assert "\nB. 噻吗洛尔\n" in text
    assert "answer_idx：B" in text


async def test_an_item_answers_with_the_keyed_option_and_the_explanation_that_says_it(tmp_path):
    service = library(tmp_path, {"降眼压药.jsonl": GLAUCOMA_DRUGS, "屈光.jsonl": ANATOMY})
    result = await service.ask("降眼压药里，哪个属于α₂受体激动剂？")
    summary = tldr(result.answer)
    assert "溴莫尼定" in summary, result.answer
    assert "噻吗洛尔" not in summary  # the options the key rejects are not the answer
    assert "葡萄膜巩膜" in summary  # the explanation's sentence on it comes along


async def test_why_a_drug_works_is_found_in_the_explanation(tmp_path):
    service = library(tmp_path, {"降眼压药.jsonl": GLAUCOMA_DRUGS, "屈光.jsonl": ANATOMY})
    result = await service.ask("乙酰唑胺利尿很弱，为什么还能拿来降眼压？")
    assert "碳酸酐酶" in tldr(result.answer), result.answer


async def test_the_eye_with_a_condition_is_named_by_the_condition(tmp_path):
    """ "近视眼…": the text says 近视 (近视是…成像于视网膜前方)."""
    service = library(tmp_path, {"降眼压药.jsonl": GLAUCOMA_DRUGS, "屈光.jsonl": ANATOMY})
    result = await service.ask("近视眼成像到底是落在视网膜前面还是后面？")
    assert "视网膜前方" in result.answer.split("### 论据与来源", 1)[0], result.answer


async def test_an_age_limit_asked_of_a_product_is_its_age_range(tmp_path):
    """ "那小朋友能用吗？有没有年龄限制？" after a question naming the product: "用于12岁以上…" answers it, though
    the text never says 儿童 or 年龄."""
    record = {
        "chinese_name": "澄目莫西沙星滴眼液0.5%（演示）",
        "english_name": "Chengmu moxifloxacin eye drops 0.5% (demo)",
        "indication_raw": "1. 用于敏感菌所致的细菌性结膜炎。\n2. 用于12岁以上患者敏感菌所致的睑缘炎、睑腺炎及角膜炎。",
    }
    other = {"chinese_name": "润泽玻璃酸钠滴眼液（演示）", "indication_raw": "用于干眼所致的角结膜上皮损伤。"}
    files = {name: json.dumps(r, ensure_ascii=False) for name, r in [("chengmu.json", record), ("runze.json", other)]}
    service = library(tmp_path, files)
    history = [ChatTurn(role="user", content="澄目（Chengmu）除了结膜炎还能治什么感染？")]
    result = await service.ask("那小朋友能用吗？有没有年龄限制？", history)
    assert "12岁以上" in tldr(result.answer), result.answer


VISUAL_PATHWAY = item(
    "视交叉中央部受损时出现（演示题）",
    ["双眼同向性偏盲", "双眼颞侧偏盲", "同侧眼全盲", "同侧眼鼻侧偏盲", "对侧眼全盲"],
    "B",
    "视交叉中央部是双眼鼻侧视网膜纤维交叉之处，受损时出现双眼颞侧偏盲（B对）。"
    "一侧视束或视辐射受损出现双眼对侧同向性偏盲（A错）。"
    "一侧视神经受损时该眼视觉传入全部中断，出现同侧眼全盲（C错）。"
    "视交叉外侧部受损出现同侧眼鼻侧偏盲（D错）。",
)


async def test_a_follow_up_the_explanation_answers_gets_the_explanation(tmp_path):
    """ "那一侧视神经损伤呢？" after a question on the chiasm: the item's explanation goes through each lesion; the
    answer is its sentence on the optic nerve, not the item's key (the chiasm's answer, already given)."""
    service = library(tmp_path, {"视路.jsonl": VISUAL_PATHWAY, "降眼压药.jsonl": GLAUCOMA_DRUGS})
    history = [ChatTurn(role="user", content="视交叉中央部受压，视野会缺哪一块？")]
    result = await service.ask("如果换成一侧视神经损伤了呢？", history)
    summary = tldr(result.answer)
    assert "同侧眼全盲" in summary and "视神经" in summary, result.answer
    assert "颞侧偏盲" not in summary, summary


def test_an_item_whose_parts_are_records_reads_as_any_record(tmp_path: Path):
    """Options that are records of their own, an explanation that is a mapping: no exam item, and no Python repr."""
    path = tmp_path / "odd.jsonl"
    options = [{"A": "x"}, ["B", "y"]]
    record = {"Question": "演示题？", "Options": options, "Answer": "A", "Explanation": {"text": "解析"}}
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    text = load_document(path).text
    assert "{'" not in text and "['" not in text, text
    assert "解析" in text
