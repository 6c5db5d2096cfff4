"""The paper's result tables from the scored runs, plus staleness and long-tail metrics.

Input: the scored runs (:mod:`pipeline.reports.scored_runs`: :func:`load_runs`, and
:func:`summarize` for their means over seeds); the text names periods with the run's period noun
(:data:`pipeline.corpus.periods.NOUN`: "test year 2021", "test half-year 2021H1"). Output
pieces, all deterministic:

- Table 3: Dev and Test x PPL, CM, CPL per variant, mean ± sample std over seeds. It describes,
  it tests nothing: which differences are real is said only by the verdict sections
  (:mod:`pipeline.reports.model_verdicts`, passed to :func:`render` as ``sections``);
- the unigram reference: PPL of the training periods' add-one unigram model on the same tokens
  (:mod:`pipeline.evaluation.unigram`), so readers see how far above a context-free model each one is;
- staleness: PPL and CPL of every scored period (:mod:`pipeline.evaluation.staleness`);
- frequency buckets: NLL by history frequency, emerging tokens, recall@10 (:mod:`pipeline.evaluation.buckets`);
- Table 2: the first generated abstracts of each variant for the test period;
- per variant, the headline DVC metrics (:func:`headline`: dev/test PPL, CPL, CM) and the full
  numbers beside them (:func:`details_json`: means, stds, seeds, every scored period); one flat
  row per variant and one sortable bucket label (DVC plots).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from pipeline.corpus.periods import NOUN, in_time_order, kind_of
from pipeline.evaluation.buckets import BUCKETS, EMERGING, RARE_BUCKETS, bucket_metrics, load_bucket_features
from pipeline.evaluation.unigram import summed_counts, unigram_perplexity
from pipeline.models.perplexity import Perplexity
from pipeline.models.registry import common_seeds, display_name, lookup
from pipeline.reports.scored_runs import METRICS, SPLITS, Run, RunSeeds


def comparable(variant: str, metric: str) -> bool:
    """Whether ``variant``'s ``metric`` is the same quantity as a softmax LM's: PPL and CPL of a
    continuous model are of its vMF-normalised distribution (registry ``distribution``), another
    quantity; its CM (generated text) is comparable."""
    return metric == "cm" or lookup(variant).distribution == "softmax"


VMF_NOTE = ("† A continuous-output model (paper 004) has no softmax: its PPL and CPL are of the vMF "
            "densities at the vocabulary's target vectors renormalised to sum to 1 "
            "(`pipeline.models.continuous.vmf_log_probs`), not a language model's distribution. "
            "They are shown for completeness, never compared with the softmax models' in the "
            "verdicts; compare its next-word accuracy in `reports/longtail.md` instead.")


def bucket_frame(runs: dict[tuple[str, int], Run], variants: Sequence[str], seeds: RunSeeds,
                 frequencies_dir: str | os.PathLike[str], window: int,
                 baseline: str) -> pd.DataFrame:
    """Bucket metrics per (model, period), averaged over seeds: columns ``model``, ``period``,
    ``bucket``, ``n``, ``mean_nll``, ``nll_vs_baseline`` (minus the baseline's mean NLL in the
    same period and bucket: where the history helps), ``recall10``; periods in time order."""
    frames = []
    for period in runs[(variants[0], seeds[variants[0]][0])].periods:
        history, emerging = load_bucket_features(frequencies_dir, period, window)
        for v in variants:
            per_seed = []
            for s in seeds[v]:
                pos = runs[(v, s)].positions(period)
                per_seed.append(bucket_metrics(pos["target_id"].to_numpy(), pos["nll"].to_numpy(),
                                               pos["top10"].to_numpy(), history, emerging))
            mean = pd.concat(per_seed).groupby("bucket", sort=False).mean()
            frames.append(mean.reset_index().assign(model=display_name(v), period=period))
    frame = pd.concat(frames, ignore_index=True)
    frame["n"] = frame["n"].round().astype("int64")
    base = frame[frame["model"] == display_name(baseline)].set_index(["period", "bucket"])["mean_nll"]
    frame["nll_vs_baseline"] = frame["mean_nll"].to_numpy() - base.reindex(
        pd.MultiIndex.from_frame(frame[["period", "bucket"]])).to_numpy()
    return frame[["model", "period", "bucket", "n", "mean_nll", "nll_vs_baseline", "recall10"]]


def unigram_reference(runs: dict[tuple[str, int], Run], frequencies_dir: str | os.PathLike[str],
                      train_periods: Iterable[str]) -> dict[str, Perplexity]:
    """The unigram model of the training periods (labels; :mod:`pipeline.evaluation.unigram`)
    scored on each scored period's target tokens: every run scores the same tokens (one
    tokenizer, one context length), so the first run's ``positions_<label>`` stand for all."""
    counts = summed_counts(Path(frequencies_dir) / f"{p}.parquet" for p in train_periods)
    first = next(iter(runs.values()))
    return {period: unigram_perplexity(counts, first.positions(period)["target_id"].to_numpy())
            for period in first.periods}


def unigram_markdown(unigram: dict[str, Perplexity], summary: dict[str, dict]) -> str:
    """One line per scored period (time order): the unigram PPL, and how far below it the lowest model PPL is
    (a reference point, not a ranking: see :mod:`pipeline.reports.model_verdicts`)."""
    lines = []
    for period in in_time_order(unigram):
        ref = unigram[period]
        ppls = {v: e["periods"][period]["ppl"] for v, e in summary.items()}
        best = min(ppls, key=ppls.get)
        lines.append(f"- {period}: unigram PPL {ref.ppl:.2f} over {ref.n_tokens:,} tokens; lowest "
                     f"model PPL {display_name(best)} {ppls[best]:.2f} "
                     f"({ppls[best] / ref.ppl:.0%} of the unigram's)")
    return "\n".join(lines)


def _cell(stats: dict, metric: str, variant: str | None = None) -> str:
    if stats[metric] is None:          # CM of a period nothing was generated for
        return "–"
    if variant is not None and not comparable(variant, metric):   # often ~1e10: 3 digits say it
        return f"{stats[metric]:.3g} †"
    digits = 4 if metric == "cm" else 2
    text = f"{stats[metric]:.{digits}f}"
    if stats.get(f"{metric}_std") is not None:
        text += f" ± {stats[f'{metric}_std']:.{digits}f}"
    return text


def table3(summary: dict[str, dict]) -> str:
    """Markdown Table 3: each variant's dev and test PPL, CM and CPL (:func:`_cell`)."""
    any_v = next(iter(summary.values()))
    heads = [f"{s.capitalize()} {any_v[s]['period']} {m.upper()}" for s in SPLITS for m in METRICS]
    lines = ["| Model | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
    for v, entry in summary.items():
        lines.append(f"| {display_name(v)} | "
                     + " | ".join(_cell(entry[s], m, v) for s in SPLITS for m in METRICS) + " |")
    return "\n".join(lines)


def seeds_text(seeds: RunSeeds) -> str:
    """``0, 1, 2`` when every variant ran the same seeds; else each group of seeds with the
    variants that ran it: ``0, 1, 2, 3, 4 (Baseline, Frequency) and 0, 1, 2 (Context)``."""
    groups: dict[tuple[int, ...], list[str]] = {}
    for v, mine in seeds.items():
        groups.setdefault(tuple(mine), []).append(display_name(v))
    if len(groups) == 1:
        return ", ".join(map(str, next(iter(groups))))
    return " and ".join(f"{', '.join(map(str, g))} ({', '.join(names)})"
                        for g, names in groups.items())


def examples(runs: dict[tuple[str, int], Run], variants: Sequence[str], seed: int,
             n: int, period: str) -> str:
    """Markdown Table 2: the first ``n`` generated abstracts of each variant for ``period``."""
    parts = []
    for v in variants:
        gen = runs[(v, seed)].generations[period].sort_values("index").head(n)
        parts.append(f"### {display_name(v)}\n")
        for row in gen.itertuples():
            parts.append(f"{row.index + 1}. (CM {row.cm:.4f}) {row.text.replace(chr(10), ' ')}\n")
    return "\n".join(parts)


def bucket_markdown(frame: pd.DataFrame, noun: str = "year") -> str:
    """Mean NLL per history-frequency bucket and for emerging tokens, recall@10 for rare ones;
    one row per period (in ``frame``'s order) and model."""
    nll_heads = [f"NLL {b}" for b in (*BUCKETS, EMERGING)]
    rec_heads = [f"R@10 {b}" for b in RARE_BUCKETS]
    lines = [f"| {noun.capitalize()} | Model | " + " | ".join(nll_heads + rec_heads) + " |",
             "|---|---|" + "---:|" * (len(nll_heads) + len(rec_heads))]
    counts = frame.drop_duplicates(["period", "bucket"]).set_index(["period", "bucket"])["n"]
    for (period, model), part in frame.groupby(["period", "model"], sort=False):
        by = part.set_index("bucket")
        nll = [("—" if math.isnan(by.at[b, "mean_nll"]) else f"{by.at[b, 'mean_nll']:.2f}")
               for b in (*BUCKETS, EMERGING)]
        rec = [("—" if math.isnan(by.at[b, "recall10"]) else f"{by.at[b, 'recall10']:.3f}")
               for b in RARE_BUCKETS]
        lines.append(f"| {period} | {model} | " + " | ".join(nll + rec) + " |")
    sizes = "; ".join(f"{p}: " + ", ".join(f"{b} {counts[(p, b)]}" for b in (*BUCKETS, EMERGING))
                      for p in dict.fromkeys(frame["period"]))
    return "\n".join(lines) + f"\n\nTarget positions per bucket ({sizes})."


def render(runs: dict[tuple[str, int], Run], summary: dict[str, dict], variants: Sequence[str],
           seeds: RunSeeds, n_examples: int,
           buckets: pd.DataFrame | None = None, staleness: str | None = None,
           window: int | None = None, figures: dict[str, str] | None = None,
           unigram: dict[int, Perplexity] | None = None, sections: Sequence[str] = ()) -> str:
    """The whole ``reports/results.md`` text for ``summary``
    (:func:`pipeline.reports.scored_runs.summarize`).

    ``buckets`` (:func:`bucket_frame`), ``staleness`` (Markdown from
    :func:`pipeline.evaluation.staleness.staleness_markdown`) and ``unigram`` (:func:`unigram_reference`)
    add their sections when given; ``figures`` maps a section (``"staleness"``, ``"buckets"``) to
    an image path relative to the report; ``sections``: more Markdown lines, placed after Table 3
    (the verdicts: :func:`pipeline.reports.model_verdicts.verdict_sections`); Table 3 compares
    nothing, the verdicts in ``sections`` do.
    """
    shown = common_seeds(seeds)[0]   # Table 2 shows one seed every variant ran
    first = runs[(variants[0], shown)]
    test_period = first.split_period("test")
    noun = NOUN[kind_of(test_period)]
    figures = figures or {}
    parts = _table3_section(summary, seeds, len(first.generations[test_period]), noun)
    parts += list(sections)
    if unigram:
        parts += _unigram_section(unigram, summary, noun)
    if staleness is not None:
        parts += _staleness_section(staleness, figures.get("staleness"), noun)
    if buckets is not None:
        parts += _buckets_section(buckets, window, figures.get("buckets"), noun)
    parts += ["", f"## Table 2: generated abstracts for the test {noun} ({test_period}, seed "
              f"{shown})", "", examples(runs, variants, shown, n_examples, test_period)]
    return "\n".join(parts).rstrip() + "\n"


def _table3_section(summary: dict[str, dict], seeds: RunSeeds, n_gen: int,
                    noun: str = "year") -> list[str]:
    """The report's title and Table 3 (``n_gen``: abstracts generated per model for the test
    period; ``noun``: the period kind's name)."""
    metrics_table = table3(summary)
    one = {len(mine) for mine in seeds.values()} == {1}
    std_note = (f"one seed ({seeds_text(seeds)}): no standard deviation" if one else
                "mean ± sample standard deviation over seeds " + seeds_text(seeds))
    return [
        "# Results: future language modeling (Li & Flanigan, ICLR 2024)",
        "",
        "Generated by the `report` stage from `data/scores/`; do not edit by hand.",
        "",
        "## Table 3: perplexity, content METEOR and content perplexity",
        "",
        f"PPL and CPL (per token; lower: more probability on the real text) over every dev/test "
        f"abstract, each {noun} scored with its own history; CM (higher: closer to the gold "
        f"abstracts) = mean over {n_gen} generated abstracts of the max METEOR against the "
        f"{noun}'s gold abstracts, on content words. Cells: {std_note}.",
        "",
        metrics_table,
        *(["", VMF_NOTE] if any(not comparable(v, "ppl") for v in summary) else []),
        "",
        "The table describes; it tests nothing. Which differences are real is stated only in "
        "the Verdicts section below (a test over abstracts and trained runs, adjusted for the "
        "number of claims).",
    ]


def _unigram_section(unigram: dict[str, Perplexity], summary: dict[str, dict],
                     noun: str = "year") -> list[str]:
    return ["", f"Reference: a unigram model of the training {noun}s (token frequencies, add-one "
            "smoothed; `pipeline/evaluation/unigram.py`) scored on exactly the same target tokens. A "
            "model near it has learned little beyond word frequency.", "",
            unigram_markdown(unigram, summary)]


def _staleness_section(staleness: str, figure: str | None, noun: str = "year") -> list[str]:
    parts = ["", f"## Staleness: PPL and CPL by scored {noun}", "",
             f"Each {noun} is scored with its own history (the {noun}s before it); the last "
             f"column is the least-squares change per {noun}, i.e. how fast the model goes stale. "
             "Means over seeds. DVC plot: `plots/staleness.csv`.", "", staleness]
    if figure is not None:
        parts += ["", f"![PPL and CPL by {noun}]({figure})"]
    return parts


def _buckets_section(buckets: pd.DataFrame, window: int | None, figure: str | None,
                     noun: str = "year") -> list[str]:
    parts = ["", "## Long tail: NLL by history frequency", "",
             f"Mean NLL (nats per target token) of the scored {noun}'s target tokens, bucketed by "
             f"their count in the {window} history {noun}s; *emerging* = log frequency rose in "
             f"each of the last {window} {noun}s and the token occurred last {noun}. R@10: share "
             "of those positions whose target was among the model's 10 most likely tokens "
             "(rare buckets). Means over seeds. DVC plot: `plots/buckets.csv`.", "",
             bucket_markdown(buckets, noun)]
    if figure is not None:
        parts += ["", f"![NLL by history frequency]({figure})"]
    return parts


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


def bucket_plot_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`bucket_frame` plus ``history_bucket``, the bucket as a label that sorts in frequency
    order ("0: unseen", "1: 1", "2: 2-10", ..., "5: emerging"): DVC plots order an ordinal x
    axis by its text, which would put "11-100" before "2-10"."""
    order = {name: f"{i}: {name}" for i, name in enumerate((*BUCKETS, EMERGING))}
    out = frame.copy()
    out.insert(out.columns.get_loc("bucket") + 1, "history_bucket", out["bucket"].map(order))
    return out


def headline(entry: dict, variant: str | None = None) -> dict:
    """A variant's DVC metrics file: only dev and test PPL, CPL and CM (means over seeds), so
    ``dvc metrics show`` stays one short line per variant; the rest is :func:`details_json`.
    A continuous model's PPL and CPL (not :func:`comparable`: another distribution, often
    ~1e10) are left out, so DVC's table never lines them up with the softmax models' numbers.
    Values are rounded to the digits Table 3 prints (PPL/CPL 2, CM 4): the table stays within
    200 columns with ten variants, and the full values are in :func:`details_json`."""
    keep = [m for m in ("ppl", "cpl", "cm") if variant is None or comparable(variant, m)]
    return finite_or_none({s: {m: _rounded(entry[s][m], m) for m in keep
                               if entry[s][m] is not None} for s in SPLITS})


def _rounded(value: float, metric: str) -> float:
    return round(value, 4 if metric == "cm" else 2) if math.isfinite(value) else value


def details_json(summary: dict[str, dict], baseline: str) -> dict:
    """``reports/results.json``: the ``baseline``'s name and every variant's full
    :func:`~pipeline.reports.scored_runs.summarize` entry (seeds, dev/test means and stds, every
    scored period), JSON-safe. Numbers only: the verdicts are added beside them by the report
    stage."""
    return finite_or_none({"baseline": baseline, "variants": dict(summary)})


def finite_or_none(summary: dict) -> dict:
    """JSON-safe copy: NaN/inf become None (DVC metrics must be valid JSON)."""
    if isinstance(summary, dict):
        return {k: finite_or_none(v) for k, v in summary.items()}
    if isinstance(summary, float) and not math.isfinite(summary):
        return None
    return summary
