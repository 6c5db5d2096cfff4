"""Stage `forecast_features@<period>`: a forecaster's predicted log frequency of every LM token in
one period, fitted on the frequency files of the periods before it only (an expanding window:
every period from --fit-from to the one before)."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface, Value
from pipeline.infra.shared_options import PERIOD_HELP, period

INTERFACE = StageInterface("forecast_features", (
    period("forecast"),
    Input("--frequencies", "per-period frequency folder (data/features/frequencies): the "
          "periods from --fit-from to the one before --period are read from it, nothing later"),
    Value("--fit-from", "the first period the forecast is fitted on (the graph's: the earliest "
          "of the contiguous frequency periods before --period, or the latest "
          "variants.<name>.fit_periods of them); every later one up to the period before "
          f"--period is read too: {PERIOD_HELP}"),
    Value("--forecaster", "a forecaster of pipeline/forecast/forecasters (its registry name; "
          "the setting of the variants reading forecasts, variants.<name>.forecaster)",
          default="damped-trend"),
    Output("--out", "output Parquet for this period (data/features/forecasts/<label>.parquet)"),
))
