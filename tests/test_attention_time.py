"""Temporal attention as a future LM (variant temporal-attention,
pipeline/models/attention_time.py): the period enters GPT-2's attention through a time vector
built from its history."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.features.history import PeriodHistory
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.errors import UserError
from pipeline.models.future_lm import load_future_lm, make_future_lm, save_future_lm
from pipeline.models.scoring import score_abstracts
from pipeline.models.temporal_attention import TemporalGPT2Attention
from pipeline.variants.temporal_attention import TemporalAttentionSettings
from pipeline.training.cached import train_cached
from tests.test_heads import PAD, V, YEARS, batch, history, lm, tiny_data, train_tiny


def timed(form: str = "residual", seed: int = 0, dropout: float = 0.0):
    return make_future_lm(lm(seed, dropout), "temporal-attention", 2,
                          settings=TemporalAttentionSettings(time_dim=4, form=form))


def test_its_parameters_are_the_module_s_and_the_lm_state_is_unchanged() -> None:
    model = timed()
    plain = lm()
    assert all(type(m) is TemporalGPT2Attention for m in model.lm.transformer.h.modules()
               if "Attention" in type(m).__name__)
    assert set(model.lm.state_dict()) == set(plain.state_dict())
    names = {n for n, _ in model.bias.named_parameters()}
    assert names == {"time_map.weight", "time_map.bias", "projections.0.weight"}
    assert model.bias.time_map.in_features == V * 1   # m - 1 = 1 change per token


def test_zero_time_projection_gives_the_plain_lm_and_the_history_moves_the_logits() -> None:
    """Residual form with W_T = 0 is ordinary attention exactly; with W_T ≠ 0 two histories
    give two distributions (the period reaches the logits only through attention)."""
    ids, mask = batch()
    plain = make_future_lm(lm(), "baseline", 2).eval()
    model = timed().eval()
    with torch.no_grad():
        model.bias.projections[0].weight.zero_()
    same = model(ids, mask, history("2020")).logits
    assert torch.allclose(same, plain(ids, mask).logits, atol=1e-6)
    with torch.no_grad():
        model.bias.projections[0].weight.normal_(0, 1.0)
    a = model(ids, mask, history("2020", seed=1)).logits
    b = model(ids, mask, history("2020", seed=5)).logits
    assert not torch.allclose(a, b, atol=1e-4)


def test_the_time_vector_reads_the_history_s_changes_not_its_level() -> None:
    """The vocabulary's level is nearly the same in every period: a vector that read it saturated
    to one value for every period (the first version). Adding a profile to every history period,
    or a constant to a whole period, leaves x_i unchanged; changing one word's change moves it."""
    model = timed().eval()
    h = history("2020", seed=1)
    x = model.word_terms(h)
    profile = torch.linspace(-9.0, 3.0, V)[:, None]
    level = PeriodHistory(h.period, h.periods, h.log_freq + profile - torch.tensor([[0.0, 4.0]]),
                          None, h.observed)
    assert torch.allclose(model.word_terms(level), x, atol=1e-5)
    moved = h.log_freq.clone()
    moved[7, -1] += 2.0
    other = model.word_terms(PeriodHistory(h.period, h.periods, moved, None, h.observed))
    assert not torch.allclose(other, x, atol=1e-4)


def test_a_one_period_history_is_refused_naming_the_param() -> None:
    with pytest.raises(UserError, match="at least 2 periods") as err:
        make_future_lm(lm(), "temporal-attention", 1,
                       settings=TemporalAttentionSettings(time_dim=4))
    assert "features.window" in err.value.fix


def test_without_a_history_it_refuses_to_run() -> None:
    ids, mask = batch()
    with pytest.raises(ValueError, match="history"):
        timed()(ids, mask)


@pytest.mark.parametrize("form", ["residual", "paper"])
def test_kv_cached_generation_equals_the_full_forward(form: str) -> None:
    """Every generated token's logits equal those of a full forward over the prefix: the time
    term reads only visible keys, so decoding with the KV cache changes nothing."""
    model = timed(form).eval()
    with torch.no_grad():
        model.bias.projections[0].weight.normal_(0, 0.5)
    h = history("2021")
    prompt = torch.tensor([[PAD, 3, 7, 11]])
    model.lm.generation_config.pad_token_id = PAD
    with model.biased(h):
        gen = model.lm.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=5,
                                do_sample=False, output_logits=True, return_dict_in_generate=True)
    assert len(gen.logits) >= 2
    for step, scores in enumerate(gen.logits):
        prefix = gen.sequences[:, :prompt.shape[1] + step]
        with torch.no_grad():
            full = model(prefix, torch.ones_like(prefix), h).logits[:, -1]
        assert torch.allclose(scores, full, atol=1e-4)


def test_training_lowers_the_loss_moves_the_time_weights_and_round_trips(tmp_path) -> None:
    data = tiny_data()
    histories = {y: history(y) for y in (*YEARS, "2020")}
    model = timed()
    before = model.bias.projections[0].weight.detach().clone()
    losses = train_tiny(model, data, histories, tmp_path)
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0], losses
    assert not torch.equal(model.bias.projections[0].weight, before)
    save_future_lm(model, tmp_path / "model")
    loaded = load_future_lm(tmp_path / "model")
    assert loaded.bias_config.settings == TemporalAttentionSettings(time_dim=4, form="residual")
    seqs = data["2019"]
    a = score_abstracts(model.eval(), seqs, None, histories["2019"], 2, pad_id=PAD).tokens["nll_sum"]
    b = score_abstracts(loaded, seqs, None, histories["2019"], 2, pad_id=PAD).tokens["nll_sum"]
    assert a.tolist() == b.tolist()


def test_the_frozen_base_cache_refuses_it() -> None:
    """The cache holds the plain LM's hidden states; temporal attention changes them."""
    config = TrainConfig(epochs=1, batch_size=2, grad_accum=1, freeze_lm=True)
    with pytest.raises(UserError, match="hidden states") as err:
        train_cached(timed(), {}, {}, {}, config)
    assert "without --cache" in err.value.fix


def test_an_unknown_attention_form_is_refused() -> None:
    with pytest.raises(ValueError, match="form must be one of"):
        timed("both")
