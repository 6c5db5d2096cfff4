"""Generation with a real tiny future LM: seeds, determinism, the period's bias at every step."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from pipeline.models.future_lm import make_future_lm
from pipeline.models.generation import EmptyGenerationError, GenerationSettings, generate_abstracts
from pipeline.features.history import PeriodHistory
from pipeline.features.tokenizer import train_scratch_tokenizer

TEXTS = ["Neural machine translation with attention improves translation quality.",
         "We study multilingual summarization and evaluation of summaries."]
SETTINGS = GenerationSettings(n=3, max_new_tokens=10)


@pytest.fixture(scope="module")
def tok():
    return train_scratch_tokenizer(TEXTS * 20, vocab_size=300)


def frequency_model(tok):
    torch.manual_seed(0)
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=1, n_head=2, n_embd=16,
                                    n_positions=64, bos_token_id=0, eos_token_id=0))
    model = make_future_lm(lm, "frequency-nolstm", window=2).eval()
    with torch.no_grad():
        model.bias.a.fill_(1.0)
    return model


def peaked_history(tok, favourite: list[int]) -> PeriodHistory:
    """A history in which the previous period used (almost) only the ``favourite`` tokens."""
    log_f = torch.full((len(tok),), -1e4)
    log_f[favourite] = 0.0
    return PeriodHistory(period="2021", periods=("2019", "2020"),
                       log_freq=torch.stack([torch.zeros(len(tok)), log_f], dim=1))


def test_generates_n_seeded_abstracts_deterministically(tok):
    model = frequency_model(tok)
    history = peaked_history(tok, list(range(1, len(tok))))   # every token but EOS equally likely
    first = generate_abstracts(model, tok, history, SETTINGS)
    assert first["index"].tolist() == [0, 1, 2] and first["seed"].tolist() == [0, 0, 0]   # one chunk
    assert (first["n_new_tokens"] <= SETTINGS.max_new_tokens).all()
    assert first["text"].str.len().gt(0).all()
    assert first["text"].nunique() == 3                        # rows of one batch: different samples
    again = generate_abstracts(model, tok, history, SETTINGS)
    assert first.equals(again)


def test_abstracts_are_generated_in_seeded_chunks(tok, monkeypatch):
    """CHUNK abstracts per generate() call, each chunk seeded with its first index: n=3 in chunks
    of 2 gives seeds 0, 0, 2, and the first chunk is the same batch as n=2 in one chunk."""
    from pipeline.models import generation

    model = frequency_model(tok)
    history = peaked_history(tok, list(range(1, len(tok))))
    monkeypatch.setattr(generation, "CHUNK", 2)
    chunked = generate_abstracts(model, tok, history, SETTINGS)
    assert chunked["index"].tolist() == [0, 1, 2] and chunked["seed"].tolist() == [0, 0, 2]
    two = generate_abstracts(model, tok, history, GenerationSettings(n=2, max_new_tokens=10))
    assert chunked.iloc[:2].reset_index(drop=True).equals(two)


def test_the_target_periods_bias_is_applied_at_every_step(tok):
    model = frequency_model(tok)
    word = tok.convert_tokens_to_ids("Ġtranslation")
    other = tok.convert_tokens_to_ids("Ġsummari")
    assert word != tok.unk_token_id and other != tok.unk_token_id
    gens = generate_abstracts(model, tok, peaked_history(tok, [word, other]), SETTINGS)
    # Step after step only the two favoured words can be produced, until no-repeat-bigram has
    # banned all four bigrams of them (after at least 4 tokens); an unbiased model gives bytes.
    for text in gens["text"]:
        assert set(text.split()[:4]) <= {"translation", "summari"}, text
    plain = generate_abstracts(model, tok, peaked_history(tok, list(range(1, len(tok)))), SETTINGS)
    assert not any(set(t.split()[:4]) <= {"translation", "summari"} for t in plain["text"])


def test_empty_generation_is_a_clear_error(tok):
    model = frequency_model(tok)
    space = tok.convert_tokens_to_ids("Ġ")
    history = peaked_history(tok, [tok.eos_token_id, space])   # a space, then end of text
    with pytest.raises(EmptyGenerationError, match="abstract 0 \\(seed 0\\).*empty"):
        generate_abstracts(model, tok, history, SETTINGS)


def test_settings_are_validated_and_serialised():
    assert json.loads(SETTINGS.to_json())["top_p"] == 0.92
    with pytest.raises(ValueError, match="n \\(abstracts to generate\\)"):
        GenerationSettings(n=0)
    with pytest.raises(ValueError, match="min_new_tokens"):
        GenerationSettings(min_new_tokens=0)
