"""The reference level and the variants that read it (recency, frequency-drift), and word-bias.

On real frequency files: the history's reference is the training periods' pooled log frequency,
read once for all periods; recency's bias is exactly λ·(window mean − reference) and zero for its
control; frequency-drift reads (log f − reference, reference), its control a zero drift channel;
a saved relative model reloads with its reference periods and gives the same logits. Word-bias
has one parameter per output row and trains on a tiny real LM's cached states. The stage graph
gives the relative variants' stages the training periods' frequency files."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from pipeline.features import frequencies
from pipeline.features.base_cache import build_cache, load_cache
from pipeline.features.history import PeriodHistory, load_history
from pipeline.forecast.vocabulary import period_history
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.errors import UserError
from pipeline.models.future_lm import (build_module, load_future_lm, load_histories,
                                       make_future_lm, save_future_lm)
from pipeline.models.relative import FrequencyDriftBias, RecencyBias, drift_inputs
from pipeline.variants._spec import BiasConfig
from pipeline.models.word_bias import WordBias
from pipeline.training.cached import evaluate_cached, train_cached
from tests.dvc_project import deep_merge
from tests.test_base_cache import DEV, TRAIN, setup  # noqa: F401  (fixture)
from tests.test_future_lm import ids, settings, tiny_lm
from tests.test_graph import PARAMS, feature_deps, stages_of, years
from tests.variant_settings import sized

V = 12
POOL = ("2016", "2017", "2018")


@pytest.fixture
def freq_dir(tmp_path: Path):
    """Frequency files of 2014..2020 with words unseen in some periods (zero counts)."""
    rng = np.random.default_rng(0)
    counts = {}
    for year in range(2014, 2021):
        counts[year] = rng.integers(0, 4, V)
        frequencies.write_period(tmp_path / f"{year}.parquet", year, counts[year])
    return tmp_path, counts


def pooled(counts, periods) -> torch.Tensor:
    summed = sum(counts[int(p)] for p in periods)
    return torch.as_tensor(frequencies.log_frequencies(summed), dtype=torch.float32)


# --- the reference level ------------------------------------------------------------------------

def test_the_reference_is_the_pooled_log_frequency_of_the_training_periods(freq_dir) -> None:
    folder, counts = freq_dir
    h = load_history(2020, 2, folder, None, reference_periods=POOL)
    plain = load_history(2020, 2, folder, None)
    assert plain.reference is None and plain.reference_periods == ()
    assert h.reference_periods == POOL and h.reference.dtype == torch.float32
    assert torch.equal(h.reference, pooled(counts, POOL))
    assert not torch.equal(h.reference, pooled(counts, ("2018", "2019")))   # not the window's
    assert torch.equal(h.log_freq, plain.log_freq) and torch.equal(h.observed, plain.observed)
    # a control of a relative variant: its history pooled over the same periods, and the reference
    control = load_history(2020, 2, folder, None, static_periods=POOL, reference_periods=POOL)
    for j in range(2):
        assert torch.equal(control.log_freq[:, j], control.reference)
    # every period's history carries the one reference, read once
    hs = load_histories(["2020", "2019"], 2, {"frequencies"}, folder, None,
                        reference_periods=POOL)
    assert hs["2019"].reference is hs["2020"].reference
    assert torch.equal(hs["2020"].reference, h.reference)
    assert hs["2019"].reference_periods == POOL and hs["2019"].periods == ("2017", "2018")


def test_a_missing_reference_period_names_it(freq_dir) -> None:
    folder, _ = freq_dir
    with pytest.raises(UserError, match="frequencies of 2013 are missing"):
        load_history(2020, 2, folder, None, reference_periods=["2013", "2014"])
    with pytest.raises(ValueError, match="at least one training period"):
        load_history(2020, 2, folder, None, reference_periods=[])


# --- the modules --------------------------------------------------------------------------------

def bias_config(kind: str, vocab: int = V) -> BiasConfig:
    return BiasConfig(kind=kind, window=2, lm_dim=8, vocab_size=vocab, settings=sized(kind, 5))


def test_recency_is_lambda_times_window_mean_minus_reference(freq_dir) -> None:
    folder, counts = freq_dir
    bias = build_module(bias_config("recency"))
    assert type(bias) is RecencyBias and [n for n, _ in bias.named_parameters()] == ["scale"]
    h = load_history(2020, 2, folder, None, reference_periods=POOL)
    E = torch.empty(0)
    assert torch.equal(bias.word_terms(h, E), torch.zeros(V))   # λ starts at 0: the base LM
    with torch.no_grad():
        bias.scale.fill_(0.7)
    window_mean = (pooled(counts, ["2018"]) + pooled(counts, ["2019"])) / 2
    expected = torch.tensor(0.7) * (window_mean - pooled(counts, POOL))
    torch.testing.assert_close(bias.word_terms(h, E), expected, rtol=0, atol=1e-6)
    assert bias.word_terms(h, E).abs().max() > 0.05
    # the control: window = reference, so the shift (and the bias) is zero for every word
    control = load_history(2020, 2, folder, None, static_periods=POOL, reference_periods=POOL)
    assert torch.equal(bias.word_terms(control, E), torch.zeros(V))
    # without the reference it says how to load it
    with pytest.raises(ValueError, match="reference_periods="):
        bias.word_terms(load_history(2020, 2, folder, None), E)


def test_frequency_drift_reads_the_drift_and_the_level(freq_dir) -> None:
    folder, counts = freq_dir
    h = load_history(2020, 2, folder, None, reference_periods=POOL)
    x = drift_inputs(h)
    reference = pooled(counts, POOL)
    assert x.shape == (V, 2, 2)
    assert torch.equal(x[..., 0], h.log_freq - reference[:, None])
    assert torch.equal(x[..., 1], reference[:, None].expand(V, 2))
    # the control reads (0, log f̄): a zero drift channel, the same level
    control = load_history(2020, 2, folder, None, static_periods=POOL, reference_periods=POOL)
    xc = drift_inputs(control)
    assert torch.equal(xc[..., 0], torch.zeros(V, 2)) and torch.equal(xc[..., 1], x[..., 1])
    bias = build_module(bias_config("frequency-drift"))
    assert type(bias) is FrequencyDriftBias and bias.lstm.lstm.input_size == 2
    assert bias.word_terms(h, torch.empty(0)).shape == (V,)


def test_frequency_drift_runs_identical_rows_once_exactly() -> None:
    """Words unseen in the window and in the training periods have identical inputs; a word
    unseen in the window but seen in the training periods does not, and gets its own row."""
    torch.manual_seed(0)
    bias = FrequencyDriftBias(bias_config("frequency-drift", 8)).eval()
    floor, ref_floor = -9.0, -11.0
    log_freq = -5 - torch.rand(8, 2)
    reference = -4 - torch.rand(8)
    observed = torch.tensor([True, True, True, False, False, False, False, False])
    log_freq[~observed] = floor
    reference[[4, 5, 6, 7]] = ref_floor   # words 4..7: unseen everywhere; word 3: only before
    full = PeriodHistory("2020", ("2018", "2019"), log_freq, reference=reference)
    fast = PeriodHistory("2020", ("2018", "2019"), log_freq, observed=observed,
                         reference=reference)
    calls: list[int] = []
    run_lstm = bias.lstm._last_hidden
    bias.lstm._last_hidden = lambda s: (calls.append(s.shape[0]), run_lstm(s))[1]
    out_full, out_fast = bias.word_terms(full, torch.empty(0)), bias.word_terms(fast, torch.empty(0))
    assert calls == [8, 5]   # words 0..3 and one representative of 4..7
    torch.testing.assert_close(out_fast, out_full)
    assert out_fast[3] != out_fast[4]


# --- the model: its reference periods ------------------------------------------------------------

def test_a_relative_model_needs_its_reference_periods_and_a_history_with_them(freq_dir) -> None:
    with pytest.raises(ValueError, match="reference_periods="):
        make_future_lm(tiny_lm(), "recency", 2)
    with pytest.raises(ValueError, match="reads no reference level"):
        make_future_lm(tiny_lm(), "frequency", 2, settings=settings("frequency"),
                       reference_periods=POOL)
    model = make_future_lm(tiny_lm(), "recency", 2, reference_periods=["2018", "2016", "2017"])
    assert model.reference_periods == POOL and model.history_kinds == {"frequencies"}
    folder, _ = freq_dir
    other = load_history(2020, 2, folder, None, reference_periods=["2016", "2017"])
    with pytest.raises(ValueError, match="reference_periods=model.reference_periods"):
        model.word_terms(other)


@pytest.mark.parametrize("variant", ["recency", "frequency-drift", "frequency-drift-static"])
def test_a_saved_relative_model_reloads_with_its_reference_periods_and_scores_the_same(
        tmp_path, variant: str) -> None:
    vocab = 64   # tiny_lm's
    rng = np.random.default_rng(1)
    for year in range(2014, 2021):
        frequencies.write_period(tmp_path / "freq" / f"{year}.parquet", year,
                                 rng.integers(0, 5, vocab))
    static = {"static_periods": POOL} if variant.endswith("-static") else {}
    model = make_future_lm(tiny_lm(), variant, 2, settings=settings(variant),
                           reference_periods=POOL, **static).eval()
    if variant == "recency":
        with torch.no_grad():
            model.bias.scale.fill_(0.9)
    save_future_lm(model, tmp_path / "m")
    record = json.loads((tmp_path / "m" / "config.json").read_text())["bias"]
    assert record["reference_periods"] == list(POOL)
    loaded = load_future_lm(tmp_path / "m")
    assert loaded.reference_periods == POOL and loaded.bias_config == model.bias_config
    x = ids()
    scores = []
    for m in (model, loaded):
        h = load_histories(["2020"], 2, m.history_kinds, tmp_path / "freq", None,
                           static_periods=m.static_periods,
                           reference_periods=m.reference_periods)["2020"]
        scores.append(m(x, history=h).logits)
    assert torch.equal(scores[0], scores[1])
    if variant == "recency":   # the bias is there: the logits are not the base LM's
        assert not torch.allclose(scores[1], model.lm(input_ids=x).logits)
    # other models' records are as before: no key
    save_future_lm(make_future_lm(tiny_lm(), "frequency", 2, settings=settings("frequency")),
                   tmp_path / "plain")
    assert "reference_periods" not in json.loads(
        (tmp_path / "plain" / "config.json").read_text())["bias"]


def test_the_forecast_reads_the_model_s_reference_periods(freq_dir) -> None:
    """The forecast's histories (of the forecast period and the one before) carry the level."""
    folder, counts = freq_dir
    model = make_future_lm(tiny_lm(), "recency", 2, reference_periods=POOL)
    for period in ("2020", "2019"):
        h = period_history(model, period, folder, None, f"forecast {period}")
        assert h.reference_periods == POOL and torch.equal(h.reference, pooled(counts, POOL))


# --- word-bias ----------------------------------------------------------------------------------

def test_word_bias_has_one_parameter_per_output_row_and_starts_as_the_base() -> None:
    model = make_future_lm(tiny_lm(extra_vocab=3), "word-bias", 2).eval()
    assert type(model.bias) is WordBias and model.history_kinds == set()
    assert [(n, tuple(p.shape)) for n, p in model.bias.named_parameters()] == [("b", (67,))]
    x = ids()
    assert torch.equal(model(x).logits, model.lm(input_ids=x).logits)   # b = 0: the base LM
    with torch.no_grad():
        model.bias.b.copy_(torch.linspace(-1, 1, 67))
    torch.testing.assert_close(model(x).logits, model.lm(input_ids=x).logits
                               + torch.linspace(-1, 1, 67))


def test_word_bias_trains_on_a_frozen_lm_s_cached_states(setup, tmp_path: Path) -> None:  # noqa: F811
    _, lm, data, _, identity, _ = setup
    build_cache(lm, {p: data[p] for p in TRAIN}, tmp_path / "train", identity, batch_size=3)
    build_cache(lm, {DEV: data[DEV]}, tmp_path / "dev", identity, batch_size=3)
    train, dev = load_cache(tmp_path / "train", identity), load_cache(tmp_path / "dev", identity)
    model = make_future_lm(copy.deepcopy(lm), "word-bias", 2, context_length=24)
    before = evaluate_cached(model, dev, {}, 3).ppl   # b = 0: the frozen LM's perplexity
    config = TrainConfig(epochs=2, batch_size=4, lr_new=5e-2, warmup_steps=0, freeze_lm=True,
                         patience=0, eval_batch_size=3, seed=0)
    lm_before = {k: v.clone() for k, v in model.lm.state_dict().items()}
    state = train_cached(model, train, dev, {}, config)
    assert state.step > 0 and model.bias.b.abs().sum() > 0
    assert state.best_ppl < before   # a unigram recalibration of a random LM helps on dev
    for name, value in model.lm.state_dict().items():
        assert torch.equal(value, lm_before[name]), name


# --- the stage graph ----------------------------------------------------------------------------

def test_relative_variants_stages_read_the_training_periods_frequency_files() -> None:
    params = deep_merge(PARAMS, {
        "split": {"train_first": 2010, "train_last": 2012, "dev": 2013, "test": 2014},
        "features": {"window": 2}, "score": {"periods": []},
        "forecast": {"period": 2015, "backtest_periods": [2014]},
        "experiment": {"variants": ["baseline", "frequency", "recency", "frequency-drift",
                                    "frequency-drift-static", "word-bias"], "seeds": [0]}})
    stages = stages_of(params)
    train, pooled_years = years(2008, 2012), years(2010, 2012)
    score = years(2011, 2013)      # the histories of dev 2013 and test 2014
    forecast = years(2011, 2014)   # 2015 and 2014, each also against the year before
    none = {"embeddings": []}
    for variant in ("recency", "frequency-drift", "frequency-drift-static"):
        assert feature_deps(stages[f"train-{variant}@s0"]) == {
            **none, "frequencies": sorted({*train, *pooled_years})}
        assert feature_deps(stages[f"score-{variant}@s0"]) == {
            **none, "frequencies": sorted({*score, *pooled_years})}, variant
        assert feature_deps(stages[f"forecast-{variant}@s0"]) == {
            **none, "frequencies": sorted({*forecast, *pooled_years})}
    # a variant that reads no reference: only the scored periods' own histories (not 2010)
    assert feature_deps(stages["score-frequency@s0"]) == {**none, "frequencies": score}
    # word-bias reads no feature at all
    assert feature_deps(stages["score-word-bias@s0"]) == {**none, "frequencies": []}
    assert feature_deps(stages["train-word-bias@s0"]) == {**none, "frequencies": []}
    # the drift's control reads its variant's settings; every reference period has its stage
    assert "${variants.frequency-drift.lstm_hidden}" in \
        stages["train-frequency-drift-static@s0"]["cmd"]
    assert set(pooled_years) <= set(stages["frequencies"]["foreach"])
