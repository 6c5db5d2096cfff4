"""pipeline.corpus.by_period: the one read of a period's documents from the corpus table."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.corpus.by_period import (
    PERIOD_PARAMS,
    missing_feature_fix,
    period_abstracts,
    read_period,
)
from pipeline.corpus.periods import assign_periods
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet, write_parquet

COLUMNS = ["key", "date", "abstract"]
DATES = ["2019-03-02", "2020-07", "2019-11", "2021", "2020-01-15", "2020-12-31", "2020"]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "abstracts.parquet"
    write_parquet(pd.DataFrame({"key": [f"k{i}" for i in range(len(DATES))],
                                "date": DATES,
                                "title": [f"t{i}" for i in range(len(DATES))],
                                "abstract": [f"Abstract {i}." for i in range(len(DATES))]}), path)
    return path


@pytest.mark.parametrize("kind", ["year", "half", "quarter", "month"])
def test_a_period_is_the_pandas_filter_of_the_whole_table(corpus, kind):
    """The Arrow filter keeps exactly the rows assign_periods puts in the period, in order."""
    table = read_parquet(corpus, columns=COLUMNS)
    periods = assign_periods(table["date"], kind)
    for label in periods.dropna().unique():
        expected = table[(periods == label).fillna(False).astype(bool)].reset_index(drop=True)
        pd.testing.assert_frame_equal(read_period(corpus, label, COLUMNS), expected)
        assert period_abstracts(corpus, label) == expected["abstract"].tolist()


def test_rows_and_columns_of_each_kind(corpus):
    assert period_abstracts(corpus, "2020") == ["Abstract 1.", "Abstract 4.", "Abstract 5.",
                                                "Abstract 6."]
    # a bare year (2020, row 6) belongs to no half-year, quarter or month
    assert period_abstracts(corpus, "2020H2") == ["Abstract 1.", "Abstract 5."]
    assert period_abstracts(corpus, "2020Q1") == ["Abstract 4."]
    assert period_abstracts(corpus, "2019-11") == ["Abstract 2."]
    assert list(read_period(corpus, "2020", ["abstract"]).columns) == ["abstract"]
    frame = read_period(corpus, "2020H2", ["key", "period"])
    assert frame.to_dict("list") == {"key": ["k1", "k5"], "period": ["2020H2", "2020H2"]}


def test_a_table_without_dates_serves_years_only(tmp_path):
    path = tmp_path / "old.parquet"
    write_parquet(pd.DataFrame({"key": ["a", "b"], "year": [2019, 2020],
                                "abstract": ["x", "y"]}), path)
    assert period_abstracts(path, "2020") == ["y"]
    with pytest.raises(UserError, match="no `date` column"):
        period_abstracts(path, "2020H1")


def test_an_empty_period_names_the_real_params(corpus):
    with pytest.raises(UserError) as err:
        period_abstracts(corpus, "2020Q2")
    assert err.value.what == "the corpus has no documents in 2020Q2"
    assert err.value.path == str(corpus)
    for key in ("split.period", "split.dev", "features.window", "score.periods",
                "forecast.backtest_periods"):
        assert key in err.value.fix
    with pytest.raises(UserError, match="cannot score 2018: the corpus has no documents in 2018"):
        read_period(corpus, "2018", purpose="score 2018")


def test_what_is_no_label_fails_before_reading(tmp_path):
    with pytest.raises(ValueError, match="not a period label"):
        read_period(tmp_path / "absent.parquet", "2020h2")


def test_missing_feature_fix_names_the_stages_and_params():
    fix = missing_feature_fix("frequencies@2017H1", "embeddings@2017H1")
    assert fix.startswith("run `dvc repro frequencies@2017H1 embeddings@2017H1`")
    assert PERIOD_PARAMS in fix and "make graph" in fix
