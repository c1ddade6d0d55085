"""Clinician accounts for the web app: salted bcrypt hashes in SQL (records.py: DATA_DIR/accounts.sqlite3, or the
shared PostgreSQL database of several workers; an earlier release's USERS_FILE, users.json, is imported once).

    python -m clincite.users.store add 张医生         # asks for the password twice (or reads two lines from stdin)
    python -m clincite.users.store list
    python -m clincite.users.store remove 张医生

There is no `--password` option on purpose: a password on the command line lands in the shell history and in `ps`.
Scripts pipe it in: `printf '%s\n%s\n' "$PW" "$PW" | python -m clincite.users.store add NAME`.

Each account has a session `generation`. Login cookies carry the generation they were issued under, and the app
accepts a cookie only while it still matches (clincite/web/auth.py): logging out, resetting the password or removing
the account bumps or drops it, which ends every cookie and socket of that clinician at once.

The app also needs CHAINLIT_AUTH_SECRET to sign login cookies; `ensure_auth_secret` creates a random one in the data
directory on first start when none is configured, so a restart does not log everyone out.
"""

from __future__ import annotations

import argparse
import functools
import getpass
import os
import secrets
import sys
from pathlib import Path

import bcrypt

from clincite.core import bus
from clincite.core.settings import Settings, get_settings
from clincite.users.records import AccountRecords

DEV_USER = ("demo", "demo")  # only with CLINCITE_DEV_LOGIN=true and no users configured
MIN_PASSWORD_CHARS = 8
ACCOUNTS_FILE = "accounts.sqlite3"  # in DATA_DIR, unless the app database is PostgreSQL
PRIVATE = 0o600


@functools.cache
def _dummy_hash() -> bytes:
    """Checked against when the account does not exist, so that an unknown name costs the same bcrypt time as a
    wrong password (otherwise 3 ms vs 265 ms tells an attacker which names exist). Same cost factor as real hashes."""
    return bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt())


def write_private(path: Path, data: str | bytes) -> None:
    """Write a file that only the owner may read, atomically, with mode 0600 from the moment it exists.

    (write-then-chmod leaves a window in which the file is world-readable; os.open with a mode does not.)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        tmp.replace(path)  # atomic: a crash never leaves a half-written file
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def create_private(path: Path) -> None:
    """Create an empty 0600 file unless it exists (e.g. the SQLite database before SQLAlchemy opens it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE))
    except FileExistsError:
        pass


class UserStore:
    """The accounts: their rules here, their rows in SQL (records.py). Every change is one transaction, so no update
    is lost between writers (the CLI, the app on logout, another worker)."""

    def __init__(self, location: Path | str, import_json: Path | None = None, on_change=None):
        self.path = location  # a SQLite file, or the shared database's URL
        self.records = AccountRecords(location, import_json, on_change)

    @classmethod
    def for_settings(cls, settings: Settings) -> UserStore:
        """The installation's accounts: schema `accounts` of the shared PostgreSQL database, else
        DATA_DIR/accounts.sqlite3; an existing USERS_FILE (users.json) is imported once."""
        url = settings.database_url
        location = url if url and url.startswith("postgresql") else settings.data_dir / ACCOUNTS_FILE
        return cls(location, settings.users_file, on_change=lambda: bus.publish(settings, bus.ACCOUNTS, {}))

    def _stamp(self) -> str | None:
        return self.records.stamp()

    def _load(self) -> dict[str, dict]:
        # Read on every authenticated request (session checks): one version row, the accounts only when it moved.
        return self.records.load()

    def _update(self, change) -> object:
        return self.records.update(change)

    def names(self) -> list[str]:
        return sorted(self._load())

    def get(self, name: str) -> dict | None:
        return self._load().get(name)

    def generation(self, name: str) -> int | None:
        """The account's session generation, or None when there is no such account."""
        record = self.get(name)
        return int(record.get("generation", 0)) if record is not None else None

    def add(self, name: str, password: str, display_name: str | None = None) -> None:
        if not name.strip():
            raise ValueError("用户名不能为空")
        if len(password) < MIN_PASSWORD_CHARS:
            raise ValueError(f"密码至少需要 {MIN_PASSWORD_CHARS} 个字符")
        password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()

        def change(users: dict[str, dict]) -> None:
            old = users.get(name) or {}
            # A password reset also ends the sessions opened with the old password.
            users[name] = {
                "password_hash": password_hash,
                "display_name": display_name or old.get("display_name") or name,
                "generation": int(old.get("generation", 0)) + (1 if old else 0),
            }

        self._update(change)

    def remove(self, name: str) -> bool:
        return bool(self._update(lambda users: users.pop(name, None) is not None))

    def bump_generation(self, name: str) -> int | None:
        """End every session of this account (logout); returns the new generation, None for no such account."""

        def change(users: dict[str, dict]) -> int | None:
            if name not in users:
                return None
            users[name]["generation"] = int(users[name].get("generation", 0)) + 1
            return users[name]["generation"]

        if self.get(name) is None:
            return None
        return self._update(change)

    def verify(self, name: str, password: str) -> dict | None:
        """The user's record if the password matches, else None; the same bcrypt work whether or not it exists."""
        record = self.get(name)
        stored = record["password_hash"].encode() if record else _dummy_hash()
        matches = bcrypt.checkpw(password.encode(), stored)
        return record if record and matches else None


def check_login(settings: Settings, store: UserStore, name: str, password: str) -> str | None:
    """The display name of a valid login, else None. The demo account exists only when explicitly enabled."""
    record = store.verify(name, password)
    if record:
        return record.get("display_name") or name
    if dev_login_allowed(settings, store) and (name, password) == DEV_USER:
        return "演示用户"
    return None


def dev_login_allowed(settings: Settings, store: UserStore) -> bool:
    return settings.dev_login and not store.names()


def ensure_auth_secret(settings: Settings) -> None:
    """Chainlit refuses to start with login enabled and no secret: create and keep one per installation."""
    if os.environ.get("CHAINLIT_AUTH_SECRET"):
        return
    secret_file = settings.data_dir / "auth_secret"
    if not secret_file.exists():
        write_private(secret_file, secrets.token_urlsafe(48))
    os.environ["CHAINLIT_AUTH_SECRET"] = secret_file.read_text(encoding="utf-8").strip()


def read_new_password() -> str | None:
    """The password, typed twice: from the terminal without echo, or two lines of standard input (scripts)."""
    if sys.stdin.isatty():
        first, second = getpass.getpass("密码："), getpass.getpass("再次输入密码：")
    else:
        lines = sys.stdin.read().splitlines()
        first, second = [*lines, "", ""][:2]
    if first != second:
        print("两次输入的密码不一致", file=sys.stderr)
        return None
    return first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m clincite.users", description="管理 ClinCite 登录账号 (manage clinician accounts)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add a user or reset a password (password read from a prompt or stdin)")
    add.add_argument("name")
    add.add_argument("--display-name")
    sub.add_parser("list")
    remove = sub.add_parser("remove", help="remove a user; their open sessions end at once")
    remove.add_argument("name")
    args = parser.parse_args(argv)

    store = UserStore.for_settings(get_settings())
    if args.command == "list":
        print("\n".join(store.names()) or "（还没有用户）")
        return 0
    if args.command == "remove":
        print("已删除" if store.remove(args.name) else "没有这个用户")
        return 0
    password = read_new_password()
    if password is None:
        return 1
    try:
        store.add(args.name, password, args.display_name)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"已保存用户 {args.name}（{store.path}）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
