"""Persistence of the web app: Chainlit's threads, steps, elements and feedback, plus one record per answer.

SQLite (aiosqlite) in the data directory by default, PostgreSQL when CLINCITE_DATABASE_URL says so; the schema is
created on first start. Four changes to Chainlit 2.12's stock `SQLAlchemyDataLayer`:
- step writes are group-committed: the writes of every chat within STEP_BATCH_SECONDS become one transaction, and
  several writes of one step within it become one row write (Chainlit writes a step on every send and update, each in
  a transaction of its own, after a query for its thread: about 0.09 s of event-loop time per question, which twenty
  clinicians at once felt as a slower first token); a stored output is never overwritten with an empty one
  (otherwise an empty-output `send()` can land after the final `update()`);
- feedback writes raise instead of failing silently (and are kept in a JSON-lines file if the database refuses them,
  replayed into the database at the next start);
- elements (the source passages behind 【n】) are stored on disk so they survive in resumed threads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chainlit.data.sql_alchemy import SQLAlchemyDataLayer
from chainlit.data.storage_clients.base import BaseStorageClient
from chainlit.data.utils import queue_until_user_message
from chainlit.types import Feedback
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import create_async_engine

from clincite.core.migrations import Migrations, apply_async
from clincite.core.settings import Settings
from clincite.core.shapes import QueryResult
from clincite.users.store import create_private, write_private

log = logging.getLogger("clincite.datalayer")

FILES_ROUTE = "/clincite/files"
STEP_BATCH_SECONDS = 0.2  # how long a step write may wait to share its transaction with the other chats' writes
# SQLite with a hundred chats in one process (bench/bench_sqlite_writes.py measures each of these): WAL lets readers
# and the one writer proceed side by side and makes a commit one append; a writer that finds the database busy waits
# up to SQLITE_BUSY_TIMEOUT seconds for its turn instead of failing with "database is locked" after sqlite3's 5 s.
SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")

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
    engine = create_async_engine(url)
    if url.startswith("sqlite"):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    try:
        async with engine.begin() as connection:
            return await apply_async(connection, app_migrations)
    finally:
        await engine.dispose()


def insert_sql(table: str, row: dict, upsert: bool = False):
    """INSERT of one row with bound parameters (valid in SQLite and PostgreSQL); upsert replaces by id."""
    columns = ", ".join(f'"{k}"' for k in row)
    values = ", ".join(f":{k}" for k in row)
    sql = f"INSERT INTO {table} ({columns}) VALUES ({values})"
    if upsert:
        sql += " ON CONFLICT (id) DO UPDATE SET " + ", ".join(f'"{k}" = :{k}' for k in row if k != "id")
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


class ClinCiteDataLayer(SQLAlchemyDataLayer):
    def __init__(self, settings: Settings):
        self.fallback_file = settings.data_dir / "feedback_not_saved.jsonl"
        self._step_batch: StepBatch | None = None  # the writes waiting for the next commit
        self._step_commit: asyncio.Task | None = None  # the commit in progress (commits run one after another)
        sqlite = settings.db_url.startswith("sqlite")
        # One machine: element files on its disk; a shared PostgreSQL database: in it, for every worker.
        storage = LocalStorageClient(settings.data_dir / "files") if sqlite else DatabaseStorageClient()
        super().__init__(
            conninfo=settings.db_url,
            connect_args={"timeout": settings.sqlite_busy_timeout} if sqlite else None,
            storage_provider=storage,
        )
        if sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        else:
            storage.engine = self.engine

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
        """In one transaction; when a bad row fails it, row by row, so that it costs no other chat its steps."""
        try:
            await self._write_steps(rows)
            return
        except Exception as exc:  # as Chainlit's execute_sql: a step that cannot be stored does not stop the chat
            what = f"Step {rows[0].get('id')}" if len(rows) == 1 else f"A batch of {len(rows)} step writes"
            log.warning("%s could not be stored: %s: %s", what, type(exc).__name__, exc)
        if len(rows) > 1:
            for row in rows:
                await self._store_steps([row])

    async def _write_steps(self, rows: list[dict]) -> None:
        """One transaction: each step's thread row if it is missing (as Chainlit's update_thread did), then the
        step upserts, one executemany per set of columns."""
        now = await self.get_current_timestamp()
        async with self.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO threads (id, \"createdAt\", metadata) VALUES (:id, :createdAt, '{}') "
                    "ON CONFLICT (id) DO NOTHING"
                ),
                [{"id": thread, "createdAt": now} for thread in {row["threadId"] for row in rows}],
            )
            for columns, group in rows_by_columns(rows).items():
                await connection.execute(upsert_steps_sql(columns), group)

    async def get_thread(self, thread_id: str):
        await self.flush_steps()  # a resumed thread shows every step written so far
        return await super().get_thread(thread_id)

    async def replay_unsaved_feedback(self) -> tuple[int, int]:
        """Write the ratings kept in the fallback file into the database; returns (written, still kept).

        The file is first renamed, so ratings that fail meanwhile append to a fresh file and none is lost; a row
        that fails again goes back to the fallback file. A crash mid-replay leaves the renamed file, which the next
        start replays too (rows are upserted by id: replaying one twice writes it once).
        """
        replaying = self.fallback_file.with_name(self.fallback_file.stem + ".replaying.jsonl")
        if self.fallback_file.exists():
            if replaying.exists():  # left by a crash: keep its rows, add the new ones
                with self.fallback_file.open("rb") as new_rows, replaying.open("ab") as old_rows:
                    old_rows.write(new_rows.read())
                self.fallback_file.unlink()
            else:
                os.replace(self.fallback_file, replaying)
        if not replaying.exists():
            return 0, 0
        written = kept = 0
        for line in replaying.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                async with self.engine.begin() as connection:
                    await connection.execute(insert_sql("feedbacks", row, upsert=True), row)
                written += 1
            except Exception as exc:
                kept += 1
                log.warning(
                    "Saved feedback still not written (%s: %s); kept in %s", type(exc).__name__, exc, self.fallback_file
                )
                fd = os.open(self.fallback_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as f:
                    f.write(line.rstrip("\n") + "\n")
        replaying.unlink()
        if written or kept:
            log.warning(
                "Replayed %d saved feedback rows into the database (%d still kept in %s)",
                written,
                kept,
                self.fallback_file,
            )
        return written, kept

    async def upsert_feedback(self, feedback: Feedback) -> str:
        """Write the feedback or keep it in a file: a clinician's rating is never silently dropped."""
        feedback.id = feedback.id or str(uuid.uuid4())
        row = {k: v for k, v in asdict(feedback).items() if v is not None}
        try:
            async with self.engine.begin() as connection:
                await connection.execute(insert_sql("feedbacks", row, upsert=True), row)
        except Exception:
            log.exception(
                "Feedback %s could not be written to the database; kept in %s", feedback.id, self.fallback_file
            )
            self.fallback_file.parent.mkdir(parents=True, exist_ok=True)
            # Clinicians' comments: readable by the app's account only, from the moment the file exists.
            fd = os.open(self.fallback_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
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

        One rating per answer: a new rating of an already rated answer replaces it, and a feedback id the client sends
        is honoured only when it is that rating's own id (so nobody can repoint or overwrite another rating).
        """
        thread_id = await self.owned_answer_thread(user_identifier, feedback.forId)
        if thread_id is None or (feedback.threadId and feedback.threadId != thread_id):
            return None
        if feedback.id:
            rows = await self.query('SELECT "forId" FROM feedbacks WHERE id = :id', {"id": feedback.id})
            if rows and rows[0]["forId"] != feedback.forId:
                return None
            if not rows:
                feedback.id = None  # an id the client made up names nothing: the server picks the row
        if not feedback.id:
            rows = await self.query(
                'SELECT id FROM feedbacks WHERE "forId" = :for_id ORDER BY "createdAt" DESC', {"for_id": feedback.forId}
            )
            feedback.id = rows[0]["id"] if rows else None
        feedback.threadId = thread_id
        return await self.upsert_feedback(feedback)

    async def delete_user_feedback(self, user_identifier: str, feedback_id: str) -> bool:
        """Delete a rating in one of this user's threads; False (nothing deleted) for anyone else's or none."""
        rows = await self.query(
            'SELECT f.id FROM feedbacks f JOIN threads t ON t.id = f."threadId" '
            'WHERE f.id = :id AND t."userIdentifier" = :user',
            {"id": feedback_id, "user": user_identifier},
        )
        return bool(rows) and await self.delete_feedback(feedback_id)

    async def record_answer(self, result: QueryResult, step_id: str, thread_id: str | None, user: str | None) -> None:
        """One row per answer: what the satisfaction metrics are computed from."""
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
        async with self.engine.begin() as connection:
            await connection.execute(insert_sql("answer_records", row), row)

    async def _get_user_id_by_thread(self, thread_id: str) -> str | None:
        """Element files are stored under the thread owner's id; a thread's first answer can arrive before the thread
        row has its user (Chainlit then files the passage under "unknown/"): the session's own user owns it."""
        user_id = await super()._get_user_id_by_thread(thread_id)
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
        async with self.engine.begin() as connection:
            await connection.execute(text(sql), parameters or {})

    async def query(self, sql: str, parameters: dict | None = None) -> list[dict]:
        async with self.engine.connect() as connection:
            result = await connection.execute(text(sql), parameters or {})
            return [dict(row._mapping) for row in result.fetchall()]


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
    return text(f"INSERT INTO steps ({names}) VALUES ({values}) ON CONFLICT (id) DO UPDATE SET {updates}")


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
