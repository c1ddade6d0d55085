"""Persistence of the web app: Chainlit's threads, steps, elements and feedback, plus one record per answer.

SQLite (aiosqlite) in the data directory by default, PostgreSQL when CLINCITE_DATABASE_URL says so; the schema is
created on first start. Four changes to Chainlit 2.12's stock `SQLAlchemyDataLayer`:
- step writes are group-committed: the writes of every chat within STEP_BATCH_SECONDS become one transaction, and
  several writes of one step within it become one row write (Chainlit writes a step on every send and update, each in
  a transaction of its own, after a query for its thread: about 0.09 s of event-loop time per question, which twenty
  clinicians at once felt as a slower first token); a stored output is never overwritten with an empty one
  (otherwise an empty-output `send()` can land after the final `update()`);
- writes that matter — step batches, threads, answer records, elements, ratings — never fail silently: when the
  database is down (or the disk full) they are kept in order in a durable journal (web/journal.py) and replayed as
  soon as it answers again, so an outage loses no question, answer or rating, and a thread started during it keeps
  its owner; the caller learns whether a write was saved, kept for later, or kept in memory only (the clinician is
  told). The engine hides bound parameters from its error messages: no question or answer text reaches the log;
- a step id that exists in another thread is never upserted there, and a thread's owner, once set, never changes;
- elements (the source passages behind 【n】) are stored on disk so they survive in resumed threads.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import uuid
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import Any

from chainlit.data.sql_alchemy import SQLAlchemyDataLayer
from chainlit.data.storage_clients.base import BaseStorageClient
from chainlit.data.utils import queue_until_user_message
from chainlit.types import Feedback
from chainlit.user import PersistedUser
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from clincite.core.migrations import Migrations, apply_async
from clincite.core.settings import Settings
from clincite.core.shapes import QueryResult
from clincite.core.untrusted import clean_input
from clincite.users.store import create_private, write_private
from clincite.web.journal import WriteJournal

log = logging.getLogger("clincite.datalayer")

FILES_ROUTE = "/clincite/files"
STEP_BATCH_SECONDS = 0.2  # how long a step write may wait to share its transaction with the other chats' writes
# SQLite with a hundred chats in one process (bench/bench_sqlite_writes.py measures each of these): WAL lets readers
# and the one writer proceed side by side and makes a commit one append; a writer that finds the database busy waits
# up to SQLITE_BUSY_TIMEOUT seconds for its turn instead of failing with "database is locked" after sqlite3's 5 s.
SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")
JOURNAL_FILE = "unsaved_writes.jsonl"
LEGACY_FEEDBACK_FILE = "feedback_not_saved.jsonl"  # the feedback-only fallback of earlier releases: imported
REPLAY_RETRY_SECONDS = 2.0  # how often kept writes are tried again while the database does not answer
WRITE_TIMEOUT = 15.0  # a write that hangs longer (a network partition) counts as an outage
CONNECT_TIMEOUT = 5.0  # seconds to open a PostgreSQL connection (asyncpg's default is 60)


class Saved(StrEnum):
    """What became of a write: in the database; kept on disk for replay; kept in memory only (disk refused too)."""

    SAVED = "saved"
    KEPT = "kept"
    UNSAVED = "unsaved"


def is_outage(exc: BaseException) -> bool:
    """The database (or the disk under it) is not taking writes now — as opposed to a write it will never take."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, ProgrammingError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    # ProgrammingError: a table or column missing (a schema an operator broke or has not migrated yet) — the write
    # waits for it to be fixed rather than being lost.
    waits = (OSError, TimeoutError, ConnectionError, PoolTimeout, InterfaceError, OperationalError, ProgrammingError)
    if isinstance(exc, waits):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        original = getattr(exc, "orig", None)
        state = str(getattr(original, "sqlstate", None) or getattr(original, "pgcode", None) or "")
        names = {cls.__name__ for cls in type(original).__mro__} if original is not None else set()
        return state.startswith(OUTAGE_SQLSTATES) or bool(names & OUTAGE_ERRORS)
    return False


# PostgreSQL's SQLSTATEs of "the server is not there or not ready": connection exceptions (08…), shutting down or
# starting up (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now), too many connections (53300).
OUTAGE_SQLSTATES = ("08", "57P", "53300")
# asyncpg's own connection errors (when SQLAlchemy hands them over as they are)
OUTAGE_ERRORS = {"PostgresConnectionError", "ConnectionDoesNotExistError", "InterfaceError", "ConnectionError"}

# Columns follow Chainlit 2.12's to_dict() keys (the published DDL is stale: defaultOpen, autoCollapse, ...).
INITIAL_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, identifier TEXT NOT NULL UNIQUE,
        metadata TEXT NOT NULL, "createdAt" TEXT)""",
    """CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, "createdAt" TEXT, name TEXT,
        "userId" TEXT REFERENCES users(id) ON DELETE CASCADE, "userIdentifier" TEXT, tags TEXT,
        metadata TEXT NOT NULL DEFAULT '{}')""",
    """CREATE TABLE IF NOT EXISTS steps (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
        "threadId" TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE, "parentId" TEXT, streaming BOOLEAN NOT NULL,
        "waitForAnswer" BOOLEAN, "isError" BOOLEAN, metadata TEXT, tags TEXT, input TEXT, output TEXT,
        "createdAt" TEXT, command TEXT, modes TEXT, start TEXT, "end" TEXT, generation TEXT, "showInput" TEXT,
        language TEXT, indent INT, "defaultOpen" BOOLEAN, "autoCollapse" BOOLEAN)""",
    """CREATE TABLE IF NOT EXISTS elements (id TEXT PRIMARY KEY, "threadId" TEXT REFERENCES threads(id)
        ON DELETE CASCADE, type TEXT, url TEXT, "chainlitKey" TEXT, name TEXT NOT NULL, display TEXT,
        "objectKey" TEXT, size TEXT, page INT, language TEXT, "forId" TEXT, mime TEXT, props TEXT,
        "autoPlay" BOOLEAN, "playerConfig" TEXT)""",
    """CREATE TABLE IF NOT EXISTS feedbacks (id TEXT PRIMARY KEY, "forId" TEXT NOT NULL,
        "threadId" TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE, value INT NOT NULL, comment TEXT,
        "createdAt" TEXT DEFAULT CURRENT_TIMESTAMP)""",
    """CREATE TABLE IF NOT EXISTS answer_records (id TEXT PRIMARY KEY, "stepId" TEXT NOT NULL, "threadId" TEXT,
        "userIdentifier" TEXT, "createdAt" TEXT NOT NULL, question TEXT NOT NULL, mode TEXT NOT NULL,
        search_mode TEXT, cached BOOLEAN NOT NULL, ttft REAL, total REAL, timings TEXT, sub_queries INT,
        stage2 BOOLEAN NOT NULL, degradations TEXT, degradation_count INT NOT NULL, citations INT,
        unverified_citations INT NOT NULL, input_tokens INT, output_tokens INT)""",
    """CREATE INDEX IF NOT EXISTS answer_records_step ON answer_records ("stepId")""",
    """CREATE INDEX IF NOT EXISTS feedbacks_for ON feedbacks ("forId")""",
]


app_migrations = Migrations("app")


@app_migrations
async def m001_initial(connection) -> None:
    """Chainlit 2.12's tables and the answer records (adopted in place when the tables already exist)."""
    for statement in INITIAL_SCHEMA:
        await connection.execute(text(statement))


@app_migrations
async def m002_answer_coverage(connection) -> None:
    """Coverage of each answer (answered | partial | no_evidence) and the aspects it did not cover (JSON list)."""
    await connection.execute(text("ALTER TABLE answer_records ADD COLUMN coverage TEXT"))
    await connection.execute(text("ALTER TABLE answer_records ADD COLUMN coverage_missing TEXT"))


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in SQLITE_PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


@app_migrations
async def m003_element_files(connection) -> None:
    """The files behind elements (source passages), for workers that share a PostgreSQL database: a resumed thread
    shows its passages on any worker. With SQLite they stay in DATA_DIR/files (one machine)."""
    blob = "BYTEA" if connection.dialect.name == "postgresql" else "BLOB"
    await connection.execute(
        text(f"CREATE TABLE IF NOT EXISTS element_files (object_key TEXT PRIMARY KEY, mime TEXT, data {blob} NOT NULL)")
    )


@app_migrations
async def m004_admin_changes(connection) -> None:
    """Every change made on the admin pages (library, accounts, review desk): who, what, when, and how it ended."""
    await connection.execute(
        text(
            """CREATE TABLE IF NOT EXISTS admin_changes (id TEXT PRIMARY KEY, "createdAt" TEXT NOT NULL,
            actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '')"""
        )
    )
    await connection.execute(text('CREATE INDEX IF NOT EXISTS admin_changes_created ON admin_changes ("createdAt")'))


@app_migrations
async def m005_feedback_reviews(connection) -> None:
    """The review desk's state of a rating: handled (by whom, when) or not; no row = not handled."""
    await connection.execute(
        text(
            """CREATE TABLE IF NOT EXISTS feedback_reviews ("feedbackId" TEXT PRIMARY KEY, "handledBy" TEXT NOT NULL,
            "handledAt" TEXT NOT NULL)"""
        )
    )


async def ensure_schema(url: str) -> int:
    """Apply pending migrations at start; returns the schema version."""
    if url.startswith("sqlite"):
        # Created 0600 before SQLite opens it (SQLite's journal and WAL files take the database file's mode).
        create_private(Path(url.split("///", 1)[1]))
    engine = engine_for(url)
    try:
        async with engine.begin() as connection:
            return await apply_async(connection, app_migrations)
    finally:
        await engine.dispose()


def insert_sql(table: str, row: dict, upsert: bool = False, ignore_existing: bool = False):
    """INSERT of one row with bound parameters (valid in SQLite and PostgreSQL); upsert replaces by id,
    ignore_existing keeps the row already there (a replayed write lands once)."""
    columns = ", ".join(f'"{k}"' for k in row)
    values = ", ".join(f":{k}" for k in row)
    sql = f"INSERT INTO {table} ({columns}) VALUES ({values})"
    if upsert:
        sql += " ON CONFLICT (id) DO UPDATE SET " + ", ".join(f'"{k}" = :{k}' for k in row if k != "id")
    elif ignore_existing:
        sql += " ON CONFLICT (id) DO NOTHING"
    return text(sql)


class LocalStorageClient(BaseStorageClient):
    """Element files on local disk, served back only to their owner through an authenticated route."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, object_key: str) -> Path:
        path = (self.root / object_key).resolve()
        if self.root.resolve() not in path.parents:
            raise ValueError(f"object key escapes the storage folder: {object_key}")
        return path

    async def upload_file(
        self,
        object_key: str,
        data: bytes | str,
        mime: str = "application/octet-stream",
        overwrite: bool = True,
        content_disposition: str | None = None,
    ) -> dict[str, Any]:
        path = self.path(object_key)
        if path.exists() and not overwrite:
            return {"object_key": object_key, "url": await self.get_read_url(object_key)}
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        await asyncio.to_thread(write_private, path, payload)  # passages: 0600 from the start, like the database
        return {"object_key": object_key, "url": await self.get_read_url(object_key)}

    async def delete_file(self, object_key: str) -> bool:
        path = self.path(object_key)
        if path.exists():
            path.unlink()
        return True

    async def get_read_url(self, object_key: str) -> str:
        return f"{FILES_ROUTE}/{object_key}"

    async def close(self) -> None:
        return None


class DatabaseStorageClient(BaseStorageClient):
    """Element files in the app database (table element_files): every worker serves every thread's passages."""

    def __init__(self):
        self.engine = None  # the data layer's engine, set once it exists

    async def upload_file(
        self,
        object_key: str,
        data: bytes | str,
        mime: str = "application/octet-stream",
        overwrite: bool = True,
        content_disposition: str | None = None,
    ) -> dict[str, Any]:
        payload = data.encode("utf-8") if isinstance(data, str) else data
        conflict = "DO UPDATE SET data = excluded.data, mime = excluded.mime" if overwrite else "DO NOTHING"
        async with self.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO element_files (object_key, mime, data) VALUES (:key, :mime, :data) "
                    f"ON CONFLICT (object_key) {conflict}"
                ),
                {"key": object_key, "mime": mime, "data": payload},
            )
        return {"object_key": object_key, "url": await self.get_read_url(object_key)}

    async def read(self, object_key: str) -> bytes | None:
        async with self.engine.connect() as connection:
            row = (
                await connection.execute(
                    text("SELECT data FROM element_files WHERE object_key = :key"), {"key": object_key}
                )
            ).fetchone()
        return bytes(row[0]) if row else None

    async def delete_file(self, object_key: str) -> bool:
        async with self.engine.begin() as connection:
            await connection.execute(text("DELETE FROM element_files WHERE object_key = :key"), {"key": object_key})
        return True

    async def get_read_url(self, object_key: str) -> str:
        return f"{FILES_ROUTE}/{object_key}"

    async def close(self) -> None:
        return None


def engine_for(url: str, sqlite_busy_timeout: float | None = None):
    """The app's engine: parameters never in error messages (they are questions and answers), dead pooled
    connections noticed before use (after a database restart), a bounded wait for a new PostgreSQL connection; SQLite
    in WAL mode with a busy timeout."""
    if url.startswith("sqlite"):
        connect_args = {"timeout": sqlite_busy_timeout} if sqlite_busy_timeout else {}
    else:
        connect_args = {"timeout": CONNECT_TIMEOUT} if url.startswith("postgresql+asyncpg") else {}
    engine = create_async_engine(url, hide_parameters=True, pool_pre_ping=True, connect_args=connect_args)
    if url.startswith("sqlite"):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


class SqliteWriter:
    """Every write of the app database on SQLite, one transaction at a time, in one thread of its own.

    SQLite takes one writer at a time anyway. Through aiosqlite each statement of a transaction is a round trip
    between the event loop and a connection thread (checkout ping, execute, fetch, commit), and the transaction holds
    the write lock across all of them: with a hundred questions starting in the same instant the loop takes ~0.2 s per
    round trip, so each write held the lock for seconds while the others slept in SQLite's busy handler, and thread
    writes passed WRITE_TIMEOUT (bench/load_test.py -n 100, 2026-11-24: 23 thread writes timed out and every later
    write of the run went through the journal of unsaved writes). Here a whole transaction runs in this thread on
    a plain sqlite3 connection, one hop from the loop: writes queue in order in the thread's queue, hold the lock
    for the milliseconds the statements take, and leave the async engine's pool to the reads.

    The data layer's own reads (`query`) run the same way on two reader threads (WAL: they never wait for the
    writer): the door's check of every question's message id (web/door.py) is one of them, and through aiosqlite its
    ~9 round trips (pool ping, cursor, execute, fetch, close, rollback) cost a question 1–2 s before it started."""

    READERS = 2

    def __init__(self, url: str, busy_timeout: float | None):
        from concurrent.futures import ThreadPoolExecutor

        from sqlalchemy import create_engine

        sync_url = url.replace("+aiosqlite", "")
        # A pooled connection may serve either reader thread (one at a time: the pool hands it out).
        connect_args = {"check_same_thread": False, **({"timeout": busy_timeout} if busy_timeout else {})}
        self.engine = create_engine(sync_url, hide_parameters=True, connect_args=connect_args)
        event.listen(self.engine, "connect", _sqlite_pragmas)
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clincite-sqlite-writer")
        self.readers = ThreadPoolExecutor(max_workers=self.READERS, thread_name_prefix="clincite-sqlite-reader")

    async def run(self, write, *args):
        """`write(connection, *args)` in one transaction on the writer thread; its result."""

        def transaction():
            with self.engine.begin() as connection:
                return write(connection, *args)

        return await asyncio.get_running_loop().run_in_executor(self.thread, transaction)

    async def read(self, read, *args):
        """`read(connection, *args)` on a reader thread; its result."""

        def reading():
            with self.engine.connect() as connection:
                return read(connection, *args)

        return await asyncio.get_running_loop().run_in_executor(self.readers, reading)

    def close(self) -> None:
        """After the writes and reads queued so far."""
        self.readers.shutdown(wait=True)
        self.thread.shutdown(wait=True)
        self.engine.dispose()


class ClinCiteDataLayer(SQLAlchemyDataLayer):
    def __init__(self, settings: Settings):
        self.journal = WriteJournal(settings.data_dir / JOURNAL_FILE)
        self.legacy_feedback_file = settings.data_dir / LEGACY_FEEDBACK_FILE
        self._replayer: asyncio.Task | None = None
        self._step_batch: StepBatch | None = None  # the writes waiting for the next commit
        self._step_commit: asyncio.Task | None = None  # the commit in progress (commits run one after another)
        self._users: dict[str, PersistedUser] = {}  # clinicians' user rows as last read (see get_user)
        sqlite = settings.db_url.startswith("sqlite")
        # One machine: element files on its disk; a shared PostgreSQL database: in it, for every worker.
        storage = LocalStorageClient(settings.data_dir / "files") if sqlite else DatabaseStorageClient()
        super().__init__(conninfo=settings.db_url, storage_provider=storage)
        # In place of Chainlit's engine (which logs parameters on errors): see engine_for.
        self.engine = engine_for(settings.db_url, settings.sqlite_busy_timeout)
        self.async_session = async_sessionmaker(bind=self.engine, expire_on_commit=False)
        # SQLite: the data layer's writes on a thread of their own, its reads on two more (SqliteWriter).
        self.writer = SqliteWriter(settings.db_url, settings.sqlite_busy_timeout) if sqlite else None
        if not sqlite:
            storage.engine = self.engine

    async def execute_sql(self, query: str, parameters: dict):
        """Chainlit's own statements (a login's user row, thread lists, deletions): on SQLite on the writer thread (a
        SELECT on a reader thread), so that a login's insert does not hold SQLite's lock across a saturated loop's
        round trips while the writer waits; as Chainlit's, an error is logged and gives None."""
        if self.writer is None:
            return await super().execute_sql(query, parameters)
        statement = text(query)

        def run(connection):
            result = connection.execute(statement, parameters)
            if result.returns_rows:
                return self.clean_result([dict(row._mapping) for row in result.fetchall()])
            return result.rowcount

        selecting = query.lstrip()[:6].upper() == "SELECT"
        try:
            return await (self.writer.read(run) if selecting else self.writer.run(run))
        except Exception as exc:
            log.warning("An error occurred: %s: %s", type(exc).__name__, exc)
            return None

    async def get_user(self, identifier: str) -> PersistedUser | None:
        """A clinician's user row; while the database does not answer, the row as last read. Every socket that opens
        asks for it (Chainlit's authenticate_user), and on a failed read Chainlit goes on to create the user: four
        attempts of up to CONNECT_TIMEOUT each, so a page opened during a PostgreSQL outage would wait ~20 s. While
        writes wait for the database (an outage), a known clinician's row is not asked for at all."""
        known = self._users.get(identifier)
        if known is not None and self.outage:
            return known
        user = await super().get_user(identifier)
        if user is None:
            return known  # not in the database, or the read failed: the row as last read, if any
        self._users[identifier] = user
        return user

    async def transaction(self, write, *args):
        """`write(connection, *args)` — plain SQLAlchemy calls on a sync connection — in one transaction: on the
        SQLite writer thread, or on the async engine (PostgreSQL: the same calls, awaited through run_sync)."""
        if self.writer is not None:
            return await self.writer.run(write, *args)
        async with self.engine.begin() as connection:
            return await connection.run_sync(write, *args)

    @property
    def fallback_file(self) -> Path:
        """Where writes the database did not take are kept (the journal file)."""
        return self.journal.path

    # --- writes that survive an outage ---
    @property
    def outage(self) -> bool:
        """Writes are waiting for the database (it did not answer the last time it was asked)."""
        return bool(self.journal.entries)

    async def save(self, entry: dict) -> Saved:
        """Write this entry, or keep it for replay when the database is not taking writes (in order: while anything
        is kept, new writes queue behind it). A write the database refuses for good raises."""
        if self.journal.entries:
            return await self._keep(entry)
        try:
            async with asyncio.timeout(WRITE_TIMEOUT):
                await self._apply(entry)
            return Saved.SAVED
        except Exception as exc:
            if not is_outage(exc):
                raise
            log.error(
                "The database did not take a %s write (%s); kept for replay in %s",
                entry["kind"],
                type(exc).__name__,
                self.journal.path,
            )
            return await self._keep(entry)

    async def _keep(self, entry: dict) -> Saved:
        durable = await self.journal.add(entry)
        self.start_replay()
        return Saved.KEPT if durable else Saved.UNSAVED

    def start_replay(self) -> None:
        """Replay the kept writes in the background (at start, and whenever one is kept)."""
        if self.journal.entries and (self._replayer is None or self._replayer.done()):
            self._replayer = asyncio.create_task(self._replay())

    async def _replay(self) -> None:
        while self.journal.entries:
            written = 0
            try:
                for entry in list(self.journal.entries):
                    try:
                        async with asyncio.timeout(WRITE_TIMEOUT):
                            await self._apply(entry)
                    except Exception as exc:
                        if is_outage(exc):
                            raise
                        log.error("A kept %s write was refused by the database (%s): dropped", entry["kind"], exc)
                    written += 1
            except Exception as exc:
                log.warning("Kept writes still wait for the database (%s)", type(exc).__name__)
            if written:
                await self.journal.forget(written)
                log.warning("%d kept writes are in the database now (%d still waiting)", written, len(self.journal))
            if self.journal.entries:
                await asyncio.sleep(REPLAY_RETRY_SECONDS)

    async def close(self) -> None:
        if self._replayer is not None:
            self._replayer.cancel()
            await asyncio.gather(self._replayer, return_exceptions=True)
        if self.writer is not None:
            await asyncio.to_thread(self.writer.close)
        await self.engine.dispose()

    async def wait_for_replay(self) -> None:
        """Until every kept write is in the database (tests, shutdown)."""
        while self.journal.entries and self._replayer is not None:
            await asyncio.shield(self._replayer)

    async def _apply(self, entry: dict) -> None:
        kind = entry["kind"]
        if kind == "steps":
            await self._write_step_rows(entry["rows"])
        elif kind == "thread":
            await self._write_thread(entry)
        elif kind == "answer":
            await self.transaction(
                _insert, insert_sql("answer_records", entry["row"], ignore_existing=True), entry["row"]
            )
        elif kind == "element":
            if file := entry.get("file"):  # a passage whose file lives in the database waited with its row
                data = base64.b64decode(file["data"])
                await self.storage_provider.upload_file(object_key=file["key"], data=data, mime=file["mime"])
            await self.transaction(_insert, insert_sql("elements", entry["row"], upsert=True), entry["row"])
        elif kind == "feedback_row":
            await self.transaction(_insert, insert_sql("feedbacks", entry["row"], upsert=True), entry["row"])
        elif kind == "feedback":
            rated = await self._rate(entry["user"], Feedback(**entry["feedback"]), keep_id=True)
            if rated is None:
                log.warning("A kept rating was not the rater's to give (checked on replay): dropped")
        else:
            log.error("A kept write of unknown kind %r was dropped", kind)

    @queue_until_user_message()  # as Chainlit's: steps before the first message wait for it
    async def create_step(self, step_dict):
        """Chainlit's step upsert, group-committed; returns once the write is in the database.

        `send()` (empty output) and `update()` (final output) are separate tasks and may land in either order: an
        empty output never overwrites a non-empty one, so the answer survives whichever comes last. update_step()
        goes through here too.
        """
        if self._step_batch is None:
            self._step_batch = StepBatch()
            asyncio.get_running_loop().call_later(STEP_BATCH_SECONDS, self._commit_batch, self._step_batch)
        batch = self._step_batch
        batch.add(step_row(step_dict))
        await asyncio.shield(batch.committed)  # a cancelled chat does not take the other chats' writes with it

    async def flush_steps(self) -> None:
        """Commit the waiting step writes now (before reading steps back, and at shutdown)."""
        if self._step_batch is not None:
            batch = self._step_batch
            self._commit_batch(batch)
            await asyncio.shield(batch.committed)
        elif self._step_commit is not None:
            await asyncio.shield(self._step_commit)

    def _commit_batch(self, batch: StepBatch) -> None:
        if self._step_batch is not batch:  # already committed by flush_steps()
            return
        self._step_batch = None
        self._step_commit = asyncio.create_task(self._write_batch(batch, self._step_commit))

    async def _write_batch(self, batch: StepBatch, previous: asyncio.Task | None) -> None:
        if previous is not None:  # a step's writes land in the order they were made
            await asyncio.gather(previous, return_exceptions=True)
        try:
            await self._store_steps(list(batch.rows.values()))
        finally:
            batch.committed.set_result(None)

    async def _store_steps(self, rows: list[dict]) -> None:
        """One group commit's rows: written, or kept for replay while the database is down."""
        try:
            await self.save({"kind": "steps", "rows": rows})
        except Exception as exc:  # as Chainlit's execute_sql: a step that cannot be stored does not stop the chat
            log.warning("%d step writes could not be stored: %s", len(rows), type(exc).__name__)

    async def _write_step_rows(self, rows: list[dict]) -> None:
        """In one transaction; when a bad row fails it, row by row, so that it costs no other chat its steps (an
        outage is raised: the rows are kept)."""
        try:
            await self._write_steps(rows)
            return
        except Exception as exc:
            if is_outage(exc) or len(rows) == 1:
                raise
            log.warning("A batch of %d step writes failed (%s); writing them one by one", len(rows), exc)
        for row in rows:
            try:
                await self._write_steps([row])
            except Exception as exc:
                if is_outage(exc):
                    raise
                log.warning("Step %s could not be stored: %s: %s", row.get("id"), type(exc).__name__, exc)

    async def _write_steps(self, rows: list[dict]) -> None:
        await self.transaction(_write_steps, rows, await self.get_current_timestamp())

    # --- threads and elements: written through `save`, so an outage keeps them too ---
    async def update_thread(
        self,
        thread_id: str,
        name: str | None = None,
        user_id: str | None = None,
        metadata: dict | None = None,
        tags: list[str] | None = None,
    ) -> None:
        """Chainlit's thread upsert, kept for replay in an outage. The owner comes from the user id or, when
        Chainlit has none (the login's user record could not be written: the database was down), from the chat
        session that started this thread; once a thread has an owner it never changes."""
        entry = {
            "kind": "thread",
            "id": thread_id,
            "name": clean_input(name)[:THREAD_NAME_CHARS] if name else None,
            "userId": user_id,
            "userIdentifier": _session_user_of(thread_id, user_id),
            "metadata": metadata,
            "tags": tags,
        }
        if user_id or name is not None or metadata is not None or tags is not None:
            await self.save(entry)

    async def _write_thread(self, entry: dict) -> None:
        await self.transaction(_write_thread, entry, await self.get_current_timestamp())

    @queue_until_user_message()  # as Chainlit's: elements before the first message wait for it
    async def create_element(self, element) -> None:
        """Chainlit's element write (the passage file on disk, its row in the database), the row kept for replay."""
        if not element.for_id or self.storage_provider is None:
            return
        content = element.content
        if content is None and element.path:
            content = await asyncio.to_thread(Path(element.path).read_bytes)
        if content is None:
            raise ValueError("Element content or path must be provided")
        user_id = await self._get_user_id_by_thread(element.thread_id) or "unknown"
        key = f"{user_id}/{element.id}" + (f"/{element.name}" if element.name else "")
        mime = element.mime or "application/octet-stream"
        entry: dict = {"kind": "element"}
        try:
            if self.outage:  # the files of a shared database wait with the row
                raise ConnectionError("the database is not taking writes")
            await self.storage_provider.upload_file(object_key=key, data=content, mime=mime, overwrite=True)
        except Exception as exc:
            if not is_outage(exc):
                raise
            payload = content.encode("utf-8") if isinstance(content, str) else content
            entry["file"] = {"key": key, "mime": mime, "data": base64.b64encode(payload).decode("ascii")}
        url = await self.storage_provider.get_read_url(key)
        row = {**element.to_dict(), "url": url, "objectKey": key, "mime": mime}
        row = {k: v for k, v in row.items() if v is not None}
        if "props" in row:
            row["props"] = json.dumps(row["props"])
        await self.save({**entry, "row": row})

    async def _get_user_id_by_thread(self, thread_id: str) -> str | None:
        try:
            return await self._owner_id(thread_id)
        except Exception as exc:
            if not is_outage(exc):
                raise
            return None

    async def step_exists(self, step_id: str) -> bool:
        """Whether the app already has a step of this id (written, or waiting for its group commit)."""
        if self._step_batch is not None and step_id in self._step_batch.rows:
            return True
        return bool(await self.query("SELECT 1 FROM steps WHERE id = :id", {"id": step_id}))

    async def get_thread(self, thread_id: str):
        await self.flush_steps()  # a resumed thread shows every step written so far
        return await super().get_thread(thread_id)

    def load_journal(self) -> int:
        """At start: the writes an earlier run kept (and the old feedback fallback file's rows), replayed soon."""
        loaded = self.journal.load(legacy=self.legacy_feedback_file)
        if loaded:
            log.warning("%d writes kept by an earlier run wait for the database (%s)", loaded, self.journal.path)
        return loaded

    async def upsert_feedback(self, feedback: Feedback) -> str:
        """Write a (checked) rating, or keep it for replay: a clinician's rating is never silently dropped."""
        feedback.id = feedback.id or str(uuid.uuid4())
        row = {k: v for k, v in asdict(feedback).items() if v is not None}
        await self.save({"kind": "feedback_row", "row": row})
        return feedback.id

    async def owned_answer_thread(self, user_identifier: str, step_id: str) -> str | None:
        """The thread of this answer (its on_message run step) when the thread belongs to this user, else None."""
        rows = await self.query(
            'SELECT a."threadId" FROM answer_records a JOIN threads t ON t.id = a."threadId" '
            'WHERE a."stepId" = :step AND t."userIdentifier" = :user',
            {"step": step_id, "user": user_identifier},
        )
        return rows[0]["threadId"] if rows else None

    async def upsert_user_feedback(self, user_identifier: str, feedback: Feedback) -> str | None:
        """Write a clinician's rating of one of their own answers; None (nothing written) for anything else.

        While the database is down the rating is kept with its rater, and checked exactly the same way when it is
        replayed (a rating of someone else's answer is dropped then): the clinician's 👍/👎 is not lost.
        """
        if not self.journal.entries:
            try:
                return await self._rate(user_identifier, feedback)
            except Exception as exc:
                if not is_outage(exc):
                    raise
        feedback.id = feedback.id or str(uuid.uuid4())  # the server's: honoured when the rating is replayed
        await self._keep({"kind": "feedback", "user": user_identifier, "feedback": asdict(feedback)})
        return feedback.id

    async def _rate(self, user_identifier: str, feedback: Feedback, keep_id: bool = False) -> str | None:
        """One rating per answer: a new rating of an already rated answer replaces it, and a feedback id the client
        sends is honoured only when it is that rating's own id (so nobody can repoint or overwrite another rating).
        `keep_id`: the id was given by this server (a kept rating): used for a new row."""
        thread_id = await self.owned_answer_thread(user_identifier, feedback.forId)
        if thread_id is None or (feedback.threadId and feedback.threadId != thread_id):
            return None
        if feedback.id:
            rows = await self.query('SELECT "forId" FROM feedbacks WHERE id = :id', {"id": feedback.id})
            if rows and rows[0]["forId"] != feedback.forId:
                return None
            if not rows and not keep_id:
                feedback.id = None  # an id the client made up names nothing: the server picks the row
        existing = await self.query(
            'SELECT id FROM feedbacks WHERE "forId" = :for_id ORDER BY "createdAt" DESC', {"for_id": feedback.forId}
        )
        if existing and (not feedback.id or keep_id):
            feedback.id = existing[0]["id"]
        feedback.id = feedback.id or str(uuid.uuid4())
        feedback.threadId = thread_id
        row = {k: v for k, v in asdict(feedback).items() if v is not None}
        await self.transaction(_insert, insert_sql("feedbacks", row, upsert=True), row)
        return feedback.id

    async def delete_user_feedback(self, user_identifier: str, feedback_id: str) -> bool:
        """Delete a rating in one of this user's threads; False (nothing deleted) for anyone else's or none."""
        rows = await self.query(
            'SELECT f.id FROM feedbacks f JOIN threads t ON t.id = f."threadId" '
            'WHERE f.id = :id AND t."userIdentifier" = :user',
            {"id": feedback_id, "user": user_identifier},
        )
        return bool(rows) and await self.delete_feedback(feedback_id)

    async def record_answer(self, result: QueryResult, step_id: str, thread_id: str | None, user: str | None) -> Saved:
        """One row per answer: what the satisfaction metrics are computed from (kept for replay in an outage)."""
        usage = result.usage.values()
        row = {
            "id": str(uuid.uuid4()),
            "stepId": step_id,
            "threadId": thread_id,
            "userIdentifier": user,
            "createdAt": await self.get_current_timestamp(),
            "question": result.question,
            "mode": result.mode,
            "search_mode": result.search_mode,
            "cached": result.cached,
            "ttft": result.timings.get("ttft"),
            "total": result.timings.get("total"),
            "timings": json.dumps(result.timings),
            "sub_queries": len(result.sub_queries),
            "stage2": bool(result.stage2_queries),
            "degradations": json.dumps([d.component for d in result.degradations]),
            "degradation_count": len(result.degradations),
            "citations": len(result.citations),
            "unverified_citations": result.unverified_citations,
            "input_tokens": sum(u.input_tokens for u in usage),
            "output_tokens": sum(u.output_tokens for u in usage),
            "coverage": result.coverage.status,
            "coverage_missing": json.dumps(result.coverage.missing, ensure_ascii=False),
        }
        return await self.save({"kind": "answer", "row": row})

    async def _owner_id(self, thread_id: str) -> str | None:
        """Element files are stored under the thread owner's id; a thread's first answer can arrive before the thread
        row has its user (Chainlit then files the passage under "unknown/"): the session's own user owns it."""
        rows = await self.query('SELECT "userId" FROM threads WHERE id = :id', {"id": thread_id})
        user_id = rows[0]["userId"] if rows else None
        if user_id:
            return user_id
        try:
            from chainlit.context import context

            user = context.session.user
        except Exception:  # no Chainlit context (a script, a test): nobody to attribute it to
            return None
        persisted = await self.get_user(user.identifier) if user is not None else None
        return persisted.id if persisted else None

    async def element_owned_by(self, object_key: str, user_identifier: str) -> bool:
        """True when a stored element file belongs to a thread of this user, wherever Chainlit filed it."""
        rows = await self.query(
            'SELECT e.id FROM elements e JOIN threads t ON t.id = e."threadId" '
            'WHERE e."objectKey" = :key AND t."userIdentifier" = :user',
            {"key": object_key, "user": user_identifier},
        )
        return bool(rows)

    async def recent_negative_feedback(self, limit: int = 20) -> list[dict]:
        """The latest 👎 with their comment, question, answer and thread: what the clinic's reviewers read."""
        await self.flush_steps()
        rows = await self.query(
            'SELECT f."forId", f."threadId", f.comment, f."createdAt", a.question, t."userIdentifier" '
            'FROM feedbacks f JOIN answer_records a ON a."stepId" = f."forId" AND a."threadId" = f."threadId" '
            'LEFT JOIN threads t ON t.id = f."threadId" WHERE f.value = 0 ORDER BY f."createdAt" DESC LIMIT :limit',
            {"limit": limit},
        )
        for row in rows:
            answer = await self.query(
                "SELECT output FROM steps WHERE \"parentId\" = :run AND type = 'assistant_message' "
                'ORDER BY "createdAt" DESC LIMIT 1',
                {"run": row["forId"]},
            )
            row["answer"] = answer[0]["output"] if answer else ""
        return rows

    async def execute(self, sql: str, parameters: dict | list[dict] | None = None) -> None:
        """One statement (or one per parameter set) in a transaction of its own."""
        await self.transaction(_insert, text(sql), parameters or {})

    async def query(self, sql: str, parameters: dict | None = None) -> list[dict]:
        if self.writer is not None:
            return await self.writer.read(_select, text(sql), parameters or {})
        async with self.engine.connect() as connection:
            result = await connection.execute(text(sql), parameters or {})
            return [dict(row._mapping) for row in result.fetchall()]


# --- the writes, as plain SQLAlchemy calls on a sync connection (ClinCiteDataLayer.transaction runs them) ---


def _insert(connection, statement, parameters) -> None:
    connection.execute(statement, parameters)


def _select(connection, statement, parameters) -> list[dict]:
    return [dict(row._mapping) for row in connection.execute(statement, parameters).fetchall()]


def _write_steps(connection, rows: list[dict], now: str) -> None:
    """Each step's thread row if it is missing (as Chainlit's update_thread did), then the step upserts, one
    executemany per set of columns."""
    connection.execute(
        text(
            "INSERT INTO threads (id, \"createdAt\", metadata) VALUES (:id, :createdAt, '{}') "
            "ON CONFLICT (id) DO NOTHING"
        ),
        [{"id": thread, "createdAt": now} for thread in {row["threadId"] for row in rows}],
    )
    for columns, group in rows_by_columns(rows).items():
        connection.execute(upsert_steps_sql(columns), group)


def _write_thread(connection, entry: dict, now: str) -> None:
    user_id, identifier = entry.get("userId"), entry.get("userIdentifier")
    if user_id and not identifier:
        identifier = connection.execute(text("SELECT identifier FROM users WHERE id = :id"), {"id": user_id}).scalar()
    if identifier and not user_id:
        user_id = _user_id(connection, identifier, now)
    stored = connection.execute(text("SELECT metadata FROM threads WHERE id = :id"), {"id": entry["id"]}).scalar()
    metadata = merged_metadata(stored, entry.get("metadata"))
    row = {
        "id": entry["id"],
        "createdAt": now,
        "name": entry.get("name") or (metadata.get("name") if metadata else None),
        "userId": user_id,
        "userIdentifier": identifier,
        "tags": json.dumps(entry["tags"]) if entry.get("tags") else None,
        "metadata": json.dumps(metadata),
    }
    connection.execute(UPSERT_THREAD, row)


THREAD_NAME_CHARS = 200  # a thread is named after its first question: the sidebar shows the start of it
# The owner of a thread is set once (NULL until the first write that knows it) and never changed by a later write.
UPSERT_THREAD = text(
    'INSERT INTO threads (id, "createdAt", name, "userId", "userIdentifier", tags, metadata) '
    "VALUES (:id, :createdAt, :name, :userId, :userIdentifier, :tags, :metadata) "
    "ON CONFLICT (id) DO UPDATE SET name = COALESCE(excluded.name, threads.name), "
    '"userId" = COALESCE(threads."userId", excluded."userId"), '
    '"userIdentifier" = COALESCE(threads."userIdentifier", excluded."userIdentifier"), '
    "tags = COALESCE(excluded.tags, threads.tags), metadata = excluded.metadata"
)


def merged_metadata(stored, incoming: dict | None) -> dict:
    """As Chainlit merges a thread's metadata: incoming keys replace, a key set to None is removed."""
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            stored = {}
    base = dict(stored) if isinstance(stored, dict) else {}
    for key, value in (incoming or {}).items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def _user_id(connection, identifier: str, now: str) -> str:
    """The users row of this identifier (made now if the login could not write it: the database was down)."""
    connection.execute(
        text(
            "INSERT INTO users (id, identifier, metadata, \"createdAt\") VALUES (:id, :identifier, '{}', :now) "
            "ON CONFLICT (identifier) DO NOTHING"
        ),
        {"id": str(uuid.uuid4()), "identifier": identifier, "now": now},
    )
    return connection.execute(text("SELECT id FROM users WHERE identifier = :i"), {"i": identifier}).scalar()


def _session_user_of(thread_id: str, user_id: str | None) -> str | None:
    """The clinician whose chat session is writing this thread (the current Chainlit context), if any."""
    try:
        from chainlit.context import context

        session = context.session
    except Exception:  # no Chainlit context: an HTTP route, a script
        return None
    user = getattr(session, "user", None)
    if user is None or getattr(session, "thread_id", None) != thread_id:
        return None
    if user_id and getattr(user, "id", None) not in (None, user_id):
        return None
    return user.identifier


def step_row(step_dict: dict) -> dict:
    """The columns Chainlit's step upsert writes: unset values are left out so that they overwrite nothing."""
    row = {
        key: value
        for key, value in step_dict.items()
        if value is not None and not (isinstance(value, dict) and not value)
    }
    if "showInput" in step_dict:
        row["showInput"] = str(step_dict["showInput"]).lower()
    row["metadata"] = json.dumps(step_dict.get("metadata", {}))
    row["generation"] = json.dumps(step_dict.get("generation", {}))
    return row


def rows_by_columns(rows: list[dict]) -> dict[tuple[str, ...], list[dict]]:
    """Rows grouped by the columns they set: one executemany per group."""
    groups: dict[tuple[str, ...], list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(sorted(row)), []).append(row)
    return groups


def upsert_steps_sql(columns: tuple[str, ...]):
    updates = ", ".join(
        "output = COALESCE(NULLIF(:output, ''), steps.output)" if key == "output" else f'"{key}" = :{key}'
        for key in columns
        if key != "id"
    )
    names = ", ".join(f'"{key}"' for key in columns)
    values = ", ".join(f":{key}" for key in columns)
    # A step id that exists in another thread is never upserted there: the row stays where it is, with its text
    # (an id sent by a client, or read off a page, cannot move someone's message into the sender's thread).
    return text(
        f"INSERT INTO steps ({names}) VALUES ({values}) ON CONFLICT (id) DO UPDATE SET {updates} "
        'WHERE steps."threadId" = excluded."threadId"'
    )


class StepBatch:
    """Step writes waiting for one commit; later writes of a step are merged into its row."""

    def __init__(self):
        self.rows: dict[str, dict] = {}
        self.committed: asyncio.Future = asyncio.get_running_loop().create_future()

    def add(self, row: dict) -> None:
        stored = self.rows.setdefault(str(row["id"]), {})
        for key, value in row.items():
            if key == "output" and value == "" and stored.get("output"):
                continue  # the empty output of a late send() must not hide the final one
            stored[key] = value
