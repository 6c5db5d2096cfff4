"""pipeline.evaluation.unigram: the add-one-smoothed unigram reference perplexity, on hand-made counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.infra.errors import UserError
from pipeline.features.frequencies import write_period
from pipeline.evaluation.unigram import summed_counts, unigram_perplexity


def test_perplexity_by_hand() -> None:
    # |V| = 4, N = 6: p = (c + 1) / 10 -> 0.4, 0.3, 0.2, 0.1
    counts = np.array([3, 2, 1, 0])
    ppl = unigram_perplexity(counts, np.array([0, 1, 3]))
    assert ppl.n_tokens == 3
    assert ppl.nll_sum == pytest.approx(-(math.log(0.4) + math.log(0.3) + math.log(0.1)))
    assert ppl.ppl == pytest.approx((0.4 * 0.3 * 0.1) ** (-1 / 3))


def test_unseen_token_gets_add_one_mass_not_zero() -> None:
    ppl = unigram_perplexity(np.array([5, 0]), np.array([1]))
    assert ppl.ppl == pytest.approx(7.0)   # p = 1 / (5 + 2)


def test_uniform_counts_give_vocabulary_size() -> None:
    assert unigram_perplexity(np.full(50, 9), np.arange(50)).ppl == pytest.approx(50.0)


def test_target_outside_vocabulary_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the vocabulary"):
        unigram_perplexity(np.array([1, 1]), np.array([2]))


def test_counts_of_periods_are_summed(tmp_path) -> None:
    write_period(tmp_path / "2018.parquet", "2018", np.array([1, 0, 2]))
    write_period(tmp_path / "2019.parquet", "2019", np.array([0, 4, 1]))
    total = summed_counts([tmp_path / "2018.parquet", tmp_path / "2019.parquet"])
    assert total.tolist() == [1, 4, 3]


def test_periods_with_different_vocabularies_are_refused(tmp_path) -> None:
    write_period(tmp_path / "a.parquet", "2018", np.array([1, 0, 2]))
    write_period(tmp_path / "b.parquet", "2019", np.array([0, 4]))
    with pytest.raises(UserError, match="vocabulary of 2 tokens") as err:
        summed_counts([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert err.value.path is not None and str(err.value.path).endswith("b.parquet")
