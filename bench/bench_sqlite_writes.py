"""What keeps SQLite from refusing writes when a hundred clinicians ask at once in one process: WAL, the busy timeout,
or the group commit of step writes? Each measured on its own, on the app's real data layer.

    .venv/bin/python bench/bench_sqlite_writes.py                  # 100 chats, every variant (~2 min)
    .venv/bin/python bench/bench_sqlite_writes.py -n 50 --json     # smaller, machine-readable

Every chat does what one question does to the app database in the real app (bench/load_test.py, 2026-11-24): the
login's user row, the thread row, ~17 steps each written on send() and again on update() spread over ~6 s,
five source-passage elements (Chainlit's create_element: a storage write and an upsert), the answer record, and a
rating through the owner-checked feedback path (two reads, one upsert). All chats start in the same instant, as in the
load test's synchronised round. The variants change one thing at a time on a fresh database file:

  journal   DELETE (SQLite's default: a commit waits for every reader, two fsyncs) or WAL
  busy      how long a writer waits for the lock: 5 s (sqlite3's default) or SQLITE_BUSY_TIMEOUT (30 s)
  group     step writes group-committed (STEP_BATCH_SECONDS) or one transaction per write (Chainlit's own)
  writer    every write on the data layer's SQLite writer thread (a transaction is one hop from the event loop) or
            through aiosqlite (each statement a round trip between the loop and a connection thread)

With --loop-load MS every chat also keeps the event loop busy, MS milliseconds of CPU at a time, as a hundred
questions starting together do in the real app (its loop lag p99 was 250-400 ms in the 100 × 2 load test): what
decides how long a write holds SQLite's lock when each of its round trips waits for the loop.

Counted: writes that failed ("database is locked", whether raised or swallowed and logged by Chainlit), writes
the data layer kept in its journal of unsaved writes because they took longer than WRITE_TIMEOUT (then every later
write queues behind them there until replayed, and the clinicians are told the database is not taking writes), rows
missing at the end, and write latency. It prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STEPS_PER_QUESTION = 17  # Chainlit steps and messages of one question (docs/architecture.md, "Many clinicians")
ELEMENTS_PER_QUESTION = 5  # source passages behind 【n】
QUESTION_SECONDS = 6.0  # how long one question's steps are spread over
VARIANTS = [
    # name, journal, busy timeout (s), group commit, writer thread
    ("before: DELETE, 5 s, group commit", "DELETE", 5.0, True, False),
    ("WAL only", "WAL", 5.0, True, False),
    ("busy timeout only", "DELETE", 30.0, True, False),
    ("WAL + busy timeout", "WAL", 30.0, True, False),
    ("WAL + busy timeout + writer thread (now)", "WAL", 30.0, True, True),
    ("WAL + busy timeout, no group commit", "WAL", 30.0, False, False),
    ("DELETE, 5 s, no group commit", "DELETE", 5.0, False, False),
]


LOGGERS = ("",)


class LockedErrors(logging.Handler):
    """Chainlit's execute_sql logs a failed write and goes on: count those log lines as lost writes."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "locked" in record.getMessage() or "An error occurred" in record.getMessage():
            self.count += 1


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] * 1000, 1)


async def one_question(layer, name: str, latencies: dict[str, list[float]], failures: list[str]) -> None:
    from chainlit.context import ChainlitContext, context_var
    from chainlit.element import Text
    from chainlit.emitter import BaseChainlitEmitter
    from chainlit.session import HTTPSession
    from chainlit.types import Feedback
    from chainlit.user import User

    from clincite.core.shapes import Coverage, QueryResult

    thread = str(uuid.uuid4())
    session = HTTPSession(id=str(uuid.uuid4()), client_type="webapp", thread_id=thread)
    context_var.set(ChainlitContext(session, emitter=BaseChainlitEmitter(session)))

    async def timed(kind: str, write) -> None:
        started = time.perf_counter()
        try:
            await write
        except Exception as exc:
            failures.append(f"{kind}: {type(exc).__name__}: {exc}"[:200])
        latencies.setdefault(kind, []).append(time.perf_counter() - started)

    user = await layer.create_user(User(identifier=name))
    if user is None:
        failures.append("user: not stored")
        return
    await timed("thread", layer.update_thread(thread, name="低浓度阿托品的副作用？", user_id=user.id))
    run_step = str(uuid.uuid4())
    pause = QUESTION_SECONDS / STEPS_PER_QUESTION
    writes = []
    for i in range(STEPS_PER_QUESTION):
        step_id = run_step if i == 0 else str(uuid.uuid4())
        row = {
            "id": step_id,
            "threadId": thread,
            "parentId": None if i == 0 else run_step,
            "name": "on_message" if i == 0 else f"step {i}",
            "type": "run" if i == 0 else "tool",
            "streaming": False,
            "output": "",
            "createdAt": f"2026-11-24T00:00:{i:02d}.000Z",
        }
        writes.append(asyncio.create_task(timed("step", layer.create_step(row))))
        await asyncio.sleep(pause * random.uniform(0.5, 1.5))
        writes.append(asyncio.create_task(timed("step", layer.create_step({**row, "output": f"第 {i} 步完成"}))))
    for i in range(ELEMENTS_PER_QUESTION):
        element = Text(
            name=f"【{i + 1}】", content="低浓度阿托品（0.01%）的常见不良反应为畏光。（演示）", display="side"
        )
        element.for_id, element.thread_id = run_step, thread
        writes.append(asyncio.create_task(timed("element", layer.create_element(element))))
    await asyncio.gather(*writes)
    result = QueryResult(
        question="低浓度阿托品的副作用？",
        mode="llm",
        sub_queries=[],
        analyses=[],
        sufficiency=None,
        stage2_queries=[],
        answer="**TL;DR：** 演示",
        citations=[],
        timings={"ttft": 3.0, "total": 8.0},
        usage={},
        degradations=[],
        coverage=Coverage(status="answered"),
    )
    await timed("answer record", layer.record_answer(result, run_step, thread, name))
    feedback = Feedback(forId=run_step, threadId=thread, value=1, comment="负载")
    await timed("feedback", layer.upsert_user_feedback(name, feedback))


async def keep_the_loop_busy(milliseconds: float, done: asyncio.Event) -> None:
    """CPU on the event loop in slices of `milliseconds`, until `done`: one question's share of a saturated loop."""
    while not done.is_set():
        until = time.perf_counter() + milliseconds / 1000
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


async def run_variant(chats: int, journal: str, busy: float, group: bool, writer: bool, loop_ms: float = 0) -> dict:
    from chainlit.data.sql_alchemy import SQLAlchemyDataLayer

    from clincite.core.settings import load_settings
    from clincite.web import datalayer

    wal = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")
    datalayer.SQLITE_PRAGMAS = wal if journal == "WAL" else ("PRAGMA journal_mode=DELETE",)

    class PerWriteLayer(datalayer.ClinCiteDataLayer):
        create_step = SQLAlchemyDataLayer.create_step  # Chainlit's own: a transaction per step write

    tmp = Path(tempfile.mkdtemp(prefix="clincite-sqlite-bench-"))
    settings = load_settings(os.devnull).model_copy(
        update={"data_dir": tmp, "database_url": None, "sqlite_busy_timeout": busy}
    )
    await datalayer.ensure_schema(settings.db_url)
    layer = (datalayer.ClinCiteDataLayer if group else PerWriteLayer)(settings)
    if not writer:  # every write through the async engine (aiosqlite), as before the writer thread
        layer.writer.close()
        layer.writer = None
    kept = []
    keep = layer._keep

    async def counted_keep(entry):
        kept.append(entry["kind"])
        return await keep(entry)

    layer._keep = counted_keep
    handler = LockedErrors()
    for logger in LOGGERS:
        logging.getLogger(logger).addHandler(handler)
    latencies: dict[str, list[float]] = {}
    failures: list[str] = []
    started = time.perf_counter()
    done = asyncio.Event()
    load = [asyncio.create_task(keep_the_loop_busy(loop_ms, done)) for _ in range(chats)] if loop_ms else []
    try:
        await asyncio.gather(*(one_question(layer, f"clinician{i:03d}", latencies, failures) for i in range(chats)))
        done.set()
        await asyncio.gather(*load)
        if group:
            await layer.flush_steps()
        await asyncio.wait_for(layer.wait_for_replay(), 120)
        rows = {
            table: (await layer.query(f"SELECT COUNT(*) AS n FROM {table}"))[0]["n"]
            for table in ("steps", "elements", "answer_records", "feedbacks")
        }
    finally:
        for logger in LOGGERS:
            logging.getLogger(logger).removeHandler(handler)
        done.set()
        await layer.close()
    expected = {
        "steps": chats * STEPS_PER_QUESTION,
        "elements": chats * ELEMENTS_PER_QUESTION,
        "answer_records": chats,
        "feedbacks": chats,
    }
    return {
        "journal": journal,
        "busy_timeout_s": busy,
        "group_commit": group,
        "writer_thread": writer,
        "loop_load_ms": loop_ms,
        "kept_for_replay": {kind: kept.count(kind) for kind in sorted(set(kept))},
        "seconds": round(time.perf_counter() - started, 1),
        "failed_writes": len(failures) + handler.count,
        "failures": failures[:5],
        "rows_missing": {t: expected[t] - rows[t] for t in expected if rows[t] != expected[t]},
        "write_ms_p50_p99": {k: [percentile(v, 50), percentile(v, 99)] for k, v in sorted(latencies.items())},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--chats", type=int, default=100)
    parser.add_argument("--only", help="run only the variants whose name contains this")
    parser.add_argument(
        "--loop-load", type=float, default=0, metavar="MS", help="each chat also keeps the loop busy MS ms at a time"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)  # warnings reach the counter …
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.ERROR)  # … but only errors are printed
    results = {}
    for name, journal, busy, group, writer in VARIANTS:
        if args.only and args.only not in name:
            continue
        random.seed(1)
        results[name] = asyncio.run(run_variant(args.chats, journal, busy, group, writer, args.loop_load))
        if not args.json:
            r = results[name]
            print(
                f"{name:<42} failed writes {r['failed_writes']:>4}  kept for replay {r['kept_for_replay'] or '-'}  "
                f"missing {r['rows_missing'] or '-'}  "
                f"{r['seconds']:>5} s  write ms p50/p99 "
                + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in r["write_ms_p50_p99"].items()),
                flush=True,
            )
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
