"""Stage `forecast_features@<period>`: the history feature `forecasts` of one period, i.e. the
forecaster's predicted log frequency of every LM token in it, fitted on the frequency files of
the periods from --fit-from to the one before it only (an expanding window; the setting of the
forecaster's grid chosen on the origins inside it: pipeline.forecast.feature), written in the
frequency files' format to data/features/forecasts/<label>.parquet
(pipeline.features.forecast_files)."""

from __future__ import annotations

import argparse

from pipeline.features.forecast_files import write_forecast
from pipeline.forecast.feature import fit_frequencies, forecast_feature
from pipeline.forecast.forecasters.registry import lookup
from pipeline.interfaces.forecast_features import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    forecaster = lookup(args.forecaster)
    freqs = fit_frequencies(args.frequencies, args.period, args.fit_from)
    log_prob, setting = forecast_feature(forecaster, freqs)
    fitted_on = [f.period for f in freqs]
    write_forecast(args.out, args.period, log_prob, sum(f.counts for f in freqs),
                   forecaster=forecaster.name, setting=setting, fitted_on=fitted_on,
                   tokenizer_id=freqs[0].tokenizer_id)
    print(f"{args.period}: {forecaster.name} {dict(setting)} fitted on {', '.join(fitted_on)} "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
