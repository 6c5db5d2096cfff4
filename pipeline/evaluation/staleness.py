"""Staleness: how a model's PPL and CPL grow as the scored year moves away from its training data.

The score stage evaluates every year of ``score.years``, each with its own history; this module
turns the per-variant means over seeds (:func:`pipeline.reports.results.summarize`, key ``"years"``) into
a long table (``model``, ``year``, ``ppl``, ``cpl``: one DVC plot line per model) and Markdown
tables with the slope of each metric per year (least squares over the scored years): the rate at
which a model goes stale, and whether temporal history slows it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

STALENESS_METRICS = ("ppl", "cpl")


def staleness_frame(summary: Mapping[str, dict], names: Mapping[str, str]) -> pd.DataFrame:
    """Long table: one row per (model, year) with the seed-mean ``ppl`` and ``cpl``.

    ``summary[variant]["years"][str(year)]`` holds the metrics; ``names`` maps variant -> shown name.
    """
    rows = [{"model": names[v], "year": int(y), **{m: entry["years"][y][m] for m in STALENESS_METRICS}}
            for v, entry in summary.items() for y in sorted(entry["years"], key=int)]
    return pd.DataFrame(rows, columns=["model", "year", *STALENESS_METRICS])


def slope(years: np.ndarray, values: np.ndarray) -> float | None:
    """Least-squares change of ``values`` per year; None with fewer than two years."""
    if len(years) < 2:
        return None
    return float(np.polyfit(np.asarray(years, float), np.asarray(values, float), 1)[0])


def staleness_markdown(frame: pd.DataFrame, last_corpus_year: int | None) -> str:
    """A PPL table and a CPL table (rows: models, columns: years, then the slope per year)."""
    years = sorted(frame["year"].unique())
    parts = []
    for metric in STALENESS_METRICS:
        heads = [f"{y}" + (" *" if y == last_corpus_year else "") for y in years]
        lines = [f"| {metric.upper()} | " + " | ".join(heads) + " | per year |",
                 "|---|" + "---:|" * (len(years) + 1)]
        for model, part in frame.groupby("model", sort=False):
            values = dict(zip(part["year"], part[metric]))
            rate = slope(part["year"].to_numpy(), part[metric].to_numpy())
            cells = [f"{values[y]:.2f}" if y in values else "—" for y in years]
            lines.append(f"| {model} | " + " | ".join(cells) + " | "
                         + ("—" if rate is None else f"{rate:+.2f}") + " |")
        parts.append("\n".join(lines))
    text = "\n\n".join(parts)
    if last_corpus_year in years:
        text += (f"\n\n\\* {last_corpus_year} is the last year of the corpus and may be incomplete "
                 "(the full export of 2024-08-15 covers 2024 only through August).")
    return text
