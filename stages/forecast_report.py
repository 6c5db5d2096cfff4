"""Stage `forecast_report`: reports/forecast.md from every model's forecast.

Reads data/forecast/<variant>-s<seed>/ for every variant x seed (stage `forecast`), the observed
per-period counts (data/features/frequencies; those of --train-periods alone fit the settings of
the count forecasters, pipeline/forecast/forecasters/), the tokenizer and stopwords (content tokens, words), the abstracts of the
period before the forecast period (which tokens are whole words) and those of every backtest
period and the period before it, tokenized as the frequencies stage counts (the documents the
backtests resample; half B of the period before is the trend test's reference).
Periods are labels of split.period's kind (2024, 2024H1, 2024Q3, 2024-07). Writes
reports/forecast.md (backtests: every forecaster against each stationary baseline and every
predicted change against chance, document-bootstrap verdicts; rising/falling terms, generated
abstracts), reports/forecast.json (the backtest numbers and the verdict records under
"verdicts"; plain JSON, not DVC
metrics: one line of `dvc metrics show` per number would not fit a terminal) and a PNG of the top
risers' history and forecast.
"""

from __future__ import annotations

import argparse
import sys

from pipeline.models.registry import common_seeds, seeds_by_variant
from pipeline.reports.forecast_report import forecast_report
from pipeline.interfaces.forecast_report import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    # the runs that forecast (forecast.seeds; none given: the seeds every variant ran)
    seeds = args.forecast_seeds or common_seeds(
        seeds_by_variant(args.variants, args.seeds, args.other_seeds))
    forecast_report(args.forecasts, args.variants, seeds, args.period, args.backtest_periods,
                    args.window, args.train_periods, args.dev_period, args.frequencies,
                    args.tokenizer, args.stopwords, args.abstracts, args.out, args.json, args.plot)
    print(f"wrote {args.out}, {args.json}, {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
