"""The sentence-transformers embedding model: loaded lazily once, with a query cache and a BM25-only fallback."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from cachetools import LRUCache

from clincite.core.settings import Settings

log = logging.getLogger("clincite.kb.embeddings")

QUERY_CACHE_SIZE = 2048
# bge-*-zh models are trained with this instruction in front of short queries (not in front of passages).
BGE_ZH_QUERY_INSTRUCTION = "为这个句子生成表示以用于检索相关文章："
E5_PROMPTS = ("query: ", "passage: ")
# Questions no clinical guideline answers: what this model scores them against a KB is its noise level there.
OFF_TOPIC_PROBES = [
    "今天天气怎么样",
    "红烧肉怎么做",
    "推荐一部好看的电影",
    "股票怎么买",
    "足球比赛几点开始",
    "What is the weather like today?",
    "如何办理护照",
    "周末去哪里旅游比较好",
]
NOISE_MARGIN = 0.02  # a semantic hit must beat the best off-topic probe by this much


class EmbeddingUnavailable(RuntimeError):
    """The embedding model could not be loaded; the message says how to fix it (in Chinese and English)."""


def embedding_fix_message(model: str, error: BaseException) -> str:
    """What a clinic's IT person needs to read (in Chinese); the English details go to the log."""
    return (
        f"语义检索不可用：无法加载向量模型 “{model}”（{type(error).__name__}: {error}），当前仅使用 BM25 关键词检索。"
        f'修复方法：在能联网的电脑上运行 `python -c "from sentence_transformers import SentenceTransformer as S; '
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
        self._cache: LRUCache[str, np.ndarray] = LRUCache(QUERY_CACHE_SIZE)
        self._cache_lock = threading.Lock()
        # The model's own query/document prompts (its config's "prompts"), else its family's; set when it loads.
        self.query_prompt, self.document_prompt = family_prompts(model)

    @property
    def error(self) -> EmbeddingUnavailable | None:
        return self._error

    @property
    def loaded(self) -> bool:
        """The model is in memory (loading it takes seconds: a caller that must not wait for that checks this)."""
        return self._model is not None

    def load(self):
        """Load the model (once). Raises EmbeddingUnavailable with a fix-it message when it cannot be loaded."""
        with self._load_lock:
            if self._model is not None:
                return self._model
            if self._error is not None:
                raise self._error
            try:
                self._model = self._load_model()
                self.query_prompt, self.document_prompt = model_prompts(self._model, self.model_name)
            except Exception as exc:  # any load failure (no network, bad path, corrupt files) → BM25-only
                self._error = EmbeddingUnavailable(embedding_fix_message(self.model_name, exc))
                log.warning(
                    "Embedding model %r unavailable (%s: %s); search is BM25-only. Download it on a machine "
                    "with internet, copy the folder here and point EMBEDDING_MODEL at it.",
                    self.model_name,
                    type(exc).__name__,
                    exc,
                )
                raise self._error from exc
            return self._model

    def _load_model(self):
        from sentence_transformers import (
            SentenceTransformer,  # ~8 s import: only here, only once
        )

        source, local_only = model_source(self.model_name, "modules.json")
        return SentenceTransformer(source, device=self.device, local_files_only=local_only)

    def available(self) -> bool:
        try:
            self.load()
            return True
        except EmbeddingUnavailable:
            return False

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        model = self.load()
        return model.encode(
            texts,
            prompt=self.document_prompt or None,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        """One batched call for all queries not in the cache."""
        with self._cache_lock:
            known = {q: self._cache[q] for q in queries if q in self._cache}
        missing = list(dict.fromkeys(q for q in queries if q not in known))
        if missing:
            model = self.load()
            vectors = model.encode(
                missing,
                prompt=self.query_prompt or None,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            known.update(zip(missing, vectors))
        with self._cache_lock:
            for q in queries:
                self._cache[q] = known[q]
        return np.stack([known[q] for q in queries]) if queries else np.zeros((0, 0))


class BatchedQueryEncoder:
    """Query embeddings of concurrent searches, encoded together on one thread of their own.

        encoder = BatchedQueryEncoder(embedder.encode_queries)
        vectors = await encoder.encode(["低浓度阿托品 副作用"])     # rows in the order of the queries

    Each search used to encode its own queries in a thread of the shared executor: twenty clinicians at once meant
    six encodes side by side, each asking torch for both cores (136 ms each instead of ~10 ms alone), with the cheap
    steps of every other search queued behind them. Here one thread encodes whatever is waiting as one batch.
    """

    def __init__(self, encode_queries: Callable[[list[str]], np.ndarray]):
        self._encode_queries = encode_queries
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clincite-encode")
        self._waiting: list[tuple[list[str], asyncio.Future]] = []
        self._drainer: asyncio.Task | None = None

    async def encode(self, queries: list[str]) -> np.ndarray:
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((list(queries), future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiting:
            batch, self._waiting = self._waiting, []
            texts = [query for queries, _ in batch for query in queries]
            try:
                vectors = await loop.run_in_executor(self._executor, self._encode_queries, texts)
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for queries, future in batch:
                if not future.done():  # a search cancelled meanwhile (Stop) no longer waits for its rows
                    future.set_result(vectors[start : start + len(queries)])
                start += len(queries)


class HashingEmbedder(Embedder):
    """A deterministic embedder without a model: character 1-3-grams hashed into a normalised 256-d vector.

    Same interface and query cache as `Embedder` (only the model differs), so the code above it runs unchanged. For
    the logic tests and pipeline benchmarks: no torch import, no download, the same vector on every machine. It is
    lexical, not semantic (texts sharing characters are close): selectable with `EMBEDDING_MODEL=hashing-char-ngrams`
    for a test server, never a substitute for a real model.
    """

    NAME = "hashing-char-ngrams"

    def __init__(self, model: str = NAME, device: str = "cpu", batch_size: int = 32, dim: int = 256):
        super().__init__(model, device, batch_size)
        self.dim = dim

    def _load_model(self) -> _HashedNgrams:
        return _HashedNgrams(self.dim)


class _HashedNgrams:
    """The `encode` of a sentence-transformers model, computed by feature hashing (blake2b: stable across runs)."""

    NGRAMS = (1, 2, 3)

    def __init__(self, dim: int):
        self.dim = dim

    def encode(self, texts: list[str], normalize_embeddings: bool = True, **_options) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            text = "".join(text.lower().split())
            for n in self.NGRAMS:
                for i in range(len(text) - n + 1):
                    digest = hashlib.blake2b(text[i : i + n].encode("utf-8"), digest_size=8).digest()
                    value = int.from_bytes(digest, "little")
                    vectors[row, value % self.dim] += 1.0 if value >> 63 else -1.0
            norm = float(np.linalg.norm(vectors[row]))
            if norm == 0.0:  # an empty text: any fixed unit vector (cosine needs a non-zero norm)
                vectors[row, 0], norm = 1.0, 1.0
            if normalize_embeddings:
                vectors[row] /= norm
        return vectors


def model_source(name: str, marker_file: str) -> tuple[str, bool]:
    """Where a model is loaded from: (a local folder, True), (a name in the local Hugging Face cache, True), or (a name
    to download, False) — the last only when the hub answers. `marker_file` is a file every such model has.

    Without a network, sentence-transformers spends over a minute in retries before it gives up; a 3-second
    reachability check turns that into an immediate, explained fallback. Raises FileNotFoundError / ConnectionError.
    """
    local = Path(name).expanduser()
    if name.startswith((".", "/", "~")) or local.exists():
        if not local.exists():
            raise FileNotFoundError(f"folder not found: {local}")
        return str(local), True
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(name, marker_file), str):
        return name, True
    if not _hub_reachable():
        raise ConnectionError("the model is not in the local cache and the Hugging Face hub cannot be reached")
    return name, _offline_hub()


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


def family_prompts(model: str) -> tuple[str, str]:
    """(query, document) prompts a model family was trained with, for models whose config names none."""
    name = Path(model).name.lower() or model.lower()
    if "bge" in name and "zh" in name and "m3" not in name:
        return BGE_ZH_QUERY_INSTRUCTION, ""
    if "e5" in name.replace("-", " ").split() or "-e5-" in f"-{name}-":
        return E5_PROMPTS
    return "", ""


def model_prompts(model, name: str) -> tuple[str, str]:
    """The prompts in the model's sentence-transformers config (what `encode_query` / `encode_document` use), else the
    family's: e5's "query: " / "passage: ", bge-zh's instruction in front of queries only."""
    prompts = getattr(model, "prompts", None) or {}
    family_query, family_document = family_prompts(name)
    query = prompts.get("query")
    document = prompts.get("document", prompts.get("passage"))
    return (family_query if query is None else query, family_document if document is None else document)


def noise_floor(probe_similarities: list[float]) -> float:
    """The semantic floor of a model on a KB: what its best off-topic probe scores there, plus a margin.

    Cosine scales differ per model (e5 bunches at 0.8–0.95, bge-small-zh spreads wider): measured, not assumed.
    """
    return (max(probe_similarities) + NOISE_MARGIN) if probe_similarities else 0.0


_EMBEDDERS: dict[tuple[str, str], Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(settings: Settings) -> Embedder:
    """The process-wide embedder of the configured model (loaded lazily on first use)."""
    key = (settings.embedding_model, settings.embedding_device)
    with _EMBEDDERS_LOCK:
        if key not in _EMBEDDERS and settings.embedding_model == HashingEmbedder.NAME:
            _EMBEDDERS[key] = HashingEmbedder(batch_size=settings.embedding_batch_size)
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = Embedder(
                settings.embedding_model, settings.embedding_device, settings.embedding_batch_size
            )
        return _EMBEDDERS[key]
