"""Encyclopedia term entries (百科词条) as wikis and disease libraries show them: an infobox of "名称 | 值" lines, a
summary, sections, reference markers ([1]), and the asker's everyday words for what the entry says its own way —
剧痛 for 剧烈疼痛, WHO for 世界卫生组织, "哪些视觉问题" for the problems themselves, "给…配镜" for the setting of a
question on lens powers.

Found on the stop-56 blind library (encyclopedia entries saved from wikis and disease-library sites). The entries here
are written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders.text import plain_document
from clincite.offline.questions import analyse

COLOUR_BLINDNESS = (
    "色盲\n\n"
    "色盲（英语：color blindness）是指辨别颜色的能力低于常人的状况（演示材料）。多数患者可以适应日常生活。"
    "全色盲的患者还可能伴随视敏度下降及畏光的问题。[1]\n"
    "又称 | 色觉障碍 |\n"
    "病程 | 终身 |\n"
    "诊断方法 | 色盲检测图 |\n"
    "男性比女性更容易患色盲，因为相关基因位于X染色体上。[1]\n"
)

ANISOMETROPIA = (
    "屈光参差\n\n"
    "两眼屈光度相差超过一定程度（演示材料），称为屈光参差。\n"
    "屈光参差的两眼通过镜片边缘看物时，所受的棱镜作用不相等；这种差异超过耐受量，双眼便不能保持融合，从而产生复视。"
    "另外，由于两眼镜片屈光度不同，两眼像的放大率也不同，同样会造成双眼融合困难。\n"
    "临床上，一般以2.00D作为两眼镜片度数差的极限，超过时常把度数较高一眼的处方减低。\n"
)

CATARACT = (
    "白内障\n\n"
    "白内障是晶状体混浊导致的视力下降（演示材料）。"
    "世界卫生组织从群体防盲角度，把晶状体混浊且矫正视力在0.7或以下者归入白内障的诊断范围。\n"
)

RETINAL_DETACHMENT = (
    "原发性视网膜脱离\n\n"
    "1 概述\n原发性视网膜脱离是指视网膜神经上皮层与色素上皮层分离，多由视网膜裂孔引起（演示材料）。\n"
    "2 裂孔的分布\n裂孔多位于眼底周边部，其中以颞上方最多。\n"
    "3 好发人群\n本病多见于近视眼，尤其是高度近视者；患者多数为30岁以上成年人，男性多于女性。\n"
)

MACULAR_DEGENERATION = (
    "老年性黄斑变性\n\n"
    "老年性黄斑变性分干性和湿性两型，其中约九成为干性（演示材料）。[2]\n"
    "目前研究认为，单纯补充维生素的预防作用并不明确。[3]\n"
)

GOUT = (
    "痛风\n\n"
    "痛风是一种代谢性关节炎（演示材料，非眼科条目）。典型表现为反复发作的关节红肿热痛，"
    "剧烈疼痛通常在十二小时内达到高峰。[1]\n"
)


def entries(tmp_path: Path):
    return library(
        tmp_path,
        {
            "色盲-百科.txt": COLOUR_BLINDNESS,
            "屈光参差-手册.txt": ANISOMETROPIA,
            "白内障-百科.txt": CATARACT,
            "原发性视网膜脱离-医学百科.txt": RETINAL_DETACHMENT,
            "黄斑变性-百科.txt": MACULAR_DEGENERATION,
            "痛风-百科.txt": GOUT,
        },
    )


async def test_the_kind_of_problem_asked_is_answered_by_the_problems_themselves(tmp_path: Path):
    """ "伴随哪些视觉问题": 视觉 is the kind of answer wanted; the entry names the problems (视敏度下降、畏光) and never
    the word 视觉."""
    said = tldr((await entries(tmp_path).ask("全色盲的人除了分不清颜色，还可能伴随哪些视觉问题？")).answer)
    assert "视敏度下降及畏光" in said, said


async def test_a_setting_the_library_never_writes_does_not_decide(tmp_path: Path):
    """ "给屈光参差的人配镜，…": 配镜 is how the asker sets the scene; the entry speaks of 处方 and 镜片度数差."""
    said = tldr((await entries(tmp_path).ask("给屈光参差的人配镜，两眼镜片度数差一般以多少为极限？")).answer)
    assert "2.00D" in said, said


async def test_why_an_effect_comes_is_answered_by_the_sentence_saying_what_brings_it_on(tmp_path: Path):
    """ "为什么容易出现复视": the sentence that says what 产生复视 answers, not the next one that only has 由于."""
    said = tldr((await entries(tmp_path).ask("屈光参差的人戴上眼镜为什么容易出现复视？")).answer)
    assert "产生复视" in said, said


async def test_an_organisations_abbreviation_finds_its_full_name(tmp_path: Path):
    said = tldr((await entries(tmp_path).ask("按WHO防盲的标准，白内障要矫正视力降到多少才算进诊断范围？")).answer)
    assert "0.7或以下" in said, said


async def test_a_short_word_for_severe_pain_finds_the_long_one(tmp_path: Path):
    said = tldr((await entries(tmp_path).ask("痛风发作的时候，剧痛一般多长时间内就会出现？")).answer)
    assert "十二小时内" in said, said


async def test_a_follow_up_goes_on_with_a_disease_named_with_its_qualifier(tmp_path: Path):
    """原发性视网膜脱离 is a kind of 视网膜脱离 (X性 + a domain term): the subject a follow-up goes on with, not 眼底,
    the place the first question asked about; "哪类人" asks who gets it."""
    service = entries(tmp_path)
    asked = "原发性视网膜脱离查裂孔，裂孔一般多分布在眼底哪些位置？"
    first = await service.ask(asked)
    assert "颞上方" in tldr(first.answer), first.answer
    history = [ChatTurn(role="user", content=asked), ChatTurn(role="assistant", content=first.answer)]
    said = tldr((await service.ask("它一般好发于哪类人？", history)).answer)
    assert "多见于近视眼" in said or "30岁以上成年人" in said, said


def test_how_much_glued_to_a_verb_is_no_name():
    """ "干性的大概占多大比例": jieba glues 占 onto 多大; 占多大 is no product's name to go on with."""
    follow = analyse("那平时补点维生素能预防吗？", ["老年性黄斑变性里干性的大概占多大比例？"])
    assert follow.resolved.startswith("老年性黄斑变性"), follow.resolved


def test_which_kind_of_people_asks_who_gets_it():
    ask = analyse("原发性视网膜脱离好发于哪类人？")
    assert ask.aspects == ["好发人群"], (ask.aspects, [t.text for t in ask.terms])
    assert "类人" not in [t.text for t in ask.terms]


def test_a_wikis_numbered_section_lines_head_their_sections_under_the_entrys_name():
    sections = [s.heading_path for s in plain_document(RETINAL_DETACHMENT, "原发性视网膜脱离-医学百科").sections]
    assert ["原发性视网膜脱离", "3 好发人群"] in sections, sections
    for listed in (  # two numbered lines are no run; three one under another are a list's items, not headings
        "用药注意（演示材料）\n\n1 每日一次\n\n2 睡前使用\n\n一次一滴，不要多用。\n",
        "用药清单（演示材料）\n\n1 阿托品滴眼液\n\n2 人工泪液\n\n3 抗生素眼膏\n\n请按时使用。\n",
    ):
        assert all(len(s.heading_path) <= 1 for s in plain_document(listed, "注意").sections), listed


def test_a_pages_chrome_above_the_line_naming_its_subject_heads_nothing():
    """A disease-library page saved as text opens with the site's name; the line naming the file's subject heads it,
    so no answer is said to be found "under 阿里康网"."""
    page = "某某健康网\n散光\n快速搜索\n\n散光是眼球各经线屈光力不一致造成的屈光不正（演示材料）。\n"
    sections = plain_document(page, "散光-yanke").sections
    assert [s.heading_path for s in sections if s.heading_path] == [["散光"]], [s.heading_path for s in sections]
    form = (  # a question box's lines, a form label and breadcrumbs before the entry's own heading
        "标题不应少于2个字\n提问 关闭\n验证码:\n匿名提问\n首页 > 疾病库 > 白内障 > 概述\n白内障的概述\n"
        "白内障是晶状体混浊导致的视力下降（演示材料）。\n"
    )
    headed = [s.heading_path for s in plain_document(form, "白内障-wiki").sections if s.heading_path]
    assert headed == [["白内障的概述"]], headed
    notice = "通知\n\n下周一门诊暂停一天（演示材料）。\n"  # no line names the file's subject: the first still heads
    assert [s.heading_path for s in plain_document(notice, "门诊安排").sections] == [["通知"]]
