"""Fair shares of the LLM: a per-question cap on calls in flight, inside the process-wide cap (LLM_MAX_CONCURRENCY).

The service opens a question's slots at the start of its task; every task of that question inherits them through
the context, so the cap needs no plumbing through the stages. Outside a question (warm-up, tests) there is no cap.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from pydantic_ai.models.wrapper import WrapperModel

_question_slots: ContextVar[asyncio.Semaphore | None] = ContextVar("clincite_question_llm_slots", default=None)


def open_question_slots(cap: int) -> None:
    """Give the current task (and the tasks it starts) its own cap of LLM calls in flight."""
    _question_slots.set(asyncio.Semaphore(cap))


@asynccontextmanager
async def question_slot() -> AsyncIterator[None]:
    slots = _question_slots.get()
    if slots is None:
        yield
        return
    async with slots:
        yield


class QuestionCappedModel(WrapperModel):
    """A model whose requests first take one of the current question's slots, then the process-wide one."""

    async def request(self, *args: Any, **kwargs: Any):
        async with question_slot():
            return await self.wrapped.request(*args, **kwargs)

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any):
        async with question_slot(), self.wrapped.request_stream(*args, **kwargs) as stream:
            yield stream
