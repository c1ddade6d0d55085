"""Hybrid search: jieba + domain dictionary, bm25s vs the rank-bm25 reference, Chroma (embedded and server).

Searches run on the hashing embedder; `test_the_real_model_finds_passages_by_meaning` keeps the real model's path.
"""

from __future__ import annotations

import json
import math
from collections import Counter

from conftest import ATROPINE, ORTHO_K, ROOT, SAMPLE_KB, TEST_MODEL, make_settings

import query
from clincite.ingest.pipeline import Ingestor
from clincite.kb.embeddings import Embedder, HashingEmbedder
from clincite.kb.store import KnowledgeBase
from clincite.retrieval.search import HybridSearcher
from clincite.text.tokenizer import get_tokenizer


def test_domain_terms_stay_whole_and_stop_words_go():
    tokens = get_tokenizer().tokenize("低浓度阿托品的副作用有哪些？")
    assert "低浓度阿托品" in tokens and "副作用" in tokens
    assert "的" not in tokens and "哪些" not in tokens and "？" not in tokens
    assert "噻吗洛尔" in get_tokenizer().words("噻吗洛尔滴眼液")


def test_synonyms_expand_abbreviations_both_ways():
    tokenizer = get_tokenizer()
    assert "角膜塑形镜" in tokenizer.expand_query("OK镜适合多大的孩子")
    assert "OK镜" in tokenizer.expand_query("角膜塑形镜的护理")
    assert "眼压" in tokenizer.expand_query("IOP 升高")
    assert "眼压" not in tokenizer.expand_query("VIOPS")  # ASCII abbreviations match whole words only


async def test_atropine_side_effects_come_from_the_atropine_document(searcher):
    hits = await searcher.search("低浓度阿托品的副作用有哪些")
    assert hits[0].source == ATROPINE
    assert any("畏光" in h.text for h in hits[:3])
    both = [h for h in hits if set(h.found_by) == {"bm25", "semantic"}]
    assert both, "some passages are found by both retrievers"
    for h in hits:  # each retriever that found a passage left its score, and only those
        assert (h.bm25 is not None, h.semantic is not None) == ("bm25" in h.found_by, "semantic" in h.found_by)


async def test_abbreviation_finds_the_full_term(searcher):
    hits = await searcher.search("OK镜会引起感染吗")
    # The question says only "OK镜"; the ortho-k document's infection passage, which says only "角膜塑形镜", is found
    # among the first three (the atropine guide's passage on combining it with 角膜塑形镜 and its 感染风险 may lead).
    infection = [h for h in hits[:3] if h.source == ORTHO_K and "微生物性角膜炎" in h.text]
    assert infection and "OK镜" not in infection[0].text.upper()
    assert all("角膜塑形镜" in h.text for h in hits[:3])


async def test_search_many_keeps_queries_apart_and_deduplicates(searcher):
    per_query = await searcher.search_many(["角膜塑形镜的禁忌症", "重复低强度红光的安全性"])
    assert any(h.source == ORTHO_K and "禁忌证" in h.text for h in per_query[0][:3])
    assert per_query[1][0].source == "重复低强度红光治疗及安全性（演示）.md"
    assert not {h.chunk_id for h in per_query[0][:3]} & {h.chunk_id for h in per_query[1][:3]}
    bm25 = searcher.bm25_search_many(["角膜塑形镜的禁忌症", "重复低强度红光的安全性"])
    semantic = searcher.semantic_search_many(["角膜塑形镜的禁忌症", "重复低强度红光的安全性"])
    overlaps = 0
    for hits, by_bm25, by_meaning in zip(per_query, bm25, semantic):
        found = [cid for cid, _ in by_bm25] + [cid for cid, _ in by_meaning]
        overlaps += len(found) - len(set(found))
        assert sorted(h.chunk_id for h in hits) == sorted(set(found))  # each passage once, none lost
    assert overlaps, "both retrievers found some of the same passages (and each is one hit)"


async def test_concurrent_searches_share_one_encode_and_each_gets_its_own_hits(searcher):
    """Twenty clinicians at once: their query embeddings are encoded together, and no search gets another's rows."""
    import asyncio

    questions = ["角膜塑形镜的禁忌症", "重复低强度红光的安全性", "低浓度阿托品的副作用有哪些", "OK镜会引起感染吗"]
    alone = [await searcher.search(q) for q in questions]
    calls: list[int] = []
    encode = searcher.embedder.encode_queries

    def counting(texts):
        calls.append(len(texts))
        return encode(texts)

    searcher.embedder.encode_queries = counting
    try:
        together = await asyncio.gather(*(searcher.search(q) for q in questions * 5))
    finally:
        del searcher.embedder.encode_queries
    assert [[h.chunk_id for h in hits] for hits in together] == [[h.chunk_id for h in hits] for hits in alone] * 5
    assert len(calls) < len(questions) * 5 and sum(calls) == len(questions) * 5


class CountingModel:
    """The model behind an embedder, counting the texts it is asked to encode."""

    def __init__(self, model):
        self.model, self.encoded = model, []

    def encode(self, texts, **options):
        self.encoded += list(texts)
        return self.model.encode(texts, **options)


def counting_embedder() -> tuple[HashingEmbedder, CountingModel]:
    embedder = HashingEmbedder()
    model = CountingModel(embedder.load())
    embedder.load = lambda: model
    return embedder, model


def test_query_embeddings_are_cached():
    embedder, model = counting_embedder()
    first = embedder.encode_queries(["散瞳验光的意义", "眼轴"])
    again = embedder.encode_queries(["散瞳验光的意义"])
    assert model.encoded == ["散瞳验光的意义", "眼轴"], "the second call was answered from the cache"
    assert (again[0] == first[0]).all()


def test_query_embedding_cache_stays_bounded(monkeypatch):
    import clincite.kb.embeddings as embeddings

    monkeypatch.setattr(embeddings, "QUERY_CACHE_SIZE", 2)
    embedder, model = counting_embedder()
    vectors = embedder.encode_queries(["角膜塑形镜", "阿托品", "红光", "眼轴"])  # more than the cache holds
    assert vectors.shape[0] == 4
    embedder.encode_queries(["眼轴", "红光", "角膜塑形镜"])  # the last two stayed, the first ones went
    assert model.encoded == ["角膜塑形镜", "阿托品", "红光", "眼轴", "角膜塑形镜"]


def lucene_bm25_scores(corpus: list[list[str]], concepts: list[list[list[str]]], k1=1.5, b=0.75) -> list[float]:
    """The reference, written out from the docstrings of clincite/kb/bm25.py: Lucene's BM25 (idf = ln(1 + (N - n +
    0.5) / (n + 0.5)), never negative); a concept of the query counts by its best alternative (the summed scores of
    its distinct tokens), every alternative weighed as the concept's commonest one (scaled by the ratio of their
    summed idfs); a one-character Chinese word also stands for the six commonest two-character tokens it begins."""
    n_docs = len(corpus)
    average = sum(len(d) for d in corpus) / n_docs
    frequency = Counter(t for d in corpus for t in set(d))

    def idf(term: str) -> float:
        return math.log(1 + (n_docs - frequency[term] + 0.5) / (frequency[term] + 0.5))

    def term_score(counts: Counter, length: int, term: str) -> float:
        tf = counts[term]
        return idf(term) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)) if tf else 0.0

    def prefixed(char: str) -> list[list[str]]:
        words = [w for w in frequency if len(w) == 2 and w[0] == char]
        return [[w] for w in sorted(words, key=lambda w: -frequency[w])[:6]]

    expanded = []
    for concept in concepts:
        alternatives = list(concept)
        for alt in concept:
            if len(alt) == 1 and len(alt[0]) == 1 and "\u4e00" <= alt[0] <= "\u9fff":
                alternatives += prefixed(alt[0])
        known = [list(dict.fromkeys(t for t in alt if frequency[t])) for alt in alternatives]
        known = [alt for alt in known if alt]
        if known:
            expanded.append([(alt, sum(idf(t) for t in alt)) for alt in known])
    scores = []
    for document in corpus:
        counts = Counter(document)
        total = 0.0
        for alternatives in expanded:
            common = min(weight for _, weight in alternatives)
            total += max(
                sum(term_score(counts, len(document), t) for t in alt) * common / weight for alt, weight in alternatives
            )
        scores.append(total)
    return scores


def test_bm25s_ranks_like_lucene_bm25_written_out(searcher, sample_kb):
    cases = json.loads((ROOT / "bench" / "retrieval_cases.json").read_text(encoding="utf-8"))
    tokenizer = get_tokenizer()
    chunks = sample_kb.catalogue.all_chunks()
    corpus = tokenizer.tokenize_many([c.index_text for c in chunks])
    agree = total = 0
    for case in cases:
        scores = lucene_bm25_scores(corpus, tokenizer.query_groups(case["question"]))
        expected = [chunks[i].id for i in sorted(range(len(chunks)), key=lambda i: -scores[i])[:5] if scores[i] > 0]
        got = [cid for cid, _ in searcher.bm25_search_many([case["question"]])[0]]
        total += len(expected)
        agree += sum(1 for a, b in zip(expected, got) if a == b)
    assert total > 100
    assert agree / total >= 0.9, f"{agree}/{total} positions agree"


def test_a_one_document_library_finds_its_sections(tmp_path):
    """Every term of a one-document KB is in half the passages or more: a Robertson idf made them all worthless."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "角膜塑形镜指南（演示）.md").write_text(
        "# 角膜塑形镜指南（演示）\n\n## 禁忌证\n\n角膜塑形镜不宜用于圆锥角膜和活动性角膜炎患者。\n\n"
        "## 复查\n\n角膜塑形镜戴镜后第一天、一周、一个月应复查。\n",
        encoding="utf-8",
    )
    settings = make_settings(tmp_path)
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([docs])
    hits = HybridSearcher(settings, kb).bm25_search_many(["角膜塑形镜 禁忌证"])[0]
    assert hits, "a one-document library must find its own sections"
    assert "圆锥角膜" in kb.catalogue.get_chunks([hits[0][0]])[hits[0][0]].text


async def test_missing_embedding_model_falls_back_to_bm25_with_a_fix_it_warning(kb_settings, sample_kb):
    settings = kb_settings.model_copy(update={"embedding_model": "/nonexistent/bge-small-zh"})
    searcher = HybridSearcher(settings, sample_kb, Embedder(settings.embedding_model))
    hits = await searcher.search("低浓度阿托品的副作用有哪些")
    assert hits and hits[0].source == ATROPINE
    assert all(h.found_by == ["bm25"] for h in hits)
    assert searcher.bm25_only
    assert "EMBEDDING_MODEL" in searcher.warning and "BM25" in searcher.warning


def test_reopening_a_kb_loads_the_saved_bm25_index(kb_settings, sample_kb, searcher):
    reopened = HybridSearcher(kb_settings, KnowledgeBase(kb_settings), searcher.embedder)
    before = sorted(p.name for p in sample_kb.bm25_dir.rglob("*"))
    index = reopened._bm25_index()
    assert index.version == sample_kb.catalogue.version == reopened.serving_version
    pointer = json.loads((sample_kb.bm25_dir / "current.json").read_text(encoding="utf-8"))
    published = sample_kb.bm25_dir / pointer["dir"]
    assert (published / "clincite.json").exists()
    assert sorted(p.name for p in sample_kb.bm25_dir.rglob("*")) == before, "the reader wrote nothing"


def test_retrieve_cli_prints_hits_as_json(kb_settings, sample_kb, run_cli):
    out = run_cli(query.main, ["低浓度阿托品的副作用有哪些", "--retrieve", "--json", "--kb", kb_settings.kb_dir])
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["hits"][0]["source"] == ATROPINE
    assert set(payload["hits"][0]) == {
        "chunk_id",
        "source",
        "title",
        "heading_path",
        "pages",
        "text",
        "bm25",
        "semantic",
        "found_by",
    }


async def test_the_real_model_finds_passages_by_meaning(tmp_path, real_embedder):
    """The real path: sentence-transformers embeds at ingest and at query time, Chroma returns by cosine."""
    settings = make_settings(tmp_path, embedding_model=TEST_MODEL)
    kb = KnowledgeBase(settings)
    report = Ingestor(settings, kb, real_embedder).run([SAMPLE_KB / ATROPINE, SAMPLE_KB / ORTHO_K])
    assert report.count("added") == 2 and report.embedding_warning is None
    assert kb.vectors(TEST_MODEL).count() == len(kb.catalogue.chunk_ids())
    hits = await HybridSearcher(settings, kb, real_embedder).search("orthokeratology lens care 角膜塑形镜", "semantic")
    assert hits and all(h.found_by == ["semantic"] for h in hits)
    assert hits[0].source == ORTHO_K
    vectors = real_embedder.encode_documents(["近视", "myopia"])
    assert vectors.shape == (2, 384)


async def test_vectors_can_live_in_a_chroma_server(tmp_path, chroma_server):
    settings = make_settings(tmp_path, chroma_host="127.0.0.1", chroma_port=chroma_server.port)
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([SAMPLE_KB / ATROPINE, SAMPLE_KB / ORTHO_K])
    assert not (kb.dir / "chroma").exists(), "no embedded store when CHROMA_HOST is set"
    import chromadb

    remote = chromadb.HttpClient(host="127.0.0.1", port=chroma_server.port)
    collection = remote.get_collection(kb.vectors(settings.embedding_model).name)
    assert collection.count() == len(kb.catalogue.chunk_ids())
    hits = await HybridSearcher(settings, kb).search("角膜塑形镜 感染 护理")
    assert any("semantic" in h.found_by for h in hits)
    assert any(h.source == ORTHO_K and "感染风险与镜片护理" in h.heading_path for h in hits[:3])
