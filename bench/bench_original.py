"""The event loop while large originals are opened ("打开原文"): does one clinician's download stall everyone?

    .venv/bin/python bench/bench_original.py                      # a 90 MB web-page original, 3 downloads at once
    .venv/bin/python bench/bench_original.py --mb 20 --encoding gb18030 --json
    .venv/bin/python bench/bench_original.py --root /tmp/main-export   # the same on another tree (before/after)

It starts `chainlit run app.py -h` (offline, the hashing embedder) on a KB holding one large HTML document (mostly
inline script around a few paragraphs, so that ingesting it is quick while its original is large), logs in, and probes
GET /health every 20 ms from a thread of its own while N clients download the original at once. The probe's latency
is what every other clinician's request waits behind the event loop. Figures: the probe's p50/p99/max before and
during the downloads, and how long the downloads took.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load_test
from load_test import HOST, PASSWORD, Processes, free_port, log, percentile

NAME = "大文件原文（演示）.html"
PARAGRAPH = "<p>低浓度阿托品可延缓儿童近视进展，使用中应定期复查眼轴长度与屈光度（演示）。</p>\n"


def large_document(path: Path, megabytes: float, encoding: str) -> None:
    """A web page saved with its scripts: a few paragraphs of text, megabytes of inline script around them (the
    text ingested is small, the original is large — as a page saved "complete" from a hospital intranet is)."""
    script = ("var d='" + "近视防控" * 250 + "';\n").encode(encoding)
    head = (
        f'<html><head><meta charset="{encoding}"><title>大文件原文（演示）</title></head><body>'
        "<h1>大文件原文（演示）</h1>" + PARAGRAPH * 20 + "<script>\n"
    ).encode(encoding)
    with path.open("wb") as f:
        f.write(head)
        for _ in range(int(megabytes * 1024 * 1024 / len(script))):
            f.write(script)
        f.write(("</script>" + PARAGRAPH + "</body></html>").encode(encoding))


class Probe(threading.Thread):
    def __init__(self, base: str):
        super().__init__(daemon=True)
        self.base, self.samples, self.stopped = base, [], threading.Event()

    def run(self) -> None:
        import httpx

        with httpx.Client(base_url=self.base, timeout=60) as http:
            while not self.stopped.is_set():
                started = time.perf_counter()
                http.get("/health")
                self.samples.append((started, time.perf_counter() - started))
                time.sleep(0.02)

    def window(self, start: float, end: float) -> dict:
        values = [latency * 1000 for at, latency in self.samples if start <= at <= end]
        return {
            "probes": len(values),
            "p50_ms": percentile(values, 50),
            "p99_ms": percentile(values, 99),
            "max_ms": round(max(values), 1) if values else None,
        }


def download_all(base: str, cookie: str, count: int) -> list[float]:
    import httpx

    url = "/clincite/original/" + quote(NAME)
    times: list[float] = []

    def one() -> None:
        started = time.perf_counter()
        client = httpx.Client(base_url=base, cookies={"access_token": cookie}, timeout=600)
        with client, client.stream("GET", url) as response:
            response.raise_for_status()
            for _ in response.iter_bytes(1024 * 1024):
                pass
        times.append(time.perf_counter() - started)

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=90.0, help="size of the original")
    parser.add_argument("--encoding", default="utf-8", help="its encoding (gb18030: transcoded on the way out)")
    parser.add_argument("-n", "--downloads", type=int, default=3, help="downloads at once")
    parser.add_argument("--root", type=Path, default=load_test.PROJECT, help="the project tree to run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    root = load_test.ROOT = args.root.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="clincite-original-"))
    processes = Processes()
    try:
        app_root, data, docs = tmp / "app", tmp / "data", tmp / "docs"
        for folder in (app_root, data, docs):
            folder.mkdir()
        load_test.prepare_app_root(app_root)
        large_document(docs / NAME, args.mb, args.encoding)
        env = load_test.app_environment(data, free_port(), tmp / "lag.txt", {})
        env.update(
            {
                "OFFLINE_MODE": "on",
                "EMBEDDING_MODEL": "hashing-char-ngrams",
                "CHAINLIT_APP_ROOT": str(app_root),
                "CLINCITE_PRIVATE_APP_ROOT": str(app_root),
            }
        )
        log(f"ingesting a {args.mb:g} MB original ({args.encoding})")
        ingest = [sys.executable, str(root / "ingest.py"), str(docs), "--kb", str(data / "kb")]
        done = subprocess.run(ingest, cwd=root, env=env, capture_output=True, text=True, timeout=900)
        if "added" not in done.stdout:
            raise RuntimeError(done.stdout + done.stderr)
        subprocess.run(
            [sys.executable, "-c", load_test.ADD_USERS, str(data / "users.json"), PASSWORD, "reader"],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        port = free_port()
        chainlit = str(Path(sys.executable).parent / "chainlit")
        command = [chainlit, "run", str(root / "app.py"), "-h", "--host", HOST, "--port", str(port)]
        app = processes.start("app", command, tmp / "app.log", cwd=app_root, env=env)
        base = f"http://{HOST}:{port}"
        load_test.wait_http(base + "/health", app, 240, "the app", tmp / "app.log")
        load_test.wait_log(tmp / "app.log", "Warm-up done", app, 240)
        import httpx

        cookie = httpx.post(base + "/login", data={"username": "reader", "password": PASSWORD}).cookies["access_token"]
        probe = Probe(base)
        probe.start()
        time.sleep(3)
        quiet_end = time.perf_counter()
        log(f"{args.downloads} downloads at once")
        seconds = download_all(base, cookie, args.downloads)
        busy_end = time.perf_counter()
        probe.stopped.set()
        probe.join()
        report = {
            "original_mb": args.mb,
            "encoding": args.encoding,
            "downloads": args.downloads,
            "download_s": [round(s, 2) for s in seconds],
            "health_before": probe.window(0, quiet_end),
            "health_during_downloads": probe.window(quiet_end, busy_end),
            "root": str(root),
        }
    finally:
        processes.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        before, during = report["health_before"], report["health_during_downloads"]
        print(
            f"{args.downloads} × a {args.mb:g} MB {args.encoding} original in {report['download_s']} s; /health "
            f"before: p50 {before['p50_ms']} ms, max {before['max_ms']} ms; during: p50 {during['p50_ms']} ms, "
            f"p99 {during['p99_ms']} ms, max {during['max_ms']} ms ({during['probes']} probes)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
