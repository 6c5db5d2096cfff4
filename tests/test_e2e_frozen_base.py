"""End to end through DVC with `train.base: frozen`: a pretrained LM that
is never trained, one `base_cache` stage for every seed, the Baseline = that LM as it is, and
every stage that runs the LM over whole abstracts (training, PPL/CPL scoring, the forecast's
reference passes) reading the cached states. Then, with the cache's states deleted from the
scored models' view (`--cache` dropped by hand), scoring gives the same numbers: the cache
changes no printed digit.

The "pretrained" LM is a tiny random GPT-2 saved with a tokenizer in a local folder (what
`lm.base` resolves offline, pipeline/models/hub.py); the corpus is the tiny export of
tests/tiny_project.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from transformers import GPT2Config, GPT2LMHeadModel

from pipeline.corpus.anthology import parse_file
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.infra.io import read_json
from tests.dvc_project import (deep_merge, expand_runs, git, make_project, run_dvc, run_stage,
                               stages_run)
from tests.tiny_project import RUNTIME, TINY, tiny_export

pytestmark = pytest.mark.slow

PARAMS = deep_merge(TINY, {
    "lm": {"base": "pretrained-lm"},
    "experiment": {"variants": ["baseline", "frequency"], "seeds": [0, 1]},
    "train": {"base": "frozen", "cache": True, "epochs": 1, "lr_new": 5.0e-2},
})


def pretrained_folder(sample_bib: Path, folder: Path) -> None:
    """A tiny GPT-2 with its own tokenizer, saved as a pretrained checkpoint."""
    papers = parse_file(sample_bib).papers
    tok = train_scratch_tokenizer(papers["abstract"].head(200).tolist(), 400)
    tok.save_pretrained(folder)
    config = GPT2Config(vocab_size=len(tok), n_layer=1, n_head=2, n_embd=16, n_positions=64,
                        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder)


def test_frozen_base_runs_from_one_cache_and_changes_no_score(tmp_path: Path, sample_bib) -> None:
    proj = make_project(tmp_path, PARAMS)
    tiny_export(sample_bib, proj / "data" / "tiny.bib.gz")
    pretrained_folder(sample_bib, proj / "pretrained-lm")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "tiny export and LM")
    stages = expand_runs(yaml.safe_load((proj / "dvc.yaml").read_text())["stages"])
    assert "base_cache" in stages and not any(s.startswith("base_cache-s") for s in stages)
    for name in ("train-baseline@s1", "train-frequency@s0", "score-frequency@s1",
                 "forecast-baseline@s0"):
        assert "--cache data/cache/base" in stages[name]["cmd"], name
        assert "data/cache/base" in stages[name]["deps"], name
    assert "--init-from" not in stages["train-frequency@s0"]["cmd"]

    targets = ["score-baseline@s0", "score-frequency@s0", "score-frequency@s1",
               "forecast-frequency@s0"]
    proc = run_dvc(proj, "repro", *targets, env=RUNTIME, preload=True)
    ran = stages_run(proc)
    served = re.findall(r"wrote (data/\w+/[\w-]+) \((\d+) batches from the cache, (\d+) ran the LM",
                        proc.stdout + proc.stderr)
    assert {out for out, _, _ in served} == {"data/scores/baseline-s0", "data/scores/frequency-s0",
                                              "data/scores/frequency-s1",
                                              "data/forecast/frequency-s0"}
    for out, hits, misses in served:   # every PPL/CPL pass and reference pass read the cache
        assert int(hits) > 0 and int(misses) == 0, (out, hits, misses)
    assert {"base_cache", "train-baseline@s0", "train-frequency@s1"} <= set(ran)
    assert "train-baseline@s1" not in ran   # only what the targets need
    baseline = read_json(proj / "data" / "models" / "baseline-s0" / "train_metrics.json")
    assert baseline["epochs_run"] == 1 and baseline["steps"] == 0   # never trained
    assert baseline["cache"] == "data/cache/base"
    s0 = read_json(proj / "data" / "models" / "frequency-s0" / "train_metrics.json")
    s1 = read_json(proj / "data" / "models" / "frequency-s1" / "train_metrics.json")
    assert s0["steps"] > 0 and s0["best_dev_ppl"] != s1["best_dev_ppl"]   # seeds differ

    # The scores read from the cache equal those of the LM run in full, to every printed digit.
    assert_scores_without_cache_agree(proj, stages, ["score-baseline@s0", "score-frequency@s0"])


def assert_scores_without_cache_agree(proj: Path, stages: dict, names: list[str]) -> None:
    """Rerun each score stage of ``names`` as locked (params resolved) without its ``--cache``
    option, into ``uncached/<name>``: its metrics equal the cached run's to every printed digit."""
    locked = yaml.safe_load((proj / "dvc.lock").read_text())["stages"]
    for name in names:
        cmd = re.sub(r" --cache data/cache/[\w-]+", "", locked[name]["cmd"])
        out = proj / "uncached" / name
        cmd = cmd.replace(f"--out {stages[name]['outs'][0]}", f"--out {out}")
        run_stage(proj, cmd, env=RUNTIME)
        cached = read_json(proj / stages[name]["outs"][0] / "metrics.json")
        plain = read_json(out / "metrics.json")
        assert json.dumps(_rounded(cached)) == json.dumps(_rounded(plain)), name


def _rounded(metrics: dict) -> dict:
    """Every float to 2 decimals (the reports' precision), excluding the timings."""
    def walk(value):
        if isinstance(value, float):
            return round(value, 2)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items() if "seconds" not in k and "time" not in k}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value
    return walk(metrics)
