"""Issue 21: the clinic runs its library and its people from the browser — a real `chainlit run app.py -h` on a fresh
data directory, real accounts, Debian's Chromium through Playwright, the ingest in its child process.

lead is the first account created (so an admin); doctor_c and doctor_d are clinicians. The admin uploads a 3-page
demo PDF with a table (tests/demo_pdf.py) while a second upload waits in the queue, sees it listed with its pages
and passages, asks a question answered on its page 2 and gets the page cited, deletes it and the same question
abstains; a clinician's cookie gets 403 from every admin route the app has (enumerated from the app itself); the
review desk shows a colleague's 👎 with its comment, opens the thread read-only and marks it handled. Screenshots of
every admin page, desktop and 390×844, go to test-artifacts/browser/admin-*.png.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from conftest import CHROMIUM, CHROMIUM_ARGS, ROOT, SAMPLE_KB, AppServer, _app_root, give_feedback, send_question
from demo_pdf import FILE_NAME as DEMO_PDF
from demo_pdf import QUESTION as PAGE_2_QUESTION
from demo_pdf import make_demo_pdf
from filelock import FileLock

from clincite.report.inert import markdown_html
from clincite.users.store import ADMIN, CLINICIAN, UserStore
from clincite.web.render import MODE_NOTICES

ARTIFACTS = ROOT / "test-artifacts" / "browser"
USERS = {"lead": "lead-password-1", "doctor_c": "doctor-c-pass-2", "doctor_d": "doctor-d-pass-3"}
MAX_FILE_MB, MAX_FILES = 2, 4
DEMO_TITLE = "儿童弱视遮盖治疗要点（演示）"
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
ADMIN_APP = AppServer(
    "admin",
    fixture="admin_app",
    users=USERS,  # created in this order: lead is the first account, hence an admin
    env={"INGEST_MAX_FILE_MB": str(MAX_FILE_MB), "UPLOAD_MAX_FILES": str(MAX_FILES)},
)


@pytest.fixture(scope="module")
def admin_app():
    return ADMIN_APP.wait()


def client(app, name: str) -> closing[httpx.Client]:
    """A logged-in HTTP client, closed at the end of a `with` block."""
    return closing(app.login(name, USERS[name]))


def csrf_of(http: httpx.Client, path: str = "/admin/library") -> str:
    page = http.get(path)
    assert page.status_code == 200, page.text[:300]
    return re.search(r'name="csrf-token" content="([0-9a-f]+)"', page.text).group(1)


def post_form(http: httpx.Client, path: str, data: dict, token: str | None = None, origin: str | None = None):
    fields = {**data, **({"csrf": token} if token else {})}
    headers = {"Origin": origin if origin is not None else str(http.base_url).rstrip("/")}
    return http.post(path, data=fields, headers=headers)


def upload(http: httpx.Client, files: list[tuple[str, bytes]], token: str, replace: str | None = None):
    return http.post(
        "/admin/api/library/upload",
        files=[("files", (name, data, "application/octet-stream")) for name, data in files],
        data={"replace": replace} if replace else {},
        headers={"X-CSRF-Token": token, "Origin": str(http.base_url).rstrip("/"), "Accept": "application/json"},
    )


def raw_post_headers_only(base: str, path: str, http: httpx.Client, token: str, length: int) -> tuple[int, str]:
    """A POST that announces `length` bytes and sends none of them: the answer must come from the headers alone."""
    import socket
    from urllib.parse import urlsplit

    host, port = urlsplit(base).hostname, urlsplit(base).port
    cookie = "; ".join(f"{name}={value}" for name, value in http.cookies.items())
    request = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nOrigin: {base}\r\nX-CSRF-Token: {token}\r\n"
        f"Accept: application/json\r\nCookie: {cookie}\r\nContent-Type: multipart/form-data; boundary=x\r\n"
        f"Content-Length: {length}\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(request.encode("latin-1"))
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < 10:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


def wait_for_jobs(http: httpx.Client, timeout: float = 180) -> str:
    """Until no job is queued or running; returns the queue's HTML."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        fragment = http.get("/admin/library/queue").text
        if 'data-state="queued"' not in fragment and 'data-state="running"' not in fragment:
            return fragment
        time.sleep(0.5)
    raise AssertionError("the ingest queue did not finish:\n" + fragment)


# --- accounts and roles -------------------------------------------------------------------------------------------


def test_the_first_account_is_an_admin_and_a_role_change_ends_the_sessions(tmp_path):
    store = UserStore(tmp_path / "accounts.sqlite3")
    first = store.add("主任", "password-1")
    second = store.add("张医生", "password-2")
    assert (first.role, second.role) == (ADMIN, CLINICIAN)
    assert store.add("李医生", "password-3", role=ADMIN).role == ADMIN
    assert store.add("张医生", "new-password-2").role == CLINICIAN  # a reset keeps the role
    before = store.generation("张医生")
    assert store.set_role("张医生", ADMIN).role == ADMIN
    assert store.generation("张医生") > before  # its cookies carried the old role: they end
    assert store.set_role("nobody", ADMIN) is None
    assert [(a.name, a.role) for a in store.accounts()] == [("主任", ADMIN), ("张医生", ADMIN), ("李医生", ADMIN)]
    with pytest.raises(ValueError):
        store.set_role("主任", "root")


def test_a_logout_written_by_another_process_is_seen_by_the_very_next_check(tmp_path):
    here, there = UserStore(tmp_path / "accounts.sqlite3"), UserStore(tmp_path / "accounts.sqlite3")
    here.add("张医生", "password-1")
    before = there.generation("张医生")  # another worker checks a request of this clinician …
    here.bump_generation("张医生")  # … the clinician logs out on this one …
    assert there.generation("张医生") > before  # … and that worker's next check, however soon, sees it
    with there.records.one_read():  # a sweep of every live socket reads the version row once
        assert there.generation("张医生") == there.generation("张医生")


def users_cli(env: dict, *args: str, password: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clincite.users", *args],
        input=f"{password}\n{password}\n" if password else "",
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_users_command_line_admin_flag_and_role(tmp_path):
    env = {**os.environ, "DATA_DIR": str(tmp_path)}
    assert "管理员" in users_cli(env, "add", "first", password="password-11").stdout  # the first is an admin
    assert "临床医生" in users_cli(env, "add", "second", password="password-22").stdout
    assert "管理员" in users_cli(env, "add", "third", "--admin", password="password-33").stdout
    assert users_cli(env, "role", "second", "admin").returncode == 0
    listing = users_cli(env, "list").stdout.splitlines()
    assert listing == ["first\t管理员", "second\t管理员", "third\t管理员"]
    assert users_cli(env, "role", "nobody", "admin").returncode == 1


def test_the_login_cookie_carries_the_role(admin_app):
    with client(admin_app, "lead") as lead, client(admin_app, "doctor_c") as doctor:
        assert lead.get("/clincite/me").json() == {"identifier": "lead", "role": "admin", "admin": True}
        assert doctor.get("/clincite/me").json()["admin"] is False


# --- every admin route refuses a clinician ------------------------------------------------------------------------


PUBLIC_ROUTES = {  # our routes a clinician may use (each checks the login or the owner itself)
    "/clincite/me",
    "/clincite/health",  # a worker's health: no login, nothing private (docs/deploy.md)
    "/clincite/static/{name}",
    "/clincite/files/{object_key:path}",
    "/clincite/original/{source:path}",
    "/clincite/passage/{chunk_id}",
    "/clincite/view/{chunk_id}",
    "/avatars/{avatar_id}",
    "/feedback",
    "/login",
    "/clincite/limits",  # the question and comment limits the page checks before sending (nothing private)
    "/project/thread/share",  # Chainlit's sharing, refused (web/routes.py)
    "/project/share/{thread_id}",
}


def our_routes(tmp_path_factory, monkeypatch) -> list:
    """Every route the app adds in front of Chainlit's, registered on an empty FastAPI app the way start-up does."""
    if "CHAINLIT_APP_ROOT" not in os.environ:  # (monkeypatch: not left set for the modules after this one)
        monkeypatch.setenv("CHAINLIT_APP_ROOT", str(_app_root(tmp_path_factory.mktemp("routes"))))
    from fastapi import FastAPI
    from fastapi.routing import APIRoute

    from clincite.web.admin.guard import require_admin
    from clincite.web.routes import add_routes_before_the_spa

    app = FastAPI()
    add_routes_before_the_spa(app)
    found = []

    def walk(routes, inherited: list) -> None:
        for route in routes:
            router = getattr(route, "original_router", None)  # an included router (FastAPI keeps it whole)
            if router is not None:
                walk(router.routes, inherited + list(router.dependencies))
            elif isinstance(route, APIRoute):
                calls = [d.call for d in route.dependant.dependencies] + [d.dependency for d in inherited]
                found.append((route.path, sorted(route.methods - {"HEAD"}), require_admin in calls))

    walk(app.routes, [])
    return found


def concrete(path: str) -> str:
    return re.sub(r"\{(\w+)(:path)?\}", lambda m: "admin.css" if m.group(1) == "name" else "x", path)


def test_every_admin_route_and_api_gives_a_clinician_403(admin_app, tmp_path_factory, monkeypatch):
    routes = our_routes(tmp_path_factory, monkeypatch)
    admin_routes = [(path, methods) for path, methods, guarded in routes if guarded]
    unguarded = {path for path, _, guarded in routes if not guarded}
    # A route outside the admin area must be one of the known public ones; everything under /admin and /metrics
    # must be guarded: a new route cannot be forgotten.
    assert unguarded <= PUBLIC_ROUTES, unguarded - PUBLIC_ROUTES
    assert all(p.startswith(("/admin", "/metrics")) for p, _ in admin_routes)
    assert not [p for p in unguarded if p.startswith(("/admin", "/metrics"))]
    paths = {p for p, _ in admin_routes}
    assert {"/admin/library", "/admin/users", "/admin/review", "/metrics", "/metrics.json"} <= paths
    assert any(m == ["POST"] for _, m in admin_routes)

    base = admin_app.base_url
    with client(admin_app, "doctor_c") as doctor, client(admin_app, "lead") as lead:
        lead_token = csrf_of(lead)
        anonymous = httpx.Client(base_url=base, timeout=30)
        checked = 0
        for path, methods in admin_routes:
            url = concrete(path)
            for method in methods:
                headers = {"Origin": base, "X-CSRF-Token": lead_token}  # even with a real admin's token
                response = doctor.request(method, url, headers=headers, follow_redirects=False)
                assert response.status_code == 403, (method, url, response.status_code, response.text[:200])
                stranger = anonymous.request(method, url, headers=headers, follow_redirects=False)
                assert stranger.status_code in (401, 303), (method, url, stranger.status_code)
                if stranger.status_code == 303:
                    assert stranger.headers["location"] == "/login"
                if method == "GET":
                    assert lead.get(url, follow_redirects=False).status_code in (200, 303, 404), url
                checked += 1
        anonymous.close()
        page = doctor.get("/admin/library")
        assert "需要管理员权限" in page.text and "text/html" in page.headers["content-type"]
        assert doctor.get("/metrics.json").json() == {"error": "需要管理员权限：此页面仅供本机构的管理员使用。"}
    assert checked >= 15


def test_changes_need_this_origin_and_the_csrf_token(admin_app):
    with client(admin_app, "lead") as lead:
        token = csrf_of(lead, "/admin/users")
        new = {"name": "csrf_victim", "password": "password-99", "password2": "password-99", "role": "admin"}
        assert post_form(lead, "/admin/users/add", new).status_code == 403  # no token
        assert post_form(lead, "/admin/users/add", new, "0" * 64).status_code == 403  # a wrong one
        assert post_form(lead, "/admin/users/add", new, token, origin="http://evil.example").status_code == 403
        assert "csrf_victim" not in lead.get("/admin/users").text
        assert post_form(lead, "/admin/users/add", new, token).status_code == 303
        assert "csrf_victim" in lead.get("/admin/users").text
        assert post_form(lead, "/admin/users/remove", {"name": "csrf_victim"}, token).status_code == 303


# --- uploads: guards before any loader ----------------------------------------------------------------------------


def test_upload_guards_names_types_sizes_and_existing_documents(admin_app):
    uploads = admin_app.data_dir / "uploads"
    with client(admin_app, "lead") as lead:
        token = csrf_of(lead)
        text = "# 演示\n\n本文件为上传测试用的演示文字，内容无临床意义。".encode()
        answer = upload(
            lead,
            [
                ("../../../etc/闯入（演示）.md", text),  # a client path: only the last segment, as a name of ours
                ("假的指南.pdf", b"this is not a pdf at all"),
                ("程序.exe", b"MZ\x90\x00"),
                ("过大（演示）.txt", b"x" * (MAX_FILE_MB * 1024 * 1024 + 10)),
            ],
            token,
        )
        assert answer.status_code == 202, answer.text
        result = answer.json()
        assert result["accepted"] == ["闯入（演示）.md"]
        reasons = {r["name"]: r["reason"] for r in result["refused"]}
        assert "不是 PDF" in reasons["假的指南.pdf"]
        assert "不支持的文件类型" in reasons["程序.exe"]
        assert "超过上限" in reasons["过大（演示）.txt"]
        taken = upload(lead, [("低浓度阿托品临床应用指南（演示）.md", text)], token)  # already a document
        assert taken.status_code == 422 and "替换" in taken.json()["refused"][0]["reason"]
        too_many = upload(lead, [(f"{i}（演示）.md", text) for i in range(MAX_FILES + 1)], token)
        assert too_many.status_code == 413 and f"一次最多上传 {MAX_FILES} 个文件" in too_many.json()["error"]
        staged = [p.relative_to(uploads).parts for p in uploads.rglob("*") if p.is_file()]
        assert [parts[1:] for parts in staged] == [("闯入（演示）.md",)], staged
        assert not list(admin_app.data_dir.parent.rglob("etc/闯入*"))
        wait_for_jobs(lead)
        library = lead.get("/admin/library").text
        assert "《闯入（演示）》" in library
        assert "上传被拒" in library and "假的指南.pdf" in library  # the change log names every refusal

        # More than UPLOAD_MAX_FILES × INGEST_MAX_FILE_MB announced: refused before the body is even sent.
        announced = (MAX_FILES * MAX_FILE_MB + 1) * 1024 * 1024
        status, body = raw_post_headers_only(admin_app.base_url, "/admin/api/library/upload", lead, token, announced)
        assert status == 413 and "一次最多" in body

        delete = post_form(lead, "/admin/library/delete", {"source": "闯入（演示）.md"}, token)
        assert delete.status_code == 303
        wait_for_jobs(lead)
        assert "《闯入（演示）》" not in lead.get("/admin/library").text
        assert not [p for p in uploads.rglob("*") if p.is_file()]  # our own upload's file goes with it


def test_a_json_record_uploaded_is_a_document_and_a_broken_one_says_why(admin_app):
    record = '{"name": "睑腺炎（演示）", "desc": "演示：睑腺炎俗称针眼，本记录为上传测试所写，内容无临床意义。"}'
    with client(admin_app, "lead") as lead:
        token = csrf_of(lead)
        answer = upload(
            lead,
            [("stye_record.json", record.encode()), ("cut_off.json", b'{"name": "\xe6\xbc\x94\xe7\xa4\xba", "desc": ')],
            token,
        )
        assert answer.status_code == 202 and sorted(answer.json()["accepted"]) == ["cut_off.json", "stye_record.json"]
        wait_for_jobs(lead)
        library = lead.get("/admin/library").text
        assert "《睑腺炎（演示）》" in library  # titled by its own name, not the file's
        assert "cut_off.json" in library and "JSON 格式错误" in library  # skipped, with the reason


def test_replace_keeps_the_name_and_takes_the_new_text(admin_app):
    source = "户外活动与近视预防（演示）.md"  # a first-run document, from the sample folder (not an upload)
    new_text = "# 户外活动与近视预防（演示）\n\n## 新版说明\n\n演示：本版本由替换功能写入，内容无临床意义。\n"
    with client(admin_app, "lead") as lead:
        token = csrf_of(lead)
        wrong = upload(lead, [("户外活动.pdf", b"%PDF-1.4 not really")], token, replace=source)
        assert wrong.status_code == 422 and "格式相同" in wrong.json()["refused"][0]["reason"]
        answer = upload(lead, [("户外活动（新版）.md", new_text.encode())], token, replace=source)
        assert answer.status_code == 202 and answer.json()["accepted"] == [source]  # the document keeps its name
        wait_for_jobs(lead)
        passages = lead.get("/admin/library/document", params={"source": source}).text
        assert "本版本由替换功能写入" in passages and "新版说明" in passages
        library = lead.get("/admin/library").text
        assert "（替换）" in library and "已更新" in library  # the change log
        staged = list((admin_app.data_dir / "uploads").rglob(source))
        assert len(staged) == 1 and oct(staged[0].stat().st_mode & 0o777) == "0o600"  # staged privately
    assert (SAMPLE_KB / source).exists()  # a file of the clinic's own folder is never deleted by a replace


def test_the_demo_account_of_make_run_is_an_admin(tmp_path):
    from conftest import make_settings

    from clincite.users.store import check_login

    settings = make_settings(tmp_path, dev_login=True)
    store = UserStore.for_settings(settings)
    demo = check_login(settings, store, "demo", "demo")
    assert demo is not None and demo.role == ADMIN
    store.add("first", "password-1")
    assert check_login(settings, store, "demo", "demo") is None  # gone once a real account exists


def test_file_names_are_rebuilt_never_used_as_paths():
    from clincite.web.admin.ingest_jobs import safe_file_name, staged_path

    assert safe_file_name("../../etc/passwd.md") == "passwd.md"
    assert safe_file_name("C:\\Users\\x\\指南（2025）.PDF") == "指南（2025）.pdf"
    assert safe_file_name(".hidden.md") == "hidden.md"
    assert safe_file_name("a\x00b\u202e.txt") == "ab.txt"
    assert safe_file_name('what?<>:"|*.md') == "what_______.md"
    assert safe_file_name("noextension") is None and safe_file_name("evil.sh") is None and safe_file_name(".md") is None
    assert len(safe_file_name("长" * 500 + ".md")) == 123
    with pytest.raises(ValueError):
        staged_path(Path("/tmp/x"), "../escape.md")


# --- the done-when flow in a browser ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs it with apt-get", pytrace=False)
        pytest.skip("Debian's chromium is not installed")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def log_in(browser, app, user: str, viewport=DESKTOP):
    context = browser.new_context(locale="zh-CN", viewport=viewport)
    page = context.new_page()
    page.goto(app.base_url)
    page.fill("#email", user)
    page.fill("#password", USERS[user])
    page.click("button[type=submit]")
    page.wait_for_selector("#starters", timeout=60_000)
    return context, page


def shot(page, name: str, full: bool = True) -> None:
    page.screenshot(path=str(ARTIFACTS / f"admin-{name}.png"), full_page=full)


def shoot_both(browser, context, url: str, name: str, wait_for: str | None = None, full: bool = True) -> None:
    """The page at desktop width and at 390×844 (a phone), with the same login."""
    cookies = context.cookies()
    for viewport, suffix in ((DESKTOP, "desktop"), (PHONE, "phone")):
        other = browser.new_context(locale="zh-CN", viewport=viewport)
        other.add_cookies(cookies)
        page = other.new_page()
        page.goto(url)
        if wait_for:
            page.wait_for_selector(wait_for, timeout=60_000)
            page.wait_for_timeout(500)
        else:
            page.wait_for_load_state("networkidle")
        shot(page, f"{name}-{suffix}", full=full)
        other.close()


def last_answer(page, text: str):
    return page.locator(".step[data-step-type='assistant_message']").filter(has_text=text)


def test_the_admin_uploads_asks_deletes_and_the_question_abstains(admin_app, browser, tmp_path):
    from playwright.sync_api import expect

    base = admin_app.base_url
    pdf = make_demo_pdf(tmp_path / DEMO_PDF)
    note = tmp_path / "排队演示说明（演示）.md"
    note.write_text("# 排队演示说明（演示）\n\n本文件只用于演示上传排队，内容无临床意义。\n", encoding="utf-8")
    context, page = log_in(browser, admin_app, "lead")
    page.on("dialog", lambda dialog: dialog.accept())  # the delete button asks for confirmation
    expect(page.locator("#clincite-admin-link")).to_have_text("管理", timeout=20_000)  # admins see the way in
    shoot_both(browser, context, base, "chat-with-admin-link", wait_for="#clincite-admin-link", full=False)
    page.locator("#clincite-admin-link").click()
    page.wait_for_url("**/admin/library")
    expect(page.get_by_role("heading", name="知识库")).to_be_visible()

    # Another ingest holds the KB (as one run from a shell would): the upload starts and waits; a second upload
    # waits behind it in the queue, visibly.
    lock = FileLock(str(admin_app.data_dir / "kb" / "ingest.lock"))
    lock.acquire()
    try:
        page.locator("#upload-input").set_input_files(str(pdf))
        page.get_by_role("button", name="上传并导入").click()
        expect(page.locator(".job.running")).to_have_count(1, timeout=30_000)
        expect(page.locator(".job.running .state")).to_contain_text("等待另一个导入结束", timeout=30_000)
        page.locator("#upload-input").set_input_files(str(note))
        page.get_by_role("button", name="上传并导入").click()
        expect(page.locator(".job.queued")).to_have_count(1, timeout=30_000)
        expect(page.locator(".job.queued .state")).to_contain_text("排队中")
        expect(page.locator(".job.running")).to_contain_text(DEMO_PDF)
        shoot_both(browser, context, base + "/admin/library#queue", "library-queue", wait_for=".job.queued", full=False)
    finally:
        lock.release()
    # Progress is shown while it runs; then the page reloads with the documents listed.
    row = page.locator("table.documents tr").filter(has_text=DEMO_TITLE)
    expect(row).to_have_count(1, timeout=180_000)
    expect(page.locator("table.documents tr").filter(has_text="排队演示说明")).to_have_count(1, timeout=180_000)
    expect(row.locator("td.num").first).to_have_text("3")  # pages
    expect(row.locator("td.num").nth(1)).to_have_text(re.compile(r"^[1-9]\d*$"))  # passages
    expect(page.locator(".job.done").first).to_contain_text("已导入")
    shoot_both(browser, context, base + "/admin/library", "library")

    row.get_by_role("link").click()
    expect(page.get_by_role("heading", name=re.compile(DEMO_TITLE))).to_be_visible()
    expect(page.locator("article.passage").filter(has_text="第 2 页").first).to_contain_text("每日遮盖2小时")
    expect(page.locator("article.passage").filter(has_text="第 2 页").first).to_contain_text("三、遮盖治疗的时长")
    shoot_both(browser, context, page.url, "document-passages")

    # The question answered on page 2, in the chat: the document and its page are cited.
    page.goto(base)
    page.wait_for_selector("#starters", timeout=60_000)
    send_question(page, PAGE_2_QUESTION)
    answer = last_answer(page, "论据与来源")
    expect(answer).to_have_count(1, timeout=120_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    expect(answer).to_contain_text(f"《{DEMO_TITLE}》")
    expect(answer).to_contain_text("第 2 页")
    shot(page, "chat-page-2-cited-desktop", full=False)
    page.set_viewport_size(PHONE)
    answer.get_by_text("第 2 页").first.scroll_into_view_if_needed()
    shot(page, "chat-page-2-cited-phone", full=False)
    page.set_viewport_size(DESKTOP)

    # Delete it from the library page: the same question now abstains.
    page.goto(base + "/admin/library")
    row = page.locator("table.documents tr").filter(has_text=DEMO_TITLE)
    row.get_by_role("button", name="删除").click()
    expect(page.locator("table.documents tr").filter(has_text=DEMO_TITLE)).to_have_count(0, timeout=180_000)
    expect(page.locator("table.changes")).to_contain_text("删除")
    expect(page.locator("table.changes")).to_contain_text(DEMO_PDF)
    page.goto(base)
    page.wait_for_selector("#starters", timeout=60_000)
    send_question(page, PAGE_2_QUESTION)
    abstained = last_answer(page, "知识库中未找到")
    expect(abstained).to_have_count(1, timeout=120_000)
    expect(abstained).not_to_contain_text(DEMO_TITLE)
    shot(page, "chat-after-delete-abstains-desktop", full=False)
    context.close()


def test_the_review_desk_reads_a_colleagues_thread_and_marks_it_handled(admin_app, browser):
    from playwright.sync_api import expect

    base = admin_app.base_url
    comment = "引用的段落与所问剂量无关（演示意见）"
    doctor, page = log_in(browser, admin_app, "doctor_c")
    page.wait_for_timeout(1500)
    expect(page.locator("#clincite-admin-link")).to_have_count(0)  # no way in for a clinician
    page.get_by_text("低浓度阿托品", exact=True).click()
    answer = last_answer(page, "论据与来源")
    expect(answer).to_have_count(1, timeout=120_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    give_feedback(page, answer, thumbs_up=False, comment=comment)
    expect(answer.locator(".negative-feedback-on")).to_have_count(1, timeout=20_000)
    page.wait_for_url("**/thread/**", timeout=30_000)
    thread_id = page.url.rsplit("/", 1)[1]
    for path in ("/admin/review", f"/admin/review/thread/{thread_id}", "/metrics"):
        assert page.request.get(base + path).status == 403
    page.goto(base + "/admin/review")
    expect(page.locator("main")).to_contain_text("需要管理员权限")
    shoot_both(browser, doctor, base + "/admin/review", "forbidden-for-clinicians")
    doctor.close()

    lead, page = log_in(browser, admin_app, "lead")
    page.goto(base + "/admin/review")
    item = page.locator("article.rating").filter(has_text=comment)
    expect(item).to_have_count(1, timeout=20_000)
    expect(item).to_contain_text("低浓度阿托品控制近视的效果和副作用")
    expect(item).to_contain_text("doctor_c")
    expect(item.locator(".answer")).to_contain_text("论据与来源")
    expect(item.locator(".answer")).not_to_contain_text("###")  # Markdown shown as structure
    expect(item.locator(".badge.open")).to_have_text("未处理")
    shoot_both(browser, lead, base + "/admin/review", "review-desk")

    item.get_by_role("link", name="查看整段对话").click()
    page.wait_for_url(f"**/admin/review/thread/{thread_id}*")
    expect(page.locator(".bubble.user")).to_contain_text("低浓度阿托品控制近视的效果和副作用")
    expect(page.locator(".bubble.answer")).to_contain_text("TL;DR")
    expect(page.locator(".rating-inline")).to_contain_text(comment)
    expect(page.locator("textarea")).to_have_count(0)  # read-only: nothing to type into
    assert "Couldn't resume chat" not in page.content()
    shoot_both(browser, lead, page.url, "review-thread")

    page.locator(".rating-inline").get_by_role("button", name="标记为已处理").click()
    expect(page.locator(".rating-inline")).to_contain_text("已处理 · lead")
    page.goto(base + "/admin/review?kind=down&state=handled")
    expect(page.locator("article.rating").filter(has_text=comment).locator(".badge.done")).to_contain_text("lead")
    page.goto(base + "/admin/review?kind=down&state=open")
    expect(page.locator("article.rating").filter(has_text=comment)).to_have_count(0)
    lead.close()


def test_uncovered_questions_grouped_and_exported(admin_app, browser):
    from playwright.sync_api import expect

    base = admin_app.base_url
    context, page = log_in(browser, admin_app, "doctor_d")
    for question in ("青光眼的激光治疗方式有哪些？", "青光眼的激光治疗方式有哪些", "干眼症怎么治疗？"):
        page.goto(base)
        page.wait_for_selector("#starters", timeout=60_000)
        send_question(page, question)
        expect(last_answer(page, "知识库中未找到")).to_have_count(1, timeout=120_000)
        expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    context.close()

    lead, page = log_in(browser, admin_app, "lead")
    page.goto(base + "/admin/review/gaps")
    glaucoma = page.locator("table.gaps tr").filter(has_text="青光眼的激光治疗方式")
    expect(glaucoma).to_have_count(1)  # two writings of one question: one row
    expect(glaucoma.locator("td").nth(1)).to_have_text("2")
    shoot_both(browser, lead, base + "/admin/review/gaps", "gaps")
    exported = page.request.get(base + "/admin/review/gaps.csv")
    assert exported.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(exported.body().decode("utf-8-sig"))))
    assert rows[0][:2] == ["问题", "次数"]
    assert any("青光眼的激光治疗方式" in r[0] and r[1] == "2" for r in rows[1:])
    assert any("干眼症怎么治疗" in r[0] and r[1] == "1" for r in rows[1:])

    page.goto(base + "/metrics")
    cards = page.locator(".cards")
    expect(cards).to_contain_text("反馈率")
    expect(cards).to_contain_text("降级的回答")
    expect(cards).to_contain_text("无证据的回答")
    expect(cards.locator(".card").filter(has_text="无证据的回答").locator(".value")).to_have_text(re.compile(r"%$"))
    expect(page.locator("main")).not_to_contain_text("覆盖率")  # feedback rate and evidence coverage, not one word
    shoot_both(browser, lead, base + "/metrics", "metrics")
    lead.close()


def test_the_users_page_adds_resets_promotes_and_removes(admin_app, browser):
    from playwright.sync_api import expect

    base = admin_app.base_url
    lead, page = log_in(browser, admin_app, "lead")
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(base + "/admin/users")
    form = page.locator("form.grid")
    form.locator("input[name=name]").fill("doctor_e")
    form.locator("input[name=display_name]").fill("演示医生")
    form.locator("input[name=password]").fill("doctor-e-pass-5")
    form.locator("input[name=password2]").fill("doctor-e-pass-5")
    form.get_by_role("button", name="添加").click()
    expect(page.locator(".notice")).to_contain_text("已添加账号 doctor_e")
    row = page.locator("table.users tr").filter(has_text="doctor_e")
    expect(row.locator(".role")).to_have_text("临床医生")
    shoot_both(browser, lead, base + "/admin/users", "users")

    doctor = admin_app.login("doctor_e", "doctor-e-pass-5")
    assert doctor.get("/admin/users").status_code == 403
    row.get_by_role("button", name="改为管理员").click()
    expect(page.locator("table.users tr").filter(has_text="doctor_e").locator(".role")).to_have_text("管理员")
    assert doctor.get("/clincite/me").status_code == 401  # a role change ends the sessions (the cookie said clinician)
    promoted = admin_app.login("doctor_e", "doctor-e-pass-5")
    assert promoted.get("/admin/users").status_code == 200
    row = page.locator("table.users tr").filter(has_text="doctor_e")
    row.locator("input[name=password]").fill("doctor-e-pass-6")
    row.locator("input[name=password2]").fill("doctor-e-pass-6")
    row.get_by_role("button", name="重置").click()
    expect(page.locator(".notice")).to_contain_text("已重置 doctor_e 的密码")
    assert promoted.get("/clincite/me").status_code == 401
    page.locator("table.users tr").filter(has_text="doctor_e").get_by_role("button", name="删除").click()
    expect(page.locator(".notice")).to_contain_text("已删除账号 doctor_e")
    expect(page.locator("table.changes")).to_contain_text("删除用户")
    expect(page.locator("table.users")).not_to_contain_text("doctor_e")
    lead_row = page.locator("table.users tr").filter(has_text="lead（我）")
    expect(lead_row).to_contain_text("当前登录")  # nobody removes themselves here
    doctor.close()
    promoted.close()
    lead.close()


# --- the command line's progress ----------------------------------------------------------------------------------


def test_ingest_progress_json_reports_files_and_pdf_pages(tmp_path, run_cli):
    import json

    from clincite.cli import ingest

    pdf = make_demo_pdf(tmp_path / "docs" / DEMO_PDF)
    (tmp_path / "docs" / "附注（演示）.md").write_text("# 附注（演示）\n\n演示用的附注文字，无临床意义。\n", "utf-8")
    run = run_cli(ingest.main, [pdf.parent, "--kb", tmp_path / "kb", "--progress-json"])
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[0] == {"event": "started", "total": 2}
    pages = [(e["done"], e["total"]) for e in events if e["event"] == "pages"]
    assert pages == [(1, 3), (2, 3), (3, 3)]
    done = {e["name"]: e["status"] for e in events if e["event"] == "file_done"}
    assert done == {DEMO_PDF: "added", "附注（演示）.md": "added"}
    assert [e["step"] for e in events if e["event"] == "finishing"] == ["vectors", "index"]
    assert events[-1]["event"] == "summary" and events[-1]["added"] == 2 and events[-1]["kb_version"] >= 2

    removed = run_cli(ingest.main, ["--kb", tmp_path / "kb", "--remove", DEMO_PDF, "--progress-json"])
    summary = json.loads(removed.stdout.splitlines()[-1])
    assert summary["removed"] == 1 and summary["kb_version"] == events[-1]["kb_version"] + 1


def test_replace_takes_a_name_over_only_when_asked(tmp_path, run_cli):
    from clincite.cli import ingest

    for folder, words in (("a", "第一版"), ("b", "第二版")):
        (tmp_path / folder).mkdir()
        text = f"# 随访（演示）\n\n{words}：演示文字，无临床意义。\n"
        (tmp_path / folder / "随访（演示）.md").write_text(text, "utf-8")
    kb = tmp_path / "kb"
    assert run_cli(ingest.main, [tmp_path / "a", "--kb", kb]).returncode == 0
    refused = run_cli(ingest.main, [tmp_path / "b", "--kb", kb])
    assert "skipped" in refused.stdout and "同名" in refused.stdout
    taken = run_cli(ingest.main, [tmp_path / "b", "--kb", kb, "--replace"])
    assert taken.stdout.startswith("updated") and "随访（演示）.md" in taken.stdout


def test_ingest_shows_a_progress_bar_with_time_left_and_pdf_pages_on_a_terminal(tmp_path):
    """On a terminal (a real pseudo-terminal here) tqdm draws n/N files, %, time left, and the PDF page counter."""
    pdf = make_demo_pdf(tmp_path / "docs" / DEMO_PDF)
    samples = [SAMPLE_KB / name for name in sorted(os.listdir(SAMPLE_KB))[:2]]
    for path in samples:
        (pdf.parent / path.name).write_bytes(path.read_bytes())
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))  # a 120-column terminal
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "ingest.py"), str(pdf.parent), "--kb", str(tmp_path / "kb")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=secondary,
        env={k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")},
    )
    os.close(secondary)
    drawn = bytearray()
    while True:
        ready, _, _ = select.select([primary], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn.extend(chunk)
    stdout, _ = process.communicate(timeout=120)
    os.close(primary)
    bar = drawn.decode("utf-8", "replace")
    assert process.returncode == 0, bar
    assert "3/3 个文件 100%" in bar and "剩余约" in bar, bar[-2000:]
    assert re.search(r"第 [123]/3 页", bar), bar[-2000:]
    assert stdout.decode().count("added") == 3  # the per-file lines are still there, on standard output


# --- safe rendering -----------------------------------------------------------------------------------------------


def test_markdown_is_shown_as_structure_and_nothing_else():
    rendered = markdown_html(
        "### 标题\n\n**粗体** [链接](http://127.0.0.1/x) ![图](http://127.0.0.1/p.png) <img src=x onerror=alert(1)>"
        "\n\n| 列 | 值 |\n|---|---|\n| a | 1 |\n"
    )
    assert "<h3>标题</h3>" in rendered and "<strong>粗体</strong>" in rendered and "<td>1</td>" in rendered
    assert "<a " not in rendered and "<img" not in rendered and "&lt;img" in rendered
    marked = markdown_html("第一段\n\n第二段\n\n第三段", mark_lines=(2, 2))
    assert '<p class="mark" id="passage">第二段</p>' in marked and marked.count("mark") == 1


def test_gaps_group_writings_and_csv_cannot_run_formulas():
    from clincite.web.admin.review import gaps_csv_text, group_gaps

    rows = [
        {"question": "青光眼怎么治？", "coverage": "no_evidence", "coverage_missing": "[]", "createdAt": "2026-01-01"},
        {"question": "青光眼 怎么治", "coverage": "no_evidence", "coverage_missing": "[]", "createdAt": "2026-01-02"},
        {"question": "=HYPERLINK(1)", "coverage": "partial", "coverage_missing": '["剂量"]', "createdAt": "2026-01-03"},
    ]
    groups = group_gaps(rows)
    assert [(g["question"], g["count"]) for g in groups] == [("青光眼 怎么治", 2), ("=HYPERLINK(1)", 1)]
    text = gaps_csv_text(groups)
    assert text.startswith("\ufeff") and "'=HYPERLINK(1)" in text and ",剂量," in text


# --- what a clinician sees, cleaned up ----------------------------------------------------------------------------


def contrast(foreground: str, background: str) -> float:
    """WCAG contrast ratio of two CSS rgb()/rgba() colours."""

    def luminance(colour: str) -> float:
        r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", colour)[:3])
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_what_a_clinician_sees_is_chinese_short_and_clean(admin_app, browser):
    from playwright.sync_api import expect

    base = admin_app.base_url
    context = browser.new_context(locale="zh-CN", viewport=DESKTOP)
    context.add_init_script("localStorage.setItem('vite-ui-theme', 'dark')")  # the clinic's dark-mode screens
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page = context.new_page()
    page.goto(base)
    page.fill("#email", "doctor_d")
    page.fill("#password", "a wrong password")
    page.click("button[type=submit]")
    expect(page.get_by_text("用户名或密码不正确")).to_be_visible(timeout=20_000)  # not "credentialssignin"
    page.fill("#password", USERS["doctor_d"])
    page.click("button[type=submit]")
    page.wait_for_selector("#starters", timeout=60_000)
    expect(page.locator("[data-sonner-toast]")).to_have_count(0)  # no mode toast on the first screen

    page.get_by_text("低浓度阿托品", exact=True).click()
    answer = last_answer(page, "论据与来源")
    expect(answer).to_have_count(1, timeout=120_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    send_question(page, "角膜塑形镜的适应症有哪些？")
    expect(last_answer(page, "论据与来源")).to_have_count(2, timeout=120_000)
    expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
    notices = page.locator(".step[data-step-type='assistant_message']").filter(has_text=MODE_NOTICES["offline"][2:])
    expect(notices).to_have_count(1)  # one short mode notice per chat, not one per answer

    page.locator('[id="step-检索"]').first.click()
    steps = page.locator('[id^="step-检索："]')
    expect(steps.first).to_be_visible()
    names = steps.evaluate_all("nodes => nodes.map(n => n.id)")
    assert "step-检索：原问题" in names and not any(re.search(r"\bq\d|s\d-\d", n) for n in names), names
    steps.first.click()
    expect(page.get_by_text("命中").first).to_be_visible()
    assert "BM25 " not in page.locator("body").inner_text()  # no raw scores

    first = last_answer(page, "论据与来源").first
    first.locator("a.element-link", has_text="【1】").first.click()
    side = page.locator("#side-view-content")
    expect(side).to_contain_text("原文逐字核对")
    assert "###" not in side.inner_text() and "**" not in side.inner_text()
    highlight = side.locator(".italic > .font-bold, .font-bold > .italic").first
    expect(highlight).to_be_visible()
    colours = highlight.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
    assert contrast(*colours) >= 4.5, colours  # readable in dark mode (was white on bright yellow)
    page.wait_for_timeout(800)  # the panel slides in
    shot(page, "chat-dark-side-panel-desktop", full=False)
    original = side.get_by_role("link", name=re.compile("打开原文")).get_attribute("href")
    assert re.fullmatch(r"/clincite/view/\w+#passage", original), original

    # The copy button gives clean text for a medical record.
    first.hover()
    first.locator("button:has(svg.lucide-copy)").first.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("TL;DR：") and "完整结论" in copied and "论据与来源" in copied, copied[:300]
    assert "《低浓度阿托品临床应用指南（演示）》" in copied and "原文：“" in copied
    for noise in ("**", "###", "\\", "\u2060", "引用核验", "首字", "离线演示模式"):
        assert noise not in copied, (noise, copied[:500])

    for viewport, suffix in ((DESKTOP, "desktop"), (PHONE, "phone")):
        view = context.new_page()
        view.set_viewport_size(viewport)
        view.goto(base + original)
        passage = view.locator("#passage")
        expect(passage).to_have_class(re.compile("mark"))
        expect(view.locator("article h2, article h3").first).to_be_visible()  # Markdown rendered as structure
        assert "###" not in view.locator("article").inner_text()
        expect(passage).to_be_in_viewport()  # scrolled to the passage
        shot(view, f"original-view-{suffix}", full=False)
        view.close()

    # Chainlit's hard-coded English, in Chinese: a thread that cannot be resumed.
    page.goto(base + "/thread/00000000-0000-4000-8000-000000000000")
    toast = page.locator("[data-sonner-toast]")
    expect(toast.first).to_be_visible(timeout=30_000)
    expect(toast.first).to_contain_text("无法打开这个对话")
    assert "Couldn't" not in page.locator("body").inner_text()
    context.close()


def test_stopping_an_answer_says_so_in_chinese(admin_app):
    """Chainlit's stop event answers "Task manually stopped." (hard-coded): ours says it in Chinese."""
    import asyncio
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    import socketio

    with client(admin_app, "doctor_d") as doctor:
        cookie = doctor.cookies["access_token"]

    async def stop() -> list[str]:
        sio = socketio.AsyncClient(reconnection=False)
        said: list[str] = []
        arrived = asyncio.Event()

        async def new_message(data):
            said.append(str(data.get("output") or ""))
            if said[-1]:
                arrived.set()

        sio.on("new_message", new_message)
        await sio.connect(
            admin_app.base_url,
            socketio_path="/ws/socket.io",
            transports=["websocket"],
            headers={"Cookie": f"access_token={cookie}"},
            auth={"clientType": "webapp", "sessionId": str(uuid.uuid4()), "threadId": "", "userEnv": "{}"},
        )
        await sio.emit("connection_successful")
        await sio.emit("stop")
        await asyncio.wait_for(arrived.wait(), timeout=30)
        await sio.disconnect()
        return said

    with ThreadPoolExecutor(1) as pool:  # its own event loop: the module's Playwright browser holds this thread's
        said = pool.submit(asyncio.run, stop()).result(timeout=60)
    assert "已停止生成。" in said and not [text for text in said if "stopped" in text]
