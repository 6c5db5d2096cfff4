"""`python -m stages.train` on a small real project: sample abstracts, a real BPE, real feature files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from pipeline.features import embeddings

from pipeline.features import frequencies
from pipeline.corpus.anthology import parse_file
from pipeline.infra.schema.config import LMConfig, ModelConfig, TrainConfig
from pipeline.infra.errors import UserError
from pipeline.models.future_lm import load_future_lm
from pipeline.models.registry import lookup
from pipeline.variants._spec import setting_fields
from pipeline.infra.identity import tokenizer_identity
from pipeline.infra.io import read_json, read_parquet, write_parquet
from pipeline.features.tokenizer import encode_abstracts, load_tokenizer, train_scratch_tokenizer
from pipeline.training.run import TrainInputs, prepare_run
from stages import score as score_stage
from stages import train as stage
from stages._lib.options import build
from tests.conftest import stage_help

STOPWORDS = Path(__file__).resolve().parents[1] / "data" / "reference" / "stopwords.txt"


@pytest.fixture(scope="module")
def project(tmp_path_factory, sample_bib) -> Path:
    """Splits (train 2017-2019, dev 2020, test 2021), tokenizer, and features for 2015-2020
    (random vectors)."""
    root = tmp_path_factory.mktemp("train_project")
    papers = parse_file(sample_bib).papers
    papers = papers[papers["abstract"].str.split().str.len() > 10]
    papers = papers.groupby("year").head(20)[["key", "year", "title", "abstract"]]
    papers = papers.assign(period=papers["year"].astype(str))   # split files: period labels
    columns = ["key", "period", "title", "abstract"]
    train = papers[papers["year"].between(2017, 2019)]
    write_parquet(train[columns], root / "train.parquet")
    write_parquet(papers[papers["year"] == 2020].head(8)[columns], root / "dev.parquet")
    write_parquet(papers[papers["year"] == 2021].head(6)[columns], root / "test.parquet")
    tok = train_scratch_tokenizer(train["abstract"].tolist(), 400)
    tok.save_pretrained(root / "tokenizer")
    rng = np.random.default_rng(0)
    for year in range(2015, 2021):
        counts = frequencies.count_tokens(tok, papers[papers["year"] == year]["abstract"].tolist())
        frequencies.write_period(root / "freq" / f"{year}.parquet", str(year), counts,
                               tokenizer_id=tokenizer_identity(root / "tokenizer"))
        ids = np.flatnonzero(counts)
        embeddings.write_period(root / "emb" / f"{year}.safetensors", str(year), ids, counts[ids],
                              rng.normal(size=(len(ids), 8)), encoder="test", layer=-1,
                              vocab_size=len(tok), tokenizer_id=tokenizer_identity(root / "tokenizer"))
    return root


def has_setting(variant: str, name: str) -> bool:
    try:
        settings = lookup(variant).settings
    except UserError:
        return False
    return name in {f.name for f in setting_fields(settings)}


def prepared(project: Path, args: list[str]):
    """prepare_run of the stage's parsed ``args`` (its variant's settings included)."""
    variant = stage._variant(args)
    ns = stage.build_parser(variant).parse_args(args)
    settings = lookup(variant).settings
    return prepare_run(TrainInputs(project / "train.parquet", project / "dev.parquet",
                                   project / "tokenizer", project / "freq"),
                       build(LMConfig, ns), build(ModelConfig, ns), build(TrainConfig, ns),
                       None if settings is None else build(settings, ns))


def argv(project: Path, variant: str, out: Path, **overrides) -> list[str]:
    opts = {"variant": variant, "seed": 0, "train": project / "train.parquet",
            "dev": project / "dev.parquet", "tokenizer": project / "tokenizer",
            "frequencies": project / "freq", "embeddings": project / "emb", "window": 2,
            "base": "scratch", "n-layer": 1, "n-head": 2, "n-embd": 16, "n-positions": 48,
            "epochs": 1, "batch-size": 8, "max-length": 48, "lr-lm": 3e-3, "lr-new": 3e-3,
            "warmup-steps": 2, "device": "cpu", "out": out,
            "curves": out.parent / "curves" / out.name, "checkpoint-dir": out.parent / "ckpt"}
    if has_setting(variant, "lstm_hidden"):   # a variant's settings are its own options
        opts["lstm-hidden"] = 8
    opts.update({k.replace("_", "-"): v for k, v in overrides.items()})
    opts = {k: v for k, v in opts.items() if v is not None}
    return [tok for k, v in opts.items() for tok in (f"--{k}", str(v))]



def scored_metrics(project, model, tmp_path) -> dict:
    """The score stage's metrics.json for ``model`` (a tiny scoring run on the project's splits,
    written to ``tmp_path / "scores"``)."""
    scores = tmp_path / "scores"
    score_stage.main(["--model", str(model), "--dev", str(project / "dev.parquet"),
                      "--test", str(project / "test.parquet"), "--tokenizer", str(project / "tokenizer"),
                      "--frequencies", str(project / "freq"), "--stopwords", str(STOPWORDS),
                      "--batch-size", "3", "--n-generate", "1", "--max-new-tokens", "8",
                      "--device", "cpu", "--out", str(scores)])
    return read_json(scores / "metrics.json")

def test_help_explains_every_option(capsys) -> None:
    parser_help = stage_help(capsys, stage.main)
    for option in ("--variant", "--window", "--base", "--lr-lm", "--lr-new", "--grad-accum",
                   "--patience", "--checkpoint-dir"):
        assert option in parser_help
    assert "baseline-N" in parser_help and "--variant NAME --help" in parser_help
    # a variant's own settings appear with --variant NAME
    context2_help = stage_help(capsys, stage.main, "--variant", "context2")
    for option in ("--alpha", "--lstm-hidden", "--context-input"):
        assert option in context2_help and option not in parser_help
    assert "variants.context2.*" in context2_help


def test_context2_trains_and_writes_a_loadable_model(project, tmp_path) -> None:
    out = tmp_path / "models" / "context2-s0"
    stage.main(argv(project, "context2", out, epochs=2))
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors",
                                                      "train_metrics.json"]
    metrics = json.loads((out / "train_metrics.json").read_text())
    assert metrics["variant"] == "context2" and metrics["train_periods"] == ["2017", "2018", "2019"]
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


def test_a_time_free_control_trains_on_its_pooled_history_and_records_it(project, tmp_path) -> None:
    """context-static trains with its training periods (2017-2019) saved with the model; a
    control's run reads one pooled history for every period, and has its variant's new
    parameters."""
    out = tmp_path / "models" / "context-static-s0"
    stage.main(argv(project, "context-static", out))
    model = load_future_lm(out)
    assert model.static_periods == ("2017", "2018", "2019") and model.variant == "context-static"
    assert model.history_kinds == {"embeddings"}
    static = prepared(project, argv(project, "frequency-static", tmp_path / "static"))
    plain = prepared(project, argv(project, "frequency", tmp_path / "plain"))
    h = static.histories
    assert set(h) == {"2017", "2018", "2019", "2020"}
    assert all(x.pooled == ("2017", "2018", "2019") for x in h.values())
    assert h["2017"].log_freq is h["2020"].log_freq
    assert not torch.equal(plain.histories["2017"].log_freq, plain.histories["2020"].log_freq)
    count = lambda run: sum(p.numel() for p in run.model.bias.parameters())   # noqa: E731
    assert count(static) == count(plain) and static.key != plain.key


def test_a_relative_variant_trains_and_scores_against_the_training_periods_level(
        project, tmp_path) -> None:
    """recency trains with its reference periods (the training periods, 2017-2019) saved with
    the model; every history of the run carries their pooled log frequency; the score stage
    reads them back and scores the dev period as training measured it."""
    out = tmp_path / "recency-s0"
    stage.main(argv(project, "recency", out, lr_new=5e-2))
    model = load_future_lm(out)
    assert model.reference_periods == ("2017", "2018", "2019") and model.static_periods is None
    assert model.bias.scale.item() != 0.0   # λ moved off the base LM
    run = prepared(project, argv(project, "recency", tmp_path / "again"))
    pooled = frequencies.log_frequencies(sum(
        frequencies.read_period(project / "freq" / f"{y}.parquet").counts for y in range(2017, 2020)))
    for h in run.histories.values():
        assert h.reference_periods == ("2017", "2018", "2019")
        np.testing.assert_array_equal(h.reference.numpy(), pooled.astype(np.float32))
    trained, scored = read_json(out / "train_metrics.json"), scored_metrics(project, out, tmp_path)
    assert scored["dev"]["ppl"] == pytest.approx(trained["best_dev_ppl"], rel=1e-6)


def test_baseline_n_uses_the_latest_periods_and_no_features(project, tmp_path) -> None:
    out = tmp_path / "baseline-1-s0"
    stage.main(argv(project, "baseline-1", out, frequencies=tmp_path / "none",
                    embeddings=tmp_path / "none"))
    metrics = json.loads((out / "train_metrics.json").read_text())
    assert metrics["train_periods"] == ["2019"] and metrics["parameters_new"] == 0


def test_continued_n_continues_the_baseline_on_the_latest_period_for_its_steps(project,
                                                                              tmp_path) -> None:
    """continued-1 starts from the trained Baseline's weights, reads only the latest training
    period (2019) and takes as many optimizer steps as the Baseline over 2017-2019 (3 passes
    over 2019 per epoch); baseline-1 does the same from scratch with train.latest_steps:
    matched, and one pass per epoch by default."""
    base = tmp_path / "baseline-s0"
    stage.main(argv(project, "baseline", base, epochs=2, patience=0))
    baseline = read_json(base / "train_metrics.json")
    per_period = read_parquet(project / "train.parquet")["period"].value_counts()
    span = 8 * 1   # --batch-size 8, grad_accum 1 (the default)
    assert baseline["steps"] == 2 * sum(-(-n // span) for n in per_period) > 2 * 2

    out = tmp_path / "continued-1-s0"
    args = argv(project, "continued-1", out, epochs=2, patience=0, init_from=base)
    start = prepared(project, args)
    assert list(start.train_data) == ["2019"] and start.steps_per_epoch == baseline["steps"] // 2
    trained = load_future_lm(base).lm.state_dict()
    assert all(torch.equal(v, trained[k]) for k, v in start.model.lm.state_dict().items())
    stage.main(args)
    continued = read_json(out / "train_metrics.json")
    assert continued["steps"] == baseline["steps"] and continued["epochs_run"] == 2
    assert continued["train_periods"] == ["2019"] and continued["init_from"] == str(base)
    assert continued["train_abstracts"] == per_period["2019"] and not continued["freeze_lm"]
    assert continued["steps_per_epoch"] == baseline["steps"] // 2
    got = load_future_lm(out).lm.state_dict()
    assert any(not torch.equal(got[k], v) for k, v in trained.items())   # it trained on

    matched = tmp_path / "baseline-1-s0"
    stage.main(argv(project, "baseline-1", matched, epochs=2, patience=0,
                    latest_steps="matched"))
    assert read_json(matched / "train_metrics.json")["steps"] == baseline["steps"]
    plain = prepared(project, argv(project, "baseline-1", tmp_path / "plain", epochs=2))
    assert plain.steps_per_epoch is None and list(plain.train_data) == ["2019"]


@pytest.mark.parametrize(("variant", "overrides", "message"), [
    ("frequencies", {}, "unknown variant 'frequencies'"),
    ("continued-1", {}, "continued-1 continues the seed's trained Baseline, but no model"),
    ("continued-0", {}, "continued-N needs N >= 1"),
    ("baseline-0", {}, "baseline-0 is the base LM as it is, trained on no period"),
    ("context2", {"alpha": "big"}, "expected float or 'learned', got 'big'"),
    ("context2", {"context_input": "both"}, "invalid choice: 'both'"),
    ("context2", {"lstm_hidden": 0}, "lstm_hidden must be >= 1"),
    ("temperature", {"beta": 0}, "the temperature needs beta > 0"),
    ("frequency", {"alpha": 0.5}, "unrecognized arguments: --alpha"),
    ("frequency", {"window": 3}, "dvc repro frequencies@2014"),
    ("frequency", {"frequencies": None}, "pass --frequencies"),
    ("frequency", {"max_length": 64}, "exceeds the scratch GPT-2's lm.n_positions 48"),
])
def test_bad_inputs_are_messages_not_tracebacks(project, tmp_path, capsys, variant, overrides,
                                                message) -> None:
    args = argv(project, variant, tmp_path / "x", **overrides)   # None drops the option
    with pytest.raises(SystemExit) as exit_:
        stage.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_trained_dev_ppl_is_the_scored_dev_ppl_at_the_trained_context_length(project,
                                                                             tmp_path) -> None:
    """One context length and one perplexity: a model trained with --max-length 32 (its LM has 48
    positions) is scored on the first 32 tokens of each abstract, and the dev perplexity training
    recorded for its best epoch is the score stage's dev perplexity."""
    out = tmp_path / "frequency-s0"
    stage.main(argv(project, "frequency", out, epochs=2, max_length=32))
    assert load_future_lm(out).context_length == 32
    trained, scored = read_json(out / "train_metrics.json"), scored_metrics(project, out, tmp_path)
    assert trained["context_length"] == 32
    assert scored["dev"]["ppl"] == pytest.approx(trained["best_dev_ppl"], rel=1e-6)
    dev = read_parquet(project / "dev.parquet")
    full = encode_abstracts(load_tokenizer(project / "tokenizer"), dev["abstract"].tolist(), 10**6)
    tokens = read_parquet(tmp_path / "scores" / "tokens_2020.parquet")   # scored_metrics' run
    assert tokens["n_tokens"].tolist() == [min(len(ids), 32) - 1 for ids in full]
    assert scored["dev"]["n_truncated"] == sum(len(ids) > 32 for ids in full) > 0


@pytest.mark.slow
def test_shared_base_run_trains_only_the_bias_on_the_baselines_lm(project, tmp_path) -> None:
    base = tmp_path / "baseline-s0"
    stage.main(argv(project, "baseline", base))
    out = tmp_path / "frequency-s0"
    args = argv(project, "frequency", out, init_from=base, epochs=2, lr_new=5e-2) + ["--freeze-lm"]
    stage.main(args)
    got, baseline = load_file(out / "model.safetensors"), load_file(base / "model.safetensors")
    lm_keys = [k for k in baseline if k.startswith("lm.")]
    assert lm_keys and all(torch.equal(got[k], baseline[k]) for k in lm_keys)
    # The bias module moved away from its initialisation (the same seed rebuilds it).
    initial = prepared(project, args).model
    assert initial.bias_config.settings.lstm_hidden == 8
    bias_keys = [k for k in got if k.startswith("bias.")]
    assert bias_keys
    assert any(not torch.equal(got[k], initial.state_dict()[k]) for k in bias_keys)
    metrics = read_json(out / "train_metrics.json")
    assert metrics["init_from"] == str(base) and metrics["freeze_lm"] is True
    model = load_future_lm(out)   # complete and loadable on its own
    assert model.variant == "frequency" and model.context_length == 48


def test_runtime_settings_are_not_part_of_the_run_identity(project, tmp_path, monkeypatch) -> None:
    def key(extra: list[str]) -> str:
        return prepared(project, argv(project, "frequency", tmp_path / "m") + extra).key

    reference = key([])
    assert key(["--threads", "2", "--checkpoint-every", "3"]) == reference
    monkeypatch.setenv("FUTURELM_THREADS", "2")
    assert key([]) == reference
    assert key(["--lr-new", "1e-2"]) != reference   # a setting that changes results does change it
    assert key(["--lstm-hidden", "9"]) != reference   # ... and so does the variant's own
