"""The forecaster seam: a forecaster added as one module reaches both backtests unasked.

``tests/toy_forecaster.py`` is put on the search path of :mod:`pipeline.forecast.forecasters`
as ``toy_recent.py`` (what a user saving it there does; the registry is discovered afresh), and
nothing else changes: the forecast report (:func:`pipeline.reports.forecast_report.forecast_report`,
what the ``forecast_report`` stage runs, on the small real project of
``tests/test_stage_forecast.py``) and the skill report
(:func:`pipeline.reports.forecast_skill.forecast_skill` and its Markdown, what the
``forecast_skill`` stage runs) both judge it.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import pipeline.forecast.forecasters as package
from pipeline.forecast.forecasters import registry
from pipeline.reports.forecast_report import forecast_report
from pipeline.reports.forecast_skill import forecast_skill, readme
from pipeline.stats.verdict import to_records
from tests.test_forecast_skill_stage import table
from tests.test_stage_forecast import STOPWORDS, forecasts, project  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parents[1]
TOY = "toy-recent"
MODULE = f"{package.__name__}.toy_recent"


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The toy forecaster's module on the package's path, the registry rediscovered; undone
    after the test."""
    folder = tmp_path / "forecasters"
    folder.mkdir()
    shutil.copy(REPO / "tests" / "toy_forecaster.py", folder / "toy_recent.py")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    registry._discovered.cache_clear()
    importlib.invalidate_caches()
    try:
        yield TOY
    finally:
        sys.modules.pop(MODULE, None)
        registry._discovered.cache_clear()


def test_the_toy_is_one_more_forecaster_of_both_backtests(toy: str) -> None:
    for backtest in ("forecast", "forecast-skill"):
        names = [f.name for f in registry.all_forecasters(backtest)]
        assert names[-1] == toy                       # ORDER 90: after the others
    assert registry.lookup(toy).report_name == toy    # no title: its name everywhere


def test_the_toy_reaches_the_forecast_report(toy: str, project: Path,  # noqa: F811
                                             forecasts: Path, tmp_path: Path) -> None:  # noqa: F811
    out, metrics, plot = tmp_path / "forecast.md", tmp_path / "forecast.json", tmp_path / "r.png"
    forecast_report(str(forecasts), ["baseline", "frequency"], [0], "2022", ["2020", "2021"], 2,
                    ["2017", "2018", "2019"], None, str(project / "frequencies"),
                    str(project / "tokenizer"), str(STOPWORDS), str(project / "abstracts.parquet"),
                    str(out), str(metrics), str(plot))
    text = out.read_text()
    assert f"| {toy} |" in text                       # its PPL row and its verdict rows
    assert f"### {toy}" in text                       # its rising and falling words
    assert f"Other forecasters' settings: {toy} (α = 1, step = " in text   # its fitted choice
    records = json.loads(metrics.read_text())["verdicts"]
    vocab = {r["b"] for r in records if r["a"] == toy and r["family"] == "forecast-vocabulary"
             and r["scope"] == "2021"}
    assert vocab == {"Persistence", "Pooled past", "Mean reversion"}   # against each reference
    assert any(r["a"] == toy and r["family"] == "forecast-trend" for r in records)


def test_the_toy_reaches_the_skill_report(toy: str, tmp_path: Path) -> None:
    path = tmp_path / "abstracts.parquet"
    table(list(range(2000, 2010))).to_parquet(path)
    run = forecast_skill(str(path), "year", "2003", None, (1,), None, 2, frozenset(), False,
                         log=lambda _: None)
    assert TOY in run.settings["forecasters"]
    assert any(r["a"] == toy and r["scope"] == "h1/pooled" for r in to_records(run.verdicts))
    text = readme(run, "make forecast-skill")
    assert f"| {toy} |" in text and f"**{toy}**" in text
