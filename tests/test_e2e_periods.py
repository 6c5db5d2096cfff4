"""End to end with real DVC at sub-year periods: the generated graph names every per-period stage
and file by its label, the split stage rejects dates coarser than the period, and an empty period
stops `dvc repro` at the split stage, before the tokenizer or any feature stage runs.

The upstream stages only (split, tokenizer, frequencies, frequency_plot) on real Anthology
abstracts of the embedded sample, each given a month (the data stages' output is committed as a
plain file in place of those stages).
"""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.corpus.anthology import parse_file
from pipeline.features import frequencies as fq
from pipeline.infra.io import write_parquet
from tests.dvc_project import git, keep_stages, make_project, run_dvc, stages_that_would_run

pytestmark = pytest.mark.slow

STAGES = ("split", "tokenizer", "frequencies", "frequency_plot")
HALVES = {
    "split": {"period": "half", "train_first": "2018H1", "train_last": "2019H2", "dev": "2020H1",
              "test": "2020H2", "min_documents": 5},
    "features": {"window": 2},
    "score": {"periods": ["2020H1", "2020H2"]},
    "forecast": {"period": None, "backtest_periods": ["2020H2"]},
    "experiment": {"variants": ["baseline", "frequency"]},
    "tokenizer": {"vocab_size": 400},
}


def project(tmp_path, sample_bib, params, skip_months=()):
    proj = make_project(tmp_path, params)
    papers = parse_file(sample_bib).papers
    small = papers[papers.year.between(2017, 2020)].groupby("year").head(12).copy()
    small["date"] = [f"{y}-{i % 12 + 1:02d}" for y, i in
                     zip(small["year"], small.groupby("year").cumcount())]
    small = small[~small["date"].isin(skip_months)]
    small.loc[small.index[small.year == 2017][0], "date"] = "2017"   # a bare year: a reject
    write_parquet(small.reset_index(drop=True), proj / "data" / "corpus" / "abstracts.parquet")
    keep_stages(proj, STAGES)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "upstream graph on a committed corpus table")
    return proj


def test_half_years_end_to_end(tmp_path, sample_bib):
    proj = project(tmp_path, sample_bib, HALVES)
    halves = [f"{y}H{h}" for y in range(2017, 2021) for h in (1, 2)]
    assert sorted(stages_that_would_run(proj)) == sorted(
        ["split", "tokenizer", "frequency_plot", *(f"frequencies@{p}" for p in halves)])
    run_dvc(proj, "repro", preload=True)   # the quarters' test below runs plain `dvc`
    built = sorted(p.stem for p in (proj / "data/features/frequencies").glob("*.parquet"))
    assert built == halves
    assert fq.read_period(proj / "data/features/frequencies/2019H2.parquet").period == "2019H2"
    rejects = pd.read_parquet(proj / "data/corpus/period_rejects.parquet")
    assert rejects["date"].tolist() == ["2017"]
    counts = pd.read_csv(proj / "plots/abstracts_per_period.csv")
    assert counts["period"].tolist() == halves
    assert counts.set_index("period")["split"]["2017H2"] == "history"
    dev = pd.read_parquet(proj / "data/splits/dev.parquet")
    assert set(dev["period"]) == {"2020H1"} and len(dev) == 6
    plot = pd.read_csv(proj / "plots/word_frequencies.csv")
    assert plot["period"].drop_duplicates().tolist() == halves
    assert stages_that_would_run(proj) == []


def test_an_empty_quarter_stops_at_the_split(tmp_path, sample_bib):
    quarters = {**HALVES, "split": {"period": "quarter", "train_first": "2019Q1",
                                    "train_last": "2019Q4", "dev": "2020Q1", "test": "2020Q2",
                                    "min_documents": 1},
                "score": {"periods": ["2020Q1", "2020Q2"]},
                "forecast": {"period": None, "backtest_periods": []}}
    proj = project(tmp_path, sample_bib, quarters, skip_months=("2018-10", "2018-11", "2018-12"))
    proc = run_dvc(proj, "repro", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "1 quarter the run reads has no documents: 2018Q4 (history)" in out
    assert "split.period: half" in out and "Traceback" not in out
    assert "Running stage 'tokenizer'" not in out
    assert not (proj / "data/tokenizer").exists()
