"""History windows: which years a year's temporal features are read from (no torch, no I/O).

The one definition of the window (paper §3: year ``i`` is predicted from years ``i-m .. i-1``),
shared by the loaders (:func:`pipeline.features.history.load_history`), the bucket metrics and
the stage graph, which makes each stage depend on exactly these years' feature files.
"""

from __future__ import annotations


def history_years(year: int, window: int) -> tuple[int, ...]:
    """The years whose features make the history of ``year``: ``year-window .. year-1``, oldest first."""
    return tuple(range(year - window, year))


def bucket_years(year: int, window: int) -> range:
    """The frequency years the bucket metrics of ``year`` read: its history ``year-window ..
    year-1`` and the year before it (a token is emerging if it rose in each of the m years)."""
    return range(year - window - 1, year)
