"""PNG line and scatter plots for the Markdown reports (DVC renders the CSVs; these are for plain readers).

Rendered with matplotlib's Agg backend, no timestamp in the file, so the same data gives the same
bytes with the same matplotlib. A time axis of period labels (``2020``, ``2020H2``, ``2020Q3``,
``2020-07``; :mod:`pipeline.corpus.periods`) is drawn at the periods' ordinals, so it runs in time
(``2019H2`` before ``2020H1``, ``2020-09`` before ``2020-10``), ticked with the labels and titled
with the kind's noun ("year", "half-year", ...); for years that is the axis it always was.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import pandas as pd  # noqa: E402

from pipeline.corpus.periods import NOUN, in_time_order, kind_of, ordinal  # noqa: E402
from pipeline.infra.io import atomic_path  # noqa: E402


def _period_axis(values: pd.Series) -> tuple[pd.Series, str] | None:
    """``(ordinals, noun)`` when ``values`` are period labels of one kind, else None."""
    texts = values.astype(str)
    try:
        kinds = {kind_of(t) for t in texts}
    except ValueError:
        return None
    if len(kinds) != 1 or not (pd.api.types.is_string_dtype(values)
                               or pd.api.types.is_object_dtype(values)):
        return None
    return texts.map(ordinal), NOUN[kinds.pop()]


def _save(fig: plt.Figure, path: str | os.PathLike[str]) -> None:
    """Write ``fig`` as PNG atomically, without the matplotlib version stamp (same data, same
    bytes), and free it."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


def _time_ticks(ax: plt.Axes, values: pd.Series) -> None:
    """Ticks at every period of ``values`` (labels), in time order."""
    labels = {ordinal(t): t for t in values.astype(str)}
    ax.set_xticks(sorted(labels), [labels[o] for o in sorted(labels)])


def line_panels(frame: pd.DataFrame, x: str, ys: Sequence[str], group: str,
                path: str | os.PathLike[str], titles: Sequence[str],
                categorical_x: bool = False, log_y: bool = False) -> None:
    """One panel per column of ``ys``, one line per value of ``group`` (x on the horizontal axis).

    ``categorical_x`` keeps the order in which x values first appear (e.g. frequency buckets)
    and draws markers only: categories are not a continuum to draw lines across.
    """
    fig, axes = plt.subplots(1, len(ys), figsize=(5 * len(ys), 3.6), squeeze=False)
    order = list(dict.fromkeys(frame[x]))
    periods = None if categorical_x else _period_axis(frame[x])
    for ax, y, title in zip(axes[0], ys, titles):
        for name, part in frame.groupby(group, sort=False):
            if categorical_x:
                xs = [order.index(v) for v in part[x]]
            else:
                xs = part[x] if periods is None else periods[0].loc[part.index]
            ax.plot(xs, part[y], marker="o", linestyle="" if categorical_x else "-",
                    label=str(name))
        if categorical_x:
            ax.set_xticks(range(len(order)), [str(v) for v in order])
        elif periods is not None:
            _time_ticks(ax, frame[x])
        elif pd.api.types.is_integer_dtype(frame[x]):
            ax.set_xticks(sorted(set(frame[x])))
        if log_y:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(x if periods is None else periods[1])
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize="small")
    fig.tight_layout()
    _save(fig, path)


def history_forecast_panels(panels: dict[str, pd.DataFrame], path: str | os.PathLike[str],
                            ylabel: str = "log frequency") -> None:
    """One panel per forecaster: each word's observed values (solid) and its forecast (dashed,
    from the last observed period). Frames: ``word``, ``period`` (labels), ``value``,
    ``forecast`` (bool); the time axis is drawn at the periods' ordinals (module doc)."""
    cols = min(3, max(1, len(panels)))
    rows = -(-max(1, len(panels)) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, frame) in zip(axes.flat, panels.items()):
        frame = frame.assign(t=frame["period"].astype(str).map(ordinal))
        for word, part in frame.groupby("word", sort=False):
            seen = part[~part["forecast"]].sort_values("t")
            line, = ax.plot(seen["t"], seen["value"], marker="o", label=str(word))
            ahead = pd.concat([seen.tail(1), part[part["forecast"]]])
            ax.plot(ahead["t"], ahead["value"], linestyle="--", marker="x", color=line.get_color())
        ax.set_title(title)
        ax.set_xlabel(NOUN[kind_of(str(frame["period"].iat[0]))] if len(frame) else "period")
        ax.set_ylabel(ylabel)
        if len(frame):
            _time_ticks(ax, frame["period"])
            ax.legend(fontsize="x-small")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


def scatter_panels(frame: pd.DataFrame, x: str, y: str, panel: str, group: str,
                   path: str | os.PathLike[str], titles: dict[str, str]) -> None:
    """One panel per value of ``panel`` (its own y scale), one marker colour per ``group``
    value: e.g. each method's scores against the truth, changed words and controls apart."""
    names = list(dict.fromkeys(frame[panel]))
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        part = frame[frame[panel] == name]
        for label, points in part.groupby(group, sort=True):
            ax.scatter(points[x], points[y], label=str(label), s=24)
        ax.set_title(titles.get(name, str(name)))
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize="small")
    fig.tight_layout()
    _save(fig, path)


def word_frequency_figure(table: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """One line per word of the long table (period, word, log_freq): the word-frequency plot."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for word, part in table.groupby("word", sort=False):
        ax.plot(part["period"].map(ordinal), part["log_freq"], marker="o", label=word)
    kind = kind_of(table["period"].iloc[0])
    if kind != "year":  # ordinals are years for years; other kinds get their labels
        ticks = sorted(set(table["period"]), key=ordinal)
        ax.set_xticks([ordinal(t) for t in ticks], ticks, rotation=45, ha="right")
    ax.set_xlabel(kind)
    ax.set_ylabel("log relative frequency")
    ax.legend()
    fig.tight_layout()
    _save(fig, path)


def notice(path: str | os.PathLike[str], text: str) -> None:
    """A PNG that only says ``text``: a declared plot whose data could not be made."""
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    _save(fig, path)


def results_figures(staleness: pd.DataFrame, buckets: pd.DataFrame, pngs: dict[str, str],
                    baseline_name: str) -> None:
    """The results report's PNGs: staleness curves (periods in time order), and NLL by history
    bucket in the last period (``pngs``: ``staleness`` and ``buckets`` paths)."""
    period = in_time_order(buckets["period"])[-1]
    noun = NOUN[kind_of(period)]                      # "year" for years: the titles as before
    line_panels(staleness, "period", ["ppl", "cpl"], "model", pngs["staleness"],
                [f"PPL by scored {noun}", f"CPL by scored {noun}"])
    last = buckets[buckets["period"] == period]
    line_panels(last, "bucket", ["mean_nll", "nll_vs_baseline"], "model", pngs["buckets"],
                [f"mean NLL by history count ({period})",
                 f"NLL minus {baseline_name}'s ({period})"], categorical_x=True)
