"""History loading from real per-year feature files, and the unseen-token rule of dense_history."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline import embeddings, frequencies
from pipeline.history import dense_history, load_history

V, D = 10, 4


def year_emb(year: int, ids: list[int], fill: float) -> embeddings.YearEmbeddings:
    vectors = torch.full((len(ids), D), fill, dtype=torch.float16) + torch.tensor(ids).unsqueeze(1)
    return embeddings.YearEmbeddings(year=year, token_ids=torch.tensor(ids, dtype=torch.int64),
                                     counts=torch.ones(len(ids), dtype=torch.int64),
                                     vectors=vectors, dim=D, vocab_size=V)


def test_dense_history_unseen_token_rule() -> None:
    # token 1: seen both years; 2: only the older; 3: only the newer; 4: never; 5: oldest of three.
    years = [year_emb(2017, [1, 2, 5], 100.0), year_emb(2018, [1, 2, 3], 200.0),
             year_emb(2019, [1, 3], 300.0)]
    X, seen = dense_history(years)
    assert X.shape == (V, 3, D) and X.dtype == torch.float32 and seen.shape == (V, 3)
    assert seen[1].tolist() == [True, True, True]
    assert X[1, :, 0].tolist() == [101.0, 201.0, 301.0]
    # Not seen in 2019: the latest earlier year where it was seen (2018), flagged unseen.
    assert seen[2].tolist() == [True, True, False]
    assert X[2, :, 0].tolist() == [102.0, 202.0, 202.0]
    # Seen only later: zeros before, never the encoder's static embedding.
    assert seen[3].tolist() == [False, True, True]
    assert X[3, 0].abs().sum() == 0 and X[3, 1, 0] == 203.0
    # Never seen: zeros everywhere.
    assert not seen[4].any() and X[4].abs().sum() == 0
    # Carried forward across two years.
    assert X[5, :, 0].tolist() == [105.0, 105.0, 105.0] and seen[5].tolist() == [True, False, False]


def test_dense_history_rejects_mixed_vocabularies() -> None:
    bad = embeddings.YearEmbeddings(2018, torch.tensor([0]), torch.tensor([1]),
                                    torch.zeros(1, D, dtype=torch.float16), D, V + 1)
    with pytest.raises(ValueError, match="one tokenizer"):
        dense_history([year_emb(2017, [0], 1.0), bad])


@pytest.fixture
def feature_dirs(tmp_path):
    rng = np.random.default_rng(0)
    counts = {}
    for year in (2016, 2017, 2018, 2019):
        counts[year] = rng.integers(0, 3, V)   # about a third unseen
        frequencies.write_year(tmp_path / "freq" / f"{year}.parquet", year, counts[year])
        ids = np.sort(rng.choice(V, 6, replace=False))
        embeddings.write_year(tmp_path / "emb" / f"{year}.safetensors", year, ids, np.ones(6),
                              rng.normal(size=(6, D)), encoder="test", layer=-1, vocab_size=V)
    return tmp_path / "freq", tmp_path / "emb", counts


def test_load_history_years_oldest_first(feature_dirs) -> None:
    freq_dir, emb_dir, counts = feature_dirs
    h = load_history(2019, 2, freq_dir, emb_dir, kinds={"frequencies", "embeddings"})
    assert h.years == (2017, 2018) and h.window == 2 and h.vocab_size == V
    assert h.log_freq.dtype == torch.float32 and h.log_freq.shape == (V, 2)
    for j, year in enumerate((2017, 2018)):
        expected = frequencies.log_frequencies(counts[year])
        np.testing.assert_allclose(h.log_freq[:, j].numpy(), expected, rtol=1e-6)
    X, seen = dense_history([embeddings.read_year(emb_dir / f"{y}.safetensors") for y in (2017, 2018)])
    assert torch.equal(h.emb, X) and torch.equal(h.emb_seen, seen)
    assert h.emb.shape == (V, 2, D)
    # observed = occurs in at least one history year (by count or by embedding).
    expected = torch.as_tensor((counts[2017] > 0) | (counts[2018] > 0)) | seen.any(1)
    assert torch.equal(h.observed, expected)


def test_load_history_frequencies_only(feature_dirs) -> None:
    freq_dir, _, _ = feature_dirs
    h = load_history(2019, 3, freq_dir, None, kinds={"frequencies"})
    assert h.years == (2016, 2017, 2018) and h.emb is None and h.emb_seen is None


def test_missing_year_names_the_year_and_stage(feature_dirs) -> None:
    freq_dir, emb_dir, _ = feature_dirs
    with pytest.raises(FileNotFoundError, match=r"frequencies of year 2015.*dvc repro frequencies@2015"):
        load_history(2017, 2, freq_dir, emb_dir)
    (emb_dir / "2018.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"embeddings@2018"):
        load_history(2019, 2, freq_dir, emb_dir, kinds={"embeddings"})


def test_unknown_kind_is_rejected(feature_dirs) -> None:
    freq_dir, emb_dir, _ = feature_dirs
    with pytest.raises(ValueError, match="unknown history kinds"):
        load_history(2019, 2, freq_dir, emb_dir, kinds={"frequency"})
