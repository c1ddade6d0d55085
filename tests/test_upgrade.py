"""An upgrade reaches a knowledge base built by an older ClinCite: `python ingest.py docs/` reads its unchanged
files again with the new reader, and rebuilds a keyword index cut by an older tokenizer."""

from __future__ import annotations

import json

from conftest import make_settings

from clincite.ingest import pipeline
from clincite.kb.store import KnowledgeBase
from clincite.retrieval.search import HybridSearcher


def run_ingest(settings, docs) -> pipeline.IngestReport:
    with KnowledgeBase(settings) as kb:
        return pipeline.Ingestor(settings, kb).run([docs])


def _page(folder):
    """A web page whose editor broke its list with <br/> (a lead-in and its numbered items in one <p>)."""
    (folder / "眼内炎.html").write_text(
        "<html><head><title>眼内炎科普（演示）</title></head><body><p>眼内炎是严重的眼内感染（演示材料）。<br/>"
        "早期眼内炎的表现有以下几点：<br/>①眼痛、畏光。<br/>②视力迅速下降。<br/>③前房积脓。</p></body></html>",
        encoding="utf-8",
    )


def test_files_read_by_an_older_reader_are_read_again(tmp_path):
    settings = make_settings(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    _page(docs)
    run_ingest(settings, docs)
    kb = KnowledgeBase(settings)
    with kb.catalogue.transaction() as db:  # as an older ClinCite left it
        kb.catalogue.set_meta(db, pipeline.READER_KEY, "1")
    kb.close()

    report = run_ingest(settings, docs)
    assert report.reread and report.count("updated") == 1
    assert "重新读取" in pipeline.format_summary(report)
    again = run_ingest(settings, docs)
    assert not again.reread and again.count("unchanged") == 1

    chunks = KnowledgeBase(settings).catalogue.all_chunks()
    assert "以下几点：\n\n①眼痛、畏光。\n\n②视力迅速下降。" in "".join(c.text for c in chunks)


def test_an_index_cut_by_another_tokenizer_is_rebuilt(tmp_path):
    settings = make_settings(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    _page(docs)
    run_ingest(settings, docs)
    kb = KnowledgeBase(settings)
    pointer_file = kb.bm25_dir / "current.json"
    pointer = json.loads(pointer_file.read_text(encoding="utf-8"))
    pointer_file.write_text(json.dumps({**pointer, "tokenizer": "older"}), encoding="utf-8")
    version = kb.catalogue.version
    kb.close()

    run_ingest(settings, docs)
    kb = KnowledgeBase(settings)
    assert kb.published_bm25()["tokenizer"] != "older"
    assert kb.catalogue.version > version  # running apps see a new version and reload the index
    searcher = HybridSearcher(settings, kb)
    assert searcher.term_stats().tokenizer == kb.published_bm25()["tokenizer"]
