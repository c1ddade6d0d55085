"""Exam question banks and study notes as the web shows them (题库、真题、名词解释): each site writes its items its own
way. The key stands on the item's own line with its reasoning ("正确答案:B 解题思路:…", "正確答案:B解題思路:…"), under a
bare "答案" label ("答案" / "参考答案:A"), at the end of the stem where the blank was ("…细胞分泌D", over options run
together as "A泪腺细胞B睑板腺细胞…"), or as a mark on the right option ("【D】1/6 【此项为本题正确答案】", with "<br />"
left in the saved text); a glossary puts each term alone on a line over its definition ("3.远视:"). A student asks in
everyday words (预兆 for 先兆, 300度 for +3.00D, 超声乳化手术 for 超声乳化白内障吸除术).

Found on the stop-66 blind library (exam banks and study notes). The texts here are written for these tests in our own
words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_news_reports import chat
from test_other_styles import library, tldr

from clincite.ingest.loaders.text import plain_document

OPTOMETRY_ITEMS = (
    "眼视光学练习题（演示材料）\n"
    "1.看近处目标时，眼睛同时发生的近反射是( )\n"
    "A.调节、集合、瞳孔散大\n"
    "B.调节、集合、瞳孔缩小\n"
    "C.调节、散开、瞳孔缩小\n"
    "D.集合、瞳孔散大、眼球外转\n"
    "E.调节、瞳孔散大、眼球外转\n"
    "正确答案:B 解题思路:看近时调节、集合和瞳孔缩小同时出现，合称近反射三联动。\n"
    "5.关于晶状体屈光性手术，错误的是( )\n"
    "A.可矫正超高度近视\n"
    "B.屈光矫正不受角膜厚度限制\n"
    "C.矫正近视时植入凸透镜片\n"
    "D.可能引起继发性青光眼\n"
    "E.术前需评估前房深度\n"
    "正确答案:C 解题思路:晶状体屈光性手术可矫正超高度近视，矫正近视时植入的是凹透镜片人工晶状体。\n"
    "6.远视+3.00D的年轻人注视33cm处目标时，需要付出的调节为( )\n"
    "A.3.00D\n"
    "B.4.00D\n"
    "C.5.00D\n"
    "D.6.00D\n"
    "E.7.00D\n"
    "正确答案:D 解题思路:正视眼看33cm需调节3.00D，远视眼还要加上远视度数，共6.00D。\n"
)

TRADITIONAL_ITEM = (
    "弱視練習題（演示材料）\n"
    "3.遮蓋治療單眼弱視時，應遮蓋\n"
    "A.弱視眼\n"
    "B.視力較好的眼\n"
    "C.雙眼交替\n"
    "D.雙眼\n"
    "E.不需遮蓋\n"
    "正確答案:B解題思路:遮蓋視力較好的眼，迫使弱視眼多用。\n"
)

WORD_PAPER = (
    "眼科护理练习（演示材料）\n\n"
    "14泪液中的黏液层主要由哪种细胞分泌D\n\n"
    "A泪腺细胞B睑板腺细胞C副泪腺细胞D结膜杯状细胞E角膜上皮细胞\n\n"
    "15下列哪项不是急性闭角型青光眼发作期的表现A\n\n"
    "A瞳孔缩小B眼压明显升高C角膜水肿D结膜混合充血E视力骤降\n"
)

BANK_PAGE = (
    "问题\n"
    "单项选择题 A型题\n"
    "下列哪种眼病一般禁用糖皮质激素()\n"
    "A.角膜溃疡\n"
    "B.过敏性结膜炎\n"
    "C.虹膜炎\n"
    "D.巩膜炎\n"
    "E.视神经炎\n"
    "答案\n"
    "参考答案:A\n"
    "解析:激素会延缓角膜上皮修复并加重感染，角膜溃疡一般禁用（演示材料）；真菌性角膜炎也不能用激素。\n"
)

MARKED_PAPER = (
    "眼科学基础知识试卷（演示材料）<br />1.角膜约占眼球外层纤维膜面积的 <br />【score:2 分】 <br /> 【A】1/3 <br />"
    " 【B】1/4 <br /> 【C】1/5 <br /> 【D】1/6 【此项为本题正确答案】 <br /> 【E】1/8 <br />本题思路:角膜位于眼球最"
    "前端，约占外层纤维膜的 1/6，其余为巩膜。 <br />\n"
)

GLOSSARY = (
    "名词解释（演示材料）\n"
    "1.正视:\n"
    "调节静止时，平行光线经眼的屈光系统后恰好在视网膜黄斑中心凹聚焦。\n"
    "2.近视:\n"
    "调节静止时，平行光线经眼的屈光系统后聚焦在视网膜之前。 3.远视:\n"
    "调节静止时，平行光线经眼的屈光系统后聚焦在视网膜之后。\n"
    "4.弱视:\n"
    "视觉发育期内因有效视觉刺激不足，最佳矫正视力低于同龄正常儿童，眼部检查无器质性病变。\n"
)

SHORT_ANSWER = (
    "老年性白内障的治疗（演示材料）\n"
    "白内障的手术方式包括：①白内障囊外摘除术：保留晶状体后囊。②超声乳化白内障吸除术：切口小，多数无需缝合，视力恢复"
    "快，术后散光小。③人工晶状体植入术：矫正术后的屈光状态。\n"
    "早期白内障可试用药物治疗，局部滴药有谷胱甘肽等，但目前尚无确切有效的药物。\n"
)

STUDY_NOTES = (
    "急性闭角型青光眼的特点（演示材料）\n"
    "部分患者在急性大发作前有先兆期，常在情绪激动、长时间在暗处或过度疲劳后于傍晚出现虹视、视物模糊和轻度眼胀，"
    "休息后可自行缓解。\n"
)

STEROID_NOTE = (
    "糖皮质激素在眼科的应用（演示材料）\n"
    "糖皮质激素有抗炎、抗过敏和抑制免疫反应的作用，常用于过敏性眼病和非感染性眼内炎症。"
    "眼科疾病中，真菌性角膜炎和单纯疱疹病毒性角膜炎上皮型不能使用激素眼药水。\n"
)

RED_EYE_NOTE = (
    "红眼病为什么不能包扎（演示材料）\n"
    "得了红眼病（急性结膜炎）后分泌物多，包扎会妨碍分泌物排出，结膜囊温度升高有利于细菌繁殖，还会妨碍点眼药，"
    "所以不宜包扎患眼。\n"
)


WOUND_ANSWER = (
    "角膜伤口的处理（演示材料）\n"
    "答案解析:单纯性角膜伤口较小、对合良好、前房存在时可不缝合；伤口大于3mm多对合不佳，需在显微镜下严密缝合。\n"
)


def exam_library() -> dict[str, str]:
    return {
        "眼视光学-练习题.txt": OPTOMETRY_ITEMS,
        "弱视-练习题.txt": TRADITIONAL_ITEM,
        "眼科护理-练习.txt": WORD_PAPER,
        "激素禁用-单选题.txt": BANK_PAGE,
        "眼科学基础-试卷.txt": MARKED_PAPER,
        "屈光-名词解释.txt": GLOSSARY,
        "老年性白内障-简答题.txt": SHORT_ANSWER,
        "急性闭角型青光眼-特点.txt": STUDY_NOTES,
        "红眼病-包扎.txt": RED_EYE_NOTE,
        "激素-眼科应用.txt": STEROID_NOTE,
        "角膜伤口-处理.txt": WOUND_ANSWER,
    }


async def tldr_of(tmp_path: Path, question: str) -> str:
    """The TL;DR a new chat on the exam library gets for one question."""
    return tldr((await library(tmp_path, exam_library()).ask(question)).answer)


async def test_a_key_with_its_reasoning_on_its_line_keys_the_item(tmp_path: Path):
    """ "正确答案:B 解题思路:…": the key is B, whatever follows it on its line."""
    said = await tldr_of(tmp_path, "看近的时候，眼睛会同时发生哪几种变化？")
    assert "B.调节、集合、瞳孔缩小" in said and "瞳孔散大" not in said, said


async def test_a_traditional_key_glued_to_its_reasoning_keys_the_item(tmp_path: Path):
    said = await tldr_of(tmp_path, "弱视做遮盖治疗，应该遮哪只眼？")
    assert "B.視力較好的眼" in said, said


async def test_a_key_written_at_the_end_of_the_stem_keys_options_run_together(tmp_path: Path):
    """ "…由哪种细胞分泌D" over "A泪腺细胞B睑板腺细胞…": the key is D; "黏糊糊" is how the asker sees the mucus."""
    said = await tldr_of(tmp_path, "眼泪里那层黏糊糊的黏液，是哪种细胞分泌的？")
    assert "D结膜杯状细胞" in said and "A泪腺细胞" not in said, said


async def test_a_key_under_a_bare_answer_label_keys_the_item(tmp_path: Path):
    said = await tldr_of(tmp_path, "哪种眼病不能用激素？")
    assert "A.角膜溃疡；参考答案:A" in said, said


async def test_a_drug_class_against_what_the_text_names_is_not_that_thing(tmp_path: Path):
    """抗真菌 is no 真菌: a bank that only says fungal keratitis forbids steroids does not say which antifungal."""
    service = library(tmp_path, exam_library())
    result = await service.ask("真菌性角膜炎应该用什么抗真菌眼药水？")
    assert not result.citations, result.answer


def test_line_break_tags_left_in_a_saved_page_break_its_lines():
    document = plain_document(MARKED_PAPER, "眼科学基础-试卷")
    assert "<br" not in document.text
    assert "\n【D】1/6 【此项为本题正确答案】\n" in document.text, document.text


async def test_the_option_a_bank_marks_right_is_the_answer(tmp_path: Path):
    """ "【D】1/6 【此项为本题正确答案】" with "本题思路:" after: D is the key, its reasoning is quoted."""
    service = library(tmp_path, exam_library())
    answer = (await service.ask("角膜大概占眼球最外面那层的多少？")).answer
    assert "【D】1/6" in tldr(answer) and "<br" not in answer, answer


def test_a_glossarys_numbered_terms_head_their_definitions():
    """ "3.远视:" run onto the end of the line before, and "4.弱视:" alone on its line, each head what follows."""
    document = plain_document(GLOSSARY, "屈光-名词解释")
    headed = {
        section.heading_path[-1]: document.text[section.start : section.end].strip() for section in document.sections
    }
    assert headed.get("3.远视:", "").startswith("调节静止时"), headed
    assert "之后" not in headed.get("2.近视:", ""), headed


async def test_a_term_asked_of_is_answered_by_its_definition_not_its_neighbours(tmp_path: Path):
    said = await tldr_of(tmp_path, "远视眼看东西时，光线是聚焦到了哪里？")
    assert "聚焦在视网膜之后" in said and "之前" not in said, said


async def test_an_operation_asked_of_is_the_procedure_a_text_names_with_its_own_ending(tmp_path: Path):
    """超声乳化手术 is the text's 超声乳化白内障吸除术: the 术 that ends a procedure's name is the 手术 asked of."""
    said = await tldr_of(tmp_path, "白内障做超声乳化手术，比别的做法有哪些好处？")
    assert "切口小" in said, said


async def test_a_follow_up_naming_only_a_form_of_treatment_goes_on_with_the_disease(tmp_path: Path):
    """ "有哪些眼药水可以先点着？" after 老年性白内障: 眼药水 is a form, no subject of its own; 点 puts the drops in."""
    service = library(tmp_path, exam_library())
    turns = await chat(service, "老年性白内障一般怎么治疗？")
    result = await service.ask("还没到能做手术的时候，有哪些眼药水可以先点着？", turns)
    searched = [q.text for q in result.sub_queries]
    assert any("白内障" in q for q in searched), searched
    assert "谷胱甘肽" in tldr(result.answer), result.answer


async def test_the_askers_word_for_a_warning_sign_is_the_texts(tmp_path: Path):
    said = await tldr_of(tmp_path, "急性青光眼大发作之前会不会有预兆？")
    assert "先兆期" in said, said


async def test_what_the_asker_would_do_it_with_does_not_decide(tmp_path: Path):
    """ "能不能用纱布把眼睛包起来": whether to bandage is asked; a text saying 不宜包扎 answers whatever it names."""
    service = library(tmp_path, exam_library())
    turns = await chat(service, "得了红眼病平时要注意些什么？")
    said = tldr((await service.ask("那能不能用纱布把眼睛包起来？为什么？", turns)).answer)
    assert "不宜包扎" in said, said


async def test_a_refractive_operation_is_the_texts_refractive_operation(tmp_path: Path):
    """屈光手术 written 屈光性手术; the item's key (C, the wrong statement) comes with the reasoning that answers."""
    said = await tldr_of(tmp_path, "超高度近视做晶体植入的屈光手术，放进眼里的是凹镜片还是凸镜片？")
    assert "凹透镜片" in said, said


async def test_the_askers_degrees_are_the_texts_dioptres(tmp_path: Path):
    """远视300度 is +3.00D, 33厘米 is 33cm."""
    said = await tldr_of(tmp_path, "远视300度的年轻人看33厘米远的东西，需要付出多少调节？")
    assert "D.6.00D" in said, said


async def test_the_askers_everyday_words_for_a_wound_and_its_stitches_are_the_texts(tmp_path: Path):
    """破口 is the text's 伤口, 缝针 its 缝合."""
    said = await tldr_of(tmp_path, "角膜破口多大就得缝针？")
    assert "大于3mm" in said, said
