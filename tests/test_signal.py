"""The signal (stage `signal`): the unigram yardstick of a temporal gain, on synthetic corpora
with and without a planted trend and end to end on the repo's sample abstracts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.corpus.halves import in_half_a
from pipeline.evaluation.unigram import summed_counts
from pipeline.features.frequencies import read_period
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.signal import (COMPARISONS, DISTRIBUTIONS, ORACLE, PAST, PERMUTATIONS,
                                      PERMUTED, POOLED, RECENT_1, RECENT_2, cut,
                                      permuted_periods, signal)
from pipeline.forecast.synthetic import TopicCorpus
from pipeline.graph.build import build
from pipeline.graph.files import SIGNAL_DETAILS
from pipeline.infra.io import read_json, write_parquet
from pipeline.reports.signal_report import read_documents
from pipeline.stats.collect import collect
from pipeline.stats.verdict import judge
from stages import frequencies
from stages import signal as signal_stage
from stages import verdicts as verdicts_stage
from tests.conftest import REPO, stage_help
from tests.test_stage_score import sample_by_year

YEARS = (2017, 2018, 2019, 2020, 2021)
CORPUS = TopicCorpus(vocab=2000, topics=20, seed=0)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The sample's abstracts of 2017-2021 as a corpus table, a tokenizer trained on 2017-2019
    and the frequencies stage's files of every year."""
    root = tmp_path_factory.mktemp("signal")
    years = sample_by_year()
    rows = [(k, str(y), a) for y in YEARS for k, a in years[y]]
    write_parquet(pd.DataFrame(rows, columns=["key", "date", "abstract"]),
                  root / "abstracts.parquet")
    tok = train_scratch_tokenizer([a for y in (2017, 2018, 2019) for _, a in years[y]], 512)
    tok.save_pretrained(root / "tokenizer")
    for y in YEARS:
        frequencies.main(["--period", str(y), "--abstracts", str(root / "abstracts.parquet"),
                          "--tokenizer", str(root / "tokenizer"),
                          "--out", str(root / "frequencies" / f"{y}.parquet")])
    return root


def stage_args(root: Path, out: Path, first: str = "2017", test: str = "2021") -> list[str]:
    return ["--abstracts", str(root / "abstracts.parquet"), "--tokenizer", str(root / "tokenizer"),
            "--test", test, "--train-periods", first, "2019", "--max-length", "64",
            "--seed", "0", "--json", str(out / "signal.json"), "--out", str(out / "signal.md")]


def test_counts_equal_the_frequency_files(project):
    docs = read_documents(project / "abstracts.parquet", project / "tokenizer",
                          [str(y) for y in YEARS])
    freq = {y: project / "frequencies" / f"{y}.parquet" for y in YEARS}
    for d, y in zip(docs, YEARS):
        assert np.array_equal(d.counts(), read_period(freq[y]).counts)
    found = signal(docs[:-1], 3, docs[-1], seed=0)
    assert np.array_equal(found.counts[POOLED], summed_counts([freq[y] for y in (2017, 2018,
                                                                                  2019)]))
    assert np.array_equal(found.counts[PAST], summed_counts([freq[y] for y in YEARS[:-1]]))
    assert np.array_equal(found.counts[RECENT_1], read_period(freq[2020]).counts)
    assert np.array_equal(found.counts[RECENT_2], summed_counts([freq[2019], freq[2020]]))
    # each permutation's recent-2 is as many documents of the past as 2019 and 2020 hold
    assert found.counts[PERMUTED].shape == (PERMUTATIONS, docs[0].vocab_size)
    assert found.periods[POOLED] == ("2017", "2018", "2019")


def test_a_permutation_keeps_each_periods_size_and_moves_documents(project):
    docs = read_documents(project / "abstracts.parquet", project / "tokenizer",
                          ["2017", "2018", "2019", "2020"])
    shuffled = permuted_periods(docs, (0, 1))
    assert [d.n_documents for d in shuffled] == [d.n_documents for d in docs]
    assert [d.period for d in shuffled] == [d.period for d in docs]
    assert sorted(k for d in shuffled for k in d.keys) == sorted(k for d in docs for k in d.keys)
    assert set(shuffled[-1].keys) != set(docs[-1].keys)
    assert np.array_equal(sum(d.counts() for d in shuffled), sum(d.counts() for d in docs))


def test_the_oracle_scores_each_half_with_the_other_halfs_counts():
    # every document's tokens are its own: a half that saw the document would give them counts
    n, vocab = 40, 400
    lengths = np.full(n, 5)
    test = PeriodDocuments("2021", tuple(f"doc{i}" for i in range(n)),
                           np.arange(n * 5, dtype=np.int64), lengths, vocab)
    rng = np.random.default_rng(0)
    past = [PeriodDocuments(str(2017 + j), tuple(f"p{j}-{i}" for i in range(10)),
                            rng.integers(0, vocab, 50), np.full(10, 5), vocab) for j in range(4)]
    scope = signal(past, 3, test, seed=0).score()
    a = in_half_a(test.keys)
    assert 0 < a.sum() < n            # both halves hold documents; disjoint and covering by rule
    for mine in (a, ~a):
        other = int(lengths[~mine].sum())       # tokens of the other half, none of them in mine
        expected = -5 * (np.log(1.0) - np.log(other + vocab))
        assert np.allclose(scope.nll[ORACLE][mine], expected)


def test_a_cut_keeps_each_documents_first_tokens():
    docs = PeriodDocuments("Y", ("a", "b", "c"), np.arange(9, dtype=np.int64),
                           np.array([2, 3, 4]), 10)
    short = cut(docs, 3)
    assert short.lengths.tolist() == [2, 3, 3]
    assert short.flat.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]


def synthetic(trend: bool, seed: int, n_docs: int = 300, periods: int = 6
              ) -> tuple[list[PeriodDocuments], PeriodDocuments]:
    """``periods`` past periods and the test period; with ``trend`` 40 word pairs trade places
    a little more every period (12 % of each falling word's occurrences a period)."""
    rng = np.random.default_rng(seed)
    pairs = {2 * i + 40: 2 * i + 1200 for i in range(40)} if trend else None
    docs = [CORPUS.sample(rng, n_docs, str(2010 + i), rewrite=pairs,
                          share=0.12 * i if trend else 0.0) for i in range(periods + 1)]
    return docs[:-1], docs[-1]


def verdicts_of(past, test) -> dict[tuple[str, str], object]:
    scope = signal(past, len(past) - 1, test, seed=0).score()
    return {(v.a, v.b): v for v in judge(scope.claims())}


@pytest.mark.parametrize("seed", [0, 1])
def test_a_planted_recent_trend_is_found_and_the_permuted_dates_find_none(seed):
    found = verdicts_of(*synthetic(trend=True, seed=seed))
    assert found[(RECENT_2, POOLED)].verdict == "better"
    assert found[(RECENT_1, POOLED)].verdict == "better"
    assert found[(PERMUTED, PAST)].verdict != "better"
    assert found[(PERMUTED, PAST)].seeds == (PERMUTATIONS, 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_without_a_trend_no_recent_distribution_gains(seed):
    found = verdicts_of(*synthetic(trend=False, seed=seed))
    # a smaller sample of the same law: noisier counts, so no gain (here a loss)
    for key in ((RECENT_2, POOLED), (RECENT_1, POOLED), (PERMUTED, PAST)):
        assert found[key].verdict != "better" and found[key].effect > 0, key


def test_the_stage_writes_both_reports_with_collectable_records(project, tmp_path):
    signal_stage.main(stage_args(project, tmp_path))
    doc = read_json(tmp_path / "signal.json")
    scopes = ["2021/whole", "2021/first-63"]
    assert [(r["scope"], r["distribution"]) for r in doc["table"]] == [
        (s, d) for s in scopes for d in DISTRIBUTIONS]
    rows = {(r["scope"], r["distribution"]): r for r in doc["table"]}
    for s in scopes:
        assert rows[(s, POOLED)]["share_of_oracle"] == 0 and rows[(s, ORACLE)][
            "share_of_oracle"] == pytest.approx(1)
        assert rows[(s, "recent-1")]["ppl"] > 1
    assert rows[("2021/first-63", POOLED)]["n_tokens"] < rows[("2021/whole", POOLED)]["n_tokens"]
    collected = collect({str(tmp_path / "signal.json"): doc})
    assert [(r["scope"], r["a"], r["b"]) for r in collected["verdicts"]] == [
        (s, a, b) for s in scopes for a, b in COMPARISONS]
    assert all(r["family"] == "signal" and r["report"] == "signal" and r["family_size"] == 5
               for r in collected["verdicts"])
    assert {tuple(r["seeds"]) for r in collected["verdicts"]} == {(0, 0), (PERMUTATIONS, 0)}
    text = (tmp_path / "signal.md").read_text()
    assert "| 2021/first-63 | recent-2 |" in text
    assert "record `signal/signal/2021/whole/recent-2/pooled/unigram PPL`" in text
    # the verdicts stage gathers them
    verdicts_stage.main(["--inputs", str(tmp_path / "signal.json"),
                         "--out", str(tmp_path / "verdicts.json")])
    assert read_json(tmp_path / "verdicts.json")["counts"]["signal"]


def test_two_past_periods_leave_the_permuted_check_untested(project, tmp_path):
    # 2019 and 2020 before 2021: every permutation gives back both, the whole past
    signal_stage.main(stage_args(project, tmp_path, first="2019", test="2021"))
    records = read_json(tmp_path / "signal.json")["verdicts"]
    permuted = [r for r in records if r["a"] == PERMUTED]
    assert len(permuted) == 2 and all(r["verdict"] == "untested" for r in permuted)
    assert "2 periods before 2021" in permuted[0]["reason"]
    assert all(r["family_size"] == 4 for r in records if r["a"] != PERMUTED)


def test_one_past_period_is_a_message(project, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        signal_stage.main(stage_args(project, tmp_path, first="2019", test="2020"))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "1 period before the test period 2020" in err and "2018 or earlier" in err
    assert "Traceback" not in err and not (tmp_path / "signal.json").exists()


def test_the_graph_runs_the_stage_and_the_verdicts_read_it():
    import yaml

    stages = build(yaml.safe_load((REPO / "params.yaml").read_text()))["stages"]
    stage = stages["signal"]
    for part in ("--test ${split.test}", "--train-periods ${split.train_first} "
                 "${split.train_last}", "--max-length ${train.max_length}",
                 "--seed ${signal.seed}", f"--json {SIGNAL_DETAILS}"):
        assert part in stage["cmd"]
    assert {"data/corpus/abstracts.parquet", "data/tokenizer"} <= set(stage["deps"])
    assert SIGNAL_DETAILS in stages["verdicts"]["deps"]
    assert SIGNAL_DETAILS in stages["verdicts"]["cmd"]


def test_help_explains_every_option(capsys):
    text = stage_help(capsys, signal_stage.main)
    for option in ("--abstracts", "--tokenizer", "--test", "--train-periods", "--max-length",
                   "--seed", "--json", "--out"):
        assert option in text
