"""The long-tail report: paper 004's token accuracy and types for every model and two baselines.

For each scored split (dev, test) the positions of every score folder whose target is one whole
word (:mod:`pipeline.features.words`) are scored with the top-1 and top-10 hits the score stage
recorded (the softmax's argmax and 10 most probable tokens), by training-frequency bin
(:func:`pipeline.evaluation.longtail.longtail_from_hits`), and averaged over seeds. Paper 004's
lower bounds are scored on the same positions: ``freq`` (the 10 most frequent training words at
every position) and ``ugrm`` (10 distinct words drawn from the training unigram distribution,
seeded). Both propose only word-starting tokens (a space, then a word), so they can never hit the
first word of an abstract, which has no space before it; the models can.

All three views come from one long table (:func:`longtail_frame`): the Markdown section, the
compact DVC metrics (test split, all bins) and the plot of types by bin
(:func:`write_longtail` writes them all).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.corpus.periods import span
from pipeline.evaluation.layout import positions_file
from pipeline.evaluation.longtail import (ALL, BINS, freq_baseline_predictions, longtail_from_hits,
                                          longtail_table, unigram_baseline_predictions)
from pipeline.evaluation.unigram import summed_counts
from pipeline.features.tokenizer import load_tokenizer
from pipeline.features.words import WordPieces, token_texts, whole_word_positions
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, read_parquet, write_json
from pipeline.infra.runs import run_name
from pipeline.models.registry import display_name
from pipeline.reports.figures import line_panels

BASELINES = ("freq", "ugrm")
COLUMNS = ("model", "split", "period", "bin", "n", "n_types", "acc@1", "acc@10", "T1", "T10", "seeds")
_POSITION_COLUMNS = ["abstract", "position", "target_id", "top1", "top10"]


def word_counts(counts: np.ndarray, pieces: WordPieces) -> np.ndarray:
    """Training counts of the word-starting tokens only (others 0): what ``freq`` and ``ugrm``
    may propose."""
    if counts.shape != pieces.starts.shape:
        raise ValueError(f"{counts.size} training counts but {len(pieces)} token texts")
    return np.where(pieces.starts, counts, 0)


def run_table(scores_dir: str | os.PathLike[str], run: str, period: str, pieces: WordPieces,
              counts: np.ndarray, edges: Sequence[int]) -> pd.DataFrame:
    """One score folder's long-tail table for one period (rows: bins then ``all``)."""
    pos = read_parquet(Path(scores_dir) / run / positions_file(period), columns=_POSITION_COLUMNS)
    words = whole_word_positions(pos["abstract"], pos["position"], pos["target_id"], pieces)
    return longtail_from_hits(pos["target_id"].to_numpy()[words], pos["top1"].to_numpy()[words],
                              pos["top10"].to_numpy()[words], counts, edges)


def baseline_tables(targets: np.ndarray, counts: np.ndarray, pieces: WordPieces,
                    edges: Sequence[int], seed: int) -> dict[str, pd.DataFrame]:
    """``freq`` and ``ugrm`` on the whole-word ``targets`` of one period. They propose 10 words,
    or every word seen in training when there are fewer (then their top-10 columns are NaN); with
    no word seen there is no baseline."""
    proposable = word_counts(counts, pieces)
    k = min(10, int((proposable > 0).sum()))
    if k == 0:
        return {}
    return {"freq": longtail_table(targets, freq_baseline_predictions(proposable, targets.size, k),
                                   counts, edges),
            "ugrm": longtail_table(targets, unigram_baseline_predictions(
                proposable, targets.size, k, seed), counts, edges)}


def longtail_frame(scores_dir: str | os.PathLike[str], variants: Sequence[str],
                   seeds: Mapping[str, Sequence[int]], periods: Mapping[str, str],
                   pieces: WordPieces,
                   counts: np.ndarray, edges: Sequence[int], seed: int) -> pd.DataFrame:
    """Every model's and baseline's table for each split (``periods``: split -> period label),
    means over each variant's ``seeds``, columns :data:`COLUMNS` (``model``: the variant's name or ``freq``/``ugrm``;
    ``seeds``: how many seeds the row averages; 1 for the baselines, which do not depend on a
    training seed)."""
    frames = []
    for split, period in periods.items():
        per_run = {}
        for v in variants:
            tables = [run_table(scores_dir, run_name(v, s), period, pieces, counts, edges)
                      for s in seeds[v]]
            per_run[v] = (pd.concat(tables).groupby("bin", sort=False).mean(), len(tables))
        pos = read_parquet(Path(scores_dir) / run_name(variants[0], seeds[variants[0]][0]) / positions_file(period),
                           columns=_POSITION_COLUMNS)
        targets = pos["target_id"].to_numpy()[whole_word_positions(
            pos["abstract"], pos["position"], pos["target_id"], pieces)]
        for name, table in baseline_tables(targets, counts, pieces, edges, seed).items():
            per_run[name] = (table.set_index("bin"), 1)
        for model, (table, n_seeds) in per_run.items():
            frames.append(table.reset_index().assign(model=model, split=split, period=period,
                                                     seeds=n_seeds))
    frame = pd.concat(frames, ignore_index=True)
    for column in ("n", "n_types"):
        frame[column] = frame[column].round().astype("int64")
    return frame[list(COLUMNS)]


def metrics_json(frame: pd.DataFrame, split: str = "test") -> dict[str, dict]:
    """The compact DVC metrics: per model, the ``split``'s all-bin accuracies and types."""
    rows = frame[(frame["split"] == split) & (frame["bin"] == ALL)]
    return {model: {split: {"acc1": _round(r["acc@1"]), "acc10": _round(r["acc@10"]),
                            "T1": _round(r["T1"], 1), "T10": _round(r["T10"], 1)}}
            for model, r in rows.set_index("model").iterrows()}


def _round(value: float, digits: int = 4) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def _pct(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{100 * value:.2f}"


def _types(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:.1f}".removesuffix(".0")


def markdown(frame: pd.DataFrame, edges: Sequence[int], seed: int) -> str:
    """The report section: per split, all-bin tokens and types, then types by bin with n."""
    high_min, mid_min = edges
    lines = [
        "Paper 004's evaluation at every dev and test position whose target is one whole word "
        "(one token that starts a word and is not continued by the next token; "
        "`pipeline/features/words.py`). Tokens: top-1 / "
        "top-10 accuracy in %; types T1 / T10: distinct words predicted correctly at least once "
        "(argmax / 10 most probable tokens). Bins by the word's count in the training periods: "
        f"high ≥ {high_min}, mid {mid_min}–{high_min - 1}, low < {mid_min} (unseen included). "
        f"`freq`: the 10 most frequent training words everywhere; `ugrm`: 10 distinct words "
        f"sampled from the training unigram distribution (seed {seed}). Models: means over "
        "their seeds (column *seeds*); a single seed is indicative only.", ""]
    for split in dict.fromkeys(frame["split"]):
        part = frame[frame["split"] == split]
        period = part["period"].iloc[0]
        total = part[(part["bin"] == ALL)].iloc[0]
        lines += [f"**{split.capitalize()} ({period})**: {int(total['n']):,} whole-word positions, "
                  f"{int(total['n_types']):,} distinct words.", "",
                  "| model | seeds | top-1 % | top-10 % | T1 | T10 |", "|---|---:|---:|---:|---:|---:|"]
        for _, r in part[part["bin"] == ALL].iterrows():
            lines.append(f"| {display_name(r['model'])} | {r['seeds']} | {_pct(r['acc@1'])} | {_pct(r['acc@10'])} "
                         f"| {_types(r['T1'])} | {_types(r['T10'])} |")
        sizes = {b: part[part["bin"] == b].iloc[0] for b in BINS}
        head = " | ".join(f"{b} T1 / T10 (of {int(sizes[b]['n_types'])} words, n = {int(sizes[b]['n'])})"
                          for b in BINS)
        lines += ["", f"Types by training-frequency bin ({split}):", "",
                  f"| model | {head} |", "|---|" + "---:|" * len(BINS)]
        for model in dict.fromkeys(part["model"]):
            cells = []
            for b in BINS:
                r = part[(part["model"] == model) & (part["bin"] == b)].iloc[0]
                cells.append(f"{_types(r['T1'])} / {_types(r['T10'])}")
            lines.append(f"| {display_name(model)} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def plot_frame(frame: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    """Types by bin for the DVC plot and the PNG: columns ``model`` (display name), ``bin``
    (``1: high``, ``2: mid``, ``3: low``: numbered, as DVC sorts an ordinal axis by its text),
    ``T1``, ``T10``, ``n_types``."""
    part = frame[(frame["split"] == split) & (frame["bin"] != ALL)]
    out = part[["model", "bin", "T1", "T10", "n_types"]].reset_index(drop=True)
    out["model"] = out["model"].map(display_name)
    out["bin"] = out["bin"].map({b: f"{i}: {b}" for i, b in enumerate(BINS, 1)})
    return out



def training_words(frequencies: str | os.PathLike[str], train_periods: Sequence[str],
                   tokenizer: str | os.PathLike[str]) -> tuple[np.ndarray, WordPieces]:
    """The training periods' summed token counts (``first``, ``last``: the span's frequency
    files) and the tokenizer's word pieces (which targets are one whole word)."""
    try:
        train = span(*train_periods)
    except ValueError as err:
        raise UserError(f"--train-periods {' '.join(train_periods)}: {err}",
                        path="split.train_first") from None
    counts = summed_counts(Path(frequencies) / f"{period}.parquet" for period in train)
    return counts, WordPieces.from_texts(token_texts(load_tokenizer(tokenizer), counts.size))


def write_longtail(frame: pd.DataFrame, edges: tuple[int, int], seed: int, test: str,
                   out: str, metrics_dir: str, details: str, plot: str) -> None:
    """The Markdown report (``out``), one DVC metrics JSON per model (``metrics_dir``), every
    row (``details``) and the CSV ``plot`` of test types by bin with its PNG beside it."""
    png = Path(plot).with_suffix(".png")
    link = os.path.relpath(png.resolve(), Path(out).resolve().parent)
    with atomic_path(out) as tmp:
        tmp.write_text("# Long-tail word prediction\n\n" + markdown(frame, edges, seed)
                       + f"\n![types by training-frequency bin]({link})\n", encoding="utf-8")
    with atomic_path(metrics_dir) as tmp:
        tmp.mkdir()
        for model, entry in metrics_json(frame).items():
            write_json(entry, Path(tmp) / f"{model}.json")
    write_json({"edges": {"high_min": edges[0], "mid_min": edges[1]},
                "ugrm_seed": seed, "rows": frame.to_dict(orient="records")}, details)
    table = plot_frame(frame)
    with atomic_path(plot) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    line_panels(table, "bin", ["T1", "T10"], "model", png,
                [f"types T1 by training-frequency bin ({test})",
                 f"types T10 by training-frequency bin ({test})"], categorical_x=True)
