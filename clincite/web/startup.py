"""What the app does once when it starts: its schema, the sample KB on first run, warm-up, and its routes."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import time

from clincite.core import bus
from clincite.core.logs import quiet_libraries
from clincite.core.settings import PROJECT_DIR, load_settings
from clincite.kb.store import CATALOGUE_FILE
from clincite.users.store import ensure_auth_secret
from clincite.web.auth import add_login_messages, add_shared_store_message, on_account_message, watch_accounts
from clincite.web.datalayer import ensure_schema
from clincite.web.looplag import start_probe
from clincite.web.routes import add_routes_before_the_spa
from clincite.web.state import AppContext
from clincite.web.translations import install_stop_message, write_translations

log = logging.getLogger("clincite.app")

STARTERS = [
    ("低浓度阿托品", "低浓度阿托品控制近视的效果和副作用？"),
    ("OK镜适应症", "角膜塑形镜（OK镜）的适应症和禁忌症有哪些？"),
    ("红光治疗安全性", "重复低强度红光治疗近视的安全性如何？"),
    ("高度近视并发症", "高度近视需要警惕哪些并发症？"),
]


ROOT_REFUSED = (
    "ClinCite 拒绝以 root 身份运行：以 root 运行时，它读取的每个文件、运行的每个解析器都能触及整台机器。"
    "请用普通账号启动；确需以 root 运行（例如容器内唯一的账号）时，设置 ALLOW_ROOT=true。"
    " (refusing to run as root: start it as an ordinary user, or set ALLOW_ROOT=true)"
)


def refuse_to_run_as_root() -> None:
    """Exit before anything starts when the process runs as root and ALLOW_ROOT does not say that is meant."""
    if os.geteuid() == 0 and not load_settings().allow_root:
        raise SystemExit(ROOT_REFUSED)


def prepare_auth_secret() -> None:
    """Chainlit refuses to start with login on and no CHAINLIT_AUTH_SECRET: keep one per installation."""
    ensure_auth_secret(load_settings())


async def start_app(app: AppContext) -> None:
    quiet_libraries()
    start_probe()  # event-loop lag for /metrics.json (and CLINCITE_LOOP_LAG_FILE, bench/load_test.py)
    add_routes_before_the_spa()
    write_translations(offline=app.settings.offline)  # 用户名 login, an honest line under the composer
    install_stop_message()  # Chainlit's "Task manually stopped." in Chinese
    add_login_messages()
    add_shared_store_message()  # with REDIS_URL: a Redis outage answers logins with a clear message
    watcher = asyncio.create_task(watch_accounts(app.users))  # accounts removed or reset with the CLI
    app.background.add(watcher)
    listener = asyncio.create_task(
        bus.listen(app.settings, {bus.ACCOUNTS: on_account_message, bus.KB: kb_message(app)})
    )
    app.background.add(listener)  # other workers' logouts and new KB versions, at once (with REDIS_URL)
    await ensure_schema(app.settings.db_url)
    warn_without_admin(app)
    replay_kept_writes(app)
    await ingest_sample_kb_if_empty(app)
    task = asyncio.create_task(warm_up(app))
    app.background.add(task)
    task.add_done_callback(app.background.discard)


def kb_message(app: AppContext):
    """A new KB version was published (on any machine): look for it now, in a thread, instead of at the next poll."""

    async def handle(message: dict) -> None:
        await asyncio.to_thread(app.service.searcher.refresh, False)

    return handle


def warn_without_admin(app: AppContext) -> None:
    """Accounts made before roles existed are clinicians: say how to name an admin (the pages need one)."""
    accounts = app.users.accounts()
    if accounts and not any(account.is_admin for account in accounts):
        log.warning(
            "No admin account: nobody can open /admin or /metrics. Name one with "
            "`python -m clincite.users role NAME admin` (their sessions end; they log in again)."
        )


async def stop_app(app: AppContext) -> None:
    """The step writes still waiting for their group commit go to the database before the process ends (or into
    the journal, replayed at the next start, when the database does not take them)."""
    await app.data_layer.flush_steps()
    if app.data_layer.outage:
        log.error(
            "%d writes still wait for the database; kept in %s",
            len(app.data_layer.journal),
            app.data_layer.journal.path,
        )


def replay_kept_writes(app: AppContext) -> None:
    """Writes an earlier run kept because the database did not take them go into it now (in the background)."""
    app.data_layer.load_journal()
    app.data_layer.start_replay()


async def ingest_sample_kb_if_empty(app: AppContext) -> None:
    """First start: fill an empty knowledge base with the sample documents, in a separate process.

    (Chroma writes hold the GIL for seconds; in this process they would stall every open chat.)
    """
    kb, sample = app.service.kb, app.settings.sample_kb_dir
    # A KB that has had documents (version > 0) is not a first run, even when its admins deleted every document.
    if kb.catalogue.document_count() or kb.catalogue.version or not sample.exists():
        return
    if kb.catalogue.shared and (kb.dir / CATALOGUE_FILE).exists():  # moved to PostgreSQL: not a first run
        log.warning(
            "The shared KB catalogue is empty but %s has a local one: not ingesting the sample KB. "
            "Run `python ingest.py <documents folder>` once with these settings (docs/deploy.md).",
            kb.dir / CATALOGUE_FILE,
        )
        return
    log.warning("Knowledge base %s is empty: ingesting %s", kb.dir, sample)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clincite.cli.ingest",
        str(sample),
        "--kb",
        str(kb.dir),
        cwd=str(PROJECT_DIR),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    log.warning("Sample ingest finished (exit %s):\n%s", process.returncode, output.decode("utf-8", "replace"))


def freeze_warm_heap() -> None:
    """Exempt everything loaded so far (models, jieba's dictionary, indexes, libraries) from garbage collection.

    Python's full collection walks every container object: with this heap that is a 0.2–0.5 s pause of the event
    loop, which lands on every chat in flight (measured with bench/load_test.py). Frozen objects are never walked,
    so full collections only see what questions allocate. Reference counting still frees frozen objects (an index
    replaced after a re-ingest goes as before); only reference cycles among them would outlive their use.
    """
    gc.collect()
    gc.freeze()
    log.info("Heap frozen after warm-up: %d objects exempt from garbage collection", gc.get_freeze_count())


async def warm_up(app: AppContext) -> None:
    started = time.perf_counter()
    try:
        await app.service.warm_up()
    except Exception:
        log.exception("Warm-up failed; the first question will load what it needs")
    freeze_warm_heap()
    log.warning(
        "Warm-up done in %.1f s (search: %s)",
        time.perf_counter() - started,
        "BM25-only" if app.service.searcher.bm25_only else "hybrid",
    )
