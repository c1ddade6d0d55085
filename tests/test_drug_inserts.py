"""Package inserts of eye medicines (药品说明书) as drug-information sites and pharmacies show them: fields under the
labels the insert format sets, written every way a site writes them — "【禁 忌】" with a space, "[成份]…。 [性状]…"
run on in one line, a label alone on its line above its value, a Traditional page's "不良反應" — and never saying
inside a field what it is about. Each field is read as a section its label heads, under the drug's name, so
"开封以后还能用多久" finds "开封后最多使用四周" among the 注意事项, and every insert's "请将本品放在儿童不能接触的
地方" is no word on whether children may use it.

Found on the stop-55 blind library (package inserts saved from drug sites). The inserts here are written for these
tests in our own words from the usual content of such inserts (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders.text import plain_document
from clincite.offline.questions import analyse

# Labels alone on their lines, as a drug site lays an insert out (no brackets, no colons; a blank line between items).
ATROPINE_GEL = (
    "药品名称\n硫酸阿托品眼用凝胶\n"
    "适应症\n用于眼底检查及验光前散瞳，也用于虹膜睫状体炎（演示材料）。\n"
    "用法用量\n一次1滴，滴于结膜囊内，一日1～3次，或遵医嘱。\n"
    "禁忌\n青光眼及前列腺肥大者禁用。\n"
    "注意事项\n\n1.阿托品类扩瞳药对眼压正常者影响不大，但窄角、浅前房者用药后眼压可明显升高，可能诱发急性闭角型青光眼。"
    "故40岁以上者用药前应先评估前房角。\n\n2.用药后压迫泪囊部2分钟，减少药液经鼻黏膜吸收。\n\n"
    "3.用药后畏光、看近模糊可持续1～2周，其间外出注意遮光。\n\n4.本品性状发生改变时禁止使用。\n\n"
    "5.开封后最多使用四周。\n\n6.请将本品放在儿童不能接触的地方。\n\n"
    "儿童用药\n儿童对阿托品敏感，应在医师指导下减量使用。\n"
)

# 【】 labels, one with a space inside, and a list dash before each, as a price-comparison site shows them.
OLOPATADINE = (
    "- 【警示】处方药须凭处方购买和使用（演示材料）\n"
    "- 【产品名称】盐酸奥洛他定滴眼液\n"
    "- 【适应症】用于治疗过敏性结膜炎的体征和症状。\n"
    "- 【用法用量】每次1～2滴，每日2次，间隔6～8小时。\n"
    "- 【禁 忌】对本品任何成份过敏者禁用。\n"
    "- 【注意事项】1、戴软性角膜接触镜者滴药前取下镜片，滴药10分钟后再戴。2、开盖四周后不再使用。"
    "3、请将本品放在儿童不能接触的地方。\n"
)

# Fields run on in one line after square-bracketed labels.
EYE_DROPS_ONE_LINE = (
    "通用名称:冰片明目滴眼液 [成份]冰片、珍珠层粉（演示材料）。 [功能主治]用于缓解视疲劳。 "
    "[用法用量]滴眼,一次1～2滴,一日4次。 [注意事项]1.打开瓶盖后,15天内用完。2.用药7天症状无缓解,应去医院就诊。\n"
)

# A Traditional page: labels alone on their lines, in Traditional characters.
PVA_TRADITIONAL = (
    "成份\n本品每毫升含聚乙烯醇14毫克（演示材料）。\n"
    "用法用量\n每次一滴,滴於患眼。\n"
    "不良反應\n偶有眼部刺激症狀。\n"
    "注意事項\n配戴軟性隱形眼鏡時勿用此藥。\n"
)


# A patient leaflet of the drug without any label: one instruction a line, the drug called 本品.
LATANOPROST_GUIDE = (
    "拉坦前列素滴眼液为眼科用药，通过增加房水流出降低眼压（演示材料）。\n"
    "用于降低开角型青光眼和高眼压症患者的眼压。\n"
    "推荐剂量为每日1次，每晚1滴。\n"
    "本品每天使用不可超过1次，次数增加反而会削弱降眼压的效果。\n"
    "滴眼液开启4周后不宜再用。\n"
    "如已怀孕或计划怀孕，用药前请告知医生。\n"
)


def inserts(tmp_path: Path):
    return library(
        tmp_path,
        {
            "硫酸阿托品眼用凝胶说明书.txt": ATROPINE_GEL,
            "奥洛他定滴眼液说明书.txt": OLOPATADINE,
            "冰片明目滴眼液说明书.txt": EYE_DROPS_ONE_LINE,
            "聚乙烯醇滴眼液說明書.txt": PVA_TRADITIONAL,
            "拉坦前列素滴眼液用药指导.txt": LATANOPROST_GUIDE,
        },
    )


def headed(text: str, title: str) -> dict[str, str]:
    document = plain_document(text, title)
    return {" > ".join(s.heading_path): document.text[s.start : s.end].strip() for s in document.sections}


def test_each_field_of_an_insert_is_a_section_its_label_heads_under_the_drugs_name():
    sections = headed(ATROPINE_GEL, "说明书")
    assert sections["硫酸阿托品眼用凝胶 > 注意事项"].startswith("1.阿托品类扩瞳药"), sections
    assert sections["硫酸阿托品眼用凝胶 > 禁忌"] == "青光眼及前列腺肥大者禁用。"
    bracketed = headed(OLOPATADINE, "说明书")
    assert bracketed["盐酸奥洛他定滴眼液 > 禁忌"] == "对本品任何成份过敏者禁用。", bracketed  # "【禁 忌】"
    one_line = headed(EYE_DROPS_ONE_LINE, "说明书")
    assert one_line["冰片明目滴眼液 > 功能主治"] == "用于缓解视疲劳。", one_line
    traditional = headed(PVA_TRADITIONAL, "聚乙烯醇滴眼液說明書")  # no name field: the file's name heads them
    assert traditional["聚乙烯醇滴眼液說明書 > 注意事項"] == "配戴軟性隱形眼鏡時勿用此藥。", traditional


def test_an_article_that_names_a_few_fields_in_passing_is_no_insert():
    article = (
        "阿托品滴眼液的用法用量要听医生的（演示材料）。\n不良反应主要是畏光和视近模糊。\n【禁忌】青光眼患者不能用。\n"
    )
    assert all(not section.heading_path for section in plain_document(article, "阿托品").sections)


def test_a_labels_value_on_the_next_line_is_kept():
    """ "禁忌:" alone on its line and its value under it (a site's "label:" then the value): the value is read, not
    lost with a short field's line."""
    page = (
        "通用名称:\n\n某某片（演示材料）\n\n主要成份:\n\n本品主要成份为某某。\n\n适应症:\n\n用于某某。\n\n"
        "批准文号:\n\n国药准字H00000000\n\n禁忌:\n\n1. 严重肾功能不全者禁用本品\n"
    )
    text = plain_document(page, "某某片").text
    assert "严重肾功能不全者禁用本品" in text and "国药准字H00000000" in text, text


async def test_how_long_after_opening_is_found_among_the_inserts_notes(tmp_path: Path):
    """What a drug is used for, said before it ("散瞳验光用的…"), is the asker's setting, not a word the answer must
    repeat: "开封后最多使用四周" answers though the 注意事项 never mention 验光."""
    result = await inserts(tmp_path).ask("散瞳验光用的阿托品眼用凝胶，开封以后还能用多久？")
    assert "开封后最多使用四周" in tldr(result.answer), result.answer


async def test_a_field_of_a_traditional_page_answers_a_simplified_question(tmp_path: Path):
    result = await inserts(tmp_path).ask("聚乙烯醇滴眼液戴软性隐形眼镜时能点吗？")
    assert "配戴軟性隱形眼鏡時勿用此藥" in tldr(result.answer), result.answer


async def test_the_safekeeping_line_is_no_word_on_childrens_use(tmp_path: Path):
    """ "请将本品放在儿童不能接触的地方", in nearly every insert, says where to keep it: asked whether children may use
    a drug whose insert says nothing on them, the answer is that the library does not say."""
    service = inserts(tmp_path)
    said = tldr((await service.ask("奥洛他定滴眼液小孩能用吗？")).answer)
    assert "不能接触的地方" not in said, said
    said = tldr((await service.ask("阿托品眼用凝胶孩子能用吗？")).answer)
    assert "应在医师指导下减量使用" in said and "不能接触的地方" not in said, said


def test_the_kind_a_product_is_named_with_is_another_name_of_it():
    ask = analyse("点必舒这类激素加抗生素的眼药长期用要警惕什么？")
    glossed = {term.text: term.either for term in ask.terms}
    assert glossed["抗生素"] and glossed["激素"] == glossed["抗生素"], glossed


async def test_a_frequency_the_asker_puts_is_answered_by_the_one_the_text_sets_of_本品(tmp_path: Path):
    """ "能不能一天点两次" asks the frequency; "本品每天使用不可超过1次" gives it of the drug the leaflet is titled
    by, though it calls it 本品; the glaucoma the patient has is who asks, and the indication is no answer."""
    said = tldr((await inserts(tmp_path).ask("青光眼病人问拉坦前列素能不能一天点两次，怎么回答？")).answer)
    assert "不可超过1次" in said or "每日1次" in said, said


async def test_how_long_without_effect_before_seeing_a_doctor_is_found_among_the_notes(tmp_path: Path):
    service = inserts(tmp_path)
    asked = "冰片明目滴眼液打开瓶盖后要在多少天内用完？"
    first = await service.ask(asked)
    history = [ChatTurn(role="user", content=asked), ChatTurn(role="assistant", content=first.answer)]
    result = await service.ask("那点了多久没效果要去医院？", history)
    assert "用药7天症状无缓解" in tldr(result.answer), result.answer


async def test_another_drugs_eye_drops_are_no_title_over_the_drug_asked(tmp_path: Path):
    """《拉坦前列素滴眼液用药指导》 is not about 奥洛他定滴眼液 because both are eye drops: its line on pregnancy is no
    answer on olopatadine in pregnancy, of which this library says nothing."""
    result = await inserts(tmp_path).ask("奥洛他定滴眼液孕妇能用吗？")
    assert "拉坦前列素" not in result.answer.split("### 论据与来源", 1)[1], result.answer
    assert "未找到" in tldr(result.answer), result.answer


# An insert a site saved without its labels: each field's value alone on its line, the drug named only by the file.
NAPHAZOLINE_UNLABELLED = (
    "本品为复方制剂，每毫升含盐酸萘甲唑林0.02毫克、马来酸氯苯那敏0.2毫克（演示材料）。\n"
    "辅料为：氯化钠、硼酸、羟苯乙酯。\n"
    "本品为无色澄明液体。\n"
    "用于缓解眼疲劳、结膜充血及眼痒等症状。\n"
    "滴入眼睑内。一次1~2滴，一日3~4次。\n"
    "偶见一过性眼部刺激感。\n"
    "尚不明确。\n"
    "1.本品仅供滴眼用。\n"
    "2.闭角型青光眼患者禁用。\n"
)


async def test_how_often_to_put_drops_in_is_answered_where_the_insert_says_滴(tmp_path: Path):
    """ "一天点几次" puts drops in: the insert writes 滴 ("一次1~2滴，一日3~4次"), never 点, and its dose line is
    the answer, not the line of what each millilitre holds."""
    service = library(tmp_path, {"萘甲唑林氯苯那敏滴眼液-说明书.txt": NAPHAZOLINE_UNLABELLED})
    said = tldr((await service.ask("萘甲唑林氯苯那敏滴眼液一天点几次，每次几滴？")).answer)
    assert "一日3~4次" in said, said
