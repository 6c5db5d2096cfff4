"""Forecast: ``B_iw = a · \\hat{log f}_{i,w} + b``, a forecaster's predicted log frequency of the
target period, made from earlier periods only (:class:`pipeline.models.forecast_bias.ForecastBias`;
the feature: stage ``forecast_features``, :mod:`pipeline.forecast.feature`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants._spec import VariantSpec, setting

# ``fit_periods``' word for None on the command line and in params.yaml: every period.
ALL_PERIODS = "all"


@dataclass(frozen=True)
class ForecastSettings:
    """params ``variants.forecast.*``: ``forecaster`` names the forecaster of the ``forecasts``
    feature files (the stage graph passes it to ``forecast_features``), ``fit_periods`` how many
    of the periods before the target each forecast is fitted on (the graph picks them: the
    ``--fit-from`` of each ``forecast_features`` stage; the stage refuses fewer than the
    forecaster's ``min_periods``, naming it)."""

    forecaster: str = setting("damped-trend", "the forecaster whose prediction of the target "
                                              "period the bias reads: a name of "
                                              "pipeline/forecast/forecasters (its registry)")
    fit_periods: int | None = setting(
        None, "how many periods before the target its forecast is fitted on, the latest of the "
              "contiguous periods the pipeline counts frequencies for (the forecaster's grid "
              "setting is chosen on the earlier ones among them); 'all': every one of them",
        none=ALL_PERIODS)

    def __post_init__(self) -> None:
        if self.fit_periods is not None and (isinstance(self.fit_periods, bool) or
                                             not isinstance(self.fit_periods, int) or
                                             self.fit_periods < 1):
            raise ValueError(f"fit_periods must be an int >= 1 or {ALL_PERIODS!r}, got "
                             f"{self.fit_periods!r}")


DISPLAY = "Forecast"
ORDER = 15
VARIANT = VariantSpec(module="pipeline.models.forecast_bias:ForecastBias",
                      settings=ForecastSettings, reads=frozenset({"forecasts"}))
