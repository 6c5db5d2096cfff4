"""benchmarks/usage_cap_ppl.py and benchmarks/kept_runs.py: two kept runs read back from a DVC
cache laid out as DVC writes it (files/md5/<2>/<30>, a folder as a `.dir` listing), compared
seed by seed."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from benchmarks.kept_runs import materialize, output_md5
from benchmarks.usage_cap_ppl import compare
from pipeline.infra.errors import UserError

SEEDS = (0, 1, 2)
N_DOCS = 80


def _blob(cache: Path, data: bytes, suffix: str = "") -> str:
    """Store ``data`` as DVC does (a folder's listing keeps its `.dir` in the file name)."""
    md5 = hashlib.md5(data).hexdigest() + suffix
    path = cache / "files" / "md5" / md5[:2] / md5[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return md5


def _score_folder(cache: Path, tmp: Path, nll_per_token: np.ndarray, tokens: np.ndarray) -> str:
    """A score folder (metrics.json, tokens_<period>.parquet) stored as a `.dir` object."""
    entries = []
    for period, shift in (("2020", 0.0), ("2021", 0.0)):
        frame = pd.DataFrame({"key": [f"doc{i:03d}" for i in range(N_DOCS)], "period": period,
                              "n_tokens": tokens, "nll_sum": tokens * (nll_per_token + shift),
                              "n_content": tokens // 4,
                              "content_nll_sum": tokens // 4 * nll_per_token})
        file = tmp / f"tokens_{period}.parquet"
        frame.to_parquet(file)
        entries.append({"md5": _blob(cache, file.read_bytes()),
                        "relpath": f"tokens_{period}.parquet"})
    ppl = float(math.exp((tokens * nll_per_token).sum() / tokens.sum()))
    metrics = {"dev_period": "2020", "test_period": "2021",
               "periods": {p: {"ppl": ppl, "period": p} for p in ("2020", "2021")}}
    entries.append({"md5": _blob(cache, json.dumps(metrics).encode()), "relpath": "metrics.json"})
    return _blob(cache, json.dumps(sorted(entries, key=lambda e: e["relpath"])).encode(), ".dir")


def _kept(root: Path, cache: Path, cap: int | None, outputs: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump({
        "embeddings": {"usage_cap": cap}, "train": {"base": "shared"},
        "experiment": {"seeds": list(SEEDS)}}), encoding="utf-8")
    stages = {f"score-{name}": {"cmd": "python -m stages.score", "outs": [
        {"path": f"data/scores/{name}", "hash": "md5", "md5": md5}]}
        for name, md5 in outputs.items()}
    (root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": stages}),
                                   encoding="utf-8")
    return root


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(0)
    cache, scratch = tmp_path / "cache", tmp_path / "scratch"
    scratch.mkdir()
    tokens = rng.integers(50, 300, N_DOCS)
    difficulty = rng.normal(6.0, 0.3, N_DOCS)
    off, cap = {}, {}
    for s in SEEDS:
        seed_offset = rng.normal(0, 0.05)                     # each seed's Baseline, shared
        base = _score_folder(cache, scratch, difficulty + seed_offset, tokens)
        off[f"baseline-s{s}"] = cap[f"baseline-s{s}"] = base
        for v, gain in (("context2", 0.03), ("context2-static", 0.0)):   # the cap costs 3 %
            own = difficulty + seed_offset - 0.01 + rng.normal(0, 0.002, N_DOCS)
            off[f"{v}-s{s}"] = _score_folder(cache, scratch, own, tokens)
            cap[f"{v}-s{s}"] = _score_folder(cache, scratch, own + math.log1p(gain)
                                             + rng.normal(0, 0.001), tokens)
    return (_kept(tmp_path / "off", cache, None, off), _kept(tmp_path / "cap", cache, 8, cap),
            cache)


def test_a_folder_output_comes_back_file_by_file(runs, tmp_path: Path) -> None:
    off, _, cache = runs
    folder = materialize(off, "data/scores/context2-s1", tmp_path / "out", cache)
    assert sorted(p.name for p in folder.iterdir()) == [
        "metrics.json", "tokens_2020.parquet", "tokens_2021.parquet"]
    assert output_md5(off, "data/scores/context2-s1").endswith(".dir")
    with pytest.raises(UserError, match="not an output of the kept run"):
        output_md5(off, "data/scores/nothing-s0")


def test_the_cap_is_judged_paired_by_seed(runs) -> None:
    off, cap, cache = runs
    verdicts, lines = compare(off, cap, ["context2", "context2-static"], cache)
    by_model = {v.a: v for v in verdicts}
    costly = by_model["Context², cap 8"]
    assert costly.verdict == "worse" and costly.ci[0] < 3.0 < costly.ci[1]
    assert costly.seeds == (3, 3) and "paired t over seeds" in costly.test
    assert by_model["Context²-static, cap 8"].verdict == "not distinguishable"
    assert any(line.startswith("| Baseline-all | 0 |") for line in lines)


def test_runs_that_do_not_share_their_baselines_do_not_pair(runs, tmp_path: Path) -> None:
    off, cap, cache = runs
    lock = yaml.safe_load((cap / "dvc.lock").read_text(encoding="utf-8"))
    lock["stages"]["score-baseline-s1"]["outs"][0]["md5"] = "0" * 32 + ".dir"
    (cap / "dvc.lock").write_text(yaml.safe_dump(lock), encoding="utf-8")
    with pytest.raises(UserError, match=r"Baselines of seeds \[1\] differ"):
        compare(off, cap, ["context2"], cache)
    with pytest.raises(UserError, match="--off must be a run without a usage cap"):
        compare(cap, off, ["context2"], cache)
