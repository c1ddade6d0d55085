"""What a question says of the asker's own case, of the book, and of the figure it wants (found on the stop-45 blind
library, a disease knowledge base's JSON records, and on older blind sets):

- "我眼角长的翼状胬肉到什么程度就得做手术？": 眼角 tells where this asker's pterygium grows; the passage on when
  pterygium is operated on need not say 眼角. Likewise "急性泪囊炎那种红肿疼的…": how the named disease looks;
- "古书里这个病叫什么？": 古书、书上 point at the library itself, never a word a passage must contain;
- "可采取以下预防措施：A.… B.… C.…": lettered items under a lead-in that asks nothing are the text's own list, not a
  multiple-choice item without a key (which answers nothing);
- "眼压正常是多少？": the passage that gives the figure of what was asked ("正常人的眼压为10～21mmHg") outranks one
  more about the word (a record titled 高眼压症) whose figures are of something else (数十年、一个象限).

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.offline.questions import analyse

PTERYGIUM = """# 翼状胬肉（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 表现

翼状胬肉是睑裂区球结膜及其下纤维血管组织呈三角形向角膜侵入，多见于长期户外工作、日照较多的人群。

## 手术时机

胬肉侵入角膜超过2至3毫米、遮挡瞳孔区影响视力，或进展较快时，可考虑手术切除；术后有一定复发率，可联合结膜瓣移植以减少复发。
"""

TEAR_DUCT = """# 泪道疾病（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 慢性泪囊炎

慢性泪囊炎多由鼻泪管阻塞引起，表现为溢泪，按压泪囊区有脓性分泌物溢出，可行泪囊鼻腔吻合术。

## 急性泪囊炎

急性泪囊炎时，局部以热敷和全身应用抗生素为主，急性期不宜冲洗泪道或探通，以免感染扩散；脓肿形成后可切开引流。
"""

OTHERS = {
    "眼角的结构（演示）.md": "# 眼角的结构（演示）\n\n本文为演示材料。"
    "内眼角有泪阜和半月皱襞，外眼角由上下睑外侧联合构成。\n",
    "眼睑红肿（演示）.md": "# 眼睑红肿（演示）\n\n本文为演示材料。"
    "眼睑红肿常见于睑腺炎、过敏和蚊虫叮咬，过敏者可冷敷。\n",
}


async def test_where_the_askers_own_pterygium_grows_does_not_decide(tmp_path):
    service = library(tmp_path, {"翼状胬肉（演示）.md": PTERYGIUM, **OTHERS})
    result = await service.ask("我眼角长的翼状胬肉到什么程度就得做手术？")
    assert "2至3毫米" in tldr(result.answer), result.answer
    assert result.citations and all(c.verified for c in result.citations)


async def test_how_the_asker_says_a_named_disease_looks_does_not_decide(tmp_path):
    service = library(tmp_path, {"泪道疾病（演示）.md": TEAR_DUCT, **OTHERS})
    result = await service.ask("急性泪囊炎那种红肿疼的，能不能马上冲洗泪道？")
    assert "不宜冲洗泪道" in tldr(result.answer), result.answer


def test_words_of_the_askers_case_are_scene_but_the_disease_is_not():
    ask = analyse("我眼角长的翼状胬肉到什么程度就得做手术？")
    scene = {t.text for t in ask.terms if t.scene}
    assert "眼角" in scene and "翼状胬肉" not in scene
    # a place that is what is asked about stays a subject
    ask = analyse("眼角长了个小疙瘩是什么？")
    assert not any(t.scene for t in ask.terms if t.text == "眼角")


STYE_CLASSIC = """# 针眼的中医认识（演示）

本文为演示材料，用于软件测试，不作为临床依据。

睑腺炎在中医古籍中称为“土疳”，民间俗称“偷针”或“针眼”，多因脾胃蕴热、复感风邪，热毒上攻胞睑所致。

初起可局部湿热敷，促使其消散或成脓。
"""


async def test_the_book_the_asker_points_at_is_no_word_to_find(tmp_path):
    service = library(tmp_path, {"针眼的中医认识（演示）.md": STYE_CLASSIC, **OTHERS})
    result = await service.ask("眼皮上长了针眼，古书里这个病叫什么？")
    assert "土疳" in tldr(result.answer), result.answer
    ask = analyse("书上说这个病是怎么引起的？")
    assert not {"书上", "古书"} & {t.text for t in ask.terms}


DRY_EYE_RECORD = """# 干眼的预防（演示）

本文为演示材料，用于软件测试，不作为临床依据。

要避免使眼干加重的因素，如长时间对着风扇、吸烟环境。

1.保持眼睛湿润

泪液在干燥环境中蒸发较快，可采取以下措施减少泪液蒸发：

A.保持室内湿度在40%至60%之间，干燥季节可使用加湿器。

B.避免空调、风扇的风直吹眼睛。

C.户外多风时佩戴防风眼镜。
"""


async def test_lettered_items_under_a_lead_in_are_the_texts_own_list(tmp_path):
    service = library(tmp_path, {"干眼的预防（演示）.md": DRY_EYE_RECORD, **OTHERS})
    result = await service.ask("干眼患者室内湿度应该保持多少？")
    assert "40%至60%" in tldr(result.answer), result.answer
    assert result.citations and all(c.verified for c in result.citations)


OCULAR_HYPERTENSION = """# 高眼压症（演示）

本文为演示材料，用于软件测试，不作为临床依据。

高眼压症指多次测量眼压高于正常上限，而视盘和视野没有青光眼性损害。数十年的随访研究表明，只有少数高眼压症患者发展为青光眼，眼压越高风险越大。
"""

GLAUCOMA = """# 青光眼（演示）

本文为演示材料，用于软件测试，不作为临床依据。

青光眼是以视神经损害和视野缺损为特征的一组眼病，病理性眼压升高是主要危险因素。正常人的眼压为10～21mmHg，双眼眼压差一般不超过5mmHg。
"""


async def test_a_figure_of_what_was_asked_outranks_a_passage_only_more_about_the_word(tmp_path):
    service = library(tmp_path, {"高眼压症（演示）.md": OCULAR_HYPERTENSION, "青光眼（演示）.md": GLAUCOMA, **OTHERS})
    result = await service.ask("眼压正常是多少？")
    assert "10～21mmHg" in tldr(result.answer), result.answer


PRESBYOPIA = """# 老视（演示）

本文为演示材料，用于软件测试，不作为临床依据。

老视是随年龄增长晶状体调节力逐渐下降所致的近距离阅读困难，一般在40至45岁以后出现。

## 验配

老视需要在远用屈光矫正的基础上加用正镜片，加光度随年龄增加。
"""


async def test_how_old_asked_as_suishu_is_answered_by_the_age(tmp_path):
    """ "多大岁数" asks an age as "几岁" does: 岁数 is the question's word for what it wants, not a word to find."""
    myopia = "# 近视（演示）\n\n本文为演示材料。近视多在学龄期开始出现，开始戴镜后应定期复查。\n"
    service = library(tmp_path, {"老视（演示）.md": PRESBYOPIA, "近视（演示）.md": myopia, **OTHERS})
    result = await service.ask("老花眼一般多大岁数开始有？")
    assert "40至45岁" in tldr(result.answer), result.answer
    assert analyse("老花眼一般多大岁数开始有？").quantity == "年龄"


SNOW_BLINDNESS = """# 雪盲（演示）

本文为演示材料，用于软件测试，不作为临床依据。

雪盲是雪地反射的紫外线损伤角膜上皮所致，表现为眼痛、畏光、流泪。

## 应急处理

应立即离开强光环境，闭眼休息，可冷敷减轻疼痛；在野外找不到药品时，可用干净的湿毛巾冷敷双眼，并尽快就医。
"""


async def test_not_even_any_medicine_asks_of_medicine(tmp_path):
    """ "啥药都没有": jieba reads 药都 (a town's nickname) as one word, which no passage has; 都 before a negation is
    the adverb, and the follow-up is answered from the passage on what to do in the wild."""
    service = library(tmp_path, {"雪盲（演示）.md": SNOW_BLINDNESS, **OTHERS})
    history = [ChatTurn(role="user", content="滑雪回来眼睛疼得睁不开，说是雪盲，能热敷不？")]
    result = await service.ask("在野外手边啥药都没有咋整？", history)
    assert "湿毛巾冷敷" in tldr(result.answer), result.answer
    assert "药都" not in {t.text for t in analyse("手边啥药都没有怎么办？").terms}


DIABETIC_EYE = """# 糖尿病与眼（演示）

本文为演示材料，用于软件测试，不作为临床依据。

牵引性视网膜脱离多见于增殖性糖尿病视网膜病变，也见于玻璃体长期积血之后。

糖尿病患者应长期控制血糖、血压和血脂，减少眼底病变的发生。
"""


async def test_how_often_is_not_answered_by_a_long_while(tmp_path):
    """ "多久查一次眼底" asks how often: "长期积血" or "长期控制血糖" says no interval. ("终身使用" still answers
    "能用多久".)"""
    service = library(tmp_path, {"糖尿病与眼（演示）.md": DIABETIC_EYE, **OTHERS})
    result = await service.ask("糖尿病的人多久要去查一次眼底？")
    assert "未找到" in tldr(result.answer) and not result.citations, result.answer


CATARACT_SURGERY = """# 白内障手术（演示）

本文为演示材料，用于软件测试，不作为临床依据。

当白内障使视力下降、影响日常生活时，可行白内障摘除联合人工晶体植入手术，人工晶体的种类很多，应按用眼需求选用。

术后应按时复查，遵医嘱使用抗炎眼药水。
"""


async def test_multifocal_and_monofocal_are_names_a_library_without_them_does_not_answer(tmp_path):
    """jieba cuts 多焦点 into 多 + 焦点: the names of the lens kinds asked about decide, and a library that never
    names them abstains rather than quoting cataract surgery in general."""
    laser = "# 激光与眼（演示）\n\n本文为演示材料。眼科激光经透镜聚成焦点，单次能量很小。\n"
    service = library(tmp_path, {"白内障手术（演示）.md": CATARACT_SURGERY, "激光与眼（演示）.md": laser, **OTHERS})
    result = await service.ask("做白内障手术选人工晶体，多焦点和单焦点咋选？")
    assert "未找到" in tldr(result.answer) and not result.citations, result.answer


CONTACT_LENS = """# 隐形眼镜配戴须知（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 过夜配戴

普通软性隐形眼镜不能戴着睡觉，过夜配戴使角膜缺氧，显著增加感染性角膜炎的风险。

## 更换周期

日抛镜片用后即弃，月抛镜片开封后一个月内使用，不可超期。
"""


async def test_the_askers_adverbs_and_is_it_ok_frame_the_question(tmp_path):
    """偶尔 (how often this asker does it) and 没事 ("应该没事吧": is it all right) tell and frame; the passage on
    sleeping in lenses answers."""
    service = library(tmp_path, {"隐形眼镜配戴须知（演示）.md": CONTACT_LENS, **OTHERS})
    result = await service.ask("普通隐形眼镜，偶尔戴着睡觉应该没事吧？")
    assert "不能戴着睡觉" in tldr(result.answer), result.answer
    ask = analyse("普通的月抛隐形眼镜，偶尔戴着睡一觉应该没事吧？")
    assert [t.text for t in ask.terms if t.text in ("偶尔", "没事")] == ["偶尔"]
    assert all(t.scene for t in ask.terms if t.text == "偶尔")


MYOPIA_GRADES = """# 近视的分级（演示）

本文为演示材料，用于软件测试，不作为临床依据。

近视按度数分为三级：300度以内为轻度近视，300至600度为中度近视，600度以上为高度近视。

高度近视眼轴增长明显，应定期检查眼底。
"""


async def test_a_follow_up_naming_the_other_grade_asks_the_last_question_of_it(tmp_path):
    """ "那轻度呢？" after "近视多少度算高度近视？": 轻度 takes the place of 高度, and the last question is asked of
    轻度近视 (not of 轻度 alone, nor of 高度近视 again)."""
    service = library(tmp_path, {"近视的分级（演示）.md": MYOPIA_GRADES, **OTHERS})
    result = await service.ask("那轻度呢？", [ChatTurn(role="user", content="近视多少度算高度近视啊？")])
    assert "300度以内为轻度近视" in tldr(result.answer), result.answer
    again = analyse("那慢性呢？", ["急性结膜炎怎么治疗？"])
    assert again.follow_up and "慢性结膜炎" in again.resolved and "急性" not in again.resolved
    assert again.aspects == ["治疗"]


ANGLE_CLOSURE = """# 急性闭角性青光眼（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 急性发作期的表现

1)剧烈眼痛、同侧头痛，常伴恶心、呕吐。

2)视力急剧下降，可仅存光感。

3)眼压明显升高，多在50mmHg以上。

4)房角关闭：急性发作时前房角镜下见周边虹膜与小梁网相贴，发作时间长者形成永久性粘连。
"""


async def test_how_high_is_answered_by_the_item_giving_the_figure(tmp_path):
    """ "能飙到多高": jieba cuts 多高 apart, yet a figure is asked; the text writes 闭角性 for the asker's 闭角型; and
    of a list of signs the item giving the figure answers, not the one that only says more of the question's words
    (an item's own number, "4)", is no figure)."""
    service = library(tmp_path, {"急性闭角性青光眼（演示）.md": ANGLE_CLOSURE, **OTHERS})
    result = await service.ask("急性闭角型青光眼大发作的时候眼压一般能飙到多高？")
    assert "50mmHg以上" in tldr(result.answer), result.answer
    assert analyse("眼压一般能飙到多高？").quantity


MYOPIA_NOTES = """# 近视（演示）

本文为演示材料，用于软件测试，不作为临床依据。

近视有一定遗传倾向，对高度近视尤为明显，有遗传因素者度数多在600度以上，但也有高度近视者并无家族史。

近视按度数分级：300度以内者为轻度近视，300至600度者为中度近视，600度以上者为高度近视。
"""


async def test_what_counts_as_is_answered_by_the_sentence_drawing_the_line(tmp_path):
    """ "多少度算高度近视" asks where the line is drawn: "600度以上者为高度近视", not a figure written beside the name
    ("多在600度以上，但也有高度近视者…")."""
    service = library(tmp_path, {"近视（演示）.md": MYOPIA_NOTES, **OTHERS})
    result = await service.ask("近视多少度算高度近视啊？")
    assert "600度以上者为高度近视" in tldr(result.answer), result.answer


DRY_EYE_CARE = """# 干眼的日常管理（演示）

本文为演示材料，用于软件测试，不作为临床依据。

干眼患者应注意用眼卫生，避免长时间盯着屏幕，空调房内可使用加湿器，必要时在医生指导下使用人工泪液等眼药水滋润眼睛。

有些药物会让眼睛更干，例如抗组胺药、抗抑郁药和部分降压药，长期服用者应告知眼科医生。
"""


async def test_which_drugs_is_answered_by_the_sentence_naming_drugs(tmp_path):
    """ "吃哪些药会让眼睛更干" asks for drugs: the sentence naming them (抗组胺药、抗抑郁药) answers, not the advice
    that echoes more of the question's words (眼药水、眼睛); and jieba's guess 药会 is 药 + 会."""
    service = library(tmp_path, {"干眼的日常管理（演示）.md": DRY_EYE_CARE, **OTHERS})
    result = await service.ask("干眼的人吃哪些药会让眼睛更干？")
    assert "抗组胺药" in tldr(result.answer), result.answer
    assert "药会" not in {t.text for t in analyse("干眼的人吃哪些药会让眼睛更干？").terms}


DIABETIC_CARE = """# 糖尿病视网膜病变的中西医结合管理（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 治疗原则

控制血糖、血压和血脂是治疗的基础。中药调理可作为辅助，但不能替代激光光凝、抗VEGF注射或玻璃体手术等眼科专科治疗；已有眼底出血者应尽快就诊眼科。

## 随访

无视网膜病变者每年检查眼底一次，已有病变者按医生建议每3至6个月复查。
"""


async def test_how_long_the_asker_has_been_ill_is_no_number_asked(tmp_path):
    service = library(tmp_path, {"糖尿病视网膜病变（演示）.md": DIABETIC_CARE, **OTHERS})
    result = await service.ask("我爸糖尿病十几年，眼底已经出血了，光靠喝中药调理行不行？")
    assert "不能替代" in tldr(result.answer), result.answer
    assert result.citations and all(c.verified for c in result.citations)


def test_several_days_tell_how_long_while_how_many_days_asks():
    assert analyse("眼睛红了好几天了，要紧吗？").quantity == ""
    assert analyse("这几天眼睛老是痒怎么办？").quantity == ""
    assert analyse("前几年做过近视手术，现在能戴隐形眼镜吗？").quantity == ""
    assert analyse("做白内障手术术前几天要停戴隐形眼镜？").quantity != ""
    assert analyse("散瞳后要过几天才能看清近处？").quantity != ""


def test_how_big_torn_from_its_auxiliary_still_asks_a_figure():
    """jieba reads "长到多大会影响视力" as 多 / 大会 (a conference); 多大 / 会 it is. "换个话题" frames the question."""
    ask = analyse("换个话题，翼状胬肉长到多大会影响视力？")
    assert ask.quantity
    assert not {"大会", "换个", "话题"} & {t.text for t in ask.terms}


def test_a_short_follow_up_asking_its_own_question_does_not_take_the_last_ones_figure():
    """ "那做完当天可以洗头吗？" after "白内障手术一般要做多长时间？" asks yes or no, not 多长时间 again (the
    text's "头一星期…洗头" gave a time and was quoted over "术后当天一般都不建议洗头"); "那HAL呢？" still asks what
    the last one asked."""
    assert analyse("那做完当天可以洗头吗？", ["白内障手术一般要做多长时间？"]).quantity == ""
    assert analyse("那HAL呢？", ["DIMS镜片一天要戴多久？"]).quantity == "时间"


def test_a_verb_and_the_some_after_it_are_no_subject():
    """ "用上以后多久复查一次？都查些啥？": jieba glues 查些 (查 + 些), which then stood as the subject the follow-up
    was about, in place of the low-dose atropine the chat is on."""
    ask = analyse("用上以后多久复查一次？都查些啥？", ["我家娃9岁，近视200度，能不能用低浓度阿托品？"])
    assert "查些" not in {t.text for t in ask.terms}
    assert "低浓度阿托品" in ask.resolved


HYPERTENSION = """# 高血压（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 并发症

视网膜变化：视网膜出血、视乳头水肿，严重时可致盲。

肾脏损害：蛋白尿、肾功能下降。
"""


async def test_the_fundus_is_named_by_the_parts_a_text_names(tmp_path):
    """ "眼底会看到什么？" of notes that say 视网膜、视乳头 and never 眼底: the fundus is those parts."""
    service = library(tmp_path, {"高血压.md": HYPERTENSION, "泪道.md": TEAR_DUCT})
    result = await service.ask("高血压会不会伤眼睛？眼底会看到什么？")
    assert "视网膜出血" in tldr(result.answer), result.answer


TETANUS = """# 破伤风被动免疫（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 破伤风抗毒素

使用破伤风抗毒素前应进行皮内试验。如果皮内试验阳性，应改用破伤风免疫球蛋白，或在严密观察下脱敏注射。
"""


async def test_a_skin_test_is_the_texts_intradermal_test(tmp_path):
    """ "皮试阳性咋办？": guidelines write 皮内试验."""
    service = library(tmp_path, {"破伤风.md": TETANUS, "泪道.md": TEAR_DUCT})
    result = await service.ask("打破伤风抗毒素之前皮试阳性咋办？")
    assert "免疫球蛋白" in tldr(result.answer), result.answer


DEFOCUS_WEAR = """# 离焦框架眼镜的佩戴（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 佩戴时间

在一项为期两年的研究中，参与儿童平均每天佩戴离焦镜片约9小时。一般建议每天佩戴离焦镜片不少于12小时，看远看近都不摘镜。
"""


async def test_a_figure_asked_as_needed_is_the_one_recommended(tmp_path):
    """ "每天需要戴多长时间？": the figure the text recommends, not the one a study's children happened to wear."""
    service = library(tmp_path, {"离焦镜.md": DEFOCUS_WEAR, "泪道.md": TEAR_DUCT})
    history = [ChatTurn(role="user", content="离焦框架眼镜能控制近视加深吗？")]
    result = await service.ask("那每天需要戴多长时间？", history)
    assert "不少于12小时" in tldr(result.answer), result.answer
