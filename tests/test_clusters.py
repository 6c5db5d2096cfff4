"""Abstracts in venue clusters: the cluster-robust document variance, its degrees of freedom, the
intra-cluster correlation, and the groups a corpus names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.corpus.groups import abstract_groups, group_labels
from pipeline.infra.errors import UserError
from pipeline.stats.clusters import (cluster_robust, design_effect, document_variance,
                                     effective_size, intra_cluster_correlation)
from pipeline.stats.comparisons import Side, compare_rates


def test_every_abstract_its_own_group_is_the_independent_test():
    u = np.random.default_rng(0).normal(size=50)
    u -= u.mean()
    independent = document_variance(u, 7.0)
    clustered = document_variance(u, 7.0, np.arange(50))
    assert clustered[0] == pytest.approx(independent[0], rel=1e-6)   # fixed-point rounding
    assert clustered[1] == pytest.approx(49.0, rel=1e-12)


def test_cr2_by_hand():
    u = np.array([1.0, -2.0, 0.5, 0.25, 0.25])
    groups = np.array(["a", "a", "b", "c", "c"])
    # sums -1, 0.5, 0.5 over sizes 2, 1, 2 of 5: each square over 1 - m/n
    expected = 1.0 / (1 - 2 / 5) + 0.25 / (1 - 1 / 5) + 0.25 / (1 - 2 / 5)
    variance, df = cluster_robust(u, groups)
    assert variance == pytest.approx(expected, rel=1e-6)    # fixed-point group sums
    assert 1.0 <= df <= 2.0        # at most G - 1 = 2


def test_one_dominant_venue_leaves_few_degrees_of_freedom():
    groups = np.array([0] * 900 + list(range(1, 101)))     # one volume of 900, 100 singletons
    u = np.random.default_rng(1).normal(size=1000)
    _, df = cluster_robust(u - u.mean(), groups)
    assert df < 20                  # far below G - 1 = 100: the big volume is one unit
    assert effective_size(groups) == pytest.approx((900 ** 2 + 100) / 1000)


def test_intra_cluster_correlation_and_design_effect_recover_a_planted_one():
    rng = np.random.default_rng(2)
    groups = np.repeat(np.arange(200), 30)
    u = rng.normal(0, np.sqrt(0.2), 200)[groups] + rng.normal(0, np.sqrt(0.8), len(groups))
    assert intra_cluster_correlation(u, groups) == pytest.approx(0.2, abs=0.05)
    assert design_effect(u, groups) == pytest.approx(1 + 29 * 0.2, rel=0.25)
    independent = rng.normal(size=len(groups))
    assert abs(intra_cluster_correlation(independent, groups)) < 0.03
    assert design_effect(independent, groups) == pytest.approx(1.0, abs=0.3)


def _clustered(rng, venue_sd):
    n, runs = 1500, 3
    venues = rng.choice(30, size=n, p=np.full(30, 1 / 30))
    tokens = rng.integers(100, 300, n).astype(float)
    base = rng.normal(6.0, 0.3, n)
    sides = []
    for _ in range(2):
        per_token = base + rng.normal(0, venue_sd, 30)[venues] + rng.normal(0, 0.05, n)
        nll = tokens[:, None] * (per_token[:, None] + rng.normal(0, 0.002, runs)[None, :])
        sides.append(Side(nll, trained=True))
    return sides[0], sides[1], tokens, venues


@pytest.mark.slow
def test_venue_clusters_break_the_independent_test_and_the_clustered_one_holds():
    rng = np.random.default_rng(3)
    independent = clustered = 0
    sims = 200
    for _ in range(sims):
        a, b, tokens, venues = _clustered(rng, venue_sd=0.02)
        independent += compare_rates(a, b, tokens).p < 0.05
        result = compare_rates(a, b, tokens, groups=venues)
        clustered += result.p < 0.05
        assert result.unit == "abstracts in venue clusters"
    assert independent / sims > 0.3
    assert clustered / sims < 0.09


def test_groups_from_the_corpus(tmp_path):
    path = tmp_path / "abstracts.parquet"
    pd.DataFrame({"key": ["a", "b", "c"], "venue": ["ACL", "", "ACL"],
                  "title": ["x", "y", "z"]}).to_parquet(path)
    groups = abstract_groups(str(path), "venue")
    assert groups == {"a": "ACL", "c": "ACL"}
    labels = group_labels(["a", "b", "c"], groups)
    assert labels is not None and labels[0] == labels[2] != labels[1]
    assert abstract_groups(str(path), "none") == {}
    assert group_labels(["a", "b"], {}) is None
    with pytest.raises(UserError, match="no column 'booktitle'"):
        abstract_groups(str(path), "booktitle")


@pytest.mark.parametrize("rho", [0.0, 0.05, 0.4])
def test_degrees_of_freedom_match_the_dense_matrices(rho):
    from pipeline.stats.clusters import bell_mccaffrey_df
    m = np.array([40.0, 7.0, 1.0, 1.0, 120.0, 13.0])
    n = m.sum()
    a = 1.0 / (1.0 - m / n)
    p = np.diag(m) - np.outer(m, m) / n
    aq = a[:, None] * ((1 - rho) * p + rho * p @ p)
    dense = np.trace(aq) ** 2 / np.trace(aq @ aq)
    assert bell_mccaffrey_df(m, a, rho) == pytest.approx(dense, rel=1e-9)


def test_a_table_without_venues_leaves_the_abstracts_independent(tmp_path):
    path = tmp_path / "abstracts.parquet"
    pd.DataFrame({"key": ["a", "b"], "abstract": ["x", "y"]}).to_parquet(path)
    assert abstract_groups(str(path), "venue") == {}


def test_the_signal_claims_resample_venues():
    from pipeline.forecast.signal import DISTRIBUTIONS, PERMUTED, Scope
    rng = np.random.default_rng(4)
    n = 120
    lengths = rng.integers(50, 150, n)
    nll = {d: lengths * rng.normal(7.0, 0.1, n) for d in DISTRIBUTIONS}
    nll[PERMUTED] = np.stack([nll["past"] * (1 + rng.normal(0, 1e-3)) for _ in range(10)], axis=1)
    venues = np.array([f"v{i % 12}" for i in range(n)], dtype=object)
    grouped = Scope("2021/whole", nll, lengths, groups=venues).claims()
    alone = Scope("2021/whole", nll, lengths).claims()
    assert {c.unit for c in grouped} == {"abstracts in venue clusters"}
    assert {c.unit for c in alone} == {"abstracts"}
    assert [c.effect for c in grouped] == [c.effect for c in alone]
