"""The LM tokenizer: scratch byte-level BPE, the EOS convention, encode_abstracts, loading."""

from __future__ import annotations

import pytest

from pipeline.models.hub import MINILM, load_tokenizer_for
from pipeline.features.tokenizer import (END_OF_TEXT, encode_abstracts, load_tokenizer, plain_backend,
                                tokenize_texts, train_scratch_tokenizer)

TEXTS = ["We propose a neural model for machine translation.",
         "The neural model improves translation quality on three benchmarks.",
         "We release our code and a new benchmark for parsing."] * 20


@pytest.fixture(scope="module")
def tok():
    return train_scratch_tokenizer(TEXTS, vocab_size=300)


def test_scratch_tokenizer_special_tokens(tok) -> None:
    eot = tok.convert_tokens_to_ids(END_OF_TEXT)
    assert eot == 0
    assert tok.eos_token_id == tok.bos_token_id == tok.pad_token_id == eot
    assert tok.is_fast
    # Frequent words of the training text became single tokens (with the GPT-2 space marker).
    assert len(tokenize_texts(tok, [" neural"])[0]) == 1
    assert 257 < len(tok) <= 300


def test_scratch_tokenizer_is_byte_level(tok) -> None:
    # Text never seen in training (another script, accents) still round-trips: no unknown token.
    text = "Übersetzung 机器翻译 — naïve"
    ids = tokenize_texts(tok, [text])[0]
    assert tok.eos_token_id not in ids
    assert tok.decode(ids) == text


def test_scratch_tokenizer_is_deterministic() -> None:
    a = train_scratch_tokenizer(TEXTS, vocab_size=300)
    b = train_scratch_tokenizer(TEXTS, vocab_size=300)
    assert a.backend_tokenizer.to_str() == b.backend_tokenizer.to_str()


def test_scratch_tokenizer_rejects_tiny_vocab() -> None:
    with pytest.raises(ValueError, match="at least 257"):
        train_scratch_tokenizer(TEXTS, vocab_size=100)


def test_encode_abstracts_wraps_in_eos_and_truncates(tok) -> None:
    body = tokenize_texts(tok, [TEXTS[0]])[0]
    eos = tok.eos_token_id
    [full] = encode_abstracts(tok, [TEXTS[0]], max_length=1000)
    assert full == [eos] + body + [eos]
    [cut] = encode_abstracts(tok, [TEXTS[0]], max_length=5)
    assert cut == ([eos] + body)[:5]
    with pytest.raises(ValueError, match="max_length"):
        encode_abstracts(tok, [TEXTS[0]], max_length=1)


def test_save_and_load_round_trip(tok, tmp_path) -> None:
    tok.save_pretrained(tmp_path / "tok")
    loaded = load_tokenizer(tmp_path / "tok")
    assert len(loaded) == len(tok)
    assert loaded.eos_token_id == loaded.pad_token_id == 0
    assert encode_abstracts(loaded, TEXTS[:3], 64) == encode_abstracts(tok, TEXTS[:3], 64)
    enc = loaded(TEXTS[0], return_offsets_mapping=True)
    at = enc["input_ids"].index(loaded.convert_tokens_to_ids("Ġneural"))
    start, end = enc["offset_mapping"][at]
    assert TEXTS[0][start:end] == "neural"  # trimmed offsets: the leading space is not included


def test_load_tokenizer_missing_folder(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="dvc repro tokenizer"):
        load_tokenizer(tmp_path / "nope")


def test_plain_backend_drops_saved_truncation_and_padding() -> None:
    # all-MiniLM's tokenizer.json pads and truncates to 128 tokens; features need whole texts.
    enc = load_tokenizer_for(MINILM)
    long_text = "word " * 300
    assert len(plain_backend(enc).encode(long_text, add_special_tokens=False).ids) == 300
    assert len(tokenize_texts(enc, ["short text"])[0]) == 2


# --- the tokenizer stage: the first stage that names lm.base --------------------------------

@pytest.fixture
def train_split(tmp_path, monkeypatch):
    import pandas as pd

    from pipeline.infra.io import write_parquet

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf-cache"))
    monkeypatch.delenv("FUTURELM_HUB", raising=False)
    path = tmp_path / "train.parquet"
    write_parquet(pd.DataFrame({"key": ["a"], "year": [2019], "title": ["t"],
                                "abstract": [TEXTS[0]]}), path)
    return path


def run_tokenizer_stage(base, train, out, vocab_size=300):
    from stages import tokenizer as stage

    stage.main(["--base", base, "--vocab-size", str(vocab_size), "--train", str(train),
                "--out", str(out)])


@pytest.mark.parametrize("base, expected", [
    ("gpt2", "GPT-2's weights ('gpt2') are not available offline"),
    ("gpt2-medium", "GPT-2's weights ('gpt2-medium') are not available offline"),
    ("nonexistent/model", "cannot find the model 'nonexistent/model'. Tried:"),
    ("./no/such/folder", "local folder './no/such/folder': does not exist"),
    (MINILM, "not a causal language model"),
])
def test_stage_stops_on_a_base_lm_training_could_not_load(base, expected, train_split, tmp_path,
                                                          capsys) -> None:
    with pytest.raises(SystemExit) as done:
        run_tokenizer_stage(base, train_split, tmp_path / "tok")
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and "fix:" in err and "Traceback" not in err
    assert not (tmp_path / "tok").exists()


def test_stage_reports_a_too_small_vocabulary(train_split, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        run_tokenizer_stage("scratch", train_split, tmp_path / "tok", vocab_size=100)
    assert done.value.code == 2 and "tokenizer.vocab_size" in capsys.readouterr().err


def test_stage_output_folder_that_cannot_be_written(train_split, tmp_path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(SystemExit) as done:
        run_tokenizer_stage("scratch", train_split, blocker / "tok")
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "error (stages.tokenizer)" in err and str(blocker) in err
