"""The output-layer variants wired into the future LM (pipeline/models/heads.py):
temperature and temporal-temperature (paper 002 eq. 5, 7) and continuous output (paper 004)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from pipeline.corpus.periods import shift
from pipeline.features.history import PeriodHistory
from pipeline.infra.schema.config import TrainConfig
from pipeline.models.continuous import vmf_nll
from pipeline.models.future_lm import load_future_lm, make_future_lm, save_future_lm, scratch_gpt2
from pipeline.models.heads import (VMF_LAMBDA1, ContinuousOutput, CosineOutput, MaxMarginOutput,
                                   TemperatureHead, TemporalTemperatureHead, VMFOutput)
from pipeline.variants.temperature import TemperatureSettings
from pipeline.variants.temporal_temperature import TemporalTemperatureSettings
from pipeline.models.nll import next_token_targets, token_nll
from pipeline.models.temperature import bounded_temperature, scaled_nll
from pipeline.models.scoring import score_abstracts
from pipeline.training.checkpoints import Checkpoints
from pipeline.training.loop import train

V, PAD, D = 40, 0, 16
YEARS = ("2017", "2018", "2019")


def lm(seed: int = 0, dropout: float = 0.0):
    torch.manual_seed(seed)
    return scratch_gpt2(V, PAD, n_layer=1, n_head=2, n_embd=D, n_positions=32, dropout=dropout)


def history(period: str = "2020", seed: int = 1) -> PeriodHistory:
    g = torch.Generator().manual_seed(seed)
    return PeriodHistory(period, (shift(period, -2), shift(period, -1)),
                         -6 - 2 * torch.rand(V, 2, generator=g), None,
                         torch.ones(V, 2, dtype=torch.bool))


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, V, (3, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[2, 6:] = 0
    return ids, mask


def tiny_data() -> dict[str, list[list[int]]]:
    """Four short sequences per training year over 7 token ids (seeded)."""
    g = torch.Generator().manual_seed(0)
    return {y: [[PAD] + torch.randint(1, 8, (10,), generator=g).tolist() + [PAD]
                for _ in range(4)] for y in YEARS}


def train_tiny(model, data: dict[str, list[list[int]]], histories: dict, tmp_path) -> list[float]:
    """Six epochs of the real training loop (dev: two 2019 sequences); every step's loss."""
    losses: list[float] = []
    config = TrainConfig(epochs=6, batch_size=4, grad_accum=2, lr_lm=1e-2, lr_new=1e-2,
                         warmup_steps=0, patience=0)
    train(model, data, {"2020": data["2019"][:2]}, histories, config, pad_id=PAD, device="cpu",
          checkpoints=Checkpoints(tmp_path / "ckpt", key="k"), live_dir=tmp_path / "live",
          on_step=lambda s, loss: losses.append(loss))
    return losses


def continuous(variant: str = "continuous-vmf", seed: int = 0):
    g = torch.Generator().manual_seed(7)
    return make_future_lm(lm(seed), variant, 2, target_vectors=torch.randn(V, 12, generator=g))


def test_tau_of_one_reproduces_the_base_softmax_exactly() -> None:
    """sigmoid σ with W_τ2 = 0 gives σ = 1/2; α = 1/2, β = 1 then makes τ ≡ 1 (eq. 5)."""
    ids, mask = batch()
    plain = make_future_lm(lm(), "baseline", 2).eval()
    model = make_future_lm(lm(), "temperature", 2,
                           settings=TemperatureSettings(alpha=0.5, beta=1.0, norm="sigmoid")).eval()
    with torch.no_grad():
        model.bias.tau.w_tau2.zero_()
    assert torch.equal(model(ids, mask).logits, plain(ids, mask).logits)


@pytest.mark.parametrize("norm", ["softmax", "sigmoid"])
def test_temperature_divides_the_logits_by_a_tau_in_eq5_range(norm: str) -> None:
    ids, mask = batch()
    shape = TemperatureSettings(alpha=1.0, beta=0.5, norm=norm)
    model = make_future_lm(lm(), "temperature", 2, settings=shape).eval()
    with torch.no_grad():
        model.bias.tau.w_tau2.normal_(0, 3.0)             # far from the initial τ
        tau = model.lm(ids, attention_mask=mask).logits / model(ids, mask).logits
    assert tau.min() >= 2.0 - 1e-5 and tau.max() <= 4.0 + 1e-5
    assert tau.max() - tau.min() > 0.1                    # it varies by word and context


def test_temporal_temperature_reads_the_history_and_moves_with_it() -> None:
    ids, mask = batch()
    model = make_future_lm(lm(), "temporal-temperature", 2,
                           settings=TemporalTemperatureSettings(norm="sigmoid",
                                                                lstm_hidden=6)).eval()
    assert model.history_kinds == {"frequencies"}
    with pytest.raises(ValueError, match="history"):
        model(ids, mask)
    with torch.no_grad():
        model.bias.tau.A.weight.normal_(0, 2.0)
        a, b = model(ids, mask, history()).logits, model(ids, mask, history(seed=2)).logits
    assert not torch.allclose(a, b)                       # another history, other temperatures


def test_temperature_objective_is_eq7_loss_scaled_cross_entropy() -> None:
    """mean mode: Σ_t mean_k(τ_tk) · (−log p_t(y_t)), computed here directly."""
    ids, mask = batch()
    model = make_future_lm(lm(), "temperature", 2,
                           settings=TemperatureSettings(norm="sigmoid")).eval()
    with torch.no_grad():
        model.bias.tau.w_tau2.normal_(0, 1.0)
    targets = next_token_targets(ids, mask)
    loss = model(ids, mask, targets=targets).loss
    hidden = model.lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
    tau = model.bias.temperature(torch.zeros(V), hidden)
    nll = token_nll(model.lm.lm_head(hidden) / tau, targets)
    keep = targets != -100
    expected = (tau.mean(-1) * nll)[keep].sum()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def reference_objective(head, terms, hidden, output_layer, targets):
    """The temperature heads' objective as written before the fast path: τ, then
    ``log_softmax(z / τ)``, then scaled_nll, each op under autograd."""
    s = head.config.settings
    mu = head.tau.pre_activation(hidden) + terms.to(hidden.dtype)
    tau = bounded_temperature(mu, s.alpha, s.beta, s.norm).float()
    log_probs = (output_layer(hidden).float() / tau).log_softmax(-1)
    return scaled_nll(log_probs, targets, tau, s.loss_scale) * (targets != -100).sum()


@pytest.mark.parametrize("variant,settings", [
    ("temperature", TemperatureSettings()),
    ("temperature", TemperatureSettings(norm="sigmoid", alpha=0.5, beta=1.0, loss_scale="sum")),
    ("temporal-temperature", TemporalTemperatureSettings(lstm_hidden=6)),
    ("temporal-temperature", TemporalTemperatureSettings(lstm_hidden=6, norm="sigmoid", beta=0.3,
                                                         loss_scale="none")),
])
@pytest.mark.parametrize("shared_terms", [False, True])
@pytest.mark.parametrize("autocast", [False, True])
def test_temperature_objective_fast_path_is_the_reference_bit_for_bit(variant, settings,
                                                                      shared_terms, autocast) -> None:
    """Loss and every parameter's gradient (LM, W_τ1, W_τ2, the history LSTM) of the objective
    equal the op-by-op reference's floats; ``shared_terms``: the word terms as a leaf that collects
    its gradient (the training loop's micro-batches before the last); ``autocast``: bf16 matrix
    products (the bf16 precision's mixed dtypes: μ bf16, ``u`` fp32)."""
    ids, mask = batch()
    targets = next_token_targets(ids, mask)
    grads = []
    for objective in ("fast", "reference"):
        model = make_future_lm(lm(), variant, 2, settings=settings).train()
        with torch.no_grad():
            model.bias.tau.w_tau2.normal_(0, 1.0)
            if variant == "temporal-temperature":
                model.bias.tau.A.weight.normal_(0, 1.0)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            terms = model.word_terms(history() if model.history_kinds else None)
            if shared_terms:
                terms = terms.detach().requires_grad_()
            hidden = model.lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
            args = (terms, hidden, model.lm.get_output_embeddings(), targets)
            loss = (model.bias.objective(*args) if objective == "fast"
                    else reference_objective(model.bias, *args))
        loss.backward()
        grads.append([loss] + [p.grad for p in model.parameters()]
                     + ([terms.grad] if shared_terms and variant != "temperature" else []))
    fast, reference = grads
    assert len(fast) == len(reference) and sum(g is not None for g in fast) > 3
    for a, b in zip(fast, reference):
        assert (a is None) == (b is None)   # shared terms: the LSTM's gradient comes later
        assert a is None or torch.equal(a.view(torch.int32) if a.dtype == torch.float32 else a,
                                        b.view(torch.int32) if b.dtype == torch.float32 else b)


def test_continuous_logits_rank_words_as_brute_force_nearest_neighbours() -> None:
    ids, mask = batch()
    model = continuous().eval()
    with torch.no_grad():
        logits = model(ids, mask).logits
        hidden = model.lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
        pred = model.bias.head(hidden)
    targets = model.bias.head.targets
    for b in range(ids.shape[0]):
        for t in range(ids.shape[1]):
            cos = [F.cosine_similarity(pred[b, t], targets[k], dim=0).item() for k in range(V)]
            best = sorted(range(V), key=lambda k: -cos[k])[:10]
            assert logits[b, t].topk(10).indices.tolist() == best
    # their softmax is the vMF-normalised distribution: ê·e_k renormalised over the vocabulary
    assert torch.allclose(logits.log_softmax(-1), (pred @ targets.T).log_softmax(-1), atol=1e-6)


def test_continuous_vmf_objective_is_the_summed_reg1_vmf_nll() -> None:
    ids, mask = batch()
    model = continuous().eval()
    targets = next_token_targets(ids, mask)
    loss = model(ids, mask, targets=targets).loss
    hidden = model.lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
    n = int((targets != -100).sum())
    expected = vmf_nll(model.bias.head(hidden), targets, model.bias.head.targets,
                       lambda1=VMF_LAMBDA1) * n
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    # the direct formula: −log C_m(κ) − ê·e_w + λ1 κ, C_m from scipy's Bessel function
    from scipy.special import ive
    pred = model.bias.head(hidden).detach().double()
    e = model.bias.head.targets.double()
    m, total = pred.shape[-1], 0.0
    for b, t in zip(*torch.nonzero(targets != -100, as_tuple=True)):
        x, w = pred[b, t], e[targets[b, t]]
        kappa = float(x.norm())
        log_c = ((m / 2 - 1) * math.log(kappa) - (m / 2) * math.log(2 * math.pi)
                 - (math.log(ive(m / 2 - 1, kappa)) + kappa))
        total += -log_c - float(x @ w) + VMF_LAMBDA1 * kappa
    assert loss.item() == pytest.approx(total, rel=0.02)   # K&T's approximation of log C_m


def test_continuous_needs_its_targets_and_they_are_unit_rows() -> None:
    with pytest.raises(ValueError, match="target vectors"):
        make_future_lm(lm(), "continuous-vmf", 2)
    norms = continuous().bias.head.targets.norm(dim=-1)
    assert torch.allclose(norms, torch.ones(V), atol=1e-6)


@pytest.mark.parametrize(("variant", "cls", "own"), [
    ("temperature", TemperatureHead, True), ("temporal-temperature", TemporalTemperatureHead, True),
    ("continuous-vmf", VMFOutput, True), ("continuous-cosine", CosineOutput, True),
    ("continuous-max-margin", MaxMarginOutput, True), ("frequency", None, False),
    ("baseline", None, False)])
def test_each_variant_builds_its_own_head_class_and_objective(variant: str, cls, own: bool) -> None:
    """The head class comes from the variant's module; whether it trains on its own objective
    from its spec (no class attribute), and a continuous head's loss from its subclass."""
    model = (continuous(variant) if variant.startswith("continuous")
             else make_future_lm(lm(), variant, 2))
    if cls is not None:
        assert type(model.bias) is cls
    assert model.own_objective is own
    if variant.startswith("continuous"):
        assert isinstance(model.bias, ContinuousOutput)
        assert model.bias.loss == {"continuous-vmf": "vmf", "continuous-cosine": "cosine",
                                   "continuous-max-margin": "max_margin"}[variant]
    # the temperature's settings live in the saved config and rebuild the same head
    if variant.endswith("temperature"):
        assert model.bias_config.settings == type(model.bias_config.settings)()


def test_temperature_settings_of_the_wrong_class_are_refused() -> None:
    with pytest.raises(ValueError, match="TemporalTemperatureSettings, got TemperatureSettings"):
        make_future_lm(lm(), "temporal-temperature", 2, settings=TemperatureSettings())


def test_a_model_without_its_own_objective_refuses_targets() -> None:
    ids, mask = batch()
    with pytest.raises(ValueError, match="NLL"):
        make_future_lm(lm(), "baseline", 2)(ids, mask, targets=next_token_targets(ids, mask))


@pytest.mark.parametrize("variant", ["temperature", "temporal-temperature", "continuous-vmf",
                                     "continuous-cosine", "continuous-max-margin"])
def test_training_lowers_the_objective_keeps_the_targets_and_round_trips(tmp_path,
                                                                         variant: str) -> None:
    data = tiny_data()
    # only a model that reads a history gets one (the others train without feature files)
    histories = ({y: history(y) for y in (*YEARS, "2020")}
                 if variant == "temporal-temperature" else {})
    settings = TemporalTemperatureSettings(lstm_hidden=6) if histories else None
    model = (continuous(variant) if variant.startswith("continuous")
             else make_future_lm(lm(), variant, 2, settings=settings))
    fixed = model.bias.head.targets.clone() if variant.startswith("continuous") else None
    losses = train_tiny(model, data, histories, tmp_path)
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0], losses
    if fixed is not None:
        assert torch.equal(model.bias.head.targets, fixed)   # the target space is never trained
    save_future_lm(model, tmp_path / "model")
    loaded = load_future_lm(tmp_path / "model")
    seqs = data["2019"]
    h = histories["2019"] if variant == "temporal-temperature" else None
    a = score_abstracts(model.eval(), seqs, None, h, 2, pad_id=PAD).tokens["nll_sum"]
    b = score_abstracts(loaded, seqs, None, h, 2, pad_id=PAD).tokens["nll_sum"]
    assert a.tolist() == b.tolist()
