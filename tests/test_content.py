"""Content filters of CPL (LM tokens) and CM (words) with the paper's real stopword list."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.evaluation.content import (content_token_mask, content_words, is_content_token, load_stopwords,
                              word_tokenize)
from pipeline.features.tokenizer import train_scratch_tokenizer

STOPWORDS = Path(__file__).resolve().parents[1] / "data" / "reference" / "stopwords.txt"


@pytest.fixture(scope="module")
def stopwords() -> frozenset[str]:
    return load_stopwords(STOPWORDS)


def test_stopword_list_loads(stopwords):
    assert len(stopwords) == 1370            # 1,372 lines; "2008" and "signiﬁcant" appear twice
    assert {"the", "propose", "results"} <= stopwords
    assert "translation" not in stopwords


def test_stopword_list_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\tthe\t10\nthe only\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: expected 'rank<TAB>word<TAB>count'"):
        load_stopwords(bad)
    with pytest.raises(FileNotFoundError, match="stopwords"):
        load_stopwords(tmp_path / "missing-stopwords.txt")


@pytest.mark.parametrize("text, expected", [
    (" translation", True),      # leading space (decoded GPT-2 token)
    ("Ġtranslation", True),      # GPT-2's space marker
    ("▁translation", True),      # SentencePiece's space marker
    (" Translation", True),      # capitalised: lowercased before the checks
    ("TRANSLATION", True),
    ("transl", True),            # a subword piece longer than 4 characters counts
    (" trans", True),
    ("ation", True),             # 5-character piece
    (" tion", False),            # 4 characters: not longer than 4
    ("Ġmodel", True),            # 5 characters, not a stopword
    (" models", False),          # stopword in the paper's list
    (" Results", False),         # stopword, capitalised
    ("Ġthe", False),
    ("     ", False),            # whitespace only
    ("<|endoftext|>", True),     # the text filter alone; special tokens are excluded by the mask
])
def test_is_content_token(stopwords, text, expected):
    assert is_content_token(text, stopwords) is expected


def test_content_token_mask_on_a_real_bpe(stopwords):
    texts = ["Neural machine translation improves multilingual summarization systems."] * 50
    tok = train_scratch_tokenizer(texts, vocab_size=300)
    mask = content_token_mask(tok, stopwords)
    assert mask.shape == (len(tok),) and mask.dtype == bool
    assert not mask[tok.eos_token_id]
    pieces = {tok.decode([i]): bool(m) for i, m in enumerate(mask)}
    assert pieces["Neural"] is True          # capitalised word
    assert pieces["slation"] is True         # subword piece longer than 4 characters
    assert pieces[" syst"] is False          # 4 characters after the space
    assert all(not flag for piece, flag in pieces.items() if len(piece.strip()) <= 4)


def test_word_tokenize_splits_sentences_like_nltk():
    assert word_tokenize("We propose a model. It works, doesn't it?") == [
        "We", "propose", "a", "model", ".", "It", "works", ",", "does", "n't", "it", "?"]


def test_content_words(stopwords):
    text = "We propose BERT-based Transformers. They outperform baselines on SQuAD (92.3%)."
    assert content_words(text, stopwords) == ["bert-based", "transformers", "squad"]
    assert content_words("", stopwords) == []
