"""The paper's result tables from the score folders (Table 2 examples, Table 3 metrics).

Input: one folder per trained model, ``<scores>/<variant>-s<seed>/`` (written by the score stage,
layout in docs/design.md). Output pieces, all deterministic:

- Table 3: Dev and Test x PPL, CM, CPL per variant, mean ± sample std over seeds, with the
  two-sided sign-test p-value of each variant against the baseline (§4.7), pooled over seeds by
  pairing the same seed's items (abstracts for PPL/CPL, generated abstract ``i`` for CM);
- Table 2: the first generated abstracts of each variant for the test year;
- per-variant metric dicts (DVC metrics) and one flat row per variant (DVC plots).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.io import read_json, read_parquet
from pipeline.significance import SignTest, paired_sign_test

SPLITS = ("dev", "test")
METRICS = ("ppl", "cm", "cpl")                      # Table 3 column order
HIGHER_IS_BETTER = {"ppl": False, "cm": True, "cpl": False}
PAPER_NAMES = {"baseline": "Baseline-all", "frequency-nolstm": "Frequency-NoLSTM",
               "frequency": "Frequency", "context": "Context", "context2": "Context²"}


def display_name(variant: str) -> str:
    """The paper's name for a variant (``baseline-2`` -> ``Baseline-2``)."""
    if variant.startswith("baseline-"):
        return "Baseline-" + variant[len("baseline-"):]
    return PAPER_NAMES.get(variant, variant)


@dataclass(frozen=True)
class Run:
    """The scores of one trained model (one variant, one seed)."""
    variant: str
    seed: int
    metrics: dict
    tokens: dict[str, pd.DataFrame]
    generations: dict[str, pd.DataFrame]

    def items(self, split: str, metric: str) -> pd.Series:
        """Per-item scores for the paired test, indexed by item id."""
        if metric == "cm":
            gen = self.generations[split]
            return pd.Series(gen["cm"].to_numpy(), index=gen["index"].to_numpy())
        tok = self.tokens[split]
        if metric == "ppl":
            return pd.Series((tok["nll_sum"] / tok["n_tokens"]).to_numpy(), index=tok["key"])
        keep = tok["n_content"] > 0
        return pd.Series((tok["content_nll_sum"][keep] / tok["n_content"][keep]).to_numpy(),
                         index=tok["key"][keep])


def load_run(scores_dir: str | os.PathLike[str], variant: str, seed: int) -> Run:
    folder = Path(scores_dir) / f"{variant}-s{seed}"
    if not (folder / "metrics.json").exists():
        raise FileNotFoundError(f"{folder}/metrics.json is missing: score this model first "
                                f"(`dvc repro score@{variant}-{seed}`), or drop {variant!r}/seed "
                                f"{seed} from experiment in params.yaml")
    return Run(variant=variant, seed=seed, metrics=read_json(folder / "metrics.json"),
               tokens={s: read_parquet(folder / f"tokens_{s}.parquet") for s in SPLITS},
               generations={s: read_parquet(folder / f"generations_{s}.parquet") for s in SPLITS})


def load_runs(scores_dir: str | os.PathLike[str], variants: Sequence[str],
              seeds: Sequence[int]) -> dict[tuple[str, int], Run]:
    return {(v, s): load_run(scores_dir, v, s) for v in variants for s in seeds}


def sign_test(runs: dict[tuple[str, int], Run], variant: str, baseline: str,
              seeds: Sequence[int], split: str, metric: str) -> SignTest:
    """Paired sign test of ``variant`` vs ``baseline``, items pooled over seeds."""
    model, base = [], []
    for seed in seeds:
        a = runs[(variant, seed)].items(split, metric)
        b = runs[(baseline, seed)].items(split, metric)
        common = a.index.intersection(b.index)
        if len(common) == 0:
            raise ValueError(f"{variant} and {baseline} (seed {seed}) share no {split} items for "
                             f"{metric}: were they scored on the same split?")
        model.append(a.loc[common].to_numpy())
        base.append(b.loc[common].to_numpy())
    return paired_sign_test(np.concatenate(model), np.concatenate(base), HIGHER_IS_BETTER[metric])


def summarize(runs: dict[tuple[str, int], Run], variants: Sequence[str], seeds: Sequence[int],
              baseline: str) -> dict[str, dict]:
    """Per variant: {split: {metric: mean, metric_std, metric_p, ...}, "seeds": [...]}."""
    if baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not among the variants {list(variants)}")
    out: dict[str, dict] = {}
    for v in variants:
        entry: dict = {"seeds": list(seeds)}
        for split in SPLITS:
            stats: dict = {"year": runs[(v, seeds[0])].metrics[split]["year"]}
            for metric in METRICS:
                values = [float(runs[(v, s)].metrics[split][metric]) for s in seeds]
                stats[metric] = float(np.mean(values))
                stats[f"{metric}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else None
                if v != baseline:
                    test = sign_test(runs, v, baseline, seeds, split, metric)
                    stats[f"{metric}_p"] = test.p_value
                    stats[f"{metric}_better"] = test.better
                    stats[f"{metric}_worse"] = test.worse
            entry[split] = stats
        out[v] = entry
    return out


def _cell(stats: dict, metric: str) -> str:
    digits = 4 if metric == "cm" else 2
    text = f"{stats[metric]:.{digits}f}"
    if stats.get(f"{metric}_std") is not None:
        text += f" ± {stats[f'{metric}_std']:.{digits}f}"
    return text


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2e}" if value < 1e-3 else f"{value:.3f}"


def table3(summary: dict[str, dict], baseline: str) -> tuple[str, str]:
    """Markdown Table 3 (metrics) and its companion table of sign-test p-values."""
    any_v = next(iter(summary.values()))
    heads = [f"{s.capitalize()} {any_v[s]['year']} {m.upper()}" for s in SPLITS for m in METRICS]
    lines = ["| Model | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    p_lines = list(lines)
    for v, entry in summary.items():
        lines.append(f"| {display_name(v)} | "
                     + " | ".join(_cell(entry[s], m) for s in SPLITS for m in METRICS) + " |")
        if v != baseline:
            p_lines.append(f"| {display_name(v)} | "
                           + " | ".join(_p(entry[s].get(f"{m}_p")) for s in SPLITS for m in METRICS)
                           + " |")
    return "\n".join(lines), "\n".join(p_lines)


def examples(runs: dict[tuple[str, int], Run], variants: Sequence[str], seed: int,
             n: int, split: str = "test") -> str:
    """Markdown Table 2: the first ``n`` generated abstracts of each variant for ``split``."""
    parts = []
    for v in variants:
        gen = runs[(v, seed)].generations[split].sort_values("index").head(n)
        parts.append(f"### {display_name(v)}\n")
        for row in gen.itertuples():
            parts.append(f"{row.index + 1}. (CM {row.cm:.4f}) {row.text.replace(chr(10), ' ')}\n")
    return "\n".join(parts)


def render(runs: dict[tuple[str, int], Run], variants: Sequence[str], seeds: Sequence[int],
           baseline: str, n_examples: int) -> tuple[str, dict[str, dict]]:
    """The whole ``reports/results.md`` text and the per-variant summary it shows."""
    summary = summarize(runs, variants, seeds, baseline)
    metrics_table, p_table = table3(summary, baseline)
    first = runs[(variants[0], seeds[0])]
    n_gen = len(first.generations["test"])
    std_note = ("mean ± sample standard deviation over seeds " + ", ".join(map(str, seeds))
                if len(seeds) > 1 else f"one seed ({seeds[0]}): no standard deviation")
    text = "\n".join([
        "# Results: future language modeling (Li & Flanigan, ICLR 2024)",
        "",
        "Generated by the `report` stage from `data/scores/`; do not edit by hand.",
        "",
        "## Table 3: perplexity, content METEOR and content perplexity",
        "",
        f"PPL and CPL (lower is better) over every dev/test abstract, each year scored with its own "
        f"history; CM (higher is better) = mean over {n_gen} generated abstracts of the max METEOR "
        f"against the year's gold abstracts, on content words. Cells: {std_note}.",
        "",
        metrics_table,
        "",
        f"Two-sided exact sign test against {display_name(baseline)} (p-values; items pooled over "
        "seeds: abstracts for PPL/CPL, generated abstract i for CM; ties dropped).",
        "",
        p_table,
        "",
        f"## Table 2: generated abstracts for the test year "
        f"({first.metrics['test']['year']}, seed {seeds[0]})",
        "",
        examples(runs, variants, seeds[0], n_examples),
    ])
    return text.rstrip() + "\n", summary


def plot_rows(summary: dict[str, dict]) -> pd.DataFrame:
    """One flat row per variant (``dev_ppl``, ``test_cm``, ...) for DVC plots."""
    rows = []
    for v, entry in summary.items():
        row = {"variant": display_name(v)}
        for s in SPLITS:
            for m in METRICS:
                row[f"{s}_{m}"] = entry[s][m]
        rows.append(row)
    return pd.DataFrame(rows)


def finite_or_none(summary: dict) -> dict:
    """JSON-safe copy: NaN/inf become None (DVC metrics must be valid JSON)."""
    if isinstance(summary, dict):
        return {k: finite_or_none(v) for k, v in summary.items()}
    if isinstance(summary, float) and not math.isfinite(summary):
        return None
    return summary
