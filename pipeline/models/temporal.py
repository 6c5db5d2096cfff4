"""Temporal bias predictors: the part of a future LM that looks at a word's history (paper §3).

A future LM for period ``i`` adds a bias to the base LM's logits before the softmax,
``p(w | context) ∝ exp(z_kw + B_ikw)`` with ``z_k = Eᵀ H_k``. The bias of word ``w`` is predicted
from that word's temporal features in the ``m`` previous periods ``i-m .. i-1``
(:class:`pipeline.features.history.PeriodHistory`, oldest period first):

=====================  =====================================================================
variant                bias
=====================  =====================================================================
``baseline[-N]``       none (the base LM: no module)
``frequency-nolstm``   ``B_iw = a · log f_{i-1,w} + b``                  (:class:`FrequencyNoLSTMBias`)
``frequency``          ``B_iw = Aᵀ LSTM(log f_{i-m,w}, …, log f_{i-1,w})`` eq. 6 (:class:`FrequencyBias`)
``context``            ``B_iw = Aᵀ LSTM(V_{i-m,w}, …, V_{i-1,w})``        eq. 8 (:class:`ContextBias`)
``context2``           ``B_ikw = α σ(H_kᵀ C B̃_iw)(E_wᵀ D B̃_iw)``          eq. 9-10 (:class:`Context2Bias`)
=====================  =====================================================================

The contextual LSTMs read, per period, either eq. 8's ``V`` alone (setting ``context_input: paper``,
zeros for a period in which the word does not occur) or ``V`` plus a seen flag with the latest
earlier vector carried forward (``flagged``, the default): :func:`context_inputs`.

Every module works in two phases so that the expensive, history-only part runs once per batch
(training batches hold a single period) or once per ``generate`` call, never once per position:

* :meth:`TemporalBias.word_terms` -> per-word tensors computed from the history (and, for
  Context², the LM's output embeddings ``E``);
* :meth:`TemporalBias.position_bias` -> the bias added to logits of shape ``[..., |V|]``, given the
  final hidden states ``H`` that produced those logits. Only Context² uses ``H``.
  :meth:`TemporalBias.add_bias` returns ``logits + bias`` (fused for Context²).

The LSTMs run over the *periods of each word*, batched across the vocabulary: the input is
``[|V|, m, features]`` with ``batch_first=True``, so row ``w`` is the sequence
``x_{i-m,w}, …, x_{i-1,w}``. (The reference implementation reshaped without a permute and so ran
its LSTM across adjacent vocabulary ids; ``tests/test_temporal.py`` pins the correct order.)
"""

from __future__ import annotations

import contextlib
import math
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.variants._spec import BiasConfig

CONTEXT_INPUTS = ("flagged", "paper")
T = TypeVar("T")


def context_features(config: BiasConfig) -> int:
    """Features per period the contextual LSTMs read: d_enc, plus the flag if ``flagged``."""
    if not config.feature_dim:
        raise ValueError(f"{config.kind} bias needs feature_dim (the contextual embedding size)")
    return config.feature_dim + (1 if config.settings.context_input == "flagged" else 0)


class TemporalBias(nn.Module, ABC):
    """A variant's module (:mod:`pipeline.variants._spec`); the history features it reads are
    its variant's ``reads`` (:mod:`pipeline.variants`)."""

    def __init__(self, config: BiasConfig) -> None:
        super().__init__()
        self.config = config
        self._cache = HistoryCache()   # history-only inputs, built once per history

    @abstractmethod
    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        """Per-word quantities from the history; last dimension |V| of ``history``."""

    def position_bias(self, terms: Tensor, hidden: Tensor) -> Tensor:
        """The bias for logits computed from ``hidden`` ``[..., d]``; broadcastable to ``[..., |V|]``.

        Position-independent variants return their per-word bias ``[|V|]`` unchanged.
        """
        return terms

    def add_bias(self, terms: Tensor, hidden: Tensor, logits: Tensor) -> Tensor:
        """``logits + bias``: what the future LM computes (subclasses may fuse the two)."""
        return logits + self.position_bias(terms, hidden).to(logits.dtype)

    #: Its word terms are per-word logits terms ``[|V|]`` (padded to the LM's output rows) added
    #: by :meth:`add_bias`; temporal attention's are a time vector read inside the LM's body.
    adds_logits: ClassVar[bool] = True

    def attach(self, lm: nn.Module) -> None:
        """Hook into the LM's body once, when the future LM is built (temporal attention)."""

    def conditioned(self, terms: Tensor) -> contextlib.AbstractContextManager[None]:
        """A block in which the LM's body reads ``terms`` (temporal attention; else nothing)."""
        return contextlib.nullcontext()

    def objective(self, terms: Tensor, hidden: Tensor, output_layer: nn.Module,
                  targets: Tensor) -> Tensor:
        """The training loss *summed* over the positions with a target (``targets`` ``[B, T]``,
        -100 = none), from the final hidden states ``hidden`` ``[B, T, d]`` and the LM's output
        layer. Only the modules of variants with ``own_objective`` (:mod:`pipeline.variants._spec`)
        define it (:mod:`pipeline.models.heads`)."""
        raise NotImplementedError(f"{type(self).__name__} trains on the NLL of its logits")

    def forward(self, history: PeriodHistory, output_embeddings: Tensor, hidden: Tensor) -> Tensor:
        """Convenience: both phases at once, the bias for ``hidden``'s positions."""
        return self.position_bias(self.word_terms(history, output_embeddings), hidden)


class FrequencyNoLSTMBias(TemporalBias):
    """Frequency-NoLSTM: ``B_iw = a · log f_{i-1,w} + b`` — only the previous period is read.

    ``a`` starts at 0, so training starts from the base LM. ``b`` is the paper's offset; being
    the same for every word it cannot change the softmax (its gradient is zero), kept for fidelity.
    """


    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        self.a = nn.Parameter(torch.zeros(()))
        self.b = nn.Parameter(torch.zeros(()))

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        return self.a * history.log_freq[:, -1] + self.b


class PeriodLSTM(nn.Module):
    """One LSTM shared by all words, run over each word's periods (oldest -> newest).

    Input ``[|V|, m, features]``: the vocabulary is the LSTM's *batch* dimension and the periods its
    *time* dimension. Returns the last hidden state ``[|V|, hidden]`` (after dropout).
    """

    def __init__(self, features: int, hidden: int, dropout: float) -> None:
        super().__init__()
        # Holds the parameters (and their standard initialisation); see _last_hidden.
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.dropout = nn.Dropout(dropout)

    def forward(self, sequences: Tensor, observed: Tensor | None = None) -> Tensor:
        """``observed`` (bool ``[|V|]``, optional): rows outside it are all identical, so the
        LSTM runs on the observed rows plus one representative and the result is gathered back."""
        return self.run(compact_rows(sequences, observed))

    def run(self, rows: CompactRows) -> Tensor:
        """:meth:`forward` on inputs already reduced by :func:`compact_rows`."""
        out = self._last_hidden(rows.inputs)
        return self.dropout(out if rows.position is None else out[rows.position])

    def _last_hidden(self, sequences: Tensor) -> Tensor:
        """``nn.LSTM``'s recurrence (gate order i, f, g, o) with its own weights, written out.

        The input projections of all periods are one matrix product. The features are data, so
        autograd computes only the weight gradient; ``nn.LSTM``'s fused kernel would also return
        the gradient w.r.t. its input — the dominant cost with 50k words x 1,024 features
        (2.2x slower fwd+bwd in our measurement). Equality with ``nn.LSTM`` is tested.

        The periods' projections are taken apart with ``unbind``: its backward stacks the periods'
        gradients into one new tensor, where indexing ``gates_x[:, t]`` had each period's backward
        fill a zero tensor of ``gates_x``'s size and add them up (~30% of this function's
        fwd+bwd). The same floats: ``g + 0`` is ``g`` (bar ``−0``, which only a sum of
        zeros could show).
        """
        lstm = self.lstm
        gates_x = nn.functional.linear(sequences, lstm.weight_ih_l0, lstm.bias_ih_l0 + lstm.bias_hh_l0)
        h = c = None
        for step in gates_x.unbind(1):   # over the periods, oldest first
            gates = step if h is None else step + h @ lstm.weight_hh_l0.t()
            i, f, g, o = gates.chunk(4, dim=1)
            i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
            c = i * g if c is None else f * c + i * g
            h = o * c.tanh()
        assert h is not None
        return h


@dataclass(frozen=True)
class CompactRows:
    """An LSTM input with the unobserved words folded into one row: ``inputs`` ``[R, m, f]``
    (the observed rows, then one representative) and ``position[w]`` = row of word ``w``
    (``None``: every word has its own row, ``inputs`` is the full input)."""

    inputs: Tensor
    position: Tensor | None = None


def compact_rows(sequences: Tensor, observed: Tensor | None) -> CompactRows:
    """The rows of ``sequences`` ``[|V|, m, f]`` the LSTM must run on (:class:`CompactRows`)."""
    if sequences.dim() != 3:
        raise ValueError(f"PeriodLSTM expects [|V|, periods, features], got {tuple(sequences.shape)}")
    if observed is None or bool(observed.all()):
        return CompactRows(sequences)
    rows = observed.nonzero().squeeze(1)
    representative = (~observed).nonzero()[0]
    position = torch.full_like(observed, rows.numel(), dtype=torch.long)
    position[rows] = torch.arange(rows.numel(), device=rows.device)
    return CompactRows(sequences[torch.cat([rows, representative])].contiguous(), position)


class HistoryCache:
    """Tensors computed from a history alone, kept as long as that history object lives.

    A history does not change, so what the bias modules derive from it (the contextual LSTM
    input, its compact rows) is built once per history instead of once per training step; a
    training run holds one history per period, so this is one entry per period. Keyed by object
    identity (a history's tensors are never compared).
    """

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, history: PeriodHistory, build: Callable[[], T]) -> T:
        key = id(history)
        hit = self._items.get(key)
        if hit is not None and hit[0]() is history:
            return hit[1]
        value = build()
        self._items[key] = (weakref.ref(history, lambda _, k=key: self._items.pop(k, None)), value)
        return value

    def __deepcopy__(self, memo: dict) -> HistoryCache:
        return HistoryCache()   # a copied module starts with an empty cache


def context_rows(bias: TemporalBias, history: PeriodHistory) -> CompactRows:
    """The contextual LSTM's compact input for ``history`` (built once per history)."""
    return bias._cache.get(history, lambda: compact_rows(
        context_inputs(history, bias.config.settings.context_input), history.observed))


def context_inputs(history: PeriodHistory, mode: str) -> Tensor:
    """The contextual LSTMs' input per word and period, ``[|V|, m, features]``.

    * ``paper`` — eq. 8 exactly: ``V_{y,w}`` (eq. 7), ``[|V|, m, d_enc]``. The paper does not
      define ``V_{y,w}`` for a period in which ``w`` does not occur; that period's input is zeros.
    * ``flagged`` — ``[V_{y,w}, seen_{y,w}]``, ``[|V|, m, d_enc + 1]``, where an unseen period's
      ``V`` is carried forward from the latest earlier period of the window in which ``w`` occurred
      (:func:`pipeline.features.history.dense_history`). The flag lets the LSTM tell a real vector from a
      carried one or from the zeros of a never-seen token.
    """
    if history.emb is None or history.emb_seen is None:
        raise ValueError("this bias needs contextual embeddings: load the history with "
                         "kinds={'embeddings', ...} (pipeline.features.history.load_history)")
    seen = history.emb_seen.to(history.emb.dtype).unsqueeze(-1)
    if mode == "paper":
        return history.emb * seen
    if mode == "flagged":
        return torch.cat([history.emb, seen], dim=-1)
    raise ValueError(f"unknown context input {mode!r}; expected one of {CONTEXT_INPUTS}")


class FrequencyBias(TemporalBias):
    """Frequency (eq. 6): ``B_iw = Aᵀ LSTM(log f_{i-m,w}, …, log f_{i-1,w})``."""


    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        hidden = config.settings.lstm_hidden
        self.lstm = PeriodLSTM(1, hidden, config.dropout)
        self.A = nn.Linear(hidden, 1, bias=False)

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        rows = self._cache.get(history, lambda: compact_rows(history.log_freq.unsqueeze(-1),
                                                             history.observed))
        return self.A(self.lstm.run(rows)).squeeze(-1)


class ContextBias(TemporalBias):
    """Context (eq. 8): ``B_iw = Aᵀ LSTM(V_{i-m,w}, …, V_{i-1,w})``, V from eq. 7 (embeddings stage)."""


    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        hidden = config.settings.lstm_hidden
        self.lstm = PeriodLSTM(context_features(config), hidden, config.dropout)
        self.A = nn.Linear(hidden, 1, bias=False)

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        return self.A(self.lstm.run(context_rows(self, history))).squeeze(-1)


class Context2Bias(TemporalBias):
    r"""Context² — doubly contextualized (eq. 9-10), computed in O(T·|V|).

    Paper: ``U_iw = LSTM(V_{i-m,w}, …, V_{i-1,w}) ∈ R^d``, ``B̃_iw = (E_wᵀ U_iw) A`` with
    ``A ∈ R^d``, and ``B_ikw = α σ(H_kᵀ C B̃_iw) · (E_wᵀ D B̃_iw)`` with ``C, D ∈ R^{d×d}``.

    Reduction. ``E_wᵀ U_iw`` is a scalar, call it ``s_w``; so ``B̃_iw = s_w A`` is a multiple of
    the single vector ``A`` and both bilinear forms factor::

        H_kᵀ C B̃_iw = s_w · (H_kᵀ (C A)) = s_w · g_k      g_k = H_kᵀ c,  c = C A  (per position)
        E_wᵀ D B̃_iw = s_w · (E_wᵀ (D A)) = s_w · v_w      v_w = E_wᵀ e,  e = D A  (per word)

        B_ikw = α · σ(g_k · s_w) · (s_w · v_w)

    ``word_terms`` returns ``[s_w, s_w v_w]`` (cost O(|V|·d), once per period) and ``position_bias``
    an outer product through the sigmoid, ``[..., T, |V|]`` — the size of the logits themselves;
    no ``[T, |V|, d]`` tensor is ever formed. With ``α = 0`` the bias is exactly zero.

    The LSTM's hidden size is ``lstm_hidden``; a linear map takes it to the LM's d when they differ
    (the paper used 768 = d of GPT-2, where the map is omitted). ``C`` and ``D`` start as the
    identity and ``A`` small-random: the bias is quadratic in ``A``, so ``A = 0`` could never move.
    """


    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        if not config.feature_dim or not config.lm_dim:
            raise ValueError("context2 bias needs feature_dim (embeddings) and lm_dim (LM hidden size)")
        d, hidden = config.lm_dim, config.settings.lstm_hidden
        self.lstm = PeriodLSTM(context_features(config), hidden, config.dropout)
        self.to_lm = nn.Identity() if hidden == d else nn.Linear(hidden, d, bias=False)
        self.A = nn.Parameter(torch.randn(d) / math.sqrt(d))
        self.C = nn.Parameter(torch.eye(d))
        self.D = nn.Parameter(torch.eye(d))
        if config.settings.alpha is None:
            self.alpha = nn.Parameter(torch.ones(()))
        else:
            self.register_buffer("alpha", torch.tensor(float(config.settings.alpha)))

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        E = output_embeddings[: history.vocab_size]                     # [|V|, d]
        U = self.to_lm(self.lstm.run(context_rows(self, history)))        # [|V|, d] (eq. 9)
        with fp32(E.device):   # the per-word scalars of the gate, in fp32 (under bf16 autocast too)
            s = (E * U.float()).sum(-1)                                 # s_w = E_wᵀ U_iw
            v = E.float() @ (self.D @ self.A)                           # v_w = E_wᵀ D A
            return torch.stack([s, s * v])

    def position_bias(self, terms: Tensor, hidden: Tensor) -> Tensor:
        """Eq. 10 as written (the readable reference; training uses the fused :meth:`add_bias`)."""
        s, sv = terms[0], terms[1]
        g = hidden @ (self.C @ self.A)                                  # g_k = H_kᵀ C A
        return self.alpha * torch.sigmoid(g.unsqueeze(-1) * s) * sv

    def add_bias(self, terms: Tensor, hidden: Tensor, logits: Tensor) -> Tensor:
        """Eq. 10 added to the logits, fused (:class:`_GatedWordBias`), computed in fp32 whatever
        the logits' dtype: bf16 would round the gate's argument ``g_k s_w`` to 3 digits."""
        with fp32(hidden.device):
            s, sv = terms[0].float(), terms[1].float()
            g = hidden.float() @ (self.C @ self.A)
            out = _GatedWordBias.apply(logits.reshape(-1, logits.shape[-1]), g.reshape(-1), s,
                                       self.alpha * sv)
        return out.view(logits.shape)


def fp32(device: torch.device) -> torch.autocast:
    """A block computed in fp32 even inside a bf16 autocast region."""
    return torch.autocast(device.type, enabled=False)


class _GatedWordBias(torch.autograd.Function):
    """``out[n, w] = z[n, w] + σ(g_n s_w) · c_w`` (eq. 10 added to the logits), fused.

    ``g``, ``s``, ``c`` and every intermediate are fp32; the output has the logits' dtype (bf16
    logits get the fp32 sum rounded once).

    Plain autograd of the broadcast products keeps several ``[positions, |V|]`` temporaries and
    reduces gradients over broadcast dimensions slowly. Here the forward makes one such tensor
    besides the output (``addcmul`` adds to the logits in the same pass), the logits' gradient
    passes through unchanged, and the other reductions are matrix-vector products:
    ``∂g_n = Σ_w δ_nw s_w``, ``∂s_w = Σ_n δ_nw g_n`` with ``δ = G c σ(1-σ)``, ``∂c_w = Σ_n G_nw σ_nw``.
    """

    @staticmethod
    def forward(ctx, z: Tensor, g: Tensor, s: Tensor, c: Tensor) -> Tensor:  # type: ignore[override]
        sig = torch.outer(g, s).sigmoid_()
        ctx.save_for_backward(g, s, c, sig)
        if z.dtype == sig.dtype:
            return torch.addcmul(z, sig, c)
        return torch.addcmul(z.to(sig.dtype), sig, c).to(z.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:  # type: ignore[override]
        g, s, c, sig = ctx.saved_tensors
        wide = grad.to(sig.dtype)
        grad_c = (wide * sig).sum(0)
        delta = torch.ops.aten.sigmoid_backward(wide * c, sig)
        return grad, delta @ s, g @ delta, grad_c
