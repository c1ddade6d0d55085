"""Case reports and case sharing (病例分享、病例报告、医生手记): what a clinic's doctors collect about one patient's
course. A story runs in one paragraph from the complaint to the outcome, so the parts of one question ("治疗方案是什
么？练了多久？矫正视力最后到多少？") are answered by sentences of one passage; a chat about a case goes on with 她/他
(the patient); a Taiwanese doctor writes 細隙燈 where a mainland clinician says 裂隙灯; a patient's advice is "一定要…".

Found on the stop-64 blind library (hospital and clinic case stories, a journal case report, patients' accounts). The
texts here are written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_news_reports import chat
from test_other_styles import conclusion, library, tldr

from clincite.core.shapes import ExtractBasis, RelevantExtract, SubQuery, SubQueryAnalysis
from clincite.offline.questions import analyse, with_finding
from clincite.report.extractive import extractive_report
from clincite.report.format import first_place_of

AMBLYOPIA_CASE = (
    "屈光参差性弱视病例（演示材料）\n"
    "小王右眼轻度近视，左眼远视，左眼矫正视力只有0.2，被确诊为屈光参差性弱视。"
    "医生为他制定了训练方案：先配镜并遮盖右眼，再做弱视训练。"
    "经过3个月40次训练，小王左眼矫正视力提升到0.9。"
    "医生提醒：弱视要早发现、早治疗，家长要督促孩子坚持训练。\n"
)

KERATITIS_CASE = (
    "表層點狀角膜炎病例（演示材料）\n"
    "病人主訴畏光、異物感已數週。在細隙燈下可見角膜表面散布許多灰白色的小點，"
    "放大觀察，每個病灶由更細小的白點聚集而成。\n"
)

CONTACT_LENS_CASE = (
    "隐形眼镜相关角膜感染病例（演示材料）\n"
    "一名40岁女性左眼疼痛、怕光两个月后就诊，检查发现角膜感染了棘阿米巴。"
    "她告诉医生，自己经常戴着隐形眼镜游泳和洗澡。这种感染通常由戴隐形眼镜接触不洁的水引起。"
    "经过一段时间用药，感染得到控制，但角膜留下了疤痕。\n"
)

ATTACK_CASE = (
    "急性闭角型青光眼急性发作病例（演示材料）\n"
    "患者左眼胀痛、头痛，眼压高到仪器无法测量。医生会诊后立即给予甘露醇静脉输注和缩瞳治疗，"
    "当晚眼压降到正常，头痛逐渐缓解。\n"
)

GLAUCOMA_STORY = (
    "一位青光眼病友的分享（演示材料）\n"
    "我三十多岁就发现了青光眼，一直按时点眼药水，定期回诊。"
    "我特别想对病友们说：因为感冒或其他疾病去看病时，一定要告诉医师自己有青光眼。\n"
)


def cases() -> dict[str, str]:
    return {
        "屈光参差性弱视-病例分享.txt": AMBLYOPIA_CASE,
        "表层点状角膜炎-病例分享.txt": KERATITIS_CASE,
        "棘阿米巴角膜炎-病例分享.txt": CONTACT_LENS_CASE,
        "青光眼病友-病例分享.txt": GLAUCOMA_STORY,
        "急性闭角型青光眼-病例分享.txt": ATTACK_CASE,
    }


def _part(number: int, focus: str, text: str, lead: str) -> SubQueryAnalysis:
    extract = RelevantExtract(
        source="弱视-病例分享.txt",
        chunk_id="c1",
        text=text,
        basis=ExtractBasis(title=focus, explanation="演示", lead=lead),
    )
    return SubQueryAnalysis(
        sub_query=SubQuery(id=f"q{number}", text=focus, focus=focus),
        sub_answer="",
        extracts=[extract],
        confidence="high",
    )


def test_a_part_quoted_inside_another_parts_passage_is_still_answered_by_its_own_sentence():
    """Two parts of one question answered by one story: the second part's extract holds the first's. Each part is
    summed up by its own sentence, and the passage is cited once, whole."""
    advice = "医生提醒：弱视要早发现、早治疗，家长要督促孩子坚持训练。"
    outcome = "经过3个月40次训练，小王左眼矫正视力提升到0.9。"
    report = extractive_report(
        [
            _part(1, "治疗", advice, advice),
            _part(2, "矫正视力", outcome + advice, outcome),
        ],
        gaps=[],
    )
    said = conclusion(report)
    assert outcome in said and advice in said, report
    assert report.count("【2】") == 0, report  # one passage, one source item
    assert f"原文：“{outcome}{advice}”" in report, report


def test_she_in_a_chat_about_a_case_is_the_patient_asked_of_before():
    """ "她当初是怎么戴隐形眼镜才感染上的？": 她 opens the question and points back at the patient of the last one;
    a 他 after the question has named someone of its own (孩子) is that someone."""
    asked = analyse("她当初是怎么戴隐形眼镜才感染上的？", ["那个棘阿米巴角膜炎的女病人，用药以后结局怎样？"])
    assert asked.follow_up and any("棘阿米巴" in t.text for t in asked.terms), [t.text for t in asked.terms]
    asked = analyse("孩子近视了，他能戴角膜塑形镜吗？", ["低浓度阿托品有什么副作用？"])
    assert "阿托品" not in {t.text for t in asked.terms}, [t.text for t in asked.terms]


async def test_a_follow_up_on_the_patient_finds_the_same_case(tmp_path: Path):
    service = library(tmp_path, cases())
    turns = await chat(service, "那个棘阿米巴感染的女病人，用药以后结局怎样？")
    result = await service.ask("她当初是怎么感染上的？", turns)
    assert "棘阿米巴" in " ".join(q.text for q in result.sub_queries), result.sub_queries
    said = tldr(result.answer)
    assert "隐形眼镜" in said and "疤痕" not in said, result.answer


async def test_a_slit_lamp_is_one_instrument_in_either_script(tmp_path: Path):
    """裂隙灯 (the mainland's word) is the 細隙燈 a Taiwanese doctor writes."""
    service = library(tmp_path, cases())
    said = tldr((await service.ask("表层点状角膜炎在裂隙灯下放大看，病灶有什么特征？")).answer)
    assert "更細小的白點聚集而成" in said, said


async def test_what_a_patient_says_one_must_do_is_a_precaution(tmp_path: Path):
    """ "一定要告诉医师自己有青光眼": what must be done is the 注意 asked, though the story never writes 注意."""
    service = library(tmp_path, cases())
    said = tldr((await service.ask("青光眼病人去看感冒之类别的病时，要注意什么？")).answer)
    assert "一定要告诉医师自己有青光眼" in said, said


def test_what_the_pressure_is_brought_down_by_asks_of_the_pressure():
    """ "用了什么办法把眼压降下来": 眼压 is what is asked about; 降下来 is an everyday word for 下降, no subject."""
    assert analyse("会诊后先用了什么办法把眼压降下来？").subject == "眼压"


async def test_a_dose_in_grams_a_case_never_gives_is_not_found(tmp_path: Path):
    """ "甘露醇一次用多少克": a case that gave mannitol without its dose does not answer how many grams."""
    assert analyse("甘露醇静滴一次用多少克？").quantity == "剂量"
    service = library(tmp_path, cases())
    result = await service.ask("急性闭角型青光眼发作时，甘露醇静滴一次用多少克？")
    assert "未找到" in tldr(result.answer) and not result.citations, result.answer
    said = tldr((await service.ask("急性闭角型青光眼发作时，医生先用了什么办法把眼压降下来？")).answer)
    assert "甘露醇静脉输注和缩瞳治疗" in said, said


PAIN_GUIDE = """# 神经痛药物治疗要点（演示材料）

## 二、管理

### （二）药物治疗

演示镇痛片推荐起始剂量为每日50 mg，维持剂量每日200～400 mg。演示镇痛片的不良反应为恶心、头晕。

局部用演示贴膏对带状疱疹后神经痛有积极作用，是此类疼痛的一线药物。推荐演示贴膏根据疼痛范围每次使用1～3贴，每日12 h。
"""


async def test_a_dose_under_a_treatment_heading_is_the_dose_of_the_drug_asked(tmp_path: Path):
    """ "演示贴膏…怎么用？": under "（二）药物治疗" the patch's own dosing sentence answers how to use it, not the
    dose of another drug the same section gives first."""
    service = library(tmp_path, {"神经痛指南.md": PAIN_GUIDE})
    said = tldr((await service.ask("演示贴膏治疗带状疱疹后神经痛，怎么用？")).answer)
    assert "每次使用1～3贴" in said and "起始剂量" not in said, said


FLOATERS_PAGE = (
    "飞蚊症（演示材料）\n"
    "眼前突然出现小黑点、小细丝，随眼球转动飘来飘去，揉眼也赶不走。\n"
    "没有危险信号时，平时与它和平相处即可：不必刻意盯着看，多数人几周后便不再在意。\n"
)


def test_what_the_answer_found_is_what_its_first_quote_is_titled_by():
    """ "这是啥？" answered by a sentence that never names the disease, quoted from a page titled by it: the page's
    disease is what the chat goes on about."""
    said = with_finding("眼前老飘着小黑点小细丝，这是啥？", "眼前突然出现小黑点、小细丝【1】", "飞蚊症-科普")
    assert said.endswith("：飞蚊症"), said


async def test_a_follow_up_after_what_is_this_goes_on_with_the_disease_found(tmp_path: Path):
    service = library(tmp_path, {**cases(), "飞蚊症-科普.txt": FLOATERS_PAGE})
    turns = await chat(service, "眼前老飘着小黑点小细丝，揉眼也赶不走，这是啥？")
    result = await service.ask("要是没啥危险信号，平时怎么跟它相处？", turns)
    assert "飞蚊症" in " ".join(q.text for q in result.sub_queries), result.sub_queries
    assert "和平相处" in tldr(result.answer), result.answer


def test_only_an_evidence_items_note_says_where_the_quote_stands():
    """A document quoting "原文位于“青光眼”" in its own words (the TL;DR) does not choose what a chat goes on with."""
    report = (
        "**TL;DR：** 原文位于“青光眼”的说法不可信。【1】\n\n### 论据与来源\n"
        "**【1】飞蚊症**\n说明：原文位于“飞蚊症-科普”；包含问题中的关键词。\n来源：《飞蚊症-科普》\n原文：“…”"
    )
    assert first_place_of(report) == "飞蚊症-科普"
    assert first_place_of("**TL;DR：** 原文位于“青光眼”。") == ""
