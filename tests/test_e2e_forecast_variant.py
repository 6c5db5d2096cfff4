"""The forecast variant end to end in a throw-away DVC project: ``dvc repro`` makes the
``forecast_features@<period>`` files from the frequency files, trains and scores ``forecast`` and
its time-free control ``forecast-static`` beside the Baseline, and the saved model records its
forecaster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.features.frequencies import read_period
from pipeline.infra.io import parquet_metadata
from tests.dvc_project import git, make_project, run_dvc, stages_run
from tests.test_variant_seam import TINY
from tests.tiny_project import RUNTIME, tiny_export

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib) -> Path:
    params = {**TINY, "experiment": {"variants": ["baseline", "forecast", "forecast-static"],
                                     "seeds": [0]}}
    proj = make_project(tmp_path_factory.mktemp("forecast-variant"), params)
    tiny_export(sample_bib, proj / "data" / "tiny.bib.gz")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "tiny export")
    ran = stages_run(run_dvc(proj, "repro", "score-forecast@s0", "score-forecast-static@s0",
                             env=RUNTIME, preload=True))
    assert {"forecast_features@2020", "train-forecast@s0", "score-forecast-static@s0"} <= set(ran)
    return proj


def test_the_forecast_files_are_the_forecasters_and_the_model_records_it(project: Path) -> None:
    path = project / "data/features/forecasts/2020.parquet"
    meta = parquet_metadata(path)
    # every earlier period the graph counts frequencies for (from the first training period's
    # history on), not only 2020's history window
    assert (meta["forecaster"], meta["fitted_on"]) == ("damped-trend", "2016,2017,2018,2019")
    assert read_period(path).period == "2020"
    config = json.loads((project / "data/models/forecast-s0/config.json").read_text())
    assert config["bias"]["settings"] == {"forecaster": "damped-trend", "fit_periods": None}
    control = json.loads((project / "data/models/forecast-static-s0/config.json").read_text())
    assert control["bias"]["static_periods"] == ["2018", "2019"]
    for run in ("forecast-s0", "forecast-static-s0"):
        assert any((project / "data/scores" / run).iterdir())
