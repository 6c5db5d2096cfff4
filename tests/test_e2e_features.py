"""End to end with real DVC: the feature stages are incremental by construction.

A throw-away copy of the project (tests/dvc_project.py) runs the real feature stages with
`dvc repro` on real Anthology abstracts (a few per year from the embedded sample, committed as
plain files in place of the data stages' outputs, so this test exercises only the feature graph).
Then: adding a year computes only that year's features (and the plot that lists every year);
changing `embeddings.layer` reruns the embeddings of every year and no frequencies.
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from pipeline import embeddings as em
from pipeline import frequencies as fq
from pipeline.anthology import parse_file
from pipeline.io import write_parquet
from tests.dvc_project import git, make_project, run_dvc, stages_that_would_run, write_params

FEATURE_STAGES = ("tokenizer", "frequencies", "frequency_plot", "embeddings")
PARAMS = {
    "years": [2017],
    "tokenizer": {"vocab_size": 400},
    "embeddings": {"batch_size": 8, "max_length": 128, "stride": 16, "device": "cpu"},
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
    write_parquet(small[small.year == 2016][["key", "year", "title", "abstract"]],
                  proj / "data" / "splits" / "train.parquet")
    graph = yaml.safe_load((proj / "dvc.yaml").read_text())
    graph["stages"] = {k: v for k, v in graph["stages"].items() if k in FEATURE_STAGES}
    (proj / "dvc.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "feature graph on committed inputs")
    run_dvc(proj, "repro")
    return proj


@pytest.mark.slow
def test_feature_stages_are_incremental(project) -> None:
    # 1. a real `dvc repro` built every year's features; nothing is left to run
    assert fq.read_year(project / "data/features/frequencies/2017.parquet").year == 2017
    assert em.read_year(project / "data/features/embeddings/2017.safetensors").year == 2017
    assert stages_that_would_run(project) == []

    # 2. adding a year computes only that year's features
    before = {p: p.stat().st_mtime_ns for p in (project / "data" / "features").rglob("2017.*")}
    write_params(project, {"years": [2017, 2018]})
    assert sorted(stages_that_would_run(project)) == ["embeddings@2018", "frequencies@2018"]
    run_dvc(project, "repro")
    assert {p: p.stat().st_mtime_ns for p in before} == before  # earlier years untouched
    assert em.read_year(project / "data/features/embeddings/2018.safetensors").year == 2018
    # the plot lists every year, so it was redrawn once the new year's file appeared
    plot = pd.read_csv(project / "plots" / "word_frequencies.csv")
    assert sorted(plot.year.unique()) == [2017, 2018]
    assert stages_that_would_run(project) == []

    # 3. changing embeddings.layer reruns the embeddings of every year, and no frequencies
    write_params(project, {"embeddings": {"layer": -2}})
    assert sorted(stages_that_would_run(project)) == [
        "embeddings@2017", "embeddings@2018"]
