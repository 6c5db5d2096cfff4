"""pipeline.corpus.splits: periods of each kind, history coverage, rejects, empty and thin
periods."""

import pandas as pd
import pytest

from pipeline.corpus.splits import (
    SPLIT_COLUMNS,
    SplitError,
    SplitPeriods,
    check_periods,
    coarser,
    document_periods,
    make_splits,
    period_counts,
    period_rejects,
)
from pipeline.infra.errors import UserError


def corpus(years: dict[int, int]) -> pd.DataFrame:
    """A small abstracts table with ``n`` rows per year, interleaved as in a real export."""
    rows = []
    for i in range(max(years.values())):
        for year, n in years.items():
            if i < n:
                rows.append({"key": f"p-{year}-{i}", "entry_type": "inproceedings",
                             "year": year, "date": f"{year}-{i % 12 + 1:02d}",
                             "title": f"Title {year} {i}",
                             "abstract": f"Abstract {i} of {year}.", "venue": "V"})
    frame = pd.DataFrame(rows)
    frame["year"] = frame["year"].astype("int32")
    return frame


PAPER_YEARS = SplitPeriods.from_params("year", 2017, 2019, 2020, 2021, window=2)


def split(abstracts: pd.DataFrame, periods: SplitPeriods = PAPER_YEARS, **kw):
    labels = document_periods(abstracts, periods.kind)
    check_periods(labels, periods, **kw)
    return make_splits(abstracts, labels, periods)


def test_history_periods_cover_train_first_minus_window_to_test_minus_one():
    assert PAPER_YEARS.history_periods == ["2015", "2016", "2017", "2018", "2019", "2020"]
    halves = SplitPeriods.from_params("half", "2018H1", "2020H1", "2020H2", "2021H1", window=2)
    assert halves.history_periods == ["2017H1", "2017H2", "2018H1", "2018H2", "2019H1", "2019H2",
                                      "2020H1", "2020H2"]
    assert halves.split_of("2017H2") == "history" and halves.split_of("2021H2") == "unused"


def test_splits_by_year_in_corpus_order():
    abstracts = corpus({y: 3 for y in range(2014, 2023)})
    splits = split(abstracts)
    assert sorted(splits["train"]["period"].unique()) == ["2017", "2018", "2019"]
    assert set(splits["dev"]["period"]) == {"2020"} and set(splits["test"]["period"]) == {"2021"}
    assert all(list(frame.columns) == SPLIT_COLUMNS for frame in splits.values())
    expected = abstracts[abstracts["year"].between(2017, 2019)]["key"].tolist()
    assert splits["train"]["key"].tolist() == expected  # interleaved order is kept
    assert len(splits["train"]) == 9 and len(splits["dev"]) == 3 and len(splits["test"]) == 3


def test_a_table_without_dates_splits_by_year_as_before():
    abstracts = corpus({y: 3 for y in range(2015, 2022)}).drop(columns="date")
    assert split(abstracts)["dev"]["key"].tolist() == ["p-2020-0", "p-2020-1", "p-2020-2"]
    with pytest.raises(SplitError, match="no `date` column"):
        document_periods(abstracts, "half")


@pytest.mark.parametrize("kind, first, last, dev, test, n_train", [
    ("year", "2018", "2019", "2020", "2021", 24),
    ("half", "2019H1", "2019H2", "2020H1", "2020H2", 12),
    ("quarter", "2019Q3", "2020Q1", "2020Q2", "2020Q3", 9),
    ("month", "2019-11", "2020-02", "2020-03", "2020-04", 4),
])
def test_each_period_kind_through_the_split(tmp_path, kind, first, last, dev, test, n_train):
    """Real Parquet in, the stage's own functions: one document per month 2016-2021."""
    rows = [{"key": f"{y}-{m:02d}", "date": f"{y}-{m:02d}-15", "title": "t",
             "abstract": f"text {y} {m}"} for y in range(2016, 2022) for m in range(1, 13)]
    path = tmp_path / "abstracts.parquet"
    pd.DataFrame(rows).to_parquet(path)
    abstracts = pd.read_parquet(path)
    periods = SplitPeriods.from_params(kind, first, last, dev, test, window=2)
    splits = split(abstracts, periods)
    assert len(splits["train"]) == n_train
    assert set(splits["dev"]["period"]) == {dev} and set(splits["test"]["period"]) == {test}
    assert splits["train"]["period"].iloc[0] == first
    assert splits["train"]["period"].iloc[-1] == last


def test_dates_coarser_than_the_kind_are_rejected_with_a_reason():
    abstracts = pd.DataFrame({"key": ["a", "b", "c", "d"], "date": ["2020", "2020-03", None,
                                                                    "2020-11-02"]})
    labels = document_periods(abstracts, "quarter")
    assert labels.tolist() == [None, "2020Q1", None, "2020Q4"]
    rejects = period_rejects(abstracts, labels, "quarter")
    assert list(rejects.columns) == ["key", "date", "reason"]
    assert rejects["key"].tolist() == ["a", "c"] and rejects["date"].iloc[0] == "2020"
    assert rejects["date"].isna().tolist() == [False, True]
    assert rejects["reason"].tolist() == ["date coarser than split.period: quarter", "no date"]
    assert period_rejects(abstracts, document_periods(abstracts, "year"), "year")["key"].tolist() \
        == ["c"]


def test_an_empty_period_stops_naming_it_and_a_coarser_kind():
    rows = [{"key": f"{y}-{m}", "date": f"{y}-{m:02d}", "title": "t", "abstract": "x"}
            for y in (2018, 2019, 2020) for m in range(1, 13)
            if (y, m) not in ((2020, 1), (2020, 2), (2020, 3))]
    abstracts = pd.DataFrame(rows)
    quarters = SplitPeriods.from_params("quarter", "2019Q3", "2019Q4", "2020Q2", "2020Q3", 1)
    with pytest.raises(SplitError) as err:
        split(abstracts, quarters)
    assert "1 quarter the run reads has no documents: 2020Q1 (history)" in err.value.what
    assert "split.period: half" in err.value.fix
    assert isinstance(err.value, UserError)
    # the same corpus at half-years works: 2020H1 holds April-June
    halves = SplitPeriods.from_params("half", "2019H1", "2019H1", "2019H2", "2020H1", 1)
    assert len(split(abstracts, halves)["test"]) == 3


def test_needed_periods_beyond_the_split_are_checked_too():
    abstracts = corpus({y: 2 for y in range(2015, 2022)})
    with pytest.raises(SplitError, match=r"1 year the run reads has no documents: 2022"):
        split(abstracts, needs=["2022"])
    with pytest.raises(UserError, match="expected a year label"):
        split(abstracts, needs=["2022H1"])


def test_a_thin_period_warns_naming_it_and_its_count():
    abstracts = corpus({2015: 1, **{y: 5 for y in range(2016, 2022)}})
    labels = document_periods(abstracts, "year")
    assert check_periods(labels, PAPER_YEARS, min_documents=5) == [
        "1 year the run reads has fewer than split.min_documents = 5 documents, so its "
        "frequencies and scores are noisy: 2015 (1)"]
    assert check_periods(labels, PAPER_YEARS, min_documents=1) == []


def test_missing_history_year_is_an_error_naming_it():
    abstracts = corpus({y: 2 for y in (2015, 2017, 2018, 2019, 2020, 2021)})
    with pytest.raises(SplitError, match=r"has no documents: 2016 \(history\)"):
        split(abstracts)
    assert "use a larger corpus" in pytest.raises(SplitError, split, abstracts).value.fix


@pytest.mark.parametrize("missing, role", [(2018, "train"), (2020, "dev"), (2021, "test")])
def test_missing_split_year_is_an_error_naming_it(missing, role):
    abstracts = corpus({y: 2 for y in range(2015, 2022) if y != missing})
    with pytest.raises(SplitError, match=rf"has no documents: {missing} \({role}\)"):
        split(abstracts)


def test_a_longer_window_needs_earlier_years():
    abstracts = corpus({y: 2 for y in range(2015, 2022)})
    split(abstracts)  # window 2: 2015 is the earliest year needed
    with pytest.raises(SplitError, match="2014"):
        split(abstracts, SplitPeriods.from_params("year", 2017, 2019, 2020, 2021, window=3))


@pytest.mark.parametrize("periods", [
    dict(kind="year", train_first=2019, train_last=2017, dev=2020, test=2021, window=2),
    dict(kind="year", train_first=2017, train_last=2020, dev=2020, test=2021, window=2),
    dict(kind="year", train_first=2017, train_last=2019, dev=2021, test=2021, window=2),
    dict(kind="year", train_first=2017, train_last=2019, dev=2020, test=2021, window=0),
    dict(kind="half", train_first="2019H1", train_last="2019H2", dev="2020H1", test="2020H1",
         window=1),
])
def test_inconsistent_periods_are_rejected(periods):
    with pytest.raises(SplitError, match="params.yaml|features.window"):
        SplitPeriods.from_params(**periods)


@pytest.mark.parametrize("periods, broken", [
    ((2019, 2017, 2020, 2021), "split.train_first 2019 is after split.train_last 2017"),
    ((2017, 2020, 2020, 2021), "split.train_last 2020 is not before split.dev 2020"),
    ((2017, 2019, 2021, 2021), "split.dev 2021 is not before split.test 2021"),
])
def test_the_period_order_is_one_rule_naming_the_broken_pair(periods, broken):
    # the one statement of the order, for the split stage and `make graph` (pipeline/graph/plan)
    with pytest.raises(SplitError) as err:
        SplitPeriods.from_params("year", *periods, window=2)
    assert "split periods must satisfy train_first <= train_last < dev < test" in err.value.what
    assert broken in err.value.what and err.value.path == "params.yaml: split"


@pytest.mark.parametrize("kind, key, value, example", [
    ("half", "split.dev", "2020Q3", "2020H2"),
    ("quarter", "split.train_first", 2019, "2020Q3"),
    ("month", "split.test", "2020-13", "2020-07"),
    ("year", "split.train_last", "2020H1", "2020"),
])
def test_a_label_of_the_wrong_kind_names_the_key_and_an_example(kind, key, value, example):
    good = {"year": ("2017", "2018", "2019", "2020"), "half": ("2018H1", "2018H2", "2019H1",
                                                               "2019H2"),
            "quarter": ("2019Q1", "2019Q2", "2019Q3", "2019Q4"),
            "month": ("2019-01", "2019-02", "2019-03", "2019-04")}[kind]
    args = dict(zip(("train_first", "train_last", "dev", "test"), good))
    args[key.split(".")[1]] = value
    with pytest.raises(UserError) as err:
        SplitPeriods.from_params(kind, window=1, **args)
    assert err.value.path == f"params.yaml: {key}" and example in err.value.fix


def test_an_unknown_kind_names_split_period():
    with pytest.raises(UserError, match="unknown period kind 'week'"):
        SplitPeriods.from_params("week", 2017, 2018, 2019, 2020, 1)
    assert [coarser(k) for k in ("month", "quarter", "half", "year")] == ["quarter", "half",
                                                                         "year", None]


def test_period_counts_label_each_period_in_time_order():
    abstracts = corpus({2014: 1, 2015: 2, 2016: 3, 2017: 4, 2018: 5, 2019: 6, 2020: 7, 2021: 8,
                        2022: 9})
    counts = period_counts(document_periods(abstracts, "year"), PAPER_YEARS)
    assert counts.to_dict("list") == {
        "period": [str(y) for y in range(2014, 2023)],
        "abstracts": list(range(1, 10)),
        "split": ["unused", "history", "history", "train", "train", "train", "dev", "test",
                  "unused"],
    }
    # 2022 scored for staleness (the graph passes it in --needs): read, not unused
    read = period_counts(document_periods(abstracts, "year"), PAPER_YEARS, needs=["2022"])
    assert read["split"].tolist()[-2:] == ["test", "read"]
    months = pd.DataFrame({"date": ["2020-10", "2020-09", "2021-01", "2020-10"]})
    month_split = SplitPeriods.from_params("month", "2020-09", "2020-09", "2020-10", "2021-01", 1)
    counts = period_counts(document_periods(months, "month"), month_split)
    assert counts["period"].tolist() == ["2020-09", "2020-10", "2021-01"]  # time, not text
    assert counts["period"].tolist() == sorted(counts["period"])  # which is also text order
