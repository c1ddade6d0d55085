"""Hybrid search over a ClinCite knowledge base: jieba-BM25 (bm25s) + semantic (sentence-transformers + Chroma).

    searcher = HybridSearcher(get_settings())
    hits = await searcher.search("低浓度阿托品的副作用")            # one query
    per_query = await searcher.search_many(["…", "…"])             # one batched embedding call

jieba is initialised once with the domain dictionary in `lexicon/`; the BM25 index is the one `ingest.py` saved in the
KB directory (memory-mapped, never re-tokenised on open); the embedding model loads lazily, once. When it cannot be
loaded, search runs BM25-only and `searcher.warning` says how to fix it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

from kb import Chunk, KnowledgeBase
from settings import PROJECT_DIR, Settings

log = logging.getLogger("clincite.search")

LEXICON_DIR = PROJECT_DIR / "lexicon"
BM25_K1 = 1.5
BM25_B = 0.75
RRF_K = 60  # reciprocal-rank fusion constant: ranks, not raw scores, decide the merged order
QUERY_CACHE_SIZE = 2048
# bge-*-zh models are trained with this instruction in front of short queries (not in front of passages).
BGE_ZH_QUERY_INSTRUCTION = "为这个句子生成表示以用于检索相关文章："

SearchMode = Literal["hybrid", "bm25", "semantic"]


class Hit(BaseModel):
    """A retrieved chunk with the scores of the retrievers that found it."""

    chunk_id: str
    source: str
    title: str
    heading_path: list[str]
    text: str
    bm25: float | None = None
    semantic: float | None = None
    found_by: list[str]
    score: float = 0.0  # fused (reciprocal-rank) score that orders merged hits


# ---------------------------------------------------------------------------------------------------------------
# Tokenising
# ---------------------------------------------------------------------------------------------------------------

_PUNCT_OR_SPACE = re.compile(r"^[\s\W_]+$", re.UNICODE)


class Tokenizer:
    """jieba with the ophthalmology user dictionary, stop-words removed, ASCII lower-cased."""

    def __init__(self, lexicon_dir: Path = LEXICON_DIR):
        import jieba

        jieba.setLogLevel(logging.WARNING)
        self._jieba = jieba.Tokenizer()
        self._jieba.initialize()
        userdict = lexicon_dir / "userdict.txt"
        if userdict.exists():
            self._jieba.load_userdict(str(userdict))
        stopfile = lexicon_dir / "stopwords.txt"
        self.stopwords = (
            {w.strip() for w in stopfile.read_text(encoding="utf-8").splitlines() if w.strip()}
            if stopfile.exists() else set()
        )
        self.synonyms = load_synonyms(lexicon_dir / "synonyms.json")

    def tokenize(self, text: str) -> list[str]:
        tokens = []
        for token in self._jieba.cut_for_search(text):
            token = token.strip().lower()
            if token and token not in self.stopwords and not _PUNCT_OR_SPACE.match(token):
                tokens.append(token)
        return tokens

    def words(self, text: str) -> list[str]:
        """Plain jieba segmentation with the domain dictionary (no stop-word removal)."""
        return self._jieba.lcut(text)

    def tokenize_many(self, texts: list[str]) -> list[list[str]]:
        return [self.tokenize(t) for t in texts]

    def expand_query(self, query: str) -> str:
        """Append the synonyms and abbreviations of every term the query mentions (OK镜 → 角膜塑形镜 …)."""
        return expand_with_synonyms(query, self.synonyms)


def load_synonyms(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    groups = json.loads(path.read_text(encoding="utf-8"))
    return [[str(term) for term in group if str(term).strip()] for group in groups if len(group) > 1]


def expand_with_synonyms(query: str, groups: list[list[str]]) -> str:
    lowered = query.lower()
    extra: list[str] = []
    for group in groups:
        if any(_mentions(lowered, term.lower()) for term in group):
            extra.extend(t for t in group if t.lower() not in lowered and t not in extra)
    return f"{query} {' '.join(extra)}" if extra else query


def _mentions(text: str, term: str) -> bool:
    # ASCII abbreviations (AL, IOP, CNV) only count as whole words, so "AL" does not fire inside "VAL".
    if term.isascii():
        return re.search(rf"(?<![a-z0-9]){re.escape(term)}(?![a-z0-9])", text) is not None
    return term in text


@lru_cache(maxsize=1)
def get_tokenizer() -> Tokenizer:
    """The process-wide tokenizer: every extra jieba dictionary costs ~0.9 s and ~70 MB."""
    return Tokenizer()


# ---------------------------------------------------------------------------------------------------------------
# Embeddings
# ---------------------------------------------------------------------------------------------------------------


class EmbeddingUnavailable(RuntimeError):
    """The embedding model could not be loaded; the message says how to fix it (in Chinese and English)."""


def embedding_fix_message(model: str, error: BaseException) -> str:
    """What a clinic's IT person needs to read (in Chinese); the English details go to the log."""
    return (
        f"语义检索不可用：无法加载向量模型 “{model}”（{type(error).__name__}: {error}），当前仅使用 BM25 关键词检索。"
        f"修复方法：在能联网的电脑上运行 `python -c \"from sentence_transformers import SentenceTransformer as S; "
        f"S('{model}').save('bge-small-zh')\"`，把生成的 bge-small-zh 文件夹拷到本机，在 .env 中设置 "
        f"EMBEDDING_MODEL=该文件夹的绝对路径，然后运行 `python ingest.py 文档目录/` 补建向量。"
    )


class Embedder:
    """A sentence-transformers model, loaded lazily once, with a query-embedding cache."""

    def __init__(self, model: str, device: str = "cpu", batch_size: int = 32):
        self.model_name = model
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._error: EmbeddingUnavailable | None = None
        self._load_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.query_instruction = BGE_ZH_QUERY_INSTRUCTION if _wants_bge_zh_instruction(model) else ""

    @property
    def error(self) -> EmbeddingUnavailable | None:
        return self._error

    def load(self):
        """Load the model (once). Raises EmbeddingUnavailable with a fix-it message when it cannot be loaded."""
        with self._load_lock:
            if self._model is not None:
                return self._model
            if self._error is not None:
                raise self._error
            try:
                self._model = self._load_model()
            except Exception as exc:  # any load failure (no network, bad path, corrupt files) → BM25-only
                self._error = EmbeddingUnavailable(embedding_fix_message(self.model_name, exc))
                log.warning("Embedding model %r unavailable (%s: %s); search is BM25-only. Download it on a machine "
                            "with internet, copy the folder here and point EMBEDDING_MODEL at it.",
                            self.model_name, type(exc).__name__, exc)
                raise self._error from exc
            return self._model

    def _load_model(self):
        """A local folder, the local Hugging Face cache, or a download — the last only when the hub answers.

        Without a network, sentence-transformers spends over a minute in retries before it gives up; a 3-second
        reachability check turns that into an immediate, explained BM25-only fallback.
        """
        local = Path(self.model_name).expanduser()
        looks_like_path = self.model_name.startswith((".", "/", "~")) or local.exists()
        if looks_like_path and not local.exists():
            raise FileNotFoundError(f"folder not found: {local}")
        from huggingface_hub import try_to_load_from_cache

        cached = not looks_like_path and isinstance(try_to_load_from_cache(self.model_name, "modules.json"), str)
        if not looks_like_path and not cached and not _hub_reachable():
            raise ConnectionError("the model is not in the local cache and the Hugging Face hub cannot be reached")
        from sentence_transformers import SentenceTransformer  # ~8 s import: only here, only once

        return SentenceTransformer(str(local) if looks_like_path else self.model_name, device=self.device,
                                   local_files_only=looks_like_path or cached or _offline_hub())

    def available(self) -> bool:
        try:
            self.load()
            return True
        except EmbeddingUnavailable:
            return False

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        model = self.load()
        return model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        """One batched call for all queries not in the cache."""
        with self._cache_lock:
            known = {q: self._cache[q] for q in queries if q in self._cache}
        missing = list(dict.fromkeys(q for q in queries if q not in known))
        if missing:
            model = self.load()
            vectors = model.encode([self.query_instruction + q for q in missing], batch_size=self.batch_size,
                                   normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
            known.update(zip(missing, vectors))
        with self._cache_lock:
            for q in queries:
                self._cache[q] = known[q]
                self._cache.move_to_end(q)
            while len(self._cache) > QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return np.stack([known[q] for q in queries]) if queries else np.zeros((0, 0))


def _offline_hub() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Can we open a TCP connection to the Hugging Face endpoint (HF_ENDPOINT) within `timeout` seconds?"""
    if _offline_hub():
        return False
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    try:
        with socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout):
            return True
    except OSError:
        return False


def _wants_bge_zh_instruction(model: str) -> bool:
    name = model.lower()
    return "bge" in name and "zh" in name and "m3" not in name


_EMBEDDERS: dict[tuple[str, str], Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(settings: Settings) -> Embedder:
    """The process-wide embedder of the configured model (loaded lazily on first use)."""
    key = (settings.embedding_model, settings.embedding_device)
    with _EMBEDDERS_LOCK:
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = Embedder(settings.embedding_model, settings.embedding_device,
                                       settings.embedding_batch_size)
        return _EMBEDDERS[key]


# ---------------------------------------------------------------------------------------------------------------
# BM25
# ---------------------------------------------------------------------------------------------------------------


class BM25Index:
    """A bm25s index over jieba tokens, saved in the KB directory with the chunk ids it covers.

    `method="atire", idf_method="robertson"` ranks exactly like `rank_bm25.BM25Okapi(epsilon=0)`, the reference.
    """

    def __init__(self, retriever, chunk_ids: list[str], version: int):
        self._retriever = retriever
        self.chunk_ids = chunk_ids
        self.version = version

    @classmethod
    def build(cls, chunks: list[Chunk], tokenizer: Tokenizer, version: int) -> "BM25Index":
        bm25s = _import_bm25s()
        corpus_tokens = tokenizer.tokenize_many([c.index_text for c in chunks])
        retriever = bm25s.BM25(method="atire", idf_method="robertson", k1=BM25_K1, b=BM25_B)
        if chunks:
            retriever.index(_as_tokenized(corpus_tokens), show_progress=False)
        return cls(retriever if chunks else None, [c.id for c in chunks], version)

    def save(self, directory: Path) -> None:
        """Write to a temporary folder, then swap it in: a crash never leaves a half-written index."""
        tmp = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if self._retriever is not None:
            self._retriever.save(str(tmp))
        (tmp / "clincite.json").write_text(
            json.dumps({"version": self.version, "chunk_ids": self.chunk_ids}), encoding="utf-8"
        )
        old = directory.with_name(directory.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if directory.exists():
            directory.rename(old)
        tmp.rename(directory)
        shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, directory: Path) -> "BM25Index | None":
        meta_file = directory / "clincite.json"
        if not meta_file.exists():
            return None
        bm25s = _import_bm25s()
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        retriever = bm25s.BM25.load(str(directory), mmap=True) if meta["chunk_ids"] else None
        return cls(retriever, meta["chunk_ids"], int(meta["version"]))

    def top_k(self, query_tokens: list[str], k: int, threshold: float) -> list[tuple[str, float]]:
        if self._retriever is None:
            return []
        vocab = self._retriever.vocab_dict
        ids = [vocab[t] for t in query_tokens if t in vocab]
        if not ids:
            return []
        scores = self._retriever.get_scores(ids)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > threshold]


def _import_bm25s():
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its own logger to DEBUG on import
    return bm25s


def _as_tokenized(corpus_tokens: list[list[str]]):
    """Intern tokens as integer ids (8× smaller than raw strings, and faster to query)."""
    bm25s = _import_bm25s()
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus_tokens]
    return bm25s.tokenization.Tokenized(ids=ids, vocab=vocab)


# ---------------------------------------------------------------------------------------------------------------
# The searcher
# ---------------------------------------------------------------------------------------------------------------


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


def quiet_libraries() -> None:
    """Command-line runs show our lines, not the progress bars and debug logs of the libraries underneath."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("bm25s", "chromadb", "httpx", "sentence_transformers", "transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)
