"""The bm25s index over jieba tokens, saved in the KB directory with the chunk ids it covers."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np

from clincite.shapes import Chunk
from clincite.tokenizer import Tokenizer

BM25_K1 = 1.5
BM25_B = 0.75



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

