"""End to end: `dvc repro` of the data stages in a real temporary git + DVC repo, on the sample."""

import json
from pathlib import Path

import pandas as pd
import pytest

from dvc_project import dvc_repo, git, make_project, run_dvc, stages_that_would_run, write_params

pytestmark = pytest.mark.slow

DATA_STAGES = ["download", "parse", "filter", "split"]
# Train 2017-2018 leaves room to move the dev year (2019 -> 2020) without touching train/test.
PARAMS = {"split": {"train_first": 2017, "train_last": 2018, "dev_year": 2019, "test_year": 2021}}


@pytest.fixture(scope="module")
def proj(tmp_path_factory) -> Path:
    proj = make_project(tmp_path_factory.mktemp("e2e_data"), params=PARAMS, stages=DATA_STAGES)
    run_dvc(proj, "repro", "split")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "repro data stages")
    return proj


def test_repro_builds_the_corpus_and_a_second_repro_runs_nothing(proj):
    for out in ["data/raw/anthology+abstracts.bib.gz", "data/corpus/papers.parquet",
                "data/corpus/parse_rejects.parquet", "data/corpus/abstracts.parquet",
                "data/corpus/filtered_out.parquet", "data/splits/train.parquet",
                "data/splits/dev.parquet", "data/splits/test.parquet"]:
        assert (proj / out).is_file(), out
    corpus = json.loads((proj / "metrics/corpus.json").read_text())
    assert corpus["papers"] == 1949
    assert corpus["kept"] == len(pd.read_parquet(proj / "data/corpus/abstracts.parquet"))
    assert set(corpus["per_year"]) == {str(y) for y in range(2015, 2022)}
    download = json.loads((proj / "metrics/download.json").read_text())
    assert download["sha256"] == ("b5f86a5f77f786beabccd84d66d712b47d78696fa8d0e8793c5a9285d22ebb5a")
    plot = pd.read_csv(proj / "plots/abstracts_per_year.csv")
    # 2020 is neither train, dev nor test, but the test year 2021 needs it as history
    assert plot["split"].tolist() == ["history", "history", "train", "train", "dev", "history",
                                      "test"]

    # The DVC plot (the paper's Figure 3) renders from the CSV: one bar per year.
    plots = json.loads(run_dvc(proj, "plots", "show", "--json").stdout)
    rendered = plots["data"]["plots/abstracts_per_year.csv"][0]["content"]["data"]["values"]
    assert sorted(int(v["year"]) for v in rendered) == list(range(2015, 2022))

    assert stages_that_would_run(proj, "split") == []
    second = run_dvc(proj, "repro", "split")
    assert "Running stage" not in second.stdout
    with dvc_repo(proj) as repo:
        assert repo.status(targets=["split"]) == {}


def test_changing_the_dev_year_reruns_split_only(proj):
    write_params(proj, {"split": {"dev_year": 2020}})
    assert stages_that_would_run(proj, "split") == ["split"]
    rerun = run_dvc(proj, "repro", "split")
    assert "Running stage 'split'" in rerun.stdout
    for stage in ("download", "parse", "filter"):
        assert f"Running stage '{stage}'" not in rerun.stdout
    assert set(pd.read_parquet(proj / "data/splits/dev.parquet")["year"]) == {2020}
    plot = pd.read_csv(proj / "plots/abstracts_per_year.csv")
    assert dict(zip(plot["year"], plot["split"]))[2020] == "dev"
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "dev year 2020")


def test_push_clone_pull_round_trip(proj, tmp_path):
    remote = tmp_path / "remote"
    run_dvc(proj, "remote", "add", "-d", "store", str(remote))
    run_dvc(proj, "repro", "split")  # no-op; makes the test independent of test order
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "--allow-empty", "-m", "add remote")
    run_dvc(proj, "push")
    assert any(remote.rglob("*")), "nothing was pushed to the remote"

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(proj), str(clone))
    assert not (clone / "data/splits/train.parquet").exists()
    run_dvc(clone, "pull")
    for out in ["data/raw/anthology+abstracts.bib.gz", "data/corpus/abstracts.parquet",
                "data/splits/train.parquet", "data/splits/test.parquet"]:
        assert (clone / out).read_bytes() == (proj / out).read_bytes(), out
    status = run_dvc(clone, "status")
    assert "Data and pipelines are up to date" in status.stdout
    with dvc_repo(clone) as repo:
        assert repo.status() == {}
