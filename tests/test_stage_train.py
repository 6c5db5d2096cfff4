"""`python -m stages.train` on a small real project: sample abstracts, a real BPE, real feature files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from pipeline import embeddings, frequencies
from pipeline.anthology import parse_file
from pipeline.future_lm import load_future_lm
from pipeline.io import write_parquet
from pipeline.tokenizer import train_scratch_tokenizer
from stages import train as stage

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib) -> Path:
    """Splits (train 2017-2019, dev 2020), tokenizer, and features for 2015-2020 (random vectors)."""
    root = tmp_path_factory.mktemp("train_project")
    papers = parse_file(sample_bib).papers
    papers = papers[papers["abstract"].str.split().str.len() > 10]
    papers = papers.groupby("year").head(20)[["key", "year", "title", "abstract"]]
    train = papers[papers["year"].between(2017, 2019)]
    write_parquet(train, root / "train.parquet")
    write_parquet(papers[papers["year"] == 2020].head(8), root / "dev.parquet")
    tok = train_scratch_tokenizer(train["abstract"].tolist(), 400)
    tok.save_pretrained(root / "tokenizer")
    rng = np.random.default_rng(0)
    for year in range(2015, 2021):
        counts = frequencies.count_tokens(tok, papers[papers["year"] == year]["abstract"].tolist())
        frequencies.write_year(root / "freq" / f"{year}.parquet", year, counts)
        ids = np.flatnonzero(counts)
        embeddings.write_year(root / "emb" / f"{year}.safetensors", year, ids, counts[ids],
                              rng.normal(size=(len(ids), 8)), encoder="test", layer=-1,
                              vocab_size=len(tok))
    return root


def argv(project: Path, variant: str, out: Path, **overrides) -> list[str]:
    opts = {"variant": variant, "seed": 0, "train": project / "train.parquet",
            "dev": project / "dev.parquet", "tokenizer": project / "tokenizer",
            "frequencies": project / "freq", "embeddings": project / "emb", "window": 2,
            "base": "scratch", "n-layer": 1, "n-head": 2, "n-embd": 16, "n-positions": 48,
            "epochs": 1, "batch-size": 8, "max-length": 48, "lr-lm": 3e-3, "lr-new": 3e-3,
            "warmup-steps": 2, "lstm-hidden": 8, "device": "cpu", "out": out,
            "curves": out.parent / "curves" / out.name, "checkpoint-dir": out.parent / "ckpt"}
    opts.update({k.replace("_", "-"): v for k, v in overrides.items()})
    return [tok for k, v in opts.items() for tok in (f"--{k}", str(v))]


def test_help_explains_every_option() -> None:
    parser_help = subprocess.run([sys.executable, "-m", "stages.train", "--help"], cwd=REPO,
                                 capture_output=True, text=True, check=True).stdout
    for option in ("--variant", "--window", "--base", "--lr-lm", "--lr-new", "--grad-accum",
                   "--patience", "--alpha", "--checkpoint-dir"):
        assert option in parser_help
    assert "baseline-N" in parser_help


def test_context2_trains_and_writes_a_loadable_model(project, tmp_path) -> None:
    out = tmp_path / "models" / "context2-s0"
    stage.main(argv(project, "context2", out, epochs=2))
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors",
                                                      "train_metrics.json"]
    metrics = json.loads((out / "train_metrics.json").read_text())
    assert metrics["variant"] == "context2" and metrics["train_years"] == [2017, 2018, 2019]
    assert metrics["epochs_run"] == 2 and len(metrics["dev_ppl"]) == 2
    assert metrics["best_dev_ppl"] == min(metrics["dev_ppl"]) and metrics["parameters_new"] > 0
    curves = tmp_path / "models" / "curves" / "context2-s0"
    rows = (curves / "train" / "loss.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["step", "loss"] and len(rows) - 1 == metrics["steps"]
    ppl = [line.split("\t") for line in (curves / "dev" / "ppl.tsv").read_text().splitlines()[1:]]
    assert [float(v) for _, v in ppl] == pytest.approx(metrics["dev_ppl"])
    assert not (tmp_path / "models" / "ckpt" / "context2-s0").exists()   # cleared after success
    model = load_future_lm(out)
    assert model.variant == "context2" and model.history_kinds == {"embeddings"}
    assert model.bias_config.feature_dim == 8


def test_baseline_n_uses_the_latest_years_and_no_features(project, tmp_path) -> None:
    out = tmp_path / "baseline-1-s0"
    stage.main(argv(project, "baseline-1", out, frequencies=tmp_path / "none",
                    embeddings=tmp_path / "none"))
    metrics = json.loads((out / "train_metrics.json").read_text())
    assert metrics["train_years"] == [2019] and metrics["parameters_new"] == 0


def test_bad_inputs_are_clear_errors(project, tmp_path) -> None:
    with pytest.raises(SystemExit, match="unknown variant 'frequencies'"):
        stage.main(argv(project, "frequencies", tmp_path / "x"))
    with pytest.raises(SystemExit, match="--alpha must be"):
        stage.main(argv(project, "context2", tmp_path / "x", alpha="big"))
    with pytest.raises(FileNotFoundError, match="dvc repro frequencies@2014"):
        stage.main(argv(project, "frequency", tmp_path / "x", window=3))
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_model(project, tmp_path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    common = dict(epochs=3, batch_size=2, checkpoint_every=1)

    def cmd(out: Path) -> list[str]:
        return [sys.executable, "-m", "stages.train", *argv(project, "frequency", out, **common)]

    reference = tmp_path / "ref" / "frequency-s0"
    subprocess.run(cmd(reference), cwd=REPO, env=env, check=True, capture_output=True)

    out = tmp_path / "cut" / "frequency-s0"
    checkpoint = out.parent / "ckpt" / "frequency-s0" / "checkpoint.pt"
    proc = subprocess.Popen(cmd(out), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if not checkpoint.exists():
        pytest.fail("training ended before any checkpoint was written; cannot test resume")
    assert not out.exists()   # no half-written model
    step_at_kill = torch.load(checkpoint, weights_only=True)["state"]["step"]
    subprocess.run(cmd(out), cwd=REPO, env=env, check=True, capture_output=True)
    got, want = load_file(out / "model.safetensors"), load_file(reference / "model.safetensors")
    assert step_at_kill < json.loads((out / "train_metrics.json").read_text())["steps"]
    assert got.keys() == want.keys()
    for name in want:
        assert torch.equal(got[name], want[name]), name
    assert (json.loads((out / "train_metrics.json").read_text())
            == json.loads((reference / "train_metrics.json").read_text()))
