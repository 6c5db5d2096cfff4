"""Training with DistributedDataParallel: the train stage as 2 gloo processes on
127.0.0.1 equals the single-process stage with the same global batch, and a 2-process run killed
after a checkpoint resumes to a bit-identical model.

Real parts throughout: the sample's abstracts, a real BPE, real feature files, the stage's own
torchrun launch (`--processes 2`, torchrun's `--standalone` picks a free port), gloo. Dropout is 0
so that the two runs draw nothing at random (each rank has its own dropout stream otherwise). The
global batch of 3 abstracts splits 2 + 1, a period's last batch of 1 leaves rank 1 with nothing (it
runs with weight 0), and gradient accumulation over 2 micro-batches shares the bias's word terms
across them; every one of those paths must give the single-process gradient.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch
from safetensors.torch import load_file

from pipeline.features import embeddings

from pipeline.features import frequencies
from pipeline.corpus.anthology import parse_file
from pipeline.infra.identity import tokenizer_identity
from pipeline.infra.io import write_parquet
from pipeline.features.tokenizer import train_scratch_tokenizer

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "FUTURELM_THREADS": "1", "FUTURELM_DEVICE": "cpu",
       "FUTURELM_NPROC": "1", "GLOO_SOCKET_IFNAME": "lo", "PYTHONPATH": str(REPO)}
TIMEOUT = 600   # seconds per stage run: a hung collective fails the test instead of hanging it


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib) -> Path:
    """Train 2017-2019 (7, 7, 7 abstracts), dev 2020 (5), a BPE, frequencies and random vectors."""
    root = tmp_path_factory.mktemp("ddp_project")
    papers = parse_file(sample_bib).papers
    papers = papers[papers["abstract"].str.split().str.len() > 10]
    papers = papers.groupby("year").head(7)[["key", "year", "title", "abstract"]]
    papers = papers.assign(period=papers["year"].astype(str))   # split files: period labels
    columns = ["key", "period", "title", "abstract"]
    train = papers[papers["year"].between(2017, 2019)]
    write_parquet(train[columns], root / "train.parquet")
    write_parquet(papers[papers["year"] == 2020].head(5)[columns], root / "dev.parquet")
    tok = train_scratch_tokenizer(train["abstract"].tolist(), 300)
    tok.save_pretrained(root / "tokenizer")
    tok_id = tokenizer_identity(root / "tokenizer")
    rng = np.random.default_rng(0)
    for year in range(2015, 2020):
        counts = frequencies.count_tokens(tok, papers[papers["year"] == year]["abstract"].tolist())
        frequencies.write_period(root / "freq" / f"{year}.parquet", str(year), counts, tokenizer_id=tok_id)
        ids = np.flatnonzero(counts)
        embeddings.write_period(root / "emb" / f"{year}.safetensors", str(year), ids, counts[ids],
                              rng.normal(size=(len(ids), 6)), encoder="test", layer=-1,
                              vocab_size=len(tok), tokenizer_id=tok_id)
    return root


def stage_args(project: Path, out: Path, **overrides) -> list[str]:
    opts = {"variant": "context2", "seed": 0, "train": project / "train.parquet",
            "dev": project / "dev.parquet", "tokenizer": project / "tokenizer",
            "frequencies": project / "freq", "embeddings": project / "emb", "window": 2,
            "base": "scratch", "n-layer": 1, "n-head": 2, "n-embd": 16, "n-positions": 40,
            "max-length": 40, "epochs": 2, "batch-size": 3, "grad-accum": 2, "lr-lm": 3e-3,
            "lr-new": 3e-3, "warmup-steps": 1, "lstm-hidden": 8, "dropout": 0.0, "patience": 0,
            "eval-batch-size": 2, "out": out, "curves": out.parent / "curves",
            "checkpoint-dir": out.parent / "ckpt"}
    opts.update(overrides)
    return [t for k, v in opts.items() for t in (f"--{k}", str(v))]


def train(project: Path, out: Path, processes: int, **overrides) -> str:
    cmd = [sys.executable, "-m", "stages.train", *stage_args(project, out, **overrides),
           "--processes", str(processes)]
    done = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(out / "model.safetensors")


@pytest.fixture(scope="module")
def two_processes(project, tmp_path_factory) -> tuple[Path, str]:
    """(model folder, log) of the 2-process run, checkpointing every step: what both tests
    compare against (a checkpoint changes no float: the resume test proves it)."""
    out = tmp_path_factory.mktemp("ddp_two") / "m"
    return out, train(project, out, 2, **{"checkpoint-every": 1})


@pytest.mark.slow
def test_two_processes_equal_one_with_the_same_global_batch(project, two_processes,
                                                             tmp_path) -> None:
    one = tmp_path / "one" / "m"
    train(project, one, 1)
    two, log = two_processes
    assert "x 2 processes" in log          # it really ran distributed
    a, b = weights(one), weights(two)
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5, msg=name)
    m1 = json.loads((one / "train_metrics.json").read_text())
    m2 = json.loads((two / "train_metrics.json").read_text())
    for key in ("steps", "train_tokens", "epochs_run", "best_epoch", "train_abstracts"):
        assert m2[key] == m1[key], key
    assert m2["dev_ppl"] == pytest.approx(m1["dev_ppl"], rel=1e-5)
    # the loss curve, logged once (by rank 0) with the global loss of every step
    rows1 = (one.parent / "curves" / "train" / "loss.tsv").read_text().splitlines()
    rows2 = (two.parent / "curves" / "train" / "loss.tsv").read_text().splitlines()
    assert len(rows2) == len(rows1) == m1["steps"] + 1
    loss1 = [float(r.split("\t")[-1]) for r in rows1[1:]]
    loss2 = [float(r.split("\t")[-1]) for r in rows2[1:]]
    assert loss2 == pytest.approx(loss1, rel=1e-5)
    assert not (two.parent / "ckpt" / "context2-s0").exists()   # rank 0 cleared them


@pytest.mark.slow
def test_killed_two_process_run_resumes_bit_identically(project, two_processes,
                                                        tmp_path) -> None:
    reference, _ = two_processes

    out = tmp_path / "cut" / "m"
    cmd = [sys.executable, "-m", "stages.train",
           *stage_args(project, out, **{"checkpoint-every": 1}), "--processes", "2"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    checkpoints = out.parent / "ckpt"
    deadline = time.monotonic() + TIMEOUT
    try:
        while (proc.poll() is None and not list(checkpoints.glob("*/checkpoint.pt"))
               and time.monotonic() < deadline):
            time.sleep(0.01)   # polling for the file, not waiting for a fixed time
        # torchrun starts each rank in a session of its own: kill the whole tree, ranks first
        tree = psutil.Process(proc.pid).children(recursive=True)
        for child in reversed(tree):
            child.send_signal(signal.SIGKILL)
        proc.send_signal(signal.SIGKILL)
    finally:
        _, err = proc.communicate()
    if proc.returncode != -signal.SIGKILL:
        pytest.fail(f"training ended (exit {proc.returncode}) before it could be killed: {err}")
    [checkpoint] = checkpoints.glob("*/checkpoint.pt")
    payload = torch.load(checkpoint, weights_only=True)
    total = json.loads((reference / "train_metrics.json").read_text())["steps"]
    assert 0 < payload["state"]["step"] < total
    assert len(payload["rng"]) == 2            # every rank's RNG state, written by rank 0
    assert not out.exists()

    cmd = [sys.executable, "-m", "stages.train",
           *stage_args(project, out, **{"checkpoint-every": 1}), "--processes", "2"]
    done = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resuming from step {payload['state']['step']} of {total}" in done.stderr
    got, want = weights(out), weights(reference)
    for name in want:
        assert torch.equal(got[name], want[name]), name
    assert ((out.parent / "curves" / "train" / "loss.tsv").read_text()
            == (reference.parent / "curves" / "train" / "loss.tsv").read_text())
