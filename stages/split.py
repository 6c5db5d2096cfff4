"""Stage `split`: abstracts.parquet -> data/splits/{train,dev,test}.parquet + documents per period.

Each document's period (--period: year 2020, half 2020H2, quarter 2020Q3, month 2020-07) comes
from its date; a document whose date is coarser than the period (a bare year under quarters) has
none and goes to --rejects with its reason. train = --train-first..--train-last, dev = --dev,
test = --test. Every period the run reads (the history train_first - window .. test - 1, dev,
test, and --needs: the periods the score, forecast and report stages read, written by the stage
graph) must hold documents: an empty one stops here, before any training, naming it and a coarser
period to try; one below --min-documents warns. --counts-plot gets the per-period counts with each
period's role, in time order (the paper's Figure 3; a DVC plot).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.corpus.splits import (
    SplitPeriods,
    check_periods,
    document_periods,
    make_splits,
    period_counts,
    period_rejects,
)
from pipeline.infra.io import atomic_path, read_parquet, write_parquet
from pipeline.interfaces.split import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    # A SplitError (a UserError) names the param or the empty periods and the fix.
    split = SplitPeriods.from_params(args.period, args.train_first, args.train_last, args.dev,
                                     args.test, args.window)
    abstracts = read_parquet(args.abstracts)
    periods = document_periods(abstracts, split.kind)
    rejects = period_rejects(abstracts, periods, split.kind)
    write_parquet(rejects, args.rejects)
    for reason, n in rejects["reason"].value_counts().sort_index().items():
        print(f"rejected {n:,}: {reason} -> {args.rejects}")
    for warning in check_periods(periods, split, args.needs, args.min_documents):
        print(f"warning: {warning}", file=sys.stderr)
    out_dir = Path(args.out_dir)
    for name, frame in make_splits(abstracts, periods, split).items():
        write_parquet(frame, out_dir / f"{name}.parquet")
        print(f"{name}: {len(frame):,} abstracts -> {out_dir / f'{name}.parquet'}")
    with atomic_path(args.counts_plot) as tmp:
        period_counts(periods, split, args.needs).to_csv(tmp, index=False)


if __name__ == "__main__":
    main()
