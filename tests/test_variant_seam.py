"""The variant seam, proved end to end: a new variant is one module.

A throw-away copy of the project gets ``tests/toy_variant.py`` as
``pipeline/variants/toy_shift.py`` — no other file of the copy changes. Its settings then appear in params.yaml's ``variants`` section,
the generated graph gives its train stage one option and one declared param per setting, real
``dvc repro`` trains, scores and reports it beside the Baseline, the saved model records its
settings, and changing its setting makes only its own stages (and the reports) stale. The stage
seam the same way: a toy stage is its main and its declaration (``tests/toy_stage.py``,
``tests/toy_stage_interface.py``), placed by ``make graph`` and run by ``dvc repro``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.dvc_project import (REPO, expand_runs, git, make_project, run_dvc, stages_run,
                               stages_that_would_run, write_graph, write_params)
from tests.tiny_project import RUNTIME, tiny_export

pytestmark = pytest.mark.slow

TINY = {
    "data": {"source": "data/tiny.bib.gz"},
    "split": {"train_first": 2018, "train_last": 2019, "dev": 2020, "test": 2021},
    "features": {"window": 2},
    "experiment": {"variants": ["baseline"], "seeds": [0]},
    "tokenizer": {"vocab_size": 400},
    "lm": {"n_layer": 1, "n_head": 2, "n_embd": 16, "n_positions": 64},
    "train": {"epochs": 1, "batch_size": 8, "max_length": 64, "warmup_steps": 1},
    "score": {"n_generate": 1, "max_new_tokens": 6, "num_beams": 2, "batch_size": 16,
              "periods": [2020, 2021]},
    "forecast": {"n_generate": 1, "batch_size": 16},
    "report": {"examples": 1},
}


def add_toy_variant(proj: Path) -> list[str]:
    """The toy module, as a user adds it; returns the files git sees changed."""
    (proj / "pipeline/variants/toy_shift.py").write_text(
        (REPO / "tests/toy_variant.py").read_text())
    status = git(proj, "status", "--porcelain").stdout.split("\n")
    return sorted(line[3:] for line in status if line)


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib) -> Path:
    proj = make_project(tmp_path_factory.mktemp("variant-seam"), TINY)
    tiny_export(sample_bib, proj / "data" / "tiny.bib.gz")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "tiny export")
    changed = add_toy_variant(proj)
    assert changed == ["pipeline/variants/toy_shift.py"]
    write_params(proj, {"experiment": {"variants": ["baseline", "toy-shift"]},
                        "variants": {"toy-shift": {"scale": 0.5}}}, graph=True)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "toy variant")
    ran = stages_run(run_dvc(proj, "repro", "report", env=RUNTIME, preload="own"))
    assert {"train-toy-shift@s0", "score-toy-shift@s0", "report"} <= set(ran)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "repro")
    return proj


def test_the_graph_gives_the_toy_its_setting_as_an_option_and_a_param(project: Path) -> None:
    stage = expand_runs(yaml.safe_load((project / "dvc.yaml").read_text())["stages"])[
        "train-toy-shift@s0"]
    assert "--scale ${variants.toy-shift.scale}" in stage["cmd"]
    assert "variants.toy-shift.scale" in stage["params"]
    assert "data/features/frequencies/2017.parquet" in stage["deps"]   # its history, m = 2
    assert "pipeline/variants/toy_shift.py" in stage["deps"]


def test_the_toy_is_trained_saved_with_its_settings_and_reported(project: Path) -> None:
    config = json.loads((project / "data/models/toy-shift-s0/config.json").read_text())
    assert config["variant"] == "toy-shift"
    assert config["bias"]["settings"] == {"scale": 0.5}
    results = (project / "reports/results.md").read_text()
    assert re.search(r"\|\s*Toy-Shift\s*\|", results), results[:2000]
    help_text = subprocess.run(
        [sys.executable, "-m", "stages.train", "--variant",
         "toy-shift", "--help"], cwd=project, capture_output=True, text=True, check=True).stdout
    assert "--scale SCALE" in help_text and "factor on the latest change" in help_text


def test_changing_the_toys_setting_reruns_only_its_stages(project: Path, tmp_path: Path) -> None:
    import shutil
    own = tmp_path / "proj"
    shutil.copytree(project, own, symlinks=True)
    write_params(own, {"variants": {"toy-shift": {"scale": 2.0}}})
    # DVC lists the stages whose own inputs changed (its score stage follows from the new model)
    assert stages_that_would_run(own, "report") == ["train-toy-shift@s0"]


def test_an_unknown_setting_of_the_toy_stops_make_graph(project: Path, tmp_path: Path) -> None:
    import shutil
    own = tmp_path / "proj"
    shutil.copytree(project, own, symlinks=True)
    with pytest.raises(RuntimeError, match=r"variants.toy-shift has no setting shift"):
        write_params(own, {"variants": {"toy-shift": {"shift": 2.0}}}, graph=True)


def test_a_toy_stage_is_its_main_and_its_declaration(project: Path, tmp_path: Path) -> None:
    """A stage whose paths the plan does not shape, added as two files: ``make graph`` places it
    after the stage it names, with its param, and ``dvc repro`` runs it and nothing else but the
    graph check (the graph's own code deps are every source file)."""
    import shutil
    own = tmp_path / "proj"
    shutil.copytree(project, own, symlinks=True)
    (own / "pipeline/interfaces/toy_counts.py").write_text(
        (REPO / "tests/toy_stage_interface.py").read_text())
    (own / "stages/toy_counts.py").write_text((REPO / "tests/toy_stage.py").read_text())
    write_graph(own)
    stages = yaml.safe_load((own / "dvc.yaml").read_text())["stages"]
    names = list(stages)
    assert names[names.index("split") + 1] == "toy_counts"
    toy = stages["toy_counts"]
    assert toy["cmd"] == ("python -m stages.toy_counts --dev data/splits/dev.parquet "
                          "--min-words ${filter.min_words} --out metrics/toy_counts.json")
    assert toy["params"] == ["filter.min_words"]
    assert {"stages/toy_counts.py", "pipeline/interfaces/toy_counts.py",
            "data/splits/dev.parquet"} <= set(toy["deps"])
    assert "--kernels" not in toy["cmd"]   # no torch: no kernels param
    # no other stage's code changed: only the graph check, whose deps are all the source files
    assert stages_that_would_run(own, "report") == ["graph"]
    # plain DVC: the toy imports no torch, so a warm interpreter would only cost its start
    ran = stages_run(run_dvc(own, "repro", "toy_counts", env=RUNTIME))
    assert set(ran) <= {"graph", "toy_counts"} and "toy_counts" in ran, ran
    counted = json.loads((own / "metrics/toy_counts.json").read_text())["abstracts"]
    dev = pd.read_parquet(own / "data/splits/dev.parquet", columns=["abstract"])["abstract"]
    min_words = yaml.safe_load((own / "params.yaml").read_text())["filter"]["min_words"]
    assert counted == int((dev.str.split().str.len() >= min_words).sum()) > 0


def test_a_declared_stage_reading_a_path_no_stage_writes_stops_make_graph(
        project: Path, tmp_path: Path) -> None:
    import shutil
    own = tmp_path / "proj"
    shutil.copytree(project, own, symlinks=True)
    (own / "pipeline/interfaces/toy_counts.py").write_text(
        (REPO / "tests/toy_stage_interface.py").read_text().replace(
            "data/splits/dev.parquet", "data/split/dev.parquet"))
    (own / "stages/toy_counts.py").write_text((REPO / "tests/toy_stage.py").read_text())
    with pytest.raises(RuntimeError, match=r"stage toy_counts reads data/split/dev.parquet, "
                                           r"which no stage writes"):
        write_graph(own)
