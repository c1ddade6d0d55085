"""Persistence of the web app: Chainlit's threads, steps, elements and feedback, plus one record per answer.

SQLite (aiosqlite) in the data directory by default, PostgreSQL when CLINCITE_DATABASE_URL says so; the schema is
created on first start. Three fixes over Chainlit's stock `SQLAlchemyDataLayer` (see shared/notes/chainlit-2.12.md §3):
step writes are serialised (otherwise an empty-output `send()` can land after the final `update()`), feedback writes
raise instead of failing silently (and are kept in a JSON-lines file if the database refuses them), and elements
(the source passages behind 【n】) are stored on disk so they survive in resumed threads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chainlit.data.sql_alchemy import SQLAlchemyDataLayer
from chainlit.data.storage_clients.base import BaseStorageClient
from chainlit.types import Feedback
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from clincite.migrations import Migrations, apply_async
from clincite.settings import Settings
from clincite.shapes import QueryResult

log = logging.getLogger("clincite.datalayer")

FILES_ROUTE = "/clincite/files"

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


async def ensure_schema(url: str) -> int:
    """Apply pending migrations at start; returns the schema version."""
    if url.startswith("sqlite"):
        Path(url.split("///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url)
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

    async def upload_file(self, object_key: str, data: bytes | str, mime: str = "application/octet-stream",
                          overwrite: bool = True, content_disposition: str | None = None) -> dict[str, Any]:
        path = self.path(object_key)
        if path.exists() and not overwrite:
            return {"object_key": object_key, "url": await self.get_read_url(object_key)}
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        await asyncio.to_thread(path.write_bytes, payload)
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


class ClinCiteDataLayer(SQLAlchemyDataLayer):
    def __init__(self, settings: Settings):
        self.fallback_file = settings.data_dir / "feedback_not_saved.jsonl"
        self._step_lock = asyncio.Lock()
        super().__init__(conninfo=settings.db_url, storage_provider=LocalStorageClient(settings.data_dir / "files"))

    async def create_step(self, step_dict):
        # Serialised: `send()` (empty output) and `update()` (final output) are separate tasks; the last one to
        # land would win. update_step() goes through here too.
        async with self._step_lock:
            await super().create_step(step_dict)

    async def upsert_feedback(self, feedback: Feedback) -> str:
        """Write the feedback or keep it in a file: a clinician's rating is never silently dropped."""
        feedback.id = feedback.id or str(uuid.uuid4())
        row = {k: v for k, v in asdict(feedback).items() if v is not None}
        try:
            async with self.engine.begin() as connection:
                await connection.execute(insert_sql("feedbacks", row, upsert=True), row)
        except Exception:
            log.exception("Feedback %s could not be written to the database; kept in %s", feedback.id,
                          self.fallback_file)
            self.fallback_file.parent.mkdir(parents=True, exist_ok=True)
            with self.fallback_file.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return feedback.id

    async def record_answer(self, result: QueryResult, step_id: str, thread_id: str | None,
                            user: str | None) -> None:
        """One row per answer: what the satisfaction metrics are computed from."""
        usage = result.usage.values()
        row = {
            "id": str(uuid.uuid4()), "stepId": step_id, "threadId": thread_id, "userIdentifier": user,
            "createdAt": await self.get_current_timestamp(), "question": result.question, "mode": result.mode,
            "search_mode": result.search_mode, "cached": result.cached, "ttft": result.timings.get("ttft"),
            "total": result.timings.get("total"), "timings": json.dumps(result.timings),
            "sub_queries": len(result.sub_queries), "stage2": bool(result.stage2_queries),
            "degradations": json.dumps([d.component for d in result.degradations]),
            "degradation_count": len(result.degradations), "citations": len(result.citations),
            "unverified_citations": result.unverified_citations,
            "input_tokens": sum(u.input_tokens for u in usage), "output_tokens": sum(u.output_tokens for u in usage),
        }
        async with self.engine.begin() as connection:
            await connection.execute(insert_sql("answer_records", row), row)

    async def query(self, sql: str, parameters: dict | None = None) -> list[dict]:
        async with self.engine.connect() as connection:
            result = await connection.execute(text(sql), parameters or {})
            return [dict(row._mapping) for row in result.fetchall()]
