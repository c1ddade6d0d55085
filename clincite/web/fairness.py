"""One clinician cannot starve the others: at most QUESTIONS_IN_FLIGHT_PER_CLINICIAN of their questions run at once.

    async with queues.turn(user, on_queued=notify) as ahead:    # waits while the clinician's earlier questions run
        ...answer the question...

A question that has to wait is told how many of the same clinician's questions are ahead of it ("前面还有 N 个
问题", `on_queued(n)`), and runs as soon as one of them is done, in the order asked. Everyone else's questions never
wait behind them: the queues are per clinician (their account name), across all of their tabs and devices. A
question stopped or disconnected while it waits leaves the line, and a turn handed to it at that moment passes on.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class _Line:
    running: int = 0
    waiting: deque[asyncio.Future] = field(default_factory=deque)


class ClinicianQueues:
    def __init__(self, per_clinician: int):
        self.per_clinician = per_clinician
        self._lines: dict[str, _Line] = {}

    def waiting(self, user: str) -> int:
        line = self._lines.get(user)
        return len(line.waiting) if line else 0

    @asynccontextmanager
    async def turn(self, user: str, on_queued: Callable[[int], Awaitable[None]] | None = None) -> AsyncIterator[int]:
        """Hold one of the clinician's running places for the body; yields how many were ahead when it came."""
        line = self._lines.setdefault(user, _Line())
        ahead = 0
        if line.running >= self.per_clinician or line.waiting:
            ahead = line.running + len(line.waiting)
            ticket = asyncio.get_running_loop().create_future()
            line.waiting.append(ticket)
            try:
                if on_queued is not None:
                    await on_queued(ahead)
                await ticket
            except BaseException:
                if ticket.done() and not ticket.cancelled():
                    self._release(user, line)  # the turn was handed to us as we left: pass it on
                else:
                    ticket.cancel()
                    _discard(line.waiting, ticket)
                    self._forget_if_idle(user, line)
                raise
        else:
            line.running += 1
        try:
            yield ahead
        finally:
            self._release(user, line)

    def _release(self, user: str, line: _Line) -> None:
        while line.waiting:
            ticket = line.waiting.popleft()
            if not ticket.done():
                ticket.set_result(None)  # the place goes straight to the next question: running stays the same
                return
        line.running -= 1
        self._forget_if_idle(user, line)

    def _forget_if_idle(self, user: str, line: _Line) -> None:
        if line.running == 0 and not line.waiting and self._lines.get(user) is line:
            del self._lines[user]


def _discard(waiting: deque, ticket: asyncio.Future) -> None:
    try:
        waiting.remove(ticket)
    except ValueError:
        pass


QUEUED = "⏳ 您前面还有 {ahead} 个问题正在处理或排队，这个问题已排队，轮到时会自动开始回答。"


async def announce_queued(ahead: int):
    """The notice a waiting question shows in the chat; returns it, to be removed when the question starts."""
    import chainlit as cl

    from clincite.web.render import NOTICE_AUTHOR

    notice = cl.Message(content=QUEUED.format(ahead=ahead), author=NOTICE_AUTHOR)
    await notice.send()
    return notice
