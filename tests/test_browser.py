"""The app in a real browser: Debian's Chromium driven by Playwright against `chainlit run app.py -h`.

A clinician logs in, clicks a starter, watches the steps and the report, opens a cited passage, gives 👍 with a
comment (found in the database and in /metrics.json); a second clinician cannot open the first one's thread.
Screenshots of every step go to test-artifacts/browser/.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import CHROMIUM, CHROMIUM_ARGS, ROOT, click_action, give_feedback, kept_on_failure, send_question

ARTIFACTS = ROOT / "test-artifacts" / "browser"
STARTER_LABEL = "低浓度阿托品"
STARTER_QUESTION = "低浓度阿托品控制近视的效果和副作用？"
pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: .ci/run installs it with apt-get", pytrace=False)
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def log_in(browser, app, user: str):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(app.base_url)
    page.fill("#email", user)
    page.fill("#password", app.users[user])
    page.click("button[type=submit]")
    page.wait_for_selector("#starters", timeout=60_000)
    return context, page


def test_a_clinician_asks_reads_the_sources_and_rates_the_answer(running_app, browser):
    from playwright.sync_api import expect

    base = running_app.base_url
    context, page = log_in(browser, running_app, "doctor_a")
    shot(page, "01-logged-in-starters")
    before = page.request.get(base + "/metrics.json").json()  # the server is shared with other tests

    page.get_by_text(STARTER_LABEL, exact=True).click()
    answer = page.locator(".step[data-step-type='assistant_message']").filter(has_text="论据与来源")
    expect(answer).to_have_count(1, timeout=120_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    expect(answer).to_contain_text("引用核验")
    expect(answer).to_contain_text("TL;DR")
    shot(page, "02-report")
    page.wait_for_url("**/thread/**", timeout=30_000)  # Chainlit moves to the thread's URL after the answer
    thread_url = page.url

    page.locator('[id="step-问题分解"]').first.click()
    expect(page.get_by_text("低浓度阿托品的不良反应").first).to_be_visible()
    shot(page, "03-decomposition-step")

    marker = answer.locator("a.element-link", has_text="【1】").first
    expect(marker).to_be_visible()
    marker.click()
    side = page.locator("#side-view-content")
    expect(side).to_contain_text("《低浓度阿托品临床应用指南（演示）》")
    expect(side).to_contain_text("原文逐字核对")
    quote_start = answer.inner_text().split("原文：“", 1)[1][:12]  # the first quoted passage of the report
    expect(side).to_contain_text(quote_start)
    shot(page, "04-source-passage")

    give_feedback(page, answer, thumbs_up=True, comment="引用准确，节省时间")
    expect(answer.locator(".positive-feedback-on")).to_have_count(1, timeout=20_000)
    shot(page, "05-feedback-given")

    thread_id = thread_url.rsplit("/", 1)[1]
    deadline = time.time() + 20
    rows = []
    while time.time() < deadline and not rows:
        db = running_app.database()
        rows = db.execute('SELECT value, comment FROM feedbacks WHERE "threadId" = ?', (thread_id,)).fetchall()
        db.close()
        time.sleep(0.3)
    assert rows == [(1, "引用准确，节省时间")]

    metrics = page.request.get(base + "/metrics.json").json()
    assert metrics["answers"] == before["answers"] + 1 and metrics["rated"] == before["rated"] + 1
    assert metrics["thumbs_up"] == before["thumbs_up"] + 1 and metrics["ttft_p50"] is not None
    page.goto(base + "/metrics")
    expect(page.get_by_role("heading", name="满意度与运行指标")).to_be_visible()  # doctor_a, the first account: admin
    expect(page.get_by_text(f"{metrics['satisfaction'] * 100:.1f}%").first).to_be_visible()
    shot(page, "06-metrics-page")

    anonymous = browser.new_context()
    assert anonymous.request.get(base + "/metrics.json").status == 401
    anonymous.close()

    # Resume the thread and ask a follow-up: the history travels with it.
    page.goto(thread_url)
    expect(page.get_by_text(STARTER_QUESTION).first).to_be_visible(timeout=30_000)
    send_question(page, "那停药后会反弹吗？")
    expect(page.locator(".step[data-step-type='assistant_message']").filter(has_text="论据与来源")).to_have_count(
        2, timeout=120_000
    )
    shot(page, "07-resumed-follow-up")
    context.close()
    pytest.first_thread_url = thread_url


def test_another_clinician_cannot_open_that_thread(running_app, browser):
    from playwright.sync_api import expect

    base = running_app.base_url
    thread_url = getattr(pytest, "first_thread_url", None)
    assert thread_url, "runs after the first browser test"
    context, page = log_in(browser, running_app, "doctor_b")
    expect(page.locator("#thread-history")).not_to_contain_text("低浓度阿托品")
    page.goto(thread_url)
    page.wait_for_timeout(3000)
    assert STARTER_QUESTION not in page.locator("body").inner_text()
    thread_id = thread_url.rsplit("/", 1)[1]
    response = page.request.get(f"{base}/project/thread/{thread_id}")
    assert response.status in (401, 403, 404)
    shot(page, "08-other-user-blocked")
    context.close()


def test_a_question_the_kb_does_not_cover_gets_a_plain_abstention(running_app, browser):
    """No passage bears on it: the report says so, cites nothing, and /metrics counts a no-evidence answer."""
    from playwright.sync_api import expect

    context, page = log_in(browser, running_app, "doctor_b")
    send_question(page, "青光眼的激光治疗方式有哪些？")
    expect(page.get_by_text("青光眼的激光治疗方式有哪些？").first).to_be_visible(timeout=30_000)  # the question is sent
    answer = page.locator(".step[data-step-type='assistant_message']").filter(has_text="知识库中未找到")
    try:
        expect(answer).to_have_count(1, timeout=120_000)
    finally:
        shot(page, "09-abstention")
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    expect(answer).to_contain_text("知识库中未找到关于“青光眼的激光治疗方式有哪些”的证据")
    expect(answer).to_contain_text("证据覆盖：⚠️ 知识库中没有与该问题相符的证据")
    expect(answer).to_contain_text("本回答没有引用任何原文")
    expect(answer.locator("a.element-link")).to_have_count(0)
    assert "高度近视是开角型青光眼的危险因素之一" not in answer.inner_text()
    assert page.request.get(running_app.base_url + "/metrics.json").status == 403  # doctor_b is a clinician
    admin = running_app.login("doctor_a")  # the first account: an admin
    metrics = admin.get("/metrics.json").json()
    admin.close()
    assert metrics["no_evidence_rate"] and metrics["no_evidence_rate"] > 0
    context.close()


def test_a_simple_question_takes_the_fast_path_and_the_same_question_again_comes_from_the_cache(running_app, browser):
    """The gate's choice is a step; the same question in other words is answered at once, labelled, and 重新回答
    answers it anew."""
    from playwright.sync_api import expect

    context, page = log_in(browser, running_app, "doctor_a")
    first, again = "离焦框架眼镜适合哪些孩子？", "哪些孩子适合戴离焦框架眼镜？"
    answers = page.locator(".step[data-step-type='assistant_message']").filter(has_text="论据与来源")
    send_question(page, first)
    expect(answers).to_have_count(1, timeout=120_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    gate = page.locator('[id="step-简单问题：直接检索"]').first
    expect(gate).to_be_visible()
    gate.click()
    expect(page.get_by_text("只问了一件事").first).to_be_visible()
    shot(page, "10-fast-path-step")

    send_question(page, again)
    expect(answers).to_have_count(2, timeout=60_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    label = f"与之前的问题“{first}”相同，直接给出当时的回答（知识库未变）"
    expect(page.get_by_text(label).first).to_be_visible()
    cached = answers.nth(1)
    expect(cached).to_contain_text("· 缓存")
    reanswer = page.get_by_role("button", name="重新回答", exact=True)
    expect(reanswer).to_have_count(1)
    shot(page, "11-similar-question-from-the-cache")

    with kept_on_failure(page, "12-answered-anew-failed", running_app.log_file):
        click_action(page, reanswer)
        expect(answers).to_have_count(3, timeout=120_000)
    expect(answers.nth(2)).not_to_contain_text("· 缓存")
    shot(page, "12-answered-anew")
    context.close()
