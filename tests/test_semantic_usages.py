"""The contextual method on a targets file's words: only the sentences holding a target are
encoded (counted at the real packaged MiniLM encoder), at most ``max_usages`` per target and
period, the same sample whatever the input order, and without a cap exactly the whole
computation over every sentence holding a target."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from pipeline.models.hub import MINILM, load_encoder, load_tokenizer_for
from pipeline.semantic import word_vectors
from pipeline.semantic.methods import contextual
from pipeline.semantic.methods.contextual import occurrence_change
from pipeline.semantic.methods.interface import ChangeInputs, EncoderSettings
from pipeline.semantic.usages import capped_usages, group_usages
from pipeline.semantic.word_vectors import occurrence_sums

CPU = torch.device("cpu")
TARGETS = ["model", "parser"]


def period(year: int, n: int) -> list[str]:
    """``n`` abstracts of one period: target sentences among sentences without a target."""
    return [f"The model {i} of {year} learns. Nothing here {i}. A parser {i} and a model fail."
            if i % 3 else f"Only filler {i} in {year}. Still nothing." for i in range(n)]


def test_the_cap_holds_per_target_and_period_and_ignores_the_input_order():
    texts = period(2017, 30)
    sentences, counts_for = capped_usages(texts, TARGETS, 4, seed=0)
    for word in TARGETS:
        assert sum(word in c for c in counts_for) == 4        # 40 and 20 hold them, 4 drawn
    assert all(c and all(w in s.lower() for w in c) for s, c in zip(sentences, counts_for))
    shuffled = random.Random(1).sample(texts, len(texts))
    assert capped_usages(shuffled, TARGETS, 4, seed=0) == (sentences, counts_for)
    assert capped_usages(texts, TARGETS, 4, seed=1) != (sentences, counts_for)
    # a larger cap keeps what a smaller one kept
    assert set(sentences) <= set(capped_usages(texts, TARGETS, 9, seed=0)[0])
    # per period: a group of two periods draws up to the cap from each
    both = group_usages([texts, period(2018, 30)], TARGETS, 4, seed=0)[1]
    assert [sum(w in c for c in both) for w in TARGETS] == [8, 8]
    # no cap: every sentence holding a target, in text order, counting every target it holds
    every, held = capped_usages(texts, TARGETS, None, seed=0)
    assert len(every) == 40 and every[0] == "The model 1 of 2017 learns."
    assert held[1] == {"model", "parser"}
    with pytest.raises(ValueError, match=">= 1"):
        capped_usages(texts, TARGETS, 0, seed=0)


def _inputs(first, last, cap):
    return ChangeInputs(("2017",), ("2018",), ([first], [last]), MINILM, seed=0,
                        encoding=EncoderSettings(-1, 64, 8, CPU), max_usages=cap)


@pytest.mark.slow
def test_only_target_sentences_are_encoded_capped_and_the_uncapped_result_is_the_whole(
        monkeypatch):
    encoded: list[int] = []
    real = word_vectors.encoder_states

    def counting(encoder, batch, layer, device):
        encoded.append(int(batch.input_ids.shape[0]))
        return real(encoder, batch, layer, device)

    monkeypatch.setattr(word_vectors, "encoder_states", counting)
    first, last = period(2017, 12), period(2018, 12)
    # 12 abstracts of 2-3 sentences per group (32); 16 of them hold a target
    whole = contextual.score(_inputs(first, last, None), TARGETS)
    assert sum(encoded) == 32
    assert whole.first_counts.tolist() == [16, 8] and whole.last_counts.tolist() == [16, 8]

    # without a cap: exactly the computation over every sentence holding a target
    encoder, tok = load_encoder(MINILM).eval(), load_tokenizer_for(MINILM)
    groups = [occurrence_sums(encoder, tok, texts, TARGETS, -1, 64, 8, CPU)[:2]
              for texts in (first, last)]
    np.testing.assert_array_equal(whole.scores, occurrence_change(*groups))

    encoded.clear()
    capped = contextual.score(_inputs(first, last, 3), TARGETS)
    # 3 sentences per target and period, a sentence may serve both targets
    assert 6 <= sum(encoded) <= 12
    assert capped.first_counts.tolist() == [3, 3] == capped.last_counts.tolist()
    # the same sample and the same bytes whatever order the abstracts come in
    rng = random.Random(0)
    again = contextual.score(_inputs(rng.sample(first, 12), rng.sample(last, 12), 3), TARGETS)
    np.testing.assert_array_equal(again.scores, capped.scores)
    assert again.first_counts.tolist() == capped.first_counts.tolist()
