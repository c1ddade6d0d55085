"""The asker's everyday words against a library's written ones (found on the stop-38 blind library, a 1980s
ophthalmology textbook typed up as Markdown, and on the earlier blind sets of patients' stories):

- a household noun in the story before the question (铁屑、麦秆) is the asker's scene: only medical wording there
  (a lexicon term, THUOCL's medical vocabulary, a word ending in …术、…药、…炎) still names a subject that decides;
- the people in a story (爸妈、工友、家属) never name what a question is about;
- a one-character verb the library never writes (涨) is the spoken word for a written two-character one (增长);
- the Roman numeral an asker types (II期) is the one character a textbook prints (Ⅱ期); a medicine named by 药 is
  the one a text names by 剂 (缩瞳药 / 缩瞳剂);
- 区分、鉴别 ask what tells two things apart; a comparison of which one side the library never names abstains;
- a TL;DR never ends on a lead-in to a table it does not carry ("下表列出了…：").

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import library, tldr

from clincite.offline.lexicon import get_lexicon

EYE_INJURY = """# 眼外伤急救要点（演示）

本文为演示材料，概述常见眼外伤的现场处理，用于软件测试，不作为临床依据。

## 眼内金属异物

怀疑眼内有磁性金属异物时禁做磁共振检查，异物在磁场中可能移位造成二次损伤，应首选CT定位。

## 碱性化学伤

石灰、水泥等碱性物质溅入眼内后，应立即用大量清水冲洗至少15分钟，冲洗时翻开眼睑，清除残留颗粒。
"""

OLDER_EYES = """# 老年人视觉变化（演示）

本文为演示材料，介绍年龄增长带来的视觉变化，用于软件测试，不作为临床依据。

## 暗处视物困难

六十岁以上的老人瞳孔变小、晶状体透光率下降，进入眼内的光线减少，因此在傍晚或光线昏暗时容易看不清。

## 老视

四十岁以后晶状体弹性逐渐下降，看近处需要更强的调节，出现老视。
"""

REFRACTIVE = """# 屈光手术术前评估（演示）

本文为演示材料，概述角膜屈光手术的术前要求，用于软件测试，不作为临床依据。

## 屈光状态稳定

近两年内屈光度数应保持稳定，通常要求每年增长不超过50度，仍在进展期的近视不宜手术。

## 角膜厚度

术前需测量角膜厚度，保证术后剩余角膜基质床足够厚。
"""

TRACHOMA = """# 沙眼（演示）

本文为演示材料，摘要说明沙眼的临床分期，用于软件测试，不作为临床依据。

## 临床分期

沙眼Ⅰ期（进行期）：上睑结膜乳头与滤泡并存，尚无瘢痕。

沙眼Ⅱ期（退行期）：活动性病变与瘢痕并存。

沙眼Ⅲ期（完全瘢痕期）：活动性病变消失，仅留瘢痕。

## 预防

注意个人卫生，不与他人共用毛巾。
"""

STYE = """# 麦粒肿（演示）

本文为演示材料，介绍麦粒肿的表现和处理，用于软件测试，不作为临床依据。

## 表现

麦粒肿是眼睑腺体的急性化脓性炎症，眼睑局部红肿、疼痛明显，数日后可出现黄白色脓点。

## 处理

早期可以热敷，促进炎症消散；脓点形成后切开排脓，切忌用手挤压。
"""

DENGUE_AND_CHIKUNGUNYA = """# 登革热与基孔肯雅热（演示）

本文为演示材料，对比两种蚊媒传染病，用于软件测试，不作为临床依据。

## 临床鉴别

登革热出血倾向更明显，血小板下降更常见；基孔肯雅热以剧烈的关节疼痛为突出表现，关节痛可持续数月。两者传播媒介相同，确诊需依靠核酸检测。
"""

VITAMIN_A = """# 维生素A与眼睛（演示）

本文为演示材料，介绍维生素A的需要量，用于软件测试，不作为临床依据。

## 每日需要量

维生素A的每日摄取量约为5000 IU。下表列出了一些富含维生素A的食物：

| 食物 | 每份含量 |
|---|---|
| 胡萝卜 | 较高 |
| 菠菜 | 中等 |
"""


async def test_a_household_noun_in_the_story_does_not_decide(tmp_path):
    service = library(tmp_path, {"眼外伤急救要点（演示）.md": EYE_INJURY})
    result = await service.ask("砸钉子的时候好像有铁屑崩进眼睛里了，能做个核磁共振查一下吗？")
    assert "禁做磁共振" in tldr(result.answer), result.answer[:400]
    assert result.citations and all(c.verified for c in result.citations)


async def test_medical_wording_in_the_story_still_decides(tmp_path):
    service = library(tmp_path, {"眼外伤急救要点（演示）.md": EYE_INJURY})
    result = await service.ask("听说有个角膜交联术，做完以后能不能马上做磁共振？")
    assert "未找到" in tldr(result.answer), result.answer[:400]


async def test_the_people_of_a_story_name_nothing(tmp_path):
    service = library(tmp_path, {"老年人视觉变化（演示）.md": OLDER_EYES})
    result = await service.ask("我爸妈六十多岁，一到傍晚就说看不清楚，这是为什么？")
    assert "瞳孔变小" in tldr(result.answer), result.answer[:400]


async def test_a_spoken_one_character_verb_is_the_texts_written_word(tmp_path):
    service = library(tmp_path, {"屈光手术术前评估（演示）.md": REFRACTIVE})
    result = await service.ask("打算做近视激光手术，度数一年涨多少以内才算稳定？")
    assert "不超过50度" in tldr(result.answer), result.answer[:400]


async def test_a_typed_roman_numeral_is_the_printed_one(tmp_path):
    service = library(
        tmp_path, {"沙眼（演示）.md": TRACHOMA, "麦粒肿（演示）.md": STYE, "眼外伤急救要点（演示）.md": EYE_INJURY}
    )
    result = await service.ask("沙眼II期的判断依据是什么？")
    assert "活动性病变与瘢痕并存" in tldr(result.answer), result.answer[:400]


def test_a_medicine_named_by_yao_is_the_one_named_by_ji():
    lexicon = get_lexicon()
    assert "缩瞳剂" in lexicon.variants("缩瞳药")  # the follow-up "那多久点一次？" after "…用什么缩瞳药？" (stop 38)
    assert "止痛药" in lexicon.variants("止痛剂")
    assert lexicon.variants("中药") == ["中药"]  # a two-character word is its own name


async def test_a_comparison_with_a_side_the_library_never_names_abstains(tmp_path):
    service = library(tmp_path, {"麦粒肿（演示）.md": STYE})
    result = await service.ask("霰粒肿和麦粒肿有什么区别？")
    assert "未找到" in tldr(result.answer), result.answer[:400]
    assert not result.citations


async def test_qufen_asks_what_tells_two_things_apart(tmp_path):
    service = library(tmp_path, {"登革热与基孔肯雅热（演示）.md": DENGUE_AND_CHIKUNGUNYA})
    result = await service.ask("登革热和基孔肯雅热临床上怎么区分？")
    assert "关节疼痛" in tldr(result.answer) or "出血倾向" in tldr(result.answer), result.answer[:400]


async def test_a_tldr_never_ends_on_the_lead_in_to_a_table_it_leaves_out(tmp_path):
    service = library(tmp_path, {"维生素A与眼睛（演示）.md": VITAMIN_A})
    result = await service.ask("维生素A一天大概要吃多少才够？")
    summary = tldr(result.answer)
    assert "5000 IU" in summary, result.answer[:400]
    assert not summary.split("【")[0].rstrip().endswith(("：", ":")), summary
