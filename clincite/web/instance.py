"""Each app process gets a Chainlit app root of its own under DATA_DIR, so no other process can delete its files.

    use_private_app_root(settings)       # first thing in app.py: may restart this process once (same pid, argv)

Chainlit 2.12 keeps the files of every live chat session (the passages behind 【n】 before they are stored, uploads)
in `APP_ROOT/.files`, where APP_ROOT is `$CHAINLIT_APP_ROOT` or the working directory — and on shutdown it deletes
that whole folder. Two processes started from the same folder (an overlapping restart, a test run next to the
clinic's server) share it: the one that stops pulls the live one's files away, and every cited answer then fails
with FileNotFoundError until a restart. Chainlit reads CHAINLIT_APP_ROOT once, when it is imported, before app.py
runs; so when `chainlit run` did not start in an app root of this process's own, this process starts itself again
(`os.execve`: same pid, same command line) with CHAINLIT_APP_ROOT set to a fresh folder
`DATA_DIR/chainlit/<pid>-<random>/` that links to the project's `.chainlit/config.toml`, `public/` and
`chainlit*.md`. No Chainlit code is patched. A folder is held (a file lock) by its process while it lives; the
folders of processes that are gone are removed when another one starts.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import sys
import time
from pathlib import Path

from filelock import FileLock, Timeout

from clincite.core.settings import Settings

log = logging.getLogger("clincite.app")

PRIVATE_ROOT = "CLINCITE_PRIVATE_APP_ROOT"  # set to the folder made for this process (with CHAINLIT_APP_ROOT)
ROOTS_DIR = "chainlit"
LOCK_FILE = "owner.lock"
LINKED = (".chainlit/config.toml", "public", "chainlit.md")
STALE_AFTER_SECONDS = 120  # a folder younger than this may belong to a process that is still starting
_held: FileLock | None = None


def use_private_app_root(settings: Settings) -> None:
    """Make sure this `chainlit run` process has an app root of its own (see the module doc)."""
    from chainlit.config import APP_ROOT, config

    if config.run.module_name is None:  # app.py loaded in-process (a test), not by `chainlit run`
        return
    if os.environ.get(PRIVATE_ROOT) == APP_ROOT:
        claim(Path(APP_ROOT))
        return
    root = make_private_root(settings.data_dir / ROOTS_DIR, Path(APP_ROOT))
    log.warning("Restarting in a Chainlit app root of this process's own: %s", root)
    env = {**os.environ, "CHAINLIT_APP_ROOT": str(root), PRIVATE_ROOT: str(root)}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def make_private_root(parent: Path, project_root: Path) -> Path:
    """A new app root under `parent` linking to the project's Chainlit config, public files and welcome pages."""
    parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(parent)
    root = parent / f"{os.getpid()}-{secrets.token_hex(4)}"
    (root / ".chainlit").mkdir(parents=True)
    names = [*LINKED, *(p.name for p in project_root.glob("chainlit_*.md"))]
    for name in names:
        target = project_root / name
        if target.exists():
            (root / name).symlink_to(target.resolve())
    return root


def claim(root: Path) -> None:
    """Hold this root's lock for the life of the process (the kernel releases it when the process ends)."""
    global _held
    lock = FileLock(str(root / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log.error("The app root %s is held by another process: its files are not this process's alone", root)
        return
    _held = lock


def remove_abandoned(parent: Path) -> None:
    """Remove the app roots of processes that are gone (their lock is free) and that are not brand new."""
    for root in parent.iterdir():
        if not root.is_dir() or time.time() - root.stat().st_mtime < STALE_AFTER_SECONDS:
            continue
        lock = FileLock(str(root / LOCK_FILE))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            continue  # a live process holds it
        try:
            shutil.rmtree(root, ignore_errors=True)
        finally:
            lock.release()


def main() -> None:
    """`python -m clincite.web.instance`: make an app root for the next `chainlit run` and print its path (the
    Makefile starts the app in it, so the app need not restart itself to get one)."""
    from clincite.core.settings import PROJECT_DIR, load_settings

    print(make_private_root(load_settings().data_dir / ROOTS_DIR, PROJECT_DIR))


if __name__ == "__main__":
    main()
