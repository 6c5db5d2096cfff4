"""Stage `split`: abstracts.parquet -> data/splits/{train,dev,test}.parquet + abstracts per year.

train = years --train-first..--train-last, dev = --dev-year, test = --test-year. Every year from
train_first - window to test_year - 1 must have abstracts (the history of some split); a missing
one is an error naming it. --counts-plot gets the per-year counts with each year's role (the
paper's Figure 3; a DVC plot).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.infra.io import atomic_path, read_parquet, write_parquet
from pipeline.corpus.splits import SplitYears, make_splits, year_counts
from pipeline.infra.params import SplitConfig
from stages._args import add_options
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stages.split", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--abstracts", required=True, help="kept abstracts Parquet (stage filter)")
    parser.add_argument("--out-dir", required=True,
                        help="folder for train.parquet, dev.parquet and test.parquet")
    add_options(parser, SplitConfig, "years (params split.*)")
    parser.add_argument("--window", type=int, required=True,
                        help="history window m in years (params features.window)")
    parser.add_argument("--counts-plot", required=True,
                        help="output CSV: year, abstracts, split (train/dev/test/history/unused)")
    return parser


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    # A SplitError (a UserError) names the param or the missing years and the fix.
    years = SplitYears(args.train_first, args.train_last, args.dev_year, args.test_year,
                       args.window)
    abstracts = read_parquet(args.abstracts)
    splits = make_splits(abstracts, years)
    out_dir = Path(args.out_dir)
    for name, frame in splits.items():
        write_parquet(frame, out_dir / f"{name}.parquet")
        print(f"{name}: {len(frame):,} abstracts -> {out_dir / f'{name}.parquet'}")
    with atomic_path(args.counts_plot) as tmp:
        year_counts(abstracts, years).to_csv(tmp, index=False)


if __name__ == "__main__":
    main()
