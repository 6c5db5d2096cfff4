"""Every forecaster of this package, found by looking, not by a list to keep in step.

A module of the package declares ``FORECASTER`` (an instance) and ``ORDER`` (an int: its place in
reports, stationary references first); modules without ``FORECASTER`` (``base``, this one,
helpers) are skipped. Names, report names and orders must be unique. Both backtests, the forecast
report's and the skill report's, take their forecasters from here
(:data:`pipeline.forecast.forecasters.base.BACKTESTS`).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from pipeline.forecast.forecasters.base import BACKTESTS, KINDS, Forecaster
from pipeline.infra.errors import UserError


@cache
def _discovered() -> tuple[Forecaster, ...]:
    package = importlib.import_module(__package__)
    found: list[tuple[int, Forecaster]] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{__package__}.{info.name}")
        forecaster = getattr(module, "FORECASTER", None)
        if forecaster is None:
            continue
        if not isinstance(forecaster, Forecaster) or forecaster.kind not in KINDS:
            raise TypeError(f"{module.__name__}.FORECASTER must be a Forecaster of a kind in "
                            f"{KINDS}, got {forecaster!r}")
        if not forecaster.backtests <= set(BACKTESTS):
            raise TypeError(f"{module.__name__}.FORECASTER enters unknown backtests "
                            f"{sorted(forecaster.backtests - set(BACKTESTS))}; known: {BACKTESTS}")
        if not isinstance(getattr(module, "ORDER", None), int):
            raise TypeError(f"{module.__name__} declares FORECASTER but no int ORDER")
        found.append((module.ORDER, forecaster))
    found.sort(key=lambda pair: pair[0])
    for what, values in (("ORDER", [o for o, _ in found]), ("name", [f.name for _, f in found]),
                         ("report name", [f.report_name for _, f in found])):
        if len(set(values)) != len(values):
            raise TypeError(f"forecaster modules repeat a value of {what}: {values}")
    return tuple(f for _, f in found)


def all_forecasters(backtest: str | None = None) -> list[Forecaster]:
    """Every forecaster, in report order; with ``backtest`` (one of
    :data:`~pipeline.forecast.forecasters.base.BACKTESTS`) those that enter it."""
    if backtest is not None and backtest not in BACKTESTS:
        raise ValueError(f"no backtest {backtest!r}; known: {BACKTESTS}")
    return [f for f in _discovered() if backtest is None or backtest in f.backtests]


def lookup(name: str) -> Forecaster:
    """The forecaster called ``name``."""
    for forecaster in _discovered():
        if forecaster.name == name:
            return forecaster
    names = ", ".join(f.name for f in _discovered())
    raise UserError(f"no forecaster named {name!r}", fix=f"use one of: {names}")


def stationary(backtest: str | None = None) -> list[Forecaster]:
    """The stationary forecasters (of ``backtest``): the references a forecaster with temporal
    skill must beat."""
    return [f for f in all_forecasters(backtest) if f.kind == "stationary"]
