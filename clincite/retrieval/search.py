"""Hybrid search over a ClinCite knowledge base: jieba-BM25 (bm25s) + semantic (sentence-transformers + Chroma).

    searcher = HybridSearcher(settings)
    hits = await searcher.search("低浓度阿托品的副作用")            # one query
    per_query = await searcher.search_many(["…", "…"])             # one batched embedding call
    per_query.bm25_only, per_query.notice, per_query.degradation   # what went wrong for THIS call, if anything

The app only reads the KB: `ingest.py` (the only writer) publishes a BM25 index per KB version; the searcher
memory-maps the published one and never builds or saves an index. When a newer version is published it loads it,
and a fresh Chroma view, in a background thread and swaps them in; questions meanwhile use the old view.

Degrade, don't fail: when the embedding model cannot be loaded, or the vector store errors or times out, that call
runs BM25-only and says so (`SearchResults`); the store is tried again after VECTOR_STORE_RETRY seconds, so search
recovers by itself when it comes back. `searcher.stats` counts it all.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from clincite.core.settings import Settings
from clincite.core.shapes import Chunk, Degradation, Hit
from clincite.kb.bm25 import BM25Index
from clincite.kb.embeddings import OFF_TOPIC_PROBES, BatchedQueryEncoder, Embedder, get_embedder, noise_floor
from clincite.kb.store import KnowledgeBase
from clincite.kb.vectors import StoreBeingWritten, VectorStore, ingest_writing
from clincite.retrieval.rerank import get_reranker
from clincite.text.tokenizer import get_tokenizer

log = logging.getLogger("clincite.retrieval.search")

RRF_K = 60  # reciprocal-rank fusion constant: ranks, not raw scores, decide the merged order
VIEW_CLOSE_DELAY = 30.0  # seconds an old Chroma view stays open after a swap, for searches still running on it

SearchMode = Literal["hybrid", "bm25", "semantic"]

VECTOR_STORE_DOWN_NOTICE = "向量库暂时无法连接，本次仅使用 BM25 关键词检索，结果可能不完整；恢复后会自动改回混合检索。"
KB_BEING_WRITTEN_NOTICE = "知识库正在更新（有导入正在进行），本次仅使用 BM25 关键词检索；导入完成后自动恢复混合检索。"
INGEST_RUNNING = "an ingest is writing the embedded vector store: this view loads it once the ingest ends"
BM25_MISSING_NOTICE = "关键词索引尚未建立或已损坏，本次仅使用语义检索。请管理员运行 `python ingest.py 文档目录/` 重建。"


class SearchResults(list):
    """`list[list[Hit]]`, one list per query, plus what failed during this call.

    `failed` maps a retriever ("semantic" or "bm25") to the English reason it contributed nothing; `version` is the
    published KB version the call read (what an answer made from these hits is an answer of).
    """

    def __init__(
        self,
        per_query: list[list[Hit]],
        failed: dict[str, str] | None = None,
        notice: str | None = None,
        component: str | None = None,
        version: int | None = None,
    ):
        super().__init__(per_query)
        self.version = version
        self.failed: dict[str, str] = dict(failed or {})
        self.notice = notice  # Chinese, for the clinician; None when both retrievers ran
        self.component = component  # "vector_store" | "embeddings" | "bm25_index"

    @property
    def bm25_only(self) -> bool:
        return "semantic" in self.failed

    @property
    def degradation(self) -> Degradation | None:
        if not self.failed or self.component is None:
            return None
        return Degradation(
            component=self.component,
            message=self.notice or "",
            error="; ".join(f"{k}: {v}" for k, v in self.failed.items()),
        )


@dataclass
class KBView:
    """What the searcher reads: one published BM25 index and a Chroma view opened after it was published."""

    version: int  # the published BM25 version (-1: none published)
    bm25: BM25Index | None
    vectors: VectorStore | None


class HybridSearcher:
    """BM25 and semantic search over one knowledge base, merged by chunk id."""

    def __init__(self, settings: Settings, kb: KnowledgeBase | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.kb = kb or KnowledgeBase(settings)
        self.embedder = embedder or get_embedder(settings)
        self.tokenizer = get_tokenizer()
        self._view: KBView | None = None
        self._view_lock = threading.Lock()
        self._reloading: threading.Thread | None = None
        self._last_check = -math.inf
        # Vector-store calls get their own small pool: a hung store occupies these threads, never the event loop's
        # default executor that every other to_thread() call of the app shares.
        self._vector_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="clincite-vectors")
        self._query_encoder = BatchedQueryEncoder(lambda texts: self.embedder.encode_queries(texts))
        self.reranker = get_reranker(settings)  # None: RERANKER_MODEL not set
        self._vectors_down_until = 0.0
        self._vectors_error: str | None = None
        self._topics: tuple[int, dict[str, str]] | None = None  # (KB version, source → tags)
        self._floors: dict[tuple[int, str], float] = {}  # (KB version, model) → calibrated semantic floor
        self.stats = {
            "searches": 0,
            "bm25_only_searches": 0,
            "vector_store_failures": 0,
            "kb_reloads": 0,
            "kb_reload_failures": 0,
        }

    # --- state ---
    @property
    def bm25_only(self) -> bool:
        """True while search runs BM25-only: the embedding model failed to load, or the vector store is down."""
        return self.embedder.error is not None or self.vector_store_down

    @property
    def vector_store_down(self) -> bool:
        return self._vectors_error is not None

    @property
    def warning(self) -> str | None:
        if self.embedder.error:
            return str(self.embedder.error)
        return VECTOR_STORE_DOWN_NOTICE if self.vector_store_down else None

    @property
    def version(self) -> int:
        return self.kb.catalogue.version

    @property
    def keyword_index_version(self) -> int | None:
        """The version of the BM25 index being served; None when none is loaded (search is then semantic-only)."""
        index = self._current_view().bm25
        return index.version if index is not None else None

    @property
    def serving_version(self) -> int:
        """The published KB version the searcher reads now (-1: none yet)."""
        return self._current_view().version

    def warm_up(self, with_embeddings: bool = True) -> None:
        """Load everything a first question needs: jieba, the BM25 index, Chroma, the embedding model and the
        reranker (when one is set)."""
        self.tokenizer.tokenize("预热")
        if self.reranker is not None:
            self.reranker.available()
        view = self._current_view()
        if with_embeddings and self.embedder.available() and view.vectors is not None:
            try:
                view.vectors.query(self.embedder.encode_queries(["预热"]).tolist(), 1)
            except StoreBeingWritten:  # a first-run ingest: the first question after it loads the vectors
                log.info("Vectors not warmed: an ingest is writing them")
            except Exception as exc:  # the vector store may be down at start: questions will say so
                log.warning("Vector store not reachable at warm-up (%s: %s)", type(exc).__name__, exc)

    # --- the published KB view, swapped in the background ---
    def _current_view(self) -> KBView:
        view = self._view
        if view is None:
            with self._view_lock:
                if self._view is None:
                    self._view = self._open_view()
                view = self._view
        self._maybe_refresh(view)
        return view

    def _open_view(self) -> KBView:
        pointer = self.kb.published_bm25()
        try:
            index = self.kb.load_bm25()  # with a shared catalogue: brought into this machine's bm25/ first
        except Exception as exc:  # a damaged folder: semantic search still works, a rerun of ingest repairs it
            log.error("BM25 index in %s cannot be loaded (%s: %s)", self.kb.bm25_dir, type(exc).__name__, exc)
            index = None
        if index is not None and index.tokenizer != self.tokenizer.signature:
            log.warning(
                "The keyword index of %s was cut by another tokenizer (ClinCite was upgraded since the last ingest): "
                "questions and passages may be cut differently until `python ingest.py <documents>` rebuilds it",
                self.kb.dir,
            )
        version = index.version if index is not None else (pointer or {}).get("version", -1)
        vectors = VectorStore(self.settings, self.kb.dir, self.embedder.model_name, read_only=True)
        return KBView(version=version, bm25=index, vectors=vectors)

    def _maybe_refresh(self, view: KBView) -> None:
        """At most every KB_RELOAD_INTERVAL seconds: is a newer version published? Then load it in a thread."""
        now = time.monotonic()
        if now - self._last_check < self.settings.kb_reload_interval:
            return
        self._last_check = now
        pointer = self.kb.published_bm25()
        if pointer is None or pointer.get("version") == view.version:
            return
        with self._view_lock:
            if self._reloading is not None and self._reloading.is_alive():
                return
            self._reloading = threading.Thread(target=self._reload, name="clincite-kb-reload", daemon=True)
            self._reloading.start()

    def refresh(self, wait: bool = True) -> int:
        """Check for a newly published KB version now (tests, admin); returns the version being served."""
        self._last_check = -math.inf  # (monotonic time starts near 0 at boot: 0.0 would not be "long ago")
        self._current_view()
        thread = self._reloading
        if wait and thread is not None:
            thread.join()
        return self._current_view().version

    def _reload(self) -> None:
        started = time.perf_counter()
        if ingest_writing(self.settings, self.kb.dir):  # a later ingest began: its end publishes again
            log.info("A newer KB version waits: an ingest is writing the vectors")
            return
        try:
            new = self._open_view()
            if new.vectors is not None and self.embedder.error is None and self.embedder.loaded:
                # The first query of a fresh Chroma view loads its HNSW index: pay that here, not in a question.
                try:
                    new.vectors.query(self.embedder.encode_queries(["预热"]).tolist(), 1)
                except StoreBeingWritten:
                    raise
                except Exception as exc:
                    log.warning("New vector view not warmed (%s: %s)", type(exc).__name__, exc)
        except StoreBeingWritten:  # another ingest began after this version was published: the next check retries
            log.info("KB version %s not swapped in yet: an ingest is writing the vectors", new.version)
            new.vectors.close()
            return
        except Exception:
            self.stats["kb_reload_failures"] += 1
            log.exception("Loading the newly published KB failed; the previous version keeps serving")
            return
        with self._view_lock:
            old, self._view = self._view, new
        self.stats["kb_reloads"] += 1
        log.warning(
            "KB version %s swapped in (was %s) in %.2f s",
            new.version,
            old.version if old else None,
            time.perf_counter() - started,
        )
        if old is not None and old.vectors is not None:
            timer = threading.Timer(VIEW_CLOSE_DELAY, old.vectors.close)
            timer.daemon = True
            timer.start()

    def _bm25_index(self) -> BM25Index | None:
        """The published index being served (None when ingest has not published one)."""
        return self._current_view().bm25

    # --- retrievers ---
    def term_stats(self) -> BM25Index | None:
        """The served BM25 index, for what it knows of the KB's vocabulary (idf): the offline judge weighs by it."""
        return self._current_view().bm25

    def section_openings(self, hits: list[Hit]) -> dict[str, str]:
        """chunk id → the opening passage of the section it carries on (`Catalogue.section_openings`)."""
        return self.kb.catalogue.section_openings([h.chunk_id for h in hits])

    def document_topics(self, hits: list[Hit]) -> dict[str, str]:
        """source → what its author tagged the whole document with (`Catalogue.document_topics`), read once per KB
        version."""
        version = self.version
        if self._topics is None or self._topics[0] != version:
            self._topics = (version, self.kb.catalogue.document_topics())
        topics = self._topics[1]
        return {h.source: topics[h.source] for h in hits if h.source in topics}

    def bm25_search_many(
        self, queries: list[str], view: KBView | None = None, depth: int | None = None
    ) -> list[list[tuple[str, float]]]:
        index = (view or self._current_view()).bm25
        if index is None:
            return [[] for _ in queries]
        return [
            index.top_k(self.tokenizer.query_groups(q), depth or self.settings.bm25_top_k, self.settings.bm25_threshold)
            for q in queries
        ]

    def _encode(self, queries: list[str]):
        return self.embedder.encode_queries(self._expanded(queries))

    def _expanded(self, queries: list[str]) -> list[str]:
        return [self.tokenizer.expand_query(q) for q in queries]

    def _query_vectors(self, view: KBView, vectors, depth: int | None = None) -> list[list[tuple[str, float]]]:
        results = view.vectors.query(vectors.tolist(), depth or self.settings.semantic_top_k)
        floor = self.semantic_floor(view)
        return [[(cid, sim) for cid, sim in r if sim >= floor] for r in results]

    def semantic_floor(self, view: KBView | None = None) -> float:
        """SEMANTIC_THRESHOLD, raised (SEMANTIC_FLOOR=calibrated) to what this model scores off-topic questions in this
        KB: a fixed cosine means different things for different models. Measured once per KB version; 0 = no floor."""
        threshold = self.settings.semantic_threshold
        if threshold <= 0 or self.settings.semantic_floor != "calibrated":
            return threshold
        view = view or self._current_view()
        key = (view.version, self.embedder.model_name)
        if key not in self._floors:
            probes = view.vectors.query(self.embedder.encode_queries(OFF_TOPIC_PROBES).tolist(), 1)
            self._floors[key] = noise_floor([sims[0][1] for sims in probes if sims])
            log.info(
                "Semantic floor for %s on KB version %s: off-topic noise %.3f, SEMANTIC_THRESHOLD %.3f",
                self.embedder.model_name,
                view.version,
                self._floors[key],
                threshold,
            )
        return max(threshold, self._floors[key])

    def semantic_search_many(self, queries: list[str]) -> list[list[tuple[str, float]]]:
        """Semantic search without the fallback (raises when the vector store fails)."""
        if not queries or not self.embedder.available():
            return [[] for _ in queries]
        return self._query_vectors(self._current_view(), self._encode(queries))

    async def _semantic(
        self, view: KBView, queries: list[str], depth: int | None = None
    ) -> tuple[list[list[tuple[str, float]]], str | None]:
        """Semantic hits, or ([], reason) when the vector store is down: the caller goes on BM25-only."""
        empty: list[list[tuple[str, float]]] = [[] for _ in queries]
        if not await asyncio.to_thread(self.embedder.available):
            return empty, f"embedding model unavailable: {self.embedder.error}"
        if self._vectors_error is not None and time.monotonic() < self._vectors_down_until:
            return (
                empty,
                f"vector store down (retry after {self.settings.vector_store_retry:.0f} s): {self._vectors_error}",
            )
        vectors = await self._query_encoder.encode(self._expanded(queries))
        loop = asyncio.get_running_loop()
        try:
            found = await asyncio.wait_for(
                loop.run_in_executor(self._vector_pool, self._query_vectors, view, vectors, depth),
                self.settings.vector_store_timeout,
            )
        except StoreBeingWritten:  # not a failure of the store: the next question looks again
            return empty, INGEST_RUNNING
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self.stats["vector_store_failures"] += 1
            if self._vectors_error is None:
                log.error(
                    "Vector store unreachable (%s); searching BM25-only, retrying in %.0f s",
                    reason,
                    self.settings.vector_store_retry,
                )
            self._vectors_error = reason
            self._vectors_down_until = time.monotonic() + self.settings.vector_store_retry
            return empty, f"vector store down: {reason}"
        if self._vectors_error is not None:
            log.warning("Vector store reachable again: hybrid search restored")
            self._vectors_error = None
        return found, None

    # --- reranking ---
    async def rerank(self, question: str, hits: list[Hit]) -> list[Hit]:
        """The hits best first against the whole question (RERANKER_MODEL), on the reranker's own thread; the same
        hits when no reranker is set or it cannot be loaded."""
        if self.reranker is None or len(hits) < 2:
            return hits
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.reranker.executor, self.reranker.order, question, hits)

    @property
    def reranker_status(self) -> dict[str, str | None]:
        """For /metrics: the reranker's model, and why it is off (not set, or cannot be loaded)."""
        if self.reranker is None:
            return {"reranker_model": None, "reranker_problem": None}
        return {
            "reranker_model": self.reranker.model_name,
            "reranker_problem": self.reranker.error and str(self.reranker.error),
        }

    # --- public API ---
    async def search(self, query: str, mode: SearchMode = "hybrid", depth: int | None = None) -> list[Hit]:
        return (await self.search_many([query], mode, depth))[0]

    async def search_many(
        self, queries: list[str], mode: SearchMode = "hybrid", depth: int | None = None
    ) -> SearchResults:
        """Search every query; BM25 and semantic run concurrently, the embedding is one batched call."""
        if not queries:
            return SearchResults([])
        view = await asyncio.to_thread(self._current_view)
        empty: list[list[tuple[str, float]]] = [[] for _ in queries]
        bm25_task = (
            asyncio.to_thread(self.bm25_search_many, queries, view, depth) if mode != "semantic" else _value(empty)
        )
        sem_task = self._semantic(view, queries, depth) if mode != "bm25" else _value((empty, None))
        bm25_results, (sem_results, sem_failure) = await asyncio.gather(bm25_task, sem_task)
        failed: dict[str, str] = {}
        notice = component = None
        if sem_failure and mode != "bm25":
            failed["semantic"] = sem_failure
            if self.embedder.error is not None:
                notice, component = str(self.embedder.error), "embeddings"
            elif sem_failure == INGEST_RUNNING:
                notice, component = KB_BEING_WRITTEN_NOTICE, "vector_store"
            else:
                notice, component = VECTOR_STORE_DOWN_NOTICE, "vector_store"
        if view.bm25 is None and mode != "semantic" and await asyncio.to_thread(self.kb.catalogue.document_count):
            failed["bm25"] = "no BM25 index published for this KB: run ingest"
            notice, component = notice or BM25_MISSING_NOTICE, component or "bm25_index"
        self.stats["searches"] += 1
        self.stats["bm25_only_searches"] += "semantic" in failed
        merged = await asyncio.to_thread(self._merge, bm25_results, sem_results)  # catalogue reads off the loop
        return SearchResults(merged, failed, notice, component, view.version)

    def _merge(self, bm25_results, sem_results) -> list[list[Hit]]:
        wanted = {cid for r in (*bm25_results, *sem_results) for cid, _ in r}
        chunks = self.kb.catalogue.get_chunks(sorted(wanted))
        return [merge_hits(b, s, chunks) for b, s in zip(bm25_results, sem_results)]


def merge_hits(bm25: list[tuple[str, float]], semantic: list[tuple[str, float]], chunks: dict[str, Chunk]) -> list[Hit]:
    """De-duplicate by chunk id, keep both scores, order by reciprocal-rank fusion."""
    hits: dict[str, Hit] = {}
    for retriever, ranked in (("bm25", bm25), ("semantic", semantic)):
        for rank, (cid, score) in enumerate(ranked):
            chunk = chunks.get(cid)
            if chunk is None:  # a vector whose chunk was replaced or removed: not part of the KB any more
                continue
            hit = hits.get(cid) or Hit(
                chunk_id=cid,
                source=chunk.source,
                title=chunk.title,
                heading_path=chunk.heading_path,
                pages=chunk.pages,
                text=chunk.text,
                found_by=[],
                segments=chunk.segments,
            )
            setattr(hit, retriever, round(score, 4))
            hit.found_by.append(retriever)
            hit.score += 1.0 / (RRF_K + rank + 1)
            hits[cid] = hit
    return merge_duplicates(sorted(hits.values(), key=lambda h: -h.score))


def merge_duplicates(hits: list[Hit]) -> list[Hit]:
    """The same passage in two documents (a guideline section copied into another file) takes one result slot, not
    two: the better-ranked copy stays, with the retrievers and score of both."""
    kept: dict[str, Hit] = {}
    for hit in hits:
        key = "".join(hit.text.split())
        first = kept.get(key)
        if first is None:
            kept[key] = hit
            continue
        first.score += hit.score
        first.found_by = list(dict.fromkeys([*first.found_by, *hit.found_by]))
        log.debug("Merged a duplicated passage: %s == %s", hit.chunk_id, first.chunk_id)
    return list(kept.values())


async def _value(value):
    return value
