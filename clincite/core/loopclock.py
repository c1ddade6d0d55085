"""Stage budgets that count the model's time, not the event loop's backlog.

    loopclock.add_lag(0.3)                      # the loop-lag probe (clincite/web/looplag.py), each sample
    async with loopclock.budget(4.0):           # a stage's budget (clincite/question/stages.py, answering.py)
        ...                                     # TimeoutError when the stage is late by 4 s of *on-time* loop

A stage budget (DECOMPOSITION_BUDGET, …) says how long a model may take before the stage takes its fallback. With a
hundred questions starting in the same instant the app's one event loop runs far behind (its lag p99 was 250–400 ms
in bench/load_test.py -n 100, each streamed chunk read a loop turn late): a decomposition the model finished in time
was still being read when its 4 s ran out, and the answer was marked degraded and built from the question alone —
a different answer, and a later one, since the fallback's search and judge only start then. Here the time the loop
was behind while the stage ran (the lag its probe measured) is added to the budget, so the stage is cut off when the
model is late, not when the app is. The extension is bounded (LATE_LOOP_FACTOR × the budget in all): no question
waits forever behind a hung model. Without the probe running (query.py, tests) a budget is a plain timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

LATE_LOOP_FACTOR = 3.0  # a budget grows with the loop's lag to at most this many times itself
_EARLY = 0.001  # the extension is looked at just before the deadline, so that it runs before the timeout does
_NOISE = 0.005  # lateness below this is the loop's ordinary jitter, not a backlog

_lag_total = 0.0  # seconds the loop has run late since the process started (the probe's samples, summed)


def add_lag(seconds: float) -> None:
    global _lag_total
    _lag_total += max(0.0, seconds)


def lag_total() -> float:
    return _lag_total


@asynccontextmanager
async def budget(seconds: float | None) -> AsyncIterator[asyncio.Timeout]:
    """`asyncio.timeout(seconds)`, its deadline moved on by the loop's lag while it runs (up to LATE_LOOP_FACTOR ×
    seconds). The Timeout is yielded: `reschedule(None)` ends the budget (the answer's first token came)."""
    if seconds is None:
        async with asyncio.timeout(None) as timeout:
            yield timeout
        return
    loop = asyncio.get_running_loop()
    started, lag_at_start = loop.time(), _lag_total
    cap = started + seconds * LATE_LOOP_FACTOR
    handle: asyncio.TimerHandle | None = None

    async with asyncio.timeout_at(started + seconds) as timeout:

        def extend(planned: float) -> None:
            nonlocal handle
            when = timeout.when()
            if when is None or timeout.expired():
                return  # ended by its owner, or already out
            # The probe's lag since the start, and a stall it has not sampled yet: this very callback's lateness (the
            # probe's wake-up queues behind it when both fall due in the same loop turn).
            late = loop.time() - planned
            behind = _lag_total - lag_at_start + (late if late > _NOISE else 0.0)
            deadline = min(started + seconds + behind, cap)
            if deadline > when + _NOISE:
                timeout.reschedule(deadline)
                handle = loop.call_at(deadline - _EARLY, extend, deadline - _EARLY)

        handle = loop.call_at(started + seconds - _EARLY, extend, started + seconds - _EARLY)
        try:
            yield timeout
        finally:
            handle.cancel()
