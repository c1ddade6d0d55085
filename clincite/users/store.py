"""Accounts for the web app: salted bcrypt hashes and roles in SQL (records.py: DATA_DIR/accounts.sqlite3, or the
shared PostgreSQL database of several workers; an earlier release's USERS_FILE, users.json, is imported once).

    python -m clincite.users add 张医生               # asks for the password twice (or reads two lines from stdin)
    python -m clincite.users add 李主任 --admin       # an administrator (library, users, review desk, /metrics)
    python -m clincite.users role 张医生 admin        # change a role (admin | clinician)
    python -m clincite.users list
    python -m clincite.users remove 张医生

There is no `--password` option on purpose: a password on the command line lands in the shell history and in `ps`.
Scripts pipe it in: `printf '%s\n%s\n' "$PW" "$PW" | python -m clincite.users add NAME`.

Roles: `clinician` asks questions and sees their own threads; `admin` also runs the library, the accounts and the
review desk (clincite/web/admin/). The first account created on a fresh install is an admin, so a new clinic is never
left without one; an account stored before roles existed is a clinician (`role NAME admin` promotes it).

Each account has a session `generation`. Login cookies carry the generation they were issued under, and the app
accepts a cookie only while it still matches (clincite/web/auth.py): logging out, resetting the password, changing
the role or removing the account bumps or drops it, which ends every cookie and socket of that person at once (a
cookie carries the role it was issued with, so a role change must not leave an old cookie behind). Generations never
repeat for a name: a new one is above the last (and never below the clock in milliseconds), and a removed account
leaves a tombstone with its last generation, so an account created again under the same name starts above every
generation it ever had — the cookies of the removed account stay dead.

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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import bcrypt

from clincite.core import bus
from clincite.core.settings import Settings, get_settings
from clincite.users.records import AccountRecords

DEV_USER = ("demo", "demo")  # only with CLINCITE_DEV_LOGIN=true and no users configured
DEV_DISPLAY_NAME = "演示用户"
Role = Literal["clinician", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)
CLINICIAN: Role = "clinician"
ADMIN: Role = "admin"
ROLE_LABELS: dict[str, str] = {CLINICIAN: "临床医生", ADMIN: "管理员"}
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


def next_generation(previous: int | None) -> int:
    """A session generation above `previous` and not below the clock (ms): unique for a name even if the store that
    remembered the previous one is lost."""
    return max((previous or 0) + 1, time.time_ns() // 1_000_000)


@dataclass(frozen=True)
class Account:
    """What the app knows about an account, without its password hash."""

    name: str
    display_name: str
    role: Role
    generation: int

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN


def _account(name: str, record: dict) -> Account:
    role = record.get("role")
    return Account(
        name=name,
        display_name=record.get("display_name") or name,
        role=role if role in ROLES else CLINICIAN,  # stored before roles existed
        generation=int(record.get("generation", 0)),
    )


class UserStore:
    """The accounts: their rules here, their rows in SQL (records.py). Every change is one transaction, so no update
    is lost between writers (the CLI, the app on logout, another worker).

    The interface (names, accounts, account, generation, add, set_role, remove, bump_generation, verify) is what the
    app and the command line use; nothing outside this class reads the records.
    """

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

    def version(self) -> str | None:
        """Moves with every change to the accounts, by any process: cheap to poll (None while it cannot be read)."""
        try:
            return self._stamp()
        except Exception:
            return None

    def _load(self) -> dict[str, dict]:
        # Read on every authenticated request (session checks): one version row, the accounts only when it moved.
        # A removed account's tombstone (its last generation) is no account.
        return {name: record for name, record in self.records.load().items() if not record.get("removed")}

    def _update(self, change) -> object:
        return self.records.update(change)

    def names(self) -> list[str]:
        return sorted(self._load())

    def get(self, name: str) -> dict | None:
        return self._load().get(name)

    def account(self, name: str) -> Account | None:
        record = self.get(name)
        return _account(name, record) if record is not None else None

    def accounts(self) -> list[Account]:
        """Every account, by name."""
        return [_account(name, record) for name, record in sorted(self._load().items())]

    def generation(self, name: str) -> int | None:
        """The account's session generation, or None when there is no such account."""
        record = self.get(name)
        return int(record.get("generation", 0)) if record is not None else None

    def add(self, name: str, password: str, display_name: str | None = None, role: Role | None = None) -> Account:
        """Add an account, or reset an existing one's password (which ends its sessions).

        `role` None keeps an existing account's role; a new account is then a clinician, except the first account of
        the store, which is always an admin (a fresh install must have someone who can run it).
        """
        if not name.strip():
            raise ValueError("用户名不能为空")
        if name != name.strip() or any(not ch.isprintable() for ch in name):
            raise ValueError("用户名不能以空格开头或结尾，也不能含控制字符")
        if len(password) < MIN_PASSWORD_CHARS:
            raise ValueError(f"密码至少需要 {MIN_PASSWORD_CHARS} 个字符")
        if role is not None and role not in ROLES:
            raise ValueError(f"未知的角色 {role!r}（可选：{'、'.join(ROLES)}）")
        password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()

        def change(users: dict[str, dict]) -> Account:
            tombstone = users.get(name) or {}
            old = {} if tombstone.get("removed") else tombstone
            if not any(not record.get("removed") for record in users.values()):
                new_role = ADMIN
            elif role is not None:
                new_role = role
            else:
                new_role = _account(name, old).role if old else CLINICIAN
            # A password reset also ends the sessions opened with the old password; a name created again after its
            # removal starts above its tombstone's generation.
            users[name] = {
                "password_hash": password_hash,
                "display_name": display_name or old.get("display_name") or name,
                "role": new_role,
                "generation": next_generation(tombstone.get("generation")),
            }
            return _account(name, users[name])

        return self._update(change)

    def set_role(self, name: str, role: Role) -> Account | None:
        """Change an account's role; its sessions end (their cookies carry the old role). None: no such account."""
        if role not in ROLES:
            raise ValueError(f"未知的角色 {role!r}（可选：{'、'.join(ROLES)}）")

        def change(users: dict[str, dict]) -> Account | None:
            record = users.get(name)
            if record is None or record.get("removed"):
                return None
            if _account(name, record).role != role:
                record["role"] = role
                record["generation"] = next_generation(int(record.get("generation", 0)))
            return _account(name, record)

        return self._update(change)

    def remove(self, name: str) -> bool:
        """Remove an account; its name keeps a tombstone with the last generation (see the module doc)."""

        def change(users: dict[str, dict]) -> bool:
            record = users.get(name)
            if record is None or record.get("removed"):
                return False
            users[name] = {"removed": True, "generation": int(record.get("generation", 0))}
            return True

        return bool(self._update(change))

    def bump_generation(self, name: str, to: int | None = None) -> int | None:
        """End every session of this account (logout); returns the new generation, None for no such account.

        `to`: the generation to write (one already in force in memory, web/auth.py), unless the stored one is
        already at or above it."""

        def change(users: dict[str, dict]) -> int | None:
            record = users.get(name)
            if record is None or record.get("removed"):
                return None
            stored = int(record.get("generation", 0))
            record["generation"] = max(stored, to) if to is not None else next_generation(stored)
            return record["generation"]

        if self.get(name) is None:
            return None
        return self._update(change)

    def verify(self, name: str, password: str) -> dict | None:
        """The user's record if the password matches, else None; the same bcrypt work whether or not it exists."""
        record = self.get(name)
        stored = record["password_hash"].encode() if record else _dummy_hash()
        matches = bcrypt.checkpw(password.encode(), stored)
        return record if record and matches else None


def check_login(settings: Settings, store: UserStore, name: str, password: str) -> Account | None:
    """The account of a valid login, else None. The demo account exists only when explicitly enabled (`make run`)
    and, being the only account of a fresh install, is an admin."""
    record = store.verify(name, password)
    if record:
        return _account(name, record)
    if dev_login_allowed(settings, store) and (name, password) == DEV_USER:
        return Account(name=DEV_USER[0], display_name=DEV_DISPLAY_NAME, role=ADMIN, generation=0)
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
        prog="python -m clincite.users", description="管理 ClinCite 登录账号 (manage accounts)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add a user or reset a password (password read from a prompt or stdin)")
    add.add_argument("name")
    add.add_argument("--display-name")
    add.add_argument("--admin", action="store_true", help="an administrator (the first account always is one)")
    sub.add_parser("list")
    role = sub.add_parser("role", help="change a role; the account's open sessions end at once")
    role.add_argument("name")
    role.add_argument("role", choices=ROLES)
    remove = sub.add_parser("remove", help="remove a user; their open sessions end at once")
    remove.add_argument("name")
    args = parser.parse_args(argv)

    store = UserStore.for_settings(get_settings())
    if args.command == "list":
        return _list(store)
    if args.command == "remove":
        print("已删除" if store.remove(args.name) else "没有这个用户")
        return 0
    if args.command == "role":
        changed = store.set_role(args.name, args.role)
        print(f"{args.name} 现在是{ROLE_LABELS[changed.role]}" if changed else "没有这个用户")
        return 0 if changed else 1
    password = read_new_password()
    if password is None:
        return 1
    try:
        account = store.add(args.name, password, args.display_name, ADMIN if args.admin else None)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"已保存用户 {args.name}（{ROLE_LABELS[account.role]}，{store.path}）")
    return 0


def _list(store: UserStore) -> int:
    accounts = store.accounts()
    if not accounts:
        print("（还没有用户）")
        return 0
    for account in accounts:
        print(f"{account.name}\t{ROLE_LABELS[account.role]}")
    if not any(account.is_admin for account in accounts):
        print("注意：没有管理员账号。用 python -m clincite.users role 用户名 admin 指定一位。", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
