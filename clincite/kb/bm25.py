"""The bm25s index over jieba tokens, saved in the KB directory with the chunk ids it covers."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from clincite.core.shapes import Chunk
from clincite.text.tokenizer import Tokenizer
from clincite.text.units import without_references

BM25_K1 = 1.5
BM25_B = 0.75
META_FILE = "clincite.json"
POINTER_FILE = "current.json"
PREFIX_WORDS = 6  # two-character words that stand in for a one-character query word
KEEP_PREVIOUS = 1  # versions kept besides the current one: a reader may still be loading the one before


class BM25Index:
    """A bm25s index over jieba tokens, saved in the KB directory with the chunk ids it covers.

    Lucene's BM25 (`method="lucene"`): idf = ln(1 + (N − n + 0.5)/(n + 0.5)), positive for every term. Robertson's
    ln((N − n + 0.5)/(n + 0.5)) is ≤ 0 for a term in half the passages or more: a one-document library (a clinic
    trying its first guideline) found nothing at all, and the topic word of every topical library ("近视" in a
    myopia library) counted against a passage. Lucene and Elasticsearch use this form for that reason.
    """

    def __init__(self, retriever, chunk_ids: list[str], version: int, tokenizer: str = ""):
        self._retriever = retriever
        self.chunk_ids = chunk_ids
        self.version = version
        self.tokenizer = tokenizer  # the signature of the tokenizer that cut it (Tokenizer.signature)
        self._prefix_index: dict[str, list[str]] | None = None

    @classmethod
    def build(cls, chunks: Iterable[Chunk], tokenizer: Tokenizer, version: int) -> BM25Index:
        """Tokenise chunk by chunk straight into integer ids: the token strings of one chunk live only while it is
        interned, so memory grows with the ids (8 bytes a token), not with jieba's strings (~60 bytes a token)."""
        bm25s = _import_bm25s()
        vocab: dict[str, int] = {}
        chunk_ids: list[str] = []
        ids: list[list[int]] = []
        if hasattr(tokenizer, "tokenize"):
            for chunk in chunks:
                chunk_ids.append(chunk.id)
                tokens = tokenizer.tokenize(without_references(chunk.index_text))
                ids.append([vocab.setdefault(t, len(vocab)) for t in tokens])
        else:  # a stand-in that hands over every chunk's tokens at once (bench/bench_retrieval.py)
            chunks = list(chunks)
            chunk_ids = [c.id for c in chunks]
            for tokens in tokenizer.tokenize_many([without_references(c.index_text) for c in chunks]):
                ids.append([vocab.setdefault(t, len(vocab)) for t in tokens])
        retriever = bm25s.BM25(method="lucene", idf_method="lucene", k1=BM25_K1, b=BM25_B)
        if chunk_ids:
            retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
        return cls(retriever if chunk_ids else None, chunk_ids, version, tokenizer.signature)

    def save(self, directory: Path) -> None:
        """Publish this index: a new version folder, then an atomic switch of `current.json` to it.

        Readers (the app) memory-map whichever version `current.json` names, so a reader never sees a half-written
        or renamed folder; only ingest (one process, under the KB's ingest lock) calls this.
        """
        directory.mkdir(parents=True, exist_ok=True)
        _remove_legacy_layout(directory)
        name = f"v{self.version:08d}-{uuid.uuid4().hex[:8]}"
        tmp = directory / f".tmp-{name}"
        tmp.mkdir()
        if self._retriever is not None:
            self._retriever.save(str(tmp))
        (tmp / META_FILE).write_text(
            json.dumps({"version": self.version, "chunk_ids": self.chunk_ids, "tokenizer": self.tokenizer}),
            encoding="utf-8",
        )
        _fsync_tree(tmp)
        tmp.rename(directory / name)
        pointer = directory / f".{POINTER_FILE}.tmp"
        with pointer.open("w", encoding="utf-8") as f:
            json.dump({"version": self.version, "dir": name, "tokenizer": self.tokenizer}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(pointer, directory / POINTER_FILE)
        _prune_versions(directory, keep={name})

    @staticmethod
    def published(directory: Path) -> dict | None:
        """`{"version": n, "dir": name, "tokenizer": signature}` of the published index, or None (cheap: one small
        file)."""
        try:
            return json.loads((directory / POINTER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    @classmethod
    def load(cls, directory: Path) -> BM25Index | None:
        """The published index (memory-mapped), or None when there is none."""
        pointer = cls.published(directory)
        if pointer is not None:
            folder = directory / pointer["dir"]
        elif (directory / META_FILE).exists():  # the layout before versioned folders
            folder = directory
        else:
            return None
        bm25s = _import_bm25s()
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        retriever = bm25s.BM25.load(str(folder), mmap=True) if meta["chunk_ids"] else None
        return cls(retriever, meta["chunk_ids"], int(meta["version"]), meta.get("tokenizer", ""))

    @property
    def size(self) -> int:
        """How many passages the index holds."""
        return len(self.chunk_ids)

    def document_frequency(self, token: str) -> int:
        """In how many passages the token occurs (0: not in this KB at all)."""
        if self._retriever is None or token not in self._retriever.vocab_dict:
            return 0
        index = self._retriever.vocab_dict[token]
        indptr = self._retriever.scores["indptr"]
        return int(indptr[index + 1] - indptr[index])

    def passages_with(self, tokens: list[str]) -> set[int]:
        """The passages (index positions) that hold every one of the tokens."""
        if self._retriever is None or not tokens:
            return set()
        found: set[int] | None = None
        for token in dict.fromkeys(tokens):
            index = self._retriever.vocab_dict.get(token)
            if index is None:
                return set()
            indptr, indices = self._retriever.scores["indptr"], self._retriever.scores["indices"]
            postings = set(indices[indptr[index] : indptr[index + 1]].tolist())
            found = postings if found is None else found & postings
            if not found:
                return set()
        return found or set()

    def idf(self, token: str) -> float:
        """Lucene's idf of the token in this KB: high for a rare term, near 0 for one in every passage."""
        n, df = max(self.size, 1), self.document_frequency(token)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, concepts: list[list[list[str]]]) -> np.ndarray | None:
        """BM25 of every passage for a query given as concepts (`Tokenizer.query_groups`): each concept counts by
        its best alternative (an alternative: the summed scores of its tokens, weighed as the concept's commonest
        name); concepts add up. None: no term of the query is in the index."""
        if self._retriever is None:
            return None
        vocab = self._retriever.vocab_dict
        total = None
        for alternatives in concepts:
            known = [
                (ids, sum(self.idf(t) for t in dict.fromkeys(tokens) if t in vocab))
                for tokens in [*alternatives, *self._prefixed(alternatives)]
                if (ids := list(dict.fromkeys(vocab[t] for t in tokens if t in vocab)))
            ]
            if not known:
                continue
            # Every name of a concept weighs like its commonest: a passage saying "角膜塑形镜" is not worth less
            # than one saying "OK镜" because fewer passages use the abbreviation.
            common = min(idf for _, idf in known)
            best = None
            for ids, idf in known:
                scores = self._retriever.get_scores(ids) * (common / idf if idf else 1.0)
                best = scores if best is None else np.maximum(best, scores, out=best)
            total = best if total is None else total + best
        return total

    def _prefixed(self, alternatives: list[list[str]]) -> list[list[str]]:
        """A one-character Chinese word (停, 洗, 戴) is rarely a token of the index, which holds 停药, 清洗, 戴镜:
        the most common two-character tokens that begin with it stand in for it."""
        out = []
        for tokens in alternatives:
            if len(tokens) == 1 and len(tokens[0]) == 1 and "\u4e00" <= tokens[0] <= "\u9fff":
                out += [[word] for word in self._words_starting(tokens[0])]
        return out

    def _words_starting(self, char: str) -> list[str]:
        if self._prefix_index is None:
            index: dict[str, list[str]] = {}
            for word in self._retriever.vocab_dict:
                if len(word) == 2 and "\u4e00" <= word[0] <= "\u9fff":
                    index.setdefault(word[0], []).append(word)
            for char_words in index.values():
                char_words.sort(key=lambda w: -self.document_frequency(w))
            self._prefix_index = index
        return self._prefix_index.get(char, [])[:PREFIX_WORDS]

    def top_k(self, concepts: list[list[list[str]]], k: int, threshold: float) -> list[tuple[str, float]]:
        """The k best passages for a query given as concepts (`Tokenizer.query_groups`)."""
        scores = self.scores(concepts)
        if scores is None:
            return []
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > threshold]


def _import_bm25s():
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its own logger to DEBUG on import
    return bm25s


def _fsync_tree(folder: Path) -> None:
    for path in folder.iterdir():
        with path.open("rb") as f:
            os.fsync(f.fileno())


def _remove_legacy_layout(directory: Path) -> None:
    """Files of the old single-folder layout and its bm25.tmp / bm25.old siblings (pre-versioning KBs)."""
    if (directory / META_FILE).exists():
        for path in directory.iterdir():
            if path.is_file() and path.name != POINTER_FILE:
                path.unlink()
    for sibling in (".tmp", ".old"):
        shutil.rmtree(directory.with_name(directory.name + sibling), ignore_errors=True)


def _prune_versions(directory: Path, keep: set[str]) -> None:
    """Remove version folders older than the current one and the one before it, and crashed temporary folders.

    A reader that memory-mapped a removed version keeps its pages (Linux keeps unlinked files alive while mapped).
    """
    versions = sorted(p for p in directory.iterdir() if p.is_dir() and p.name.startswith("v"))
    old = [p for p in versions if p.name not in keep]
    for path in old[: max(0, len(old) - KEEP_PREVIOUS)]:
        shutil.rmtree(path, ignore_errors=True)
    for path in directory.iterdir():
        if path.is_dir() and path.name.startswith(".tmp-"):
            shutil.rmtree(path, ignore_errors=True)
