"""A hospital's patient-education leaflets and a clinic's care notes (found on the stop-42 blind library: one-page
PDF leaflets of a hospital, in Traditional Chinese), and the ways a patient asks of them:

- a numbered item of its own paragraph may run over two sentences ("（1）…配合治疗。病人应心情舒畅…"): the list
  still goes on, and "注意哪些" is answered with all of it;
- "九、避免眼压上升应注意事项：" with its "（一）…（四）": a list inside a list; "十、" is the outer list's, not the
  inner one's fifth item;
- "灌不通怎么办": the verb and the result that did not come ("灌通") are the word a text writes ("若无法灌通");
- "高铁票买错了日期": words of the asker's everyday scene shared with a passage ("姿势错误") do not make it an answer;
- a leaflet's form fields read across by the PDF reader ("编制订日期号 N 20 D 0 儿 3. - 0 0 0 0 9") are no text,
  and the sentence read onto them is quoted without them;
- 提醒、叮嘱 only say who tells whom; a 中医 text's 〔调护〕 is its care advice, and 五风内障 its name for 青光眼.

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import library, tldr

from clincite.offline.questions import analyse

GLAUCOMA_CARE = """# 五风内障（演示）

本文为演示材料，用于软件测试，不作为临床依据。

五风内障包括青风、绿风、黑风、乌风、黄风内障，病情凶险，须早诊早治。

〔调护〕

对本病患者应采取以下措施：

（1）按时点用降眼压药，不可自行停药。病人应心情舒畅，生活规律。

（2）避免在暗处久留，少看电影。

（3）饮食清淡，戒烟限酒。

（4）保持大便通畅。
"""

EYE_SURGERY_LEAFLET = """# 眼睛手術後之注意事項（演示）

本文為演示材料，用於軟體測試，不作為臨床依據。

當接受眼部手術後，居家生活中請您注意以下叮嚀:

一、接觸患眼前，應先洗手。

二、依醫囑，按時點眼藥。

三、避免揉眼睛，減少彎腰動作。
四、避免眼壓上升應注意事項：

(一)勿做劇烈活動，如：用力跑步、跳躍。

(二)勿提重物。

(三)勿用力咳嗽、打噴嚏。

(四)應預防便秘，避免用力解便。

五、飲食方面無特殊限制，宜採均衡飲食。

六、出院後，應定時門診追蹤。
"""

INTUSSUSCEPTION_LEAFLET = """# 小兒腸套疊（演示）

本文為演示材料，用於軟體測試，不作為臨床依據。

一、何謂腸套疊：

腸套疊是小兒常見的腹部急症之一，指某段腸管套入其遠端的腸管中。

二、腸套疊的治療:

急性腸套疊症狀若發生在四十八小時內，可先行灌腸治療進行腸道復位，成功率約八到九成。若無法灌通或復發多次，則需進行外科手術處理。

三、 居家照護注意事項：

1.經灌腸復原後，需住院觀察至少24小時，確定沒問題才能出院。一旦再發生類似的症狀時，必須趕快送醫處理。

2.恢復飲食時，先以易消化的食物為主。
"""

RETINA_LEAFLET = """編 號 | ND外-000
編 號：製訂日期 | ND外-000：2004.10

示範醫院衛教單編製訂日期號 N 20 D 0 外 4. - 0 0 0 0 2網膜剝離手術或玻璃體切除修日期 2020.11

本文為演示材料，用於軟體測試，不作為臨床依據。

一、手術當天儘量臥床休息，若無特別醫囑則睡向健側(非手術的那一側)。

二、手術後一週內，請儘量臥床休息，避免閱讀書報，避免引起眼球快速轉動而造成不適。
"""

# how the PDF reader reads the leaflet's form (編號、製訂日期、修訂日期 in boxes) onto the first line of its text
FORM_FIELDS = "示範醫院衛教單編製訂日期號 N 20 D 0 兒 3. - 0 0 0 0 9認識新生兒黃疸修日期 2021.09"

JAUNDICE_LEAFLET = f"""# 認識新生兒黃疸（演示）

本文為演示材料，用於軟體測試，不作為臨床依據。

{FORM_FIELDS}◎生理性黃疸：出生後第4-5天達高峰，大約於出生第10天消退。

母乳餵食性黃疸：未能吃足夠的母乳或含乳姿勢錯誤導致無效吸吮，可能會脫水引起黃疸。
"""

LEAFLETS = {
    "眼睛手術後之注意事項（演示）.md": EYE_SURGERY_LEAFLET,
    "小兒腸套疊（演示）.md": INTUSSUSCEPTION_LEAFLET,
    "認識新生兒黃疸（演示）.md": JAUNDICE_LEAFLET,
}


async def test_a_care_list_whose_items_run_over_sentences_is_answered_whole(tmp_path):
    service = library(tmp_path, {"五风内障（演示）.md": GLAUCOMA_CARE})
    result = await service.ask("我爸刚确诊青光眼，平时生活上我们家属要提醒他注意哪些？")
    said = tldr(result.answer)
    assert "暗处久留" in said and "戒烟限酒" in said and "大便通畅" in said, result.answer[:600]


async def test_a_list_inside_a_list_is_quoted_without_the_outer_lists_next_item(tmp_path):
    service = library(
        tmp_path,
        {"眼睛手術後之注意事項（演示）.md": EYE_SURGERY_LEAFLET, "認識新生兒黃疸（演示）.md": JAUNDICE_LEAFLET},
    )
    result = await service.ask("眼睛做完手术，医生说要防止眼压升高，平时生活里哪些动作要避免？")
    said = tldr(result.answer)
    assert "勿提重物" in said and "預防便秘" in said, result.answer[:600]
    assert "飲食方面" not in said, said


def test_a_result_that_did_not_come_is_searched_as_the_text_names_the_result():
    words = [t.text for t in analyse("要是灌肠灌不通怎么办？").terms]
    assert "灌通" in words and "不通" not in words, words  # the leaflet: "若無法灌通或復發多次，則需進行外科手術處理"
    assert "冲出来" in [t.text for t in analyse("睫毛掉进眼睛里冲不出来怎么办？").terms]


def test_which_side_is_what_is_asked_not_a_word_to_find():
    words = [t.text for t in analyse("我妈视网膜脱离刚做完手术，回家睡觉应该朝哪边躺？").terms]
    assert "哪边" not in words and "躺" in words, words
    words = [t.text for t in analyse("头痛看完急诊回家，眼睛看东西有问题算不算？").terms]
    assert "算不算" not in words, words  # 算不算 asks whether, as 是不是 does: never the subject of the next question
    variants = next(t.variants for t in analyse("视网膜脱离术后多久能坐飞机？").terms if t.text == "视网膜脱离")
    assert "网膜剥离" in variants  # the leaflet's 網膜剝離


async def test_words_of_the_askers_everyday_scene_alone_do_not_answer(tmp_path):
    service = library(
        tmp_path, {"認識新生兒黃疸（演示）.md": JAUNDICE_LEAFLET, "小兒腸套疊（演示）.md": INTUSSUSCEPTION_LEAFLET}
    )
    result = await service.ask("高铁票买错了日期，可以改签吗？")
    assert result.citations == [], result.answer[:400]
    assert "未找到" in result.answer
    # the library's own subject, asked in the same everyday words, is still answered
    result = await service.ask("孩子吃母乳的姿势错了，会引起黄疸吗？")
    assert "無效吸吮" in tldr(result.answer), result.answer[:400]


async def test_form_fields_read_across_are_never_quoted(tmp_path):
    service = library(tmp_path, LEAFLETS)
    result = await service.ask("新生儿生理性黄疸一般第几天最厉害？什么时候退？")
    said = tldr(result.answer)
    assert "第4-5天達高峰" in said and "0 0 0" not in said, said


async def test_the_leaflets_form_is_no_answer_to_a_why(tmp_path):
    service = library(tmp_path, {**LEAFLETS, "網膜剝離手術注意事項（演示）.txt": RETINA_LEAFLET})
    result = await service.ask("视网膜手术后第一周能看书看报吗？为什么不行？")
    said = tldr(result.answer)
    assert "避免閱讀書報" in said, result.answer[:600]
    assert "編 號" not in said and "2020.11" not in said, said


def test_a_form_field_left_after_the_run_is_more_of_the_form_and_a_sentence_after_it_is_text():
    from clincite.text.units import sentences

    first_line = FORM_FIELDS.replace("認識新生兒黃疸", "網膜剝離手術")  # nothing after it ends a sentence
    text = f"{first_line}\n{FORM_FIELDS}◎生理性黃疸：出生後第4-5天達高峰。\n"
    read = [text[a:b] for a, b in sentences(text)]
    assert read[0] == first_line  # one unit, never quoted (spaced out)
    assert read[-1] == FORM_FIELDS.split("0 9")[-1] + "◎生理性黃疸：出生後第4-5天達高峰。", read


def leaflet_pdf(path, title: str, lines: list[str]) -> None:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    page = canvas.Canvas(str(path))
    page.setTitle(title)
    page.setFont("STSong-Light", 11)
    for i, line in enumerate(lines):
        page.drawString(72, 750 - 18 * i, line)
    page.save()


def test_a_pdf_title_left_by_a_template_or_a_link_is_not_the_leaflets_title(tmp_path):
    from clincite.ingest.loaders import load_document

    lines = ["手術後須知：", "一、手術當天儘量臥床休息，睡向健側。", "二、如用兩種以上眼藥請分開使用（演示）。"]
    cases = {
        "A005糖尿病足部護理": "網膜剝離手術注意事項（演示）",  # the template's title, of another leaflet
        "file://H:\\edu\\edu12.htm": "網膜剝離手術注意事項（演示）",
        "1": "網膜剝離手術注意事項（演示）",
        "網膜剝離手術後須知": "網膜剝離手術後須知",  # a title the leaflet's own words bear out is kept
    }
    for number, (meta, expected) in enumerate(cases.items()):
        folder = tmp_path / str(number)
        folder.mkdir()
        path = folder / "網膜剝離手術注意事項（演示）.pdf"
        leaflet_pdf(path, meta, lines)
        assert load_document(path).title == expected, meta
