"""A drug register exported as JSON (one product a file, as a regulator's open data or a pharmacy's database keeps it):
the product is cited by its Chinese name, its bookkeeping (ids, statuses, timestamps, paths) is never a passage, each
ingredient is one line that says what it is (name, role, strength together), and the licence's indication text is
labelled as the indication — and a clinician's question about one product ("清视达（Qingshida）里面加的防腐剂是
哪一种？") is answered from that product's record.

Found on the stop-46 blind library (a pharmacist's database of Taiwan FDA eye-drug licences). Every product here is
invented for these tests (演示材料：虚构产品); the indications are written in our own words and are not clinical
guidance.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders import load_document
from clincite.offline.questions import analyse
from clincite.text.tokenizer import get_tokenizer

DEMO_NOTE = "演示材料：虚构产品，仅用于软件测试，不作为用药依据"


def product(number: int, chinese: str, english: str, indication: str, substances: list[dict]) -> dict:
    product_id = f"eye_demo_{number:03d}"
    licence = f"演示药证字第00{number}号"
    return {
        "product_id": product_id,
        "license_number": licence,
        "chinese_name": chinese,
        "english_name": english,
        "note": DEMO_NOTE,
        "dosage_form_raw": "滴眼液",
        "dosage_form_normalized": "ophthalmic_solution",
        "indication_raw": indication,
        "license_status": "active",
        "substances": [
            {"product_id": product_id, "license_number": licence, "substance_id": f"sub_{number}{i}", **s}
            for i, s in enumerate(substances)
        ],
        "sources": [
            {
                "source_id": f"src_{product_id}_core",
                "product_id": product_id,
                "source_detail": "data/demo_rebuild/core/",
                "status": "core_complete_optional_missing",
                "checked_at": "2026-07-14T01:43:31+08:00",
            }
        ],
    }


QINGSHIDA = product(
    1,
    "清视达左氧氟沙星滴眼液0.5%",
    "Qingshida levofloxacin eye drops 0.5%",
    "用于治疗敏感菌引起的细菌性结膜炎、角膜炎、睑缘炎、泪囊炎及睑腺炎等外眼部细菌感染。",
    [
        {"substance_raw": "LEVOFLOXACIN", "substance_role": "active", "strength": "5.000000", "unit": "MG"},
        {
            "substance_raw": "Benzalkonium Chloride",
            "substance_role": "preservative",
            "formulation_function": "preservative / antimicrobial preservative",
        },
    ],
)
RUNMOUAN = product(
    2,
    "润眸安玻璃酸钠滴眼液0.1%",
    "Runmouan sodium hyaluronate eye drops 0.1%",
    "用于干眼等内因性疾患，以及手术后、外伤或配戴角膜接触镜等外因性疾患所致的角结膜上皮损伤。",
    [{"substance_raw": "Sodium Hyaluronate", "substance_role": "active", "strength": "1.000000", "unit": "MG"}],
)
MINGJIENING = product(
    3,
    "明睫宁氟米龙滴眼液0.1%",
    "Mingjiening fluorometholone eye drops 0.1%",
    "用于对糖皮质激素敏感的眼睑、球结膜、角膜及眼前段组织的炎症。",
    [
        {"substance_raw": "FLUOROMETHOLONE", "substance_role": "active", "strength": "1.000000", "unit": "MG"},
        {"substance_raw": "Chlorobutanol", "substance_role": "preservative"},
    ],
)
REGISTER = {"qingshida.json": QINGSHIDA, "runmouan.json": RUNMOUAN, "mingjiening.json": MINGJIENING}


def files(records: dict[str, dict]) -> dict[str, str]:
    return {name: json.dumps(record, ensure_ascii=False, indent=6) for name, record in records.items()}


def test_a_register_record_is_cited_by_its_chinese_name_without_its_bookkeeping(tmp_path: Path):
    path = tmp_path / "qingshida.json"
    path.write_text(files({"qingshida.json": QINGSHIDA})["qingshida.json"], encoding="utf-8")
    document = load_document(path)
    assert document.title == "清视达左氧氟沙星滴眼液0.5%"
    for bookkeeping in ("eye_demo_001", "sub_10", "core_complete_optional_missing", "2026-07-14T", "data/demo"):
        assert bookkeeping not in document.text, bookkeeping
    assert document.text.count("演示药证字第001号") == 1  # every ingredient repeats it; it is said once
    preservative = next(line for line in document.text.splitlines() if "Benzalkonium Chloride" in line)
    assert "preservative" in preservative  # the ingredient and its role on one line
    assert "indication_raw：用于治疗敏感菌" in document.text  # the indication says it is the indication


async def test_which_preservative_a_product_holds_is_answered_from_its_record(tmp_path):
    service = library(tmp_path, files(REGISTER))
    result = await service.ask("清视达（Qingshida）里面加的防腐剂是哪一种？")
    assert "Benzalkonium Chloride" in tldr(result.answer), result.answer
    assert result.citations and result.citations[0].source == "清视达左氧氟沙星滴眼液0.5%"


async def test_what_else_a_named_product_treats_is_its_indication(tmp_path):
    service = library(tmp_path, files(REGISTER))
    result = await service.ask("清视达（Qingshida）除了细菌性结膜炎，还能治哪些眼部感染？")
    assert "睑缘炎" in tldr(result.answer), result.answer


def test_a_product_named_and_glossed_is_what_is_asked_about():
    """jieba cuts the unknown 清视达 into 清视 / 达: the gloss names the whole name, which is the question's subject
    and the one a follow-up carries on."""
    ask = analyse("清视达（Qingshida）除了细菌性结膜炎，还能治哪些眼部感染？")
    assert ask.subject == "清视达"
    assert "达" not in {t.text for t in ask.terms}
    follow = analyse("那小朋友能用吗？", ["清视达（Qingshida）除了细菌性结膜炎，还能治哪些眼部感染？"])
    assert "清视达" in follow.resolved


def test_a_word_the_search_names_twice_leaves_the_words_between_their_own():
    """ "…的适应证 清视达 严重 干眼 适应症": 适应证 and 适应症 are one concept named twice, not one span that swallows
    the product's name between them (BM25 would count the name only as one more way of saying 适应证)."""
    groups = get_tokenizer().query_groups("Qingshida的适应证 清视达 严重 干眼 适应症")
    assert [["清视"]] in groups
    assert not any("清视" in alternative and "适应证" in alternative for group in groups for alternative in group)


def test_what_a_product_is_for_and_what_it_holds_are_asked_as_such():
    assert "用途" in analyse("润眸安是治什么的？").aspects
    assert "用途" in analyse("这支眼膏是做什么用的？").aspects
    assert "成分" in analyse("润眸安的主成分是什么？").aspects


def test_a_product_named_before_the_question_is_no_scene_of_the_askers():
    """ "润眸安除了干眼，还能用在什么情况？": the clause before the one that asks names the product; a name no
    dictionary word makes is what is asked about, not the asker's story."""
    ask = analyse("润眸安除了干眼，还能用在什么情况？")
    assert not next(t for t in ask.terms if t.text == "润眸安").scene


async def test_a_strain_named_the_other_way_still_finds_the_indication(tmp_path):
    record = product(
        4,
        "澈明莫西沙星滴眼液0.5%",
        "Cheming moxifloxacin eye drops 0.5%",
        "用于治疗由敏感菌（包括金黄色葡萄球菌、铜绿假单胞菌等）引起的细菌性结膜炎。",
        [{"substance_raw": "MOXIFLOXACIN", "substance_role": "active", "strength": "5.000000", "unit": "MG"}],
    )
    service = library(tmp_path, files({**REGISTER, "cheming.json": record}))
    result = await service.ask("澈明（Cheming）能用在绿脓杆菌引起的结膜炎吗？")
    assert "铜绿假单胞菌" in tldr(result.answer), result.answer


def test_a_name_jieba_glued_to_the_word_after_it_is_the_name():
    """ "润眸安是治什么的？": jieba, not knowing 润眸安, reads 润眸安是 as one word; the extract was labelled
    "润眸安是的用途" and the search looked for 润眸安是."""
    assert analyse("润眸安是治什么的？").subject == "润眸安"
    assert analyse("角膜塑形镜是什么？").subject == "角膜塑形镜"


def test_an_ingredient_line_names_each_value_once(tmp_path: Path):
    """substance_raw "Cetrimide" and substance_normalized "cetrimide": the line says it once."""
    record = product(
        5,
        "净瞳凝胶（演示）",
        "Jingtong gel",
        "用于干眼。",
        [{"substance_raw": "Cetrimide", "substance_normalized": "cetrimide"}],
    )
    path = tmp_path / "jingtong.json"
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    line = next(line for line in load_document(path).text.splitlines() if "Cetrimide" in line)
    assert "cetrimide" not in line


async def test_a_products_strength_asked_after_it_is_the_figure_its_record_gives(tmp_path):
    """ "那它的浓度是多少？": the record's licence line and its English name's line score alike for a question that
    names nothing of its own; the one giving a 浓度 ("…EMULSION 0.05%") answers, not the first."""
    record = product(
        6,
        "丽明乳剂（演示）",
        "LIMING OPHTHALMIC EMULSION 0.05%",
        "用于干眼伴角结膜上皮损伤、且局部抗炎治疗无效的患者。",
        [{"substance_raw": "CYCLOSPORIN", "substance_role": "active", "strength": "0.500000", "unit": "MG"}],
    )
    service = library(tmp_path, files({**REGISTER, "liming.json": record}))
    history = [ChatTurn(role="user", content="丽明（Liming）不是干眼就能用吧？要符合什么条件？")]
    result = await service.ask("那它的浓度是多少？", history)
    assert "0.05%" in tldr(result.answer), result.answer


async def test_a_tldr_reads_a_fields_value_not_the_programs_name_for_it(tmp_path):
    """The passage keeps "indication_raw：…" (the quote shows which field it is); the TL;DR a clinician reads first
    says the indication, not the database's name for it."""
    service = library(tmp_path, files(REGISTER))
    result = await service.ask("明睫宁（Mingjiening）是治什么的？")
    summary = tldr(result.answer)
    assert "炎症" in summary and "indication_raw" not in summary, result.answer
    assert "indication_raw" in result.answer.split("### 论据与来源", 1)[1]
