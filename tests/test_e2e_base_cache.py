"""End to end through DVC: with `train.base: shared` and `train.cache: true` the generated graph
runs base_cache@s0 after the Baseline and trains Frequency from it; switching the cache off reruns
only Frequency's train stage (uncached), which reaches the same model.

A throw-away copy of the project (tests/dvc_project.py) at the tiny settings of
tests/tiny_project.py; only the stages up to train-frequency@s0 run (no encoder, scoring or
reports)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pipeline.infra.io import read_json
from tests.dvc_project import deep_merge, git, make_project, run_dvc, stages_run, write_params
from tests.tiny_project import RUNTIME, TINY, tiny_export

pytestmark = pytest.mark.slow

PARAMS = deep_merge(TINY, {"experiment": {"variants": ["baseline", "frequency"], "seeds": [0]},
                           "train": {"base": "shared", "cache": True, "epochs": 2,
                                     "lr_new": 5.0e-2}})
TARGET = "train-frequency@s0"


def test_cached_and_uncached_frequency_through_dvc_agree(tmp_path: Path, sample_bib) -> None:
    proj = make_project(tmp_path, PARAMS)
    tiny_export(sample_bib, proj / "data" / "tiny.bib.gz")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "tiny export")
    first = stages_run(run_dvc(proj, "repro", TARGET, env=RUNTIME, preload=True))
    assert {"train-baseline@s0", "base_cache@s0", TARGET} <= set(first)
    assert (proj / "data" / "cache" / "baseline-s0" / "identity.json").is_file()
    model = proj / "data" / "models" / "frequency-s0"
    cached = read_json(model / "train_metrics.json")
    weights = load_file(model / "model.safetensors")
    assert cached["cache"] == "data/cache/baseline-s0"
    assert stages_run(run_dvc(proj, "repro", TARGET, env=RUNTIME)) == []

    write_params(proj, {"train": {"cache": False}}, graph=True)
    second = stages_run(run_dvc(proj, "repro", TARGET, env=RUNTIME, preload=True))
    assert second == ["graph", TARGET]   # the Baseline is not retrained
    plain = read_json(model / "train_metrics.json")
    assert "cache" not in plain
    assert [f"{p:.2f}" for p in plain["dev_ppl"]] == [f"{p:.2f}" for p in cached["dev_ppl"]]
    assert plain["dev_ppl"] == pytest.approx(cached["dev_ppl"], rel=1e-5)
    for key, value in load_file(model / "model.safetensors").items():
        torch.testing.assert_close(weights[key], value, rtol=1e-4, atol=1e-6)
