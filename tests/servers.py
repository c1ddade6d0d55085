"""Real servers for the tests, from Debian's packages, each on a free 127.0.0.1 port in a folder of its own:
PostgreSQL (initdb + pg_ctl as the postgres user), Redis (redis-server as nobody) and nginx (unprivileged, as
nobody); and `chroma run` from the venv (ChromaServer). `.ci/run` installs the packages; without them a test
skips, or fails under CI=true. bench/load_test.py starts the same servers.

    with PostgresServer() as pg: pg.url("clincite")           # postgresql+asyncpg://postgres@127.0.0.1:PORT/clincite
    with RedisServer() as redis: redis.url                    # redis://127.0.0.1:PORT/0
    with NginxServer(conf_text_for(port)) as nginx: ...       # conf_text_for(port, run_dir) -> nginx.conf text
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

UNPRIVILEGED = "nobody"
FAST_STOP_SECONDS = 20  # then an immediate shutdown: a database outage need not be tidy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing(what: str, package: str):
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing: .ci/run installs it with apt-get ({package})", pytrace=False)
    pytest.skip(f"{what} not installed (apt-get install -y {package})")


def wait_port(port: int, timeout: float, process: subprocess.Popen | None = None, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}: {log.read_text()[-2000:] if log else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def _as_user(user: str) -> list[str]:
    return ["runuser", "-u", user, "--"] if os.geteuid() == 0 else []


def _own(path: Path, user: str) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, user)


class PostgresServer:
    """A throw-away PostgreSQL cluster, run as the postgres system user; `create_database(name)` for each user."""

    def __init__(self):
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found or os.geteuid() != 0 or not shutil.which("runuser"):
            missing("PostgreSQL server binaries", "postgresql")
        self.bin = os.path.dirname(found[-1])
        self.root = Path(tempfile.mkdtemp(prefix="clincite-pg-"))
        self.port = free_port()

    def __enter__(self) -> PostgresServer:
        _own(self.root, "postgres")
        run = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            [*run, f"{self.bin}/initdb", "-D", f"{self.root}/data", "-A", "trust", "-U", "postgres", "-E", "UTF8"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self.start()
        return self

    def start(self) -> None:
        """Start the cluster (again, after stop(): the same data, the same port)."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off"
        subprocess.run(
            [
                "runuser",
                "-u",
                "postgres",
                "--",
                f"{self.bin}/pg_ctl",
                "-D",
                f"{self.root}/data",
                "-l",
                f"{self.root}/log",
                "-w",
                "-o",
                options,
                "start",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def stop(self) -> None:
        """Stop the cluster as a database outage does (fast shutdown: clients are disconnected).

        A fast shutdown writes a checkpoint first; on a loaded 2-core box that once took more than a minute. An
        outage need not be tidy: after FAST_STOP_SECONDS the cluster is stopped at once (it recovers on start).
        """
        try:
            self._pg_ctl_stop("fast", FAST_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self._pg_ctl_stop("immediate", 60)

    def _pg_ctl_stop(self, mode: str, seconds: float) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", f"{self.bin}/pg_ctl", "-D", f"{self.root}/data", "-m", mode, "stop"],
            capture_output=True,
            timeout=seconds,
        )

    def create_database(self, name: str) -> str:
        """A new empty database; returns its asyncpg URL (the app's CLINCITE_DATABASE_URL)."""
        subprocess.run(
            ["runuser", "-u", "postgres", "--", f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), name],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return self.url(name)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def __exit__(self, *exc) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """Debian's redis-server on a free port, no persistence, as an unprivileged user."""

    def __init__(self):
        self.binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.path.exists(self.binary):
            missing("redis-server", "redis-server")
        self.root = Path(tempfile.mkdtemp(prefix="clincite-redis-"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> RedisServer:
        _own(self.root, UNPRIVILEGED)
        self.start()
        return self

    def start(self) -> None:
        log = self.root / "redis.log"
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", str(self.root), "--logfile", str(log)]
        self.process = subprocess.Popen([*_as_user(UNPRIVILEGED), self.binary, *args], start_new_session=True)
        wait_port(self.port, 30, self.process, log)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 15)  # the group started for this server only
            self.process.wait(timeout=15)

    def __exit__(self, *exc) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class NginxServer:
    """Debian's nginx, unprivileged (as nobody), with a standalone nginx.conf in a folder of its own; the repo's
    snippets (deploy/nginx/*.conf) are copied in beside it (the checkout may not be readable by nobody)."""

    def __init__(self, make_conf, snippets: Path | None = None):
        self.binary = "/usr/sbin/nginx"
        if not os.path.exists(self.binary):
            missing("nginx", "nginx")
        self.root = Path(tempfile.mkdtemp(prefix="clincite-nginx-"))
        self.port = free_port()
        for snippet in (snippets or Path(__file__).resolve().parent.parent / "deploy" / "nginx").glob("*.conf"):
            shutil.copy(snippet, self.root / snippet.name)
        self.conf = self.root / "nginx.conf"
        self.conf.write_text(make_conf(self.port, self.root), encoding="utf-8")
        self.process: subprocess.Popen | None = None
        self.base_url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> NginxServer:
        (self.root / "nginx-tmp").mkdir()
        for path in (self.root, self.root / "nginx-tmp"):
            _own(path, UNPRIVILEGED)
        os.chmod(self.root, 0o755)
        command = [*_as_user(UNPRIVILEGED), self.binary, "-p", str(self.root), "-c", str(self.conf)]
        check = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=30)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t: {check.stderr}")
        self.process = subprocess.Popen([*command, "-g", "daemon off;"], start_new_session=True)
        wait_port(self.port, 30, self.process, self.root / "nginx-error.log")
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            self.process.wait(timeout=15)
        shutil.rmtree(self.root, ignore_errors=True)


class ChromaServer:
    """`chroma run` on 127.0.0.1 in its own process group; stop() and start() again on the same data and port."""

    def __init__(self, path: Path, port: int):
        self.path, self.port, self.process = path, port, None
        self.log = path.parent / "chroma.log"

    def start(self) -> None:
        chroma = str(Path(sys.executable).parent / "chroma")
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [chroma, "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail("chroma run exited:\n" + self.log.read_text()[-2000:])
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        pytest.fail("chroma run did not answer within 60 s:\n" + self.log.read_text()[-2000:])

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)  # the group started for this server only
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
