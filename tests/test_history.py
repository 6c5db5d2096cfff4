"""History loading from real per-period feature files (identities checked, missing periods named,
half-year and quarter labels across year boundaries), and the unseen-token rule of dense_history."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline.features import embeddings

from pipeline.features import frequencies
from pipeline.infra.errors import UserError
from pipeline.features.history import dense_history, load_history
from pipeline.infra.identity import tokenizer_identity
from pipeline.features.tokenizer import train_scratch_tokenizer

V, D = 10, 4


def year_emb(year: int, ids: list[int], fill: float) -> embeddings.PeriodEmbeddings:
    vectors = torch.full((len(ids), D), fill, dtype=torch.float16) + torch.tensor(ids).unsqueeze(1)
    return embeddings.PeriodEmbeddings(period=str(year), token_ids=torch.tensor(ids, dtype=torch.int64),
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
    bad = embeddings.PeriodEmbeddings("2018", torch.tensor([0]), torch.tensor([1]),
                                    torch.zeros(1, D, dtype=torch.float16), D, V + 1)
    with pytest.raises(ValueError, match="one tokenizer"):
        dense_history([year_emb(2017, [0], 1.0), bad])


@pytest.fixture
def feature_dirs(tmp_path):
    rng = np.random.default_rng(0)
    counts = {}
    for year in (2016, 2017, 2018, 2019):
        counts[year] = rng.integers(0, 3, V)   # about a third unseen
        frequencies.write_period(tmp_path / "freq" / f"{year}.parquet", year, counts[year])
        ids = np.sort(rng.choice(V, 6, replace=False))
        embeddings.write_period(tmp_path / "emb" / f"{year}.safetensors", year, ids, np.ones(6),
                              rng.normal(size=(6, D)), encoder="test", layer=-1, vocab_size=V)
    return tmp_path / "freq", tmp_path / "emb", counts


def test_load_history_years_oldest_first(feature_dirs) -> None:
    freq_dir, emb_dir, counts = feature_dirs
    h = load_history(2019, 2, freq_dir, emb_dir, kinds={"frequencies", "embeddings"})
    assert h.periods == ("2017", "2018") and h.window == 2 and h.vocab_size == V
    assert h.log_freq.dtype == torch.float32 and h.log_freq.shape == (V, 2)
    for j, year in enumerate((2017, 2018)):
        expected = frequencies.log_frequencies(counts[year])
        np.testing.assert_allclose(h.log_freq[:, j].numpy(), expected, rtol=1e-6)
    X, seen = dense_history([embeddings.read_period(emb_dir / f"{y}.safetensors") for y in (2017, 2018)])
    assert torch.equal(h.emb, X) and torch.equal(h.emb_seen, seen)
    assert h.emb.shape == (V, 2, D)
    # observed = occurs in at least one history year (by count or by embedding).
    expected = torch.as_tensor((counts[2017] > 0) | (counts[2018] > 0)) | seen.any(1)
    assert torch.equal(h.observed, expected)


def test_load_history_frequencies_only(feature_dirs) -> None:
    freq_dir, _, _ = feature_dirs
    h = load_history(2019, 3, freq_dir, None, kinds={"frequencies"})
    assert h.periods == ("2016", "2017", "2018") and h.emb is None and h.emb_seen is None


def test_missing_year_names_the_year_and_stage(feature_dirs) -> None:
    freq_dir, emb_dir, _ = feature_dirs
    with pytest.raises(UserError, match=r"frequencies of 2015 are missing.*history of 2017") as err:
        load_history(2017, 2, freq_dir, emb_dir)
    assert err.value.path == str(freq_dir / "2015.parquet")
    assert "`dvc repro frequencies@2015`" in err.value.fix and "make graph" in err.value.fix
    (emb_dir / "2018.safetensors").unlink()
    with pytest.raises(UserError, match=r"embeddings of 2018 are missing") as err:
        load_history(2019, 2, freq_dir, emb_dir, kinds={"embeddings"})
    assert "`dvc repro embeddings@2018`" in err.value.fix


def _tokenizer(folder, texts, vocab_size):
    train_scratch_tokenizer(texts, vocab_size=vocab_size).save_pretrained(folder)
    return folder


@pytest.fixture
def identified_dirs(tmp_path):
    """Features of 2016-2018 recorded as computed with tokenizer ``tok_a``."""
    tok_a = _tokenizer(tmp_path / "tok_a", ["the cat sat on the mat"] * 20, 280)
    ident = tokenizer_identity(tok_a)
    rng = np.random.default_rng(1)
    for year in (2016, 2017, 2018):
        frequencies.write_period(tmp_path / "freq" / f"{year}.parquet", year, rng.integers(0, 3, V),
                               tokenizer_id=ident, corpus_id=f"corpus{year}")
        embeddings.write_period(tmp_path / "emb" / f"{year}.safetensors", year, np.arange(3),
                              np.ones(3), rng.normal(size=(3, D)), encoder="test", layer=-1,
                              vocab_size=V, tokenizer_id=ident, corpus_id=f"corpus{year}")
    return tmp_path, tok_a, ident


def test_features_of_another_tokenizer_are_refused(identified_dirs) -> None:
    root, tok_a, ident = identified_dirs
    both = {"frequencies", "embeddings"}
    h = load_history(2019, 2, root / "freq", root / "emb", both, tokenizer=tok_a)
    assert h.periods == ("2017", "2018")
    tok_b = _tokenizer(root / "tok_b", ["a dog ran in the park"] * 20, 280)
    with pytest.raises(UserError, match="another tokenizer") as err:
        load_history(2019, 2, root / "freq", root / "emb", both, tokenizer=tok_b)
    assert err.value.path == str(root / "freq" / "2017.parquet")
    assert err.value.fix == "recompute it: `dvc repro frequencies@2017`"
    # the embeddings are checked too, once the frequencies match
    for year in (2017, 2018):
        frequencies.write_period(root / "freq" / f"{year}.parquet", year, np.ones(V, dtype=np.int64),
                               tokenizer_id=tokenizer_identity(tok_b), corpus_id=f"corpus{year}")
    with pytest.raises(UserError, match="another tokenizer") as err:
        load_history(2019, 2, root / "freq", root / "emb", both, tokenizer=tok_b)
    assert "`dvc repro embeddings@2017`" in err.value.fix


def test_files_of_mixed_tokenizers_are_refused_without_naming_one(identified_dirs) -> None:
    """Without ``tokenizer=`` the files are still checked against each other."""
    root, _, _ = identified_dirs
    frequencies.write_period(root / "freq" / "2018.parquet", 2018, np.ones(V, dtype=np.int64),
                           tokenizer_id="f" * 64, corpus_id="corpus2018")
    with pytest.raises(UserError, match="different tokenizers") as err:
        load_history(2019, 2, root / "freq", None)
    assert err.value.path == str(root / "freq" / "2018.parquet")
    assert "frequencies@2017 frequencies@2018" in err.value.fix
    frequencies.write_period(root / "freq" / "2018.parquet", 2018, np.ones(V, dtype=np.int64))
    with pytest.raises(UserError, match="not recorded"):
        load_history(2019, 2, root / "freq", None)


def test_frequencies_and_embeddings_of_other_abstracts_are_refused(identified_dirs) -> None:
    root, tok_a, ident = identified_dirs
    embeddings.write_period(root / "emb" / "2018.safetensors", 2018, np.arange(3), np.ones(3),
                          np.zeros((3, D)), encoder="test", layer=-1, vocab_size=V,
                          tokenizer_id=ident, corpus_id="another corpus")
    load_history(2019, 2, root / "freq", root / "emb", tokenizer=tok_a)  # embeddings not read
    with pytest.raises(UserError, match="different abstracts") as err:
        load_history(2019, 2, root / "freq", root / "emb", {"embeddings"}, tokenizer=tok_a)
    assert "frequencies@2018 embeddings@2018" in err.value.fix


def test_vocabulary_sizes_must_agree(feature_dirs) -> None:
    freq_dir, emb_dir, _ = feature_dirs
    frequencies.write_period(freq_dir / "2018.parquet", 2018, np.ones(V + 1, dtype=np.int64))
    with pytest.raises(UserError, match=r"vocabulary size.*2017.parquet: 10, 2018.parquet: 11"):
        load_history(2019, 2, freq_dir, emb_dir)


def test_a_file_holding_another_year_is_refused(feature_dirs) -> None:
    freq_dir, emb_dir, _ = feature_dirs
    (freq_dir / "2018.parquet").write_bytes((freq_dir / "2016.parquet").read_bytes())
    with pytest.raises(UserError, match="frequencies of 2016, not 2018"):
        load_history(2019, 2, freq_dir, emb_dir)


def test_unknown_kind_is_rejected(feature_dirs) -> None:
    freq_dir, emb_dir, _ = feature_dirs
    with pytest.raises(ValueError, match="unknown history kind"):
        load_history(2019, 2, freq_dir, emb_dir, kinds={"frequency"})


@pytest.mark.parametrize("target, labels", [("2020Q1", ("2019Q3", "2019Q4")),
                                            ("2020H1", ("2019H1", "2019H2")),
                                            ("2020-01", ("2019-11", "2019-12"))])
def test_history_of_sub_year_periods_crosses_the_year(tmp_path, target, labels) -> None:
    """Files named by label; the window counts periods of the target's kind."""
    for n, label in enumerate(labels):
        frequencies.write_period(tmp_path / f"{label}.parquet", label,
                                 np.full(V, n + 1, dtype=np.int64))
    h = load_history(target, 2, tmp_path, None)
    assert h.period == target and h.periods == labels
    assert [frequencies.read_period(tmp_path / f"{p}.parquet").period for p in labels] \
        == list(labels)
    with pytest.raises(UserError, match=rf"frequencies of {labels[0]} are missing") as err:
        (tmp_path / f"{labels[0]}.parquet").unlink()
        load_history(target, 2, tmp_path, None)
    assert f"`dvc repro frequencies@{labels[0]}`" in err.value.fix


def test_a_file_from_before_periods_reads_its_year_as_the_label(tmp_path) -> None:
    """Files written when the metadata said ``year`` (an int) still read, as the year's label."""
    import pyarrow.parquet as pq

    path = tmp_path / "2018.parquet"
    frequencies.write_period(path, "2018", np.ones(V, dtype=np.int64))
    table = pq.read_table(path)
    meta = {k: v for k, v in table.schema.metadata.items() if k != b"period"}
    pq.write_table(table.replace_schema_metadata({**meta, b"year": b"2018"}), path)
    assert frequencies.read_period(path).period == "2018"
