"""scripts/rejudge_support.py: what a second judgement of a kept run may differ in, and what it writes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from rejudge_support import lock, outs, params  # noqa: E402

STAGES = {"stages": {
    "report": {"cmd": "python -m stages.report", "params": ["experiment", "split.train_last"],
               "outs": [{"reports/results.md": {"cache": False}}],
               "metrics": [{"metrics/variants": {"cache": False}}],
               "plots": [{"plots/results.csv": {"x": "a", "y": "b"}}, "plots/buckets.png"]},
    "verdicts": {"cmd": "python -m stages.verdicts", "outs": [{"reports/verdicts.json": {}}]},
    "train": {"cmd": "python -m stages.train", "params": ["train"]}}}
RUN = {"experiment": {"seeds": [0, 1, 2]}, "split": {"train_last": 2019, "dev": 2020},
       "train": {"epochs": 1}}


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(STAGES), encoding="utf-8")
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(RUN), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _head(path: Path, **changes: dict) -> Path:
    tree = yaml.safe_load(yaml.safe_dump(RUN))
    for section, values in changes.items():
        tree.setdefault(section, {}).update(values)
    out = path / "params.yaml"
    out.write_text(yaml.safe_dump(tree), encoding="utf-8")
    return out


def test_new_keys_and_params_of_other_stages_may_differ(kept: Path) -> None:
    head = _head(kept, experiment={"other_seeds": []}, train={"epochs": 3})
    lines = params(kept / "run.yaml", head, ["report", "verdicts"])
    assert lines == ["- `experiment.other_seeds`: run '(absent)', HEAD []",
                     "- `train.epochs`: run 1, HEAD 3"]


def test_a_param_the_judging_stages_read_must_be_the_runs(kept: Path) -> None:
    head = _head(kept, split={"train_last": 2021})
    with pytest.raises(SystemExit, match=r"split.train_last \(run 2019, HEAD 2021\)"):
        params(kept / "run.yaml", head, ["report", "verdicts"])
    head = _head(kept, experiment={"seeds": [0, 1]})      # a section the stage reads whole
    with pytest.raises(SystemExit, match="experiment.seeds"):
        params(kept / "run.yaml", head, ["report"])


def test_outs_are_every_path_the_stages_write(kept: Path) -> None:
    assert outs(["report", "verdicts"]) == [
        "reports/results.md", "metrics/variants", "plots/results.csv", "plots/buckets.png",
        "reports/verdicts.json"]


def test_a_kept_lock_takes_the_folded_stage_names(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A run kept before each run family became one foreach is checked out under the new names;
    a name dvc.yaml still has (base_cache-s0 beside base_cache) stays."""
    graph = {"stages": {"train-frequency": {"foreach": {"s0": 0, "s1": 1}, "do": {"cmd": "x"}},
                        "base_cache": {"cmd": "y"}, "base_cache-s0": {"cmd": "z"},
                        "frequencies": {"foreach": ["2019"], "do": {"cmd": "f"}}}}
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(graph), encoding="utf-8")
    kept = tmp_path / "kept.lock"
    kept.write_text("schema: '2.0'\nstages:\n  train-frequency-s0:\n    cmd: x\n"
                    "  train-frequency-s1:\n    cmd: x\n  base_cache-s0:\n    cmd: z\n"
                    "  frequencies@2019:\n    cmd: f\n  old-s3:\n    cmd: o\n",
                    encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    renamed = yaml.safe_load(lock(kept))["stages"]
    assert list(renamed) == ["train-frequency@s0", "train-frequency@s1", "base_cache-s0",
                             "frequencies@2019", "old-s3"]
