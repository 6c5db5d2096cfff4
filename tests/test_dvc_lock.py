"""dvc.lock hygiene: the committed lock names only stages dvc.yaml defines, and `make graph`
prunes the entries of stages that are gone, keeping every other entry byte for byte."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.graph.lock import is_defined, prune, prune_text

REPO = Path(__file__).resolve().parents[1]

LOCK = """\
schema: '2.0'
stages:
  download:
    cmd: python -m stages.download --source data/sample/anthology-sample.bib.gz
      --out data/raw/anthology+abstracts.bib.gz
    deps:
    - path: stages/download.py
      hash: md5
      md5: 0123
      size: 10
  frequencies@2015:
    cmd: python -m stages.frequencies --year 2015
    outs:
    - path: data/features/frequencies/2015.parquet
      md5: 4567
  train@baseline-0:
    cmd: python -m stages.train --variant baseline --seed 0
  frequencies@2014:
    cmd: python -m stages.frequencies --year 2014
  frequencies:
    cmd: python -m stages.frequencies
  report:
    cmd: >-
      python -m stages.report
"""
STAGES: dict[str, Any] = {
    "download": {"cmd": "python -m stages.download"},
    "frequencies": {"foreach": [2015, 2016], "do": {"cmd": "python -m stages.frequencies"}},
    "report": {"cmd": "python -m stages.report"},
}


def yaml_names(stages: dict[str, Any]) -> set[str]:
    """The lock names dvc.yaml's stages may have: a foreach stage's expanded over its items."""
    names = set()
    for name, stage in stages.items():
        if "foreach" in stage:
            names.update(f"{name}@{item}" for item in stage["foreach"])
        else:
            names.add(name)
    return names


@pytest.mark.slow
def test_committed_dvc_lock_names_only_stages_of_dvc_yaml() -> None:
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    lock = yaml.safe_load((REPO / "dvc.lock").read_text())
    assert lock["schema"] == "2.0"
    stale = sorted(set(lock["stages"]) - yaml_names(stages))
    assert not stale, f"dvc.lock has stages dvc.yaml lacks: {stale}; run `make graph`"


def test_pruning_drops_exactly_the_stale_entries_and_keeps_the_rest_byte_for_byte() -> None:
    pruned, names = prune_text(LOCK, STAGES)
    assert names == ["train@baseline-0", "frequencies@2014", "frequencies"]
    kept = (LOCK.split("  train@baseline-0:\n")[0]
            + "  report:\n    cmd: >-\n      python -m stages.report\n")
    assert pruned == kept
    assert list(yaml.safe_load(pruned)["stages"]) == ["download", "frequencies@2015", "report"]


def test_a_current_lock_is_returned_unchanged() -> None:
    current, _ = prune_text(LOCK, STAGES)
    assert prune_text(current, STAGES) == (current, [])
    assert prune_text("schema: '2.0'\nstages: {}\n", STAGES) == ("schema: '2.0'\nstages: {}\n", [])


def test_entries_of_stages_that_cannot_be_expanded_are_kept() -> None:
    stages = {"m": {"matrix": {"v": ["a", "b"]}, "do": {}}, "t": {"foreach": "${years}", "do": {}}}
    assert is_defined("m@a-b", stages) and is_defined("t@2015", stages)
    assert not is_defined("m", stages) and not is_defined("t", stages)
    assert not is_defined("gone@1", stages) and is_defined("k@x", {"k": {"foreach": {"x": 1}}})


def test_prune_rewrites_the_file_only_when_something_is_stale(tmp_path: Path) -> None:
    lock = tmp_path / "dvc.lock"
    assert prune(lock, STAGES) == [] and not lock.exists()
    lock.write_text(LOCK)
    assert prune(lock, STAGES) == ["train@baseline-0", "frequencies@2014", "frequencies"]
    written = lock.read_text()
    mtime = lock.stat().st_mtime_ns
    assert prune(lock, STAGES) == [] and lock.read_text() == written
    assert lock.stat().st_mtime_ns == mtime


@pytest.mark.slow
def test_make_graph_prunes_the_lock_beside_dvc_yaml(tmp_path: Path) -> None:
    # the code, the params and the committed inputs the graph's stages read (the stopwords)
    for folder in ("pipeline", "stages", "data/reference"):
        shutil.copytree(REPO / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "params.yaml", tmp_path)
    (tmp_path / "dvc.lock").write_text(LOCK)
    proc = subprocess.run([sys.executable, "-m", "stages.graph"], cwd=tmp_path, text=True,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert "train@baseline-0, frequencies@2014, frequencies" in proc.stderr
    stages = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]
    lock = yaml.safe_load((tmp_path / "dvc.lock").read_text())["stages"]
    assert list(lock) == ["download", "frequencies@2015", "report"]
    assert set(lock) <= yaml_names(stages)
    # --check never touches the lock
    (tmp_path / "dvc.lock").write_text(LOCK)
    proc = subprocess.run([sys.executable, "-m", "stages.graph", "--check"], cwd=tmp_path,
                          text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "dvc.lock").read_text() == LOCK
