"""One clinician floods the server; another asks as usual: how much later does his first token come?

    .venv/bin/python bench/bench_flood.py                          # 400 questions at once from one account
    .venv/bin/python bench/bench_flood.py --flood 40 -k 2 --json   # a smoke run

What it starts is what bench/load_test.py starts (the fake clinical LLM over HTTP, `chainlit run app.py -h` on the
sample KB, real accounts), all on 127.0.0.1 and all stopped at the end. Then:
  1. the other clinician asks K questions alone, one after another: his TTFT alone (median);
  2. the flooder opens one socket and sends FLOOD questions back to back, without waiting (a script, not a page);
  3. a moment later (--after seconds), while the flood is queued and running, the other clinician asks the same K
     questions again: his TTFT under the flood (median, and the worst), and whether any of his answers degraded.
TTFT is the time from sending the question to the first token of the report (as in load_test.py). The flooder's
questions wait in his own line (QUESTIONS_IN_FLIGHT_PER_CLINICIAN at a time) and are told how many are ahead; the
script also counts those notices and how many of his questions had been answered when it stops.

Target (issue 24): the other clinician's TTFT under the flood ≤ 1.3 × his own alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load_test
from load_test import HOST, PASSWORD, QUESTIONS, Clinician, Processes, free_port, log

TARGET_RATIO = 1.3


async def flood(base: str, name: str, count: int) -> dict:
    """One socket, `count` questions sent back to back; counts the queue notices and the answers that come."""
    flooder = Clinician(base, name, timeout=3600)
    await flooder.log_in()
    while not flooder.events.empty():
        flooder.events.get_nowait()
    created = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    for i in range(count):
        await flooder.sio.emit(
            "client_message",
            {
                "message": {
                    "id": str(uuid.uuid4()),
                    "threadId": "",
                    "name": name,
                    "type": "user_message",
                    "output": f"{QUESTIONS[i % len(QUESTIONS)]}（第{i + 1}问）",
                    "createdAt": created,
                },
                "fileReferences": [],
            },
        )
    return {"flooder": flooder}


def flood_progress(flooder: Clinician) -> dict:
    queued = answered = 0
    while not flooder.events.empty():
        _, event, data = flooder.events.get_nowait()
        step = data if isinstance(data, dict) else {}
        if event == "new_message" and "前面还有" in str(step.get("output", "")):
            queued += 1
        elif event == "stream_start" and step.get("name") == load_test.ANSWER_AUTHOR:
            answered += 1
    return {"queued_notices": queued, "answers_started": answered}


async def ask_all(clinician: Clinician, questions: list[str]) -> list:
    answers = []
    for question in questions:
        answers.append(await clinician.ask(question))
    return answers


async def measure(base: str, args) -> dict:
    victim = Clinician(base, "victim", timeout=args.question_timeout)
    await victim.log_in()
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(args.k)]
    log(f"the other clinician alone: {args.k} questions")
    alone = await ask_all(victim, questions)
    log(f"the flood: {args.flood} questions from one account")
    flooding = await flood(base, "flooder", args.flood)
    sent = time.perf_counter()
    await asyncio.sleep(args.after)
    log("the other clinician during the flood")
    during = await ask_all(victim, questions)
    progress = flood_progress(flooding["flooder"])
    progress["seconds_since_flood"] = round(time.perf_counter() - sent, 1)
    await flooding["flooder"].close()
    await victim.close()
    solo = [a.ttft for a in alone if a.ttft is not None]
    flooded = [a.ttft for a in during if a.ttft is not None]
    ratio = statistics.median(flooded) / statistics.median(solo) if solo and flooded else None
    return {
        "flood": args.flood,
        "questions": args.k,
        "ttft_alone_s": [round(t, 2) for t in solo],
        "ttft_flooded_s": [round(t, 2) for t in flooded],
        "ttft_alone_median_s": round(statistics.median(solo), 2) if solo else None,
        "ttft_flooded_median_s": round(statistics.median(flooded), 2) if flooded else None,
        "ttft_flooded_max_s": round(max(flooded), 2) if flooded else None,
        "ttft_ratio": round(ratio, 2) if ratio else None,
        "errors": [e for a in alone + during for e in a.errors],
        "flooder": progress,
    }


def victim_degradations(db: Path) -> list[str]:
    with sqlite3.connect(db, timeout=30) as connection:
        rows = connection.execute(
            "SELECT degradations FROM answer_records WHERE \"userIdentifier\" = 'victim'"
        ).fetchall()
    return [c for (d,) in rows for c in json.loads(d or "[]")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=400, help="questions the flooder sends at once")
    parser.add_argument("-k", type=int, default=6, help="questions the other clinician asks, alone and flooded")
    parser.add_argument("--after", type=float, default=2.0, help="seconds between the flood and his questions")
    parser.add_argument("--ttft", type=float, default=0.5, help="fake LLM: seconds to first token")
    parser.add_argument("--tps", type=float, default=80.0, help="fake LLM: output tokens per second")
    parser.add_argument("--question-timeout", type=float, default=180.0)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="an app setting")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, database)")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="clincite-flood-"))
    processes = Processes()
    try:
        app_root, data = tmp / "app", tmp / "data"
        app_root.mkdir()
        data.mkdir()
        load_test.prepare_app_root(app_root)
        llm_port, app_port = free_port(), free_port()
        env = load_test.app_environment(data, llm_port, tmp / "loop_lag.txt", dict(e.split("=", 1) for e in args.env))
        env.update({"CHAINLIT_APP_ROOT": str(app_root), "CLINCITE_PRIVATE_APP_ROOT": str(app_root)})
        root = load_test.ROOT
        subprocess.run(
            [sys.executable, str(root / "ingest.py"), str(root / "sample_kb"), "--kb", str(data / "kb")],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
        subprocess.run(
            [sys.executable, "-c", load_test.ADD_USERS, str(data / "users.json"), PASSWORD, "victim", "flooder"],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        fake = [sys.executable, str(root / "tests" / "fake_clinical_llm.py"), "--port", str(llm_port)]
        llm = processes.start("fake LLM", [*fake, "--ttft", str(args.ttft), "--tps", str(args.tps)], tmp / "llm.log")
        load_test.wait_http(f"http://{HOST}:{llm_port}/v1/models", llm, 60, "the fake LLM", tmp / "llm.log")
        load_test.warm_fake_llm(f"http://{HOST}:{llm_port}/v1")
        chainlit = str(Path(sys.executable).parent / "chainlit")
        command = [chainlit, "run", str(root / "app.py"), "-h", "--host", HOST, "--port", str(app_port)]
        app = processes.start("app", command, tmp / "app.log", cwd=app_root, env=env)
        base = f"http://{HOST}:{app_port}"
        load_test.wait_http(base + "/health", app, 240, "the app", tmp / "app.log")
        load_test.wait_log(tmp / "app.log", "Warm-up done", app, 240)
        report = asyncio.run(measure(base, args))
        report["victim_degradations"] = victim_degradations(data / "clincite.sqlite3")
        report["target_ratio"] = TARGET_RATIO
        report["met"] = bool(report["ttft_ratio"] and report["ttft_ratio"] <= TARGET_RATIO and not report["errors"])
    finally:
        processes.stop_all()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(
            f"flood of {report['flood']} questions from one account; the other clinician's TTFT "
            f"alone {report['ttft_alone_median_s']} s, during the flood {report['ttft_flooded_median_s']} s "
            f"(max {report['ttft_flooded_max_s']} s): {report['ttft_ratio']}× (target ≤ {TARGET_RATIO}×); "
            f"his answers' degradations: {report['victim_degradations'] or 'none'}; "
            f"flooder: {report['flooder']}; errors: {report['errors'] or 'none'}"
        )
    return 0 if report["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
