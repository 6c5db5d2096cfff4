"""CLIs of the feature stages (tokenizer, frequencies, frequency_plot, embeddings) on a small
corpus written in the documented schema."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from hf_cache import tiny_gpt2_in_hf_cache
from pipeline.features import embeddings as em
from pipeline.features import frequencies as fq
from pipeline.infra.errors import UserError
from pipeline.features.history import load_history
from pipeline.infra.identity import corpus_identity, tokenizer_identity
from pipeline.infra.io import write_parquet
from pipeline.infra.numerics import THREADS
from pipeline.models.hub import MINILM
from pipeline.features.tokenizer import load_tokenizer
from stages import embeddings as embeddings_stage
from stages import frequencies as frequencies_stage
from stages import frequency_plot as plot_stage
from stages import tokenizer as tokenizer_stage



WORDS = ("we propose a neural model with transformer layers and contextual embedding of words "
         "for translation parsing and tagging; results improve by 3.5% over the baseline").split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """abstracts.parquet (2016-2019) and train.parquet (2017-2018) in the data-stage schema."""
    root = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    rows = []
    for year in (2016, 2017, 2018, 2019):
        for i in range(12):
            words = rng.choice(WORDS, size=rng.integers(15, 40))
            if year == 2019:
                words = np.append(words, ["zyxwvut"] * 3)  # a word only outside the training years
            rows.append({"key": f"p{year}-{i}", "entry_type": "inproceedings", "year": year,
                         "date": f"{year}-{i + 1:02d}", "month": i + 1, "title": f"Paper {i}", "abstract": " ".join(words) + ".",
                         "venue": "ACL", "url": None, "doi": None, "language": None, "authors": "Doe, J"})
    papers = pd.DataFrame(rows).astype({"year": "int32"})
    write_parquet(papers, root / "abstracts.parquet")
    train = papers[papers.year.isin([2017, 2018])].assign(period=lambda f: f.year.astype(str))
    train = train[["key", "period", "title", "abstract"]]
    write_parquet(train, root / "train.parquet")
    return root, papers


@pytest.fixture(scope="module")
def tokenizer_dir(corpus):
    root, _ = corpus
    tokenizer_stage.main(["--base", "scratch", "--vocab-size", "500", "--train",
                          str(root / "train.parquet"), "--out", str(root / "tokenizer")])
    return root / "tokenizer"


@pytest.mark.parametrize("module", [tokenizer_stage, frequencies_stage, plot_stage, embeddings_stage])
def test_help_explains_every_option(module, capsys) -> None:
    parser = module.build_parser()
    for action in parser._actions:
        assert action.help, f"{module.__name__}: option {action.option_strings} has no help"
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for action in parser._actions:
        assert action.option_strings[-1] in text


def test_tokenizer_stage_trains_on_training_years_only(tokenizer_dir) -> None:
    info = json.loads((tokenizer_dir / "futurelm.json").read_text())
    tok = load_tokenizer(tokenizer_dir)
    assert info == {"base": "scratch", "vocab_size": len(tok)}
    assert tok.convert_tokens_to_ids("Ġneural") != tok.unk_token_id
    # "zyxwvut" only occurs in 2019, outside the training split: it is not in the vocabulary
    assert "Ġzyxwvut" not in tok.get_vocab()


def test_tokenizer_stage_with_a_pretrained_base(tmp_path, corpus, monkeypatch) -> None:
    root, _ = corpus
    # GPT-2's weights are checked by the tokenizer stage: a tiny random GPT-2 in a tmp HF cache.
    monkeypatch.setenv("HF_HUB_CACHE", str(tiny_gpt2_in_hf_cache(tmp_path / "hf-cache")))
    tokenizer_stage.main(["--base", "gpt2", "--vocab-size", "0", "--train",
                          str(root / "train.parquet"), "--out", str(tmp_path / "tok")])
    tok = load_tokenizer(tmp_path / "tok")
    assert len(tok) == 50257 and tok.pad_token_id == tok.eos_token_id == 50256
    assert json.loads((tmp_path / "tok" / "futurelm.json").read_text())["vocab_size"] == 50257


def test_frequencies_stage_counts_one_year(tmp_path, corpus, tokenizer_dir) -> None:
    root, papers = corpus
    out = tmp_path / "2018.parquet"
    frequencies_stage.main(["--period", "2018", "--abstracts", str(root / "abstracts.parquet"),
                            "--tokenizer", str(tokenizer_dir), "--out", str(out)])
    year = fq.read_period(out)
    tok = load_tokenizer(tokenizer_dir)
    expected = fq.count_tokens(tok, papers[papers.year == 2018]["abstract"].tolist())
    assert year.period == "2018" and year.vocab_size == len(tok)
    np.testing.assert_array_equal(year.counts, expected)


@pytest.mark.parametrize("label, months", [("2018H2", range(7, 13)), ("2018Q1", range(1, 4)),
                                           ("2018-05", [5])])
def test_frequencies_stage_counts_one_sub_year_period(tmp_path, corpus, tokenizer_dir, label,
                                                      months) -> None:
    root, papers = corpus
    out = tmp_path / f"{label}.parquet"
    frequencies_stage.main(["--period", label, "--abstracts", str(root / "abstracts.parquet"),
                            "--tokenizer", str(tokenizer_dir), "--out", str(out)])
    written = fq.read_period(out)
    texts = papers[(papers.year == 2018) & papers.month.isin(list(months))]["abstract"].tolist()
    assert written.period == label and len(texts) == len(months)
    np.testing.assert_array_equal(written.counts,
                                  fq.count_tokens(load_tokenizer(tokenizer_dir), texts))
    assert written.corpus_id == corpus_identity(texts)


def test_frequencies_stage_missing_year_is_a_clear_error(tmp_path, corpus, tokenizer_dir,
                                                        capsys) -> None:
    root, _ = corpus
    with pytest.raises(SystemExit) as done:
        frequencies_stage.main(["--period", "2005", "--abstracts", str(root / "abstracts.parquet"),
                                "--tokenizer", str(tokenizer_dir), "--out", str(tmp_path / "x.parquet")])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "no documents in 2005" in err and "covers 2005" in err
    assert "Traceback" not in err
    assert not (tmp_path / "x.parquet").exists()


def test_frequency_plot_stage(tmp_path, corpus, tokenizer_dir) -> None:
    root, _ = corpus
    for year in (2017, 2018):
        frequencies_stage.main(["--period", str(year), "--abstracts", str(root / "abstracts.parquet"),
                                "--tokenizer", str(tokenizer_dir),
                                "--out", str(tmp_path / "freq" / f"{year}.parquet")])
    plot_stage.main(["--frequencies", str(tmp_path / "freq"), "--tokenizer", str(tokenizer_dir),
                     "--plot_words", "neural", "zyxwvut", "--out", str(tmp_path / "wf.csv"),
                     "--png", str(tmp_path / "wf.png")])
    table = pd.read_csv(tmp_path / "wf.csv")
    assert list(table.columns) == ["period", "word", "log_freq", "match"]
    assert sorted(table.period.unique()) == [2017, 2018] and set(table.word) == {"neural", "zyxwvut"}
    neural = table[table.word == "neural"].iloc[0]
    assert neural.match.startswith("tokens")
    assert table[table.word == "zyxwvut"].match.str.startswith("first token").all()
    year = fq.read_period(tmp_path / "freq" / f"{neural.period}.parquet")
    match = fq.match_word(load_tokenizer(tokenizer_dir), "neural")
    assert neural.log_freq == pytest.approx(fq.word_log_freq(year, match), abs=1e-6)
    assert (tmp_path / "wf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_embeddings_stage_writes_one_year(tmp_path, corpus, tokenizer_dir) -> None:
    root, papers = corpus
    out = tmp_path / "2017.safetensors"
    embeddings_stage.main(["--period", "2017", "--abstracts", str(root / "abstracts.parquet"),
                           "--tokenizer", str(tokenizer_dir), "--encoder", MINILM, "--layer", "-1",
                           "--batch-size", "8", "--max-length", "64", "--stride", "16",
                           "--dtype", "auto", "--device", "cpu", "--out", str(out)])
    year = em.read_period(out)
    tok = load_tokenizer(tokenizer_dir)
    assert (year.period, year.encoder, year.layer) == ("2017", MINILM, -1)
    assert (year.dim, year.vocab_size) == (384, len(tok))
    assert year.vectors.dtype == torch.float16 and year.vectors.shape == (len(year.token_ids), 384)
    counts = fq.count_tokens(tok, papers[papers.year == 2017]["abstract"].tolist())
    assert set(year.token_ids.tolist()) <= set(np.flatnonzero(counts).tolist())
    assert tok.convert_tokens_to_ids("Ġneural") in year.token_ids.tolist()


def test_embeddings_stage_refuses_adaptation_without_mlm_head(tmp_path, corpus, tokenizer_dir,
                                                              capsys) -> None:
    root, _ = corpus
    with pytest.raises(SystemExit) as done:
        embeddings_stage.main(["--period", "2017", "--abstracts", str(root / "abstracts.parquet"),
                               "--tokenizer", str(tokenizer_dir), "--encoder", MINILM,
                               "--adapt-epochs", "1", "--out", str(tmp_path / "x.safetensors")])
    assert done.value.code == 2
    assert "adapt_epochs: 0" in capsys.readouterr().err
    assert not (tmp_path / "x.safetensors").exists()


def test_features_from_a_retrained_tokenizer_are_refused(tmp_path, corpus, capsys) -> None:
    """Train a tokenizer, compute frequencies, retrain the tokenizer differently
    (as a change upstream of it does): the old frequency file is refused, naming it and the
    stage that recomputes it, by the plot stage and by the history loader."""
    root, papers = corpus
    tok, freq = tmp_path / "tokenizer", tmp_path / "freq"

    def tokenizer(vocab_size: int) -> None:
        tokenizer_stage.main(["--base", "scratch", "--vocab-size", str(vocab_size), "--train",
                              str(root / "train.parquet"), "--out", str(tok)])

    def frequencies(year: int) -> None:
        frequencies_stage.main(["--period", str(year), "--abstracts", str(root / "abstracts.parquet"),
                                "--tokenizer", str(tok), "--out", str(freq / f"{year}.parquet")])

    def plot() -> None:
        plot_stage.main(["--frequencies", str(freq / "2017.parquet"), str(freq / "2018.parquet"),
                         "--tokenizer", str(tok), "--plot_words", "neural",
                         "--out", str(tmp_path / "wf.csv")])

    tokenizer(500)
    for year in (2017, 2018):
        frequencies(year)
    written = fq.read_period(freq / "2017.parquet")
    texts = papers[papers.year == 2017]["abstract"].tolist()
    assert written.tokenizer_id == tokenizer_identity(tok)
    assert written.corpus_id == corpus_identity(texts)
    plot()
    assert load_history(2019, 2, freq, None, tokenizer=tok).periods == ("2017", "2018")

    tokenizer(280)  # retrained differently; the frequency files are left as they were
    assert tokenizer_identity(tok) != written.tokenizer_id
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        plot()
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "another tokenizer" in err and str(freq / "2017.parquet") in err
    assert "dvc repro frequencies@2017" in err and "Traceback" not in err
    with pytest.raises(UserError, match="another tokenizer") as refused:
        load_history(2019, 2, freq, None, tokenizer=tok)
    assert refused.value.fix == "recompute it: `dvc repro frequencies@2017`"

    frequencies(2017)  # what the fix says, year by year
    with pytest.raises(UserError, match="frequencies@2018"):
        load_history(2019, 2, freq, None, tokenizer=tok)
    frequencies(2018)
    (freq / "2016.parquet").write_text("left over from a removed year")
    plot()  # reads exactly the files it is given, never the leftover
    assert load_history(2019, 2, freq, None, tokenizer=tok).periods == ("2017", "2018")


def test_frequency_plot_names_a_missing_year(tmp_path, corpus, tokenizer_dir, capsys) -> None:
    root, _ = corpus
    frequencies_stage.main(["--period", "2017", "--abstracts", str(root / "abstracts.parquet"),
                            "--tokenizer", str(tokenizer_dir), "--out", str(tmp_path / "2017.parquet")])
    with pytest.raises(SystemExit) as done:
        plot_stage.main(["--frequencies", str(tmp_path / "2017.parquet"),
                         str(tmp_path / "2016.parquet"),
                         "--tokenizer", str(tokenizer_dir), "--plot_words", "neural",
                         "--out", str(tmp_path / "wf.csv")])
    assert done.value.code == 2
    assert "dvc repro frequencies@2016" in capsys.readouterr().err
    assert not (tmp_path / "wf.csv").exists()


def test_embeddings_stage_records_identities_and_uses_the_recorded_threads(
        tmp_path, corpus, tokenizer_dir, monkeypatch) -> None:
    """The thread count is part of the numerics: FUTURELM_THREADS no longer changes it."""
    root, papers = corpus
    monkeypatch.setenv("FUTURELM_THREADS", "1")
    out = tmp_path / "2018.safetensors"
    embeddings_stage.main(["--period", "2018", "--abstracts", str(root / "abstracts.parquet"),
                           "--tokenizer", str(tokenizer_dir), "--encoder", MINILM,
                           "--batch-size", "8", "--max-length", "64", "--stride", "16",
                           "--device", "cpu", "--out", str(out)])
    year = em.read_period(out, tokenizer_id=tokenizer_identity(tokenizer_dir))
    assert year.corpus_id == corpus_identity(papers[papers.year == 2018]["abstract"].tolist())
    assert torch.get_num_threads() == THREADS


@pytest.mark.parametrize("flags,message", [
    (["--max-length", "100000"], "embeddings.max_length"),
    (["--stride", "70", "--max-length", "64"], "embeddings.stride"),
    (["--layer", "9"], "embeddings.layer"),
    (["--dtype", "int8"], "embeddings.dtype"),
])
def test_embeddings_stage_bad_params_are_messages(tmp_path, corpus, tokenizer_dir, capsys,
                                                 flags, message) -> None:
    root, _ = corpus
    with pytest.raises(SystemExit) as done:
        embeddings_stage.main(["--period", "2017", "--abstracts", str(root / "abstracts.parquet"),
                               "--tokenizer", str(tokenizer_dir), "--encoder", MINILM,
                               "--device", "cpu", "--out", str(tmp_path / "x.safetensors"), *flags])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.safetensors").exists()


def test_embeddings_stage_checks_the_whole_encoder_first(tmp_path, corpus, tokenizer_dir,
                                                        capsys) -> None:
    """A truncated encoder weight file stops the stage with the file named, before any work."""
    from transformers import BertConfig, BertModel

    root, _ = corpus
    folder = tmp_path / "enc"
    BertModel(BertConfig(vocab_size=64, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                         intermediate_size=16)).save_pretrained(folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(SystemExit) as done:
        embeddings_stage.main(["--period", "2017", "--abstracts", str(root / "abstracts.parquet"),
                               "--tokenizer", str(tokenizer_dir), "--encoder", str(folder),
                               "--device", "cpu", "--out", str(tmp_path / "x.safetensors")])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert str(weights) in err and "Traceback" not in err


def test_frequency_plot_orders_periods_in_time(tmp_path, corpus, tokenizer_dir) -> None:
    root, _ = corpus
    labels = ["2018-11", "2019-02", "2018-12", "2019-01"]
    for label in labels:
        frequencies_stage.main(["--period", label, "--abstracts", str(root / "abstracts.parquet"),
                                "--tokenizer", str(tokenizer_dir),
                                "--out", str(tmp_path / "freq" / f"{label}.parquet")])
    (tmp_path / "freq" / "notes.parquet").write_text("not a period file: ignored")
    plot_stage.main(["--frequencies", str(tmp_path / "freq"), "--tokenizer", str(tokenizer_dir),
                     "--plot_words", "neural", "--out", str(tmp_path / "wf.csv"),
                     "--png", str(tmp_path / "wf.png")])
    table = pd.read_csv(tmp_path / "wf.csv", dtype={"period": str})
    assert table["period"].tolist() == ["2018-11", "2018-12", "2019-01", "2019-02"]
    assert (tmp_path / "wf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
