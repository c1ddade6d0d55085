"""The app's persistence on real databases: SQLite always, PostgreSQL when its server binaries are installed."""

from __future__ import annotations

import asyncio
import importlib
import time
import uuid

import httpx
import pytest
from chainlit.types import Feedback
from chainlit.user import User
from conftest import make_settings
from servers import PostgresServer
from sqlalchemy.ext.asyncio import create_async_engine

from clincite.core.shapes import AgentUsage, Coverage, Degradation, QueryResult
from clincite.web.datalayer import FILES_ROUTE, ClinCiteDataLayer, LocalStorageClient, ensure_schema
from clincite.web.metrics import compute_metrics, render_body
from clincite.web.timestamps import install as install_step_timestamps


@pytest.fixture(scope="module")
def postgres_url():
    """A throw-away PostgreSQL cluster on a free localhost port, run as the postgres system user (tests/servers.py)."""
    with PostgresServer() as server:
        yield server.url()


def answer(
    question: str, ttft: float, stage2: bool = False, degraded: bool = False, coverage: Coverage | None = None
) -> QueryResult:
    return QueryResult(
        question=question,
        mode="llm",
        sub_queries=[],
        analyses=[],
        sufficiency=None,
        stage2_queries=[{"id": "s2-1", "text": "x"}] if stage2 else [],
        answer="**TL;DR：** …",
        citations=[],
        timings={"ttft": ttft, "total": ttft + 3},
        usage={"answer_generation": AgentUsage(requests=1, output_tokens=300)},
        degradations=[Degradation(component="judge:q1", message="…")] if degraded else [],
        coverage=coverage or Coverage(status="answered"),
    )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.server)])
async def layer(request, tmp_path):
    url = None
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_url")
        from sqlalchemy import text
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(url)  # a clean slate for each test
        async with engine.begin() as connection:
            tables = ("answer_records", "feedbacks", "elements", "steps", "threads", "users", "_migrations")
            for table in (*tables, "admin_changes", "feedback_reviews"):
                await connection.execute(text(f"DROP TABLE IF EXISTS {table} CASCADE"))
        await engine.dispose()
    settings = make_settings(tmp_path, database_url=url)
    await ensure_schema(settings.db_url)
    await ensure_schema(settings.db_url)  # idempotent: every start runs it
    data_layer = ClinCiteDataLayer(settings)
    yield data_layer
    await data_layer.close()


def in_a_chainlit_session() -> None:
    """Chainlit's step writes look at the current chat session (they wait for its first message)."""
    from chainlit.context import ChainlitContext, context_var
    from chainlit.emitter import BaseChainlitEmitter
    from chainlit.session import HTTPSession

    session = HTTPSession(id=str(uuid.uuid4()), client_type="webapp", thread_id=str(uuid.uuid4()))
    context_var.set(ChainlitContext(session, emitter=BaseChainlitEmitter(session)))


async def make_thread(layer: ClinCiteDataLayer, user: str) -> str:
    persisted = await layer.create_user(User(identifier=user))
    thread_id = str(uuid.uuid4())
    await layer.update_thread(thread_id, name="问题", user_id=persisted.id)
    return thread_id


async def test_answers_and_feedback_make_the_satisfaction_metrics(layer):
    thread = await make_thread(layer, "doctor_a")
    steps = [str(uuid.uuid4()) for _ in range(4)]
    coverages = [
        Coverage(status="answered"),
        Coverage(status="partial", missing=["禁忌证"]),
        Coverage(status="no_evidence"),
        Coverage(status="answered"),
    ]
    for step, (ttft, stage2, degraded), coverage in zip(
        steps, [(1.0, False, False), (2.0, True, False), (3.0, False, True), (4.0, False, False)], coverages
    ):
        await layer.record_answer(answer("问", ttft, stage2, degraded, coverage), step, thread, "doctor_a")
    await layer.upsert_feedback(Feedback(forId=steps[0], value=1, threadId=thread, comment="准确"))
    await layer.upsert_feedback(Feedback(forId=steps[1], value=1, threadId=thread))
    changed = await layer.upsert_feedback(Feedback(forId=steps[2], value=1, threadId=thread))
    await layer.upsert_feedback(Feedback(id=changed, forId=steps[2], value=0, threadId=thread))  # changed mind

    m = await compute_metrics(layer)
    assert (m["answers"], m["rated"], m["thumbs_up"], m["thumbs_down"]) == (4, 3, 2, 1)
    assert m["satisfaction"] == pytest.approx(2 / 3, abs=1e-3)
    assert m["feedback_coverage"] == 0.75
    assert m["ttft_p50"] == 2.5 and m["ttft_p95"] == pytest.approx(3.85)
    assert m["stage2_rate"] == 0.25
    assert m["degradations"] == {"judge": 1} and m["degraded_answers"] == 1
    assert len(m["per_day"]) == 1 and m["per_day"][0]["rated"] == 3
    assert (m["no_evidence_rate"], m["partial_rate"]) == (0.25, 0.25)
    stored = await layer.query(
        'SELECT coverage, coverage_missing FROM answer_records WHERE "stepId" = :s', {"s": steps[1]}
    )
    assert stored == [{"coverage": "partial", "coverage_missing": '["禁忌证"]'}]
    page = render_body(m)
    assert "66.7%" in page and "<svg" in page and "3/4 个回答收到了好评或差评" in page
    assert "无证据的回答" in page and "25.0%" in page
    assert "1/4 个回答中至少有一个环节改用了备用方案" in page and "相关性判断失败或超时" in page
    rows = await layer.query('SELECT comment FROM feedbacks WHERE "forId" = :f', {"f": steps[0]})
    assert rows == [{"comment": "准确"}]


async def test_the_review_desk_reads_and_marks_ratings_on_both_databases(layer):
    """The admin review desk's queries (clincite/web/admin/review.py) on SQLite and PostgreSQL: ratings with their
    question, counts per kind and state, handled by whom and back, and the change log."""
    from clincite.web.admin import changes, review

    thread = await make_thread(layer, "doctor_a")
    steps = [str(uuid.uuid4()) for _ in range(2)]
    for step, coverage in zip(steps, [Coverage(status="answered"), Coverage(status="no_evidence")]):
        await layer.record_answer(answer("青光眼的激光治疗？", 1.0, False, False, coverage), step, thread, "doctor_a")
    down = await layer.upsert_feedback(Feedback(forId=steps[0], value=0, threadId=thread, comment="来源不对"))
    await layer.upsert_feedback(Feedback(forId=steps[1], value=1, threadId=thread))

    open_down = await review.ratings(layer, "down", "open")
    assert [(r["id"], r["comment"], r["question"], r["asker"]) for r in open_down] == [
        (down, "来源不对", "青光眼的激光治疗？", "doctor_a")
    ]
    assert await review.mark_handled(layer, down, "lead") == "青光眼的激光治疗？"
    assert await review.mark_handled(layer, down, "lead2") == "青光眼的激光治疗？"  # again: the latest reviewer
    assert await review.ratings(layer, "down", "open") == []
    handled = await review.ratings(layer, "down", "handled")
    assert [(r["id"], r["handledBy"]) for r in handled] == [(down, "lead2")]
    tally = await review.counts(layer)
    assert (tally[("down", "handled")], tally[("up", "open")], tally[("all", "all")]) == (1, 1, 2)
    assert await review.mark_handled(layer, down, None) == "青光眼的激光治疗？"
    assert len(await review.ratings(layer, "all", "open")) == 2  # unmarked again
    assert await review.mark_handled(layer, "no-such-rating", "lead") is None
    gaps = review.group_gaps(await review.gap_rows(layer))
    assert [(g["question"], g["count"], g["no_evidence"]) for g in gaps] == [("青光眼的激光治疗？", 1, 1)]

    await changes.record(layer, "lead", "feedback_handled", "青光眼的激光治疗？")
    logged = await changes.recent(layer, ("feedback_handled",))
    assert [(r["actor"], r["action"], r["target"]) for r in logged] == [
        ("lead", "feedback_handled", "青光眼的激光治疗？")
    ]


async def test_feedback_is_never_lost_even_when_the_database_refuses_it(layer):
    from sqlalchemy import text

    async with layer.engine.begin() as connection:
        await connection.execute(text("DROP TABLE feedbacks"))
    feedback_id = await layer.upsert_feedback(Feedback(forId="step-1", value=0, threadId="t", comment="引用有误"))
    assert feedback_id
    kept = layer.fallback_file.read_text(encoding="utf-8")
    assert "引用有误" in kept and "step-1" in kept


async def test_concurrent_step_writes_keep_the_final_output(layer):
    """Chainlit sends a step empty and updates it later as separate tasks; the final output must win."""
    in_a_chainlit_session()
    thread = await make_thread(layer, "doctor_b")
    ids = [str(uuid.uuid4()) for _ in range(20)]

    def step(step_id: str, output: str) -> dict:
        return {
            "id": step_id,
            "threadId": thread,
            "name": "检索",
            "type": "tool",
            "streaming": False,
            "output": output,
            "createdAt": "2026-11-21T00:00:00Z",
        }

    tasks = []
    for step_id in ids:
        tasks.append(asyncio.create_task(layer.create_step(step(step_id, ""))))
        tasks.append(asyncio.create_task(layer.update_step(step(step_id, "最终输出"))))
    await asyncio.gather(*tasks)
    rows = await layer.query('SELECT output FROM steps WHERE "threadId" = :t', {"t": thread})
    assert len(rows) == 20 and all(r["output"] == "最终输出" for r in rows)


async def test_a_resumed_thread_shows_the_steps_written_a_moment_before(layer):
    """Step writes wait a moment to share one transaction; reopening the thread must not miss them."""
    in_a_chainlit_session()
    threads = [await make_thread(layer, "doctor_b") for _ in range(3)]
    names = ["问题分解", "检索", "充分性判断"]
    writes = []
    for thread in threads:  # as Chainlit does: fire-and-forget tasks, a send and then an update of each step
        for i, name in enumerate(names):
            step = {"id": f"{thread}-{i}", "threadId": thread, "name": name, "type": "tool", "streaming": False}
            sent = {**step, "output": "", "createdAt": f"2026-11-21T00:00:0{i}Z"}
            writes.append(asyncio.create_task(layer.create_step(sent)))
            writes.append(asyncio.create_task(layer.update_step({**step, "output": f"{name}的结果"})))
    await asyncio.sleep(0)  # the tasks have run up to their wait for the commit
    for thread in threads:
        stored = await layer.get_thread(thread)
        assert [(s["name"], s["output"]) for s in stored["steps"]] == [(n, f"{n}的结果") for n in names]
    await asyncio.gather(*writes)


@pytest.fixture()
def step_clock(monkeypatch):
    """clincite.web.timestamps installed as app.py does at import, and taken out again after the test."""
    for module in map(importlib.import_module, ("chainlit.step", "chainlit.message")):  # (chainlit.step: a function)
        monkeypatch.setattr(module, "time", module.time)
        monkeypatch.setattr(module, "utc_now", module.utc_now)
    install_step_timestamps()


async def test_steps_built_back_to_back_come_back_in_order_without_blocking_the_loop(layer, monkeypatch, step_clock):
    """Chainlit sleeps 1 ms on the event loop in every Step()/Message() to keep their timestamps apart; the app's
    clock (clincite.web.timestamps) keeps them apart without sleeping, and a resumed thread keeps their order."""
    import chainlit as cl

    in_a_chainlit_session()
    thread = await make_thread(layer, "doctor_a")
    cl.context.session.thread_id = thread
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    made = [cl.Step(name=f"步骤{i}", type="tool") for i in range(60)]
    messages = [cl.Message(content=f"消息{i}") for i in range(20)]
    assert slept == [] and len(messages) == 20
    stamps = [step.created_at for step in made]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    # All in one commit window (STEP_BATCH_SECONDS), as a busy app writes them, not one window per step.
    await asyncio.gather(*(layer.create_step({**step.to_dict(), "threadId": thread}) for step in made))
    stored = (await layer.get_thread(thread))["steps"]
    assert [s["name"] for s in stored] == [step.name for step in made]


async def test_a_step_that_cannot_be_stored_costs_no_other_chat_its_steps(layer):
    """The steps of every chat share one transaction: one bad row must not take the others down with it."""
    in_a_chainlit_session()
    thread = await make_thread(layer, "doctor_a")
    good = {"id": str(uuid.uuid4()), "threadId": thread, "name": "检索", "type": "tool", "streaming": False}
    bad = {"id": str(uuid.uuid4()), "threadId": thread, "type": "tool", "streaming": False}  # no name: NOT NULL
    await asyncio.gather(layer.create_step({**good, "output": "命中 3 段"}), layer.create_step(bad))
    rows = await layer.query('SELECT id, output FROM steps WHERE "threadId" = :t', {"t": thread})
    assert rows == [{"id": good["id"], "output": "命中 3 段"}]


def test_a_stored_source_passage_is_served_to_its_owner_only(running_app):
    """What a resumed thread's 【n】 link opens: the passage file, through the app's route, for its owner alone."""
    owner, other = running_app.login("doctor_a"), running_app.login("doctor_b")
    db = running_app.database()
    (owner_id,) = db.execute("SELECT id FROM users WHERE identifier = 'doctor_a'").fetchone()
    db.close()
    storage = LocalStorageClient(running_app.data_dir / "files")  # where the app's data layer keeps element files
    passage = "《来源》原文：低浓度阿托品"
    stored = asyncio.run(storage.upload_file(f"{owner_id}/element-route-test/【1】", passage, "text/plain"))
    url = stored["url"]
    assert url.startswith(FILES_ROUTE + "/")

    seen = owner.get(url)
    assert seen.status_code == 200 and seen.text == passage
    assert other.get(url).status_code == 404  # someone else's file looks like a missing one
    assert httpx.get(running_app.base_url + url).status_code == 401
    assert owner.get(FILES_ROUTE + "/" + owner_id + "/..%2F..%2Fusers.json").status_code == 404
    with pytest.raises(ValueError):
        storage.path("../../etc/passwd")
    owner.close()
    other.close()


async def test_a_question_that_failed_outright_is_recorded_and_counted(tmp_path):
    """A crash must not make a question vanish from the metrics: it is recorded as `failed`."""
    from clincite.web import state

    settings = make_settings(tmp_path)
    await ensure_schema(settings.db_url)
    previous = state._current
    try:
        app = state.configure(settings)
        await app.record_failure("阿托品的副作用？", RuntimeError("boom"), "step-failed", "thread-1", None)
        metrics = await compute_metrics(app.data_layer)
    finally:
        state._current = previous
    assert metrics["answers"] == 1 and metrics["failed_questions"] == 1
    assert metrics["degradations"] == {"failed": 1}


async def test_a_step_id_of_another_thread_is_never_upserted_there(layer):
    """Issue 24: Chainlit upserts a step by the id the client sent; an id of someone else's step moved that row (and
    its text) into the sender's thread. The row stays where it is, with its text."""
    in_a_chainlit_session()
    alice, bob = await make_thread(layer, "doctor_a"), await make_thread(layer, "doctor_b")
    step = {"id": str(uuid.uuid4()), "name": "doctor_a", "type": "user_message", "streaming": False}
    await layer.create_step({**step, "threadId": alice, "output": "患者张三，12岁，近视 -3.00D"})
    await layer.create_step({**step, "threadId": bob, "output": ""})  # the attack: same id, bob's thread
    await layer.create_step({**step, "threadId": bob, "output": "覆盖"})
    rows = await layer.query('SELECT "threadId", output FROM steps WHERE id = :id', {"id": step["id"]})
    assert rows == [{"threadId": alice, "output": "患者张三，12岁，近视 -3.00D"}]


async def test_a_threads_owner_is_set_once(layer):
    persisted = await layer.create_user(User(identifier="doctor_a"))
    intruder = await layer.create_user(User(identifier="doctor_b"))
    thread = str(uuid.uuid4())
    await layer.update_thread(thread, name="问题", user_id=persisted.id)
    await layer.update_thread(thread, name="改名", user_id=intruder.id)
    rows = await layer.query('SELECT "userIdentifier", name FROM threads WHERE id = :id', {"id": thread})
    assert rows == [{"userIdentifier": "doctor_a", "name": "改名"}]


async def test_writes_the_database_does_not_take_are_replayed_in_order(tmp_path):
    """The database refuses (a table gone: an operator's mistake, a half-done migration); the rating and the answer
    record wait in the journal, on disk, and land once it is fixed — also after a restart."""
    from sqlalchemy import text

    settings = make_settings(tmp_path)
    await ensure_schema(settings.db_url)
    layer = ClinCiteDataLayer(settings)
    in_a_chainlit_session()
    thread = await make_thread(layer, "doctor_a")
    async with layer.engine.begin() as connection:
        await connection.execute(text("ALTER TABLE answer_records RENAME TO answer_records_away"))
    saved = await layer.record_answer(answer("阿托品的副作用？", 1.0), "run-1", thread, "doctor_a")
    rating = await layer.upsert_user_feedback("doctor_a", Feedback(forId="run-1", value=0, threadId=thread))
    assert saved == "kept" and rating and layer.outage
    assert "阿托品的副作用" in layer.journal.path.read_text(encoding="utf-8")
    await layer.close()  # the app stops while the database is still broken

    async with (engine := create_async_engine(settings.db_url)).begin() as connection:
        await connection.execute(text("ALTER TABLE answer_records_away RENAME TO answer_records"))
    await engine.dispose()
    restarted = ClinCiteDataLayer(settings)
    assert restarted.load_journal() == 2
    restarted.start_replay()
    await asyncio.wait_for(restarted.wait_for_replay(), 30)
    assert await restarted.query('SELECT "stepId" FROM answer_records') == [{"stepId": "run-1"}]
    assert await restarted.query('SELECT "forId", value FROM feedbacks') == [{"forId": "run-1", "value": 0}]
    assert not restarted.journal.path.exists()
    await restarted.close()


async def test_a_sqlite_write_or_read_costs_the_event_loop_one_hop(tmp_path, monkeypatch):
    """With a hundred questions starting together every wake-up of the loop comes ~0.2 s late. A write through
    aiosqlite woke the loop for each statement's round trip (ping, cursor, execute, fetch, commit) while holding
    SQLite's lock, so thread writes passed WRITE_TIMEOUT and every later write went through the journal of unsaved
    writes (bench/load_test.py -n 100, 2026-11-24). On the writer and reader threads a whole transaction or query
    comes back to the loop once. Counted, not timed: the wake-ups from other threads during one write and one read."""
    settings = make_settings(tmp_path)
    await ensure_schema(settings.db_url)
    layer = ClinCiteDataLayer(settings)
    in_a_chainlit_session()
    thread = await make_thread(layer, "doctor_a")
    loop = asyncio.get_running_loop()
    wakeups = []
    call_soon_threadsafe = loop.call_soon_threadsafe

    def counted(*args, **kwargs):
        wakeups.append(args[0])
        return call_soon_threadsafe(*args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
    saved = await layer.record_answer(answer("阿托品的副作用？", 1.0), "run-1", thread, "doctor_a")
    written = len(wakeups)
    found = await layer.step_exists(str(uuid.uuid4()))
    read = len(wakeups) - written
    monkeypatch.undo()
    assert saved == "saved" and not found and not layer.outage
    assert (written, read) == (1, 1)
    assert await layer.query('SELECT "stepId" FROM answer_records') == [{"stepId": "run-1"}]
    await layer.close()


async def test_a_known_clinician_is_still_known_when_the_database_does_not_answer(layer):
    """Every socket that opens reads the clinician's user row; while the database cannot be read the row as last
    read answers (else Chainlit tries to create the user again, and the page waits on each attempt)."""
    from sqlalchemy import text

    created = await layer.create_user(User(identifier="doctor_outage"))
    async with layer.engine.begin() as connection:
        await connection.execute(
            text("DROP TABLE users CASCADE" if "postgresql" in str(layer.engine.url) else "DROP TABLE users")
        )
    again = await layer.get_user("doctor_outage")
    assert again is not None and again.id == created.id
    assert await layer.get_user("doctor_never_seen") is None
