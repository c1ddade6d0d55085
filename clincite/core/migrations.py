"""Numbered schema migrations, applied in order at start, each exactly once (the pattern of simonw's `llm`).

    catalogue_migrations = Migrations("catalogue")

    @catalogue_migrations
    def m001_initial(db): db.executescript("CREATE TABLE …")

    apply_sync(catalogue.transaction, catalogue_migrations)   # the KB catalogue (SQLAlchemy sync: SQLite/PostgreSQL)
    await apply_async(connection, app_migrations)             # the app database (SQLAlchemy async: SQLite/PostgreSQL)

Applied names are recorded in `_migrations`; the schema version is the number applied. A database created before
migrations existed has its tables but no `_migrations`: the first migration uses CREATE … IF NOT EXISTS, so it
adopts such a database in place, and the later ones upgrade it. We chose this over Alembic: two small schemas, no
autogenerate needed, and the same file works for the sync catalogue and the async app database, on SQLite and on
PostgreSQL. Each store keeps its own `_migrations`: a SQLite file of its own, or a PostgreSQL schema of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import Connection, text

TABLE = "_migrations"
CREATE_TABLE = f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"


class Migrations:
    """An ordered list of migration functions; the function name (m001_…) is its identity."""

    def __init__(self, name: str):
        self.name = name
        self.steps: list[Callable[[Any], Any]] = []

    def __call__(self, function: Callable[[Any], Any]) -> Callable[[Any], Any]:
        self.steps.append(function)
        return function

    @property
    def latest(self) -> int:
        return len(self.steps)


def apply_sync(transaction: Callable[[], AbstractContextManager[Connection]], migrations: Migrations) -> int:
    """Apply what is pending, each migration in a transaction of its own (`transaction()` opens one on a
    SQLAlchemy Connection: SQLite or PostgreSQL); returns the schema version."""
    with transaction() as db:
        db.execute(text(CREATE_TABLE))
        applied = {row[0] for row in db.execute(text(f"SELECT name FROM {TABLE}"))}
    for step in migrations.steps:
        if step.__name__ in applied:
            continue
        with transaction() as db:
            step(db)
            db.execute(
                text(f"INSERT INTO {TABLE} (name, applied_at) VALUES (:name, :at)"),
                {"name": step.__name__, "at": time.time()},
            )
    return len(applied | {s.__name__ for s in migrations.steps})


async def apply_async(connection, migrations: Migrations) -> int:
    """Apply what is pending on a SQLAlchemy AsyncConnection inside the caller's transaction."""
    await connection.execute(text(CREATE_TABLE))
    applied = {row[0] for row in (await connection.execute(text(f"SELECT name FROM {TABLE}"))).fetchall()}
    for step in migrations.steps:
        if step.__name__ in applied:
            continue
        await step(connection)
        await connection.execute(
            text(f"INSERT INTO {TABLE} (name, applied_at) VALUES (:name, :at)"),
            {"name": step.__name__, "at": time.time()},
        )
    return len(applied | {s.__name__ for s in migrations.steps})
