"""The split stage at sub-year periods, end to end on real Parquet: rejects with counts, the
empty-period stop (before any training: a message, exit 2, no splits), the thin-period warning."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from stages import split


def corpus(path: Path, skip: tuple[str, ...] = (), per_month: int = 3) -> Path:
    """``per_month`` documents per month 2017-2021 (months in ``skip`` empty) and two documents
    dated by year only, as an export without months has."""
    rows = [{"key": f"{y}-{m:02d}-{i}", "date": f"{y}-{m:02d}-1{i}", "title": "t",
             "abstract": f"text {y} {m} {i}"}
            for y in range(2017, 2022) for m in range(1, 13) for i in range(per_month)
            if f"{y}-{m:02d}" not in skip]
    rows += [{"key": "bare-1", "date": "2019", "title": "t", "abstract": "x"},
             {"key": "bare-2", "date": "2020", "title": "t", "abstract": "y"}]
    pd.DataFrame(rows).to_parquet(path)
    return path


def args(abstracts: Path, out: Path, kind: str, first: str, last: str, dev: str, test: str,
         *extra: str) -> list[str]:
    return ["--abstracts", str(abstracts), "--out-dir", str(out / "splits"), "--period", kind,
            "--train-first", first, "--train-last", last, "--dev", dev, "--test", test,
            "--window", "2", "--rejects", str(out / "period_rejects.parquet"),
            "--counts-plot", str(out / "counts.csv"), *extra]


def test_half_years_split_with_rejects_and_time_ordered_counts(tmp_path, capsys):
    split.main(args(corpus(tmp_path / "a.parquet"), tmp_path, "half", "2018H1", "2020H1",
                    "2020H2", "2021H1", "--min-documents", "10"))
    out = capsys.readouterr()
    assert "rejected 2: date coarser than split.period: half" in out.out
    assert "train: 90 abstracts" in out.out and "warning" not in out.err
    rejects = pd.read_parquet(tmp_path / "period_rejects.parquet")
    assert rejects["key"].tolist() == ["bare-1", "bare-2"]
    assert set(rejects["reason"]) == {"date coarser than split.period: half"}
    dev = pd.read_parquet(tmp_path / "splits" / "dev.parquet")
    assert list(dev.columns) == ["key", "period", "title", "abstract"]
    assert set(dev["period"]) == {"2020H2"} and len(dev) == 18
    counts = pd.read_csv(tmp_path / "counts.csv")
    assert counts["period"].tolist()[:3] == ["2017H1", "2017H2", "2018H1"]
    assert counts.set_index("period")["split"].to_dict()["2017H2"] == "history"


def test_an_empty_quarter_stops_before_training_naming_it(tmp_path, capsys):
    abstracts = corpus(tmp_path / "a.parquet", skip=("2020-01", "2020-02", "2020-03"))
    with pytest.raises(SystemExit) as done:
        split.main(args(abstracts, tmp_path, "quarter", "2019Q1", "2019Q4", "2020Q2", "2020Q3"))
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "1 quarter the run reads has no documents: 2020Q1 (history)" in err
    assert "split.period: half" in err and "Traceback" not in err
    assert not (tmp_path / "splits").exists()
    # the same corpus at half-years runs
    split.main(args(abstracts, tmp_path, "half", "2018H1", "2019H1", "2019H2", "2020H1"))
    assert len(pd.read_parquet(tmp_path / "splits" / "test.parquet")) == 9


def test_periods_other_stages_read_are_checked_and_thin_ones_warn(tmp_path, capsys):
    abstracts = corpus(tmp_path / "a.parquet", per_month=1)
    with pytest.raises(SystemExit):
        split.main(args(abstracts, tmp_path, "month", "2021-01", "2021-06", "2021-07",
                        "2021-08", "--needs", "2022-01"))
    assert "1 month the run reads has no documents: 2022-01" in capsys.readouterr().err
    split.main(args(abstracts, tmp_path, "month", "2021-01", "2021-06", "2021-07", "2021-08",
                    "--min-documents", "2"))
    err = capsys.readouterr().err
    assert "warning: 10 months the run reads have fewer than split.min_documents = 2" in err
    assert "2020-11 (1), 2020-12 (1), 2021-01 (1)" in err
