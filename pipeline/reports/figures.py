"""PNG line plots for the Markdown reports (DVC renders the CSVs; these are for plain readers).

Rendered with matplotlib's Agg backend, no timestamp in the file, so the same data gives the same
bytes with the same matplotlib.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import pandas as pd  # noqa: E402

from pipeline.infra.io import atomic_path  # noqa: E402


def line_panels(frame: pd.DataFrame, x: str, ys: Sequence[str], group: str,
                path: str | os.PathLike[str], titles: Sequence[str],
                categorical_x: bool = False, log_y: bool = False) -> None:
    """One panel per column of ``ys``, one line per value of ``group`` (x on the horizontal axis).

    ``categorical_x`` keeps the order in which x values first appear (e.g. frequency buckets)
    and draws markers only: categories are not a continuum to draw lines across.
    """
    fig, axes = plt.subplots(1, len(ys), figsize=(5 * len(ys), 3.6), squeeze=False)
    order = list(dict.fromkeys(frame[x]))
    for ax, y, title in zip(axes[0], ys, titles):
        for name, part in frame.groupby(group, sort=False):
            xs = [order.index(v) for v in part[x]] if categorical_x else part[x]
            ax.plot(xs, part[y], marker="o", linestyle="" if categorical_x else "-",
                    label=str(name))
        if categorical_x:
            ax.set_xticks(range(len(order)), [str(v) for v in order])
        elif pd.api.types.is_integer_dtype(frame[x]):
            ax.set_xticks(sorted(set(frame[x])))
        if log_y:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(x)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize="small")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


def history_forecast_panels(panels: dict[str, pd.DataFrame], path: str | os.PathLike[str],
                            ylabel: str = "log frequency") -> None:
    """One panel per forecaster: each word's observed values (solid) and its forecast (dashed,
    from the last observed year). Frames: ``word``, ``year``, ``value``, ``forecast`` (bool)."""
    cols = min(3, max(1, len(panels)))
    rows = -(-max(1, len(panels)) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, frame) in zip(axes.flat, panels.items()):
        for word, part in frame.groupby("word", sort=False):
            seen = part[~part["forecast"]].sort_values("year")
            line, = ax.plot(seen["year"], seen["value"], marker="o", label=str(word))
            ahead = pd.concat([seen.tail(1), part[part["forecast"]]])
            ax.plot(ahead["year"], ahead["value"], linestyle="--", marker="x", color=line.get_color())
        ax.set_title(title)
        ax.set_xlabel("year")
        ax.set_ylabel(ylabel)
        if len(frame):
            ax.set_xticks(sorted(set(frame["year"])))
            ax.legend(fontsize="x-small")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
