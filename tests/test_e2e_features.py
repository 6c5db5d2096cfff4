"""End to end with real DVC: the feature stages are incremental by construction.

A throw-away copy of the project (tests/dvc_project.py) runs the real feature stages with
`dvc repro` on real Anthology abstracts (a few per year from the embedded sample, committed as
plain files in place of the data stages' outputs, so this test exercises only the feature graph).
Feature periods are derived from the split, the window, score.periods and the forecast periods
(stages/graph.py). Then: scoring one more year computes only the features of its new history year
(and the plot that lists every year); changing `embeddings.layer` reruns the embeddings of every
year and no frequencies.
"""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.features import embeddings as em
from pipeline.corpus.anthology import parse_file
from pipeline.infra.io import write_parquet
from tests.dvc_project import (
    git,
    keep_stages,
    make_project,
    run_dvc,
    stages_that_would_run,
    write_params,
)

FEATURE_STAGES = ("tokenizer", "frequencies", "frequency_plot", "embeddings")
# window 1, train 2017, dev 2018, test 2019, a forecast of 2019 backtested on 2018 (the corpus
# ends in 2019): features of 2016, 2017 and 2018
PARAMS = {
    "split": {"train_first": 2017, "train_last": 2017, "dev": 2018, "test": 2019},
    "features": {"window": 1},
    "score": {"periods": [2018, 2019]},
    "forecast": {"period": 2019, "backtest_periods": [2018]},
    "experiment": {"variants": ["baseline", "context"]},
    "tokenizer": {"vocab_size": 400},
    "embeddings": {"batch_size": 8, "max_length": 128, "stride": 16, "device": "cpu"},
    # groups inside the history periods, so semantic change asks for no feature period of its own
    "semantic_change": {"first": 2016, "last": 2018},
}


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib):
    with pytest.MonkeyPatch.context() as env:
        # stage subprocesses inherit this: one torch thread each, as `make test` runs 2 workers
        env.setenv("OMP_NUM_THREADS", "1")
        yield _build(tmp_path_factory, sample_bib)


def _build(tmp_path_factory, sample_bib):
    proj = make_project(tmp_path_factory.mktemp("e2e-features"), PARAMS)
    papers = parse_file(sample_bib).papers
    small = papers[papers.year.between(2016, 2019)].groupby("year").head(6).reset_index(drop=True)
    write_parquet(small, proj / "data" / "corpus" / "abstracts.parquet")
    write_parquet(small[small.year == 2016].assign(period="2016")[["key", "period", "title",
                                                                   "abstract"]],
                  proj / "data" / "splits" / "train.parquet")
    keep_stages(proj, FEATURE_STAGES)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "feature graph on committed inputs")
    run_dvc(proj, "repro", preload=True)
    return proj


@pytest.mark.slow
def test_feature_stages_are_incremental(project) -> None:
    # 1. a real `dvc repro` built every year's features; nothing is left to run
    built = sorted(p.name for p in (project / "data" / "features").rglob("20*.*"))
    assert built == ["2016.parquet", "2016.safetensors", "2017.parquet", "2017.safetensors",
                     "2018.parquet", "2018.safetensors"]
    assert em.read_period(project / "data/features/embeddings/2017.safetensors").period == "2017"
    assert stages_that_would_run(project) == []

    # 2. scoring 2020 too needs the features of 2019, and only those (plus the plot of every year)
    before = {p: p.stat().st_mtime_ns for p in (project / "data" / "features").rglob("20*.*")}
    write_params(project, {"score": {"periods": [2018, 2019, 2020]}}, graph=True)
    keep_stages(project, FEATURE_STAGES)
    assert sorted(stages_that_would_run(project)) == [
        "embeddings@2019", "frequencies@2019", "frequency_plot"]
    run_dvc(project, "repro", preload=True)
    assert {p: p.stat().st_mtime_ns for p in before} == before  # earlier years untouched
    assert em.read_period(project / "data/features/embeddings/2019.safetensors").period == "2019"
    plot = pd.read_csv(project / "plots" / "word_frequencies.csv")
    assert sorted(plot.period.unique()) == [2016, 2017, 2018, 2019]
    assert stages_that_would_run(project) == []

    # 3. changing embeddings.layer reruns the embeddings of every year, and no frequencies
    write_params(project, {"embeddings": {"layer": -2}})
    assert sorted(stages_that_would_run(project)) == [
        "embeddings@2016", "embeddings@2017", "embeddings@2018", "embeddings@2019"]
