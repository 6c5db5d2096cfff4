"""The paper profile: the paper's settings, and `make params PROFILE=paper` in a project copy.
Every profile's overlay, rendering and graph: tests/test_overlays.py."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from pipeline.graph import profiles
from pipeline.models.registry import seeds_by_variant
from stages import graph
from tests.dvc_project import dvc_env, dvc_repo, make_project, run_dvc

REPO = Path(__file__).resolve().parents[1]


def load(name: str) -> dict[str, Any]:
    """The params of profile ``name``: the defaults overlaid by profiles/<name>.yaml, as rendered."""
    return profiles.params(name, REPO)


def test_paper_profile_holds_the_papers_settings() -> None:
    p = load("paper")
    assert p["data"]["source"] == "https://aclanthology.org/anthology+abstracts.bib.gz"
    assert (p["split"]["train_first"], p["split"]["train_last"], p["split"]["dev"],
            p["split"]["test"]) == (2003, 2019, 2020, 2021)
    assert p["lm"]["base"] == "gpt2" and p["embeddings"]["encoder"] == "roberta-large"
    t = p["train"]
    assert (t["batch_size"], t["grad_accum"], t["epochs"]) == (2, 2, 10)
    assert (t["lr_lm"], t["lr_new"]) == (5e-5, 1e-3)
    # the history LSTMs' hidden size (paper: 768), each variant's own setting
    assert {v: p["variants"][v]["lstm_hidden"] for v in ("frequency", "context", "context2")} \
        == {"frequency": 768, "context": 768, "context2": 768}
    assert p["variants"]["context2"]["alpha"] == "learned"
    assert p["experiment"]["seeds"] == [0, 1, 2, 3, 4] and p["experiment"]["other_seeds"] == [0, 1, 2]
    # the paper's Table 3 rows and the time-free controls that answer whether a gain is time
    assert {"baseline", "baseline-2", "baseline-3", "frequency-nolstm", "frequency",
            "frequency-static", "context", "context2", "context2-static"} \
        == set(p["experiment"]["variants"])


@pytest.mark.slow
def test_make_params_with_the_paper_profile_builds_the_stage_graph(tmp_path) -> None:
    """`make params PROFILE=paper` in a real project copy: params.yaml becomes the defaults
    overlaid by the profile, dvc.yaml is regenerated for it, and DVC parses and plans every stage
    with exactly the inputs it reads."""
    proj = make_project(tmp_path, extra=("Makefile", "profiles"))
    subprocess.run(["make", "-s", "params", "PROFILE=paper"], cwd=proj, env=dvc_env(), check=True,
                   capture_output=True)
    assert (proj / "params.yaml").read_text() == profiles.render("paper", REPO)
    p = load("paper")
    assert (proj / "dvc.yaml").read_text() == graph.render(p, proj)
    listed = run_dvc(proj, "stage", "list").stdout
    seeds = seeds_by_variant(p["experiment"]["variants"], p["experiment"]["seeds"],
                             p["experiment"]["other_seeds"])
    assert seeds["frequency-static"] == seeds["context2-static"] == (0, 1, 2, 3, 4)
    assert seeds["context"] == (0, 1, 2)
    for variant, runs in seeds.items():
        for seed in runs:
            assert f"train-{variant}@s{seed}" in listed and f"score-{variant}@s{seed}" in listed
    assert "train-context@s3" not in listed
    assert "embeddings@2001" in listed and "frequencies@2021" in listed
    assert "embeddings@2000" not in listed and "frequencies@2022" not in listed
    assert "forecast-context2@s2" in listed and "forecast_report" in listed
    with dvc_repo(proj) as repo:
        train = {s.addressing: s for s in repo.index.stages}["train-context2@s1"]
        # The DAG DVC builds (graph edges point from a stage to the stages it depends on).
        upstream = {s.addressing for s in nx.descendants(repo.index.graph, train)}
    assert "--base gpt2" in train.cmd and "--lr-lm 5e-05" in train.cmd
    assert "--batch-size 2 --grad-accum 2" in train.cmd and "--lstm-hidden 768" in train.cmd
    assert "--seed 1" in train.cmd and "--out data/models/context2-s1" in train.cmd
    # training reads the history of 2003-2019 and of the dev year 2020: 2001-2019, not 2020
    features = {s for s in upstream if s.startswith(("frequencies@", "embeddings@"))}
    assert features == {f"{kind}@{y}" for kind in ("frequencies", "embeddings")
                        for y in range(2001, 2020)}
    assert {"graph", "split", "tokenizer"} <= upstream
    assert not any(name.startswith(("train-", "score-")) for name in upstream)
