"""Texts of Chinese medicine and of a clinic's check-ups (found on the stop-38 and stop-41 blind libraries: a
中医眼科 textbook and the classical 《审视瑶函》), and the ways a patient asks of them:

- a disease has its 中医 name in the text (偷针、天行赤眼) and its modern or everyday one in the question
  (针眼、红眼病): the lexicon knows the textbook correspondences;
- the asker's own reading written onto the subject ("右眼眼压19") says whose, not which: a text on 眼压 answers;
- "会不会" asked inside a clause ("一天里会不会…") is not glued to the word before it;
- "会影响视力吗？" in a chat opens with its verb: its subject is the chat's (红眼病), and 视力 is what is asked of it;
- a grade a clinician's notes write in English (Mild / Moderate / Severe) is the asker's 轻度、中度、重度, and the
  device they name in English (punctal plug) the asker's 泪点塞;
- "能延缓多少" asks the effect; a sentence that says it speaks of the subject its paragraph named before it;
- "男的多还是女的多" asks who gets it, not a comparison of 男 and 女: 男性、女性、妇女 answer it.

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.offline.questions import analyse

TCM_NOTES = """# 中医眼科常见病证（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 偷针

又名土疳。胞睑边缘生小疖，红肿疼痛，形如麦粒。多因脾胃积热，或外感风热，客于胞睑所致。轻者可自行消散，重者溃破排脓。

## 天行赤眼

白睛突然红赤，眵多流泪，传染性强，常在学校、家庭中流行。一般不侵犯黑睛，对视力影响较小。患者用过的毛巾、脸盆应消毒。

## 绿风内障

发病急骤，头眼剧痛，视力骤降，瞳神散大，眼珠胀硬如石。本病女性多见，常在情绪激动或暗处久留后发作。
"""

PTERYGIUM_NOTES = """# 翼状胬肉（演示）

本文为演示材料，用于软件测试，不作为临床依据。

翼状胬肉多见于户外工作者，病变进展缓慢。胬肉长入角膜、遮挡瞳孔时会影响视力，宜手术切除。
"""

CHECKUP_NOTES = """# 眼压检查（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 指测法

嘱被检者双眼向下注视，检查者以两手食指尖交替轻压上睑，估计眼球的软硬。

## 眼压计测量

测量前滴表面麻醉药，被检者平卧，双眼向上注视，将眼压计轻放于角膜中央读数。我国人正常眼压为10～21毫米汞柱。正常人24小时内眼压有波动，波动幅度一般不超过8毫米汞柱，双眼眼压差一般不超过5毫米汞柱。
"""


async def test_a_disease_asked_by_its_modern_name_is_found_under_its_chinese_medicine_name(tmp_path):
    service = library(tmp_path, {"中医眼科常见病证（演示）.md": TCM_NOTES, "翼状胬肉（演示）.md": PTERYGIUM_NOTES})
    result = await service.ask("眼皮上长了个针眼，是怎么引起的？")
    assert "脾胃积热" in tldr(result.answer), result.answer[:400]
    first = "孩子学校好多人得了红眼病，平时要注意些什么？"
    history = [ChatTurn(role="user", content=first), ChatTurn(role="assistant", content="……")]
    result = await service.ask("会影响视力吗？", history)
    assert "对视力影响较小" in tldr(result.answer), result.answer[:400]


async def test_men_or_women_is_answered_by_the_texts_words_for_them(tmp_path):
    service = library(tmp_path, {"中医眼科常见病证（演示）.md": TCM_NOTES})
    result = await service.ask("绿风内障是男的多还是女的多？")
    assert "女性多见" in tldr(result.answer), result.answer[:400]


async def test_the_askers_own_reading_does_not_narrow_the_subject(tmp_path):
    service = library(tmp_path, {"眼压检查（演示）.md": CHECKUP_NOTES})
    question = "上周体检，护士说我右眼眼压19，左眼20，让我别紧张。我们中国人的眼压多少算正常？一天里会不会上下变？"
    result = await service.ask(question)
    lead = tldr(result.answer)
    assert "10～21毫米汞柱" in lead and "一般不超过8毫米汞柱" in result.answer, result.answer[:600]
    assert "会否" not in result.answer, result.answer[:600]  # not a part labelled "里会否"


DRY_EYE_NOTES = """# 乾眼症筆記（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 治療：根據嚴重程度

### Mild：保濕、多眨眼、人工淚液

### Moderate：不含防腐劑的人工淚液、topical cyclosporine-A、punctal plug（塞住淚小管）

### Severe：自體血清眼藥水、繃帶隱眼(bandage contact lens)
"""


async def test_a_grade_written_in_english_is_the_askers_grade(tmp_path):
    service = library(tmp_path, {"乾眼症筆記（演示）.md": DRY_EYE_NOTES})
    result = await service.ask("中度的干眼，人工泪液之外还能用哪些办法？听说有种泪点塞子？")
    assert "punctal plug" in tldr(result.answer), result.answer[:400]


def test_how_many_millimetres_asks_a_length():
    assert analyse("提上睑肌肌力正常应该有几毫米？").quantity == "长度"
    assert analyse("一次吃几毫克？").quantity == "剂量"


MYOPIA_OPTIONS = """# 近视管理选项（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 可选的方法

如果孩子近视加深较快，医生可能会讨论近视管理。

**低浓度阿托品滴眼液**——常用浓度为0.01%～0.05%，每晚睡前滴一次。多项研究显示可减缓近视进展约30%～60%。

**角膜塑形镜**——夜间佩戴的硬性接触镜，早上取下。研究显示可以显著减缓近视进展，效果较好。
"""


async def test_a_sentence_saying_what_is_asked_speaks_of_the_subject_its_paragraph_named(tmp_path):
    """Every word of "低浓度阿托品能延缓多少近视进展" is a subject, and 延缓 asks the effect: the sentence of the
    drug's paragraph that gives it answers — not the one naming the drug with another figure (its concentration), nor
    the next paragraph's, on another option, that says more words about 效果."""
    service = library(tmp_path, {"近视管理选项（演示）.md": MYOPIA_OPTIONS})
    result = await service.ask("低浓度阿托品大概能延缓多少近视进展？")
    assert "30%～60%" in tldr(result.answer), result.answer[:400]


def test_another_question_announced_in_passing_is_not_searched_for_its_announcement():
    """ "另外想顺便问一下，…" only announces the question: 顺便 is no word to search."""
    assert "顺便" not in [t.text for t in analyse("另外想顺便问一下，胬肉要做手术吗？").terms]


SPECTACLES = """# 离焦框架眼镜（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 佩戴要求与适用人群

### 佩戴时间

离焦框架眼镜需要全天足时佩戴才能发挥效果，一般建议每天佩戴不少于12小时，看远看近均不摘镜。

### 适用人群

离焦框架眼镜适用于大多数需要近视防控的学龄儿童和青少年，尤其适合不愿意佩戴角膜接触镜的儿童。
"""


async def test_the_section_labelled_with_the_aspect_answers_before_its_sibling(tmp_path):
    """Both sections sit under "佩戴要求与适用人群": the one labelled 适用人群 itself answers "适合哪些孩子"."""
    service = library(tmp_path, {"离焦框架眼镜（演示）.md": SPECTACLES})
    result = await service.ask("离焦框架眼镜适合哪些孩子？")
    assert tldr(result.answer).startswith("离焦框架眼镜适用于大多数"), result.answer[:400]
