"""pipeline.features.windows: history windows over period labels, across year boundaries."""

import pytest

from pipeline.features.windows import bucket_periods, history_periods


@pytest.mark.parametrize("label, window, history", [
    ("2020", 2, ("2018", "2019")),
    (2020, 1, ("2019",)),                      # a YAML int is a year
    ("2020H1", 2, ("2019H1", "2019H2")),
    ("2021H1", 3, ("2019H2", "2020H1", "2020H2")),
    ("2020Q1", 2, ("2019Q3", "2019Q4")),
    ("2020Q2", 3, ("2019Q3", "2019Q4", "2020Q1")),
    ("2020-01", 2, ("2019-11", "2019-12")),
    ("2020-10", 2, ("2020-08", "2020-09")),
])
def test_history_is_the_window_before_the_period_oldest_first(label, window, history):
    assert history_periods(label, window) == history


def test_years_are_the_years_strings_as_before():
    assert history_periods("2021", 2) == tuple(str(y) for y in range(2019, 2021))
    assert bucket_periods("2021", 2) == [str(y) for y in range(2018, 2021)]


@pytest.mark.parametrize("label, buckets", [
    ("2020Q1", ["2019Q2", "2019Q3", "2019Q4"]),
    ("2021H1", ["2019H2", "2020H1", "2020H2"]),
    ("2020-02", ["2019-11", "2019-12", "2020-01"]),
])
def test_bucket_periods_add_the_period_before_the_history(label, buckets):
    assert bucket_periods(label, 2) == buckets
