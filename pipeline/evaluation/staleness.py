"""Staleness: how a model's PPL and CPL grow as the scored period moves away from its training data.

The score stage evaluates every period of ``score.periods``, each with its own history; this
module turns the per-variant means over seeds (:func:`pipeline.reports.scored_runs.summarize`, key
``"periods"``) into a long table (``model``, ``period``, ``ppl``, ``cpl``: one DVC plot line per
model, rows in time order) and Markdown tables with the slope of each metric per period (least
squares over the scored periods' ordinals, :mod:`pipeline.corpus.periods`): the rate at which a
model goes stale, and whether temporal history slows it. For years the ordinal is the year, so
the slope is per year, as before periods.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from pipeline.infra.io import read_json
from pipeline.corpus.periods import NOUN, PER_YEAR, in_time_order, kind_of, ordinal, period_of

STALENESS_METRICS = ("ppl", "cpl")


def staleness_frame(summary: Mapping[str, dict], names: Mapping[str, str]) -> pd.DataFrame:
    """Long table: one row per (model, period) with the seed-mean ``ppl`` and ``cpl``, periods in
    time order (never alphabetical: ``2019H2`` before ``2020H1``).

    ``summary[variant]["periods"][label]`` holds the metrics; ``names`` maps variant -> shown name.
    """
    rows = [{"model": names[v], "period": p,
             **{m: entry["periods"][p][m] for m in STALENESS_METRICS}}
            for v, entry in summary.items() for p in in_time_order(entry["periods"])]
    return pd.DataFrame(rows, columns=["model", "period", *STALENESS_METRICS])


def slope(periods: np.ndarray, values: np.ndarray) -> float | None:
    """Least-squares change of ``values`` per period (``periods``: labels or ordinals); None
    with fewer than two periods."""
    if len(periods) < 2:
        return None
    x = [p if isinstance(p, (int, np.integer)) else ordinal(p) for p in periods]
    return float(np.polyfit(np.asarray(x, float), np.asarray(values, float), 1)[0])


def _holds(period: str, last_date: str) -> bool:
    """Whether ``period`` holds the (normalised) date ``last_date``; a date coarser than the
    period (a bare year under quarters) counts for every period of its year."""
    kind = kind_of(period)
    own = period_of(last_date, kind)
    if own is not None:
        return own == period
    return ordinal(period) // PER_YEAR[kind] == int(last_date[:4])


def staleness_markdown(frame: pd.DataFrame, last_corpus_date: str | None) -> str:
    """A PPL table and a CPL table (rows: models, columns: periods in time order, then the slope
    per period). The period holding the corpus's last document (``last_corpus_date``, a
    normalised date) is starred: an export ends mid-period, so that period may be incomplete."""
    periods = in_time_order(frame["period"])
    noun = NOUN[kind_of(periods[0])] if periods else "period"
    starred = ([p for p in periods if _holds(p, last_corpus_date)]
               if last_corpus_date else [])
    parts = []
    for metric in STALENESS_METRICS:
        heads = [p + (" *" if p in starred else "") for p in periods]
        lines = [f"| {metric.upper()} | " + " | ".join(heads) + f" | per {noun} |",
                 "|---|" + "---:|" * (len(periods) + 1)]
        for model, part in frame.groupby("model", sort=False):
            values = dict(zip(part["period"], part[metric]))
            rate = slope(part["period"].to_numpy(), part[metric].to_numpy())
            cells = [f"{values[p]:.2f}" if p in values else "—" for p in periods]
            lines.append(f"| {model} | " + " | ".join(cells) + " | "
                         + ("—" if rate is None else f"{rate:+.2f}") + " |")
        parts.append("\n".join(lines))
    text = "\n\n".join(parts)
    if starred:
        text += (f"\n\n\\* {', '.join(starred)} {'holds' if len(starred) == 1 else 'hold'} the "
                 f"corpus's last document (dated {last_corpus_date}): the corpus may end before "
                 f"the {noun} does (the full ACL export of 2024-08-15 ends in August).")
    return text


def last_corpus_date(corpus_counts: str | None) -> str | None:
    """The date of the latest kept document in reports/corpus.json (``last_date``; older files:
    the latest year with kept abstracts); None without the file."""
    if corpus_counts is None:
        return None
    counts = read_json(corpus_counts)
    if counts.get("last_date"):
        return str(counts["last_date"])
    kept = [int(y) for y, entry in counts.get("per_year", {}).items() if entry.get("kept", 0) > 0]
    return str(max(kept)) if kept else None
