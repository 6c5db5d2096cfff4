"""The ``forecast`` variant (``B_iw = a · \\hat{log f}_{i,w} + b``), its ``forecasts`` history
feature and the ``forecast_features@<period>`` stages: the module on a tiny history, the feature
made from earlier periods only (no leak) on an expanding window (a longer history extrapolates a
planted trend better), the history loader and the time-free control, the graph (stages only when a
variant reads forecasts, each depending on the frequency files it is fitted on; ``fit_periods``
and its check), and an unknown forecaster's error."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from pipeline.corpus.periods import shift
from pipeline.features import frequencies
from pipeline.features.history import PeriodHistory, load_history
from pipeline.forecast.forecasters import registry as forecasters
from pipeline.graph.build import build
from pipeline.infra.errors import UserError
from pipeline.infra.io import parquet_metadata
from pipeline.models.future_lm import build_module
from pipeline.models.registry import lookup
from pipeline.variants._spec import BiasConfig
from pipeline.variants.forecast import ForecastSettings
from stages import forecast_features
from tests.dvc_project import expand_runs

REPO = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())
V = 12


def write_frequencies(folder: Path, counts: dict[str, np.ndarray]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for period, c in counts.items():
        frequencies.write_period(folder / f"{period}.parquet", period, c, tokenizer_id="tok")
    return folder


def random_counts(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 50, size=V).astype(np.int64)


def run_stage(freq: Path, period: str, out: Path, *extra: str, fit: int = 3) -> None:
    """The stage fitting ``period``'s forecast on the ``fit`` periods before it."""
    forecast_features.main(["--period", period, "--frequencies", str(freq),
                            "--fit-from", shift(period, -fit), "--out", str(out), *extra])


# --- the module ---------------------------------------------------------------------------------
def test_module_adds_a_times_the_forecast_plus_b() -> None:
    bias = build_module(BiasConfig(kind="forecast", window=2, settings=ForecastSettings()))
    forecast = torch.linspace(-8.0, -1.0, V)
    history = PeriodHistory(period="2020", periods=("2018", "2019"),
                            log_freq=torch.zeros(V, 2), forecast=forecast)
    with torch.no_grad():
        bias.a.fill_(2.0)
        bias.b.fill_(0.5)
    hidden = torch.zeros(1, 3, 4)
    out = bias(history, torch.zeros(V, 4), hidden)
    assert torch.allclose(out, 2.0 * forecast + 0.5)
    out.sum().backward()   # both parameters train
    assert bias.a.grad is not None and bias.b.grad is not None
    with pytest.raises(ValueError, match="forecast"):
        bias(PeriodHistory("2020", ("2018", "2019"), torch.zeros(V, 2)), torch.zeros(V, 4), hidden)


def test_the_control_is_derived_and_reads_forecasts() -> None:
    variant, control = lookup("forecast"), lookup("forecast-static")
    assert variant.temporal and variant.reads == {"forecasts"}
    assert control.static and not control.temporal and control.reads == {"forecasts"}
    assert control.module_class() is variant.module_class()
    assert variant.feature_files == ("frequencies", "forecasts")


# --- the feature: earlier periods only ------------------------------------------------------------
def test_the_forecast_of_a_period_never_reads_that_period(tmp_path: Path) -> None:
    counts = {str(y): random_counts(y) for y in range(2015, 2020)}
    freq = write_frequencies(tmp_path / "features" / "frequencies", counts)
    first = tmp_path / "a.parquet"
    run_stage(freq, "2019", first)
    # the period's own text changes (its frequency file with it), or it has none at all yet
    write_frequencies(freq, {"2019": random_counts(99) * 7})
    changed = tmp_path / "b.parquet"
    run_stage(freq, "2019", changed)
    (freq / "2019.parquet").unlink()
    missing = tmp_path / "c.parquet"
    run_stage(freq, "2019", missing)
    assert first.read_bytes() == changed.read_bytes() == missing.read_bytes()
    # an earlier period inside the fitted span does change it
    write_frequencies(freq, {"2017": random_counts(98)})
    earlier = tmp_path / "d.parquet"
    run_stage(freq, "2019", earlier)
    assert earlier.read_bytes() != first.read_bytes()
    # the file reads as a frequency file: the forecaster's normalised log-probabilities
    read = frequencies.read_period(first)
    assert read.period == "2019" and read.vocab_size == V
    assert np.isclose(np.exp(read.log_freq).sum(), 1.0)
    assert read.counts.tolist() == sum(counts[p] for p in ("2016", "2017", "2018")).tolist()


def test_a_longer_history_extrapolates_a_planted_trend(tmp_path: Path) -> None:
    """Token 0 doubles every period (2013-2019), the rest stay flat: fitted on the six periods
    before 2019 the damped trend's setting is chosen on four earlier origins (a slower damping
    than the grid's first, which a two-period fit falls back to) and its forecast of 2019 comes
    closer to the planted share."""
    def planted(t: int) -> np.ndarray:
        counts = np.full(V, 200, dtype=np.int64)
        counts[0] = 20 * 2 ** t
        return counts

    counts = {str(2013 + t): planted(t) for t in range(7)}
    freq = write_frequencies(tmp_path / "frequencies", counts)
    short, long_ = tmp_path / "short.parquet", tmp_path / "long.parquet"
    run_stage(freq, "2019", short, fit=2)
    run_stage(freq, "2019", long_, fit=6)
    meta = {p: parquet_metadata(p) for p in (short, long_)}
    assert meta[long_]["fitted_on"] == "2013,2014,2015,2016,2017,2018"
    assert meta[short]["fitted_on"] == "2017,2018"
    grid_first = json.dumps(dict(forecasters.lookup("damped-trend").grid()[0]), sort_keys=True)
    assert meta[short]["setting"] == grid_first != meta[long_]["setting"]
    assert json.loads(meta[long_]["setting"])["phi"] > json.loads(grid_first)["phi"]
    truth = np.log(counts["2019"][0] / counts["2019"].sum())
    errors = [abs(frequencies.read_period(p).log_freq[0] - truth) for p in (short, long_)]
    assert errors[1] < errors[0]
    # a fit span that does not end before the period is refused
    with pytest.raises(SystemExit):
        forecast_features.main(["--period", "2019", "--frequencies", str(freq), "--fit-from",
                                "2019", "--out", str(tmp_path / "bad.parquet")])


def test_an_unknown_forecaster_is_a_user_error_naming_the_registry(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    freq = write_frequencies(tmp_path / "frequencies",
                             {str(y): random_counts(y) for y in range(2016, 2019)})
    with pytest.raises(SystemExit) as exit_:
        run_stage(freq, "2019", tmp_path / "out.parquet", "--forecaster", "crystal-ball")
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "crystal-ball" in err and "damped-trend" in err and "persistence" in err


def test_history_loads_the_forecast_and_the_control_pools_it(tmp_path: Path) -> None:
    counts = {str(y): random_counts(y) for y in range(2013, 2020)}
    freq = write_frequencies(tmp_path / "features" / "frequencies", counts)
    out = tmp_path / "features" / "forecasts"
    out.mkdir()
    for period in ("2017", "2018", "2019"):
        run_stage(freq, period, out / f"{period}.parquet")
    history = load_history("2019", 2, freq, None, kinds={"forecasts"})
    expected = np.array(frequencies.read_period(out / "2019.parquet").log_freq)
    assert history.forecast is not None
    assert torch.allclose(history.forecast, torch.as_tensor(expected, dtype=torch.float32))
    assert history.periods == ("2017", "2018")
    static = load_history("2019", 2, freq, None, kinds={"forecasts"},
                          static_periods=["2017", "2018"])
    pooled = np.mean([frequencies.read_period(out / f"{p}.parquet").log_freq
                      for p in ("2017", "2018")], axis=0)
    assert static.forecast is not None
    assert torch.allclose(static.forecast, torch.as_tensor(pooled, dtype=torch.float32))
    assert load_history("2019", 2, freq, None).forecast is None


# --- the graph ----------------------------------------------------------------------------------
def stages_with(*variants: str) -> dict:
    params = copy.deepcopy(PARAMS)
    params["experiment"]["variants"] = [*params["experiment"]["variants"], *variants]
    params["experiment"]["seeds"] = [0]
    return expand_runs(build(params, REPO)["stages"])


def test_forecast_stages_appear_only_for_a_variant_reading_forecasts() -> None:
    plain = stages_with()
    assert "forecast_features" not in plain
    assert not any("data/features/forecasts" in dep for stage in plain.values()
                   for dep in stage.get("do", stage).get("deps", []))
    stages = stages_with("forecast", "forecast-static")
    feature = stages["forecast_features"]
    # train 2017-2019 and dev 2020, scored 2020-2021, forecast 2022 (and 2021) with backtests
    assert list(feature["foreach"]) == ["2017", "2018", "2019", "2020", "2021", "2022"]
    # an expanding window over the frequency periods the graph has (2015 on: the first training
    # period's history), padded to the longest span with a span's latest period
    assert feature["foreach"]["2022"] == {f"f{j}": str(2015 + j) for j in range(7)}
    assert feature["foreach"]["2017"] == {"f0": "2015", **{f"f{j}": "2016" for j in range(1, 7)}}
    do = feature["do"]
    assert "--forecaster ${variants.forecast.forecaster}" in do["cmd"]
    assert "--fit-from ${item.f0}" in do["cmd"]
    assert "variants.forecast.forecaster" in do["params"]
    assert [d for d in do["deps"] if d.startswith("data/")] == [
        f"data/features/frequencies/${{item.f{j}}}.parquet" for j in range(7)]
    # it adds no frequency stage
    assert stages["frequencies"]["foreach"] == plain["frequencies"]["foreach"]
    assert "pipeline/forecast" in do["deps"]   # the package that holds every forecaster

    def forecasts(name: str) -> list[str]:
        return [d.split("/")[-1].removesuffix(".parquet") for d in stages[name]["deps"]
                if d.startswith("data/features/forecasts/")]

    assert forecasts("train-forecast@s0") == ["2017", "2018", "2019", "2020"]
    assert forecasts("score-forecast@s0") == ["2020", "2021"]
    assert forecasts("forecast-forecast@s0") == ["2019", "2020", "2021", "2022"]
    for stage in ("train", "score", "forecast"):   # the control: its pooling periods only
        assert forecasts(f"{stage}-forecast-static@s0") == ["2017", "2018", "2019"]
    # every other stage is as it was without the variant, but those reporting every variant
    reporting = ("report", "longtail", "forecast_report")
    assert [n for n, stage in plain.items() if stages[n] != stage] == list(reporting)


def test_fit_periods_keeps_the_latest_and_is_checked() -> None:
    params = copy.deepcopy(PARAMS)
    params["experiment"]["variants"] = [*params["experiment"]["variants"], "forecast"]
    params["experiment"]["seeds"] = [0]
    params["variants"]["forecast"]["fit_periods"] = 3
    items = build(params, REPO)["stages"]["forecast_features"]["foreach"]
    assert items["2022"] == {"f0": "2019", "f1": "2020", "f2": "2021"}
    assert items["2017"] == {"f0": "2015", "f1": "2016", "f2": "2016"}   # all it has
    for bad in (0, -2, "three", True):
        params["variants"]["forecast"]["fit_periods"] = bad
        with pytest.raises(UserError, match="variants.forecast.fit_periods") as err:
            build(params, REPO)
        assert ">= 1" in err.value.what
    with pytest.raises(ValueError, match="fit_periods"):
        ForecastSettings(fit_periods=0)

