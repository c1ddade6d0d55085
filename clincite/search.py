"""Hybrid search over a ClinCite knowledge base: jieba-BM25 (bm25s) + semantic (sentence-transformers + Chroma).

    searcher = HybridSearcher(settings)
    hits = await searcher.search("低浓度阿托品的副作用")            # one query
    per_query = await searcher.search_many(["…", "…"])             # one batched embedding call

The BM25 index is the one `ingest.py` saved in the KB directory (memory-mapped, never re-tokenised on open); the
embedding model loads lazily, once. When it cannot be loaded, search runs BM25-only and `searcher.warning` says why.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Literal

from clincite.bm25 import BM25Index
from clincite.embeddings import Embedder, get_embedder
from clincite.kb import KnowledgeBase
from clincite.settings import Settings
from clincite.shapes import Chunk, Hit
from clincite.tokenizer import get_tokenizer

log = logging.getLogger("clincite.search")

RRF_K = 60  # reciprocal-rank fusion constant: ranks, not raw scores, decide the merged order

SearchMode = Literal["hybrid", "bm25", "semantic"]



class HybridSearcher:
    """BM25 and semantic search over one knowledge base, merged by chunk id."""

    def __init__(self, settings: Settings, kb: KnowledgeBase | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.kb = kb or KnowledgeBase(settings)
        self.embedder = embedder or get_embedder(settings)
        self.tokenizer = get_tokenizer()
        self._bm25: BM25Index | None = None
        self._bm25_lock = threading.Lock()

    # --- state ---
    @property
    def bm25_only(self) -> bool:
        """True once the embedding model has failed to load."""
        return self.embedder.error is not None

    @property
    def warning(self) -> str | None:
        return str(self.embedder.error) if self.embedder.error else None

    @property
    def version(self) -> int:
        return self.kb.catalogue.version

    def warm_up(self, with_embeddings: bool = True) -> None:
        """Load everything a first question needs: jieba, the BM25 index, Chroma and the embedding model."""
        self.tokenizer.tokenize("预热")
        self._bm25_index()
        if with_embeddings and self.embedder.available():
            self.kb.vectors(self.settings.embedding_model).count()
            self.embedder.encode_queries(["预热"])

    def _bm25_index(self) -> BM25Index:
        """The saved index; rebuilt from the catalogue if it is missing or older than the catalogue."""
        version = self.kb.catalogue.version
        with self._bm25_lock:
            if self._bm25 is None or self._bm25.version != version:
                index = BM25Index.load(self.kb.bm25_dir)
                if index is None or index.version != version:
                    log.info("BM25 index missing or stale (catalogue version %s): rebuilding", version)
                    index = BM25Index.build(self.kb.catalogue.all_chunks(), self.tokenizer, version)
                    index.save(self.kb.bm25_dir)
                self._bm25 = index
            return self._bm25

    # --- retrievers ---
    def bm25_search_many(self, queries: list[str]) -> list[list[tuple[str, float]]]:
        index = self._bm25_index()
        return [
            index.top_k(self.tokenizer.tokenize(self.tokenizer.expand_query(q)), self.settings.bm25_top_k,
                        self.settings.bm25_threshold)
            for q in queries
        ]

    def semantic_search_many(self, queries: list[str]) -> list[list[tuple[str, float]]]:
        if not queries or not self.embedder.available():
            return [[] for _ in queries]
        vectors = self.embedder.encode_queries([self.tokenizer.expand_query(q) for q in queries])
        store = self.kb.vectors(self.settings.embedding_model)
        results = store.query(vectors.tolist(), self.settings.semantic_top_k)
        return [[(cid, sim) for cid, sim in r if sim >= self.settings.semantic_threshold] for r in results]

    # --- public API ---
    async def search(self, query: str, mode: SearchMode = "hybrid") -> list[Hit]:
        return (await self.search_many([query], mode))[0]

    async def search_many(self, queries: list[str], mode: SearchMode = "hybrid") -> list[list[Hit]]:
        """Search every query; BM25 and semantic run concurrently, the embedding is one batched call."""
        if not queries:
            return []
        empty: list[list[tuple[str, float]]] = [[] for _ in queries]
        bm25_task = asyncio.to_thread(self.bm25_search_many, queries) if mode != "semantic" else _value(empty)
        sem_task = asyncio.to_thread(self.semantic_search_many, queries) if mode != "bm25" else _value(empty)
        bm25_results, sem_results = await asyncio.gather(bm25_task, sem_task)
        return self._merge(bm25_results, sem_results)

    def _merge(self, bm25_results, sem_results) -> list[list[Hit]]:
        wanted = {cid for r in (*bm25_results, *sem_results) for cid, _ in r}
        chunks = self.kb.catalogue.get_chunks(sorted(wanted))
        return [merge_hits(b, s, chunks) for b, s in zip(bm25_results, sem_results)]


def merge_hits(bm25: list[tuple[str, float]], semantic: list[tuple[str, float]],
               chunks: dict[str, Chunk]) -> list[Hit]:
    """De-duplicate by chunk id, keep both scores, order by reciprocal-rank fusion."""
    hits: dict[str, Hit] = {}
    for retriever, ranked in (("bm25", bm25), ("semantic", semantic)):
        for rank, (cid, score) in enumerate(ranked):
            chunk = chunks.get(cid)
            if chunk is None:  # a vector whose chunk was replaced or removed: not part of the KB any more
                continue
            hit = hits.get(cid) or Hit(chunk_id=cid, source=chunk.source, title=chunk.title,
                                       heading_path=chunk.heading_path, text=chunk.text, found_by=[])
            setattr(hit, retriever, round(score, 4))
            hit.found_by.append(retriever)
            hit.score += 1.0 / (RRF_K + rank + 1)
            hits[cid] = hit
    return sorted(hits.values(), key=lambda h: -h.score)


async def _value(value):
    return value
