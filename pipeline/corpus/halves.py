"""The two halves of a period's documents: the one deterministic split every trend test uses.

A trend test compares a predicted change with the observed change ``log f_Y − log f_{Y−1}``. A
predictor built from period Y−1's counts shares Y−1's sampling noise with that observed change,
so even a corpus without trends gives it a non-zero correlation (simulated: ρ ≈ ±0.45). The fix:
split Y−1's documents in two halves, let every predictor read half **A** only and measure the
observed change against half **B**; the halves are independent samples, so the null is ≈ 0.

Rule (defined here once): a document is in half A when the first byte of the SHA-256 of its
corpus key (UTF-8) is even, else in half B. It depends on the key alone, not on the order of the
corpus, the period or the run, so the forecast stage (which reads half A) and the forecast
report (which measures against half B) agree without passing anything between them, and a
document keeps its half when the corpus grows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

HALVES = ("A", "B")


def in_half_a(keys: Iterable[str]) -> np.ndarray:
    """bool ``[n]``: which documents (by corpus key) are in half A (module doc)."""
    return np.fromiter((hashlib.sha256(str(k).encode("utf-8")).digest()[0] % 2 == 0
                        for k in keys), dtype=bool)
