"""Sharded embedding pooling: a year's encoder batches shared out over 2 gloo
processes on 127.0.0.1 and all-reduced give the same bits as one process — in the library and
through the stage's own torchrun launch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.features import embeddings as em
from pipeline.infra.distributed import SINGLE
from pipeline.infra.io import write_parquet
from pipeline.models.hub import MINILM
from stages import tokenizer as tokenizer_stage
from tests.distributed_worker import loopback_env, pooling, run_ranks

pytestmark = pytest.mark.slow   # two torch processes each; the stage test runs the real encoder


def test_sharded_pooling_equals_one_process_bit_for_bit(tmp_path) -> None:
    ranks = run_ranks("pooling", tmp_path)
    assert all(r["my_batches"] > 0 for r in ranks)          # both ranks did part of the work
    assert sum(r["my_batches"] for r in ranks) == ranks[0]["n_batches"]
    pooling(SINGLE, tmp_path)                                # the reference, in this process
    np.testing.assert_array_equal(np.load(tmp_path / "ids-2.npy"), np.load(tmp_path / "ids-1.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "counts-2.npy"),
                                  np.load(tmp_path / "counts-1.npy"))
    sharded, single = (torch.load(tmp_path / f"vectors-{n}.pt") for n in (2, 1))
    assert single.abs().sum() > 0 and torch.equal(sharded, single)


def test_stage_under_two_processes_writes_the_same_file(tmp_path) -> None:
    rng = np.random.default_rng(0)
    words = "we propose neural models for parsing translation and tagging with attention".split()
    rows = [{"key": f"p{y}-{i}", "year": y, "title": "t",
             "abstract": " ".join(rng.choice(words, size=rng.integers(10, 60))) + "."}
            for y in (2017, 2018) for i in range(15)]
    papers = pd.DataFrame(rows).astype({"year": "int32"})
    write_parquet(papers, tmp_path / "abstracts.parquet")
    write_parquet(papers[papers.year == 2017], tmp_path / "train.parquet")
    tokenizer_stage.main(["--base", "scratch", "--vocab-size", "400", "--train",
                          str(tmp_path / "train.parquet"), "--out", str(tmp_path / "tok")])

    def stage(nproc: int) -> bytes:
        out = tmp_path / f"2018-{nproc}.safetensors"
        cmd = [sys.executable, "-m", "stages.embeddings", "--period", "2018",
               "--abstracts", str(tmp_path / "abstracts.parquet"), "--tokenizer", str(tmp_path / "tok"),
               "--encoder", MINILM, "--batch-size", "4", "--max-length", "32", "--stride", "8",
               "--device", "cpu", "--threads", "1", "--processes", str(nproc), "--out", str(out)]
        done = subprocess.run(cmd, env=loopback_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        if nproc > 1:
            assert f"x {nproc} processes" in done.stdout   # really ran distributed
        return out.read_bytes()

    assert stage(2) == stage(1)
    year = em.read_period(tmp_path / "2018-2.safetensors")
    assert year.period == "2018" and year.vectors.abs().sum() > 0
