"""Step and message timestamps that are strictly increasing, instead of Chainlit's blocking 1 ms sleep.

Chainlit 2.12's `Step()` and `Message()` constructors call `time.sleep(0.001)` so that no two share a `createdAt`
(threads are read back in that order). The sleep blocks the one event loop that serves every clinician: a question
builds ~17 steps and messages, so twenty questions arriving together stall the loop ~0.1 s in their first half
second (py-spy on `bench/load_test.py`). `install()` removes the sleep from those two modules and gives them a clock
whose readings never repeat or go back, printed with all six microsecond digits (Chainlit's own drops them when they
are zero, which sorts that step after its successors).
"""

from __future__ import annotations

import importlib
import time
from datetime import UTC, datetime, timedelta
from types import ModuleType

ONE_MICROSECOND = timedelta(microseconds=1)
_last = datetime.min


def strictly_increasing_utc_now() -> str:
    """Chainlit's `utc_now()` format ("2026-11-22T08:15:30.123456Z"), each reading later than the one before."""
    global _last
    now = datetime.now(UTC).replace(tzinfo=None)
    _last = now if now > _last else _last + ONE_MICROSECOND
    return _last.isoformat(timespec="microseconds") + "Z"


class _TimeWithoutSleep:
    """The `time` module as Chainlit's step and message modules see it: everything but `sleep`."""

    @staticmethod
    def sleep(seconds: float) -> None:
        return None

    def __getattr__(self, name: str):
        return getattr(time, name)


def install() -> None:
    # By module path: the package attribute `chainlit.step` is the @step decorator, not the module.
    modules: list[ModuleType] = [importlib.import_module(name) for name in ("chainlit.step", "chainlit.message")]
    for module in modules:
        module.time = _TimeWithoutSleep()
        module.utc_now = strictly_increasing_utc_now
