"""The output-layer heads with their own objective (contextual temperature, paper 002 eq. 5-7;
continuous output, paper 004) train and score from a frozen LM's cached final hidden states
(pipeline.training.cached, FutureLM.own_loss) to the numbers of the uncached frozen-LM path, on the
tiny random-init GPT-2 and real tiny text of tests/test_base_cache.py."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from pipeline.features.base_cache import HiddenMemo, build_cache, load_cache
from pipeline.forecast.vocabulary import predicted_distributions
from pipeline.infra.schema.config import TrainConfig
from pipeline.models.continuous import frozen_input_embeddings, vmf_log_probs
from pipeline.models.future_lm import FutureLM, make_future_lm
from pipeline.models.nll import next_token_targets
from pipeline.models.registry import all_variants, lookup
from pipeline.models.scoring import score_abstracts
from pipeline.training.cached import evaluate_cached, score_cached, train_cached
from pipeline.training.checkpoints import Checkpoints
from pipeline.training.loop import evaluate, train
from tests.test_base_cache import CONTEXT, DEV, TRAIN, setup  # noqa: F401  (fixture)
from tests.variant_settings import sized

# the output-layer variants (their own objective), read from the registry
HEADS = [name for name, v in all_variants().items() if v.output_layer]


def head(lm, variant: str, seed: int = 0) -> FutureLM:
    """``variant`` on a copy of ``lm``; the continuous heads' targets are the LM's own input
    embeddings (any fixed vectors serve here), the control pools the training periods."""
    entry = lookup(variant)
    torch.manual_seed(seed)
    extra = {}
    if entry.targets_from_baseline:
        extra["target_vectors"] = frozen_input_embeddings(lm)
    if entry.static:
        extra["static_periods"] = TRAIN
    return make_future_lm(copy.deepcopy(lm), variant, 2, settings=sized(variant, 8),
                          dropout=0.1, context_length=CONTEXT, **extra)


def test_the_heads_are_every_cacheable_output_layer_variant() -> None:
    """Every variant with its own objective is cacheable (it reads only the final hidden
    states); temporal attention (in_body) is not."""
    assert set(HEADS) == {"temperature", "temperature-sigmoid", "temporal-temperature",
                          "temporal-temperature-static", "continuous-vmf", "continuous-cosine",
                          "continuous-max-margin"}
    assert all(lookup(v).cacheable for v in HEADS)
    assert not lookup("temporal-attention").cacheable


@pytest.mark.slow
@pytest.mark.parametrize("variant", HEADS)
def test_cached_training_of_a_head_reaches_the_uncached_model(setup, tmp_path: Path,  # noqa: F811
                                                              variant: str) -> None:
    """The same steps on the frozen LM: the same step losses (the head's own objective), dev
    perplexities and weights, up to the last bits of the states of differently padded batches.
    Two micro-batches per step, so the word terms' collected gradient is exercised too."""
    _, lm, data, histories, identity, pad = setup
    config = TrainConfig(epochs=3, batch_size=2, grad_accum=2, lr_new=1e-2, warmup_steps=2,
                         freeze_lm=True, patience=0, eval_batch_size=3, seed=3)
    build_cache(lm, {p: data[p] for p in TRAIN}, tmp_path / "train", identity, batch_size=3)
    build_cache(lm, {DEV: data[DEV]}, tmp_path / "dev", identity, batch_size=3)
    plain, fast = head(lm, variant), head(lm, variant)
    assert fast.own_objective
    start = copy.deepcopy(fast.bias.state_dict())
    reference_losses: list[float] = []
    reference = train(plain, {p: data[p] for p in TRAIN}, {DEV: data[DEV]}, histories, config,
                      pad_id=pad, device="cpu", checkpoints=Checkpoints(tmp_path / "ckpt", key="k"),
                      live_dir=tmp_path / "live",
                      on_step=lambda s, loss: reference_losses.append(loss))
    losses: list[float] = []
    state = train_cached(fast, load_cache(tmp_path / "train", identity),
                         load_cache(tmp_path / "dev", identity), histories, config,
                         on_step=lambda s, loss: losses.append(loss))
    assert state.step == reference.step == len(losses) > 0 and state.tokens == reference.tokens
    np.testing.assert_allclose(losses, reference_losses, rtol=1e-5)
    np.testing.assert_allclose(state.dev_ppl, reference.dev_ppl, rtol=1e-5)
    assert [f"{p:.2f}" for p in state.dev_ppl] == [f"{p:.2f}" for p in reference.dev_ppl]
    assert state.best_epoch == reference.best_epoch
    assert any(not torch.equal(v, start[k]) for k, v in fast.bias.state_dict().items())
    for name, value in fast.state_dict().items():
        torch.testing.assert_close(value, plain.state_dict()[name], rtol=1e-4, atol=1e-6)
    for name, value in fast.lm.state_dict().items():       # the LM stays frozen
        assert torch.equal(value, lm.state_dict()[name]), name


def test_a_heads_loss_ignores_what_the_cache_holds_on_padding(setup) -> None:  # noqa: F811
    """Cached batches hold zeros where the LM's body computes states of pad tokens; those
    positions have no target, so the objective and its gradient are the same either way."""
    _, lm, data, histories, *_ = setup
    for variant in ("temporal-temperature", "continuous-max-margin"):
        model = head(lm, variant).train()
        seqs = [data[DEV][0], data[DEV][1][:8]]              # the second row is padded
        ids = torch.zeros((2, len(seqs[0])), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, seq in enumerate(seqs):
            ids[row, :len(seq)], mask[row, :len(seq)] = torch.tensor(seq), 1
        targets = next_token_targets(ids, mask)
        with torch.no_grad():
            hidden = model.lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
        zeroed = hidden * mask[..., None]
        assert not torch.equal(zeroed, hidden)
        grads = []
        for states in (hidden, zeroed):
            model.zero_grad(set_to_none=True)
            torch.manual_seed(5)   # the same dropout masks on the history LSTM's outputs
            loss = model.own_loss(states, targets, histories[DEV])
            loss.backward()
            grads.append((loss.detach(), [p.grad.clone() for p in model.bias.parameters()
                                          if p.grad is not None]))
        torch.testing.assert_close(grads[0][0], grads[1][0], rtol=1e-6, atol=0)
        assert len(grads[0][1]) > 0
        for a, b in zip(grads[0][1], grads[1][1]):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("variant", HEADS)
def test_cached_scoring_of_a_head_equals_uncached(setup, tmp_path: Path,  # noqa: F811
                                                  variant: str) -> None:
    """score_cached / evaluate_cached, scoring through a HiddenMemo and the forecast's reference
    passes give a head the numbers of running the LM: the temperature heads' softmax(z / τ), the
    continuous heads' vMF densities renormalised over the vocabulary."""
    _, lm, data, histories, identity, pad = setup
    model = head(lm, variant).eval()
    with torch.no_grad():   # a trained head, not its near-identity initial state
        for p in model.bias.parameters():
            p.add_(0.3 * torch.randn_like(p))
    build_cache(lm, {DEV: data[DEV]}, tmp_path / "dev", identity, batch_size=3)
    cache = load_cache(tmp_path / "dev", identity)
    scored = score_abstracts(model, data[DEV], None, histories[DEV], 3, pad_id=pad).tokens
    sums = score_cached(model, cache[DEV], histories[DEV], 3)
    np.testing.assert_allclose(sums[:, 0], scored["nll_sum"], rtol=1e-6)
    assert sums[:, 1].tolist() == scored["n_tokens"].tolist()
    uncached = evaluate(model, {DEV: data[DEV]}, histories, 3, pad).ppl
    cached = evaluate_cached(model, cache, histories, 3).ppl
    assert cached == pytest.approx(uncached, rel=1e-6) and f"{cached:.2f}" == f"{uncached:.2f}"
    # the frozen-base score and forecast stages: the model's own passes, states from the memo
    other = histories[TRAIN[-1]]
    forecast = predicted_distributions(model, data[DEV], [histories[DEV], other], 3, pad)
    model.use_hidden_memo(HiddenMemo(cache))
    memo_scored = score_abstracts(model, data[DEV], None, histories[DEV], 3, pad_id=pad).tokens
    memo_forecast = predicted_distributions(model, data[DEV], [histories[DEV], other], 3, pad)
    assert model.hidden_memo.misses == 0 and model.hidden_memo.hits > 0
    np.testing.assert_allclose(memo_scored["nll_sum"], scored["nll_sum"], rtol=1e-6)
    for a, b in zip(memo_forecast, forecast):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("variant", ["continuous-vmf", "temperature"])
def test_the_cached_score_is_the_heads_own_distribution(setup, tmp_path: Path,  # noqa: F811
                                                        variant: str) -> None:
    """What the cached NLL is: −log vmf_log_probs(ê) (continuous) or −log softmax(z / τ)
    (temperature, eq. 5) of the cached states at the target, summed per abstract."""
    _, lm, data, histories, identity, _ = setup
    model = head(lm, variant).eval()
    build_cache(lm, {DEV: data[DEV]}, tmp_path / "dev", identity, batch_size=3)
    part = load_cache(tmp_path / "dev", identity)[DEV]
    index = [0, 1, 2]
    hidden, ids, mask = part.batch(index, "cpu")
    targets = next_token_targets(ids, mask)
    with torch.no_grad():
        if variant == "continuous-vmf":
            log_p = vmf_log_probs(model.bias.head(hidden), model.bias.head.targets)
        else:
            z = model.lm.get_output_embeddings()(hidden)
            tau = model.bias.temperature(model.word_terms(histories[DEV]), hidden)
            log_p = (z / tau).log_softmax(-1)
    nll = -log_p.gather(-1, targets.clamp(min=0)[..., None]).squeeze(-1)
    expected = torch.where(targets >= 0, nll, torch.zeros_like(nll)).sum(1).double()
    sums = score_cached(model, part, histories[DEV], 3)
    np.testing.assert_allclose(sums[index, 0], expected.numpy(), rtol=1e-5)
