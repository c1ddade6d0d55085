"""What "verified" and "relevant" mean: the embedding model's own prompts, a semantic floor measured for the model,
and duplicated passages taking one result slot."""

from __future__ import annotations

from types import SimpleNamespace
from typing import ClassVar

import numpy as np
from conftest import SAMPLE_KB, make_settings

from clincite.core.shapes import Hit
from clincite.ingest.pipeline import Ingestor
from clincite.kb.embeddings import (
    BGE_ZH_QUERY_INSTRUCTION,
    E5_PROMPTS,
    Embedder,
    HashingEmbedder,
    family_prompts,
    model_prompts,
)
from clincite.kb.store import KnowledgeBase
from clincite.retrieval.search import HybridSearcher, merge_duplicates


def test_the_models_own_prompts_win_and_families_fill_in():
    configured = SimpleNamespace(prompts={"query": "query: ", "document": "passage: "})
    assert model_prompts(configured, "/models/anything") == ("query: ", "passage: ")
    assert model_prompts(SimpleNamespace(prompts={}), "BAAI/bge-small-zh-v1.5") == (BGE_ZH_QUERY_INSTRUCTION, "")
    assert family_prompts("intfloat/multilingual-e5-small") == E5_PROMPTS
    assert family_prompts("/opt/models/all-MiniLM-L6-v2") == ("", "")


class RecordingModel:
    prompts: ClassVar[dict[str, str]] = {"query": "query: ", "document": "passage: "}

    def __init__(self):
        self.calls = []

    def encode(self, texts, prompt=None, **_options):
        self.calls.append((list(texts), prompt))
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def test_queries_and_documents_are_encoded_with_their_prompts():
    model = RecordingModel()
    embedder = Embedder("/models/e5-folder")
    embedder._load_model = lambda: model
    embedder.encode_queries(["阿托品的副作用"])
    embedder.encode_documents(["低浓度阿托品总体安全性良好。"])
    assert model.calls == [(["阿托品的副作用"], "query: "), (["低浓度阿托品总体安全性良好。"], "passage: ")]


def test_the_same_passage_in_two_documents_takes_one_slot():
    def hit(cid, source, text, score):
        return Hit(
            chunk_id=cid, source=source, title=source, heading_path=[], text=text, found_by=["bm25"], score=score
        )

    merged = merge_duplicates(
        [
            hit("a", "指南.md", "阿托品 每晚 一滴。", 0.03),
            hit("b", "副本.md", "阿托品 每晚一滴。", 0.02),
            hit("c", "指南.md", "另一段。", 0.01),
        ]
    )
    assert [h.chunk_id for h in merged] == ["a", "c"]
    assert merged[0].score == 0.05


def test_the_semantic_floor_is_measured_for_the_model(tmp_path):
    settings = make_settings(tmp_path, embedding_model=HashingEmbedder.NAME, semantic_threshold=0.05)
    kb = KnowledgeBase(settings)
    Ingestor(settings, kb).run([SAMPLE_KB])
    searcher = HybridSearcher(settings, kb, HashingEmbedder())
    floor = searcher.semantic_floor()
    assert floor > 0.05, "off-topic questions score above the fixed threshold with this model: the floor rises"
    fixed = HybridSearcher(settings.model_copy(update={"semantic_floor": "fixed"}), kb, HashingEmbedder())
    assert fixed.semantic_floor() == 0.05
    off = HybridSearcher(settings.model_copy(update={"semantic_threshold": 0.0}), kb, HashingEmbedder())
    assert off.semantic_floor() == 0.0
    assert searcher.semantic_search_many(["今天天气怎么样"]) == [[]]
    on_topic = searcher.semantic_search_many(["低浓度阿托品的副作用有畏光和近视力下降"])[0]
    assert on_topic and all(sim >= floor for _, sim in on_topic)
