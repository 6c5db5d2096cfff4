"""params.yaml and every profile state values of the one schema (pipeline.infra.schema.params)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.graph import profiles
from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import (SECTIONS, VARIANT_SECTION, default, section_keys,
                                          unknown_keys)
from pipeline.infra.schema.params import FilterConfig

REPO = Path(__file__).resolve().parents[1]
PARAM_FILES = [REPO / "params.yaml", *sorted((REPO / "profiles").glob("*.yaml"))]


@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: p.name)
def test_every_key_of_a_params_file_is_in_the_schema(path: Path) -> None:
    assert unknown_keys(_params(path)) == []


def _params(path: Path) -> dict:
    """A params file's values; a profile's with those of the profile it extends."""
    if path.parent.name == "profiles":
        return profiles.overlay(path.stem, REPO)
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: p.name)
def test_every_variant_setting_of_a_params_file_is_its_variant_s(path: Path) -> None:
    """``variants.<name>.<key>``: each name a variant with settings, each key one of its
    settings, each value one its train stage takes (parsed as the graph passes it)."""
    from pipeline.graph.plan import check_variant_settings
    from pipeline.models.registry import lookup
    from stages import train
    from stages._lib.options import build

    params = _params(path)
    check_variant_settings(params)   # raises a UserError naming a bad section or key
    for name, values in (params.get(VARIANT_SECTION) or {}).items():
        argv = ["--variant", name, "--train", "t", "--dev", "d", "--tokenizer", "k",
                "--out", "o", "--curves", "c"]
        for key, value in (values or {}).items():
            argv += ["--" + key.replace("_", "-"), str(value)]
        settings = lookup(name).settings
        built = build(settings, train.build_parser(name).parse_args(argv))
        assert isinstance(built, settings)


def test_params_yaml_states_every_param_of_the_schema() -> None:
    from pipeline.models.registry import all_variants
    from pipeline.variants._spec import setting_fields

    VARIANTS = all_variants()

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    assert set(params) == {*SECTIONS, VARIANT_SECTION}
    for section in SECTIONS:
        assert set(params[section]) == section_keys(section), section
    # ... and every setting of every variant it trains that has settings (another variant's
    # section may be left out: its settings then take their defaults); a time-free control has
    # no section (it reads its variant's), so params.yaml must not give it one
    trained = {n: VARIANTS[n].settings for n in params["experiment"]["variants"]
               if n in VARIANTS and VARIANTS[n].settings is not None and not VARIANTS[n].static}
    assert not any(VARIANTS[n].static for n in params[VARIANT_SECTION] if n in VARIANTS)
    assert trained and set(trained) <= set(params[VARIANT_SECTION])
    for name, settings in trained.items():
        assert set(params[VARIANT_SECTION][name]) == {f.name for f in setting_fields(settings)}, name


def test_the_variants_section_is_left_to_the_variants_settings() -> None:
    """unknown_keys skips ``variants``; the stage graph checks it against each settings class."""
    from pipeline.graph.plan import check_variant_settings

    bad = {"variants": {"context2": {"alpha": 0.5, "rnak": 3}}}
    assert unknown_keys(bad) == []
    with pytest.raises(UserError, match="has no setting rnak"):
        check_variant_settings(bad)
    # the settings that moved into `variants` are gone from their old sections
    old = {"features": {"context_input": "paper"},
           "train": {"lstm_hidden": 8, "alpha": 0.5, "temperature_rank": 4,
                     "temperature_alpha": 1.0, "temperature_beta": 0.5,
                     "temperature_norm": "softmax", "temperature_loss_scale": "mean",
                     "time_dim": 8, "time_attention": "paper"}}
    assert unknown_keys(old) == ["features.context_input", "train.lstm_hidden", "train.alpha",
                                 "train.temperature_rank", "train.temperature_alpha",
                                 "train.temperature_beta", "train.temperature_norm",
                                 "train.temperature_loss_scale", "train.time_dim",
                                 "train.time_attention"]


def test_a_typo_is_found() -> None:
    params = {"train": {"epochs": 2, "learning_rate": 1e-3}, "filtr": {"seed": 0},
              "features": {"variant": "context"}}
    assert unknown_keys(params) == ["train.learning_rate", "filtr", "features.variant"]


def test_option_names_are_param_keys() -> None:
    """The graph passes ``--<key-with-dashes> ${section.key}``; n_generate is GenerationSettings.n."""
    assert "n_generate" in section_keys("score") and "n_generate" in section_keys("forecast")
    assert "top_k" not in section_keys("forecast")


def test_stage_options_default_to_the_schema() -> None:
    from stages.filter import build_parser
    args = build_parser().parse_args(["--papers", "p", "--kept", "k", "--dropped", "d",
                                      "--metrics", "m", "--counts", "c"])
    assert (args.language, args.seed, args.min_words) == (
        default(FilterConfig, "language"), default(FilterConfig, "seed"),
        default(FilterConfig, "min_words"))


def test_the_period_keys_of_issue_17() -> None:
    """Periods are labels; the old year keys are gone, so a stale params.yaml is an error."""
    from pipeline.infra.schema.config import ScoreConfig
    from pipeline.infra.schema.params import ForecastConfig, SplitConfig

    assert section_keys("split") == {"period", "train_first", "train_last", "dev", "test",
                                     "min_documents"}
    assert {"periods"} <= section_keys("score") and "years" not in section_keys("score")
    assert {"period", "backtest_periods"} <= section_keys("forecast")
    assert default(SplitConfig, "period") == "year"
    assert default(SplitConfig, "min_documents") == 50
    assert default(ForecastConfig, "period") == 2022   # the default run's; null: derive it
    assert default(ScoreConfig, "periods") == (2020, 2021)
    old = {"split": {"dev_year": 2020, "test_year": 2021}, "score": {"years": [2020]},
           "forecast": {"year": 2022, "backtest_years": [2021]}}
    assert unknown_keys(old) == ["split.dev_year", "split.test_year", "score.years",
                                 "forecast.year", "forecast.backtest_years"]


def test_the_split_stage_takes_the_schema_options() -> None:
    from stages.split import build_parser
    args = build_parser().parse_args([
        "--abstracts", "a", "--out-dir", "o", "--train-first", "2018H1", "--train-last",
        "2020H1", "--dev", "2020H2", "--test", "2021H1", "--window", "2", "--rejects", "r",
        "--counts-plot", "c", "--period", "half"])
    assert (args.period, args.train_first, args.dev, args.test, args.min_documents) == (
        "half", "2018H1", "2020H2", "2021H1", 50)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--period", "week"])
