"""Frequency buckets and emerging tokens on hand-counted examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.evaluation.buckets import (BUCKETS, bucket_index, bucket_metrics, emerging_tokens,
                              load_bucket_features)
from pipeline.infra.errors import UserError
from pipeline.features.frequencies import log_frequencies, write_period


def test_bucket_edges():
    counts = np.array([0, 1, 2, 10, 11, 100, 101, 5000])
    assert [BUCKETS[i] for i in bucket_index(counts)] == [
        "unseen", "1", "2-10", "2-10", "11-100", "11-100", ">100", ">100"]


def test_emerging_needs_a_rise_in_every_step_and_last_year_occurrence():
    log_freq = np.array([[-5.0, -4.0, -3.0],    # rose twice -> emerging
                         [-5.0, -3.0, -4.0],    # fell in the last step
                         [-5.0, -5.0, -4.0],    # flat first step
                         [-9.0, -8.9, -8.8]])   # "rises" only because the corpus shrank
    last_counts = np.array([4, 2, 1, 0])
    assert emerging_tokens(log_freq, last_counts).tolist() == [True, False, False, False]


def test_bucket_metrics_hand_counted():
    # vocabulary of 5 tokens; history counts: t0 unseen, t1 once, t2 five times, t3 50, t4 500
    history = np.array([0, 1, 5, 50, 500])
    emerging = np.array([False, True, False, False, True])
    targets = np.array([0, 0, 1, 2, 2, 2, 4, 4])
    nll = np.array([9.0, 7.0, 6.0, 3.0, 4.0, 5.0, 1.0, 2.0])
    top10 = np.array([False, True, False, True, True, False, True, True])
    frame = bucket_metrics(targets, nll, top10, history, emerging).set_index("bucket")
    assert frame.loc["unseen", "n"] == 2 and frame.loc["unseen", "mean_nll"] == pytest.approx(8.0)
    assert frame.loc["unseen", "recall10"] == pytest.approx(0.5)
    assert frame.loc["1", "mean_nll"] == pytest.approx(6.0) and frame.loc["1", "recall10"] == 0.0
    assert frame.loc["2-10", "n"] == 3 and frame.loc["2-10", "mean_nll"] == pytest.approx(4.0)
    assert frame.loc["2-10", "recall10"] == pytest.approx(2 / 3)
    assert frame.loc["11-100", "n"] == 0 and math.isnan(frame.loc["11-100", "mean_nll"])
    assert frame.loc[">100", "mean_nll"] == pytest.approx(1.5)
    # emerging: t1 (6.0) and t4 twice (1.0, 2.0)
    assert frame.loc["emerging", "n"] == 3
    assert frame.loc["emerging", "mean_nll"] == pytest.approx(3.0)
    assert frame["n"].iloc[:5].sum() == len(targets)


def test_features_from_frequency_files(tmp_path):
    counts = {"2017": [0, 1, 5, 9], "2018": [0, 2, 4, 0], "2019": [1, 3, 3, 0]}
    for period, c in counts.items():
        write_period(tmp_path / f"{period}.parquet", period, np.array(c))
    history, emerging = load_bucket_features(tmp_path, "2020", window=2)
    assert history.tolist() == [1, 5, 7, 0]                 # 2018 + 2019
    lf = np.stack([log_frequencies(np.array(c)) for c in counts.values()], axis=1)
    assert emerging.tolist() == emerging_tokens(lf, np.array(counts["2019"])).tolist()
    assert emerging.tolist()[1] is True and emerging.tolist()[2] is False
    with pytest.raises(UserError, match="frequencies of 2016"):    # 'emerging' of 2019 reads 2016
        load_bucket_features(tmp_path, "2019", window=2)


def test_features_across_a_quarter_boundary(tmp_path):
    """The buckets of 2021Q1 read 2020Q2 (emerging), 2020Q3 and 2020Q4: a year boundary is no gap."""
    counts = {"2020Q2": [0, 1, 5, 9], "2020Q3": [0, 2, 4, 0], "2020Q4": [1, 3, 3, 0]}
    for period, c in counts.items():
        write_period(tmp_path / f"{period}.parquet", period, np.array(c))
    history, emerging = load_bucket_features(tmp_path, "2021Q1", window=2)
    assert history.tolist() == [1, 5, 7, 0]                 # 2020Q3 + 2020Q4
    lf = np.stack([log_frequencies(np.array(c)) for c in counts.values()], axis=1)
    assert emerging.tolist() == emerging_tokens(lf, np.array(counts["2020Q4"])).tolist()
    with pytest.raises(UserError, match=r"frequencies of 2020Q1 \(history 2020Q2-2020Q3"):
        load_bucket_features(tmp_path, "2020Q4", window=2)
