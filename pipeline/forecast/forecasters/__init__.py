"""Forecasters of a period's unigram distribution from the token counts of earlier periods.

Each module of this package declares one forecaster, ``FORECASTER = <instance>`` of a
:class:`~pipeline.forecast.forecasters.base.Forecaster` subclass, and an ``ORDER`` constant that
places it in reports; :mod:`pipeline.forecast.forecasters.registry` discovers them. A forecaster
reads only a :class:`~pipeline.forecast.forecasters.base.PeriodCounts` (counts by period), never
documents or p-values: the rolling-origin engine slices the past it may read, scores the forecasts
on held-out documents and leaves every test to :mod:`pipeline.stats`.

Kinds: *stationary* forecasters assume the distribution does not drift (the references a
forecaster with temporal skill must beat), *trend* forecasters extrapolate each word's recent
drift, and *learned* forecasters fit one model across words on their pasts.
"""
