"""A national guideline saved as text from its PDF, read and answered as a clinician would ask it (found on the
stop-35 blind library of National Health Commission guidelines, 近视防治指南2026 among them):

- the text is hard-wrapped at the page's margin, with page numbers between lines, a sentence's last "。" now and then
  on a line of its own, and a long English reference list whose lines are wider than the Chinese body's: the body's
  sentences are still read whole;
- "适用于8 岁及以上儿童青少年。" names no subject: it says the age of the lens the sentence before it names;
- "目前尚无绝对年龄限制。" says all that "周边离焦框架眼镜有没有年龄限制？" asks but its subject, which the
  paragraph names two sentences before: it is the answer, not the paragraph's first sentence naming the lens;
- "8岁孩子一年眼轴长了0.3mm" gives the asker's own figures: a passage giving the reference values answers it, though
  it does not repeat 8 or 0.3.

Every document here is demo material written for these tests (标注"演示"); it is not clinical guidance.
"""

from __future__ import annotations

from test_other_styles import conclusion, library, tldr

from clincite.ingest.loaders.text import plain_document

MARGIN = 26  # Chinese characters per line, as the PDF was set …
LATIN_MARGIN = 80  # … and Latin ones (wider in display columns than a Chinese line: 80 against 52)

BODY = [
    "儿童青少年近视防治要点（演示）",
    "本文为演示材料，归纳公开指南中的常见做法，用于软件测试，不作为临床依据。近视防治应以预防为先，"
    "早发现、早干预，家庭、学校和医疗机构共同参与，定期建立屈光发育档案。",
    "一、眼轴与屈光发育",
    "眼轴长度是评估近视发生和进展的重要客观指标，随生长发育逐年增长，应结合年龄、屈光度数综合判断是否正常。"
    "生理性眼轴增长参考：6～10岁儿童平均每年不超过0.2mm，10岁以上儿童应低于此值。"
    "眼轴增长明显快于同龄参考值者，应缩短复查间隔并评估干预措施。",
    "二、光学矫正",
    "1.框架眼镜：最简单、安全的矫正方式，近视儿童应至少每半年复查一次，及时调整镜片度数和镜架。",
    "2.角膜塑形镜：一种夜间配戴的逆几何设计硬性透气性接触镜，通过改变角膜中央的形态暂时降低近视度数，"
    "可延缓儿童青少年眼轴增长。适用于8岁及以上儿童青少年。须在有资质的医疗机构验配，并严格遵守护理和复查要求。",
    "3.周边离焦框架眼镜：采用特殊光学设计的框架眼镜，已成为临床常用的近视防控措施。其适用人群主要为近视进展较快的"
    "儿童青少年。目前尚无绝对年龄限制。显性斜视、弱视、双眼视功能异常者不宜配戴。",
    "三、病理性近视的随访",
    "病理性近视者应定期检查眼底。如突发视力下降、视物变形、眼前黑影突然增多或持续闪光感，应立即就医。",
]
ROSTER = [
    "编写专家组（演示名单）",
    "甲 乙 演示市第一人民医院",
    "丙丁戊 演示医科大学附属眼科医院",
    "己 庚 演示省眼科中心",
]
REFERENCES = [
    f"[{n}] Demo A, Demo B, Demo C, et al. A demonstration study of axial length growth in school children "
    f"number {n}[J]. Demo J Ophthalmol, 2020, {n}(1): 1-10."
    for n in range(1, 25)
]


def as_pdf_text(paragraphs: list[str], spilled: tuple[str, ...] = ()) -> str:
    """The paragraphs as text copied out of a PDF: lines cut at the margin, a page number every 12 lines, and the
    last "。" of the paragraphs starting with one of `spilled` on a line of its own."""
    lines: list[str] = []
    for paragraph in paragraphs:
        spills = paragraph.startswith(spilled) if spilled else False
        text = paragraph[:-1] if spills else paragraph
        width = LATIN_MARGIN if text.isascii() else MARGIN  # Latin letters are narrower: more fit on a line
        lines += [text[i : i + width] for i in range(0, len(text), width)] + (["。"] if spills else [])
    out: list[str] = []
    for number, line in enumerate(lines, 1):
        out.append(line)
        if number % 12 == 0:
            out.append(str(number // 12 + 1))
    return "\n".join(out) + "\n"


GUIDELINE_TXT = as_pdf_text([*BODY, *ROSTER, "参考文献", *REFERENCES], spilled=("2.角膜塑形镜", "眼轴长度"))


def test_a_wrapped_guideline_is_read_in_whole_sentences_despite_its_wider_reference_lines():
    assert (
        "\n。\n" in GUIDELINE_TXT and max(map(len, REFERENCES)) > LATIN_MARGIN > 2 * MARGIN
    )  # the premises, as in the real one
    document = plain_document(GUIDELINE_TXT, "儿童青少年近视防治要点（演示）")
    lines = ["".join(line.split()) for line in document.text.split("\n") if line.strip()]  # the joiner's spaces aside
    assert "生理性眼轴增长参考：6～10岁儿童平均每年不超过0.2mm，10岁以上儿童应低于此值。" in "|".join(lines)
    assert "适用于8岁及以上儿童青少年。须在有资质的医疗机构验配" in "|".join(lines)
    assert "。" not in lines and any(line.endswith("复查要求。") for line in lines)  # spilled stops put back


async def test_a_subjectless_sentence_gives_the_age_of_what_the_sentence_before_names(tmp_path):
    service = library(tmp_path, {"儿童青少年近视防治要点（演示）.txt": GUIDELINE_TXT})
    result = await service.ask("角膜塑形镜孩子多大可以戴？")
    assert "适用于8岁及以上儿童青少年" in "".join((tldr(result.answer) + conclusion(result.answer)).split())
    assert result.citations and all(c.verified for c in result.citations)


async def test_the_askers_own_figures_do_not_keep_the_reference_values_from_answering(tmp_path):
    service = library(tmp_path, {"儿童青少年近视防治要点（演示）.txt": GUIDELINE_TXT})
    result = await service.ask("8岁孩子一年眼轴长了0.3mm，这算正常生长吗？")
    assert "平均每年不超过0.2mm" in "".join((tldr(result.answer) + conclusion(result.answer)).split())


async def test_a_sentence_saying_what_is_asked_answers_for_the_subject_its_paragraph_named_before(tmp_path):
    service = library(tmp_path, {"儿童青少年近视防治要点（演示）.txt": GUIDELINE_TXT})
    result = await service.ask("周边离焦框架眼镜有没有年龄限制？")
    assert "目前尚无绝对年龄限制" in "".join(tldr(result.answer).split())
