import pandas as pd
import pytest

from pipeline.corpus.splits import SPLIT_COLUMNS, SplitError, SplitYears, make_splits, year_counts


def corpus(years: dict[int, int]) -> pd.DataFrame:
    """A small abstracts table with ``n`` rows per year, interleaved as in a real export."""
    rows = []
    for i in range(max(years.values())):
        for year, n in years.items():
            if i < n:
                rows.append({"key": f"p-{year}-{i}", "entry_type": "inproceedings",
                             "year": year, "title": f"Title {year} {i}",
                             "abstract": f"Abstract {i} of {year}.", "venue": "V"})
    frame = pd.DataFrame(rows)
    frame["year"] = frame["year"].astype("int32")
    return frame


PAPER_YEARS = SplitYears(train_first=2017, train_last=2019, dev_year=2020, test_year=2021,
                         window=2)


def test_history_years_cover_train_first_minus_window_to_test_year_minus_one():
    assert PAPER_YEARS.history_years == [2015, 2016, 2017, 2018, 2019, 2020]


def test_splits_by_year_in_corpus_order():
    abstracts = corpus({y: 3 for y in range(2014, 2023)})
    splits = make_splits(abstracts, PAPER_YEARS)
    assert sorted(splits["train"]["year"].unique()) == [2017, 2018, 2019]
    assert set(splits["dev"]["year"]) == {2020} and set(splits["test"]["year"]) == {2021}
    assert all(list(frame.columns) == SPLIT_COLUMNS for frame in splits.values())
    expected = abstracts[abstracts["year"].between(2017, 2019)]["key"].tolist()
    assert splits["train"]["key"].tolist() == expected  # interleaved order is kept
    assert len(splits["train"]) == 9 and len(splits["dev"]) == 3 and len(splits["test"]) == 3


def test_missing_history_year_is_an_error_naming_it():
    abstracts = corpus({y: 2 for y in (2015, 2017, 2018, 2019, 2020, 2021)})
    with pytest.raises(SplitError, match=r"year 2016 \(history year\) has no abstracts"):
        make_splits(abstracts, PAPER_YEARS)


@pytest.mark.parametrize("missing, role", [(2018, "train"), (2020, "dev"), (2021, "test")])
def test_missing_split_year_is_an_error_naming_it(missing, role):
    abstracts = corpus({y: 2 for y in range(2015, 2022) if y != missing})
    with pytest.raises(SplitError, match=rf"year {missing} \({role} year\) has no abstracts"):
        make_splits(abstracts, PAPER_YEARS)


def test_a_longer_window_needs_earlier_years():
    abstracts = corpus({y: 2 for y in range(2015, 2022)})
    make_splits(abstracts, PAPER_YEARS)  # window 2: 2015 is the earliest year needed
    with pytest.raises(SplitError, match="year 2014"):
        make_splits(abstracts, SplitYears(2017, 2019, 2020, 2021, window=3))


@pytest.mark.parametrize("years", [
    dict(train_first=2019, train_last=2017, dev_year=2020, test_year=2021, window=2),
    dict(train_first=2017, train_last=2020, dev_year=2020, test_year=2021, window=2),
    dict(train_first=2017, train_last=2019, dev_year=2021, test_year=2021, window=2),
    dict(train_first=2017, train_last=2019, dev_year=2020, test_year=2021, window=0),
])
def test_inconsistent_years_are_rejected(years):
    with pytest.raises(SplitError, match="params.yaml|features.window"):
        SplitYears(**years)


def test_year_counts_label_each_year():
    abstracts = corpus({2014: 1, 2015: 2, 2016: 3, 2017: 4, 2018: 5, 2019: 6, 2020: 7, 2021: 8,
                        2022: 9})
    counts = year_counts(abstracts, PAPER_YEARS)
    assert counts.to_dict("list") == {
        "year": list(range(2014, 2023)),
        "abstracts": list(range(1, 10)),
        "split": ["unused", "history", "history", "train", "train", "train", "dev", "test",
                  "unused"],
    }
