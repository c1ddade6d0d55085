"""Disease entries written as questions and answers in plain text, as a health encyclopedia or a hospital's patient
pages publish them: a bare section label ("治疗:"), then each question on a line of its own and its answer on the
lines after. The question heads its answer as a web page's <h3> would; a clinician's shorthand (糖网、PRP、RD) and
ways of asking ("怎么交代", "哪些人是禁用的", "昨天下午…这么久") find what such a text says in full words.

Found on the stop-53 blind library (a health site's disease entries, saved as plain text). The texts here are
written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import library, tldr

from clincite.ingest.loaders.text import plain_document

RETINAL_DETACHMENT = """简介:
视网膜脱离是什么？
视网膜的神经上皮层与色素上皮层彼此分开，称为视网膜脱离（演示材料）。

症状:
视网膜脱离有哪些表现？
眼前突然出现闪光感和大量漂浮物，或有幕布样的黑影从一侧逐渐遮挡视野。

治疗:
孔源性视网膜脱离怎么治疗？
裂孔局限时可行激光光凝封闭裂孔；范围较大时需行巩膜扣带术或玻璃体切割术。

生活:
术后眼内注入了气体，睡觉时要注意什么？
应按医生的要求保持俯卧或侧卧，避免仰卧，让气泡顶压在裂孔处。
眼内气体没有吸收之前可以坐飞机吗？
不可以。气泡在高空会膨胀，可使眼压骤然升高。
"""

GLAUCOMA = """简介:
青光眼是什么？
青光眼是以视神经损害和视野缺损为特征的一组眼病，眼压升高是主要危险因素（演示材料）。

治疗:
常用的降眼压滴眼液有哪些？使用时要注意什么？
（1%～2%）毛果芸香碱滴眼液：缩小瞳孔、开放房角而降低眼压，需在医生指导下使用。
（0.25%～0.5%）噻吗洛尔滴眼液（同类药：卡替洛尔）：β受体阻滞剂，减少房水生成而降低眼压。支气管哮喘、窦性心动过缓及二度以上房室传导阻滞的患者禁用。
（0.2%）溴莫尼定滴眼液：α2受体激动剂，可有口干、嗜睡，驾驶员及高空作业的人慎用，2岁以下儿童禁用。
"""

DIABETIC_RETINOPATHY = """简介:
糖尿病视网膜病变是什么？
糖尿病视网膜病变是糖尿病引起的视网膜微血管病变，是成年人致盲的重要原因（演示材料）。

治疗:
什么情况下需要做全视网膜激光光凝？
出现重度非增殖期或增殖期病变时，医生会建议行全视网膜激光光凝，以减少新生血管和出血。

生活:
做完全视网膜激光光凝以后还能开车吗？
治疗后周边视野和夜间视力可能下降，驾车前应复查视野，夜间尽量不要驾车。
"""

ELECTRIC_OPHTHALMIA = """简介:
电光性眼炎是什么？
电光性眼炎是眼睛受紫外线照射后引起的角膜和结膜上皮损伤，常见于电焊时没有防护（演示材料）。

症状:
为什么电焊后过了几个小时才开始疼？
紫外线造成的上皮损伤要经过6～8小时的潜伏期才出现症状，所以常在夜间突然发作，双眼剧痛、畏光、流泪。
"""


CATARACT = """简介:
白内障是什么？
晶状体变混浊、影响视力，称为白内障，老年性白内障最常见（演示材料）。

治疗:
人工晶体是什么？
人工晶体是用人工材料制成的透镜，白内障手术摘除混浊的晶状体后植入眼内，代替它聚焦光线。术前根据患者的眼轴长度和角膜曲率计算人工晶体的度数。
白内障手术痛吗？
一般在表面麻醉或局部麻醉下进行，术中基本不痛。
"""


KERATOPLASTY = """治疗:
角膜移植的风险评估要考虑哪些因素？
眼表炎症是否已控制、眼睑能否正常闭合、有无排斥史以及角膜新生血管的范围（演示材料）。
角膜移植后多久拆线？
一般在术后一年左右，根据愈合和散光情况分次拆线。
"""


def entries(tmp_path: Path):
    return library(
        tmp_path,
        {
            "视网膜脱离.txt": RETINAL_DETACHMENT,
            "青光眼.txt": GLAUCOMA,
            "糖尿病视网膜病变.txt": DIABETIC_RETINOPATHY,
            "电光性眼炎.txt": ELECTRIC_OPHTHALMIA,
            "白内障.txt": CATARACT,
            "角膜移植.txt": KERATOPLASTY,
        },
    )


def test_each_question_line_heads_its_answer_and_a_bare_label_its_section():
    document = plain_document(RETINAL_DETACHMENT, "视网膜脱离")
    paths = [section.heading_path for section in document.sections]
    assert ["生活", "术后眼内注入了气体，睡觉时要注意什么？"] in paths
    assert ["治疗", "孔源性视网膜脱离怎么治疗？"] in paths
    answer = next(s for s in document.sections if s.heading_path[-1] == "眼内气体没有吸收之前可以坐飞机吗？")
    assert document.text[answer.start : answer.end].strip().startswith("不可以。")


def test_a_lead_in_over_its_list_stays_under_its_question():
    """ "例如：" over a list is the answer leading into its items, not a section label like "症状:" over questions."""
    text = (
        "近视能治好吗？\n真性近视不能逆转，只能矫正和控制进展（演示材料）。\n"
        "网上常见的说法有哪些？\n例如：\n每天看远处的绿色就能治好近视。\n吃某种保健品能降低度数。\n"
    )
    document = plain_document(text, "近视误区")
    paths = [section.heading_path for section in document.sections]
    assert paths == [["近视能治好吗？"], ["网上常见的说法有哪些？"]], paths
    assert "例如：" in document.text


def test_a_question_ending_a_paragraph_of_running_text_heads_nothing():
    """A hard-wrapped note (as a PDF's text gives it) whose paragraphs end with a question on a short last line: the
    question is that paragraph's end, not a heading over the next one."""
    note = (
        "青光眼的药物治疗需要长期坚持，不少患者用药一段时间后觉得眼睛不胀也不痛，\n"
        "就自行停药，等到视野明显缩小才回到医院复查，这时损害已经不能逆转，\n"
        "那么为什么不能凭感觉停药呢？\n"
        "因为多数开角型青光眼早期没有任何症状，眼压是否控制、视神经是否仍在受损，\n"
        "只有通过测量眼压、检查视盘和视野才能知道，患者自己无从判断，所以医生\n"
        "强调定期复查，那么多久复查一次合适呢？\n"
        "一般眼压稳定者每三到六个月复查一次，病情进展或调整用药时应当缩短间隔，\n"
        "具体由医生根据病情决定（演示材料）。\n"
    )
    document = plain_document(note, "随访")
    assert all(not section.heading_path for section in document.sections)


async def test_how_to_instruct_a_patient_after_gas_tamponade_is_answered_from_the_entry(tmp_path: Path):
    service = entries(tmp_path)
    result = await service.ask("玻切手术时眼内注了膨胀气体，术后睡觉体位怎么交代？")
    said = tldr(result.answer)
    assert "保持俯卧或侧卧" in said, result.answer
    assert "睡觉时要注意什么？" not in said  # the question heading is never the answer
    assert "术后眼内注入了气体，睡觉时要注意什么？" in result.answer  # … but says where the quote stands


async def test_which_patients_may_not_use_a_drug_asks_of_the_drug_not_of_people(tmp_path: Path):
    """ "哪些人是禁用的": 人 is whoever the text is about, as 患者 is; the drug named in the sentence before stays the
    subject of what is searched (the steps the clinician sees read "噻吗洛尔的禁忌证", not "人的禁忌证")."""
    service = entries(tmp_path)
    result = await service.ask("开噻吗洛尔之前要先问病人哪些情况？哪些人是禁用的？")
    searched = [query.text for query in result.sub_queries]
    assert any(text.startswith("噻吗洛尔的禁忌证") for text in searched), searched
    assert not any(text.startswith("人的") for text in searched), searched
    assert "禁用" in tldr(result.answer), result.answer


async def test_a_clinicians_shorthand_finds_the_words_an_entry_writes_in_full(tmp_path: Path):
    service = entries(tmp_path)
    result = await service.ask("糖网病人做完PRP以后还能不能开车？")
    assert "夜间尽量不要驾车" in tldr(result.answer), result.answer


async def test_a_spouses_story_in_everyday_phrases_still_finds_the_answer(tmp_path: Path):
    """昨天下午、这么久: jieba lists such phrases as rare words; they are as everyday as the words they are made of."""
    service = entries(tmp_path)
    result = await service.ask("老公昨天下午电焊，怎么隔了这么久才开始眼睛疼？")
    assert "6～8小时的潜伏期" in tldr(result.answer), result.answer


async def test_a_question_heading_on_a_subject_does_not_cover_its_kinds(tmp_path: Path):
    """ "人工晶体是什么？" answers what an intraocular lens is; a question on multifocal lenses, which the entry never
    names, is not found there (a title or a label naming 人工晶体 would speak of its kinds)."""
    service = entries(tmp_path)
    result = await service.ask("白内障术前病人问要不要上多焦点人工晶体，怎么跟他讲？")
    assert result.coverage.status == "no_evidence", result.answer
    assert "未找到" in tldr(result.answer)


async def test_when_a_question_is_placed_is_not_what_it_is_about(tmp_path: Path):
    """术前 of "术前风险评估" places the question; a text on the graft's risk assessment need not write it, and the
    graft, not 术前, is the subject the steps show."""
    service = entries(tmp_path)
    result = await service.ask("做角膜移植，术前风险评估主要考虑哪几个因素？")
    assert "眼睑能否正常闭合" in tldr(result.answer), result.answer
    assert not any(query.text.startswith("术前") for query in result.sub_queries), result.sub_queries
