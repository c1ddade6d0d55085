"""Stage budgets count the model's time, not the event loop's backlog (clincite/core/loopclock.py).

The loop's lag is handed to the clock as its probe would (`add_lag`); what is checked is whether the stage is cut
off, never how long anything took.
"""

from __future__ import annotations

import asyncio

import pytest

from clincite.core import loopclock


async def test_a_budget_without_lag_is_a_plain_timeout():
    with pytest.raises(TimeoutError):
        async with loopclock.budget(0.05):
            await asyncio.sleep(1.0)


async def test_the_loop_running_behind_moves_the_deadline_on():
    """The model answers at 0.75 s against a 0.5 s budget while the loop was 5 s behind: the stage is not cut off
    (the extension's cap, 3 × 0.5 s, is what bounds it)."""
    async with loopclock.budget(0.5):
        loopclock.add_lag(5.0)
        await asyncio.sleep(0.75)


async def test_the_extension_is_bounded():
    """However far behind the loop runs, a stage whose model never answers is cut off (LATE_LOOP_FACTOR × budget)."""
    with pytest.raises(TimeoutError):
        async with loopclock.budget(0.05):
            loopclock.add_lag(1000.0)
            await asyncio.sleep(10.0)


async def test_a_budget_its_owner_ended_stays_ended():
    """The answer's first token came (`reschedule(None)`): lag arriving later does not bring a deadline back."""
    async with loopclock.budget(0.05) as timeout:
        timeout.reschedule(None)
        loopclock.add_lag(1.0)
        await asyncio.sleep(0.2)
        assert timeout.when() is None
