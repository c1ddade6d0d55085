"""Where accounts are kept: one row per account in SQL — SQLite by default, PostgreSQL for several workers.

    AccountRecords(data_dir / "accounts.sqlite3", import_json=data_dir / "users.json")
    AccountRecords("postgresql+asyncpg://…")            # schema `accounts` of the shared database
    records.load()                 # {name: record}: what UserStore's rules read (cached until the next change)
    records.update(change)         # change(records) edits the dict in one transaction; writers queue, none is lost

UserStore (store.py) keeps every rule about accounts (roles, generations, tombstones); this module only stores its
records, each as JSON, so those rules stay in one place whatever the engine. Every write bumps a version row: a
reader (every authenticated request asks for an account's generation) checks that one row and re-reads the accounts
only when it moved, so a logout or a removal on one worker is in force on every other worker at its next request.

Numbered migrations as everywhere (`_migrations` of this file or schema); m002 imports an existing users.json once
(the store of earlier releases), which is then left in place, unused.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import Connection, create_engine, event, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from clincite.core.database import postgres_engine
from clincite.core.migrations import Migrations, apply_sync

log = logging.getLogger("clincite.users")

SCHEMA = "accounts"  # the PostgreSQL schema of the shared database
# Within one sweep of every live socket (`one_read`), a version read this recently is reused: when a logout elsewhere
# makes a worker check all its sockets at once, that is one query, not one per socket. Outside a sweep every check
# reads the version: a logout on another worker refuses the very next request here.
STAMP_REUSE_SECONDS = 0.05
STALE_WARNING_SECONDS = 60.0
# While the database does not answer, the accounts as last read are served this long before it is asked again: every
# request reads the accounts on the event loop, and each try may wait SOCKET_TIMEOUT on a silent server.
DOWN_RETRY_SECONDS = 2.0
account_migrations = Migrations("accounts")


@account_migrations
def m001_accounts(db: Connection) -> None:
    """One row per account (its record as JSON), and the version every change bumps."""
    db.execute(text("CREATE TABLE IF NOT EXISTS accounts (name TEXT PRIMARY KEY, record TEXT NOT NULL)"))
    db.execute(text("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"))


@account_migrations
def m002_import_users_json(db: Connection) -> None:
    """The accounts of an existing users.json (earlier releases), with their hashes, roles and generations."""
    path: Path | None = db.info.get("import_json")
    if path is None or not path.exists():
        return
    records = json.loads(path.read_text(encoding="utf-8"))
    for name, record in records.items():
        db.execute(
            text("INSERT INTO accounts (name, record) VALUES (:name, :record) ON CONFLICT (name) DO NOTHING"),
            {"name": name, "record": json.dumps(record, ensure_ascii=False)},
        )
    _bump(db)
    log.warning("Imported %d accounts from %s into the accounts database", len(records), path)


def _bump(db: Connection) -> None:
    db.execute(
        text(
            "INSERT INTO meta(key, value) VALUES('version', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"
        )
    )


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA journal_mode=WAL")
    dbapi_connection.execute("PRAGMA busy_timeout=30000")


class AccountRecords:
    """The accounts table. Thread-safe; every write is one transaction that holds the table for writing."""

    def __init__(
        self, location: Path | str, import_json: Path | None = None, on_change: Callable[[], None] | None = None
    ):
        location = str(location)
        self.location = location
        self.shared = location.startswith("postgresql")
        self._lock = threading.Lock()
        self._import_json = Path(import_json) if import_json else None
        self._on_change = on_change
        self._cache: tuple[str | None, dict[str, dict]] = (None, {})
        self._stamp: tuple[float, str | None] = (-1.0, None)  # (monotonic time read, version)
        self._sweeping = threading.local()  # inside one_read() on this thread
        self._last_read: dict[str, dict] | None = None  # what load() returns while the database is down
        self._last_warning = -STALE_WARNING_SECONDS
        self._failed_at = -DOWN_RETRY_SECONDS  # when a read last found the database down
        if self.shared:
            self.engine = postgres_engine("postgresql+pg8000://" + location.split("://", 1)[1], "clincite-accounts")
            event.listen(self.engine, "connect", _search_path)
            with self.engine.begin() as db:
                db.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{SCHEMA}"'))
        else:
            _create_private(Path(location))
            self.engine = create_engine(
                f"sqlite:///{location}",
                poolclass=StaticPool,
                connect_args={"check_same_thread": False, "isolation_level": None},
            )
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self.schema_version = apply_sync(self._transaction, account_migrations)

    @contextlib.contextmanager
    def _transaction(self, exclusive: bool = False) -> Iterator[Connection]:
        """A write transaction; `exclusive`: other writers wait until it ends (SQLite's BEGIN IMMEDIATE always)."""
        if self.shared:
            with self.engine.begin() as db:
                db.info["import_json"] = self._import_json
                if exclusive:
                    db.execute(text("LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE"))
                yield db
            return
        with self._lock, self.engine.connect() as db:
            db.info["import_json"] = self._import_json
            db.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield db
                db.exec_driver_sql("COMMIT")
            except BaseException:
                db.exec_driver_sql("ROLLBACK")
                raise

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        if self.shared:
            with self.engine.connect() as db:
                yield db
                db.commit()
        else:
            with self._lock, self.engine.connect() as db:
                yield db

    def stamp(self) -> str | None:
        """Moves with every change, by any process on any machine: one row, cheap to poll."""
        read_at, stamp = self._stamp
        if getattr(self._sweeping, "on", False) and time.monotonic() - read_at < STAMP_REUSE_SECONDS:
            return stamp
        with self._read() as db:
            stamp = _version(db)
        self._stamp = (time.monotonic(), stamp)
        return stamp

    @contextlib.contextmanager
    def one_read(self) -> Iterator[None]:
        """Checks of many sessions at once (a sweep of the live sockets) share one read of the version row."""
        self._sweeping.on = True
        try:
            yield
        finally:
            self._sweeping.on = False

    def load(self) -> dict[str, dict]:
        """Every account's record. While the database does not answer (a PostgreSQL outage), the accounts as last read
        (logged once a minute): logged-in clinicians go on, and logins keep working, instead of every request failing;
        a logout that cannot be written is held in memory meanwhile (web/auth.py)."""
        if self._last_read is not None and time.monotonic() - self._failed_at < DOWN_RETRY_SECONDS:
            return self._last_read
        try:
            stamp = self.stamp()
            if self._cache[0] != stamp or stamp is None:
                with self._read() as db:
                    rows = db.execute(text("SELECT name, record FROM accounts")).fetchall()
                    stamp = _version(db)
                self._cache = (stamp, {name: json.loads(record) for name, record in rows})
        except (OSError, SQLAlchemyError) as exc:
            if self._last_read is None:
                raise
            self._failed_at = time.monotonic()
            if time.monotonic() - self._last_warning > STALE_WARNING_SECONDS:
                self._last_warning = time.monotonic()
                log.error("The accounts database does not answer (%s): using the accounts as last read", exc)
            return self._last_read
        self._last_read = self._cache[1]
        return self._cache[1]

    def update(self, change: Callable[[dict[str, dict]], object]) -> object:
        """Apply `change` to a copy of every record, in one transaction; only what it changed is written."""
        with self._transaction(exclusive=True) as db:
            rows = db.execute(text("SELECT name, record FROM accounts")).fetchall()
            before = {name: json.loads(record) for name, record in rows}
            after = {name: dict(record) for name, record in before.items()}
            result = change(after)
            for name in before.keys() - after.keys():
                db.execute(text("DELETE FROM accounts WHERE name = :name"), {"name": name})
            for name, record in after.items():
                if before.get(name) != record:
                    db.execute(
                        text(
                            "INSERT INTO accounts (name, record) VALUES (:name, :record) "
                            "ON CONFLICT (name) DO UPDATE SET record = excluded.record"
                        ),
                        {"name": name, "record": json.dumps(record, ensure_ascii=False)},
                    )
            _bump(db)
        self._cache, self._stamp = (None, {}), (-1.0, None)
        self._failed_at = -DOWN_RETRY_SECONDS  # it took a write: it answers again
        if self._on_change is not None:
            self._on_change()  # the other workers look at once (Redis), not at their next request
        return result


def _create_private(path: Path) -> None:
    """The database file exists 0600 before SQLite opens it (its WAL files take the same mode): password hashes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def _version(db: Connection) -> str | None:
    row = db.execute(text("SELECT value FROM meta WHERE key = 'version'")).fetchone()
    return row[0] if row else None


def _search_path(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f'SET search_path TO "{SCHEMA}"')
    cursor.close()
    dbapi_connection.commit()
