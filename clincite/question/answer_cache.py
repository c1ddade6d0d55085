"""The answer cache: a finished, clean report replayed at once for the same question, KB version and settings.

An entry keeps the run's non-token events and its result; on replay the report text is cut into token events again,
so an entry costs one copy of the report, not thousands of token events.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from cachetools import LRUCache

from clincite.core.shapes import (
    AnswerDone,
    AnswerToken,
    ChatTurn,
    Event,
    NoticeEvent,
    StageStarted,
)

REPLAY_PIECE = 40  # characters per token event when a cached report is replayed
CACHED_NOTICE = "这是缓存的回答：同一问题、同一知识库版本和设置下已生成过，直接重放。"


@dataclass
class CachedAnswer:
    events: list[Event]  # every event of the run except the answer tokens, in order
    done: AnswerDone


class AnswerCache:
    def __init__(self, size: int):
        self.size = size
        self._entries: LRUCache[str, CachedAnswer] = LRUCache(max(size, 1))

    @staticmethod
    def key(question: str, history: list[ChatTurn], fingerprint: Iterable) -> str:
        """Question (whitespace-normalised), history, and whatever else decides the answer (KB version, models…)."""
        payload = json.dumps(
            [" ".join(question.split()), [t.model_dump() for t in history], *fingerprint],
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def get(self, key: str) -> CachedAnswer | None:
        return self._entries.get(key)

    def remember(self, key: str, events: list[Event]) -> None:
        """Keep a run whose last event is a clean AnswerDone (degraded answers are not worth replaying)."""
        if self.size <= 0 or not events or not isinstance(events[-1], AnswerDone):
            return
        done = events[-1]
        if done.result.degradations:
            return
        kept = [e for e in events[:-1] if not isinstance(e, AnswerToken)]
        self._entries[key] = CachedAnswer(events=kept, done=done)


async def replay(entry: CachedAnswer) -> AsyncIterator[Event]:
    started = time.perf_counter()
    yield NoticeEvent(kind="cached", message=CACHED_NOTICE)
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
    yield AnswerDone(result=entry.done.result.model_copy(update={"cached": True, "timings": timings}))


def _pieces(text: str) -> list[AnswerToken]:
    return [AnswerToken(text=text[i : i + REPLAY_PIECE]) for i in range(0, len(text), REPLAY_PIECE)]
