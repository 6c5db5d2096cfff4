"""End to end through DVC with `train.base: adapted`: a pretrained LM whose top block is
each seed's Baseline, adapted to the training periods from one trunk cache; the unadapted LM as
`baseline-0`; a temporal variant and an output-layer head trained on the adapted Baseline's
cache; every scoring and forecast pass served by the caches; and the scores read from the caches
equal those of the models run in full, to every printed digit.

The "pretrained" LM is a tiny random Llama (SmolLM2's architecture) saved with a tokenizer in a
local folder (what `lm.base` resolves offline, pipeline/models/hub.py); the corpus is
the tiny export of tests/tiny_project.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from transformers import LlamaConfig, LlamaForCausalLM

from pipeline.corpus.anthology import parse_file
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.infra.io import read_json
from tests.dvc_project import deep_merge, expand_runs, git, make_project, run_dvc, stages_run
from tests.test_e2e_frozen_base import assert_scores_without_cache_agree
from tests.tiny_project import RUNTIME, TINY, tiny_export

pytestmark = pytest.mark.slow

VARIANTS = ["baseline", "baseline-0", "frequency", "temperature"]
PARAMS = deep_merge(TINY, {
    "lm": {"base": "pretrained-lm"},
    "experiment": {"variants": VARIANTS, "seeds": [0]},
    "train": {"base": "adapted", "cache": True, "adapt_layers": 1, "epochs": 1,
              "lr_lm": 2.0e-2, "lr_new": 5.0e-2},
})


def pretrained_llama(sample_bib: Path, folder: Path) -> None:
    """A tiny Llama (two blocks, tied output layer) with its own tokenizer, saved as a
    pretrained checkpoint."""
    papers = parse_file(sample_bib).papers
    tok = train_scratch_tokenizer(papers["abstract"].head(200).tolist(), 400)
    tok.save_pretrained(folder)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=64, tie_word_embeddings=True,
                         bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)


def test_adapted_base_runs_from_the_trunk_and_its_caches_change_no_score(tmp_path: Path,
                                                                        sample_bib) -> None:
    proj = make_project(tmp_path, PARAMS)
    tiny_export(sample_bib, proj / "data" / "tiny.bib.gz")
    pretrained_llama(sample_bib, proj / "pretrained-lm")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "tiny export and LM")
    stages = expand_runs(yaml.safe_load((proj / "dvc.yaml").read_text())["stages"])
    assert {"trunk_cache", "base_cache", "base_cache-s0"} <= set(stages)

    targets = [f"score-{v}@s0" for v in VARIANTS] + ["forecast-frequency@s0"]
    proc = run_dvc(proj, "repro", *targets, env=RUNTIME, preload=True)
    ran = set(stages_run(proc))
    assert {"trunk_cache", "base_cache", "base_cache-s0", "train-baseline@s0",
            "train-baseline-0@s0", "train-frequency@s0", "train-temperature@s0"} <= ran
    served = re.findall(r"wrote (data/\w+/[\w-]+) \((\d+) batches from the cache, (\d+) ran the LM",
                        proc.stdout + proc.stderr)
    assert {out for out, _, _ in served} == {*(f"data/scores/{v}-s0" for v in VARIANTS),
                                              "data/forecast/frequency-s0"}
    for out, hits, misses in served:   # every PPL/CPL and reference pass read a cache
        assert int(hits) > 0 and int(misses) == 0, (out, hits, misses)

    models = proj / "data" / "models"
    adapted = read_json(models / "baseline-s0" / "train_metrics.json")
    unadapted = read_json(models / "baseline-0-s0" / "train_metrics.json")
    assert adapted["steps"] > 0 and adapted["adapt_layers"] == 1
    assert adapted["trunk"] == "data/cache/trunk"
    assert unadapted["steps"] == 0 and unadapted["cache"] == "data/cache/base"
    assert adapted["best_dev_ppl"] < unadapted["best_dev_ppl"]   # adapting to the domain helps
    for variant in ("frequency", "temperature"):
        metrics = read_json(models / f"{variant}-s0" / "train_metrics.json")
        assert metrics["steps"] > 0 and metrics["cache"] == "data/cache/baseline-s0", variant
        assert metrics["init_from"] == "data/models/baseline-s0" and metrics["freeze_lm"]

    # The scores read from the caches equal those of the models run in full, to every digit.
    assert_scores_without_cache_agree(proj, stages, [f"score-{v}@s0" for v in VARIANTS])
