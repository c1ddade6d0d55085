"""Answer quality of ClinCite: the whole pipeline (offline, or the configured LLM) scored on a set of cases.

    python bench/eval_answers.py                          # temporary KB from sample_kb/, cases bench/answer_cases.json
    python bench/eval_answers.py --docs ~/guidelines --cases my_cases.json
    python bench/eval_answers.py --kb .data/kb            # an existing KB, used as it is
    python bench/eval_answers.py --json                   # one JSON object on stdout, progress on stderr
    python bench/eval_answers.py --show-misses            # which cases fail which measure, and what the TL;DR said
    python bench/eval_answers.py --all --corpora ~/clincite-corpora    # every library of bench/cases/, one table

`--all` runs every case file `bench/cases/<library>.json` (or `<library>.<set>.json`, a second set of cases such as
`myzd.blind.json`) on the library `<corpora>/<library>/` (built as
bench/corpora.md says; `sample_kb*` case files run on the repository's sample_kb/), plus the team's own
bench/answer_cases.json, and prints one row per library; a library whose folder is missing is listed as skipped.
`--kb-root DIR` reuses knowledge bases already ingested into DIR/<library>/ instead of building them.

The cases file is a JSON list of
    {"question": "…", "history": ["an earlier question", …]?, "docs": ["file name without extension", …],
     "phrases": ["…", "a|b", …], "answerable": true|false, "topic": ["a|b"]?, "note": "…"?}
A history entry that is a string is an earlier question: it is asked first and its real report becomes the assistant
turn, as in a chat; an entry {"role", "content"} is used as it is. `topic` (follow-ups) lists what the follow-up must
be resolved to: one alternative has to appear in a sub-query the pipeline searched.

Measures (each over the cases it applies to):
    answer-hit            answerable: a phrase appears in the TL;DR or the 完整结论 (the answer, not just the sources)
    evidence precision    answerable: share of cited passages that come from one of the case's documents
    citation-verified     all cases: share of cited quotes found verbatim in the passage they cite
    abstention accuracy   unanswerable: the TL;DR says the KB has no evidence and no passage is cited as an answer
    false abstention      answerable: the report abstains although the KB covers the question
    follow-up resolution  cases with history: the topic reached a sub-query and (answerable) evidence came from a
                          correct document
    bad TL;DR             answered cases: share whose TL;DR is a heading, a table's header row, a lead-in ending
                          in "：" or no words at all (a citation marker); target 0
    TTFT                  seconds to the first report character, p50 / p95
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from eval_retrieval import EvalError, build_kb, doc_key, open_kb, pad, stdout_to_stderr, width  # noqa: E402

from clincite.core.logs import quiet_libraries  # noqa: E402
from clincite.core.naming import display_source  # noqa: E402
from clincite.core.settings import load_settings  # noqa: E402
from clincite.core.shapes import ChatTurn, QueryResult  # noqa: E402
from clincite.ingest.loaders.base import PINYIN_NOTE  # noqa: E402
from clincite.question.service import TwoStageQueryService  # noqa: E402
from clincite.retrieval.search import HybridSearcher  # noqa: E402
from clincite.text.script import fold as simplified  # noqa: E402

DEFAULT_CASES = ROOT / "bench" / "answer_cases.json"
DEFAULT_DOCS = ROOT / "sample_kb"
CASES_DIR = ROOT / "bench" / "cases"
DEFAULT_CORPORA = Path(os.environ.get("CLINCITE_CORPORA", "~/clincite-corpora")).expanduser()
# What an abstaining TL;DR says; the service writes "知识库中未找到关于……的证据".
ABSTAIN_MARKERS = ("知识库中未找到", "知识库中没有找到")
TARGETS = {
    "answer_hit": (">=", 0.8),
    "evidence_precision": (">=", 0.9),
    "citation_verified": (">=", 1.0),
    "abstention_accuracy": (">=", 0.9),
    "false_abstention": ("<=", 0.1),
    "follow_up_resolution": (">=", 0.9),
    "bad_tldr": ("<=", 0.0),
}
LABELS = {
    "answer_hit": "答案命中 answer-hit",
    "evidence_precision": "证据精确率 evidence precision",
    "citation_verified": "引用逐字核对 citation-verified",
    "abstention_accuracy": "拒答准确率 abstention accuracy",
    "false_abstention": "误拒答率 false abstention",
    "follow_up_resolution": "追问解析 follow-up resolution",
    "bad_tldr": "无效摘要 bad TL;DR",
}


# ---------------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------------


def alternatives(values) -> list[list[str]]:
    return [[alt for alt in str(value).split("|") if alt] for value in values or []]


def load_cases(path: Path) -> list[dict]:
    if not path.is_file():
        raise EvalError(f"找不到测试用例文件：{path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EvalError(f"测试用例文件不是有效的 JSON：{path}（{exc}）") from exc
    if not isinstance(raw, list) or not raw:
        raise EvalError(f"测试用例文件应为非空的 JSON 列表：{path}")
    cases = []
    for i, case in enumerate(raw, 1):
        if not isinstance(case, dict) or not str(case.get("question", "")).strip():
            raise EvalError(f"第 {i} 个测试用例缺少 question：{case!r}")
        answerable = bool(case.get("answerable", True))
        if answerable and not (case.get("docs") and case.get("phrases")):
            raise EvalError(f"第 {i} 个测试用例可回答（answerable），但缺少 docs 或 phrases：{case['question']}")
        cases.append(
            {
                "question": str(case["question"]).strip(),
                "history": list(case.get("history") or []),
                "docs": {doc_key(str(d)) for d in case.get("docs") or []},
                "phrases": alternatives(case.get("phrases")),
                "answerable": answerable,
                "topic": alternatives(case.get("topic")),
            }
        )
    return cases


# ---------------------------------------------------------------------------------------------------------------
# Reading a report
# ---------------------------------------------------------------------------------------------------------------


def section(answer: str, start: str, end: str | None) -> str:
    at = answer.find(start)
    if at < 0:
        return ""
    at += len(start)
    stop = answer.find(end, at) if end else -1
    return answer[at : stop if stop >= 0 else len(answer)]


def lead(answer: str) -> tuple[str, str]:
    """(TL;DR, TL;DR + 完整结论): what the report says as its answer, before the evidence items."""
    tldr = section(answer, "TL;DR", "###").lstrip("：:* ")
    conclusion = section(answer, "### 完整结论", "### ")
    return tldr, tldr + conclusion


def contains(text: str, phrases: list[list[str]]) -> bool:
    """Any alternative of any phrase, compared as a reader would: case, full-width forms (６小时 is 6小时), spaces and
    the script (翼狀胬肉 is 翼状胬肉) and a re-posted page's pinyin notes (時(shí)間 is 時間, as ingest reads it)
    aside."""
    folded = _fold(text)
    return any(_fold(alt) in folded for phrase in phrases for alt in phrase)


def _fold(text: str) -> str:
    # Spaces aside too: a PDF's "5 岁" is the same words as "5岁" (loaders join letter-spaced lines)
    return re.sub(r"\s+", "", simplified(PINYIN_NOTE.sub("", unicodedata.normalize("NFKC", text))).casefold())


def abstained(result: QueryResult) -> bool:
    tldr, _ = lead(result.answer)
    return any(marker in tldr for marker in ABSTAIN_MARKERS) and not result.citations


_MARKER = re.compile(r"【\d+】")


HEADER_CELL_CHARS = 16  # a column's name is short; a longer cell is a value


def bad_tldr(tldr: str) -> bool:
    """A TL;DR that answers nothing: a heading, a header row, a lead-in cut from its list, a bare citation marker."""
    text = _MARKER.sub("", tldr).strip()
    words = sum(1 for c in text if "\u4e00" <= c <= "\u9fff" or c.isalpha())
    if words < 4 or text.endswith(("：", ":")):
        return True
    cells = [c.strip() for c in text.strip("| ").split("|")]
    if len(cells) > 1 and "：" not in text and not re.search(r"\d", text) and max(map(len, cells)) <= HEADER_CELL_CHARS:
        return True  # 列名 | 列名: a table's header row (its cells name columns; "學名 | HYDROXYPROPYL…" gives a value)
    # A short line without an ending or a "label：value" colon: a heading — not a list's items joined by "；"
    # ("局部抗组胺药；肥大细胞稳定剂"), which no heading is
    return len(text) < 16 and text[-1] not in "。！？!?.；;）)”%" and "：" not in text and "；" not in text


def coverage_status(result: QueryResult) -> str | None:
    coverage = getattr(result, "coverage", None)
    return getattr(coverage, "status", None)


def score_case(case: dict, result: QueryResult, files: dict[str, str] | None = None) -> dict:
    """`files`: the name a document is cited by → its file name without extension (a page cited by its title)."""
    _, said = lead(result.answer)
    files = files or {}
    cited = [files.get(c.source, doc_key(c.source)) in case["docs"] for c in result.citations]
    # q0 (the question as searched, a follow-up with its subject) is searched too: on the fast path it is the only one
    asked = [*result.sub_queries, *result.stage2_queries, *(a.sub_query for a in result.analyses)]
    searched = " ".join(q.text for q in asked)
    row = {
        "question": case["question"],
        "answerable": case["answerable"],
        "follow_up": bool(case["history"]),
        "abstained": abstained(result),
        "citations": len(cited),
        "correct_citations": sum(cited),
        "verified": sum(c.verified for c in result.citations),
        "ttft": result.timings.get("ttft"),
        "coverage": coverage_status(result),
        "tldr": lead(result.answer)[0].strip()[:160],
        "sub_queries": [q.text for q in result.sub_queries],
    }
    if case["answerable"]:
        row["answer_hit"] = contains(said, case["phrases"])
    if not row["abstained"] and result.citations:
        row["bad_tldr"] = bad_tldr(lead(result.answer)[0])
    if case["history"]:
        topic_ok = not case["topic"] or contains(searched, case["topic"])
        evidence_ok = any(cited) if case["answerable"] else row["abstained"]
        row["resolved"] = topic_ok and evidence_ok
    return row


# ---------------------------------------------------------------------------------------------------------------
# Running the pipeline
# ---------------------------------------------------------------------------------------------------------------


async def history_turns(service: TwoStageQueryService, history: list, asked: dict[str, str]) -> list[ChatTurn]:
    turns: list[ChatTurn] = []
    for entry in history:
        if isinstance(entry, dict):
            turns.append(ChatTurn(role=entry.get("role", "user"), content=str(entry.get("content", ""))))
            continue
        question = str(entry)
        if question not in asked:
            asked[question] = (await service.ask(question, list(turns))).answer
        turns += [ChatTurn(role="user", content=question), ChatTurn(role="assistant", content=asked[question])]
    return turns


async def run_cases(service: TwoStageQueryService, cases: list[dict], progress) -> list[dict]:
    await service.warm_up()
    records = await asyncio.to_thread(service.kb.catalogue.documents)
    files = {display_source(source, record.title): doc_key(source) for source, record in records.items()}
    asked: dict[str, str] = {}
    rows = []
    for i, case in enumerate(cases, 1):
        turns = await history_turns(service, case["history"], asked)
        result = await service.ask(case["question"], turns)
        rows.append(score_case(case, result, files))
        progress(f"[{i}/{len(cases)}] {case['question']}")
    return rows


def ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def summarise(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    follow_ups = [r for r in rows if r["follow_up"]]
    ttfts = sorted(r["ttft"] for r in rows if r["ttft"] is not None)
    statuses = [r["coverage"] for r in rows if r["coverage"]]
    return {
        "answer_hit": ratio(sum(r["answer_hit"] for r in answerable), len(answerable)),
        "evidence_precision": ratio(
            sum(r["correct_citations"] for r in answerable), sum(r["citations"] for r in answerable)
        ),
        "citation_verified": ratio(sum(r["verified"] for r in rows), sum(r["citations"] for r in rows)),
        "abstention_accuracy": ratio(sum(r["abstained"] for r in unanswerable), len(unanswerable)),
        "false_abstention": ratio(sum(r["abstained"] for r in answerable), len(answerable)),
        "follow_up_resolution": ratio(sum(r["resolved"] for r in follow_ups), len(follow_ups)),
        "bad_tldr": ratio(sum(r["bad_tldr"] for r in rows if "bad_tldr" in r), sum("bad_tldr" in r for r in rows)),
        "ttft_p50": round(statistics.median(ttfts), 3) if ttfts else None,
        "ttft_p95": round(ttfts[min(len(ttfts) - 1, round(0.95 * (len(ttfts) - 1)))], 3) if ttfts else None,
        "coverage": {
            status: ratio(statuses.count(status), len(statuses)) for status in ("answered", "partial", "no_evidence")
        }
        if statuses
        else None,
        "cases": len(rows),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "follow_ups": len(follow_ups),
    }


def evaluate(args: argparse.Namespace, progress) -> tuple[dict, list[dict], dict]:
    return evaluate_library(args.cases, args.docs, args.kb, progress)


def evaluate_library(cases_file: Path, docs: Path, kb: Path | None, progress) -> tuple[dict, list[dict], dict]:
    """One library: its cases run through the whole pipeline, on a KB built from `docs` (or the KB at `kb`)."""
    cases = load_cases(cases_file)
    base = load_settings().model_copy(update={"answer_cache_size": 0})
    with contextlib.ExitStack() as stack:
        if kb is not None:
            kb_dir = kb.expanduser().resolve()
            settings = base.model_copy(update={"kb_dir": kb_dir})
            store, kb_label = open_kb(settings, kb_dir), str(kb_dir)
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="clincite-answers-")))
            settings = base.model_copy(update={"kb_dir": tmp / "kb", "data_dir": tmp})
            store = build_kb(settings, docs, tmp / "kb", progress)
            kb_label = f"临时知识库，由 {docs} 构建 (temporary KB built from {docs})"
        stack.callback(store.close)
        sources = {doc_key(s) for s in store.catalogue.documents()}
        unknown = sorted({d for c in cases for d in c["docs"]} - sources)
        if unknown:
            progress(f"警告 warning: 用例引用的文档不在知识库中：{'、'.join(unknown[:5])}")
        service = TwoStageQueryService(settings, HybridSearcher(settings, store))
        started = time.perf_counter()
        rows = asyncio.run(run_cases(service, cases, progress))
        info = {
            "kb": kb_label,
            "documents": len(sources),
            "mode": service.mode,
            "search": "bm25" if service.searcher.bm25_only else "hybrid",
            "model": settings.embedding_model,
            "seconds": round(time.perf_counter() - started, 1),
        }
    return summarise(rows), rows, info


# ---------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------


def format_table(summary: dict) -> str:
    first = max(width(label) for label in LABELS.values()) + 2
    lines = [pad("指标 measure", first) + pad("value", 8, right=True) + "   target", "-" * (first + 22)]
    for key, label in LABELS.items():
        value = summary[key]
        op, goal = TARGETS[key]
        met = value is not None and (value >= goal if op == ">=" else value <= goal)
        cell = "n/a" if value is None else f"{value:.3f}"
        lines.append(pad(label, first) + pad(cell, 8, right=True) + f"   {op} {goal}  {'✓' if met else '✗'}")
    lines.append(
        pad("首字时间 TTFT p50 / p95", first) + pad(f"{summary['ttft_p50']}s / {summary['ttft_p95']}s", 16, right=True)
    )
    return "\n".join(lines)


def libraries(corpora: Path) -> list[tuple[str, Path, Path]]:
    """(name, cases file, documents folder) of every library: the team's own cases first, then bench/cases/."""
    found = [("sample_kb（团队用例 team cases）", DEFAULT_CASES, DEFAULT_DOCS)]
    for cases in sorted(CASES_DIR.glob("*.json")):
        name = cases.stem  # "myzd.blind": a second case set on the library myzd
        found.append((name, cases, DEFAULT_DOCS if name.startswith("sample_kb") else corpora / name.split(".")[0]))
    return found


def evaluate_all(corpora: Path, kb_root: Path | None, progress) -> list[dict]:
    results = []
    for name, cases, docs in libraries(corpora):
        if not docs.is_dir():
            progress(f"跳过 skipped {name}: 没有文档目录 no folder {docs}（见 bench/corpora.md）")
            results.append({"library": name, "skipped": str(docs)})
            continue
        progress(f"== {name}")
        kb = kb_root / docs.name if kb_root is not None and (kb_root / docs.name).is_dir() else None
        summary, rows, info = evaluate_library(cases, docs, kb, progress)
        results.append({"library": name, **summary, "info": info, "rows": rows})
    return results


def format_libraries(results: list[dict]) -> str:
    """One row per library, one column per measure, the targets in the last row."""
    first = max(width(r["library"]) for r in results) + 2
    short = {k: v.split(" ")[0] for k, v in LABELS.items()}
    lines = [
        pad("知识库 library", first)
        + "".join(pad(short[k], 12, right=True) for k in LABELS)
        + pad("用例", 8, right=True)
    ]
    lines.append("-" * (first + 12 * len(LABELS) + 8))
    for r in results:
        if "skipped" in r:
            lines.append(pad(r["library"], first) + "  （跳过：没有文档目录 skipped: no documents）")
            continue
        cells = "".join(pad("n/a" if r[k] is None else f"{r[k]:.3f}", 12, right=True) for k in LABELS)
        lines.append(pad(r["library"], first) + cells + pad(str(r["cases"]), 8, right=True))
    targets = "".join(pad(f"{op}{goal}", 12, right=True) for op, goal in TARGETS.values())
    lines.append(pad("目标 target", first) + targets)
    return "\n".join(lines)


def misses(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        problems = []
        if r["answerable"] and not r["answer_hit"]:
            problems.append("no phrase in TL;DR/结论")
        if r["answerable"] and r["abstained"]:
            problems.append("abstained")
        if r["answerable"] and r["correct_citations"] < r["citations"]:
            problems.append(f"{r['citations'] - r['correct_citations']} citation(s) from other documents")
        if not r["answerable"] and not r["abstained"]:
            problems.append("did not abstain")
        if r["follow_up"] and not r["resolved"]:
            problems.append(f"follow-up not resolved (sub-queries {r['sub_queries']})")
        if r["verified"] < r["citations"]:
            problems.append("unverified quote")
        if r.get("bad_tldr"):
            problems.append("the TL;DR answers nothing (heading, header row, lead-in or marker)")
        if problems:
            out.append(f"  · {r['question']} — {'; '.join(problems)}\n      TL;DR: {r['tldr']}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="评测回答质量 (answer-quality evaluation of the whole pipeline)")
    parser.add_argument("--kb", type=Path, default=None, help="an existing knowledge-base directory, used as it is")
    parser.add_argument(
        "--docs", type=Path, default=DEFAULT_DOCS, help="folder of documents for a temporary KB (default: sample_kb/)"
    )
    parser.add_argument(
        "--cases", type=Path, default=DEFAULT_CASES, help="JSON list of cases (default: bench/answer_cases.json)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object, nothing else, on stdout")
    parser.add_argument("--show-misses", action="store_true", help="list the cases that fail a measure")
    parser.add_argument("--all", action="store_true", help="every library of bench/cases/ (bench/corpora.md)")
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA, help="with --all: the libraries' folder")
    parser.add_argument("--kb-root", type=Path, default=None, help="with --all: reuse KBs ingested into DIR/<library>")
    args = parser.parse_args(argv)
    quiet_libraries()

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.all:
        return _main_all(args, progress)

    try:
        with stdout_to_stderr(args.json):
            summary, rows, info = evaluate(args, progress)
    except EvalError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**summary, "info": info, "rows": rows}, ensure_ascii=False))
        return 0
    print("ClinCite 回答质量评测 (answer-quality evaluation)")
    print(f"知识库 KB: {info['kb']} — {info['documents']} 个文档")
    print(f"模式 mode: {info['mode']}; 检索 search: {info['search']} ({info['model']}); {info['seconds']} s")
    print(
        f"用例 cases: {summary['cases']} (可回答 {summary['answerable']}, 不可回答 {summary['unanswerable']}, "
        f"追问 {summary['follow_ups']})"
    )
    print()
    print(format_table(summary))
    if summary["coverage"]:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in summary["coverage"].items())
        print(f"\ncoverage: {shares}")
    if args.show_misses:
        print("\n未达标的用例 (cases that fail a measure):")
        print("\n".join(misses(rows)) or "  （无 none）")
    return 0


def _main_all(args: argparse.Namespace, progress) -> int:
    try:
        with stdout_to_stderr(args.json):
            results = evaluate_all(args.corpora.expanduser(), args.kb_root, progress)
    except EvalError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(results, ensure_ascii=False))
        return 0
    print("ClinCite 回答质量评测，各知识库 (answer quality per library)")
    ran = [r for r in results if "skipped" not in r]
    if ran:
        info = ran[0]["info"]
        print(f"模式 mode: {info['mode']}; 检索 search: {info['search']} ({info['model']})")
    print()
    print(format_libraries(results))
    if args.show_misses:
        for r in ran:
            print(f"\n未达标的用例 (cases that fail a measure) — {r['library']}:")
            print("\n".join(misses(r["rows"])) or "  （无 none）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
