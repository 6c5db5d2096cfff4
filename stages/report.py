"""Stage `report`: the paper's Tables 2-3, the verdicts, staleness and long-tail metrics of every model.

Reads data/scores/<variant>-s<seed>/ (metrics.json, tokens_, generations_, positions_<label>.parquet)
and the per-period frequency files. Writes reports/results.md (Table 3, the verdicts of
pipeline/reports/model_verdicts.py, the unigram reference, staleness, NLL by history-frequency
bucket, Table 2 examples), metrics/variants/<variant>.json (dev and test PPL, CPL, CM: DVC
metrics), reports/results.json (every number behind them; under "verdicts" the records of the
report's claims) and, for DVC plots, plots/results.csv, plots/staleness.csv, plots/buckets.csv
and PNGs of the last two. With --train-split, --dev, --test, --abstracts and --stopwords it adds
the section "CM anchors and fluency" and its `cm-anchor` verdicts (--abstracts also groups the
test abstracts by report.cluster_by for the verdicts' document variance); with --signal (the signal
stage's JSON) the section "Share of the signal".
"""

from __future__ import annotations

import argparse
import sys

from pipeline.corpus.groups import abstract_groups
from pipeline.infra.errors import UserError
from pipeline.interfaces.report import INTERFACE
from pipeline.models.registry import display_name, seeds_by_variant
from pipeline.reports.figures import results_figures
from pipeline.reports.results_report import ReportFiles, build_report, write_report
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    given = [a for a in ANCHOR_ARGS if getattr(args, a.replace("-", "_")) is not None]
    if given and len(given) != len(ANCHOR_ARGS):
        raise UserError(f"the CM anchors need --{', --'.join(ANCHOR_ARGS)} together")
    groups = None if args.abstracts is None else abstract_groups(args.abstracts, args.cluster_by)
    if args.examples < 0:
        raise UserError(f"--examples must be >= 0, got {args.examples}", path="report.examples")
    files = ReportFiles(args.out, args.metrics_dir, args.details, args.plots, args.staleness,
                        args.buckets)
    anchors = None if args.abstracts is None else (
        args.train_split, args.dev, args.test, args.abstracts, args.stopwords)
    seeds = seeds_by_variant(args.variants, args.seeds, args.other_seeds)
    report = build_report(args.scores, args.variants, seeds, args.baseline, args.examples,
                          args.frequencies, args.window, args.train_periods, args.corpus_counts,
                          anchors, files, signal=args.signal, groups=groups)
    write_report(report, files, args.baseline)
    results_figures(report.staleness, report.buckets, report.pngs, display_name(args.baseline))
    print(f"wrote {args.out}, {args.metrics_dir}/, {args.details} and the plots", file=sys.stderr)


ANCHOR_ARGS = ("train-split", "dev", "test", "abstracts", "stopwords")


if __name__ == "__main__":
    main()
