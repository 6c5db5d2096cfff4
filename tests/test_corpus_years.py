"""pipeline.corpus.years: the one read of a year's abstracts from the corpus table."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.corpus.years import YEAR_PARAMS, missing_feature_fix, read_year, year_abstracts
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet, write_parquet

COLUMNS = ["key", "year", "abstract"]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "abstracts.parquet"
    write_parquet(pd.DataFrame({"key": [f"k{i}" for i in range(6)],
                                "year": [2019, 2020, 2019, 2021, 2020, 2020],
                                "title": list("abcdef"),
                                "abstract": [f"Abstract {i}." for i in range(6)]}), path)
    return path


def test_a_year_is_the_pandas_filter_of_the_whole_table(corpus):
    """The same frame (rows, order, dtypes, index) the score stage built from the whole table."""
    table = read_parquet(corpus, columns=COLUMNS)
    for year in (2019, 2020, 2021):
        expected = table[table["year"] == year].reset_index(drop=True)
        pd.testing.assert_frame_equal(read_year(corpus, year, COLUMNS), expected)
        assert year_abstracts(corpus, year) == expected["abstract"].tolist()
    assert year_abstracts(corpus, 2020) == ["Abstract 1.", "Abstract 4.", "Abstract 5."]
    assert list(read_year(corpus, 2020, ["abstract"]).columns) == ["abstract"]


def test_a_missing_year_names_the_real_params(corpus):
    with pytest.raises(UserError) as err:
        year_abstracts(corpus, 2018)
    assert err.value.what == "the corpus has no abstracts for 2018"
    assert err.value.path == str(corpus)
    for key in ("split.dev_year", "features.window", "score.years", "forecast.backtest_years"):
        assert key in err.value.fix
    assert "`years`" not in err.value.fix
    with pytest.raises(UserError, match="cannot score 2018: the corpus has no abstracts for 2018"):
        read_year(corpus, 2018, purpose="score 2018")


def test_missing_feature_fix_names_the_stages_and_params():
    fix = missing_feature_fix("frequencies@2017", "embeddings@2017")
    assert fix.startswith("run `dvc repro frequencies@2017 embeddings@2017`")
    assert YEAR_PARAMS in fix and "make graph" in fix
