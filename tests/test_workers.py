"""Issue 20: two app workers with different data directories behind nginx, sharing only PostgreSQL, a Chroma server
and Redis — all real: Debian's postgresql, redis-server and nginx started here as unprivileged users on 127.0.0.1,
`chroma run` from the venv, `chainlit run app.py -h` twice (offline answers, the hashing embedder).

What a clinic sees: one login, one history, one KB on both workers; an ingest through one is answered on the other;
a logout or a removed account is refused at once on the other; failed logins count across both; answers and ratings
of both land in one table; when the worker a clinician is on dies, the next question is answered by the other one
without logging in again (a real browser through nginx).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import socketio
from conftest import APP_AUTH_SECRET, CHROMIUM, CHROMIUM_ARGS, ROOT, SAMPLE_KB, ChromaServer, _app_root
from servers import NginxServer, PostgresServer, RedisServer, free_port

sys.path.insert(0, str(ROOT / "deploy"))
from serve import nginx_conf

# Every test here runs servers (PostgreSQL, Redis, nginx, chroma run, app workers): not for the inner loop.
pytestmark = [pytest.mark.timeout(600), pytest.mark.server]  # the whole cluster starts in the first test that needs it

USERS = {"zhang": "zhang-password-1", "li": "li-password-22", "wang": "wang-password-3", "zhao": "zhao-password-44"}
ACCOUNT_LIMIT = 5
SOCKET_PATH = "/ws/socket.io"
QUESTION = "低浓度阿托品的副作用有哪些？"
NEW_DOC_NAME = "巩膜镜验配要点（演示）.md"
NEW_DOC = (
    "# 巩膜镜验配要点（演示）\n\n> 演示材料：为软件测试编写，不用于临床。\n\n## 适应症\n\n"
    "巩膜镜是一种大直径透气性硬性角膜接触镜，镜片支撑在巩膜上、跨越角膜而不接触角膜，"
    "常用于圆锥角膜等不规则角膜以及严重干眼患者的视力矫正。\n\n## 随访\n\n"
    "初次配戴后应按医嘱复查，观察角膜健康和镜片配适情况。\n"
)


@dataclass
class Worker:
    name: str
    data_dir: Path
    port: int
    env: dict[str, str]
    process: subprocess.Popen | None = None
    log: Path = field(init=False)

    def __post_init__(self):
        self.log = self.data_dir / "worker.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        chainlit = str(Path(sys.executable).parent / "chainlit")
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [chainlit, "run", str(ROOT / "app.py"), "-h", "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_healthy(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log.read_text()[-4000:]}")
            try:
                if httpx.get(self.base_url + "/clincite/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{self.name} did not answer within {timeout:.0f} s:\n{self.log.read_text()[-4000:]}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # the group started for this worker only
            self.process.wait(timeout=15)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        """A command line of this worker's machine (its settings, its data directory)."""
        return subprocess.run(
            [sys.executable, *args], input=stdin, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300
        )


@dataclass
class Cluster:
    a: Worker
    b: Worker
    nginx: NginxServer
    database_url: str
    shared: dict[str, str]  # the settings every worker of the installation has
    redis: RedisServer

    def rows(self, sql: str, **params) -> list[tuple]:
        from sqlalchemy import create_engine, text

        engine = create_engine(self.database_url.replace("+asyncpg", "+pg8000"))
        try:
            with engine.connect() as db:
                return [tuple(r) for r in db.execute(text(sql), params)]
        finally:
            engine.dispose()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("workers")
    with ExitStack() as stack:
        pg = stack.enter_context(PostgresServer())
        database_url = pg.create_database("clincite")
        redis = stack.enter_context(RedisServer())
        chroma = ChromaServer(root / "chroma", free_port())
        chroma.start()
        stack.callback(chroma.stop)
        empty = root / "no-sample"
        empty.mkdir()
        shared = {
            "WORKERS": "2",
            "CLINCITE_DATABASE_URL": database_url,
            "CHROMA_HOST": "127.0.0.1",
            "CHROMA_PORT": str(chroma.port),
            "REDIS_URL": redis.url,
            "CHAINLIT_AUTH_SECRET": APP_AUTH_SECRET,
            "LOGIN_ACCOUNT_LIMIT": f"{ACCOUNT_LIMIT}/15 minutes",
            "LOGIN_ADDRESS_LIMIT": "1000/15 minutes",
            "SAMPLE_KB_DIR": str(empty),  # the KB is ingested below, through worker a's machine
            "KB_RELOAD_INTERVAL": "2",
        }
        workers = []
        for name in ("a", "b"):
            data = root / f"machine-{name}"
            data.mkdir()
            env = {k: v for k, v in os.environ.items() if k != "CI"}
            env.update(shared, DATA_DIR=str(data), WORKER_NAME=f"worker-{name}")
            env["CHAINLIT_APP_ROOT"] = str(_app_root(data))
            workers.append(Worker(name, data, free_port(), env))
        a, b = workers
        done = a.run("-m", "clincite.cli.ingest", str(SAMPLE_KB))
        assert done.returncode == 0, done.stdout + done.stderr
        for user, password in USERS.items():
            done = a.run("-m", "clincite.users", "add", user, stdin=f"{password}\n{password}\n")
            assert done.returncode == 0, done.stderr
        for worker in workers:
            worker.start()
            stack.callback(worker.stop)
        for worker in workers:
            worker.wait_healthy()
        ports = [a.port, b.port]
        nginx = stack.enter_context(NginxServer(lambda port, run: nginx_conf(run, "127.0.0.1", port, ports, run)))
        yield Cluster(a, b, nginx, database_url, shared, redis)


# --- helpers: a clinician's HTTP and Socket.IO, as the browser speaks them ---------------------------------------


async def login(base: str, name: str, password: str | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        return await http.post("/login", data={"username": name, "password": password or USERS[name]})


async def cookie_of(base: str, name: str) -> str:
    response = await login(base, name)
    assert response.status_code == 200, response.text
    return response.cookies["access_token"]


async def get(base: str, path: str, cookie: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base, cookies={"access_token": cookie}, timeout=60) as http:
        return await http.get(path)


async def connect(base: str, cookie: str) -> socketio.AsyncClient:
    sio = socketio.AsyncClient(reconnection=False)
    await asyncio.wait_for(
        sio.connect(
            base,
            socketio_path=SOCKET_PATH,
            transports=["websocket"],
            headers={"Cookie": f"access_token={cookie}"},
            auth={"clientType": "webapp", "sessionId": str(uuid.uuid4()), "threadId": "", "userEnv": "{}"},
        ),
        timeout=30,
    )
    return sio


async def ask(base: str, cookie: str, question: str = QUESTION) -> dict:
    """One question over Socket.IO; the report, its run step id and thread id, and the sources it cites."""
    events: list[tuple[str, dict]] = []
    done = asyncio.Event()
    sio = await connect(base, cookie)

    def record(name):
        async def handler(data):
            events.append((name, data))
            if name in ("new_message", "update_message") and "引用核验" in str(data.get("output", "")):
                done.set()

        return handler

    for name in ("new_message", "update_message", "element"):
        sio.on(name, record(name))
    await sio.emit("connection_successful")
    message = {
        "id": str(uuid.uuid4()),
        "threadId": "",
        "name": "clinician",
        "type": "user_message",
        "output": question,
        "createdAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
    }
    await sio.emit("client_message", {"message": message, "fileReferences": []})
    try:
        await asyncio.wait_for(done.wait(), timeout=120)
    finally:
        await sio.disconnect()
    run = next(d for n, d in events if n == "new_message" and d.get("name") == "on_message")
    report = [d.get("output", "") for n, d in events if "引用核验" in str(d.get("output", ""))][-1]
    return {"thread": run["threadId"], "run": run["id"], "report": report}


async def wait_until(condition, what: str, timeout: float = 10) -> float:
    started = time.monotonic()
    while not await condition():
        assert time.monotonic() - started < timeout, what
        await asyncio.sleep(0.05)
    return time.monotonic() - started


# --- the tests ---------------------------------------------------------------------------------------------------


async def test_one_login_and_one_kb_on_both_workers(cluster):
    cookie = await cookie_of(cluster.nginx.base_url, "zhang")  # through nginx, whichever worker answers
    for worker in (cluster.a, cluster.b):
        assert (await get(worker.base_url, "/user", cookie)).status_code == 200, worker.name
    health = [(await get(w.base_url, "/clincite/health", cookie)).json() for w in (cluster.a, cluster.b)]
    assert {h["worker"] for h in health} == {"worker-a", "worker-b"}
    assert health[0]["kb_version"] == health[1]["kb_version"] > 0
    assert health[0]["bm25_version"] == health[1]["bm25_version"] == health[0]["kb_version"], "keyword index too"
    assert not (cluster.b.data_dir / "kb" / "catalogue.sqlite3").exists(), "the catalogue lives in PostgreSQL"


async def test_an_ingest_through_one_is_answered_on_the_other(cluster, tmp_path):
    before = (await get(cluster.b.base_url, "/clincite/health", "")).json()["kb_version"]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / NEW_DOC_NAME).write_text(NEW_DOC, encoding="utf-8")
    done = cluster.a.run("ingest.py", str(docs))  # on machine a: its data directory, the shared servers
    assert done.returncode == 0 and "added" in done.stdout, done.stdout + done.stderr

    async def b_serves_it() -> bool:
        health = (await get(cluster.b.base_url, "/clincite/health", "")).json()
        return health["kb_version"] > before and health["bm25_version"] == health["kb_version"]

    seconds = await wait_until(b_serves_it, "worker b serves the new KB version", timeout=15)
    print(f"worker b serves the new KB version {seconds:.2f} s after ingest finished on machine a")
    cookie = await cookie_of(cluster.b.base_url, "li")
    answer = await ask(cluster.b.base_url, cookie, "巩膜镜适用于哪些患者？")
    assert "巩膜镜验配要点" in answer["report"], answer["report"][:500]
    original = await get(cluster.b.base_url, "/clincite/original/" + NEW_DOC_NAME, cookie)
    assert original.status_code == 200 and "圆锥角膜" in original.text  # "打开原文" on the other worker


async def test_a_logout_on_one_is_refused_at_once_on_the_other(cluster):
    cookie = await cookie_of(cluster.a.base_url, "wang")
    sio = await connect(cluster.b.base_url, cookie)
    assert (await get(cluster.b.base_url, "/user", cookie)).status_code == 200
    async with httpx.AsyncClient(base_url=cluster.a.base_url, cookies={"access_token": cookie}) as http:
        assert (await http.post("/logout")).status_code == 200
    assert (await get(cluster.b.base_url, "/user", cookie)).status_code == 401  # the very next request
    await wait_until(lambda: _value(not sio.connected), "worker b disconnects the socket of the ended session", 3)
    assert (await login(cluster.b.base_url, "wang")).status_code == 200  # logging in again works


async def test_a_removed_account_is_refused_at_once_on_the_other(cluster):
    done = cluster.a.run("-m", "clincite.users", "add", "qian", stdin="qian-password-5\nqian-password-5\n")
    assert done.returncode == 0, done.stderr
    cookie = (await login(cluster.b.base_url, "qian", "qian-password-5")).cookies["access_token"]
    sio = await connect(cluster.b.base_url, cookie)
    assert cluster.a.run("-m", "clincite.users", "remove", "qian").returncode == 0  # on machine a
    assert (await get(cluster.b.base_url, "/user", cookie)).status_code == 401
    await wait_until(lambda: _value(not sio.connected), "worker b disconnects the removed account's socket", 3)


async def test_failed_logins_are_counted_across_both_workers(cluster):
    for i in range(ACCOUNT_LIMIT):  # a, b, a, b, a: no worker alone has seen the limit
        worker = (cluster.a, cluster.b)[i % 2]
        assert (await login(worker.base_url, "zhao", "wrong-password")).status_code == 401
    for worker in (cluster.a, cluster.b):  # now even the right password is refused, on both
        response = await login(worker.base_url, "zhao")
        assert response.status_code == 429, (worker.name, response.text)
        assert "登录失败次数过多" in response.json()["message"]


async def test_with_redis_down_a_login_is_refused_in_chinese_and_questions_go_on(cluster):
    cookie = await cookie_of(cluster.a.base_url, "li")
    cluster.redis.stop()
    try:
        response = await login(cluster.a.base_url, "zhang")
        assert response.status_code == 503, response.text
        assert "共享的 Redis 服务器无法连接" in response.json()["message"]
        answer = await ask(cluster.a.base_url, cookie)  # a logged-in clinician does not need Redis
        assert "引用核验" in answer["report"]
    finally:
        cluster.redis.start()
    assert (await login(cluster.a.base_url, "zhang")).status_code == 200


async def test_answers_and_ratings_of_both_workers_land_in_one_table(cluster):
    runs, threads_of_a = [], []
    for worker in (cluster.a, cluster.b):
        cookie = await cookie_of(worker.base_url, "zhang")
        answer = await ask(worker.base_url, cookie)
        feedback = {"forId": answer["run"], "threadId": answer["thread"], "value": 1, "comment": worker.name}
        async with httpx.AsyncClient(base_url=worker.base_url, cookies={"access_token": cookie}) as http:
            response = await http.put("/feedback", json={"feedback": feedback, "sessionId": str(uuid.uuid4())})
        assert response.status_code == 200, response.text
        runs.append(answer["run"])
        if worker is cluster.a:
            threads_of_a.append(answer["thread"])
    answered = {r[0] for r in cluster.rows('SELECT "stepId" FROM answer_records')}
    rated = {r[0]: r[1] for r in cluster.rows('SELECT "forId", comment FROM feedbacks')}
    assert set(runs) <= answered
    assert rated.get(runs[0]) == "a" and rated.get(runs[1]) == "b"
    # One history: the thread answered on a is listed by b, and its source passages are served by b.
    [(key,)] = cluster.rows(
        'SELECT "objectKey" FROM elements WHERE "forId" IS NOT NULL AND "threadId" = :t LIMIT 1', t=threads_of_a[0]
    )
    cookie = await cookie_of(cluster.b.base_url, "zhang")
    passage = await get(cluster.b.base_url, f"/clincite/files/{key}", cookie)
    assert passage.status_code == 200 and passage.text.strip(), passage.text[:200]
    stranger = await cookie_of(cluster.b.base_url, "li")
    assert (await get(cluster.b.base_url, f"/clincite/files/{key}", stranger)).status_code == 404
    async with httpx.AsyncClient(base_url=cluster.b.base_url, cookies={"access_token": cookie}, timeout=60) as http:
        threads = (await http.post("/project/threads", json={"pagination": {"first": 20}, "filter": {}})).json()
    assert len(threads["data"]) >= 2


def test_a_worker_killed_mid_session_the_next_question_is_answered_by_the_other(cluster):
    """A clinician in a real browser, through nginx: the worker their session is on is killed (SIGKILL); they ask
    again in the same tab and get an answer from the other worker, with no login page in between."""
    pw = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    from conftest import send_question

    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(locale="zh-CN", viewport={"width": 1400, "height": 900})
        try:
            page.goto(cluster.nginx.base_url)
            page.fill("#email", "li")
            page.fill("#password", USERS["li"])
            page.click("button[type=submit]")
            page.wait_for_selector("#starters", timeout=60_000)
            send_question(page, QUESTION)
            answers = page.locator(".step[data-step-type='assistant_message']").filter(has_text="引用核验")
            pw.expect(answers).to_have_count(1, timeout=120_000)
            pw.expect(page.locator("#stop-button")).to_have_count(0, timeout=60_000)
            serving = page.request.get(cluster.nginx.base_url + "/clincite/health").json()["worker"]
            victim = cluster.a if serving == "worker-a" else cluster.b
            victim.kill()
            send_question(page, "户外活动预防近视每天需要多长时间？")
            pw.expect(answers).to_have_count(2, timeout=120_000)
            assert "/login" not in page.url
            now = page.request.get(cluster.nginx.base_url + "/clincite/health").json()["worker"]
            assert now != serving, "the next question was answered by the other worker"
        finally:
            (ROOT / "test-artifacts" / "browser").mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ROOT / "test-artifacts" / "browser" / "worker-killed.png"))
            browser.close()


async def _value(value):
    return value


def test_nginx_config_of_the_repo_is_valid(cluster):
    """The Debian site file: nginx accepts it with the two snippets (as /etc/nginx would include them)."""
    site = (ROOT / "deploy" / "nginx" / "clincite.conf").read_text(encoding="utf-8")
    site = site.replace("include snippets/", f"include {cluster.nginx.root}/")
    site = site.replace("listen 80;", f"listen 127.0.0.1:{free_port()};")
    conf = cluster.nginx.root / "site-check.conf"
    conf.write_text(
        f"pid {cluster.nginx.root}/check.pid; error_log stderr; events {{}}\n"
        f"http {{ include {cluster.nginx.root}/clincite-http.conf;\n{site}\n}}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        ["/usr/sbin/nginx", "-t", "-p", str(cluster.nginx.root), "-c", str(conf)], capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()


def test_several_workers_on_sqlite_refuse_to_start_and_say_why(tmp_path):
    """WORKERS=2 on the embedded defaults (SQLite, Chroma on disk, no Redis): the app does not start, and says in
    Chinese which settings must name a shared server."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(WORKERS="2", DATA_DIR=str(tmp_path), CHAINLIT_APP_ROOT=str(_app_root(tmp_path)))
    chainlit = str(Path(sys.executable).parent / "chainlit")
    done = subprocess.run(
        [chainlit, "run", str(ROOT / "app.py"), "-h", "--host", "127.0.0.1", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "多个工作进程只能共享服务器上的数据" in output, output[-2000:]
    for key in ("CLINCITE_DATABASE_URL", "CHROMA_HOST", "REDIS_URL"):
        assert key in output
    assert not (tmp_path / "clincite.sqlite3").exists(), "nothing was written"


def test_make_serve_runs_n_workers_and_restarts_one_that_dies(cluster, tmp_path):
    """`make serve WORKERS=2` (deploy/serve.py): supervisord, two workers and nginx on the shared servers. A worker
    killed with SIGKILL is started again by supervisord; meanwhile nginx sends its clinicians to the other one."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(cluster.shared, DATA_DIR=str(tmp_path / "data"))
    port = free_port()
    run = tmp_path / "run"
    serve = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "deploy" / "serve.py"),
            "--workers",
            "2",
            "--port",
            str(port),
            "--run-dir",
            str(run),
        ],
        cwd=ROOT,
        env=env,
        stdout=(tmp_path / "serve.log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    supervisorctl = [str(Path(sys.executable).parent / "supervisorctl"), "-c", str(run / "supervisord.conf")]

    def pid_of(program: str) -> int:
        done = subprocess.run([*supervisorctl, "pid", program], capture_output=True, text=True, timeout=30)
        return int(done.stdout.strip()) if done.stdout.strip().isdigit() else 0

    def healthy(url: str) -> bool:
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def wait(condition, what: str, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, what
            time.sleep(0.5)

    try:
        workers = [f"http://127.0.0.1:{port + i}/clincite/health" for i in (1, 2)]
        wait(lambda: all(healthy(url) for url in workers), "both workers answer")
        wait(lambda: healthy(f"http://127.0.0.1:{port}/clincite/health"), "nginx answers")
        names = {httpx.get(url).json()["worker"] for url in workers}
        assert names == {"worker-1", "worker-2"}
        victim = pid_of("worker-1")
        assert victim > 0
        os.kill(victim, signal.SIGKILL)
        # The other worker serves everyone meanwhile: every request through nginx is answered.
        for _ in range(10):
            assert httpx.get(f"http://127.0.0.1:{port}/clincite/health", timeout=10).status_code == 200
        wait(lambda: pid_of("worker-1") not in (0, victim), "supervisord starts worker-1 again")
        wait(lambda: healthy(workers[0]), "the restarted worker-1 answers again")
    finally:
        os.killpg(serve.pid, signal.SIGTERM)  # supervisord stops its workers and nginx
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
