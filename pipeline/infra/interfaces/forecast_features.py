"""Stage `forecast_features@<period>`: a forecaster's predicted log frequency of every LM token in
one period, fitted on the frequency files of the periods before it only."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface, Value
from pipeline.infra.interfaces.shared import period

INTERFACE = StageInterface("forecast_features", (
    period("forecast"),
    Input("--frequencies", "per-period frequency folder (data/features/frequencies): the "
          "period's history window is read from it, nothing later"),
    Value("--window", "history periods m (features.window): the periods the forecast is "
          "fitted on", type=int, param="features.window"),
    Value("--forecaster", "a forecaster of pipeline/forecast/forecasters (its registry name; "
          "the setting of the variants reading forecasts, variants.<name>.forecaster)",
          default="damped-trend"),
    Output("--out", "output Parquet for this period (data/features/forecasts/<label>.parquet)"),
))
