"""Gate errors of the fast path: composite questions sent down the fast path and answered with less than the full
pipeline would have given.

    python bench/bench_gate.py                            # bench/answer_cases.json on a KB from sample_kb/, offline
    python bench/bench_gate.py --cases bench/cases/x.json --docs ~/guidelines
    python bench/bench_gate.py --llm                      # the LLM path, over HTTP to the fake clinical LLM
    python bench/bench_gate.py --json

Every case is answered twice, with the gate off (FAST_PATH=false) and on, on the same KB (the cases file format of
bench/eval_answers.py; a case's history is replayed as a chat). A gate error is a case the gate answered on the fast
path whose answer lost what the full pipeline's answer had: an expected phrase (answer-hit) in the TL;DR or 完整结论,
a cited source document, or a covered aspect (the full answer "answered", the fast one "partial"). It prints the
gate's choices, the errors one by one, and the error rate over the cases the gate sent fast and over all cases
(target: <= 3 %). This prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from eval_answers import DEFAULT_CASES, DEFAULT_DOCS, history_turns, lead, load_cases  # noqa: E402
from eval_retrieval import build_kb, doc_key, stdout_to_stderr  # noqa: E402

from clincite.core.logs import quiet_libraries  # noqa: E402
from clincite.core.settings import load_settings  # noqa: E402
from clincite.core.shapes import AnswerDone, PathChosen  # noqa: E402
from clincite.question.service import TwoStageQueryService  # noqa: E402
from clincite.retrieval.search import HybridSearcher  # noqa: E402

TARGET = 0.03


async def answer(service: TwoStageQueryService, case: dict, asked: dict) -> tuple[object, str | None]:
    turns = await history_turns(service, case["history"], asked)
    paths, result = [], None
    async for event in service.run(case["question"], turns, use_cache=False):
        if isinstance(event, PathChosen):
            paths.append(event.path)
        elif isinstance(event, AnswerDone):
            result = event.result
    path = "fallback" if "fallback" in paths else (paths[0] if paths else None)
    return result, path


def lost(case: dict, full, fast) -> list[str]:
    """What the fast answer lacks that the full one had."""
    missing = []
    said_full, said_fast = lead(full.answer)[1], lead(fast.answer)[1]
    for phrase in case["phrases"]:
        if any(alt.casefold() in said_full.casefold() for alt in phrase) and not any(
            alt.casefold() in said_fast.casefold() for alt in phrase
        ):
            missing.append("短语“" + "|".join(phrase) + "”")
    full_docs = {doc_key(c.source) for c in full.citations} & case["docs"]
    fast_docs = {doc_key(c.source) for c in fast.citations}
    missing += [f"来源《{d}》" for d in sorted(full_docs - fast_docs)]
    if full.coverage.status == "answered" and fast.coverage.status != "answered":
        missing.append(f"覆盖 {fast.coverage.status}")
    return missing


async def bench(cases: list[dict], settings, kb, log) -> dict:
    searcher = HybridSearcher(settings, kb)
    off = TwoStageQueryService(settings.model_copy(update={"fast_path": False, "answer_cache_size": 0}), searcher)
    on = TwoStageQueryService(settings.model_copy(update={"fast_path": True, "answer_cache_size": 0}), searcher)
    await on.warm_up()
    asked_off: dict[str, str] = {}
    asked_on: dict[str, str] = {}
    rows = []
    for i, case in enumerate(cases, 1):
        full, _ = await answer(off, case, asked_off)
        fast, path = await answer(on, case, asked_on)
        row = {"question": case["question"], "gate": path, "lost": lost(case, full, fast) if path == "fast" else []}
        rows.append(row)
        log(f"[{i}/{len(cases)}] {path or '—':<8} {case['question']}" + (f"  ✗ {row['lost']}" if row["lost"] else ""))
    sent_fast = [r for r in rows if r["gate"] in ("fast", "fallback")]
    answered_fast = [r for r in rows if r["gate"] == "fast"]
    errors = [r for r in rows if r["lost"]]
    return {
        "kb": str(kb.dir),
        "mode": on.mode,
        "cases": len(rows),
        "gate": {kind: sum(1 for r in rows if r["gate"] == kind) for kind in ("fast", "fallback", "full")},
        "gate_errors": len(errors),
        "gate_error_rate_of_fast": round(len(errors) / len(answered_fast), 4) if answered_fast else 0.0,
        "gate_error_rate_of_all": round(len(errors) / len(rows), 4) if rows else 0.0,
        "sent_fast": len(sent_fast),
        "errors": errors,
        "per_case": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--llm", action="store_true", help="the LLM path, over HTTP to tests/fake_clinical_llm.py")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_libraries()
    cases = load_cases(args.cases)
    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings().model_copy(update={"data_dir": Path(tmp), "kb_dir": Path(tmp) / "kb"})
        with stdout_to_stderr(args.json):
            kb = build_kb(settings, args.docs, settings.kb_dir, log)
        if args.llm:
            from fake_clinical_llm import ClinicalLLM, llm_settings
            from fake_openai_server import FakeOpenAIServer

            with FakeOpenAIServer(ClinicalLLM()) as server:
                figures = asyncio.run(bench(cases, llm_settings(settings, server.base_url), kb, log))
        else:
            figures = asyncio.run(bench(cases, settings, kb, log))
        kb.close()
    if args.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
        return 0
    g = figures["gate"]
    print(
        f"\n{figures['cases']} cases ({figures['mode']}): gate sent {g['fast'] + g['fallback']} down the fast path "
        f"({g['fast']} answered there, {g['fallback']} fell back), {g['full']} the full way."
    )
    for error in figures["errors"]:
        print(f"  gate error: {error['question']} — the fast answer lacks {', '.join(error['lost'])}")
    verdict = "met" if figures["gate_error_rate_of_all"] <= TARGET else "NOT met"
    print(
        f"Gate errors: {figures['gate_errors']} — {figures['gate_error_rate_of_fast'] * 100:.1f} % of the questions "
        f"answered on the fast path, {figures['gate_error_rate_of_all'] * 100:.1f} % of all cases "
        f"(target <= {TARGET * 100:.0f} %: {verdict})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
