"""Optional reranking: a cross-encoder scores each hit against the whole question, and every relevance judge reads its
hits best first ("各自最优≠整体最优": a sub-query's best passages are not always what the question needs most).

    reranker = Reranker("BAAI/bge-reranker-base")          # RERANKER_MODEL: a name in the local cache, or a folder
    ordered = reranker.order("低浓度阿托品的副作用？", hits)  # best first; the same hits when it is unavailable
    reranker.status()                                      # for /metrics: the model, or why it is off

A sentence-transformers `CrossEncoder`, loaded once on first use (the app's warm-up), on a thread of its own: the
scores of one question are computed one batch at a time and kept per (question, passage), so a passage that several
sub-queries found is scored once. When the model cannot be loaded the hits keep their fused order, the log says why
once, and /metrics shows how to fix it — like the embedding model.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from cachetools import LRUCache

from clincite.core.settings import Settings
from clincite.core.shapes import Hit
from clincite.kb.embeddings import model_source

log = logging.getLogger("clincite.retrieval.rerank")

SCORE_CACHE_SIZE = 20_000  # (question, passage) scores kept: a few hundred questions' worth
OFF_STATUS = "未启用（RERANKER_MODEL 未设置）"


class RerankerUnavailable(RuntimeError):
    """The cross-encoder could not be loaded; the message says how to fix it (in Chinese)."""


def reranker_fix_message(model: str, error: BaseException) -> str:
    return (
        f"重排模型不可用：无法加载 “{model}”（{type(error).__name__}: {error}），各相关性判断按检索融合的顺序阅读片段。"
        f'修复方法：在能联网的电脑上运行 `python -c "from sentence_transformers import CrossEncoder as C; '
        f"C('{model}').save('reranker')\"`，把生成的 reranker 文件夹拷到本机，在 .env 中设置 "
        f"RERANKER_MODEL=该文件夹的绝对路径，然后重启应用。"
    )


class Reranker:
    """A cross-encoder over (question, passage) pairs, loaded lazily once, with a bounded score cache."""

    def __init__(self, model: str, device: str = "cpu", batch_size: int = 16):
        self.model_name = model
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._error: RerankerUnavailable | None = None
        self._load_lock = threading.Lock()
        self._scores: LRUCache[tuple[str, str], float] = LRUCache(SCORE_CACHE_SIZE)
        # One thread: concurrent sub-queries are scored one batch after another (each would ask torch for every core),
        # and a passage the previous batch scored is found in the cache.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clincite-rerank")
        self.pairs_scored = 0

    @property
    def error(self) -> RerankerUnavailable | None:
        return self._error

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self):
        with self._load_lock:
            if self._model is not None:
                return self._model
            if self._error is not None:
                raise self._error
            try:
                from sentence_transformers import CrossEncoder

                source, local_only = model_source(self.model_name, "config.json")
                self._model = CrossEncoder(source, device=self.device, local_files_only=local_only)
            except Exception as exc:
                self._error = RerankerUnavailable(reranker_fix_message(self.model_name, exc))
                log.warning(
                    "Reranker %r unavailable (%s: %s); judges read hits in fused order.",
                    self.model_name,
                    type(exc).__name__,
                    exc,
                )
                raise self._error from exc
            return self._model

    def available(self) -> bool:
        try:
            self.load()
            return True
        except RerankerUnavailable:
            return False

    def scores(self, question: str, hits: list[Hit]) -> dict[str, float]:
        """chunk id → score against the question (higher is better); blocking: run it on `self.executor`."""
        model = self.load()
        missing = list(dict.fromkeys(h.chunk_id for h in hits if (question, h.chunk_id) not in self._scores))
        if missing:
            texts = {h.chunk_id: h.text for h in hits}
            pairs = [(question, texts[cid]) for cid in missing]
            predicted = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True)
            self.pairs_scored += len(pairs)
            for cid, score in zip(missing, predicted):
                self._scores[(question, cid)] = float(score)
        return {h.chunk_id: self._scores[(question, h.chunk_id)] for h in hits}

    def order(self, question: str, hits: list[Hit]) -> list[Hit]:
        """The hits best first (a stable sort: ties keep their fused order); unchanged when unavailable."""
        if not hits or not self.available():
            return hits
        scored = self.scores(question, hits)
        return sorted(hits, key=lambda h: -scored[h.chunk_id])

    @property
    def executor(self) -> ThreadPoolExecutor:
        return self._thread

    def status(self) -> str:
        return str(self._error) if self._error is not None else self.model_name


def get_reranker(settings: Settings) -> Reranker | None:
    """The reranker of RERANKER_MODEL, or None when it is not set."""
    if not settings.reranker_model.strip():
        return None
    return Reranker(settings.reranker_model.strip(), settings.reranker_device, settings.reranker_batch_size)
