"""Forecasters of pipeline.forecast.forecasters on small synthetic count matrices."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.forecast.forecasters.base import FIT, PeriodCounts
from pipeline.forecast.forecasters.registry import all_forecasters, lookup, stationary
from pipeline.infra.errors import UserError

V = 40


def _counts(matrix: np.ndarray) -> PeriodCounts:
    matrix = np.asarray(matrix, dtype=np.int64)
    n = matrix.shape[0]
    return PeriodCounts(tuple(str(2000 + i) for i in range(n)), matrix,
                        np.minimum(matrix, 50), np.full(n, 50, dtype=np.int64))


def _random(n: int = 8, seed: int = 0) -> PeriodCounts:
    rng = np.random.default_rng(seed)
    return _counts(rng.poisson(rng.gamma(0.5, 20.0, size=V), size=(n, V)))


def _constant(n: int = 8) -> PeriodCounts:
    return _counts(np.tile(np.arange(V) * 5 + 3, (n, 1)))


def test_registry_finds_every_module_in_order() -> None:
    names = [f.name for f in all_forecasters()]
    assert names[0] == "persistence" and len(set(names)) == len(names)
    assert lookup("persistence").kind == "stationary"
    assert all(f.kind == "stationary" for f in stationary())
    with pytest.raises(UserError, match="no forecaster named"):
        lookup("oracle")


def test_each_backtest_takes_its_forecasters_from_the_registry() -> None:
    """The forecast report's count forecasters under the names its claims carry; the skill
    report's; a forecaster names the backtests it stays out of, never the other way round."""
    report = all_forecasters("forecast")
    assert [f.report_name for f in report] == ["Persistence", "Pooled past", "Mean reversion",
                                               "Linear extrapolation"]
    assert [f.name for f in all_forecasters("forecast-skill")] == [
        "persistence", "pooled-past", "same-parity", "mean-reversion", "damped-trend",
        "linear-trend", "learned"]
    assert [f.name for f in stationary("forecast")] == ["persistence", "pooled-past",
                                                        "mean-reversion"]
    with pytest.raises(ValueError, match="no backtest"):
        all_forecasters("forecast.md")


def test_the_predicted_change_is_the_forecast_against_persistence() -> None:
    past = _random()
    assert lookup("persistence").change(past, 1, {"alpha": 0.5}) is None     # no change
    setting = {"window": 2, "lam": 0.5, "alpha": 0.5}
    change = lookup("mean-reversion").change(past, 1, setting)
    persistence = lookup("persistence").forecast(past, 1, {"alpha": 0.5})
    np.testing.assert_allclose(change, lookup("mean-reversion").forecast(past, 1, setting)
                               - persistence)
    # a setting without a window pools the whole past (the forecast report hands the window)
    np.testing.assert_array_equal(lookup("pooled-past").forecast(past.until(3), 1, {"alpha": 1.0}),
                                  lookup("pooled-past").forecast(past.until(3), 1,
                                                                 {"window": 3, "alpha": 1.0}))


@pytest.mark.parametrize("forecaster", all_forecasters(), ids=lambda f: f.name)
@pytest.mark.parametrize("horizon", [1, 2])
def test_every_setting_gives_normalised_finite_log_probs(forecaster, horizon: int) -> None:
    past = _random()
    for setting in forecaster.grid():
        log_p = forecaster.forecast(past, horizon, setting)
        assert log_p.dtype == np.float64 and log_p.shape == (V,)
        assert np.isfinite(log_p).all()
        assert np.exp(log_p).sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("forecaster", all_forecasters(), ids=lambda f: f.name)
def test_too_short_a_past_is_a_user_error(forecaster) -> None:
    past = _random().until(max(forecaster.min_periods - 1, 1))
    if past.n_periods >= forecaster.min_periods:
        with pytest.raises(UserError, match="horizon"):
            forecaster.forecast(past, 0, forecaster.grid()[0])
    else:
        with pytest.raises(UserError, match="past periods"):
            forecaster.forecast(past, 1, forecaster.grid()[0])


@pytest.mark.parametrize("forecaster", stationary(), ids=lambda f: f.name)
def test_stationary_forecasters_reproduce_a_constant_corpus(forecaster) -> None:
    past = _constant()
    expected = np.log(past.counts[-1] / past.counts[-1].sum())
    for setting in forecaster.grid():
        smoothed = forecaster.forecast(past, 1, setting)
        # Smoothing moves mass toward uniform; it never reorders the words.
        assert (np.diff(smoothed) > 0).all()
    small = min(forecaster.grid(), key=lambda s: s.get("alpha", 1.0))
    np.testing.assert_allclose(forecaster.forecast(past, 1, small), expected, atol=0.01)


def test_until_slices_off_the_future() -> None:
    data = _random(10)
    past = data.until(6)
    assert past.periods == data.periods[:6] and past.counts.shape == (6, V)
    with pytest.raises(ValueError):
        data.until(0)
    with pytest.raises(ValueError):
        PeriodCounts(("a",), np.zeros((2, 3), np.int64), np.zeros((2, 3), np.int64),
                     np.zeros(2, np.int64))


def test_pooled_past_sums_the_last_k_periods() -> None:
    past = _random(5)
    log_p = lookup("pooled-past").forecast(past, 1, {"window": 3, "alpha": 0.5})
    pooled = past.counts[-3:].sum(axis=0) + 0.5
    np.testing.assert_allclose(log_p, np.log(pooled / pooled.sum()))
    everything = lookup("pooled-past").forecast(past, 1, {"window": 8, "alpha": 0.5})
    pooled = past.counts.sum(axis=0) + 0.5
    np.testing.assert_allclose(everything, np.log(pooled / pooled.sum()))


def test_same_parity_reads_the_targets_parity() -> None:
    from pipeline.forecast.forecasters.same_parity import same_parity_rows
    # 6 past rows 0..5; target 6 (h = 1) pools 4, 2, 0; target 7 (h = 2) pools 5, 3, 1.
    assert same_parity_rows(6, 1, 4) == [4, 2, 0]
    assert same_parity_rows(6, 2, 2) == [5, 3]
    assert same_parity_rows(6, 3, 1) == [4]
    alternating = _counts([[10, 1], [1, 10]] * 3)      # rows 0..5: even rows favour word 0
    log_p = lookup("same-parity").forecast(alternating, 1, {"window": 2, "alpha": 1.0})
    assert log_p[0] > log_p[1]                           # target 6 is even


def test_full_mean_reversion_is_the_windows_geometric_mean() -> None:
    past = _random(5)
    log_p = lookup("mean-reversion").forecast(past, 1, {"window": 2, "lam": 1.0, "alpha": 1.0})
    smoothed = np.log(past.counts[-2:] + 1.0) - np.log(past.counts[-2:].sum(1, keepdims=True) + V)
    mean = smoothed.mean(axis=0)
    np.testing.assert_allclose(log_p, mean - np.log(np.exp(mean).sum()))


def _planted_trend(n: int = 10, seed: int = 1) -> tuple[PeriodCounts, np.ndarray]:
    """Counts whose log frequencies drift linearly, and the true log-probs of each period,
    including the two after the last. Words come in pairs of one base frequency, one rising and
    one falling, so the drift does not cancel in the normalisation."""
    rng = np.random.default_rng(seed)
    base, slope = np.repeat(rng.normal(0.0, 1.0, V // 2), 2), np.tile([0.15, -0.15], V // 2)
    true = np.stack([base + slope * t for t in range(n + 2)])
    true -= np.log(np.exp(true).sum(axis=1, keepdims=True))
    counts = np.stack([rng.multinomial(200_000, np.exp(p)) for p in true[:n]])
    return _counts(counts), true


def _cross_entropy(true: np.ndarray, log_p: np.ndarray) -> float:
    return float(-(np.exp(true) * log_p).sum())


def _skill_check(forecaster, past: PeriodCounts, true: np.ndarray, horizon: int) -> float:
    """Cross-entropy of the target under the setting that did best one origin earlier (as the
    engine chooses), so no setting is tuned on the period it is scored on."""
    earlier, n = past.until(past.n_periods - 1), past.n_periods
    setting = min(forecaster.grid(), key=lambda s: _cross_entropy(
        true[n - 2 + horizon], forecaster.forecast(earlier, horizon, s)))
    return _cross_entropy(true[n - 1 + horizon], forecaster.forecast(past, horizon, setting))


@pytest.mark.parametrize("forecaster", [f for f in all_forecasters() if f.kind != "stationary"],
                         ids=lambda f: f.name)
@pytest.mark.parametrize("horizon", [1, 2])
def test_moving_forecasters_beat_persistence_on_a_planted_trend(forecaster, horizon: int) -> None:
    past, true = _planted_trend()
    persistence = _skill_check(lookup("persistence"), past, true, horizon)
    assert _skill_check(forecaster, past, true, horizon) < persistence
    target = true[past.n_periods - 1 + horizon]   # the engine's fallback setting too
    assert _cross_entropy(target, forecaster.forecast(past, horizon, forecaster.grid()[0])) \
        < persistence


def test_least_squares_slope_recovers_a_line() -> None:
    from pipeline.forecast.forecasters.linear_trend import least_squares_slope
    series = np.outer(np.arange(5.0), [0.5, -2.0]) + [1.0, 3.0]
    np.testing.assert_allclose(least_squares_slope(series), [0.5, -2.0])


def test_learned_pairs_read_only_the_past(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.forecast.forecasters import learned
    monkeypatch.setattr(learned, "MAX_EXAMPLES", 10**9)
    data = _random(10)
    garbage = _counts(np.concatenate([data.counts[:7], np.full((3, V), 10**6)]))
    for horizon in (1, 2):
        x, target = learned.training_pairs(data.until(7), horizon, 1.0)
        x_g, target_g = learned.training_pairs(garbage.until(7), horizon, 1.0)
        np.testing.assert_array_equal(x, x_g)
        np.testing.assert_array_equal(target, target_g)
        # Every target is a change inside the past: origins 1 .. n−1−h, each word once per
        # origin (drawn with replacement, so compared as sets).
        y = np.log(data.counts[:7] + 1.0) - np.log(data.counts[:7].sum(1, keepdims=True) + V)
        inside = {round(v, 9) for r in range(1, 7 - horizon) for v in y[r + horizon] - y[r]}
        assert {round(v, 9) for v in target} <= inside


def test_learned_forecast_is_deterministic_and_ignores_the_future() -> None:
    learned = lookup("learned")
    data = _random(10)
    garbage = _counts(np.concatenate([data.counts[:7], np.full((3, V), 10**6)]))
    first = learned.forecast(data.until(7), 2, learned.grid()[0])
    learned._fits.clear()                 # refit rather than reuse
    np.testing.assert_array_equal(first, learned.forecast(garbage.until(7), 2, learned.grid()[0]))


def test_learned_keeps_the_fits_of_earlier_pasts(monkeypatch) -> None:
    """A backtest's trend claims ask again for origins already forecast: their fits are reused,
    each past and horizon fitted once."""
    learned = lookup("learned")
    learned._fits.clear()
    fitted: list[tuple[int, int]] = []
    fit = learned._fit
    monkeypatch.setattr(learned, "_fit", lambda past, horizon, alpha, seed: (
        fitted.append((past.n_periods, horizon)) or fit(past, horizon, alpha, seed)))
    data = _random(10)
    setting = learned.grid()[0]
    first = [learned.forecast(data.until(n), h, setting) for n in (6, 7) for h in (1, 2)]
    again = [learned.forecast(data.until(n), h, setting) for n in (6, 7) for h in (1, 2)]
    assert fitted == [(6, 1), (6, 2), (7, 1), (7, 2)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_learned_fits_are_three_seeds_each_repeatable() -> None:
    """The engine asks for each fit through the setting (``fit`` 0-2): each its own sample and
    regressor seed, so the fits differ, and each is the same forecast when fitted again."""
    learned = lookup("learned")
    past = _random(10).until(7)
    settings = learned.fit_settings(learned.grid()[0])
    assert [s[FIT] for s in settings] == [0, 1, 2] and learned.fits == 3
    fits = [learned.forecast(past, 1, s) for s in settings]
    assert not np.array_equal(fits[0], fits[1]) and not np.array_equal(fits[1], fits[2])
    learned._fits.clear()                 # refit rather than reuse
    np.testing.assert_array_equal(fits[2], learned.forecast(past, 1, settings[2]))
    one = lookup("persistence")
    assert one.fits == 1 and one.fit_settings({"alpha": 1.0}) == [{"alpha": 1.0}]

@pytest.mark.slow
def test_learned_fits_a_full_sized_vocabulary() -> None:
    """A past of the export's size (30,000 words, 15 periods) fits and forecasts; how long a fit
    takes is recorded in the skill report's timing.json, not tested here."""
    rng = np.random.default_rng(0)
    rate = rng.gamma(0.3, 30.0, 30_000)
    counts = rng.poisson(rate, (15, 30_000)).astype(np.int64)
    past = PeriodCounts(tuple(str(y) for y in range(2009, 2024)), counts,
                        np.minimum(counts, rng.poisson(rate / 2, counts.shape)),
                        np.full(15, 3000, dtype=np.int64))
    learned = lookup("learned")
    learned._fits.clear()
    log_p = learned.forecast(past, 1, learned.grid()[0])
    assert np.isfinite(log_p).all() and abs(np.logaddexp.reduce(log_p)) < 1e-9
