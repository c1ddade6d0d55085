"""Questions that tell a story before they ask (found on the stop-36 blind library, a patient community's Markdown
articles on dry eye, floaters, contact lenses and keratoconus):

- "天天对着电脑上班，眼睛老是干涩，为啥看电脑的人更容易得干眼？": the clauses before the one that asks are the
  asker's scene. Their everyday words (天天、上班) are in no passage of the library, and must not keep the passage
  that answers the asking clause from answering;
- …but a subject named in the scene ("听说有个后巩膜加固术，能不能…") still decides: a library without it abstains;
- "可以先试试下面几件事情来缓解症状。" announces the list after it without a colon: the list is the answer, and
  the TL;DR names each of its steps;
- "为什么…要特别当心干眼？": 当心 (like 警惕) frames the question, it is no word a passage must have;
- a follow-up in everyday words ("那还在喂奶的时候，能不能做？" after a question on 交联手术) reaches the
  passage that says 哺乳期, on the procedure the last question named.

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import conclusion, library, tldr

from clincite.core.shapes import ChatTurn

DRY_EYE = """# 干眼日常护理（演示）

本文为演示材料，概述干眼的常见诱因和自我护理方法，用于软件测试，不作为临床依据。

## 为什么看屏幕容易干眼

专注看电脑、手机屏幕时，眨眼次数明显减少，眨眼也常常不完全，泪膜得不到及时更新，泪液蒸发加快，因此容易出现或加重干眼。

## 症状轻微时的自我护理

症状轻微、暂时不便就医时，可以先试试下面几件事情来缓解症状。

* 有意识地多眨眼。使用电子屏幕时提醒自己完整地眨眼，让泪膜均匀覆盖眼表。
* 用眼中途适当休息。连续近距离用眼一段时间后，抬头远眺片刻，让眼睛放松。
* 注意眼睑清洁。睡前用温热毛巾热敷眼睑几分钟，再轻轻清洁睑缘。
* 改善室内环境。空调房里可以使用加湿器，避免风口直吹眼睛。

## 隐形眼镜与干眼

长期配戴隐形眼镜会影响泪膜的稳定和角膜的知觉，配戴者更容易出现眼干、异物感等干眼症状。

## 何时就医

如果自我护理一至两周后症状仍不缓解，或出现眼红、眼痛、视力下降，应及时到眼科就诊。
"""

CROSSLINKING = """# 圆锥角膜患者问答（演示）

本文为演示材料，整理圆锥角膜患者的常见问题，用于软件测试，不作为临床依据。

## 角膜交联手术

问：什么是角膜交联手术？

答：角膜交联手术是在角膜上滴用核黄素后照射紫外光，使角膜胶原纤维之间形成更多连接，从而增加角膜的硬度，延缓圆锥角膜的进展。

问：做完交联手术多久可以考虑怀孕？

答：交联手术本身不影响怀孕，一般建议术后用药结束、复查稳定后再计划怀孕。

问：哺乳期可以做交联手术吗？

答：哺乳期不建议做交联手术，术后用药可能影响婴儿，最好等哺乳期结束后再手术。
"""


async def test_the_askers_scene_does_not_keep_the_answer_from_answering(tmp_path):
    service = library(tmp_path, {"干眼日常护理（演示）.md": DRY_EYE})
    result = await service.ask("天天对着电脑上班，眼睛老是干涩，为啥看电脑的人更容易得干眼？")
    assert "眨眼次数明显减少" in tldr(result.answer), result.answer[:400]
    assert result.citations and all(c.verified for c in result.citations)


async def test_a_subject_named_in_the_scene_still_decides(tmp_path):
    service = library(tmp_path, {"干眼日常护理（演示）.md": DRY_EYE})
    result = await service.ask("听说有个泪小点栓塞术，能不能用来缓解干眼？")
    assert "未找到" in tldr(result.answer), result.answer[:400]


async def test_be_wary_of_frames_the_question_and_is_no_word_to_find(tmp_path):
    service = library(tmp_path, {"干眼日常护理（演示）.md": DRY_EYE})
    result = await service.ask("为什么长期戴隐形眼镜的人要特别当心干眼？")
    assert "影响泪膜的稳定和角膜的知觉" in tldr(result.answer), result.answer[:400]


async def test_a_list_announced_without_a_colon_is_the_answer_with_every_step_in_the_tldr(tmp_path):
    service = library(tmp_path, {"干眼日常护理（演示）.md": DRY_EYE})
    result = await service.ask("有点轻微干眼，还没空去医院，平时自己能先做点啥缓解？")
    summary = tldr(result.answer)
    steps = ["有意识地多眨眼。", "用眼中途适当休息。", "注意眼睑清洁。", "改善室内环境。"]
    assert all(step in summary for step in steps), summary
    assert "让泪膜均匀覆盖眼表" not in summary  # the TL;DR names the steps; 论据与来源 quotes them whole
    assert "让泪膜均匀覆盖眼表" in result.answer


async def test_a_follow_up_in_everyday_words_reaches_the_passage_on_the_procedure_asked_before(tmp_path):
    service = library(tmp_path, {"圆锥角膜患者问答（演示）.md": CROSSLINKING})
    first = "做完圆锥角膜交联手术，多久以后可以要孩子？"
    history = [ChatTurn(role="user", content=first), ChatTurn(role="assistant", content="……")]
    result = await service.ask("那还在喂奶的时候，能不能做？", history)
    answered = "".join((tldr(result.answer) + conclusion(result.answer)).split())
    assert "哺乳期不建议做交联手术" in answered, result.answer[:400]
