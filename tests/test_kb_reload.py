"""One writer, the app only reads: the searcher loads what ingest published, swaps a new version in in the
background, and degrades to BM25-only (and back) when the vector store goes away.

All real: the KB on disk, ingest as a separate process (embedded Chroma is not multi-process), a `chroma run` server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ATROPINE, ORTHO_K, ROOT, SAMPLE_KB, make_settings

from clincite.core.shapes import DocumentRecord, NoticeEvent
from clincite.ingest.chunking import chunk_document
from clincite.ingest.loaders import load_markdown
from clincite.ingest.pipeline import Ingestor
from clincite.kb.store import KnowledgeBase
from clincite.retrieval.search import KB_BEING_WRITTEN_NOTICE, VECTOR_STORE_DOWN_NOTICE, HybridSearcher
from query import TwoStageQueryService

NEW_DOC = "# 巩膜镜验配\n\n## 适应症\n\n巩膜镜适用于圆锥角膜和严重干眼患者，镜片支撑在巩膜上而不接触角膜。\n"


def files_of(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


def two_doc_kb(tmp_path: Path, **overrides):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in (ATROPINE, ORTHO_K):
        shutil.copy(SAMPLE_KB / name, docs)
    settings = make_settings(tmp_path, **overrides)
    with KnowledgeBase(settings) as kb:
        Ingestor(settings, kb).run([docs])
    return settings, docs


def ingest_process(settings, *paths) -> subprocess.CompletedProcess:
    env = {**os.environ, "KB_DIR": str(settings.kb_dir), "EMBEDDING_MODEL": settings.embedding_model}
    if settings.chroma_host:
        env.update(CHROMA_HOST=settings.chroma_host, CHROMA_PORT=str(settings.chroma_port))
    run = subprocess.run(
        [sys.executable, "ingest.py", *map(str, paths)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return run


async def test_the_app_never_builds_or_saves_an_index_on_the_question_path(tmp_path):
    settings, _ = two_doc_kb(tmp_path)
    searcher = HybridSearcher(settings, KnowledgeBase(settings))
    published = searcher.serving_version
    assert (await searcher.search("低浓度阿托品的副作用"))[0].source == ATROPINE
    index_files = files_of(searcher.kb.bm25_dir)

    # An ingest is midway: its catalogue commit is in, its BM25 index is not published yet.
    writer = KnowledgeBase(settings)
    chunks = chunk_document(load_markdown(NEW_DOC, "巩膜镜验配"), "巩膜镜.md")
    writer.catalogue.replace_document(
        DocumentRecord(
            source="巩膜镜.md",
            path="/nowhere/巩膜镜.md",
            title="巩膜镜验配",
            file_hash="x",
            chunk_count=len(chunks),
            ingested_at=0,
        ),
        chunks,
    )
    writer.close()
    assert searcher.version > published  # the catalogue is newer than the published index …
    started = time.perf_counter()
    hits = await searcher.search("巩膜镜 圆锥角膜", mode="bm25")
    assert time.perf_counter() - started < 5
    assert all(h.source != "巩膜镜.md" for h in hits)  # … and the app serves the published one, as it is
    restarted = HybridSearcher(settings, KnowledgeBase(settings))  # an app (re)started midway loads, never builds
    assert restarted.refresh() == published
    assert files_of(searcher.kb.bm25_dir) == index_files, "no reader wrote, renamed or rebuilt anything"


async def test_a_kb_without_a_published_index_searches_semantically_and_says_so(tmp_path):
    settings, _ = two_doc_kb(tmp_path)
    shutil.rmtree(settings.kb_dir / "bm25")  # e.g. an ingest that died before its first publish
    searcher = HybridSearcher(settings, KnowledgeBase(settings))
    results = await searcher.search_many(["低浓度阿托品的副作用"])
    assert results[0] and all(h.found_by == ["semantic"] for h in results[0])
    assert "bm25" in results.failed and "ingest.py" in results.notice
    assert not (settings.kb_dir / "bm25").exists(), "not rebuilt by the reader"


@pytest.mark.slow
async def test_a_new_version_is_swapped_in_in_the_background_while_the_old_one_serves(tmp_path):
    settings, docs = two_doc_kb(tmp_path, kb_reload_interval=0.05)
    searcher = HybridSearcher(settings, KnowledgeBase(settings))
    before = searcher.serving_version
    await searcher.search("巩膜镜 圆锥角膜", mode="semantic")  # opens the embedded Chroma view now
    old_view = searcher._view

    (docs / "巩膜镜.md").write_text(NEW_DOC, encoding="utf-8")
    ingest_process(settings, docs)  # another process: the only writer

    deadline = time.time() + 60
    while searcher.serving_version == before and time.time() < deadline:
        hits = await searcher.search("低浓度阿托品的副作用")  # questions go on meanwhile, on the old view
        assert hits[0].source == ATROPINE
        await asyncio.sleep(0.05)
    assert searcher.serving_version == searcher.version > before
    assert searcher._view is not old_view and searcher.stats["kb_reloads"] == 1
    bm25 = await searcher.search("巩膜镜 圆锥角膜", mode="bm25")
    assert bm25[0].source == "巩膜镜.md"
    semantic = await searcher.search("巩膜镜适用于圆锥角膜和严重干眼患者", mode="semantic")
    assert semantic[0].source == "巩膜镜.md", "the new Chroma view sees vectors written by the other process"


# --- an ingest writing while the app reads ------------------------------------------------------------------------


async def test_questions_asked_while_an_ingest_writes_are_answered_without_loading_its_vectors(tmp_path):
    """A fresh Chroma view that loads its index files while an ingest rewrites them kills the app (chromadb 1.5.9:
    a segmentation fault, `bench/chroma_read_during_write.py`). While the writer lock is held the question is
    answered from the keyword index and says why; once the ingest is done, hybrid search comes back by itself."""
    settings, _ = two_doc_kb(tmp_path)
    kb = KnowledgeBase(settings)
    searcher = HybridSearcher(settings, kb)
    ingest = kb.writer_lock(0)  # what an ingest holds for its whole run, in this process or another
    try:
        during = await searcher.search_many(["低浓度阿托品的副作用"])
    finally:
        ingest.release()
    assert during[0][0].source == ATROPINE and all(h.found_by == ["bm25"] for h in during[0])
    assert during.notice == KB_BEING_WRITTEN_NOTICE
    assert searcher._view.vectors._client is None, "the view opened the store the ingest was writing"
    assert not searcher.vector_store_down, "an ingest is not an outage"
    after = await searcher.search_many(["低浓度阿托品的副作用"])
    assert after.notice is None and any("semantic" in h.found_by for h in after[0])
    kb.close()


async def test_an_answer_given_while_an_ingest_writes_says_it_was_searched_by_keywords(tmp_path):
    settings, _ = two_doc_kb(tmp_path)
    kb = KnowledgeBase(settings)
    service = TwoStageQueryService(settings, HybridSearcher(settings, kb))
    ingest = kb.writer_lock(0)
    try:
        during = await service.ask("低浓度阿托品有哪些副作用？")
    finally:
        ingest.release()
    assert during.search_mode == "bm25", "the JSON must not claim a hybrid search that was not made"
    assert any(d.message == KB_BEING_WRITTEN_NOTICE for d in during.degradations)
    assert during.citations, "answered from the keyword index meanwhile"
    after = await service.ask("低浓度阿托品的不良反应有哪些？")
    assert after.search_mode == "hybrid" and not after.degradations
    kb.close()


async def test_a_version_published_while_another_ingest_writes_is_swapped_in_after_it(tmp_path):
    settings, docs = two_doc_kb(tmp_path, kb_reload_interval=3600)
    kb = KnowledgeBase(settings)
    searcher = HybridSearcher(settings, kb)
    await searcher.search("低浓度阿托品的副作用")  # the first version served, its vectors loaded
    (docs / "巩膜镜.md").write_text(NEW_DOC, encoding="utf-8")
    Ingestor(settings, kb).run([docs])  # publishes the next version …
    published = kb.published_bm25()["version"]
    ingest = kb.writer_lock(0)  # … and the next ingest begins before the app looks
    try:
        assert searcher.refresh() < published, "a view of vectors being written was swapped in"
    finally:
        ingest.release()
    assert searcher.stats["kb_reload_failures"] == 0
    assert searcher.refresh() == published
    semantic = await searcher.search("巩膜镜适用于圆锥角膜和严重干眼患者", mode="semantic")
    assert semantic[0].source == "巩膜镜.md"
    kb.close()


# --- the vector store goes away and comes back --------------------------------------------------------------------


async def test_vector_store_down_means_bm25_only_for_that_question_and_recovers_by_itself(tmp_path, chroma_server):
    settings = make_settings(
        tmp_path,
        chroma_host="127.0.0.1",
        chroma_port=chroma_server.port,
        vector_store_retry=1.0,
        vector_store_timeout=5.0,
    )
    ingest_process(settings, SAMPLE_KB / ATROPINE, SAMPLE_KB / ORTHO_K)
    searcher = HybridSearcher(settings, KnowledgeBase(settings))
    up = await searcher.search_many(["低浓度阿托品的副作用有哪些"])
    assert not up.failed and not searcher.bm25_only and "semantic" in {r for h in up[0] for r in h.found_by}

    chroma_server.stop()
    down = await searcher.search_many(["低浓度阿托品的副作用有哪些"])
    assert down[0][0].source == ATROPINE and all(h.found_by == ["bm25"] for h in down[0])
    assert down.bm25_only and down.notice == VECTOR_STORE_DOWN_NOTICE
    assert down.degradation.component == "vector_store" and "semantic" in down.degradation.error
    assert searcher.bm25_only and searcher.warning == VECTOR_STORE_DOWN_NOTICE
    assert searcher.stats["vector_store_failures"] == 1
    started = time.perf_counter()
    again = await searcher.search_many(["角膜塑形镜 感染"])  # within VECTOR_STORE_RETRY: not even tried
    assert time.perf_counter() - started < 2 and again.bm25_only and again[0][0].source == ORTHO_K
    assert searcher.stats["vector_store_failures"] == 1 and searcher.stats["bm25_only_searches"] == 2

    # A whole question through the service: answered, with a notice, not "抱歉…出错了".
    from clincite.question.service import TwoStageQueryService

    service = TwoStageQueryService(settings, searcher)
    events = [event async for event in service.run("低浓度阿托品的副作用有哪些？")]
    assert any(isinstance(e, NoticeEvent) and e.kind == "bm25_only" for e in events)
    result = events[-1].result
    assert result.answer and result.citations

    # Ingest while the store is down: the document goes in (catalogue + BM25), the run says vectors are missing.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "巩膜镜.md").write_text(NEW_DOC, encoding="utf-8")
    offline_ingest = ingest_process(settings, docs)
    assert "added      巩膜镜.md" in offline_ingest.stdout and "向量库不可用" in offline_ingest.stderr

    chroma_server.start()
    await asyncio.sleep(settings.vector_store_retry)
    back = await searcher.search_many(["低浓度阿托品的副作用有哪些"])
    assert not back.failed and not searcher.bm25_only
    assert "semantic" in {r for h in back[0] for r in h.found_by}
    assert await asyncio.to_thread(searcher.refresh) == searcher.version  # the version that ingest published
    assert (await searcher.search("巩膜镜 圆锥角膜", mode="bm25"))[0].source == "巩膜镜.md"
    healed = ingest_process(settings, docs)  # the next run adds the vectors the first one could not
    assert "unchanged  巩膜镜.md" in healed.stdout and "新向量 1 个" in healed.stdout
    with KnowledgeBase(settings) as kb:
        assert kb.vectors(settings.embedding_model).all_ids() == set(kb.catalogue.chunk_ids())
