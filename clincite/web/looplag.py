"""Event-loop lag: how late the app's event loop wakes up, the delay every open chat feels on top of its own work.

    start_probe()                  # once, in the start-up hook (clincite/web/startup.py)
    summary()                      # {"samples", "p50_ms", "p99_ms", "max_ms", "window_seconds"} for /metrics.json

A task sleeps `INTERVAL` seconds and records how much later than asked it woke up: anything that holds the loop
(CPU work, a blocking call, a long burst of socket writes) shows up as lag. The last `WINDOW` seconds of samples are
kept. With CLINCITE_LOOP_LAG_FILE set, every sample is also appended to that file as "<unix time> <lag ms>" lines,
so a benchmark (bench/load_test.py) can take the percentiles over exactly its own load window.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque

from clincite.core import loopclock

log = logging.getLogger("clincite.looplag")

INTERVAL = 0.05  # 20 samples/s: fine enough to see a 100 ms stall, cheap enough to leave on in production
WINDOW = 300.0  # seconds of samples kept for /metrics.json
LAG_FILE_ENV = "CLINCITE_LOOP_LAG_FILE"

_samples: deque[tuple[float, float]] = deque(maxlen=int(WINDOW / INTERVAL))
_task: asyncio.Task | None = None


def start_probe() -> asyncio.Task:
    """Start the probe on the running loop (once per process; a second call returns the running probe)."""
    global _task
    if _task is None or _task.done():
        path = os.environ.get(LAG_FILE_ENV)
        # Line-buffered so a benchmark reading the file while the app runs sees every sample up to now.
        out = open(path, "a", buffering=1, encoding="ascii") if path else None  # noqa: SIM115 (closed by the probe)
        _task = asyncio.create_task(_probe(out), name="clincite-loop-lag-probe")
    return _task


async def _probe(out) -> None:
    try:
        while True:
            asked = time.perf_counter() + INTERVAL
            await asyncio.sleep(INTERVAL)
            lag_ms = max(0.0, (time.perf_counter() - asked) * 1000)
            loopclock.add_lag(lag_ms / 1000)  # stage budgets are extended by it (clincite/core/loopclock.py)
            now = time.time()
            _samples.append((now, lag_ms))
            if out is not None:
                out.write(f"{now:.3f} {lag_ms:.2f}\n")
    except asyncio.CancelledError:
        raise
    except Exception:  # a full disk must not take the app down; the in-memory window is enough
        log.exception("Event-loop lag probe stopped")
    finally:
        if out is not None:
            out.close()


def summary() -> dict:
    """Percentiles of the lag over the kept window (milliseconds); None before the first sample."""
    lags = sorted(lag for _, lag in _samples)
    if not lags:
        return {"samples": 0, "p50_ms": None, "p99_ms": None, "max_ms": None, "window_seconds": 0.0}
    span = _samples[-1][0] - _samples[0][0]

    def at(q: float) -> float:
        return round(lags[min(len(lags) - 1, int(q / 100 * len(lags)))], 1)

    return {
        "samples": len(lags),
        "p50_ms": at(50),
        "p99_ms": at(99),
        "max_ms": round(lags[-1], 1),
        "window_seconds": round(span, 1),
    }
