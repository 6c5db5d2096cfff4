"""The scored runs a report reads: one folder per trained model, and their means over seeds.

Input: one folder per trained model, ``<scores>/<variant>-s<seed>/`` (score stage, layout in
docs/formats.md): ``metrics.json`` with ``dev_period``, ``test_period`` and ``periods`` (every
scored period, by label: ``2021``, ``2021H1``, ``2021Q3``, ``2021-07``), and per period
``tokens_<label>.parquet`` (per-abstract NLL sums), ``generations_<label>.parquet`` (generated
abstracts with CM) and ``positions_<label>.parquet`` (per-position NLL and top-10 hit). Periods
are listed in time order (by ordinal, :mod:`pipeline.corpus.periods`), never alphabetically.
:func:`summarize` describes them (means and standard deviations over seeds); it tests nothing:
the verdicts are :mod:`pipeline.reports.model_verdicts`'.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.corpus.periods import in_time_order
from pipeline.evaluation.layout import METRICS_FILE, generations_file, positions_file, tokens_file
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_json, read_parquet
from pipeline.infra.runs import run_name

SPLITS = ("dev", "test")
# Each variant's seeds (pipeline.models.registry.seeds_by_variant): the sides of a temporal-gain
# claim may run more seeds than the other variants
RunSeeds = Mapping[str, Sequence[int]]
METRICS = ("ppl", "cm", "cpl")                      # Table 3 column order


@dataclass(frozen=True)
class Run:
    """The scores of one trained model (one variant, one seed) for every scored period."""
    variant: str
    seed: int
    folder: Path
    metrics: dict
    tokens: dict[str, pd.DataFrame]
    generations: dict[str, pd.DataFrame]

    @property
    def periods(self) -> list[str]:
        """The scored periods' labels in time order."""
        return in_time_order(self.metrics["periods"])

    def split_period(self, split: str) -> str:
        return str(self.metrics[f"{split}_period"])

    def period_metrics(self, period: str) -> dict:
        return self.metrics["periods"][str(period)]

    def positions(self, period: str) -> pd.DataFrame:
        """Per-position targets, NLLs and top-10 hits of ``period`` (read on demand: it is large)."""
        return read_parquet(self.folder / positions_file(period),
                            columns=["target_id", "nll", "top10"])


def load_run(scores_dir: str | os.PathLike[str], variant: str, seed: int) -> Run:
    run = run_name(variant, seed)
    folder = Path(scores_dir) / run
    if not (folder / METRICS_FILE).exists():
        raise UserError(f"the scores of {variant} seed {seed} are missing", path=folder / METRICS_FILE,
                        fix=f"score this model first (`dvc repro score-{run}`), or drop "
                            f"{variant!r}/seed {seed} from `experiment` in params.yaml")
    metrics = read_json(folder / METRICS_FILE)
    if "periods" not in metrics or "dev_period" not in metrics:
        raise UserError("metrics.json predates per-period scoring (no `periods`/`dev_period`)",
                        path=folder / METRICS_FILE, fix=f"re-run `dvc repro score-{run}`")
    periods = in_time_order(metrics["periods"])
    generations = {p: read_parquet(folder / generations_file(p)) for p in periods
                   if (folder / generations_file(p)).exists()}
    return Run(variant=variant, seed=seed, folder=folder, metrics=metrics,
               tokens={p: read_parquet(folder / tokens_file(p)) for p in periods},
               generations=generations)


def load_runs(scores_dir: str | os.PathLike[str], variants: Sequence[str],
              seeds: RunSeeds) -> dict[tuple[str, int], Run]:
    runs = {(v, s): load_run(scores_dir, v, s) for v in variants for s in seeds[v]}
    first = next(iter(runs.values()))
    for (v, s), run in runs.items():
        for split in SPLITS:
            if run.split_period(split) != first.split_period(split):
                raise UserError(f"{v} seed {s} has {split} period {run.split_period(split)}, but "
                                f"{first.variant} seed {first.seed} has "
                                f"{first.split_period(split)}", path=run.folder,
                                fix="re-score every model with the same split periods")
    return runs


def summarize(runs: dict[tuple[str, int], Run], variants: Sequence[str], seeds: RunSeeds,
              baseline: str) -> dict[str, dict]:
    """Per variant: {"seeds", split: {"period", metric, metric_std}, "periods": {label: {ppl,
    cpl, cm}}} (means over seeds, sample std over seeds or None for one seed; periods in time
    order). Descriptive only: no test (the verdicts are :mod:`pipeline.reports.model_verdicts`').
    ``baseline`` must be one of ``variants``: the report's other tables are relative to it."""
    if baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not among the variants {list(variants)}")
    out: dict[str, dict] = {}
    for v in variants:
        mine = seeds[v]
        entry: dict = {"seeds": list(mine)}
        for split in SPLITS:
            period = runs[(v, mine[0])].split_period(split)
            stats: dict = {"period": period}
            for metric in METRICS:
                raw = [runs[(v, s)].period_metrics(period)[metric] for s in mine]
                if any(x is None for x in raw):   # CM of a period nothing was generated for
                    stats[metric] = stats[f"{metric}_std"] = None
                    continue
                values = [float(x) for x in raw]
                stats[metric] = float(np.mean(values))
                stats[f"{metric}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else None
            entry[split] = stats
        entry["periods"] = {
            p: {m: float(np.mean([runs[(v, s)].period_metrics(p)[m] for s in mine]))
                for m in ("ppl", "cpl", "cm") if runs[(v, mine[0])].period_metrics(p).get(m) is not None}
            for p in runs[(v, mine[0])].periods}
        out[v] = entry
    return out
