"""Variant ``temperature-sigmoid``: paper 002's temperature with a per-word sigmoid
σ centred at τ = 1, added through the variant seam (its module alone)."""

from __future__ import annotations

import torch

from pipeline.models.future_lm import make_future_lm, scratch_gpt2
from pipeline.models.registry import lookup
from pipeline.variants.temperature_sigmoid import SigmoidTemperatureSettings


def test_it_starts_as_the_baseline_with_every_tau_near_one() -> None:
    torch.manual_seed(0)
    lm = scratch_gpt2(64, 0, n_layer=1, n_head=2, n_embd=16, n_positions=32, dropout=0.0).eval()
    ids = torch.randint(1, 64, (2, 8))
    with torch.no_grad():
        plain = lm(ids).logits
        model = make_future_lm(lm, "temperature-sigmoid", 2).eval()
        hidden = lm.transformer(ids).last_hidden_state
        tau = model.bias.temperature(model.word_terms(None), hidden)
        biased = model(ids).logits
    assert model.bias.tau.bounds == (0.5, 1.5)
    assert 0.98 < float(tau.min()) <= float(tau.max()) < 1.02   # W_tau2 starts small: mu ~ 0
    torch.testing.assert_close(biased, plain / tau)
    assert float((biased - plain).abs().max()) < 0.02 * float(plain.abs().max())


def test_the_paper_softmax_variant_keeps_its_own_defaults() -> None:
    assert lookup("temperature").settings().norm == "softmax"
    settings = lookup("temperature-sigmoid").settings()
    assert isinstance(settings, SigmoidTemperatureSettings)
    assert (settings.norm, settings.alpha, settings.beta) == ("sigmoid", 0.5, 1.0)
    assert lookup("temperature-sigmoid").spec.module == lookup("temperature").spec.module
