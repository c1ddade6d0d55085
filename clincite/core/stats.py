"""Percentiles, one way everywhere (the metrics page and every benchmark): numpy's linear interpolation.

percentile([1.2, 0.8, 3.1], 95)      # 2.89; None for no values
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentile(values: Sequence[float], q: float, digits: int | None = 3) -> float | None:
    """The q-th percentile (0–100) of the values, rounded to `digits` (None: not rounded); None when there are none."""
    if len(values) == 0:
        return None
    value = float(np.percentile(np.asarray(values, dtype=float), q))
    return value if digits is None else round(value, digits)
