"""Issue 31 §8 (a), end to end: the real sample with its dates permuted across documents.

No word has a trend on such a corpus, so the whole pipeline must find none: the generated graph
trains Baseline, Frequency and Frequency's time-free control (3 seeds each, a tiny model), scores
and forecasts them, and writes the reports. Then no `temporal-gain` verdict (Frequency against
Frequency-static), no `forecast-trend` verdict and no `forecast-vocabulary` verdict (a forecaster
against any stationary baseline) may say `better`. The same test on the sample with its
real dates is the default run itself (`reports/verdicts.json`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.corpus.anthology import parse_file
from tests.conftest import SAMPLE_BIB
from tests.dvc_project import make_project, run_dvc
from tests.test_e2e_own_corpus import TINY_MODEL

pytestmark = pytest.mark.slow

SOURCE = "data/permuted.csv"


def permuted_corpus() -> "pd.DataFrame":  # noqa: F821
    """The sample's abstracts with their dates drawn without replacement from the others'."""
    papers = parse_file(SAMPLE_BIB).papers.dropna(subset=["date", "abstract"])
    dates = np.random.default_rng(0).permutation(papers["date"].to_numpy())
    return papers.assign(date=dates)[["key", "date", "title", "abstract"]].rename(
        columns={"key": "id", "abstract": "text"})


def test_permuted_dates_give_no_temporal_gain_and_no_trend(tmp_path) -> None:
    params = {**TINY_MODEL,
              "data": {"source": SOURCE, "columns": {"id": "id", "date": "date",
                                                     "title": "title", "text": "text"}},
              # the filters keep or drop documents whatever their dates: the language
              # filter (~6 s of langdetect over the sample) is off, as the ACL rules
              "filter": {"acl_rules": False, "language": None},
              "experiment": {"variants": ["baseline", "frequency", "frequency-static"],
                             "seeds": [0, 1, 2]}}
    proj = make_project(tmp_path, params)
    permuted_corpus().to_csv(proj / SOURCE, index=False)
    run_dvc(proj, "repro", "report", "forecast_report", preload=True)

    records = [r for path in ("reports/results.json", "reports/forecast.json")
               for r in json.loads((proj / path).read_text())["verdicts"]]
    by_family: dict[str, list[dict]] = {}
    for r in records:
        by_family.setdefault(r["family"], []).append(r)
    gain = by_family["temporal-gain"]
    assert {(r["a"], r["b"]) for r in gain} == {("Frequency", "Frequency-static")}
    assert all(r["seeds"] == [3, 3] for r in gain)
    assert by_family["forecast-trend"] and by_family["forecast-vocabulary"]
    for family in ("temporal-gain", "forecast-trend", "forecast-vocabulary"):
        better = [r["id"] for r in by_family[family] if r["verdict"] == "better"]
        assert not better, (family, better)
