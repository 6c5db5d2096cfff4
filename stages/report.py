"""Stage `report`: the paper's Tables 2-3, staleness curves and long-tail metrics of every model.

Reads data/scores/<variant>-s<seed>/ (metrics.json, tokens_, generations_, positions_<label>.parquet;
labels of split.period's kind: 2021, 2021H1, 2021Q3, 2021-07) and the per-period frequency files.
Writes reports/results.md (Table 3 with significance tests against the baseline, the unigram
reference, staleness tables, NLL by history-frequency bucket, Table 2 examples; the text names the
period kind: "test year", "test half-year"), metrics/variants/<variant>.json (dev and test PPL,
CPL, CM: DVC metrics), reports/results.json (stds, p-values and their log10, better/worse counts,
seeds, each scored period; under "verdicts" the records of its claims) and CSVs for DVC plots, periods in time order: plots/results.csv,
plots/staleness.csv (model, period, ppl, cpl), plots/buckets.csv (model, period, bucket,
history_bucket, n, mean_nll, nll_vs_baseline, recall10), and PNGs of the last two.
With the split files, the corpus table and the stopword list (--train-split, --dev, --test,
--abstracts, --stopwords), it adds the section "CM anchors and fluency"
(:mod:`pipeline.reports.cm_anchors_report`) and its `cm-anchor` verdicts.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pipeline.corpus.periods import NOUN, in_time_order, kind_of, span
from pipeline.infra.errors import UserError
from pipeline.reports.figures import line_panels
from pipeline.infra.io import atomic_path, write_json
from pipeline.models.registry import display_name
from pipeline.evaluation.content import load_stopwords
from pipeline.reports.cm_anchors_report import (build_cm_anchors, cm_anchor_claims,
                                                render_cm_anchors)
from pipeline.reports.output_layers import output_layer_section
from pipeline.stats.verdict import Verdict, judge, to_records
from pipeline.reports.results import (bucket_frame, bucket_plot_frame, details_json, headline,
                                      load_runs, plot_rows, render, summarize, unigram_reference)
from pipeline.evaluation.staleness import last_corpus_date, staleness_frame, staleness_markdown
from pipeline.infra.params import ReportConfig
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
    anchors = p.add_argument_group(
        "CM anchors and fluency (all or none; without them the section is left out)")
    anchors.add_argument("--train-split", default=None,
                         help="data/splits/train.parquet: the content-word sampler's counts")
    anchors.add_argument("--dev", default=None, help="data/splits/dev.parquet (gold abstracts)")
    anchors.add_argument("--test", default=None, help="data/splits/test.parquet (gold abstracts)")
    anchors.add_argument("--abstracts", default=None,
                         help="data/corpus/abstracts.parquet: other periods' gold abstracts and "
                              "the previous period's abstracts")
    anchors.add_argument("--stopwords", default=None, help="data/reference/stopwords.txt")
    p.add_argument("--out", required=True, help="Markdown report (reports/results.md)")
    p.add_argument("--metrics-dir", required=True,
                   help="DVC metrics, one small JSON per variant (metrics/variants)")
    p.add_argument("--details", required=True,
                   help="every number behind the metrics, one JSON (reports/results.json)")
    p.add_argument("--plots", required=True, help="CSV for DVC plots (plots/results.csv)")
    p.add_argument("--staleness", required=True, help="CSV plots/staleness.csv (+ .png beside it)")
    p.add_argument("--buckets", required=True, help="CSV plots/buckets.csv (+ .png beside it)")
    args = p.parse_args(argv)

    given = [a for a in ANCHOR_ARGS if getattr(args, a) is not None]
    if given and len(given) != len(ANCHOR_ARGS):
        raise UserError("the CM anchors need --train-split, --dev, --test, --abstracts and "
                        f"--stopwords together; got only {', '.join(given)}")
    if args.examples < 0:
        raise UserError(f"--examples must be >= 0, got {args.examples}", path="report.examples")
    report = build_report(args)
    write_report(report, args)
    plot_figures(report, args.baseline)
    print(f"wrote {args.out}, {args.metrics_dir}/, {args.details} and the plots", file=sys.stderr)


ANCHOR_ARGS = ("train_split", "dev", "test", "abstracts", "stopwords")


@dataclass(frozen=True)
class Report:
    """Everything the stage writes: the Markdown, the per-variant summary (metrics, plot rows),
    the staleness and bucket tables (CSVs and figures) and the figures' paths."""

    text: str
    summary: dict[str, dict]
    staleness: pd.DataFrame
    buckets: pd.DataFrame
    pngs: dict[str, str]
    verdicts: list[Verdict] = field(default_factory=list)


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
    sections = output_layer_section(runs, args.variants, args.seeds)
    verdicts: list[Verdict] = []
    if args.abstracts is not None:
        verdicts, anchor_section = cm_anchors(runs, args)
        sections = [*sections, "", anchor_section]
    text = render(runs, summary, args.variants, args.seeds, args.baseline, args.examples,
                  buckets=buckets, window=args.window, figures=figures,
                  staleness=staleness_markdown(stale, last_corpus_date(args.corpus_counts)),
                  unigram=unigram,
                  sections=sections)
    return Report(text, summary, stale, buckets, pngs, verdicts)


def cm_anchors(runs: dict, args: argparse.Namespace) -> tuple[list[Verdict], str]:
    """The cm-anchor verdicts and the section "CM anchors and fluency"."""
    first = runs[(args.variants[0], args.seeds[0])]
    splits = {first.split_period("dev"): args.dev, first.split_period("test"): args.test}
    anchors, models = build_cm_anchors(runs, args.variants, args.seeds, train=args.train_split,
                                       splits=splits, corpus=args.abstracts,
                                       stopwords=load_stopwords(args.stopwords))
    verdicts = judge(cm_anchor_claims(anchors, models))
    noun = NOUN[kind_of(first.split_period("test"))]
    return verdicts, render_cm_anchors(verdicts, anchors, models, noun)


def write_report(report: Report, args: argparse.Namespace) -> None:
    """The Markdown, one metrics file per variant, their details, and the CSVs for DVC plots."""
    with atomic_path(args.out) as tmp:
        tmp.write_text(report.text, encoding="utf-8")
    with atomic_path(args.metrics_dir) as tmp:
        tmp.mkdir()
        for variant, entry in report.summary.items():
            write_json(headline(entry, variant), Path(tmp) / f"{variant}.json")
    details = details_json(report.summary, args.baseline)
    if report.verdicts:
        details["verdicts"] = to_records(report.verdicts)
    write_json(details, args.details)
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
