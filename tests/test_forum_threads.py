"""Forum threads and community Q&A (妈妈网、Dcard、PTT、贴吧): a parent's story, what the doctor said in it, the
replies. Pages saved from forum software carry its anti-copy noise ("8 c' S. y5 [# W) Y/ |0" between a post's
lines, hidden spans in the HTML); the asker asks of the story ("医生查出了啥？", "老大夫怎么交代的？", "那个发帖的人
自己是多少度？") and goes on about what the answer found ("那这个还能完全恢复吗？").

Found on the stop-60 blind library (forum threads and community Q&A in Simplified and Traditional characters). The
threads here are written for these tests in our own words (演示材料，仅用于软件测试，不作为临床依据).
"""

from __future__ import annotations

from pathlib import Path

from test_news_reports import chat
from test_other_styles import library, tldr

from clincite.offline.questions import analyse

# A post as a Discuz forum serves it, saved as text: its anti-copy noise at the start and end of lines
JAMMED_THREAD = (
    "【求助】孩子天天玩手机，眼睛疼得睁不开（演示材料）\n"
    "; s\" C7 B( ?+ q' C+ y1 q$ l% o2 |' ] 手机没收以后，孩子一写作业就喊眼睛疼得睁不开，我们就带他去了医院。\n"
    "医生检查后告诉我们，孩子得了睑板腺功能障碍，因此导致了干眼症。 hGo|2@sc 8Gg/M%wq9U\n"
    "Ml/p{ *p 医生说睑板腺的损伤很难完全恢复，只能靠热敷和治疗缓解症状。\n"
    "jzA8f+:q\n"
    "楼主补充：以后每天玩手机不超过半小时。\n"
)

FLOATERS = (
    "眼前两个小圆点跟着转（演示材料）\n"
    "三年前右眼前突然冒出一个小圆点，会随着眼睛来回飘，后来左眼也有了。\n"
    "到医院检查，一位老大夫对我说：“以后尽量少看屏幕，没有别的问题。”\n"
    "我本以为过段时间就能恢复，结果到现在也没有消失。\n"
)

LASER_THREAD = (
    "网友热议：近视雷射手术敢不敢做（演示材料）\n"
    "原PO发文表示，自己两眼近视分别是100度和250度，认真考虑要不要做雷射手术。\n"
    "有一位老前辈直接劝她：“你看有几个眼科医师自己做了？术后畏光、眼干都很常见。”\n"
    "贴文一出，许多网友分享了自己的经验，有人说效果很好，也有人说不敢做。\n"
)

GLASSES_DIARY = (
    "女儿近视了（演示材料）\n"
    "女儿配了眼镜以后很配合，每天起床第一件事就是戴上。\n"
    "这样一戴就是半年，也没去复查，今天去查了查又加深了50度。照这个速度，到初中要多少度？\n"
    "所以心情很沉重，以后要多带她去户外活动。\n"
)


def threads() -> dict[str, str]:
    return {
        "孩子玩手机干眼-某论坛.txt": JAMMED_THREAD,
        "眼前小圆点-某博客.txt": FLOATERS,
        "近视雷射敢不敢做-某论坛.txt": LASER_THREAD,
        "女儿近视-某家长日记.txt": GLASSES_DIARY,
    }


def test_a_forums_anti_copy_noise_is_no_text():
    """The noise goes, the post stays, and a line that is only noise is left empty."""
    from clincite.ingest.loaders.text import plain_document, without_jammer

    text = without_jammer(JAMMED_THREAD)
    for noise in ("q$", "|'", "hGo|2@sc", "8Gg/M%wq9U", "Ml/p{", "jzA8f+:q"):
        assert noise not in text, text
    assert "手机没收以后，孩子一写作业就喊眼睛疼得睁不开" in text
    assert "医生说睑板腺的损伤很难完全恢复" in text
    document = plain_document(JAMMED_THREAD, "孩子玩手机干眼-某论坛")
    assert "q$" not in document.text and "8Gg" not in document.text


def test_text_that_only_looks_odd_is_kept():
    """A reference list, doses, ranges and abbreviations are text, however many marks they carry."""
    from clincite.ingest.loaders.text import without_jammer

    guideline = (
        "术后用药（演示材料）\n"
        "0.1% 氟米龙滴眼液每日4次，1~2周后逐渐减量。\n"
        "CT/MR 检查可用于排除眶内异物。\n"
        "[12] Smith J, et al. Ophthalmology, 2020, 127(4):501-508.\n"
        "[13] Wang L, Li H. Chin J Ophthalmol, 2019, 55(2):101-106.\n"
    )
    assert without_jammer(guideline) == guideline


def test_hidden_words_of_a_forum_page_are_not_its_text(tmp_path: Path):
    """Discuz hides its noise in <font class="jammer"> and inline display:none spans; a hidden tab panel (a <div>)
    is still the page's."""
    from clincite.ingest.loaders.webpage import load_html

    page = tmp_path / "thread.html"
    page.write_text(
        "<html><head><meta charset='utf-8'><title>宝宝霰粒肿求助（演示材料）</title></head><body><div>"
        "<p>医生说宝宝长的是霰粒肿，<font class='jammer'>r [$ j+ n*</font>先热敷，配合眼药水，"
        "<span style='display: none'>8Gg/M%wq9U</span>一两周不见小再考虑手术。</p>"
        "<div class='tab' style='display:none'><p>热敷时注意水温，不要烫伤宝宝的眼皮。</p></div>"
        "</div></body></html>",
        encoding="utf-8",
    )
    text = load_html(page).text
    assert "先热敷，配合眼药水，一两周不见小再考虑手术" in text, text
    assert "[$" not in text and "8Gg" not in text
    assert "不要烫伤宝宝的眼皮" in text


async def test_what_the_doctor_found_is_the_answer_not_the_story_retold(tmp_path: Path):
    """ "医生查出了啥？": every word of the question is the asker's story; the sentence saying what was found
    answers, not the one retelling the story, however well it matches — and no noise is quoted."""
    service = library(tmp_path, threads())
    answer = (await service.ask("孩子老玩手机，眼睛疼得睁不开，医生查出了啥？")).answer
    said = tldr(answer)
    assert "睑板腺功能障碍" in said, said
    assert "q$" not in answer and "8Gg" not in answer


async def test_this_goes_on_with_what_the_last_answer_found(tmp_path: Path):
    """ "那这个还能完全恢复吗？" after "医生查出了啥？" asks of the finding the answer named, not of the story."""
    service = library(tmp_path, threads())
    turns = await chat(service, "孩子老玩手机，眼睛疼得睁不开，医生查出了啥？")
    result = await service.ask("那这个还能完全恢复吗？", turns)
    searched = " ".join(q.text for q in [*result.sub_queries, *(a.sub_query for a in result.analyses)])
    assert "睑板腺功能障碍" in searched, searched
    assert "很难完全恢复" in tldr(result.answer), result.answer


async def test_what_the_old_doctor_said_is_asked_by_怎么交代(tmp_path: Path):
    service = library(tmp_path, threads())
    said = tldr((await service.ask("眼前飘着两个小圆点好几年了，去医院老大夫怎么交代的？")).answer)
    assert "以后尽量少看屏幕" in said, said


def test_a_reason_asked_as_理由_asks_why():
    assert "原因" in analyse("有个老前辈劝她别做近视手术，理由是啥？").aspects


async def test_the_poster_asked_of_goes_on_with_the_thread_as_written(tmp_path: Path):
    """ "那个发帖的人自己是多少度？" after a question on 近视雷射 searches 近视 and 雷射 together, as asked."""
    asked = analyse("那个发帖的人自己是多少度？", ["想做近视激光，网友都怎么说？"])
    text = asked.sub_queries()[0][0]
    assert text.startswith("近视 激光"), text
    service = library(tmp_path, threads())
    turns = await chat(service, "想做近视激光，网友都怎么说？")
    said = tldr((await service.ask("那个发帖的人自己是多少度？", turns)).answer)
    assert "100度和250度" in said, said


def test_有啥不一样_asks_what_tells_them_apart():
    assert "区别" in analyse("戴隐形老是眼睛发红，跟普通红眼病有啥不一样？").aspects


def test_a_visit_the_story_says_was_not_made_is_not_asked_for():
    """ "半年没去复查，再一查度数怎么样了？" asks the figure, not when to come back."""
    asked = analyse("孩子近视配了眼镜后半年没去复查，再一查度数怎么样了？")
    assert "随访" not in asked.aspects, asked.aspects
    assert "随访" in analyse("配了眼镜以后多久复查一次？").aspects


async def test_a_figure_in_degrees_says_the_度数_asked(tmp_path: Path):
    """ "又加深了50度" gives the 度数 asked of."""
    service = library(tmp_path, threads())
    said = tldr((await service.ask("女儿戴眼镜半年没复查，再查度数变成啥样了？")).answer)
    assert "又加深了50度" in said, said


ATROPINE_POST = (
    "儿子滴阿托品控制近视（演示材料）\n"
    "眼科医生提出了三个控制近视效果好的办法：戴角膜塑形镜、戴离焦镜片、滴阿托品眼药水。\n"
    "我们从2020年开始滴阿托品，每晚10点睡前两眼各滴一滴，半年后复查度数只涨了25度。\n"
)

ATROPINE_TRIAL = (
    "低浓度阿托品研究摘要（演示材料）\n"
    "该研究中，0.05%阿托品延缓近视进展的效果优于0.01%阿托品，两组的畏光等不良反应均较少。\n"
)


async def test_two_figures_compared_are_answered_only_where_a_text_names_them(tmp_path: Path):
    """ "0.01%和0.05%哪个效果好？": a parent's post on atropine that names no concentration cannot tell them apart
    (no "0" of 0.01% matches every figure of the library); a text comparing them answers."""
    question = "低浓度阿托品控制近视，0.01%和0.05%哪个效果好？"
    (tmp_path / "post").mkdir()
    (tmp_path / "both").mkdir()
    service = library(tmp_path / "post", {"儿子滴阿托品-某博客.txt": ATROPINE_POST})
    assert "未找到" in tldr((await service.ask(question)).answer)
    both = {"儿子滴阿托品-某博客.txt": ATROPINE_POST, "阿托品研究-某刊.txt": ATROPINE_TRIAL}
    service = library(tmp_path / "both", both)
    said = tldr((await service.ask(question)).answer)
    assert "0.05%阿托品延缓近视进展的效果优于0.01%阿托品" in said, said


def test_two_conditions_listed_with_a_顿号_are_each_asked_of():
    """ "霰粒肿、新生儿泪道不通…分别怎么处理？" asks of each condition (新生儿 stays with its 泪道不通); a list of
    the asker's own words ("头顶痛、前额痛分别用什么") stays one question."""
    parts = [text for text, _, _ in analyse("宝宝长了霰粒肿、新生儿泪道不通，家长分别是怎么在家处理的？").sub_queries()]
    assert len(parts) == 2 and parts[0].startswith("霰粒肿") and parts[1].startswith("新生儿泪道不通"), parts
    assert len(analyse("比如头顶痛、前额痛分别用什么药？").sub_queries()) == 1
