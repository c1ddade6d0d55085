"""The answer cache: a finished, clean report replayed at once for the same question — or one that means the same —
on the same KB version and settings.

    cache = AnswerCache(size=256, threshold=0.9)
    entry = cache.get(cache.key(question, history, fingerprint))            # the same words (and chat turns)
    entry = cache.find_similar(question, fingerprint, vector)               # the same question in other words
    async for event in replay(entry, question): ...                         # labelled, re-cut into tokens

An entry keeps the run's non-token events and its result; on replay the report text is cut into token events again,
so an entry costs one copy of the report, not thousands of token events. Similar questions are found among the
entries of the same fingerprint (KB version the answer was searched on, models, retrieval settings) only, and only
among answers given without chat history: the cache holds answers of the knowledge base, never a clinician's private
context (a follow-up is resolved to a question of its own before it is looked up). Whether two questions are the same
is `clincite.question.gist.same_question`: the same aspects, domain terms, numbers and kind of answer, and the same
other words or, with an embedding model loaded, an embedding cosine of at least the threshold.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

import numpy as np
from cachetools import LRUCache

from clincite.core.shapes import (
    AnswerDone,
    AnswerToken,
    ChatTurn,
    Event,
    NoticeEvent,
    StageStarted,
)
from clincite.question.gist import Gist, cosine, gist_of, same_question

REPLAY_PIECE = 40  # characters per token event when a cached report is replayed
# Questions with the same asks that differ in one word that matters (演示). An embedding model that scores any pair
# as alike as the threshold cannot tell such questions apart: the threshold is raised above the highest of them
# (FLOOR_MARGIN), and a model that scores them as good as identical (English models read Chinese as unknown tokens)
# never decides at all — like the calibrated semantic floor of search.
DIFFERENT_PROBES = (
    ("角膜塑形镜可以戴着游泳吗？", "角膜塑形镜可以戴着洗澡吗？"),
    ("角膜塑形镜镜片怎么清洗？", "角膜塑形镜镜盒怎么清洗？"),
    ("户外活动能预防近视吗？", "户外活动能控制近视吗？"),
    ("眼轴每年增长多少算过快？", "眼轴每年增长多少算正常？"),
)
FLOOR_MARGIN = 0.02
NEVER = 1.0  # a threshold no cosine of two different questions reaches: the embedding does not decide
CACHED_LABEL = "与之前的问题“{question}”相同，直接给出当时的回答（知识库未变）。"
FINGERPRINTS_KEPT = 2  # similar-question indexes kept: the current KB version's, and the one before during a swap


@dataclass
class CachedAnswer:
    events: list[Event]  # every event of the run except the answer tokens, in order
    done: AnswerDone
    gist: Gist | None = None  # answers given without chat history only: they can stand for a similar question
    vector: np.ndarray | None = None  # the question's embedding, when a model was loaded

    @property
    def question(self) -> str:
        return self.done.result.question


class AnswerCache:
    def __init__(self, size: int, threshold: float = 0.9):
        self.size = size
        self.threshold = threshold
        self._entries: LRUCache[str, CachedAnswer] = LRUCache(max(size, 1))
        self._similar: OrderedDict[str, list[str]] = OrderedDict()  # fingerprint → keys of standalone answers

    @staticmethod
    def key(question: str, history: list[ChatTurn], fingerprint: Iterable) -> str:
        """Question (whitespace-normalised), history, and whatever else decides the answer (KB version, models…)."""
        return _digest([" ".join(question.split()), [t.model_dump() for t in history], *fingerprint])

    def get(self, key: str) -> CachedAnswer | None:
        return self._entries.get(key)

    def find_similar(
        self, question: str, fingerprint: Iterable, vector: np.ndarray | None = None, threshold: float | None = None
    ) -> CachedAnswer | None:
        """The most recent standalone answer, on the same fingerprint, of a question that means the same (the embedding
        cosine, if any, against `threshold`, default the cache's)."""
        mine = gist_of(question)
        for key in reversed(self._similar.get(_digest(list(fingerprint)), [])):
            entry = self._entries.get(key)
            if entry is None or entry.gist is None:
                continue  # evicted meanwhile
            similarity = cosine(vector, entry.vector) if vector is not None and entry.vector is not None else None
            if same_question(mine, entry.gist, similarity, threshold or self.threshold):
                return entry
        return None

    def remember(
        self,
        key: str,
        events: list[Event],
        fingerprint: Iterable | None = None,
        vector: np.ndarray | None = None,
    ) -> None:
        """Keep a run whose last event is a clean AnswerDone (degraded answers are not worth replaying). With a
        fingerprint (an answer given without chat history), it can also stand for similar questions."""
        if self.size <= 0 or not events or not isinstance(events[-1], AnswerDone):
            return
        done = events[-1]
        if done.result.degradations:
            return
        kept = [e for e in events[:-1] if not isinstance(e, AnswerToken)]
        standalone = fingerprint is not None
        entry = CachedAnswer(kept, done, gist_of(done.result.question) if standalone else None, vector)
        self._entries[key] = entry
        if standalone:
            name = _digest(list(fingerprint))
            kept = [k for k in self._similar.pop(name, []) if k != key and k in self._entries]
            self._similar[name] = [*kept[-self.size :], key]
            while len(self._similar) > FINGERPRINTS_KEPT:
                self._similar.popitem(last=False)


def calibrated_threshold(threshold: float, encode) -> float:
    """SIMILAR_QUESTION_THRESHOLD, raised above what this embedding model scores questions that differ in one word
    that matters; NEVER when it scores them nearly alike. `encode(texts) -> vectors` (blocking: call it in a thread)."""
    texts = [text for pair in DIFFERENT_PROBES for text in pair]
    vectors = encode(texts)
    highest = max(cosine(vectors[i], vectors[i + 1]) for i in range(0, len(texts), 2))
    floor = highest + FLOOR_MARGIN
    return NEVER if floor >= NEVER else max(threshold, floor)


def _digest(payload: list) -> str:
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()


async def replay(entry: CachedAnswer, question: str | None = None) -> AsyncIterator[Event]:
    """The cached run again, labelled with the question it answered; its result carries the question asked now."""
    started = time.perf_counter()
    yield NoticeEvent(kind="cached", message=CACHED_LABEL.format(question=entry.question))
    answer = entry.done.result.answer
    tokens_sent = False
    for event in entry.events:
        yield event
        if isinstance(event, StageStarted) and event.stage == "answer":
            for piece in _pieces(answer):
                yield piece
            tokens_sent = True
    if not tokens_sent:
        for piece in _pieces(answer):
            yield piece
    elapsed = round(time.perf_counter() - started, 3)
    timings = {**entry.done.result.timings, "ttft": elapsed, "total": elapsed}
    update = {"cached": True, "timings": timings, "question": question or entry.question}
    yield AnswerDone(result=entry.done.result.model_copy(update=update))


def _pieces(text: str) -> list[AnswerToken]:
    return [AnswerToken(text=text[i : i + REPLAY_PIECE]) for i in range(0, len(text), REPLAY_PIECE)]
