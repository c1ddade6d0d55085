"""A drug handbook's monographs: the drug's name, then one field a line, each opened by its label ("适应证:…",
"用法用量:…"), kept as plain text or as one JSON string per drug. The label says what the field is about — the
field itself seldom does ("点眼：每次1～2滴，每天2次。" never says 用法) — so each field reads as a section its label
heads; and a question naming the product (奥洛他定滴眼液) finds the monograph titled by the drug (奥洛他定).

Found on the stop-49 blind library (monographs of a Chinese drug handbook, one JSON string each). The monographs here
are written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据); the facts are those of the
products' usual labelling.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_other_styles import conclusion, library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders import load_document
from clincite.ingest.loaders.text import labelled_fields
from clincite.text.tokenizer import get_tokenizer

OLOPATADINE = "\n".join(
    [
        "奥洛他定",
        "药品类型:抗变态反应药物（演示）",
        "英文名:Olopatadine",
        "剂型:滴眼剂：0.1%(5ml)。",
        "适应证:用于过敏性结膜炎所致的眼痒等症状。",
        "不良反应:偶见头痛；滴眼后局部可有短暂烧灼感、刺痛或眼干。",
        "用法用量:滴眼：每次1～2滴，每天2次，两次间隔6～8小时。",
    ]
)
LODOXAMIDE = "\n".join(
    [
        "洛度沙胺",
        "药品类型:过敏反应介质阻释剂（演示）",
        "英文名:Lodoxamide",
        "适应证:春季角结膜炎等过敏性眼病。",
        "禁忌证:1.对本品过敏者禁用。2.妊娠及哺乳妇女禁用。",
        "注意事项:1.本品仅供滴眼，不可注射。2.滴眼液含苯扎氯铵，滴药时应取下软性接触镜，滴药后至少15分钟再戴。",
        "用法用量:点眼：成人及4岁以上儿童每天4次，每次1～2滴。",
    ]
)
TIMOLOL = "\n".join(
    [
        "噻吗洛尔",
        "药品类型:β受体阻滞药（演示）",
        "英文名:Timolol",
        "剂型:滴眼液：0.25%、0.5%(5ml)。",
        "适应证:开角型青光眼及高眼压症。",
        "禁忌证:支气管哮喘或有支气管哮喘史者、严重慢性阻塞性肺疾病、窦性心动过缓、二度或三度房室传导阻滞者禁用。",
        "用法用量:滴眼：0.5%滴眼液每次1滴，每天2次。",
    ]
)
CROMOGLICATE = "\n".join(
    [
        "色甘酸钠",
        "药品类型:过敏反应介质阻释剂（演示）",
        "适应证:过敏性鼻炎、支气管哮喘；滴眼剂用于过敏性结膜炎。",
        "用法用量:1.吸入：每次20mg，每天4次。2.滴眼：2%滴眼液每次1～2滴，每天4次。",
    ]
)

QIJU = "\n".join(
    [
        "杞菊地黄丸",
        "药品类型:中成药（演示）",
        "适应证:滋肾养肝。用于肝肾阴亏，眩晕耳鸣，羞明畏光，迎风流泪，视物昏花。",
        "用法用量:口服，浓缩丸一次8丸，一日3次。",
    ]
)


def as_json_string(monograph: str) -> str:
    return json.dumps(monograph, ensure_ascii=False, indent=1)


def headings(document) -> list[str]:
    return [s.heading_path[-1] for s in document.sections if s.heading_path]


def test_a_monograph_kept_as_one_json_string_reads_as_fields_under_their_labels(tmp_path: Path):
    path = tmp_path / "奥洛他定.json"
    path.write_text(as_json_string(OLOPATADINE), encoding="utf-8")
    document = load_document(path)
    assert document.title == "奥洛他定"
    assert {"适应证", "不良反应", "用法用量"} <= set(headings(document)), document.text
    dose = next(s for s in document.sections if s.heading_path == ["用法用量"])
    assert "每次1～2滴，每天2次" in document.text[dose.start : dose.end]
    assert "用法用量:" not in document.text  # the label heads its field: it is no sentence of the field
    assert "英文名:Olopatadine" in document.text  # a short field stays one line, as written
    assert document.text.count("奥洛他定") == 1  # the name line is the title, said once


def test_a_plain_text_monograph_reads_the_same_way(tmp_path: Path):
    path = tmp_path / "洛度沙胺.txt"
    path.write_text(LODOXAMIDE, encoding="utf-8")
    document = load_document(path)
    assert {"禁忌证", "注意事项", "用法用量"} <= set(headings(document)), document.text


def test_a_transcript_or_an_article_with_a_few_labels_is_no_monograph():
    transcript = "\n".join(
        ["患者：眼睛痒两天了（演示）。", "医生：有没有分泌物？", "患者：早上有一点。", "医生：先用人工泪液。"]
    )
    article = "\n".join(
        [
            "过敏性结膜炎是常见的眼表疾病，春秋季多发（演示）。",
            "注意：不要揉眼。",
            "治疗以避免接触过敏原为先，必要时在医生指导下使用抗过敏滴眼液。",
            "冷敷可以缓解眼痒。",
        ]
    )
    assert labelled_fields(transcript) is None
    assert labelled_fields(article) is None


def test_a_product_name_in_a_question_meets_the_drug_a_monograph_is_titled_by():
    tokens = get_tokenizer().tokenize("奥洛他定滴眼液一天点几次？")
    assert "奥洛他定" in tokens


def library_of_monographs(tmp_path: Path):
    return library(
        tmp_path,
        {
            f"{name}.json": as_json_string(text)
            for name, text in [
                ("奥洛他定", OLOPATADINE),
                ("洛度沙胺", LODOXAMIDE),
                ("噻吗洛尔", TIMOLOL),
                ("色甘酸钠", CROMOGLICATE),
                ("杞菊地黄丸", QIJU),
            ]
        },
    )


async def after(service, question: str) -> list[ChatTurn]:
    """The chat after one question and its report, as the app passes it with the next question."""
    first = await service.ask(question)
    return [ChatTurn(role="user", content=question), ChatTurn(role="assistant", content=first.answer)]


async def test_the_dose_of_an_eye_drop_is_answered_from_its_own_monograph(tmp_path: Path):
    service = library_of_monographs(tmp_path)
    result = await service.ask("奥洛他定滴眼液一天点几次，每次几滴？")
    assert "每天2次" in tldr(result.answer), result.answer
    assert "来源：《奥洛他定》" in result.answer  # cited by its name, as a clinician says it, not "奥洛他定.json"
    assert result.citations and {Path(c.source).stem for c in result.citations} == {"奥洛他定"}, result.citations


async def test_who_must_not_use_it_is_read_under_its_label(tmp_path: Path):
    service = library_of_monographs(tmp_path)
    result = await service.ask("噻吗洛尔眼药水，哪些人不能用？")
    assert "支气管哮喘" in tldr(result.answer), result.answer


async def test_a_follow_up_on_pregnancy_is_answered_for_the_drug_asked_about(tmp_path: Path):
    service = library_of_monographs(tmp_path)
    result = await service.ask("那孕妇能用吗？", await after(service, "洛度沙胺滴眼液一天滴几次？"))
    assert "妊娠及哺乳妇女禁用" in result.answer, result.answer


async def test_what_the_drug_is_asked_as_used_for_does_not_have_to_be_in_its_dose(tmp_path: Path):
    """ "…治过敏性结膜炎眼痒，一天点几次？": the monograph's 用法用量 does not repeat its 适应证."""
    service = library_of_monographs(tmp_path)
    result = await service.ask("奥洛他定滴眼液治过敏性结膜炎眼痒，一天点几次？")
    assert "每天2次" in conclusion(result.answer), result.answer
    result = await service.ask("孕妇得了过敏性结膜炎，能用洛度沙胺滴眼液吗？")
    assert "妊娠及哺乳妇女禁用" in tldr(result.answer), result.answer


async def test_each_drug_s_figure_is_answered_though_the_text_never_says_concentration(tmp_path: Path):
    service = library_of_monographs(tmp_path)
    result = await service.ask("奥洛他定和噻吗洛尔的滴眼液，浓度分别是多少？")
    summary = tldr(result.answer)
    assert "0.1%" in summary and "0.5%" in summary, result.answer


async def test_what_a_medicine_treats_is_asked_by_can_it_treat(tmp_path: Path):
    service = library_of_monographs(tmp_path)
    result = await service.ask("杞菊地黄丸能治哪些眼睛的毛病？")
    assert "羞明畏光" in tldr(result.answer), result.answer


async def test_asked_only_for_whom_a_follow_up_stays_on_the_drug_before(tmp_path: Path):
    """ "孕妇能用吗？" after a question on 噻吗洛尔: its monograph says nothing of pregnancy; another drug's does,
    which answers nothing of what was asked."""
    service = library_of_monographs(tmp_path)
    result = await service.ask("孕妇能用吗？", await after(service, "噻吗洛尔滴眼液一天点几次？"))
    assert "未找到" in tldr(result.answer) and not result.citations, result.answer


async def test_who_is_asked_of_in_the_same_message_stays_on_its_drug(tmp_path: Path):
    """ "…？有哮喘的人能用吗？": the people with asthma are whom the second question asks of, the drug is the first's;
    a library without that drug's monograph has nothing on it, whatever it says of asthma elsewhere."""
    service = library_of_monographs(tmp_path)
    result = await service.ask("噻吗洛尔滴眼液一天点几次？有哮喘的人能用吗？")
    assert "每天2次" in conclusion(result.answer) and "支气管哮喘" in conclusion(result.answer), result.answer
    result = await service.ask("卡替洛尔滴眼液一天点几次？有哮喘的人能用吗？")
    assert "未找到" in tldr(result.answer) and not result.citations, result.answer


async def test_an_item_s_number_is_no_count_and_the_second_question_stays_on_the_drug(tmp_path: Path):
    """ "2.滴眼液含…" is item 2, not "2滴"; "每次滴几滴？" after "洛度沙胺滴眼液一天滴几次？" asks of 洛度沙胺
    (which jieba cuts into two words it does not know), not of 色甘酸钠's drops."""
    service = library_of_monographs(tmp_path)
    result = await service.ask("洛度沙胺滴眼液一天滴几次？每次滴几滴？")
    summary = tldr(result.answer)
    assert "每天4次" in summary and "接触镜" not in summary, result.answer
    assert {Path(c.source).stem for c in result.citations} == {"洛度沙胺"}, result.citations
