"""A training stage killed with SIGKILL resumes where it stopped and ends bit-identical.

Training is deterministic, so ending with the same model alone would also hold if resume were a
no-op (a fresh restart). This test therefore also proves that the second process *resumed*: it
announces the checkpointed step, and the optimizer steps it actually runs (counted with a torch
optimizer hook in that process) are exactly the steps left after that checkpoint — fewer than a
fresh run needs. No fixed sleeps: the kill happens as soon as a checkpoint file exists.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pipeline.features import frequencies
from pipeline.corpus.anthology import parse_file
from pipeline.infra.identity import tokenizer_identity
from pipeline.infra.io import write_parquet
from pipeline.features.tokenizer import train_scratch_tokenizer

REPO = Path(__file__).resolve().parents[1]

# Runs the train stage in this process and reports how many optimizer steps it ran.
COUNTING = """
import sys
from torch.optim.optimizer import register_optimizer_step_post_hook
from stages import train
steps = 0
def count(optimizer, args, kwargs):
    global steps
    steps += 1
register_optimizer_step_post_hook(count)
try:
    train.main(sys.argv[1:])
finally:
    print(f"optimizer steps run: {steps}", file=sys.stderr)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib) -> Path:
    """Train 2017-2019 / dev 2020 splits, a real BPE, and real frequency files for 2015-2019."""
    root = tmp_path_factory.mktemp("resume_project")
    papers = parse_file(sample_bib).papers
    papers = papers[papers["abstract"].str.split().str.len() > 10]
    papers = papers.groupby("year").head(16)[["key", "year", "title", "abstract"]]
    papers = papers.assign(period=papers["year"].astype(str))   # split files: period labels
    columns = ["key", "period", "title", "abstract"]
    train = papers[papers["year"].between(2017, 2019)]
    write_parquet(train[columns], root / "train.parquet")
    write_parquet(papers[papers["year"] == 2020].head(6)[columns], root / "dev.parquet")
    tok = train_scratch_tokenizer(train["abstract"].tolist(), 400)
    tok.save_pretrained(root / "tokenizer")
    for year in range(2015, 2020):
        counts = frequencies.count_tokens(tok, papers[papers["year"] == year]["abstract"].tolist())
        frequencies.write_period(root / "freq" / f"{year}.parquet", str(year), counts,
                               tokenizer_id=tokenizer_identity(root / "tokenizer"))
    return root


def train_args(project: Path, out: Path) -> list[str]:
    opts = {"variant": "frequency", "seed": 0, "train": project / "train.parquet",
            "dev": project / "dev.parquet", "tokenizer": project / "tokenizer",
            "frequencies": project / "freq", "window": 2, "base": "scratch", "n-layer": 1,
            "n-head": 2, "n-embd": 16, "n-positions": 48, "max-length": 48, "epochs": 3,
            "batch-size": 2, "lr-lm": 3e-3, "lr-new": 3e-3, "warmup-steps": 2, "lstm-hidden": 8,
            "patience": 0, "checkpoint-every": 1, "out": out,
            "curves": out.parent / "curves", "checkpoint-dir": out.parent / "ckpt"}
    return [tok for k, v in opts.items() for tok in (f"--{k}", str(v))]


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "FUTURELM_THREADS": "1", "FUTURELM_DEVICE": "cpu"}


def counted_run(project: Path, out: Path) -> tuple[int, str]:
    """Train to completion; return the optimizer steps this process ran, and its stderr."""
    proc = subprocess.run([sys.executable, "-c", COUNTING, *train_args(project, out)], cwd=REPO,
                          env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    steps = re.search(r"optimizer steps run: (\d+)", proc.stderr)
    assert steps, proc.stderr
    return int(steps.group(1)), proc.stderr


def killed_after_first_checkpoint(project: Path, out: Path) -> Path:
    """Start training, SIGKILL it as soon as a checkpoint file exists; return that file."""
    root = out.parent / "ckpt"
    proc = subprocess.Popen([sys.executable, "-m", "stages.train", *train_args(project, out)],
                            cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while proc.poll() is None and not list(root.glob("*/checkpoint.pt")):
            time.sleep(0.01)   # polling for the file, not waiting for a fixed time
        proc.send_signal(signal.SIGKILL)
    finally:
        _, err = proc.communicate()
    if proc.returncode != -signal.SIGKILL:
        pytest.fail(f"training ended (exit {proc.returncode}) before it could be killed: {err}")
    [checkpoint] = root.glob("*/checkpoint.pt")
    return checkpoint


@pytest.mark.slow
def test_killed_run_resumes_from_its_checkpoint_to_the_same_model(project, tmp_path) -> None:
    reference = tmp_path / "ref" / "frequency-s0"
    fresh_steps, fresh_log = counted_run(project, reference)
    total = json.loads((reference / "train_metrics.json").read_text())["steps"]
    assert fresh_steps == total and "resuming" not in fresh_log

    out = tmp_path / "cut" / "frequency-s0"
    checkpoint = killed_after_first_checkpoint(project, out)
    assert not out.exists()   # no half-written model
    at_kill = torch.load(checkpoint, weights_only=True)["state"]["step"]
    assert 0 < at_kill < total

    resumed_steps, log = counted_run(project, out)
    # it said so, from the checkpointed step, and ran only the steps that were left
    assert f"resuming from step {at_kill} of {total}, checkpoint {checkpoint}" in log
    assert resumed_steps == total - at_kill < fresh_steps

    got, want = load_file(out / "model.safetensors"), load_file(reference / "model.safetensors")
    assert got.keys() == want.keys()
    for name in want:
        assert torch.equal(got[name], want[name]), name
    assert (json.loads((out / "train_metrics.json").read_text())
            == json.loads((reference / "train_metrics.json").read_text()))
    # the training curve holds every step exactly once, as in the uninterrupted run
    for tsv in ("train/loss.tsv", "dev/ppl.tsv"):
        assert ((out.parent / "curves" / tsv).read_text()
                == (reference.parent / "curves" / tsv).read_text()), tsv
    assert not checkpoint.exists()   # cleared after success
