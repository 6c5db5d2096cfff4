"""End to end: `dvc repro` of the data stages in a real temporary git + DVC repo, on the sample.

The project is the whole generated graph; the tests reproduce up to `split` only. One module
fixture builds it once; every test works on its own copy, so no test sees another's changes.
"""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dvc_project import dvc_repo, git, make_project, run_dvc, stages_that_would_run, write_params

pytestmark = pytest.mark.slow

# Train 2017-2018 leaves room to move the dev year (2019 -> 2020) without touching train/test.
PARAMS = {"split": {"train_first": 2017, "train_last": 2018, "dev": 2019, "test": 2021},
          "score": {"periods": [2019, 2021]}}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    proj = make_project(tmp_path_factory.mktemp("e2e_data"), params=PARAMS)
    # forked from the warm interpreter (as `make repro`); the reruns below are plain `dvc repro`
    run_dvc(proj, "repro", "split", preload=True)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "repro data stages")
    return proj


@pytest.fixture
def proj(built, tmp_path) -> Path:
    """This test's own copy of the built project (git repo, DVC cache and outputs included)."""
    copy = tmp_path / "proj"
    shutil.copytree(built, copy, symlinks=True)
    return copy


def test_repro_builds_the_corpus_and_a_second_repro_runs_nothing(proj):
    for out in ["data/raw/corpus", "data/corpus/papers.parquet",
                "data/corpus/parse_rejects.parquet", "data/corpus/abstracts.parquet",
                "data/corpus/filtered_out.parquet", "data/splits/train.parquet",
                "data/splits/dev.parquet", "data/splits/test.parquet"]:
        assert (proj / out).is_file(), out
    corpus = json.loads((proj / "metrics/corpus.json").read_text())
    assert set(corpus) == {"papers", "kept", "dropped"} and corpus["papers"] == 1949
    assert corpus["kept"] == len(pd.read_parquet(proj / "data/corpus/abstracts.parquet"))
    counts = json.loads((proj / "reports/corpus.json").read_text())
    assert set(counts["per_year"]) == {str(y) for y in range(2015, 2022)}
    download = json.loads((proj / "reports/download.json").read_text())
    assert download["sha256"] == ("b5f86a5f77f786beabccd84d66d712b47d78696fa8d0e8793c5a9285d22ebb5a")
    plot = pd.read_csv(proj / "plots/abstracts_per_period.csv")
    # 2020 is neither train, dev nor test, but the test year 2021 needs it as history
    assert plot["split"].tolist() == ["history", "history", "train", "train", "dev", "history",
                                      "test"]

    # The DVC plot (the paper's Figure 3) renders from the CSV: one bar per period.
    plots = json.loads(run_dvc(proj, "plots", "show", "--json").stdout)
    rendered = plots["data"]["plots/abstracts_per_period.csv"][0]["content"]["data"]["values"]
    assert sorted(int(v["period"]) for v in rendered) == list(range(2015, 2022))

    assert stages_that_would_run(proj, "split") == []
    second = run_dvc(proj, "repro", "split")
    assert "Running stage" not in second.stdout
    with dvc_repo(proj) as repo:
        assert repo.status(targets=["split"], with_deps=True) == {}


def test_changing_the_dev_year_reruns_split_only(proj):
    # a structural param: the graph is regenerated (`make graph`); its check stage reruns, and
    # passes, without touching anything downstream of it but `split`
    write_params(proj, {"split": {"dev": 2020}, "score": {"periods": [2020, 2021]}}, graph=True)
    assert stages_that_would_run(proj, "split") == ["graph", "split"]
    rerun = run_dvc(proj, "repro", "split")
    assert "Running stage 'split'" in rerun.stdout
    for stage in ("download", "parse", "filter"):
        assert f"Running stage '{stage}'" not in rerun.stdout
    assert set(pd.read_parquet(proj / "data/splits/dev.parquet")["period"]) == {"2020"}
    plot = pd.read_csv(proj / "plots/abstracts_per_period.csv")
    assert dict(zip(plot["period"], plot["split"]))[2020] == "dev"
    assert stages_that_would_run(proj, "split") == []


def test_push_clone_pull_round_trip(proj, tmp_path):
    remote = tmp_path / "remote"
    run_dvc(proj, "remote", "add", "-d", "store", str(remote))
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "add remote")
    run_dvc(proj, "push", "--with-deps", "split")
    assert any(remote.rglob("*")), "nothing was pushed to the remote"

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(proj), str(clone))
    assert not (clone / "data/splits/train.parquet").exists()
    run_dvc(clone, "pull", "--with-deps", "split")
    for out in ["data/raw/corpus", "data/corpus/abstracts.parquet",
                "data/splits/train.parquet", "data/splits/test.parquet"]:
        assert (clone / out).read_bytes() == (proj / out).read_bytes(), out
    status = run_dvc(clone, "status", "--with-deps", "split")
    assert "Data and pipelines are up to date" in status.stdout
    with dvc_repo(clone) as repo:
        assert repo.status(targets=["split"], with_deps=True) == {}


def test_a_failed_download_keeps_the_previous_good_copy(proj):
    raw = proj / "data/raw/corpus"
    good = raw.read_bytes()
    broken = proj / "broken.bib.gz"
    broken.write_bytes(b"not a gzip file at all")
    write_params(proj, {"data": {"source": "broken.bib.gz"}})
    proc = run_dvc(proj, "repro", "download", check=False)
    assert proc.returncode != 0
    assert "broken.bib.gz" in proc.stdout + proc.stderr and "gzip" in proc.stdout + proc.stderr
    assert raw.read_bytes() == good


def test_the_documented_undo_recipe_undoes_a_param_experiment_under_autostage(proj):
    """core.autostage stages dvc.lock on every repro, so `git checkout dvc.lock` (from the index)
    would restore the experiment's lock; the recipe in docs/parameters.md restores from HEAD."""
    assert "autostage = true" in (proj / ".dvc/config").read_text()
    before = {p: (proj / p).read_bytes() for p in ("params.yaml", "dvc.lock",
                                                    "data/splits/dev.parquet")}
    write_params(proj, {"filter": {"min_words": 50}})
    run_dvc(proj, "repro", "split")
    assert (proj / "data/splits/dev.parquet").read_bytes() != before["data/splits/dev.parquet"]
    git(proj, "checkout", "HEAD", "--", "params.yaml", "dvc.yaml", "dvc.lock", "metrics", "plots",
        "reports")
    # This project reproduced only up to split: check out those stages (the recipe: all of them).
    run_dvc(proj, "checkout", "--with-deps", "split")
    assert {p: (proj / p).read_bytes() for p in before} == before
    assert stages_that_would_run(proj, "split") == []
