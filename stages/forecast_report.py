"""Stage `forecast_report`: reports/forecast.md from every model's forecast.

Reads data/forecast/<variant>-s<seed>/ for every variant x seed (stage `forecast`), the observed
per-period counts (data/features/frequencies; those of --train-periods alone fit the stationary
baselines' smoothing), the tokenizer and stopwords (content tokens, words), the abstracts of the
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

from pipeline.reports.forecast_report import forecast_report
from stages._args import new_parser
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    p = new_parser("python -m stages.forecast_report", __doc__)
    p.add_argument("--forecasts", required=True, help="folder of forecast folders (data/forecast)")
    p.add_argument("--variants", nargs="+", required=True, help="variants, in table order")
    p.add_argument("--seeds", nargs="+", type=int, required=True, help="training seeds")
    p.add_argument("--period", required=True,
                   help="the forecast period, a label (forecast.period, resolved by the graph)")
    p.add_argument("--backtest-periods", nargs="*", default=[],
                   help="periods with known text to score the forecasts on "
                        "(forecast.backtest_periods)")
    p.add_argument("--window", type=int, required=True, help="history periods m (features.window)")
    p.add_argument("--train-periods", nargs="*", default=[],
                   help="the training periods (split.train_first..train_last): the only ones the "
                        "stationary baselines' smoothing is fitted on")
    p.add_argument("--dev-period", default=None,
                   help="the dev period (split.dev): with the training periods, what the models' "
                        "training read; a model makes no tested trend claim for a backtest whose "
                        "previous period it read")
    p.add_argument("--frequencies", required=True,
                   help="per-period frequency folder (observed counts)")
    p.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    p.add_argument("--stopwords", required=True, help="the paper's stopword list (content tokens)")
    p.add_argument("--abstracts", required=True, help="corpus (data/corpus/abstracts.parquet)")
    p.add_argument("--out", required=True, help="Markdown report (reports/forecast.md)")
    p.add_argument("--json", required=True,
                   help="the backtest numbers as JSON (reports/forecast.json)")
    p.add_argument("--plot", required=True, help="PNG of the risers (plots/forecast_risers.png)")
    return p


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    forecast_report(args.forecasts, args.variants, args.seeds, args.period, args.backtest_periods,
                    args.window, args.train_periods, args.dev_period, args.frequencies,
                    args.tokenizer, args.stopwords, args.abstracts, args.out, args.json, args.plot)
    print(f"wrote {args.out}, {args.json}, {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
