"""Stage `report`: the paper's Tables 2-3, staleness curves and long-tail metrics of every model.

Reads data/scores/<variant>-s<seed>/ (metrics.json, tokens_, generations_, positions_<label>.parquet;
labels of split.period's kind: 2021, 2021H1, 2021Q3, 2021-07) and the per-period frequency files.
Writes reports/results.md (Table 3, the verdicts of pipeline/reports/model_verdicts.py, the unigram
reference, staleness tables, NLL by history-frequency bucket, Table 2 examples; the text names the
period kind: "test year", "test half-year"), metrics/variants/<variant>.json (dev and test PPL,
CPL, CM: DVC metrics), reports/results.json (stds, trained-model sign tests and their log10, the verdict records, better/worse counts,
seeds, each scored period) and CSVs for DVC plots, periods in time order: plots/results.csv,
plots/staleness.csv (model, period, ppl, cpl), plots/buckets.csv (model, period, bucket,
history_bucket, n, mean_nll, nll_vs_baseline, recall10), and PNGs of the last two.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipeline.corpus.periods import NOUN, in_time_order, kind_of, span
from pipeline.infra.errors import UserError
from pipeline.reports.figures import line_panels
from pipeline.infra.io import atomic_path, write_json
from pipeline.models.registry import display_name
from pipeline.reports.model_verdicts import model_claims, verdict_sections
from pipeline.reports.results import (bucket_frame, bucket_plot_frame, details_json, headline,
                                      load_runs, plot_rows, render, summarize, unigram_reference)
from pipeline.evaluation.staleness import last_corpus_date, staleness_frame, staleness_markdown
from pipeline.infra.params import ReportConfig
from pipeline.stats.verdict import Verdict, judge, to_records
from stages._args import add_options
from stages._cli import stage_main


def write_csv(frame: pd.DataFrame, path: str) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")


@stage_main
def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m stages.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scores", required=True, help="folder of score folders (data/scores)")
    p.add_argument("--variants", nargs="+", required=True, help="variants, in table order")
    p.add_argument("--seeds", nargs="+", type=int, required=True, help="training seeds")
    add_options(p, ReportConfig, "report (params report.*)")
    p.add_argument("--frequencies", required=True,
                   help="per-period frequency folder (data/features/frequencies), for the buckets")
    p.add_argument("--window", type=int, required=True, help="history periods m (features.window)")
    p.add_argument("--train-periods", nargs=2, required=True, metavar=("FIRST", "LAST"),
                   help="first and last training period, labels (split.train_first, "
                        "split.train_last): their frequency files give the unigram reference "
                        "perplexity")
    p.add_argument("--corpus-counts", default=None,
                   help="reports/corpus.json (stage filter's per-year counts): marks periods "
                        "in the corpus's last year as possibly partial")
    p.add_argument("--out", required=True, help="Markdown report (reports/results.md)")
    p.add_argument("--metrics-dir", required=True,
                   help="DVC metrics, one small JSON per variant (metrics/variants)")
    p.add_argument("--details", required=True,
                   help="every number behind the metrics, one JSON (reports/results.json)")
    p.add_argument("--plots", required=True, help="CSV for DVC plots (plots/results.csv)")
    p.add_argument("--staleness", required=True, help="CSV plots/staleness.csv (+ .png beside it)")
    p.add_argument("--buckets", required=True, help="CSV plots/buckets.csv (+ .png beside it)")
    args = p.parse_args(argv)

    if args.examples < 0:
        raise UserError(f"--examples must be >= 0, got {args.examples}", path="report.examples")
    report = build_report(args)
    write_report(report, args)
    plot_figures(report, args.baseline)
    print(f"wrote {args.out}, {args.metrics_dir}/, {args.details} and the plots", file=sys.stderr)


@dataclass(frozen=True)
class Report:
    """Everything the stage writes: the Markdown, the per-variant summary (metrics, plot rows),
    the staleness and bucket tables (CSVs and figures) and the figures' paths."""

    text: str
    summary: dict[str, dict]
    staleness: pd.DataFrame
    buckets: pd.DataFrame
    pngs: dict[str, str]
    verdicts: list[Verdict]


def build_report(args: argparse.Namespace) -> Report:
    runs = load_runs(args.scores, args.variants, args.seeds)
    summary = summarize(runs, args.variants, args.seeds, args.baseline)
    names = {v: display_name(v) for v in args.variants}
    stale = staleness_frame(summary, names)
    buckets = bucket_frame(runs, args.variants, args.seeds, args.frequencies, args.window,
                           args.baseline)
    first, last = args.train_periods
    try:
        train = span(first, last)
    except ValueError as err:
        raise UserError(f"--train-periods {first} {last}: {err}", path="split.train_first") from None
    unigram = unigram_reference(runs, args.frequencies, train)
    pngs = {k: str(Path(path).with_suffix(".png")) for k, path in
            (("staleness", args.staleness), ("buckets", args.buckets))}
    report_dir = Path(args.out).resolve().parent
    figures = {k: os.path.relpath(Path(v).resolve(), report_dir) for k, v in pngs.items()}
    test = runs[(args.variants[0], args.seeds[0])].split_period("test")
    verdicts = judge(model_claims(runs, args.variants, args.seeds, test, args.baseline))
    text = render(runs, summary, args.variants, args.seeds, args.baseline, args.examples,
                  buckets=buckets, window=args.window, figures=figures,
                  staleness=staleness_markdown(stale, last_corpus_date(args.corpus_counts)),
                  unigram=unigram,
                  sections=verdict_sections(verdicts, args.seeds, NOUN[kind_of(test)]))
    return Report(text, summary, stale, buckets, pngs, verdicts)


def write_report(report: Report, args: argparse.Namespace) -> None:
    """The Markdown, one metrics file per variant, their details, and the CSVs for DVC plots."""
    with atomic_path(args.out) as tmp:
        tmp.write_text(report.text, encoding="utf-8")
    with atomic_path(args.metrics_dir) as tmp:
        tmp.mkdir()
        for variant, entry in report.summary.items():
            write_json(headline(entry, variant), Path(tmp) / f"{variant}.json")
    write_json({**details_json(report.summary, args.baseline),
                "verdicts": to_records(report.verdicts)}, args.details)
    write_csv(plot_rows(report.summary), args.plots)
    write_csv(report.staleness, args.staleness)
    write_csv(bucket_plot_frame(report.buckets), args.buckets)


def plot_figures(report: Report, baseline: str) -> None:
    """The PNGs linked from the report: staleness curves (periods in time order), and NLL by
    bucket in the last period."""
    period = in_time_order(report.buckets["period"])[-1]
    noun = NOUN[kind_of(period)]                      # "year" for years: the titles as before
    line_panels(report.staleness, "period", ["ppl", "cpl"], "model", report.pngs["staleness"],
                [f"PPL by scored {noun}", f"CPL by scored {noun}"])
    last = report.buckets[report.buckets["period"] == period]
    line_panels(last, "bucket", ["mean_nll", "nll_vs_baseline"], "model", report.pngs["buckets"],
                [f"mean NLL by history count ({period})",
                 f"NLL minus {display_name(baseline)}'s ({period})"], categorical_x=True)

if __name__ == "__main__":
    main()
