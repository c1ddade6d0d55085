"""Clinician accounts for the web app: salted bcrypt hashes in a JSON file (USERS_FILE).

    python users.py add 张医生                 # asks for the password twice
    python users.py add 张医生 --password '…'  # non-interactive (scripts)
    python users.py list
    python users.py remove 张医生

The app also needs CHAINLIT_AUTH_SECRET to sign login cookies; `ensure_auth_secret` creates a random one in the data
directory on first start when none is configured, so a restart does not log everyone out.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import secrets
import sys
import threading
from pathlib import Path

import bcrypt

from clincite.settings import Settings, get_settings

DEV_USER = ("demo", "demo")  # only with CLINCITE_DEV_LOGIN=true and no users configured
MIN_PASSWORD_CHARS = 8


class UserStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def _load(self) -> dict[str, dict]:
        if not self.path.exists():
            return {}
        return json.loads(self.path.read_text(encoding="utf-8"))

    def _save(self, users: dict[str, dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(users, ensure_ascii=False, indent=2), encoding="utf-8")
        os.chmod(tmp, 0o600)
        tmp.replace(self.path)  # atomic: a crash never leaves a half-written user file

    def names(self) -> list[str]:
        return sorted(self._load())

    def add(self, name: str, password: str, display_name: str | None = None) -> None:
        if not name.strip():
            raise ValueError("用户名不能为空")
        if len(password) < MIN_PASSWORD_CHARS:
            raise ValueError(f"密码至少需要 {MIN_PASSWORD_CHARS} 个字符")
        with self._lock:
            users = self._load()
            users[name] = {"password_hash": bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode(),
                           "display_name": display_name or name}
            self._save(users)

    def remove(self, name: str) -> bool:
        with self._lock:
            users = self._load()
            if users.pop(name, None) is None:
                return False
            self._save(users)
            return True

    def verify(self, name: str, password: str) -> dict | None:
        """The user's record if the password matches, else None."""
        record = self._load().get(name)
        if record and bcrypt.checkpw(password.encode(), record["password_hash"].encode()):
            return record
        return None


def check_login(settings: Settings, store: UserStore, name: str, password: str) -> str | None:
    """The display name of a valid login, else None. The demo account exists only when explicitly enabled."""
    record = store.verify(name, password)
    if record:
        return record.get("display_name") or name
    if settings.dev_login and not store.names() and (name, password) == DEV_USER:
        return "演示用户"
    return None


def ensure_auth_secret(settings: Settings) -> None:
    """Chainlit refuses to start with login enabled and no secret: create and keep one per installation."""
    if os.environ.get("CHAINLIT_AUTH_SECRET"):
        return
    secret_file = settings.data_dir / "auth_secret"
    if not secret_file.exists():
        secret_file.parent.mkdir(parents=True, exist_ok=True)
        secret_file.write_text(secrets.token_urlsafe(48), encoding="utf-8")
        os.chmod(secret_file, 0o600)
    os.environ["CHAINLIT_AUTH_SECRET"] = secret_file.read_text(encoding="utf-8").strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="管理 ClinCite 登录账号 (manage clinician accounts)")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add a user or reset a password")
    add.add_argument("name")
    add.add_argument("--password", help="omit to be asked interactively")
    add.add_argument("--display-name")
    sub.add_parser("list")
    remove = sub.add_parser("remove")
    remove.add_argument("name")
    args = parser.parse_args(argv)

    store = UserStore(get_settings().users_file)
    if args.command == "list":
        print("\n".join(store.names()) or "（还没有用户）")
        return 0
    if args.command == "remove":
        print("已删除" if store.remove(args.name) else "没有这个用户")
        return 0
    password = args.password
    if password is None:
        password = getpass.getpass("密码：")
        if getpass.getpass("再次输入密码：") != password:
            print("两次输入的密码不一致", file=sys.stderr)
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
