"""pipeline.corpus.periods: labels, ordinals, shifts across years, dates to periods."""

import pandas as pd
import pytest

from pipeline.corpus.periods import (
    assign_periods,
    in_time_order,
    kind_of,
    label,
    ordinal,
    param_label,
    period_of,
    shift,
    span,
)
from pipeline.infra.errors import UserError


@pytest.mark.parametrize("text, kind, o", [("2020", "year", 2020), ("2020H2", "half", 4041),
                                           ("2020Q3", "quarter", 8082),
                                           ("2020-07", "month", 24246)])
def test_labels_and_ordinals_round_trip(text, kind, o):
    assert kind_of(text) == kind and ordinal(text) == o and label(o, kind) == text


def test_years_are_their_own_ordinals():
    assert ordinal(2020) == 2020 and label(2020, "year") == "2020" and shift(2020, -2) == "2018"


@pytest.mark.parametrize("start, n, end", [("2020H1", -1, "2019H2"), ("2020Q1", -2, "2019Q3"),
                                           ("2019-12", 1, "2020-01"), ("2020Q4", 1, "2021Q1")])
def test_shift_crosses_year_boundaries(start, n, end):
    assert shift(start, n) == end


def test_span_and_time_order():
    assert span("2019Q3", "2020Q2") == ["2019Q3", "2019Q4", "2020Q1", "2020Q2"]
    assert in_time_order(["2020-10", "2020-09", "2021-01", "2020-10"]) == [
        "2020-09", "2020-10", "2021-01"]


@pytest.mark.parametrize("date, kind, expected", [
    ("2020-07-15", "year", "2020"), ("2020-07-15", "half", "2020H2"),
    ("2020-06", "half", "2020H1"), ("2020-07", "quarter", "2020Q3"),
    ("2020-12-31", "month", "2020-12"), ("2020", "quarter", None), ("2020", "year", "2020"),
    (None, "month", None)])
def test_period_of_a_date(date, kind, expected):
    assert period_of(date, kind) == expected
    assert assign_periods(pd.Series([date]), kind).tolist() == [expected]


def test_param_labels_name_the_key_and_an_example():
    assert param_label(2020, "year", "split.dev") == "2020"
    with pytest.raises(UserError) as err:
        param_label("2020Q3", "half", "split.dev")
    assert err.value.path == "params.yaml: split.dev" and "2020H2" in err.value.fix
    with pytest.raises(UserError, match="not a period label"):
        param_label("2020-13", "month", "forecast.period")
