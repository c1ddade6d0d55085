"""Questions in a clinician's or a parent's own words, answered from guidelines written in theirs (found on the
blind library of national infectious-disease protocols and the Taiwanese eye-care library, stop 34):

- a drug the general dictionary does not know (奥司他韦) is one word in the question and in the text;
- "一岁多、体重不到15公斤" is how the asker says it; the guideline writes "1 岁及以上……体重≤15kg";
- "上述均为每日2次，疗程5天" gives the number of the dosage sentence before it;
- "比例多少" is answered by "1:1 到 4:1";

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import conclusion, library, tldr

from clincite.offline.lexicon import in_digits
from clincite.text.tokenizer import get_tokenizer

FLU_TXT = """流行性感冒抗病毒治疗要点（演示）
一、抗病毒治疗原则
本文为演示材料，归纳公开指南中的常见做法，不作为临床依据。重症或有重症高危因素
的患者应尽早给予抗病毒治疗，发病 48 小时内用药获益最大，不必等待病原学检测结果
。
二、神经氨酸酶抑制剂
①奥司他韦：胶囊和颗粒剂适用于 1 岁及以上儿童和成人。成人每次 75mg，每日 2 次
。1 岁及以上儿童按体重给药：体重≤15kg，每次 30mg；15kg＜体重≤23kg，每次 45
mg；23kg＜体重≤40kg，每次 60mg；＞40kg，每次 75mg。上述均为每日 2 次，疗程
5 天。肾功能不全者应根据肾功能调整剂量，具体剂量请参照药品说明书，切勿自行加量
。
②扎那米韦：适用于 7 岁及以上儿童和成人，经口吸入给药，不推荐用于有哮喘等气道
疾病的患者。
"""

OMEGA_MD = """# 脂肪酸与眼睛（演示）

> 本文为演示材料，不作为营养或临床建议。

## 为什么要平衡

Omega-3 与 Omega-6 都是人体不能自行合成的必需脂肪酸。现代饮食中 Omega-6 往往摄入过多，
Omega-6 与 Omega-3 的比例可高达 15:1 以上。一般认为较理想的比例为 1:1 到 4:1。

## 食物来源

深海鱼、亚麻籽和核桃富含 Omega-3；大豆油、玉米油富含 Omega-6。
"""


def test_a_drug_listed_only_as_products_is_one_word():
    tokens = get_tokenizer().tokenize("奥司他韦和利巴韦林")
    assert "奥司他韦" in tokens and "利巴韦林" in tokens


def test_a_count_in_chinese_numerals_is_also_written_in_digits():
    assert in_digits("一岁") == ["1岁", "1 岁"]
    assert in_digits("十二个月")[0] == "12个月"
    assert in_digits("一些") == []


async def test_a_dose_asked_in_a_parents_words_is_found_with_its_course(tmp_path):
    service = library(tmp_path, {"流行性感冒抗病毒治疗要点（演示）.txt": FLU_TXT})
    result = await service.ask("一岁多、体重不到15公斤的娃，奥司他韦一次吃多少？吃几天？")
    said = "".join((tldr(result.answer) + conclusion(result.answer)).split())  # the PDF's spacing aside
    assert "体重≤15kg，每次30mg" in said and "疗程5天" in said
    assert result.citations and all(c.verified for c in result.citations)


async def test_a_ratio_asked_is_answered_by_a_ratio(tmp_path):
    service = library(tmp_path, {"脂肪酸与眼睛（演示）.md": OMEGA_MD})
    result = await service.ask("omega-6 跟 omega-3 吃的比例多少算健康？")
    assert "1:1 到 4:1" in tldr(result.answer) + conclusion(result.answer)
