"""Stage `report`: the paper's Tables 2-3, the verdicts, staleness and long-tail metrics of every model.

Reads data/scores/<variant>-s<seed>/ (metrics.json, tokens_, generations_, positions_<label>.parquet)
and the per-period frequency files. Writes reports/results.md (Table 3, the verdicts of
pipeline/reports/model_verdicts.py, the unigram reference, staleness, NLL by history-frequency
bucket, Table 2 examples), metrics/variants/<variant>.json (dev and test PPL, CPL, CM: DVC
metrics), reports/results.json (every number behind them; under "verdicts" the records of the
report's claims) and, for DVC plots, plots/results.csv, plots/staleness.csv, plots/buckets.csv
and PNGs of the last two. With --train-split, --dev, --test, --abstracts and --stopwords it adds
the section "CM anchors and fluency" and its `cm-anchor` verdicts.
"""

from __future__ import annotations

import argparse
import sys

from pipeline.infra.errors import UserError
from pipeline.infra.params import ReportConfig
from pipeline.models.registry import display_name
from pipeline.reports.figures import results_figures
from pipeline.reports.results_report import ReportFiles, build_report, write_report
from stages._args import add_options
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
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
    return p


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    given = [a for a in ANCHOR_ARGS if getattr(args, a.replace("-", "_")) is not None]
    if given and len(given) != len(ANCHOR_ARGS):
        raise UserError(f"the CM anchors need --{', --'.join(ANCHOR_ARGS)} together")
    if args.examples < 0:
        raise UserError(f"--examples must be >= 0, got {args.examples}", path="report.examples")
    files = ReportFiles(args.out, args.metrics_dir, args.details, args.plots, args.staleness,
                        args.buckets)
    anchors = None if args.abstracts is None else (
        args.train_split, args.dev, args.test, args.abstracts, args.stopwords)
    report = build_report(args.scores, args.variants, args.seeds, args.baseline, args.examples,
                          args.frequencies, args.window, args.train_periods, args.corpus_counts,
                          anchors, files)
    write_report(report, files, args.baseline)
    results_figures(report.staleness, report.buckets, report.pngs, display_name(args.baseline))
    print(f"wrote {args.out}, {args.metrics_dir}/, {args.details} and the plots", file=sys.stderr)


ANCHOR_ARGS = ("train-split", "dev", "test", "abstracts", "stopwords")


if __name__ == "__main__":
    main()
