"""Notes whose every line is a heading, and the ways a clinician names things in passing (found on the stop-39 blind
library: a medical school's clerkship notes exported from OneNote to Markdown, Traditional Chinese with English terms):

- a heading that heads nothing and reads as a sentence ("### 一層透明的黏膜，覆蓋於…") is a line of its section's text:
  found, judged and quoted like any other; a note made only of such lines is read, not skipped as "no text";
- a second name in brackets (泪膜破裂时间（BUT）) is an alternative: a text naming either one is about it;
- an eye drop asked of (只点眼药水够不够？) is answered by a text naming the treatment (局部抗生素), not only the form;
- two questions in one message are two questions: each is judged on its own, the second after the first
  ("…医生说是霰粒肿。要不要点抗生素眼药水？它和针眼有啥区别？"), and one the library cannot answer takes no
  evidence meant for the other;
- a section on one kind of a disease (細菌性結膜炎) is no section on the disease in general: it does not answer for
  another kind (过敏性结膜炎);
- "急性泪囊炎那种…" is no reference back in the chat; "另外想问一下，…" asks a question of its own;
  "A或者B" in a yes-or-no question asks of either, it offers no choice to compare.

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import library, tldr

from clincite.core.shapes import ChatTurn
from clincite.ingest.loaders import load_document, load_markdown
from clincite.offline.lexicon import get_lexicon
from clincite.offline.questions import analyse

# Written the way an outline export writes: the sentences are headings, lists only at the deepest level.
TEAR_NOTES = """# 淚液系統（演示）

## 本筆記為演示材料，用於軟體測試，不作為臨床依據

## 乾眼症

### 檢查：

#### Tear Breakup Time(BUT)

- 點螢光染劑後觀察淚膜裂解的時間，小於5秒為異常

### 治療：

#### Mild：人工淚液眼藥水、熱敷，改善用眼習慣

#### Moderate：不含防腐劑的人工淚液、topical cyclosporine、punctal plug

## 急性淚囊炎

### 急性期不可以沖洗淚道或探通，以免感染擴散

### 治療：局部與口服抗生素、熱敷，緩解後再考慮手術

## 細菌性結膜炎

### 一般細菌性結膜炎約六成可於五天內自行痊癒，但仍建議使用局部抗生素

### 淋球菌感染必須合併全身治療，首選第三代頭孢菌素
"""

LID_NOTES = """# 眼瞼（演示）

## 本筆記為演示材料，用於軟體測試，不作為臨床依據

## 霰粒腫 Chalazion

### 瞼板腺出口阻塞造成的慢性無菌性肉芽腫，不紅不痛

### 治療：熱敷，抗生素無效，必要時手術切開刮除

## 麥粒腫 Hordeolum

### 眼瞼油脂腺的急性化膿性感染，紅腫熱痛明顯

### 治療：熱敷與局部抗生素
"""

RABIES_NOTES = """# 狂犬病暴露後處置（演示）

## 本筆記為演示材料，用於軟體測試，不作為臨床依據

## 未曾接種者：於第0、3、7、14天各注射一劑疫苗

## 曾接種暴露前預防者：於第0、3天各追加一劑即可
"""


def test_a_note_made_of_headings_is_read_as_its_lines_say():
    document = load_markdown(TEAR_NOTES, "淚液系統")
    assert "急性期不可以沖洗淚道或探通，以免感染擴散" in "".join(
        document.text[s.start : s.end] for s in document.sections
    )
    paths = [s.heading_path for s in document.sections]
    assert ["急性淚囊炎"] in paths  # the label heads the lines under it
    assert not any("以免感染擴散" in " ".join(p) for p in paths)  # the sentence heads nothing
    assert ["乾眼症", "檢查：", "Tear Breakup Time(BUT)"] in paths  # a label with a body stays a heading


async def test_a_sentence_written_as_a_heading_answers_and_is_quoted(tmp_path):
    service = library(tmp_path, {"淚液系統（演示）.md": TEAR_NOTES})
    result = await service.ask("急性泪囊炎能不能马上冲洗泪道？")
    assert "急性期不可以沖洗淚道" in tldr(result.answer), result.answer[:400]


async def test_the_askers_second_name_in_brackets_is_enough(tmp_path):
    service = library(tmp_path, {"淚液系統（演示）.md": TEAR_NOTES})
    result = await service.ask("查干眼做的泪膜破裂时间（BUT），多少秒以下算不正常？")
    assert "小於5秒為異常" in tldr(result.answer), result.answer[:400]


async def test_eye_drops_asked_of_are_answered_by_the_treatment_the_text_names(tmp_path):
    service = library(tmp_path, {"淚液系統（演示）.md": TEAR_NOTES})
    result = await service.ask("细菌性结膜炎只点眼药水够不够？会自己好吗？")
    assert "局部抗生素" in result.answer and "未找到" not in tldr(result.answer), result.answer[:400]
    result = await service.ask("过敏性结膜炎痒得厉害，用哪种抗过敏眼药水比较好？")
    assert "未找到" in tldr(result.answer), result.answer[:400]


async def test_a_section_on_one_kind_of_a_disease_does_not_answer_for_another(tmp_path):
    service = library(tmp_path, {"淚液系統（演示）.md": TEAR_NOTES})
    for question in ("过敏性结膜炎怎么治疗？", "过敏性结膜炎该点什么眼药水？"):
        result = await service.ask(question)
        assert "未找到" in tldr(result.answer), result.answer[:400]
    result = await service.ask("细菌性结膜炎怎么治疗？")
    assert "未找到" not in tldr(result.answer) and "治療" in tldr(result.answer), result.answer[:400]


async def test_another_question_announced_is_not_a_follow_up(tmp_path):
    service = library(tmp_path, {"淚液系統（演示）.md": TEAR_NOTES, "狂犬病暴露後處置（演示）.md": RABIES_NOTES})
    first = "被狗咬了，以前没打过狂犬疫苗，要在哪几天打针？"
    history = [ChatTurn(role="user", content=first), ChatTurn(role="assistant", content="……")]
    result = await service.ask("另外想问一下，急性泪囊炎那种情况，能不能马上冲洗泪道或者探通？", history)
    assert "急性期不可以沖洗淚道" in tldr(result.answer), result.answer[:400]
    assert "狂犬" not in result.sub_queries[0].text, [q.text for q in result.sub_queries]


async def test_another_question_announced_keeps_its_subject_the_library_never_names(tmp_path):
    # The library never names 睑板腺囊肿, so it cannot say whether it goes with the last subject; "另外想问一下" did
    service = library(tmp_path, {"淚液系統（演示）.md": TEAR_NOTES, "狂犬病暴露後處置（演示）.md": RABIES_NOTES})
    first = "被狗咬了，以前没打过狂犬疫苗，要在哪几天打针？"
    history = [ChatTurn(role="user", content=first), ChatTurn(role="assistant", content="……")]
    result = await service.ask("另外想问一下，睑板腺囊肿能不能热敷？", history)
    assert "狂犬" not in " ".join(q.text for q in result.sub_queries), [q.text for q in result.sub_queries]
    assert "睑板腺囊肿" in result.sub_queries[0].text, [q.text for q in result.sub_queries]
    assert result.answer.startswith("**TL;DR：** 知识库中未找到"), result.answer[:200]


async def test_two_questions_in_one_message_are_answered_each(tmp_path):
    service = library(tmp_path, {"眼瞼（演示）.md": LID_NOTES})
    result = await service.ask("眼皮上长了个硬疙瘩，医生说是霰粒肿。要不要点抗生素眼药水？它和麦粒肿有啥区别？")
    answer = "".join(result.answer.split())
    assert "抗生素無效" in answer and "急性化膿性感染" in answer, result.answer[:600]
    assert len(result.sub_queries) >= 2 and "霰粒肿" in result.sub_queries[1].text, result.sub_queries
    result = await service.ask("霰粒肿要不要点抗生素眼药水？做完切开刮除以后多久能化妆？")
    assert "化妆" in result.answer.split("### 论据与来源")[0], result.answer[:600]  # named as not found


def test_either_or_in_a_yes_or_no_question_offers_no_choice():
    ask = analyse("能不能马上冲洗泪道或者探通？")
    assert not ask.choice and "区别" not in ask.aspects, (ask.choice, ask.aspects)
    ask = analyse("阿托品或者OK镜选哪个？")
    assert ask.choice, ask.aspects


def test_which_days_is_a_number_asked_and_a_syndrome_is_named_either_way():
    ask = analyse("被狗咬了，以前没打过狂犬疫苗，要在哪几天打针？")
    assert ask.quantity == "时间" and "几天" not in [t.text for t in ask.terms], (ask.quantity, ask.terms)
    assert "先天性风疹症候群" in get_lexicon().variants("先天性风疹综合征")
    assert {"五针法", "四针法"} <= {t.text for t in analyse("五针法和四针法的程序分别是啥？").terms}  # not 针法 twice


THYROID_NOTES = """# 眼瞼（演示）

本文为演示材料，用于软件测试，不作为临床依据。

### 甲狀腺眼病(thyroid eye disease)

#### Graves病是成人眼球突出最常見的原因

#### 與甲狀腺功能高低並不平行

#### 特徵：眼外肌受累以下直肌最常見，其次為內直肌；CT可見肌腹梭形增粗而肌腱不受累

#### 治療：戒菸、控制甲狀腺功能，活動期可用類固醇

### 眼瞼痙攣(blepharospasm)

#### 中年女性較常見
"""


def test_a_run_of_headings_that_head_nothing_loses_no_line(tmp_path):
    """An outline export's every line is a heading: a short one that names nothing below it ("與甲狀腺功能高低並不
    平行") used to close its parent's text, and every line after it went into no passage at all."""
    path = tmp_path / "眼瞼（演示）.md"
    path.write_text(THYROID_NOTES, encoding="utf-8")
    document = load_document(path)
    for line in ("與甲狀腺功能高低並不平行", "特徵：眼外肌受累以下直肌最常見", "治療：戒菸", "中年女性較常見"):
        at = document.text.find(line)
        assert any(s.start <= at < s.end for s in document.sections), line


async def test_a_line_after_a_heading_that_heads_nothing_is_answered(tmp_path):
    service = library(tmp_path, {"眼瞼（演示）.md": THYROID_NOTES, "淚液系統（演示）.md": TEAR_NOTES})
    result = await service.ask("甲状腺眼病CT上最常见哪条眼外肌增粗？")
    assert "下直肌" in tldr(result.answer), result.answer
