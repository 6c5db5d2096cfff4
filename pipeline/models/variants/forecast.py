"""Forecast: ``B_iw = a · \\hat{log f}_{i,w} + b``, a forecaster's predicted log frequency of the
target period, made from earlier periods only (:class:`pipeline.models.forecast_bias.ForecastBias`;
the feature: stage ``forecast_features``, :mod:`pipeline.forecast.feature`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.models.variant import VariantSpec, setting


@dataclass(frozen=True)
class ForecastSettings:
    """params ``variants.forecast.*``: the ``forecaster`` field names the forecaster of the
    ``forecasts`` feature files (the stage graph passes it to ``forecast_features``)."""

    forecaster: str = setting("damped-trend", "the forecaster whose prediction of the target "
                                              "period the bias reads: a name of "
                                              "pipeline/forecast/forecasters (its registry)")


DISPLAY = "Forecast"
ORDER = 15
VARIANT = VariantSpec(module="pipeline.models.forecast_bias:ForecastBias",
                      settings=ForecastSettings, reads=frozenset({"forecasts"}))
