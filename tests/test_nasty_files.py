"""The generated nasty-file corpus (tests/nasty_corpus.py) through the real `ingest.py`: nothing hurts the KB.

Every file is either ingested or skipped with its reason, the run finishes (a FIFO would hang it, a zip bomb would
fill memory, a bad file name would abort it), and the documents already in the KB are untouched and retrievable.
Peak memory of the same run is printed by `bench/bench_nasty_ingest.py` (figures belong in benchmarks).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from conftest import ATROPINE, ORTHO_K, ROOT, SAMPLE_KB, make_settings
from nasty_corpus import NASTY_LIMITS, build

from clincite.kb.store import KnowledgeBase
from clincite.retrieval.search import HybridSearcher


def run_ingest(*paths, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "ingest.py", *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        env={**os.environ, **env},
        timeout=600,
    )


def parse(stdout: bytes) -> dict[str, tuple[str, str]]:
    """{name: (status, detail)} from the one-line-per-file output (names of this corpus hold no ': ' or ' (')."""
    results = {}
    for line in stdout.decode("utf-8").splitlines()[:-1]:
        status, rest = line[:10].strip(), line[11:]
        if status in ("skipped", "removed"):
            name, detail = rest.split(": ", 1)
        else:
            name, detail = rest.rsplit(" (", 1)
        assert name not in results, f"{name} reported twice"
        results[name] = (status, detail)
    return results


@pytest.mark.slow
async def test_the_nasty_corpus_cannot_hurt_the_kb(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in (ATROPINE, ORTHO_K):
        shutil.copy(SAMPLE_KB / name, docs)
    settings = make_settings(tmp_path)
    env = {"KB_DIR": str(settings.kb_dir), "EMBEDDING_MODEL": settings.embedding_model, **NASTY_LIMITS}
    first = run_ingest(docs, env=env)
    assert first.returncode == 0, first.stderr.decode()
    with KnowledgeBase(settings) as kb:
        before = {source: kb.catalogue.chunk_ids(source) for source in kb.catalogue.documents()}
    assert set(before) == {ATROPINE, ORTHO_K}

    manifest = build(tmp_path / "corpus", sample=docs, forge_name=ATROPINE)
    assert len(manifest) >= 30
    unreadable = tmp_path / "unreadable.md"  # given by name (so followed): a regular file whose read fails (EIO)
    unreadable.symlink_to("/proc/self/mem")
    run = run_ingest(tmp_path / "corpus", "/dev/null", unreadable, env=env)  # a device given by name, too
    assert run.returncode == 0, run.stderr.decode()
    assert "Traceback" not in run.stderr.decode()
    results = parse(run.stdout)
    assert results.pop("null")[1].startswith("不是普通文件（字符设备）")
    assert results.pop("unreadable.md") == ("skipped", "无法读取文件 (OSError: [Errno 5] Input/output error)")
    assert set(results) == set(manifest), "every file is reported, once"
    for name, expect in manifest.items():
        status, detail = results[name]
        assert status == expect.status, f"{name} ({expect.why}): {status} {detail}"
        assert expect.reason in detail, f"{name} ({expect.why}): {detail}"
        if status == "skipped":
            assert detail.strip(), f"{name}: skipped without a reason"
    added = sum(1 for e in manifest.values() if e.status == "added")
    assert run.stdout.decode().splitlines()[-1].startswith(f"完成：新增 {added}，更新 0，未变 0，")

    with KnowledgeBase(settings) as kb:
        documents = kb.catalogue.documents()
        for source, ids in before.items():  # the forged ATROPINE did not replace the real one
            assert kb.catalogue.chunk_ids(source) == ids
        assert {"科室甲/指南.md", "科室乙/指南.md"} <= set(documents), "same name, two folders: two documents"
        assert documents["科室甲/指南.md"].file_hash != documents["科室乙/指南.md"].file_hash
        long_heading = kb.catalogue.chunks_of("long_heading.md")
        assert long_heading and all(len(h) <= 200 for c in long_heading for h in c.heading_path)
        assert all(len(c.text) <= settings.chunk_max_chars for c in long_heading)
        assert kb.vectors(settings.embedding_model).all_ids() == set(kb.catalogue.chunk_ids())
    check = sqlite3.connect(settings.kb_dir / "catalogue.sqlite3")
    assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert check.execute(
        "SELECT COUNT(*) FROM chunks WHERE source NOT IN (SELECT source FROM documents)"
    ).fetchone() == (0,)
    check.close()

    # Most of the corpus repeats an atropine paragraph, so ask what only the real guideline says. A slow first
    # semantic search on a busy machine would make this question BM25-only (by design): this test is not about that.
    searcher = HybridSearcher(settings.model_copy(update={"vector_store_timeout": 120.0}), KnowledgeBase(settings))
    hits = await searcher.search("低浓度阿托品停药后会反弹吗")
    assert hits[0].source == ATROPINE, [h.source for h in hits]
    assert {"bm25", "semantic"} <= {r for h in hits for r in h.found_by}
    assert (await searcher.search("角膜塑形镜 感染 护理"))[0].source == ORTHO_K

    again = parse(run_ingest(tmp_path / "corpus", env=env).stdout)  # a rerun: nothing new, the same reasons
    assert {n for n, (s, _) in again.items() if s == "unchanged"} == {
        n for n, e in manifest.items() if e.status == "added"
    }
