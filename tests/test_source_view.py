"""The source view a clinician checks a claim with, and a clean first screen — in Chromium against the real app.

The app starts on an empty data directory whose first-run folder holds the real test files (tests/realfiles.py):
a 3-page PDF, a DOCX dosing table, an HTML page, Big5/GB18030/UTF-16 texts. A clinician logs in (the form asks for
a 用户名), asks three questions, opens every 【n】 (the panel opens only on a click, with that citation's passage,
highlighted quote, 第 N 页, the evidence item and "打开原文" at #page=N), reloads the thread and opens every 【n】 again
(including a passage Chainlit filed under unknown/), gives a 👎 with a comment and finds it on /metrics. No request of
the session answers 4xx. Screenshots (desktop and 390×844) go to test-artifacts/browser/.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import realfiles as rf
from conftest import CHROMIUM, CHROMIUM_ARGS, ROOT, AppServer, give_feedback, send_question

from clincite.core.shapes import Chunk, Citation
from clincite.web.sources import highlighted_markdown, locate_quote, source_markdown, with_pages

ARTIFACTS = ROOT / "test-artifacts" / "browser"
USER, PASSWORD = "doctor_src", "password-src-123"
QUESTIONS = [
    "高度近视儿童多久做一次散瞳眼底检查？",
    "体重20–30 kg 的演示剂量是多少？",
    "角膜塑形镜揉搓清洗有什么要点？",
]


# --- the side-panel content (no browser) -------------------------------------------------------------------------


def _chunk(text: str, pages=None) -> Chunk:
    return Chunk(
        id="c1",
        source="儿童近视防控指南（演示）.pdf",
        title="儿童近视防控指南（演示）",
        heading_path=["三、高度近视的随访"],
        position=0,
        start=0,
        end=len(text),
        text=text,
        content_hash="h",
        pages=pages,
    )


def test_the_quote_is_highlighted_in_place_and_document_text_stays_inert():
    text = "高度近视风险较高。高度近视儿童建议每年至少进行一次散瞳眼底检查。[链接](http://x.example) ![图](a.png)"
    quote = "高度近视儿童建议每年至少进行一次散瞳眼底检查"
    span = locate_quote(text, quote)
    assert span and text[span[0] : span[1]] == quote
    shown = highlighted_markdown(text, span)
    assert f"***{quote}***" in shown
    assert "](http" not in shown and "![" not in shown  # links and images from the document are inert
    # A quote the model wrote with half-width punctuation is still found in the passage.
    assert locate_quote("浓度为0.01%，每晚一次。", "浓度为0.01%,每晚一次") == (0, 13)


def test_source_markdown_names_title_section_page_item_and_links():
    text = "高度近视儿童建议每年至少进行一次散瞳眼底检查。"
    citation = Citation(
        number=2,
        title="随访频率",
        source="儿童近视防控指南（演示）",
        quote=text[:-1],
        chunk_id="c1",
        heading_path=["三、高度近视的随访"],
        pages=[3, 3],
        verified=True,
    )
    content = source_markdown(citation, _chunk(text, [3, 3]))
    assert content.startswith("#### 《儿童近视防控指南（演示）》 · 三、高度近视的随访 · 第 3 页")
    assert "支持的论据：【2】随访频率" in content and "原文逐字核对" in content
    assert "(/clincite/original/" in content and "#page=3)" in content and "/clincite/passage/c1?quote=" in content
    unverified = source_markdown(citation.model_copy(update={"verified": False}), _chunk(text, [3, 3]))
    assert "未能在来源中逐字找到" in unverified and "***" not in unverified


def test_the_report_names_the_page_of_each_verified_quote():
    report = "**【1】随访**\n说明：x\n来源：《儿童近视防控指南（演示）》\n原文：“y”"
    cited = [Citation(number=1, source="儿童近视防控指南（演示）", quote="y", verified=True, pages=[3, 3])]
    assert "来源：《儿童近视防控指南（演示）》（第 3 页）" in with_pages(report, cited)


# --- in the browser -----------------------------------------------------------------------------------------------


def first_run_library(data: Path) -> dict[str, str]:
    """The app's library: the real test files (a 3-page PDF, a DOCX dosing table, an HTML page, Big5/GB18030/UTF-16
    texts)."""
    rf.make_all(data / "docs")
    return {"SAMPLE_KB_DIR": str(data / "docs")}


SOURCE_VIEW_APP = AppServer(
    "source-view",
    fixture="app_server",
    users={USER: PASSWORD},
    env={"CHAINLIT_AUTH_SECRET": "source-view-secret-" + "x" * 40},
    prepare=first_run_library,
)


@pytest.fixture(scope="module")
def app_server():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    server = SOURCE_VIEW_APP.wait()
    yield server.base_url, server.data_dir
    SOURCE_VIEW_APP.stop()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def panel_shot(page, name: str) -> None:
    """Screenshot once the source panel has slid fully into view (it animates in from the right)."""
    page.wait_for_function(
        """() => { const el = document.getElementById('side-view-content');
                   if (!el) return false;
                   const box = el.getBoundingClientRect();
                   return box.width > 0 && box.right <= window.innerWidth + 1 && box.left >= 0; }""",
        timeout=10_000,
    )
    page.wait_for_timeout(500)
    shot(page, name)


def watch_errors(page, base: str, errors: list[str]) -> None:
    """Every 4xx/5xx answer of the app, and every console error about one. (Chainlit's login page probes /user and
    gets 401 by design, so this starts after login; resources on other hosts fail here only for want of a network.)"""
    page.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and r.url.startswith(base) and not _closed_poll(r.status, r.url)
            else None
        ),
    )
    page.on(
        "console",
        lambda m: (
            errors.append(f"console: {m.text}")
            if m.type == "error" and "status of" in m.text and not _closed_poll(400, m.location.get("url", ""))
            else None
        ),
    )


def _closed_poll(status: int, url: str) -> bool:
    """Engine.IO answers 400 ("Session ID unknown") to a long-poll still in flight for a socket the page closed by
    navigating away (goto): a race of the transport, seen once in CI, not an error of the app."""
    return status == 400 and "/socket.io/" in url and "transport=polling" in url and "sid=" in url


def ask(page, question: str, answers_before: int):
    from playwright.sync_api import expect

    send_question(page, question)
    answers = page.locator(".step[data-step-type='assistant_message']").filter(has_text="论据与来源")
    expect(answers).to_have_count(answers_before + 1, timeout=120_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    return answers.nth(answers_before)


def open_every_citation(page, expected_answers: int) -> int:
    """Click every 【n】 of every answer: the panel shows that label and one passage, loaded without an error."""
    from playwright.sync_api import expect

    answers = page.locator(".step[data-step-type='assistant_message']").filter(has_text="论据与来源")
    expect(answers).to_have_count(expected_answers, timeout=60_000)
    opened = 0
    for a in range(expected_answers):
        links = answers.nth(a).locator("a.element-link")
        for i in range(links.count()):
            link = links.nth(i)
            label = link.inner_text().strip()
            link.click()
            expect(page.locator("#side-view-title")).to_contain_text(label, timeout=10_000)
            content = page.locator("#side-view-content")
            expect(content).to_contain_text("《", timeout=10_000)
            expect(content).not_to_contain_text("error occurred")
            assert content.locator(":scope > *").count() == 1  # that citation's passage only
            opened += 1
    return opened


@pytest.mark.browser
def test_source_view_reload_and_clean_first_screen(app_server):
    from playwright.sync_api import expect, sync_playwright

    base, data = app_server
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 900})
        page = context.new_page()

        # First screen: the login asks for a 用户名; after login no toast, the starters are there.
        page.goto(base)
        expect(page.locator("label[for=email]")).to_have_text("用户名", timeout=30_000)
        assert page.locator("#email").get_attribute("placeholder") != "me@example.com"
        shot(page, "20-login-username")
        page.fill("#email", USER)
        page.fill("#password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("#starters", timeout=60_000)
        watch_errors(page, base, errors)
        page.reload()
        page.wait_for_selector("#starters", timeout=60_000)
        page.wait_for_timeout(1500)
        expect(page.locator("[data-sonner-toast]")).to_have_count(0)
        shot(page, "21-first-screen")

        # Question 1: the answer sits on page 3 of the PDF.
        answer = ask(page, QUESTIONS[0], 0)
        expect(answer).to_contain_text("（第 3 页）")
        page.wait_for_timeout(1000)
        expect(page.locator("#side-view-title")).to_have_count(0)  # the panel did not open by itself
        body = page.locator("body").inner_text()
        assert "大语言模型可能会犯错" not in body and "离线演示模式" in body  # the watermark tells the truth
        page.wait_for_url("**/thread/**", timeout=30_000)  # Chainlit moves to the thread's URL after the answer
        thread_url = page.url

        answer.locator("a.element-link", has_text="【1】").first.click()
        side = page.locator("#side-view-content")
        expect(page.locator("#side-view-title")).to_contain_text("【1】")
        expect(side).to_contain_text("第 3 页")
        expect(side).to_contain_text("三、高度近视的随访")
        expect(side).to_contain_text("支持的论据：【1】")
        quote = answer.inner_text().split("原文：“", 1)[1].split("”", 1)[0]  # the first evidence item's quote
        highlight = side.locator(".italic > .font-bold, .font-bold > .italic").first
        expect(highlight).to_contain_text(quote.strip("。，；：、 ")[:20])
        panel_shot(page, "22-source-view-desktop")
        original = side.locator("a", has_text="打开原文").get_attribute("href")
        assert original.startswith("/clincite/original/") and original.endswith("#page=3")
        pdf = page.request.get(base + original.split("#")[0])
        assert pdf.status == 200 and pdf.headers["content-type"] == "application/pdf"
        assert pdf.body()[:5] == b"%PDF-"
        neighbours = side.locator("a", has_text="查看前后段落").get_attribute("href")
        context_page = page.request.get(base + neighbours)
        assert context_page.status == 200 and "<mark>" in context_page.text() and "上一段" in context_page.text()
        page.goto(base + neighbours)
        shot(page, "23-neighbouring-passages")
        page.goto(thread_url)

        # Two more answers in the same thread: a DOCX table row, an HTML page cited by its title.
        answer = ask(page, QUESTIONS[1], 1)
        answer.locator("a.element-link", has_text="【1】").first.click()
        expect(side).to_contain_text(rf.DOCX_ROW.split(" | ")[1])  # the dosing row: "演示剂量：每次 250 mg"
        expect(side).to_contain_text("体重：20–30 kg")
        answer = ask(page, QUESTIONS[2], 2)
        expect(answer).to_contain_text(rf.HTML_TITLE)  # "3089kp01.html" is cited by its <title>
        expect(page.locator("#side-view-title")).to_have_count(0)
        assert open_every_citation(page, 3) >= 3

        # A passage Chainlit filed under unknown/ (a thread's first answer, before the thread had its user).
        with sqlite3.connect(data / "clincite.sqlite3") as db:
            keys = [r[0] for r in db.execute('SELECT "objectKey" FROM elements ORDER BY rowid')]
            assert keys and not any(k.startswith("unknown/") for k in keys)
            moved = "unknown/" + keys[0].split("/", 1)[1]
            (data / "files" / moved).parent.mkdir(parents=True, exist_ok=True)
            (data / "files" / keys[0]).rename(data / "files" / moved)
            db.execute('UPDATE elements SET "objectKey" = ? WHERE "objectKey" = ?', (moved, keys[0]))

        # Reload: every passage of every answer opens again, none opens by itself.
        page.goto(thread_url)
        expect(page.get_by_text(QUESTIONS[0]).first).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1500)
        expect(page.locator("#side-view-title")).to_have_count(0)
        assert open_every_citation(page, 3) >= 3
        panel_shot(page, "24-reloaded-thread-source")

        # 👎 with a comment, found by the clinic's reviewers on /metrics.
        page.goto(thread_url)
        last = page.locator(".step[data-step-type='assistant_message']").filter(has_text="论据与来源").last
        expect(last).to_be_visible(timeout=30_000)
        give_feedback(page, last, thumbs_up=False, comment="没有说明镜盒多久更换（演示评论）")
        expect(last.locator(".negative-feedback-on")).to_have_count(1, timeout=20_000)
        page.goto(base + "/metrics")
        expect(page.get_by_text("没有说明镜盒多久更换（演示评论）")).to_be_visible()
        expect(page.get_by_text(QUESTIONS[2]).first).to_be_visible()
        expect(page.get_by_text("系统状态")).to_be_visible()
        thread_id = thread_url.rsplit("/", 1)[1]  # opened read-only by any reviewer
        assert page.locator(f'a[href="/admin/review/thread/{thread_id}"]').count() >= 1
        shot(page, "25-metrics-thumbs-down")
        context.close()

        # On a phone: the panel is opened by a click only and can be closed again.
        phone = browser.new_context(
            locale="zh-CN", viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
        )
        mobile = phone.new_page()
        mobile.goto(base)  # the login cookie is per context: log in again
        mobile.fill("#email", USER)
        mobile.fill("#password", PASSWORD)
        mobile.click("button[type=submit]")
        mobile.wait_for_selector("#chat-input", timeout=60_000)
        watch_errors(mobile, base, errors)
        mobile.goto(thread_url)
        first = mobile.locator(".step[data-step-type='assistant_message']").filter(has_text="论据与来源").first
        expect(first).to_be_visible(timeout=30_000)
        mobile.wait_for_timeout(1500)
        expect(mobile.locator("#side-view-title")).to_have_count(0)
        first.locator("a.element-link", has_text="【1】").first.click()
        expect(mobile.locator("#side-view-content")).to_contain_text("第 3 页", timeout=10_000)
        panel_shot(mobile, "26-source-view-phone")
        phone.close()
        browser.close()
    assert not errors, "\n".join(errors)
