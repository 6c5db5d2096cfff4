"""The frozen-base cache as stages (train.cache): `python -m stages.base_cache` caches a trained
Baseline's LM, and `stages.train --cache` trains a shared-base variant from it to the same model and
scores as the uncached stage path, on a tiny scratch GPT-2 over the sample; a cache of another
base, tokenizer or context length is refused with a message naming the stage to rerun."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from pipeline.infra.io import read_json
from pipeline.models.registry import all_variants, lookup
from pipeline.models.temporal import TemporalBias
from stages import base_cache as cache_stage
from stages import score as score_stage
from stages import train as stage
from tests.test_stage_train import STOPWORDS, argv, project  # noqa: F401  (fixture)


def cache_argv(project: Path, model: Path, out: Path, tokenizer: Path | None = None,
               max_length: int = 48) -> list[str]:
    return ["--model", str(model), "--train", str(project / "train.parquet"),
            "--dev", str(project / "dev.parquet"),
            "--tokenizer", str(tokenizer or project / "tokenizer"),
            "--max-length", str(max_length), "--device", "cpu", "--out", str(out)]


def score(project: Path, model: Path, out: Path) -> dict:
    score_stage.main(["--model", str(model), "--dev", str(project / "dev.parquet"),
                      "--test", str(project / "test.parquet"),
                      "--tokenizer", str(project / "tokenizer"),
                      "--frequencies", str(project / "freq"), "--stopwords", str(STOPWORDS),
                      "--batch-size", "4", "--n-generate", "1", "--max-new-tokens", "4",
                      "--device", "cpu", "--out", str(out)])
    return read_json(out / "metrics.json")


@pytest.fixture(scope="module")
def baseline(project, tmp_path_factory) -> tuple[Path, Path]:
    """A trained Baseline (seed 0) and the base_cache stage's output for it."""
    root = tmp_path_factory.mktemp("shared")
    base = root / "models" / "baseline-s0"
    stage.main(argv(project, "baseline", base))
    cache = root / "cache" / "baseline-s0"
    cache_stage.main(cache_argv(project, base, cache))
    return base, cache


def shared(project: Path, base: Path, variant: str, out: Path, **overrides) -> list[str]:
    return argv(project, variant, out, init_from=base, epochs=2, lr_new=5e-2,
                **overrides) + ["--freeze-lm"]


def test_help_explains_every_option() -> None:
    text = cache_stage.build_parser().format_help()
    for option in ("--model", "--train", "--dev", "--tokenizer", "--out", "--max-length",
                   "--precision", "--cache-storage", "--batch-size", "--device"):
        assert option in text
    assert "--cache" in stage.build_parser().format_help()


def test_the_cache_holds_every_train_and_dev_period(baseline) -> None:
    _, cache = baseline
    assert sorted(p.name for p in cache.iterdir()) == [
        "2017.safetensors", "2018.safetensors", "2019.safetensors", "2020.safetensors",
        "identity.json"]
    assert read_json(cache / "identity.json")["context_length"] == 48


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["frequency", "temporal-temperature", "continuous-vmf"])
def test_cached_training_gives_the_uncached_model_and_scores(project, baseline, tmp_path,
                                                             capsys, variant) -> None:
    """A bias on the logits and two output-layer heads with their own objective (a temperature
    head reading a history, a continuous head reading the Baseline's target vectors)."""
    base, cache = baseline
    plain, fast = tmp_path / "plain" / f"{variant}-s0", tmp_path / "fast" / f"{variant}-s0"
    targets = ["--targets-from", str(base)] if lookup(variant).targets_from_baseline else []
    stage.main(shared(project, base, variant, plain) + targets)
    stage.main(shared(project, base, variant, fast) + targets + ["--cache", str(cache)])
    printed = capsys.readouterr().out.splitlines()
    assert "from the frozen-base cache" in printed[-1]
    digits = [line.split(": best")[1].split(" -> ")[0] for line in printed[-2:]]
    assert digits[0] == digits[1]   # "dev ppl X (epoch i of n) on cpu": the printed digits
    a, b = read_json(plain / "train_metrics.json"), read_json(fast / "train_metrics.json")
    assert b["cache"] == str(cache)
    assert [f"{p:.2f}" for p in a["dev_ppl"]] == [f"{p:.2f}" for p in b["dev_ppl"]]
    assert b["dev_ppl"] == pytest.approx(a["dev_ppl"], rel=1e-5)
    for key in ("steps", "train_tokens", "best_epoch", "epochs_run", "parameters_new"):
        assert a[key] == b[key], key
    wa, wb = load_file(plain / "model.safetensors"), load_file(fast / "model.safetensors")
    assert wa.keys() == wb.keys()
    for key in wa:
        torch.testing.assert_close(wb[key], wa[key], rtol=1e-4, atol=1e-6)
    curves = fast.parent / "curves" / f"{variant}-s0"
    assert len((curves / "train" / "loss.tsv").read_text().splitlines()) - 1 == b["steps"]
    assert len((curves / "dev" / "ppl.tsv").read_text().splitlines()) - 1 == b["epochs_run"]
    assert not (fast.parent / "ckpt" / f"{variant}-s0").exists()   # cleared after success
    sa, sb = score(project, plain, tmp_path / "sa"), score(project, fast, tmp_path / "sb")
    for split in ("dev", "test"):
        assert f"{sa[split]['ppl']:.2f}" == f"{sb[split]['ppl']:.2f}"
        assert sb[split]["ppl"] == pytest.approx(sa[split]["ppl"], rel=1e-5)
    assert sb["dev"]["ppl"] == pytest.approx(b["best_dev_ppl"], rel=1e-5)


def _refused(capsys, args: list[str], *messages: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        stage.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for message in messages:
        assert message in err, err


def test_a_cache_of_another_base_tokenizer_or_context_length_is_refused(project, baseline,
                                                                         tmp_path, capsys) -> None:
    base, cache = baseline
    fix = "dvc repro base_cache-s<seed>"
    # another base: a second Baseline (another seed) against the first one's cache
    other = tmp_path / "baseline-s1"
    stage.main(argv(project, "baseline", other, seed=1))
    _refused(capsys, shared(project, other, "frequency", tmp_path / "x") + ["--cache", str(cache)],
             "the base cache is stale: its lm differ", fix)
    # another tokenizer: a cache built over a changed tokenizer folder
    tok2 = tmp_path / "tok2"
    shutil.copytree(project / "tokenizer", tok2)
    (tok2 / "tokenizer.json").write_bytes((tok2 / "tokenizer.json").read_bytes() + b" ")
    cache_stage.main(cache_argv(project, base, tmp_path / "c2", tokenizer=tok2))
    _refused(capsys, shared(project, base, "frequency", tmp_path / "x") +
             ["--cache", str(tmp_path / "c2")], "stale: its tokenizer differ", fix)
    # another context length
    _refused(capsys, shared(project, base, "frequency", tmp_path / "x", max_length=32) +
             ["--cache", str(cache)], "stale: its context_length differ", fix)
    # no cache at all
    _refused(capsys, shared(project, base, "frequency", tmp_path / "x") +
             ["--cache", str(tmp_path / "none")], "no base-LM hidden-state cache", fix)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("variant", ["temporal-attention", "temporal-attention-static"])
def test_variants_the_cache_cannot_serve_are_refused(project, baseline, tmp_path, capsys,
                                                     variant) -> None:
    base, cache = baseline
    _refused(capsys, shared(project, base, variant, tmp_path / "x") + ["--cache", str(cache)],
             f"the {variant} variant cannot train from the frozen-base cache",
             "train it without --cache")


def test_the_registrys_cacheable_rows_are_the_ones_cached_training_accepts() -> None:
    for row in all_variants().values():
        if row.has_module:
            own = row.spec.own_objective
            assert row.output_layer == own, row.name
            assert row.cacheable == (not row.in_body), row.name
            # the spec's own_objective and the module class agree: it defines its objective
            defines = row.module_class().objective is not TemporalBias.objective
            assert defines == own, row.name
        else:
            assert not row.cacheable
