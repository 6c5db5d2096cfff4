"""Per-period frequencies: hand counts, add-one smoothing, file round trip with the recorded
tokenizer and corpus identities, refusal of stale or damaged files, plotted-word matching."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.features import frequencies as fq
from pipeline.infra.errors import UserError
from pipeline.features.tokenizer import tokenize_texts, train_scratch_tokenizer


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
    path = tmp_path / "2019H2.parquet"
    fq.write_period(path, "2019H2", counts)
    year = fq.read_period(path)
    assert (year.period, year.n_tokens, year.vocab_size) == ("2019H2", 14, 5)
    np.testing.assert_array_equal(year.counts, counts)
    np.testing.assert_allclose(year.log_freq, np.log((counts + 1) / (14 + 5)))
    table = pq.read_table(path)
    assert table.schema.names == ["token_id", "count", "log_freq"]
    assert str(table.schema.field("token_id").type) == "int32"
    first = path.read_bytes()
    fq.write_period(path, "2019H2", counts)
    assert path.read_bytes() == first  # deterministic bytes: DVC sees no change


def test_write_rejects_negative_counts(tmp_path) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        fq.write_period(tmp_path / "x.parquet", "2019", np.array([1, -1]))


@pytest.mark.parametrize("label", ["2019", "2019H2", "2019Q3", "2019-07"])
def test_read_missing_period_names_the_stage(tmp_path, label) -> None:
    with pytest.raises(UserError, match=f"dvc repro frequencies@{label}`") as err:
        fq.read_period(tmp_path / f"{label}.parquet")
    assert err.value.path == str(tmp_path / f"{label}.parquet")


def test_identities_are_recorded_and_the_tokenizer_is_checked(tmp_path) -> None:
    path = tmp_path / "2019.parquet"
    fq.write_period(path, "2019", np.array([1, 2, 3]), tokenizer_id="a" * 64, corpus_id="c" * 64)
    year = fq.read_period(path, tokenizer_id="a" * 64)
    assert (year.tokenizer_id, year.corpus_id) == ("a" * 64, "c" * 64)
    with pytest.raises(UserError, match="another tokenizer") as err:
        fq.read_period(path, tokenizer_id="b" * 64)
    assert err.value.path == str(path) and "dvc repro frequencies@2019" in err.value.fix
    # a file from before identities were recorded cannot be vouched for
    fq.write_period(path, "2019", np.array([1, 2, 3]))
    assert fq.read_period(path).tokenizer_id is None
    with pytest.raises(UserError, match="does not record which tokenizer"):
        fq.read_period(path, tokenizer_id="a" * 64)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "rows"])
def test_damaged_file_is_a_user_error_naming_it(tmp_path, damage) -> None:
    path = tmp_path / "2018.parquet"
    fq.write_period(path, "2018", np.array([1, 2, 3]))
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:40])
    elif damage == "garbage":
        path.write_text("not parquet")
    else:  # a valid Parquet whose rows disagree with its vocab_size
        table = pq.read_table(path)
        pq.write_table(table.slice(0, 2).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(UserError, match="damaged") as err:
        fq.read_period(path)
    assert err.value.path == str(path) and "dvc repro frequencies@2018" in err.value.fix


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
    year = fq.PeriodFrequencies("2020", counts, fq.log_frequencies(counts), int(counts.sum()))
    match = fq.match_word(tok, "bert")
    c = sum(int(counts[i]) for i in match.token_ids)
    assert c == 3
    assert math.isclose(fq.word_log_freq(year, match),
                        math.log((c + 1) / (counts.sum() + len(tok))))
