"""params.yaml and every profile state values of the one schema (pipeline.infra.params)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.infra.params import SECTIONS, default, section_keys, unknown_keys
from pipeline.infra.params import FilterConfig

REPO = Path(__file__).resolve().parents[1]
PARAM_FILES = [REPO / "params.yaml", *sorted((REPO / "profiles").glob("*.yaml"))]


@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: p.name)
def test_every_key_of_a_params_file_is_in_the_schema(path: Path) -> None:
    assert unknown_keys(yaml.safe_load(path.read_text())) == []


def test_params_yaml_states_every_param_of_the_schema() -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    assert set(params) == set(SECTIONS)
    for section in SECTIONS:
        assert set(params[section]) == section_keys(section), section


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
    from pipeline.infra.config import ScoreConfig
    from pipeline.infra.params import ForecastConfig, SplitConfig

    assert section_keys("split") == {"period", "train_first", "train_last", "dev", "test",
                                     "min_documents"}
    assert {"periods"} <= section_keys("score") and "years" not in section_keys("score")
    assert {"period", "backtest_periods"} <= section_keys("forecast")
    assert default(SplitConfig, "period") == "year"
    assert default(SplitConfig, "min_documents") == 50
    assert default(ForecastConfig, "period") is None   # the period after the last known one
    assert default(ScoreConfig, "periods") == ()
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
