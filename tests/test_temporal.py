"""Bias predictors: shapes, ranges, the LSTM's order over years, and Context²'s O(T·|V|) reduction."""

from __future__ import annotations

import pytest
import torch

from pipeline.features.history import PeriodHistory
from pipeline.models.future_lm import build_module
from pipeline.models.registry import lookup
from pipeline.models.temporal import (
    Context2Bias,
    ContextBias,
    FrequencyBias,
    FrequencyNoLSTMBias,
    context_features,
)
from pipeline.variants._spec import BiasConfig
from pipeline.variants.context import ContextSettings

V, M, D_ENC, D_LM = 50, 3, 6, 8


def make_history(seed: int = 0, vocab: int = V, window: int = M) -> PeriodHistory:
    g = torch.Generator().manual_seed(seed)
    return PeriodHistory(
        period="2020", periods=tuple(str(y) for y in range(2020 - window, 2020)),
        log_freq=-8 - 3 * torch.rand(vocab, window, generator=g),
        emb=torch.randn(vocab, window, D_ENC, generator=g),
        emb_seen=torch.rand(vocab, window, generator=g) > 0.3,
    )


KIND = {FrequencyNoLSTMBias: "frequency-nolstm", FrequencyBias: "frequency",
        ContextBias: "context", Context2Bias: "context2"}


def config(kind: str | type, **kw) -> BiasConfig:
    """A module's config; ``kw`` may hold its variant's settings (``lstm_hidden`` 5 by default)
    as well as :class:`BiasConfig` fields."""
    kind = KIND.get(kind, kind)   # type: ignore[arg-type]
    settings_class = lookup(kind).settings if kind != "none" else None
    own = {} if settings_class is None else {f: kw.pop(f) for f in list(kw)
                                             if f in settings_class.__dataclass_fields__}
    if settings_class is not None and "lstm_hidden" in settings_class.__dataclass_fields__:
        own.setdefault("lstm_hidden", 5)
    base = dict(kind=kind, window=M, feature_dim=D_ENC, lm_dim=D_LM,
                settings=None if settings_class is None else settings_class(**own))
    base.update(kw)
    return BiasConfig(**base)


def test_build_module_takes_the_class_from_the_registry() -> None:
    assert build_module(config("none")) is None
    for kind, cls in (("frequency-nolstm", FrequencyNoLSTMBias), ("frequency", FrequencyBias),
                      ("context", ContextBias), ("context2", Context2Bias)):
        assert type(build_module(config(kind))) is cls
    with pytest.raises(ValueError, match="unknown module kind"):
        build_module(BiasConfig(kind="frequencies", window=M))


@pytest.mark.parametrize("cls", [FrequencyNoLSTMBias, FrequencyBias, ContextBias])
def test_word_level_bias_shape_and_finite(cls) -> None:
    torch.manual_seed(0)
    bias = cls(config(cls))
    E = torch.randn(V, D_LM)
    terms = bias.word_terms(make_history(), E)
    assert terms.shape == (V,)
    assert torch.isfinite(terms).all()
    # Position-independent: the same bias for every position of every sequence.
    assert bias.position_bias(terms, torch.randn(2, 7, D_LM)) is terms


def test_lstm_bias_is_bounded_by_A() -> None:
    """Aᵀ h with h = LSTM output ∈ (-1, 1): |B_w| ≤ ||A||₁ (eq. 6 / eq. 8)."""
    torch.manual_seed(0)
    for cls in (FrequencyBias, ContextBias):
        bias = cls(config(cls))
        terms = bias.word_terms(make_history(), torch.randn(V, D_LM))
        assert terms.abs().max() <= bias.A.weight.abs().sum()


def test_frequency_nolstm_reads_previous_year_only() -> None:
    bias = FrequencyNoLSTMBias(config("frequency-nolstm"))
    with torch.no_grad():
        bias.a.fill_(0.5)
        bias.b.fill_(2.0)
    h = make_history()
    out = bias.word_terms(h, torch.empty(0))
    torch.testing.assert_close(out, 0.5 * h.log_freq[:, -1] + 2.0)
    older_changed = PeriodHistory(h.period, h.periods, h.log_freq.clone())
    older_changed.log_freq[:, :-1] = 0.0
    assert torch.equal(bias.word_terms(older_changed, torch.empty(0)), out)
    newest_changed = PeriodHistory(h.period, h.periods, h.log_freq.clone())
    newest_changed.log_freq[3, -1] += 1.0
    assert not torch.equal(bias.word_terms(newest_changed, torch.empty(0))[3], out[3])


def test_frequency_nolstm_starts_as_the_base_lm() -> None:
    bias = FrequencyNoLSTMBias(config("frequency-nolstm"))
    terms = bias.word_terms(make_history(), torch.empty(0))
    assert torch.equal(terms, torch.zeros(V))


def capture_lstm_inputs(bias) -> list[torch.Tensor]:
    """The inputs the bias's LSTM recurrence runs on (every word's row when the history has no
    ``observed`` mask)."""
    seen: list[torch.Tensor] = []
    run = bias.lstm._last_hidden

    def capture(sequences: torch.Tensor) -> torch.Tensor:
        seen.append(sequences)
        return run(sequences)

    bias.lstm._last_hidden = capture
    return seen


@pytest.mark.parametrize("cls", [FrequencyBias, ContextBias, Context2Bias])
def test_lstm_input_for_word_w_is_its_years_oldest_first(cls) -> None:
    """The LSTM's sequence for word w is [x_{i-m,w}, …, x_{i-1,w}] (the reference's bug: across ids)."""
    torch.manual_seed(0)
    bias = cls(config(cls))
    h = make_history()
    seen_inputs = capture_lstm_inputs(bias)
    bias.word_terms(h, torch.randn(V, D_LM))
    x = seen_inputs[0]
    assert x.shape[:2] == (V, M)  # rows = vocabulary, time axis (dim 1) = years
    for w in (0, 7, V - 1):
        if cls is FrequencyBias:
            assert torch.equal(x[w, :, 0], h.log_freq[w])  # years i-m .. i-1 in order
        else:
            assert torch.equal(x[w, :, :D_ENC], h.emb[w])
            assert torch.equal(x[w, :, D_ENC], h.emb_seen[w].float())


def test_lstm_output_of_a_word_depends_on_its_own_years_only() -> None:
    torch.manual_seed(0)
    bias = FrequencyBias(config("frequency")).eval()
    h = make_history()
    base = bias.word_terms(h, torch.empty(0))
    # Same value as running the LSTM on word 7's sequence alone, step by step over its years.
    lstm = bias.lstm.lstm
    hx = cx = torch.zeros(1, lstm.hidden_size)
    cell = torch.nn.LSTMCell(1, lstm.hidden_size)
    cell.load_state_dict({"weight_ih": lstm.weight_ih_l0, "weight_hh": lstm.weight_hh_l0,
                          "bias_ih": lstm.bias_ih_l0, "bias_hh": lstm.bias_hh_l0})
    for year in range(M):
        hx, cx = cell(h.log_freq[7, year].view(1, 1), (hx, cx))
    torch.testing.assert_close(bias.A(hx).squeeze(), base[7])
    # Changing word 8's history leaves word 7 alone; reversing word 7's years changes it.
    other = h.log_freq.clone()
    other[8] = 0.0
    assert torch.equal(bias.word_terms(PeriodHistory(h.period, h.periods, other), torch.empty(0))[7], base[7])
    rev = h.log_freq.clone()
    rev[7] = rev[7].flip(0)
    assert not torch.allclose(bias.word_terms(PeriodHistory(h.period, h.periods, rev), torch.empty(0))[7], base[7])


def naive_context2(bias: Context2Bias, h: PeriodHistory, E: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
    """Eq. 9-10 literally, with the [T, |V|, d] products the O(T·|V|) version avoids."""
    U = bias.to_lm(bias.lstm(torch.cat([h.emb, h.emb_seen.float().unsqueeze(-1)], -1)))
    B_tilde = (E * U).sum(-1, keepdim=True) * bias.A                      # [V, d]
    gate = torch.sigmoid(torch.einsum("btd,de,ve->btv", H, bias.C, B_tilde))
    value = torch.einsum("vd,de,ve->v", E, bias.D, B_tilde)
    return bias.alpha * gate * value


@pytest.mark.parametrize("lstm_hidden", [5, D_LM])
def test_context2_reduction_equals_equations_9_10(lstm_hidden: int) -> None:
    torch.manual_seed(0)
    bias = Context2Bias(config("context2", lstm_hidden=lstm_hidden)).eval()
    with torch.no_grad():  # move C, D off the identity so the test covers them
        bias.C.add_(0.3 * torch.randn(D_LM, D_LM))
        bias.D.add_(0.3 * torch.randn(D_LM, D_LM))
        bias.A.mul_(5)
    h, E, H = make_history(), torch.randn(V, D_LM), torch.randn(2, 4, D_LM)
    fast = bias(h, E, H)
    assert fast.shape == (2, 4, V)
    torch.testing.assert_close(fast, naive_context2(bias, h, E, H), rtol=1e-4, atol=1e-5)
    # Range: the gate is in (0, 1), so |B_ikw| ≤ |α · s_w v_w|.
    terms = bias.word_terms(h, E)
    assert (fast.abs() <= (bias.alpha * terms[1]).abs() + 1e-6).all()


def test_context2_alpha_learned_or_fixed() -> None:
    learned = Context2Bias(config("context2"))
    assert isinstance(learned.alpha, torch.nn.Parameter) and learned.alpha.item() == 1.0
    fixed = Context2Bias(config("context2", alpha=1e-3))
    assert "alpha" not in dict(fixed.named_parameters())
    assert fixed.alpha.item() == pytest.approx(1e-3)
    zero = Context2Bias(config("context2", alpha=0.0))
    out = zero(make_history(), torch.randn(V, D_LM), torch.randn(1, 3, D_LM))
    assert torch.equal(out, torch.zeros_like(out))


def test_contextual_bias_without_embeddings_is_a_clear_error() -> None:
    h = make_history()
    with pytest.raises(ValueError, match="kinds=\\{'embeddings'"):
        ContextBias(config("context")).word_terms(PeriodHistory(h.period, h.periods, h.log_freq), torch.empty(0))


@pytest.mark.parametrize("cls", [FrequencyBias, ContextBias, Context2Bias])
def test_unobserved_tokens_share_one_lstm_run_exactly(cls) -> None:
    """Tokens absent from every history year have identical features: one LSTM run serves them all."""
    torch.manual_seed(0)
    bias = cls(config(cls)).eval()
    h = make_history()
    observed = torch.rand(V) > 0.5
    log_freq, emb, seen = h.log_freq.clone(), h.emb.clone(), h.emb_seen.clone()
    log_freq[~observed] = torch.tensor([-12.0, -13.0, -14.0])   # a zero count's log frequency
    emb[~observed], seen[~observed] = 0.0, False
    full = PeriodHistory(h.period, h.periods, log_freq, emb, seen)
    fast = PeriodHistory(h.period, h.periods, log_freq, emb, seen, observed=observed)
    E = torch.randn(V, D_LM)
    calls: list[int] = []
    run_lstm = bias.lstm._last_hidden

    def counting(sequences: torch.Tensor) -> torch.Tensor:
        calls.append(sequences.shape[0])   # rows the recurrence actually runs on
        return run_lstm(sequences)

    bias.lstm._last_hidden = counting
    out_full = bias.word_terms(full, E)
    grads_full = torch.autograd.grad(out_full.square().sum(), list(bias.parameters()), allow_unused=True)
    out_fast = bias.word_terms(fast, E)
    grads_fast = torch.autograd.grad(out_fast.square().sum(), list(bias.parameters()), allow_unused=True)
    assert calls == [V, int(observed.sum()) + 1]
    torch.testing.assert_close(out_fast, out_full)
    for a, b in zip(grads_fast, grads_full):
        if a is not None:
            torch.testing.assert_close(a, b)


def test_context2_fused_backward_matches_autograd() -> None:
    from pipeline.models.temporal import _GatedWordBias

    z = torch.randn(7, 5, dtype=torch.float64, requires_grad=True)
    g = torch.randn(7, dtype=torch.float64, requires_grad=True)
    s = torch.randn(5, dtype=torch.float64, requires_grad=True)
    c = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(_GatedWordBias.apply, (z, g, s, c))
    torch.testing.assert_close(_GatedWordBias.apply(z, g, s, c), z + torch.sigmoid(g[:, None] * s) * c)
    # The module's fused path equals logits + eq. 10 as written.
    torch.manual_seed(0)
    bias = Context2Bias(config("context2")).eval()
    h, E, H = make_history(), torch.randn(V, D_LM), torch.randn(2, 3, D_LM)
    logits = torch.randn(2, 3, V)
    terms = bias.word_terms(h, E)
    torch.testing.assert_close(bias.add_bias(terms, H, logits), logits + bias.position_bias(terms, H))


def _indexed_last_hidden(lstm, sequences: torch.Tensor) -> torch.Tensor:
    """PeriodLSTM's recurrence as first written: each period's projections indexed out of
    ``gates_x`` (whose backward fills a zero tensor per period and adds them)."""
    cell = lstm.lstm
    gates_x = torch.nn.functional.linear(sequences, cell.weight_ih_l0,
                                         cell.bias_ih_l0 + cell.bias_hh_l0)
    h = c = None
    for t in range(sequences.shape[1]):
        gates = gates_x[:, t] if h is None else gates_x[:, t] + h @ cell.weight_hh_l0.t()
        i, f, g, o = gates.chunk(4, dim=1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = i * g if c is None else f * c + i * g
        h = o * c.tanh()
    return h


@pytest.mark.parametrize("words,features,hidden,periods,partial", [
    (300, 1, 32, 2, False), (257, 3, 6, 3, True), (100, 2, 5, 1, True), (200, 1, 16, 4, True)])
def test_period_lstm_gradients_are_those_of_the_indexed_recurrence_bit_for_bit(
        words, features, hidden, periods, partial) -> None:
    """``unbind`` instead of indexing each period (indexing cost ~30% of the LSTM's step) changes
    no float: output and every weight gradient, dropout on, compact rows or not."""
    from pipeline.models.temporal import PeriodLSTM

    results = []
    for indexed in (False, True):
        torch.manual_seed(0)
        lstm = PeriodLSTM(features, hidden, dropout=0.1).train()
        if indexed:
            lstm._last_hidden = lambda seq, lstm=lstm: _indexed_last_hidden(lstm, seq)
        g = torch.Generator().manual_seed(1)
        sequences = torch.randn(words, periods, features, generator=g)
        observed = torch.rand(words, generator=g) < 0.6 if partial else None
        weights = torch.randn(words, hidden, generator=g)
        torch.manual_seed(5)   # the same dropout mask
        out = lstm(sequences, observed)
        (out * weights).sum().backward()
        results.append([out] + [p.grad for p in lstm.parameters()])
    for a, b in zip(*results):
        assert (a is None) == (b is None)   # one period: W_hh gets no gradient
        assert a is None or torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_year_lstm_equals_torch_lstm_over_the_years() -> None:
    from pipeline.models.temporal import PeriodLSTM

    torch.manual_seed(0)
    year_lstm = PeriodLSTM(D_ENC, 5, dropout=0.0)
    x = torch.randn(V, M, D_ENC)
    _, (h_n, _) = year_lstm.lstm(x)   # batch_first: rows = words, time = years
    torch.testing.assert_close(year_lstm(x), h_n[-1])


@pytest.mark.parametrize("cls", [ContextBias, Context2Bias])
def test_paper_context_input_is_eq8_v_only_with_zeros_for_unseen_years(cls) -> None:
    """``context_input: paper`` feeds V_{y,w} alone (d_enc features), zeros where w did not occur
    in year y — not the vector carried forward from an earlier year, and no seen flag."""
    torch.manual_seed(0)
    h = make_history()
    inputs: dict[str, torch.Tensor] = {}
    for mode in ("paper", "flagged"):
        bias = cls(config(cls, context_input=mode))
        captured = capture_lstm_inputs(bias)
        bias.word_terms(h, torch.randn(V, D_LM))
        inputs[mode] = captured[0]
    paper, flagged = inputs["paper"], inputs["flagged"]
    assert paper.shape == (V, M, D_ENC) and flagged.shape == (V, M, D_ENC + 1)
    seen = h.emb_seen
    assert torch.equal(paper[seen], h.emb[seen])                        # real vectors as they are
    assert torch.equal(paper[~seen], torch.zeros_like(paper[~seen]))    # unseen years: zeros
    assert torch.equal(flagged[..., :D_ENC], h.emb)                     # carried vectors kept
    assert torch.equal(flagged[..., D_ENC], seen.float())


@pytest.mark.parametrize("kind", ["context", "context2"])
def test_context_input_is_validated(kind: str) -> None:
    with pytest.raises(ValueError, match="context_input"):
        config(kind, context_input="both")


def test_an_unknown_context_input_is_refused_when_the_module_reads_it() -> None:
    bias = ContextBias(config("context", context_input="paper"))
    object.__setattr__(bias.config.settings, "context_input", "both")
    with pytest.raises(ValueError, match="unknown context input 'both'"):
        bias.word_terms(make_history(), torch.randn(V, D_LM))


def test_context_input_is_saved() -> None:
    cfg = config("context", context_input="paper")
    assert cfg.to_dict()["settings"] == {"lstm_hidden": 5, "context_input": "paper"}
    assert BiasConfig.from_dict(cfg.to_dict(), ContextSettings) == cfg
    assert context_features(cfg) == D_ENC and context_features(config("context")) == D_ENC + 1
