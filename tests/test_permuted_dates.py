"""The time-free control corpus: filter.permute_first..permute_last shuffle the kept documents'
dates among those years, and nothing else."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.corpus.permuted_dates import permute_dates
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet, write_parquet
from stages import filter as filter_stage

TEXT = "we study how the vocabulary of a research field moves over the years and what follows"


def corpus() -> pd.DataFrame:
    years = [2001] * 3 + [2002] * 5 + [2003] * 7 + [2004] * 4
    return pd.DataFrame({
        "key": [f"k{i}" for i in range(len(years))],
        "year": years,
        "month": [f"m{i}" for i in range(len(years))],
        "date": [f"{y}-{1 + i % 12:02d}" for i, y in enumerate(years)],
        "title": [f"t{i}" for i in range(len(years))],
        "abstract": [f"{TEXT} {i}" for i in range(len(years))]})


def test_dates_move_only_among_the_named_years_and_each_year_keeps_its_size():
    before = corpus()
    after = permute_dates(before, 2002, 2003, seed=0)
    inside = before["year"].between(2002, 2003)
    # outside the years: untouched; every other column: untouched, same order
    pd.testing.assert_frame_equal(after[~inside], before[~inside])
    pd.testing.assert_frame_equal(after[["key", "title", "abstract"]],
                                  before[["key", "title", "abstract"]])
    assert after["year"].value_counts().to_dict() == before["year"].value_counts().to_dict()
    # a row's date columns move together: the (year, month, date) triples are the same set
    triples = lambda f: sorted(zip(f["year"], f["month"], f["date"]))
    assert triples(after) == triples(before)
    assert (after.loc[inside, "date"] != before.loc[inside, "date"]).any()
    assert after["year"].dtype == before["year"].dtype


def test_the_permutation_is_the_seeds():
    a, b = permute_dates(corpus(), 2001, 2004, 0), permute_dates(corpus(), 2001, 2004, 0)
    pd.testing.assert_frame_equal(a, b)
    assert not permute_dates(corpus(), 2001, 2004, 1)["date"].equals(a["date"])


@pytest.mark.parametrize("first, last, says", [(2004, 2002, "after the last"),
                                               (1990, 1995, "nothing to permute")])
def test_a_range_without_documents_is_refused_by_name(first, last, says):
    with pytest.raises(UserError, match=says) as error:
        permute_dates(corpus(), first, last, 0)
    assert "filter.permute_first" in str(error.value)


def run_filter(tmp_path, *extra: str) -> pd.DataFrame:
    path = tmp_path / "papers.parquet"
    write_parquet(corpus(), path, metadata={"format": "csv"})
    filter_stage.main(["--papers", str(path), "--kept", str(tmp_path / "k.parquet"),
                       "--dropped", str(tmp_path / "d.parquet"), "--metrics",
                       str(tmp_path / "m.json"), "--counts", str(tmp_path / "c.json"),
                       "--language", "None", "--workers", "1", *extra])
    return read_parquet(tmp_path / "k.parquet")


def test_the_filter_stage_writes_the_control_corpus(tmp_path, capsys):
    real = run_filter(tmp_path)
    assert "permuted" not in capsys.readouterr().out
    permuted = run_filter(tmp_path, "--permute-first", "2002", "--permute-last", "2003",
                          "--permute-seed", "3")
    assert "dates permuted among the kept documents of 2002-2003" in capsys.readouterr().out
    pd.testing.assert_frame_equal(permuted, permute_dates(real, 2002, 2003, 3))


def test_one_end_of_the_range_alone_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        run_filter(tmp_path, "--permute-first", "2002")
    assert exit_.value.code != 0
    assert "filter.permute_first and filter.permute_last go together" in capsys.readouterr().err
    assert not (tmp_path / "k.parquet").exists()
