"""History windows: which periods a period's temporal features are read from (no torch, no I/O).

The one definition of the window (paper §3: period ``i`` is predicted from periods ``i-m .. i-1``),
shared by the loaders (:func:`pipeline.features.history.load_history`), the bucket metrics and
the stage graph, which makes each stage depend on exactly these periods' feature files. Periods
are labels (``2020``, ``2020H2``, ``2020Q3``, ``2020-07``, :mod:`pipeline.corpus.periods`); the
window is counted in periods of the label's own kind, across year boundaries (the history of
``2020Q1`` with window 2 is ``2019Q3, 2019Q4``). For years the labels are the years' strings.
"""

from __future__ import annotations

from pipeline.corpus.periods import shift


def history_periods(label: str | int, window: int) -> tuple[str, ...]:
    """The labels whose features make the history of ``label``: ``label-window .. label-1``,
    oldest first."""
    return tuple(shift(label, -n) for n in range(window, 0, -1))


def bucket_periods(label: str | int, window: int) -> list[str]:
    """The frequency periods the bucket metrics of ``label`` read: its history ``label-window ..
    label-1`` and the period before it (a token is emerging if it rose in each of the m periods),
    oldest first."""
    return [shift(label, -n) for n in range(window + 1, 0, -1)]
