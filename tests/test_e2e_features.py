"""End to end with real DVC: the feature stages are incremental by construction.

A throw-away copy of the project (tests/dvc_project.py) runs the real feature stages with
`dvc repro` on real Anthology abstracts (a few per year from the embedded sample, committed as
plain files in place of the data stages' outputs, so this test exercises only the feature graph).
Then: adding a year computes only that year's features (and the plot that lists every year);
changing `embeddings.layer` reruns the embeddings of every year and no frequencies.
"""

from __future__ import annotations

import yaml
import pytest

from pipeline import embeddings as em
from pipeline import frequencies as fq
from pipeline.anthology import parse_file
from pipeline.io import write_parquet
from tests.dvc_project import git, make_project, run_dvc, stages_that_would_run, write_params

FEATURE_STAGES = ("tokenizer", "frequencies", "frequency_plot", "embeddings")
PARAMS = {
    "years": [2017, 2018],
    "tokenizer": {"vocab_size": 400},
    "embeddings": {"batch_size": 8, "max_length": 128, "stride": 16, "device": "cpu"},
}


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib):
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
def test_repro_builds_every_year_then_is_up_to_date(project) -> None:
    for year in (2017, 2018):
        assert fq.read_year(project / f"data/features/frequencies/{year}.parquet").year == year
        assert em.read_year(project / f"data/features/embeddings/{year}.safetensors").year == year
    assert (project / "plots" / "word_frequencies.csv").exists()
    assert stages_that_would_run(project) == []


@pytest.mark.slow
def test_adding_a_year_computes_only_that_year(project) -> None:
    before = {p: p.stat().st_mtime_ns for p in (project / "data" / "features").rglob("201[78].*")}
    write_params(project, {"years": [2017, 2018, 2019]})
    assert sorted(stages_that_would_run(project)) == [
        "embeddings@2019", "frequencies@2019", "frequency_plot"]
    run_dvc(project, "repro")
    assert fq.read_year(project / "data/features/frequencies/2019.parquet").year == 2019
    assert {p: p.stat().st_mtime_ns for p in before} == before  # earlier years untouched
    assert stages_that_would_run(project) == []


@pytest.mark.slow
def test_changing_the_layer_reruns_embeddings_only(project) -> None:
    write_params(project, {"embeddings": {"layer": -2}})
    would_run = stages_that_would_run(project)
    assert would_run and all(name.startswith("embeddings@") for name in would_run)
    assert len(would_run) == len(yaml.safe_load((project / "params.yaml").read_text())["years"])
