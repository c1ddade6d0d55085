"""N ClinCite workers and nginx on one machine, kept running by supervisord: what `make serve WORKERS=N` runs.

    make serve WORKERS=2                    # nginx on HOST:PORT (default 127.0.0.1:8000), workers on PORT+1…PORT+N
    .venv/bin/python deploy/serve.py --workers 2 --port 8000 --host 0.0.0.0
    .venv/bin/supervisorctl -c .data/run/supervisord.conf status    # workers, nginx, health checks

Supervision is supervisord's (PyPI `supervisor`, BSD-derived licence, maintained by the Supervisor project): it
restarts a worker that exits (autorestart), and superlance's `httpok` (same project) restarts a worker whose /health
stops answering (a hung event loop). We chose it over honcho/foreman, which stop everything when one process dies,
and over systemd units, which need root and differ per distribution; docs/deploy.md shows the systemd way for
servers that prefer it. This script only writes the two configuration files (supervisord's and nginx's) into
RUN_DIR (default DATA_DIR/run) and then becomes supervisord.

Each worker gets its own Chainlit app root (Chainlit deletes APP_ROOT/.files when a process stops, which would pull
the session files from under the other workers) and shares DATA_DIR. The settings come from .env and the environment
as for `make run`; with more than one worker they must name the shared servers (docs/deploy.md), or every worker
refuses to start and says which setting is missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

NGINX = "/usr/sbin/nginx"  # Debian's nginx package
SNIPPETS = PROJECT / "deploy" / "nginx"  # the configuration shared with the Debian site file
WORKER_START_SECONDS = 90  # a worker counts as started (and is health-checked) once it has run this long
HEALTH_TIMEOUT_SECONDS = 10  # /health slower than this: the worker is restarted
# A worker that cannot start (PostgreSQL or Redis not up yet after a reboot) is tried again, each wait a second
# longer (supervisord's backoff), for about an hour and a half, instead of supervisord giving up after a few tries.
START_RETRIES = 100


def nginx_conf(run: Path, host: str, port: int, worker_ports: list[int], snippets: Path = SNIPPETS) -> str:
    """A standalone nginx.conf for an unprivileged nginx: the repo's http and proxy snippets, this upstream list."""
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;" for p in worker_ports)
    return f"""# Written by deploy/serve.py: edit deploy/nginx/*.conf instead.
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {run}/nginx-access.log;
    client_body_temp_path {run}/nginx-tmp/body;
    proxy_temp_path {run}/nginx-tmp/proxy;
    fastcgi_temp_path {run}/nginx-tmp/fastcgi;
    uwsgi_temp_path {run}/nginx-tmp/uwsgi;
    scgi_temp_path {run}/nginx-tmp/scgi;
    include {snippets}/clincite-http.conf;
    upstream clincite_workers {{
        hash $clincite_route consistent;
{servers}
        keepalive 32;
    }}
    server {{
        listen {host}:{port};
        location / {{
            include {snippets}/clincite-proxy.conf;
            add_header Set-Cookie $clincite_route_cookie always;
        }}
    }}
}}
"""


def app_root(run: Path, worker: int) -> Path:
    """A Chainlit app root for one worker: the project's config, public/ and welcome page linked in."""
    root = run / f"worker-{worker}"
    (root / ".chainlit").mkdir(parents=True, exist_ok=True)
    for link, target in (
        (root / ".chainlit" / "config.toml", PROJECT / ".chainlit" / "config.toml"),
        (root / "public", PROJECT / "public"),
        (root / "chainlit.md", PROJECT / "chainlit.md"),
    ):
        if not link.is_symlink():
            link.symlink_to(target)
    return root


def supervisord_conf(
    run: Path, workers: int, worker_ports: list[int], nginx: str | None, nginx_conf_path: Path, worker_host: str
) -> str:
    bin_dir = Path(sys.executable).parent
    health_host = "127.0.0.1" if worker_host in ("0.0.0.0", "127.0.0.1") else worker_host
    sections = [
        f"""# Written by deploy/serve.py.
[supervisord]
nodaemon=true
logfile={run}/supervisord.log
pidfile={run}/supervisord.pid
childlogdir={run}

[unix_http_server]
file={run}/supervisor.sock
chmod=0700

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://{run}/supervisor.sock
"""
    ]
    for i, port in enumerate(worker_ports, start=1):
        root = app_root(run, i)
        sections.append(f"""[program:worker-{i}]
command={bin_dir}/chainlit run {PROJECT}/app.py -h --host {worker_host} --port {port}
directory={PROJECT}
environment=WORKERS="{workers}",CHAINLIT_APP_ROOT="{root}",CLINCITE_PRIVATE_APP_ROOT="{root}",WORKER_NAME="worker-{i}"
autorestart=true
startsecs={WORKER_START_SECONDS}
startretries={START_RETRIES}
stopsignal=TERM
stopwaitsecs=20
stopasgroup=true
killasgroup=true
redirect_stderr=true
stdout_logfile={run}/worker-{i}.log
stdout_logfile_maxbytes=50MB

[eventlistener:health-{i}]
command={bin_dir}/httpok -p worker-{i} -t {HEALTH_TIMEOUT_SECONDS} http://{health_host}:{port}/health
events=TICK_60
redirect_stderr=false
stderr_logfile={run}/health-{i}.log
""")
    if nginx is None:
        return "\n".join(sections)
    sections.append(f"""[program:nginx]
command={nginx} -p {run} -c {nginx_conf_path} -g "daemon off;"
autorestart=true
stopsignal=QUIT
redirect_stderr=true
stdout_logfile={run}/nginx.log
""")
    return "\n".join(sections)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--host", default="127.0.0.1", help="the address nginx listens on")
    parser.add_argument("--port", type=int, default=8000, help="nginx's port; the workers take the next ones")
    parser.add_argument("--run-dir", type=Path, help="where the generated configuration and logs go")
    parser.add_argument("--nginx", default=NGINX)
    parser.add_argument("--check", action="store_true", help="write the configuration, check it, do not start")
    parser.add_argument(
        "--no-proxy",
        action="store_true",
        help="workers only, listening on HOST (several machines: the nginx of deploy/nginx/clincite.conf elsewhere)",
    )
    args = parser.parse_args(argv)

    from clincite.core.settings import load_settings
    from clincite.users.store import ensure_auth_secret

    configured = os.environ.get("WORKERS")
    os.environ["WORKERS"] = "1"
    if args.no_proxy and load_settings().chainlit_auth_secret is None:
        print("多台机器共用一个安装时，请在每台机器的 .env 中设置同一个 CHAINLIT_AUTH_SECRET", file=sys.stderr)
        return 1
    ensure_auth_secret(load_settings())  # one secret (DATA_DIR/auth_secret) for every worker: a login is valid on all
    # WORKERS counts the workers of every machine (.env): never fewer than this machine runs.
    os.environ["WORKERS"] = str(max(args.workers, int(configured or 1), load_settings().workers))
    settings = load_settings()  # refuses a configuration the workers cannot share, naming what is missing
    if not args.no_proxy and not shutil.which(args.nginx):
        print(f"找不到 nginx（{args.nginx}）：请先安装 `apt-get install nginx`", file=sys.stderr)
        return 1
    run = (args.run_dir or settings.data_dir / "run").resolve()
    (run / "nginx-tmp").mkdir(parents=True, exist_ok=True)
    worker_ports = [args.port + i for i in range(1, args.workers + 1)]
    nginx_path = run / "nginx.conf"
    nginx_path.write_text(nginx_conf(run, args.host, args.port, worker_ports), encoding="utf-8")
    conf = run / "supervisord.conf"
    worker_host = args.host if args.no_proxy else "127.0.0.1"
    nginx = None if args.no_proxy else args.nginx
    conf.write_text(
        supervisord_conf(run, settings.workers, worker_ports, nginx, nginx_path, worker_host), encoding="utf-8"
    )
    if args.check:
        os.execv(args.nginx, [args.nginx, "-t", "-p", str(run), "-c", str(nginx_path)])
    print(
        f"ClinCite: {args.workers} 个工作进程 + nginx，http://{args.host}:{args.port}（配置与日志：{run}）", flush=True
    )
    supervisord = str(Path(sys.executable).parent / "supervisord")
    os.execv(supervisord, [supervisord, "-c", str(conf)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
