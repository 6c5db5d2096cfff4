"""Per-year frequencies: hand counts, add-one smoothing, file round trip, plotted-word matching."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline import frequencies as fq
from pipeline.tokenizer import tokenize_texts, train_scratch_tokenizer


@pytest.fixture(scope="module")
def tok():
    corpus = ["the cat sat on the mat", "the dog sat", "BERT and Bert models"] * 30
    return train_scratch_tokenizer(corpus, vocab_size=320)


def test_counts_equal_hand_counts(tok) -> None:
    ids = {w: tok.convert_tokens_to_ids(w) for w in ["the", "Ġcat", "Ġsat", "Ġdog"]}
    # every word is a single token of the scratch vocabulary
    assert tokenize_texts(tok, ["the cat sat"])[0] == [ids["the"], ids["Ġcat"], ids["Ġsat"]]
    counts = fq.count_tokens(tok, ["the cat sat", "the dog", "the cat"], batch_size=2)
    expected = np.zeros(len(tok), dtype=np.int64)
    expected[ids["the"]] = 3
    expected[ids["Ġcat"]] = 2
    expected[ids["Ġsat"]] = 1
    expected[ids["Ġdog"]] = 1
    expected[tok.eos_token_id] = 3  # one closing EOS per abstract: the LM predicts it
    np.testing.assert_array_equal(counts, expected)


def test_log_frequencies_add_one_smoothing() -> None:
    counts = np.array([3, 0, 1, 0], dtype=np.int64)  # N = 4, |V| = 4
    got = fq.log_frequencies(counts)
    np.testing.assert_allclose(got, np.log([4 / 8, 1 / 8, 2 / 8, 1 / 8]))
    assert math.isclose(np.exp(got).sum(), 1.0)  # smoothed frequencies are a distribution


def test_write_read_round_trip(tmp_path) -> None:
    counts = np.array([5, 0, 2, 7, 0], dtype=np.int64)
    path = tmp_path / "2019.parquet"
    fq.write_year(path, 2019, counts)
    year = fq.read_year(path)
    assert (year.year, year.n_tokens, year.vocab_size) == (2019, 14, 5)
    np.testing.assert_array_equal(year.counts, counts)
    np.testing.assert_allclose(year.log_freq, np.log((counts + 1) / (14 + 5)))
    table = pq.read_table(path)
    assert table.schema.names == ["token_id", "count", "log_freq"]
    assert str(table.schema.field("token_id").type) == "int32"
    first = path.read_bytes()
    fq.write_year(path, 2019, counts)
    assert path.read_bytes() == first  # deterministic bytes: DVC sees no change


def test_write_rejects_negative_counts(tmp_path) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        fq.write_year(tmp_path / "x.parquet", 2019, np.array([1, -1]))


def test_read_missing_year_names_the_stage(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="dvc repro frequencies"):
        fq.read_year(tmp_path / "2019.parquet")


def test_match_word_collects_single_token_casings(tok) -> None:
    match = fq.match_word(tok, "bert")
    expected = {tok.convert_tokens_to_ids(t) for t in ["BERT", "ĠBert"]}
    assert expected <= set(match.token_ids)
    assert "' Bert'" in match.match and "'BERT'" in match.match


def test_match_word_multi_token_uses_first_token_and_says_so(tok) -> None:
    match = fq.match_word(tok, "pretraining")
    pieces = tokenize_texts(tok, [" pretraining"])[0]
    assert len(pieces) > 1
    assert match.token_ids == (pieces[0],)
    assert match.match.startswith("first token") and f"of {len(pieces)}" in match.match


def test_word_log_freq_sums_matched_tokens(tok) -> None:
    counts = fq.count_tokens(tok, ["BERT and Bert", "the Bert"])
    year = fq.YearFrequencies(2020, counts, fq.log_frequencies(counts), int(counts.sum()))
    match = fq.match_word(tok, "bert")
    c = sum(int(counts[i]) for i in match.token_ids)
    assert c == 3
    assert math.isclose(fq.word_log_freq(year, match),
                        math.log((c + 1) / (counts.sum() + len(tok))))
