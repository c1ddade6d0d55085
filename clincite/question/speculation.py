"""Speculation: the answer starts while the sufficiency judge is still thinking.

Its tokens reach the user only once the verdict says "sufficient" (`release`); when the verdict wants stage 2 the
gate is `drop`ped and the speculative task is cancelled, so it frees its LLM slot at once. Nothing is buffered: the
answer generator waits at its first token until the gate decides.
"""

from __future__ import annotations

import asyncio


class AnswerGate:
    def __init__(self, open_: bool = False):
        self._decided = asyncio.Event()
        self.dropped = False
        if open_:
            self._decided.set()

    @classmethod
    def opened(cls) -> AnswerGate:
        return cls(open_=True)

    def release(self) -> None:
        self._decided.set()

    def drop(self) -> None:
        self.dropped = True
        self._decided.set()

    async def wait_open(self) -> bool:
        """True when the answer may be shown; False when it was dropped."""
        await self._decided.wait()
        return not self.dropped
