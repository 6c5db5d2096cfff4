"""The full-export CPU profile (profiles/anthology-cpu.yaml over the defaults): the paper's split
and variants, and a stage graph in which every temporal variant starts from the Baseline model.
Its overlay is checked with every profile's in tests/test_overlays.py."""

from __future__ import annotations

from pathlib import Path

import yaml

from stages import graph
from tests.dvc_project import expand_runs
from tests.test_profiles import load

REPO = Path(__file__).resolve().parents[1]
PROFILE = "anthology-cpu"
VARIANTS = {"baseline", "baseline-2", "baseline-3", "frequency-nolstm", "frequency", "context",
            "context2"}


def test_profile_runs_the_full_export_with_the_papers_split_and_every_variant() -> None:
    p = load(PROFILE)
    assert p["data"]["source"] == "../shared/data/anthology+abstracts.bib.gz"
    assert (p["split"]["train_first"], p["split"]["train_last"], p["split"]["dev"],
            p["split"]["test"], p["features"]["window"]) == (2003, 2019, 2020, 2021, 2)
    assert set(p["experiment"]["variants"]) == VARIANTS
    assert p["score"]["n_generate"] == 100
    # GPT-2's own tokenizer or a scratch BPE larger than the sample's 4,096 tokens
    assert p["lm"]["base"] == "gpt2" or p["tokenizer"]["vocab_size"] > 4096


def test_temporal_variants_train_on_the_baseline_model() -> None:
    p = load(PROFILE)
    stages = expand_runs(yaml.safe_load(graph.render(p, REPO))["stages"])
    assert {f"train-{v}@s0" for v in VARIANTS} <= set(stages)
    for variant in ("frequency-nolstm", "frequency", "context", "context2"):
        train = stages[f"train-{variant}@s0"]
        assert "data/models/baseline-s0" in train["deps"], variant
        assert "--freeze-lm" in train["cmd"], variant
    for variant in ("baseline-2", "baseline-3"):
        assert "data/models/baseline-s0" not in stages[f"train-{variant}@s0"]["deps"]
