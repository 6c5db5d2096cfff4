"""Predicted vocabulary (batched = naive loop, sums to 1), count forecasters (persistence, linear
extrapolation, history-adjusted persistence, mean reversion and the forecast report's fitted
settings), whole words, ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from pipeline.infra.errors import UserError
from pipeline.infra.io import write_parquet
from pipeline.forecast.fits import best_fit, fit_forecasters
from pipeline.forecast.forecasters.base import PeriodCounts
from pipeline.forecast.forecasters.linear_extrapolation import linear_extrapolation
from pipeline.forecast.forecasters.registry import lookup
from pipeline.forecast.stationary import ALPHA_GRID, smoothed
from pipeline.forecast.baselines import (LAMBDA_GRID, fit_targets,
                                         history_adjusted_persistence, mean_reversion_change,
                                         mean_reverting)
from pipeline.stats.ranks import spearman_test
from pipeline.forecast.vocabulary import (predicted_distribution, predicted_distributions,
                                          rank_terms, reference_texts, vocabulary_forecast,
                                          whole_word_mask)
from pipeline.features.frequencies import log_frequencies, write_period
from pipeline.models.future_lm import make_future_lm, scratch_gpt2
from pipeline.features.history import load_history
from tests.variant_settings import sized

VOCAB = 30
PERSISTENCE, POOLED, MEAN_REVERSION, LINEAR = (
    lookup(n).report_name
    for n in ("persistence", "pooled-past", "mean-reversion", "linear-extrapolation"))


def persistence(last_counts: np.ndarray) -> np.ndarray:
    """The report's persistence forecast with its unfitted (add-one) setting, as probabilities."""
    f = lookup("persistence")
    return np.exp(f.forecast(PeriodCounts.of_token_counts(["2020"], [last_counts]), 1,
                             f.unfitted()))


@pytest.fixture()
def frequencies(tmp_path):
    rng = np.random.default_rng(0)
    for year in range(2016, 2021):
        write_period(tmp_path / f"{year}.parquet", str(year), rng.integers(0, 50, VOCAB))
    return tmp_path


@pytest.fixture()
def model():
    torch.manual_seed(0)
    lm = scratch_gpt2(VOCAB, 0, n_layer=1, n_head=2, n_embd=16, n_positions=32, dropout=0.0)
    m = make_future_lm(lm, "frequency", window=2, settings=sized("frequency", 4))
    with torch.no_grad():                    # a visible bias, whatever the module's init
        for p in m.bias.parameters():
            p.normal_(0, 1.0)
    return m.eval()


def contexts() -> list[list[int]]:
    rng = np.random.default_rng(1)
    return [[0, *rng.integers(1, VOCAB, n).tolist(), 0] for n in (3, 9, 5, 1)]


def test_one_pass_under_two_histories_equals_two_passes(model, frequencies):
    """p̂_Y and p̂'_{Y-1} from one run of the LM (the forecast's pair) are the separate passes'
    numbers: the two biases are added to the same plain logits the hook would see."""
    now, before = (load_history(p, 2, frequencies, None) for p in ("2020", "2019"))
    pair = predicted_distributions(model, contexts(), [now, before], batch_size=3)
    for history, joint in zip((now, before), pair):
        np.testing.assert_array_equal(joint, predicted_distribution(model, contexts(), history,
                                                                    batch_size=3))
    assert not np.allclose(pair[0], pair[1])   # the two periods' biases differ


def test_predicted_distribution_is_the_naive_per_position_mean(model, frequencies):
    history = load_history("2020", 2, frequencies, None)
    batched = predicted_distribution(model, contexts(), history, batch_size=3)
    assert batched.shape == (VOCAB,) and batched.dtype == np.float64
    assert batched.sum() == pytest.approx(1.0, abs=1e-12)
    total, n = np.zeros(VOCAB), 0
    with torch.no_grad():
        for ids in contexts():
            for t in range(len(ids) - 1):                 # position t predicts token t+1
                prefix = torch.tensor([ids[:t + 1]])
                logits = model(prefix, torch.ones_like(prefix), history).logits[0, -1]
                total += torch.softmax(logits.double(), -1).numpy()
                n += 1
    np.testing.assert_allclose(batched, total / n, rtol=1e-5, atol=1e-7)
    # dropout off even for a model in training mode, whose mode is left as it was
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.5
    model.train()
    np.testing.assert_allclose(predicted_distribution(model, contexts(), history, batch_size=3),
                               batched, rtol=1e-12)
    assert model.training
    model.eval()
    # batch size changes nothing beyond rounding
    np.testing.assert_allclose(predicted_distribution(model, contexts(), history, batch_size=1),
                               batched, rtol=1e-5, atol=1e-8)


def test_the_bias_period_changes_the_forecast_and_baseline_does_not_move(model, frequencies):
    frame = vocabulary_forecast(model, contexts(), "2020", frequencies, None, batch_size=2)
    assert list(frame.columns) == ["token_id", "log_prob", "log_prob_prev"]
    assert np.exp(frame["log_prob"]).sum() == pytest.approx(1.0)
    assert np.abs(frame["log_prob"] - frame["log_prob_prev"]).max() > 1e-3
    torch.manual_seed(0)
    base = make_future_lm(scratch_gpt2(VOCAB, 0, n_layer=1, n_head=2, n_embd=16, n_positions=32,
                                       dropout=0.0), "baseline", window=2).eval()
    still = vocabulary_forecast(base, contexts(), "2020", frequencies, None)
    assert (still["log_prob"] == still["log_prob_prev"]).all()


def test_a_time_free_control_predicts_no_change_and_ranks_no_trend(frequencies):
    """``frequency-static``: its pooled history is the same for Y and Y−1, so Δ̂ = 0 exactly (one
    pass) and the trend backtest has no ranking (NaN), as for Baseline; its bias still moves
    p̂ away from the plain LM's."""
    torch.manual_seed(0)
    lm = scratch_gpt2(VOCAB, 0, n_layer=1, n_head=2, n_embd=16, n_positions=32, dropout=0.0)
    static = make_future_lm(lm, "frequency-static", window=2, settings=sized("frequency", 4),
                            static_periods=["2016", "2017"])
    with torch.no_grad():
        for p in static.bias.parameters():
            p.normal_(0, 1.0)
    static.eval()
    frame = vocabulary_forecast(static, contexts(), "2020", frequencies, None, batch_size=2)
    assert (frame["log_prob"] == frame["log_prob_prev"]).all()
    base = make_future_lm(lm, "baseline", window=2).eval()
    still = vocabulary_forecast(base, contexts(), "2020", frequencies, None)
    assert np.abs(frame["log_prob"] - still["log_prob"]).max() > 1e-3
    delta = (frame["log_prob"] - frame["log_prob_prev"]).to_numpy()
    assert np.isnan(spearman_test(delta[:10], np.arange(10.0))[2])      # no ranking: untested


def test_missing_history_names_the_forecast_period(model, frequencies):
    with pytest.raises(UserError, match="reads the per-period features"):
        vocabulary_forecast(model, contexts(), "2020", None, None)
    with pytest.raises(UserError, match="cannot forecast 2031"):
        vocabulary_forecast(model, contexts(), "2031", frequencies, None)
    # the reference level needs the history of Y-1 = 2017 (years 2015-2016): 2015 is missing
    with pytest.raises(UserError, match="predicted change of 2018 against 2017"):
        vocabulary_forecast(model, contexts(), "2018", frequencies, None)


def test_forecast_across_a_quarter_boundary(model, tmp_path):
    """Forecasting 2021Q1: its bias reads 2020Q3, 2020Q4; the predicted change compares it with
    2020Q4's bias (history 2020Q2, 2020Q3); the reference contexts are 2020Q4's abstracts."""
    rng = np.random.default_rng(0)
    for label in ("2020Q2", "2020Q3", "2020Q4"):
        write_period(tmp_path / f"{label}.parquet", label, rng.integers(0, 50, VOCAB))
    frame = vocabulary_forecast(model, contexts(), "2021Q1", tmp_path, None)
    assert np.abs(frame["log_prob"] - frame["log_prob_prev"]).max() > 1e-3
    with pytest.raises(UserError, match=r"predicted change of 2020Q4 against 2020Q3.*2020Q1"):
        vocabulary_forecast(model, contexts(), "2020Q4", tmp_path, None)
    corpus = tmp_path / "abstracts.parquet"
    write_parquet(pd.DataFrame({"key": ["k0", "k1", "k2"], "date": ["2020-12-31", "2021-01", "2020-10"],
                                "abstract": ["a", "b", "c"]}), corpus)
    assert reference_texts(corpus, "2021Q1") == ["a", "c"]
    assert reference_texts(corpus, "2021Q2") == ["b"]


def test_reference_texts_are_the_previous_period(tmp_path):
    corpus = tmp_path / "abstracts.parquet"
    write_parquet(pd.DataFrame({"key": ["k0", "k1", "k2"], "date": ["2020", "2021-03", "2021"],
                                "abstract": ["a", "b", "c"]}), corpus)
    assert reference_texts(corpus, "2022") == ["b", "c"]
    assert reference_texts(corpus, "2021H2") == ["b"]        # a bare year has no half-year
    with pytest.raises(UserError, match="cannot forecast 2024 .*abstracts of 2023") as err:
        reference_texts(corpus, "2024")
    assert "forecast.period" in err.value.fix


def test_persistence_is_add_one_smoothed_last_year():
    p = persistence(np.array([3, 0, 1]))
    np.testing.assert_allclose(p, [4 / 7, 1 / 7, 2 / 7])
    # the frequency features' own estimate, not a second formula
    np.testing.assert_array_equal(p, np.exp(log_frequencies(np.array([3, 0, 1]))))


def test_linear_extrapolation_on_hand_made_log_frequencies():
    log_freq = np.log(np.array([[0.1, 0.2],      # doubles -> 0.4
                                [0.4, 0.2],      # halves  -> 0.1
                                [0.5, 0.6]]))
    p = linear_extrapolation(log_freq, ["2019", "2020"], "2021")
    raw = np.array([0.4, 0.1, 0.6 * 0.6 / 0.5])
    np.testing.assert_allclose(p, raw / raw.sum())
    # three years: least squares, not the last step
    lf = np.array([[0.0, 1.0, 1.0]])
    three = linear_extrapolation(np.vstack([lf, [[0.0, 0.0, 0.0]]]), ["2018", "2019", "2020"], "2021")
    # fit 2/3 + 0.5 (x - 2019) -> at 2021: 5/3; the other token stays 0
    np.testing.assert_allclose(three, np.exp([5 / 3, 0]) / np.exp([5 / 3, 0]).sum())
    # one history year is persistence
    np.testing.assert_allclose(linear_extrapolation(log_freq[:, :1], ["2020"], "2021"),
                               np.exp(log_freq[:, 0]) / np.exp(log_freq[:, 0]).sum())
    # periods are consecutive across a year boundary: 2020Q4 -> 2021Q1 -> 2021Q2 is one step each
    np.testing.assert_allclose(linear_extrapolation(log_freq, ["2020Q4", "2021Q1"], "2021Q2"), p)
    np.testing.assert_allclose(linear_extrapolation(log_freq, ["2019-12", "2020-01"], "2020-02"), p)


def test_history_adjusted_persistence_by_hand():
    """counts [3, 1, 0] -> persistence [4, 2, 1] / 7; Δ̂ = [0, log 2, log 1/2] multiplies it to
    [4, 4, 1/2] / 7, renormalised: [8, 8, 1] / 17."""
    counts = np.array([3, 1, 0])
    delta = np.log([1.0, 2.0, 0.5])
    np.testing.assert_allclose(np.exp(history_adjusted_persistence(counts, delta)),
                               [8 / 17, 8 / 17, 1 / 17])
    # no predicted change (Baseline) is persistence itself; a constant shift changes nothing
    np.testing.assert_allclose(np.exp(history_adjusted_persistence(counts, np.zeros(3))),
                               persistence(counts))
    np.testing.assert_allclose(history_adjusted_persistence(counts, delta + 5.0),
                               history_adjusted_persistence(counts, delta))
    with pytest.raises(ValueError, match="does not match"):
        history_adjusted_persistence(counts, np.zeros(4))


def test_mean_reverting_by_hand():
    """ℓ_{Y−2} = log [1/2, 1/4, 1/4], ℓ_{Y−1} = log [1/4, 1/4, 1/2]. λ = 1/2:
    log p̂ = ℓ_{Y−1} + (ℓ̄ − ℓ_{Y−1}) / 2 = (3/4) ℓ_{Y−1} + (1/4) ℓ_{Y−2}, i.e.
    p̂ ∝ [2^-1.75, 2^-2, 2^-1.25]; λ = 1: the geometric mean [2^-1.5, 2^-2, 2^-1.5]."""
    lf = np.log(np.array([[0.5, 0.25], [0.25, 0.25], [0.25, 0.5]]))
    half = 2.0 ** np.array([-1.75, -2.0, -1.25])
    np.testing.assert_allclose(np.exp(mean_reverting(lf, 0.5)), half / half.sum())
    full = 2.0 ** np.array([-1.5, -2.0, -1.5])
    np.testing.assert_allclose(np.exp(mean_reverting(lf, 1.0)), full / full.sum())
    # λ = 0 is persistence of Y−1, with no predicted change at all (no ranking)
    np.testing.assert_allclose(np.exp(mean_reverting(lf, 0.0)), [0.25, 0.25, 0.5])
    assert (mean_reversion_change(lf, 0.0) == 0).all()
    # its predicted change undoes λ/2 of the last step: the reverse of linear extrapolation
    np.testing.assert_allclose(mean_reversion_change(lf, 0.5),
                               [0.25 * np.log(2), 0.0, -0.25 * np.log(2)], atol=1e-15)
    # one history period: the mean is the last period, so it is persistence
    np.testing.assert_allclose(np.exp(mean_reverting(lf[:, 1:], 0.7)), [0.25, 0.25, 0.5])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mean_reverting(lf, 1.5)


class _Recording(dict):
    """A dict of counts that records which periods were read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def test_stationary_fit_reads_training_periods_only_and_picks_the_best_fit():
    """2017 counts [1, 7] and 2018 [7, 1]; 2019's [200, 100] is best forecast by their blend
    (mean reversion, λ > 0), not by 2018 alone; 2020 (a dev period) must never be read."""
    counts = _Recording({"2017": np.array([1, 7]), "2018": np.array([7, 1]),
                         "2019": np.array([200, 100]), "2020": np.array([500, 500])})
    fits = fit_forecasters(counts, ["2017", "2018", "2019"], window=2)
    assert counts.read == {"2017", "2018", "2019"}                # never the dev period
    assert all(f.targets == ("2019",) for f in fits.values())
    mr, pers = fits[MEAN_REVERSION], fits[PERSISTENCE]
    assert mr.setting["lam"] > 0 and mr.train_ppl < pers.train_ppl
    assert mr.setting["alpha"] in ALPHA_GRID
    window = PeriodCounts.of_token_counts(["2017", "2018"], [counts["2017"], counts["2018"]])
    want = np.exp(-(counts["2019"] @ mr.log_p(window)) / 300)
    assert mr.train_ppl == pytest.approx(want)
    assert best_fit(fits) in (MEAN_REVERSION, POOLED) and best_fit(fits) != PERSISTENCE
    assert LAMBDA_GRID[0] == 0.0 and LAMBDA_GRID[-1] == 1.0 and len(LAMBDA_GRID) == 21
    # linear extrapolation has nothing to choose; it is fitted (scored) all the same
    assert fits[LINEAR].setting == {} and list(fits) == [PERSISTENCE, POOLED, MEAN_REVERSION,
                                                         LINEAR]
    # nothing to fit on: add-one smoothing, no mean reversion, the pooled past is the reference
    none = fit_forecasters(counts, ["2017", "2018"], 2)
    assert set(none) == {PERSISTENCE, POOLED, LINEAR} and best_fit(none) == POOLED
    assert none[POOLED].setting == {"alpha": 1.0}
    assert "α = 1; not fitted" in none[PERSISTENCE].describe()
    assert smoothed(np.array([1, 3]), 1.0) == pytest.approx(np.log([2 / 6, 4 / 6]))


def test_lambda_fit_targets_need_their_whole_window_in_training():
    assert fit_targets(["2017", "2018", "2019"], 2) == ["2019"]
    assert fit_targets(["2019", "2017", "2018"], 1) == ["2018", "2019"]
    assert fit_targets(["2020H1", "2020H2", "2021H1"], 2) == ["2021H1"]
    assert fit_targets(["2017", "2018"], 2) == []


def test_rank_terms_orders_and_filters():
    delta = np.array([0.5, -0.2, 2.0, 0.0, -3.0, 0.5, 1.0])
    eligible = np.array([True, True, True, True, True, True, False])
    rising, falling = rank_terms(delta, eligible, k=3)
    assert rising.tolist() == [2, 0, 5]          # ties by id; id 6 not eligible
    assert falling.tolist() == [4, 1]            # zero change is no trend


def word_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<|endoftext|>": 0, "Ġneural": 1, "Ġtransl": 2, "ation": 3, ",": 4, "ĠBERT": 5,
             "Ġmodels": 6, "Ġthe": 7, ".": 8, "Ġpre-trained": 9, "Ġunused": 10, "Ġ2021": 11}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>")


def test_whole_words():
    tok = word_tokenizer()
    content = np.ones(12, dtype=bool)
    content[0] = False
    # " transl" is always continued by "ation"; " BERT" ends at "," or EOS; " neural" is followed
    # by " models" (a new word); " pre-trained" once before "."; " unused" never occurs.
    reference = [[0, 1, 6, 2, 3, 5, 4, 9, 8, 0], [0, 5, 2, 3, 11, 0]]
    mask = whole_word_mask(tok, content, reference)
    assert {i for i in range(12) if mask[i]} == {1, 5, 6, 9, 11}
    # a token continued in most occurrences is not a whole word
    mostly = whole_word_mask(tok, content, [[0, 1, 3, 1, 3, 1, 6, 0]])
    assert not mostly[1] and mostly[6]
