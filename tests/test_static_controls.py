"""Time-free controls (``<variant>-static``, the registry derives them): the pooled history from real
feature files is the same for every period and is the training periods' pooled features; a
control is its variant's module with its parameter count and records its pooling periods; the
registry pairs controls and variants; the stage graph gives a control the training periods'
features and a temporal variant's score stage the history before each scored period's."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from pipeline.features import embeddings, frequencies
from pipeline.features.history import load_history
from pipeline.models.future_lm import load_future_lm, load_histories, make_future_lm, save_future_lm
from pipeline.models.registry import all_variants, control_for, control_of, display_name, lookup
from tests.dvc_project import deep_merge
from tests.test_future_lm import settings, tiny_lm
from tests.test_graph import PARAMS, feature_deps, stages_of, years

V, D = 12, 4
POOL = ("2016", "2017", "2018")
# every variant that reads a history (the registry derives each one's control)
CONTROLLED = [name for name, v in all_variants().items() if v.temporal]


@pytest.fixture
def feature_dirs(tmp_path):
    rng = np.random.default_rng(0)
    counts, embs = {}, {}
    for year in range(2014, 2021):
        counts[year] = rng.integers(0, 4, V)
        frequencies.write_period(tmp_path / "freq" / f"{year}.parquet", year, counts[year])
        ids = np.sort(rng.choice(V - 1, 7, replace=False))   # the last word: never embedded
        embs[year] = (ids, rng.integers(1, 5, 7), rng.normal(size=(7, D)))
        embeddings.write_period(tmp_path / "emb" / f"{year}.safetensors", year, *embs[year],
                                encoder="test", layer=-1, vocab_size=V)
    return tmp_path / "freq", tmp_path / "emb", counts


def test_static_history_is_the_same_for_every_period_and_the_pooled_training_features(
        feature_dirs) -> None:
    freq_dir, emb_dir, counts = feature_dirs
    kinds = {"frequencies", "embeddings"}
    h19 = load_history(2019, 3, freq_dir, emb_dir, kinds, static_periods=POOL)
    h20 = load_history("2020", 3, freq_dir, emb_dir, kinds, static_periods=list(POOL))
    assert h19.periods == ("2016", "2017", "2018") and h20.periods == ("2017", "2018", "2019")
    assert h19.pooled == POOL and h19.window == 3 and h19.vocab_size == V
    for name in ("log_freq", "emb", "emb_seen", "observed"):
        assert torch.equal(getattr(h19, name), getattr(h20, name)), name
    # every window position holds the pooled value
    assert h19.log_freq.shape == (V, 3) and h19.emb.shape == (V, 3, D)
    summed = sum(counts[int(y)] for y in POOL)
    expected = torch.as_tensor(frequencies.log_frequencies(summed), dtype=torch.float32)
    for j in range(3):
        assert torch.equal(h19.log_freq[:, j], expected)
    # the count-weighted mean of the per-period vectors (as stored: fp16), seen in any period
    files = [embeddings.read_period(emb_dir / f"{y}.safetensors") for y in POOL]
    sums, weights = np.zeros((V, D)), np.zeros(V)
    for f in files:
        ids, c = f.token_ids.numpy(), f.counts.numpy()
        sums[ids] += f.vectors.double().numpy() * c[:, None]
        weights[ids] += c
    seen = weights > 0
    assert not seen.all()   # the fixture leaves a word unseen: zeros, not seen
    mean = np.zeros((V, D))
    mean[seen] = sums[seen] / weights[seen, None]
    for j in range(3):
        np.testing.assert_allclose(h19.emb[:, j].numpy(), mean, rtol=1e-6, atol=1e-7)
        assert h19.emb_seen[:, j].tolist() == seen.tolist()
    assert h19.observed.tolist() == ((summed > 0) | seen).tolist()
    # a windowed history is unchanged and does differ between periods
    w19, w20 = (load_history(p, 3, freq_dir, emb_dir, kinds) for p in (2019, 2020))
    assert w19.pooled == () and not torch.equal(w19.log_freq, w20.log_freq)


def test_load_histories_of_a_control_reads_one_pooled_history_for_all_periods(feature_dirs) -> None:
    freq_dir, _, _ = feature_dirs
    hs = load_histories(["2020", "2019"], 2, {"frequencies"}, freq_dir, None, static_periods=POOL)
    assert list(hs) == ["2019", "2020"]
    assert hs["2020"].period == "2020" and hs["2020"].periods == ("2018", "2019")
    assert hs["2019"].log_freq is hs["2020"].log_freq and hs["2019"].pooled == POOL


def test_a_missing_pooling_period_names_it(feature_dirs) -> None:
    freq_dir, _, _ = feature_dirs
    from pipeline.infra.errors import UserError
    with pytest.raises(UserError, match="frequencies of 2013 are missing"):
        load_history(2019, 2, freq_dir, None, static_periods=["2013", "2014"])


def test_registry_pairs_each_control_with_its_variant() -> None:
    assert sorted(control_for(v) for v in CONTROLLED) == sorted(f"{v}-static" for v in CONTROLLED)
    assert CONTROLLED == ["frequency-nolstm", "forecast", "frequency", "recency",
                          "frequency-drift", "context", "context2", "temporal-temperature",
                          "temporal-attention"]
    controls = {n for n, v in all_variants().items() if v.static}
    assert controls == {f"{v}-static" for v in CONTROLLED}
    for variant in CONTROLLED:
        control = lookup(f"{variant}-static")
        assert control_of(control.name) == variant and control_for(control.name) is None
        assert control_of(variant) is None
        assert control.spec.module == lookup(variant).spec.module
        assert control.settings is lookup(variant).settings
        assert control.feature_files == lookup(variant).feature_files
        assert lookup(variant).temporal and not control.temporal
        assert control.cacheable == lookup(variant).cacheable
        assert display_name(control.name) == display_name(variant) + "-static"
    # every variant that reads a history has a control; no other one does
    assert {n for n, v in all_variants().items() if v.reads and not v.static} == set(CONTROLLED)
    for name in ("baseline", "baseline-2", "temperature", "continuous-vmf", "nonexistent"):
        assert control_for(name) is None and control_of(name) is None


def control_and_variant(variant: str):
    window = 2
    kw = {"feature_dim": 6}
    if lookup(variant).relative:   # reads its window against the training periods' level
        kw["reference_periods"] = POOL
    own = settings(variant)
    plain = make_future_lm(tiny_lm(), variant, window, settings=own, **kw)
    static = make_future_lm(tiny_lm(), f"{variant}-static", window, settings=own,
                            static_periods=["2018", "2016", "2017"], **kw)
    return plain, static


@pytest.mark.parametrize("variant", CONTROLLED)
def test_a_control_is_its_variant_s_module_with_its_parameter_count(variant: str) -> None:
    plain, static = control_and_variant(variant)
    assert type(static.bias) is type(plain.bias)
    count = lambda m: sum(p.numel() for p in m.bias.parameters())   # noqa: E731
    assert count(static) == count(plain) > 0
    assert [n for n, _ in static.named_parameters()] == [n for n, _ in plain.named_parameters()]
    assert static.static_periods == POOL and plain.static_periods is None
    assert static.history_kinds == plain.history_kinds


def test_a_control_needs_its_pooling_periods_and_saves_them(tmp_path) -> None:
    with pytest.raises(ValueError, match="time-free control"):
        make_future_lm(tiny_lm(), "frequency-static", 2, settings=settings("frequency"))
    with pytest.raises(ValueError, match="pools no history"):
        make_future_lm(tiny_lm(), "frequency", 2, static_periods=POOL)
    plain, static = control_and_variant("frequency")
    save_future_lm(static, tmp_path / "static")
    save_future_lm(plain, tmp_path / "plain")
    bias = json.loads((tmp_path / "static" / "config.json").read_text())["bias"]
    assert bias["static_periods"] == list(POOL) and bias["kind"] == "frequency-static"
    # other models' records are as before: no key
    assert "static_periods" not in json.loads((tmp_path / "plain" / "config.json").read_text())["bias"]
    loaded = load_future_lm(tmp_path / "static")
    assert loaded.static_periods == POOL and loaded.variant == "frequency-static"


# --- the stage graph ----------------------------------------------------------------------------

def test_a_control_s_stages_read_the_training_periods_features() -> None:
    params = deep_merge(PARAMS, {
        "split": {"train_first": 2010, "train_last": 2012, "dev": 2013, "test": 2014},
        "features": {"window": 2}, "score": {"periods": []},
        "forecast": {"period": 2015, "backtest_periods": [2014]},
        "experiment": {"variants": ["baseline", "frequency", "frequency-static", "context-static"],
                       "seeds": [0]},
        "variants": {"frequency-static": {"lstm_hidden": 7}}})
    stages = stages_of(params)
    train, pooled = years(2008, 2012), years(2010, 2012)
    score = years(2011, 2013)   # the histories of dev 2013 and test 2014
    forecast = years(2011, 2014)   # 2015 and 2014, each also against the year before
    freq = {"embeddings": []}
    assert feature_deps(stages["train-frequency-static@s0"]) == {
        **freq, "frequencies": sorted({*train, *pooled})}
    # the control's score stage reads its pooling periods too; its variant's only the scored
    # periods' own histories (not 2010, the history of the period before dev 2013)
    assert feature_deps(stages["score-frequency-static@s0"]) == {
        **freq, "frequencies": sorted({*score, *pooled})}
    assert feature_deps(stages["score-frequency@s0"]) == {**freq, "frequencies": score}
    assert feature_deps(stages["forecast-frequency-static@s0"]) == {
        **freq, "frequencies": sorted({*forecast, *pooled})}
    assert feature_deps(stages["forecast-frequency@s0"]) == {**freq, "frequencies": forecast}
    both = sorted({*score, *pooled})
    assert feature_deps(stages["score-context-static@s0"]) == {"frequencies": both,
                                                               "embeddings": both}
    assert feature_deps(stages["score-baseline@s0"]) == {"frequencies": [], "embeddings": []}
    # the control reads its variant's settings section (one source: they cannot differ)
    cmd = stages["train-frequency-static@s0"]["cmd"]
    assert "--variant frequency-static" in cmd and "${variants.frequency.lstm_hidden}" in cmd
    assert "variants.frequency.lstm_hidden" in stages["train-frequency-static@s0"]["params"]
    assert "--context-input ${variants.context.context_input}" in \
        stages["train-context-static@s0"]["cmd"]
    # every feature period some stage reads has its feature stage
    assert set(pooled) <= set(stages["embeddings"]["foreach"])
