"""The future LM: any Hugging Face causal LM plus a temporal bias on its logits (paper §3).

``logits_k = Eᵀ H_k + B_ik`` where ``B_i`` comes from :mod:`pipeline.models.temporal` and the history of
period ``i`` (:class:`pipeline.features.history.PeriodHistory`; a period is a year, half-year,
quarter or month, :mod:`pipeline.corpus.periods`). The output-layer variants of
:mod:`pipeline.models.heads` (contextual temperature, continuous output) plug into the same hook
and may train on their own objective (:meth:`FutureLM.forward` with ``targets``).

How the bias gets in: while a history is active (:meth:`FutureLM.biased`), a forward hook on the
LM's output-embedding layer (``lm_head``) adds the bias to that layer's output. The hook sees the
layer's input — exactly the final hidden states ``H_k`` that Context² needs — and its output, in
whatever shape the model computed it. So the same code path serves training, scoring and every
``generate()`` strategy (greedy, sampling, beam search with sampling): logits processors then see
already-biased logits, and beam search's log-softmax normalises the biased distribution. It works
for any architecture whose logits come from ``get_output_embeddings()`` (GPT-2, Llama/SmolLM2, …).

The history-only part of the bias (:meth:`FutureLM.word_terms`) is computed once on entering
:meth:`FutureLM.biased` (once per ``generate`` call), never per position or per decoding step;
training computes it once per optimizer step and passes it in (``terms=``) for every micro-batch.
Without gradients and in eval mode (scoring, dev perplexity) it is computed once per history and
set of weights: a cache keyed by the history object and the version counters of the weights it
reads returns the very tensor computed before, so results are bit-identical.

Attention runs through PyTorch's scaled-dot-product kernel (SDPA, :func:`use_sdpa`) for every
LM built or loaded here. Every future LM's dropout (attention dropout included) is the portable
one of :mod:`pipeline.models.portable` (swapped in by :class:`FutureLM` itself, so models built,
trained and loaded alike): with the pinned CPU kernels (:mod:`pipeline.infra.numerics`) and the
same thread count its weights, scores and generations are the same bytes on the AMD CPUs
measured (Zen 3, Zen 5), though not on an Intel Xeon (``docs/numerics.md``).

A future LM also carries its *context length*: the tokens per abstract it was trained on
(``train.max_length``). Scoring cuts abstracts at that same length, so the reported perplexity
is measured on the positions the model was trained on (:mod:`pipeline.models.encoding`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_model, save_file
from torch import Tensor, nn
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

from pipeline.infra.errors import UserError
from pipeline.corpus.periods import in_time_order
from pipeline.features.base_cache import HiddenMemo
from pipeline.features.history import PeriodHistory, load_history
from pipeline.features.windows import history_periods
from pipeline.infra.io import atomic_path, write_json
from pipeline.models.nll import mean_nll, next_token_targets
from pipeline.models.portable import ATTENTION as PORTABLE_ATTENTION
from pipeline.models.portable import make_portable
from pipeline.models.registry import by_kind, lookup
from pipeline.models.temporal import TemporalBias
from pipeline.variants._spec import BiasConfig

FORMAT_VERSION = 3   # 2: config.json records context_length and seed; 3: the variant's settings
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"


class FutureLM(nn.Module):
    """A causal LM whose logits for period ``i`` carry the temporal bias predicted from its history.

    ``bias_config.kind == "none"`` gives the Baseline: the plain LM (``history`` may be ``None``).
    ``context_length``: tokens per abstract the model is trained and scored on (default: the LM's
    position limit); ``seed``: the training seed, recorded with the model (may be ``None``).
    """

    def __init__(self, lm: PreTrainedModel, bias_config: BiasConfig, variant: str, *,
                 context_length: int | None = None, seed: int | None = None) -> None:
        super().__init__()
        if lookup(variant).kind != bias_config.kind:
            raise ValueError(f"variant {variant!r} needs bias kind {lookup(variant).kind!r}, "
                             f"got {bias_config.kind!r}")
        limit = lm_positions(lm)
        context_length = limit if context_length is None else int(context_length)
        if not 2 <= context_length <= limit:
            raise ValueError(f"context length {context_length} must be between 2 and the LM's "
                             f"{limit} positions")
        self.lm = lm
        self.bias_config = bias_config
        self.bias = build_module(bias_config)
        if self.bias is not None:
            self.bias.attach(lm)   # temporal attention swaps the LM's attention layers
        make_portable(self)   # the same dropout masks on any CPU (pipeline.models.portable)
        self.variant = variant
        self.context_length = context_length
        self.seed = seed
        self._terms_cache: tuple[Any, ...] | None = None
        self.hidden_memo: HiddenMemo | None = None   # use_hidden_memo

    def use_hidden_memo(self, memo: HiddenMemo | None) -> None:
        """Read the frozen LM's final hidden states of whole abstracts from ``memo`` (a
        :class:`pipeline.features.base_cache.HiddenMemo` of this very LM) instead of running its
        body, in eval mode; :meth:`forward` then runs only ``lm_head`` and the bias. The caller
        checks the cache's identity; a module that changes the hidden states (``in_body``) cannot."""
        if memo is not None and lookup(self.variant).in_body:
            raise ValueError(f"the {self.variant} module changes the LM's hidden states: its "
                             "scores cannot come from the plain LM's cached states")
        self.hidden_memo = memo

    @property
    def window(self) -> int:
        return self.bias_config.window

    @property
    def device(self) -> torch.device:
        """Where the weights are (the LM and the bias move together with ``.to``): the device
        every caller puts its token ids and histories on."""
        return next(self.parameters()).device

    @property
    def static_periods(self) -> tuple[str, ...] | None:
        """A time-free control's pooling periods (its training periods, recorded in its
        ``BiasConfig``): pass them to :func:`load_histories` / ``load_history``; ``None`` for
        every other model."""
        return self.bias_config.static_periods

    @property
    def reference_periods(self) -> tuple[str, ...] | None:
        """A relative variant's reference periods (its training periods, recorded in its
        ``BiasConfig``), whose pooled log frequency its histories carry: pass them to
        :func:`load_histories` / ``load_history``; ``None`` for every other model."""
        return self.bias_config.reference_periods

    @property
    def history_kinds(self) -> set[str]:
        """The features :func:`pipeline.features.history.load_history` must load for this model."""
        return set(by_kind(self.bias_config.kind).reads)

    def word_terms(self, history: PeriodHistory) -> Tensor:
        """The history-only part of period ``i``'s bias (:meth:`TemporalBias.word_terms`), padded to
        the LM's output vocabulary. Cached without gradients in eval mode (module doc)."""
        if self.bias is None:
            raise ValueError(f"the {self.variant} model has no temporal bias")
        if history is None and self.history_kinds:
            raise ValueError(f"the {self.variant} model needs the history of the scored period: "
                             "pass history=pipeline.features.history.load_history(...)")
        missing = self.history_kinds - (_loaded_kinds(history) if history is not None else set())
        if missing:
            raise ValueError(f"the {self.variant} model needs history kinds {sorted(missing)}: "
                             f"load_history(..., kinds={sorted(self.history_kinds)})")
        if history is not None and self.reference_periods is not None \
                and history.reference_periods != self.reference_periods:
            raise ValueError(f"the {self.variant} model reads its history relative to the pooled "
                             f"level of {list(self.reference_periods)}, the history carries "
                             f"{list(history.reference_periods) or 'none'}: load it with "
                             "reference_periods=model.reference_periods")
        weight = self.lm.get_output_embeddings().weight
        if history is not None and history.vocab_size > weight.shape[0]:
            raise ValueError(f"history has |V|={history.vocab_size} but the LM only "
                             f"{weight.shape[0]} output tokens: features and model must share "
                             "data/tokenizer")
        cacheable = not torch.is_grad_enabled() and not self.bias.training
        key = (_tensor_versions([weight, *self.bias.parameters(), *self.bias.buffers()]),
               torch.is_autocast_enabled(weight.device.type),
               torch.get_autocast_dtype(weight.device.type))
        cached = self._terms_cache
        if cacheable and cached is not None and cached[0] is history and cached[1] == key:
            return cached[2]
        on_device = (history if history is None or history.log_freq.device == weight.device
                     else history.to(weight.device))
        terms = self.bias.word_terms(on_device, weight)   # type: ignore[arg-type]
        if self.bias.adds_logits:
            # Models may pad their output vocabulary beyond the tokenizer's; those ids get no bias.
            terms = F.pad(terms, (0, weight.shape[0] - terms.shape[-1]))
        self._terms_cache = (history, key, terms) if cacheable else None
        return terms

    @contextlib.contextmanager
    def biased(self, history: PeriodHistory | None, terms: Tensor | None = None) -> Iterator[None]:
        """Within this block every logits computation of ``self.lm`` includes period ``i``'s bias.

        ``terms``: :meth:`word_terms` of ``history``, when the caller computed them already (a
        training step shares them across its micro-batches).
        """
        if self.bias is None:
            yield
            return
        if terms is None:
            terms = self.word_terms(history)   # type: ignore[arg-type]
        bias = self.bias

        def add_bias(_module: nn.Module, args: tuple[Any, ...], logits: Tensor) -> Tensor:
            return bias.add_bias(terms, args[0], logits)

        handle = (self.lm.get_output_embeddings().register_forward_hook(add_bias)
                  if bias.adds_logits else None)
        try:
            with bias.conditioned(terms):   # temporal attention: the period's time vector
                yield
        finally:
            if handle is not None:
                handle.remove()

    @property
    def own_objective(self) -> bool:
        """Trained on its module's own loss (:meth:`TemporalBias.objective`: the temperature
        heads' loss scaling, the continuous heads' losses) instead of the logits' NLL."""
        return self.bias is not None and by_kind(self.bias_config.kind).output_layer

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                history: PeriodHistory | None = None, labels: Tensor | None = None,
                terms: Tensor | None = None, targets: Tensor | None = None
                ) -> CausalLMOutputWithPast:
        """Biased logits ``[B, T, |V|]``; with ``labels`` also the mean next-token NLL.

        ``labels`` follow the HF convention (unshifted, ``-100`` = ignored); positions where
        ``attention_mask`` is 0 are ignored too. The loss is :func:`pipeline.models.nll.mean_nll`, the
        same computation as the dev and reported perplexities (fp32, memory-capped).
        ``terms``: precomputed :meth:`word_terms` of ``history`` (see :meth:`biased`).

        ``targets`` (next-token ids, :func:`pipeline.models.nll.next_token_targets`), only for a
        model with :attr:`own_objective`: returns its training loss summed over the positions
        (``loss``) and no logits. It reads the final hidden states from the LM's body
        (``base_model``: what ``lm_head`` reads) and never forms the logits unless the loss needs
        them; going through ``forward`` keeps DistributedDataParallel's gradient sync.
        """
        if targets is not None:
            if not self.own_objective:
                raise ValueError(f"the {self.variant} model trains on its logits' NLL: "
                                 "call it without targets")
            hidden = self.lm.base_model(input_ids=input_ids, attention_mask=attention_mask,
                                        use_cache=False).last_hidden_state
            return CausalLMOutputWithPast(loss=self.own_loss(hidden, targets, history, terms),
                                          logits=None)
        hidden = (self.hidden_memo.lookup(input_ids, attention_mask)
                  if self.hidden_memo is not None and not self.lm.training else None)
        with self.biased(history, terms):
            if hidden is not None:   # the frozen LM's cached states: only its output layer runs
                logits = self.lm.get_output_embeddings()(hidden)
            else:
                logits = self.lm(input_ids=input_ids, attention_mask=attention_mask,
                                 use_cache=False).logits
        loss = None
        if labels is not None:
            loss = mean_nll(logits, next_token_targets(labels, attention_mask))
        return CausalLMOutputWithPast(loss=loss, logits=logits)

    def own_loss(self, hidden: Tensor, targets: Tensor, history: PeriodHistory | None = None,
                 terms: Tensor | None = None) -> Tensor:
        """The training loss of a model with :attr:`own_objective`, summed over the positions
        with a target, from the final hidden states ``hidden`` ``[B, T, d]`` (what ``lm_head``
        reads): :meth:`TemporalBias.objective` with the LM's output layer. The one computation
        behind :meth:`forward` with ``targets`` (the LM's body ran) and cached training
        (:mod:`pipeline.training.cached`: the frozen LM's stored states). Positions whose target
        is ``-100`` (padding, the last one) add nothing, whatever finite ``hidden`` holds
        there.
        ``terms``: precomputed :meth:`word_terms` of ``history``."""
        if not self.own_objective:
            raise ValueError(f"the {self.variant} model trains on its logits' NLL: it has no "
                             "loss of its own")
        terms = self.word_terms(history) if terms is None else terms   # type: ignore[arg-type]
        return self.bias.objective(terms, hidden, self.lm.get_output_embeddings(), targets)

    def logits_under(self, input_ids: Tensor, attention_mask: Tensor | None,
                     histories: Sequence[PeriodHistory | None]) -> list[Tensor]:
        """The biased logits of one batch under each of ``histories``: what :meth:`forward`
        returns for each, but the LM's body and output layer run once (or its states come from
        the memo) when the module only reads the final hidden states, and each history adds its
        bias to the same plain logits (the forecast's p̂_Y and p̂'_{Y−1} on the same contexts)."""
        if self.bias is None or not self.bias.adds_logits or len(histories) < 2:
            return [self(input_ids, attention_mask, h).logits for h in histories]
        hidden = (self.hidden_memo.lookup(input_ids, attention_mask)
                  if self.hidden_memo is not None and not self.lm.training else None)
        if hidden is None:
            hidden = self.lm.base_model(input_ids=input_ids, attention_mask=attention_mask,
                                        use_cache=False).last_hidden_state
        plain = self.lm.get_output_embeddings()(hidden)   # what the bias hook receives
        return [self.bias.add_bias(self.word_terms(h), hidden, plain)   # type: ignore[arg-type]
                for h in histories]

    @torch.no_grad()
    def generate(self, input_ids: Tensor, history: PeriodHistory | None = None,
                 **generate_kwargs: Any) -> Tensor:
        """``self.lm.generate`` with the bias of ``history``'s period applied at every step."""
        with self.biased(history):
            return self.lm.generate(input_ids=input_ids, **generate_kwargs)


def _tensor_versions(tensors: Iterable[Tensor]) -> tuple[tuple[int, int], ...]:
    """Storage address and in-place version counter of each tensor: changes whenever an
    optimizer step, ``load_state_dict`` or a device move changes the weights."""
    return tuple((t.data_ptr(), t._version) for t in tensors)


def _loaded_kinds(history: PeriodHistory) -> set[str]:
    kinds = {"frequencies"}
    if history.emb is not None:
        kinds.add("embeddings")
    if history.forecast is not None:
        kinds.add("forecasts")
    return kinds


def lm_positions(lm: PreTrainedModel) -> int:
    """The most positions ``lm`` can attend over (GPT-2 ``n_positions``, Llama
    ``max_position_embeddings``)."""
    config = lm.config
    n = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if not n:
        raise ValueError(f"cannot tell the context length of {type(lm).__name__} from its config")
    return int(n)


def make_future_lm(lm: PreTrainedModel, variant: str, window: int, *, settings: Any = None,
                   dropout: float = 0.0, feature_dim: int | None = None,
                   context_length: int | None = None, seed: int | None = None,
                   target_vectors: Tensor | None = None,
                   static_periods: Sequence[str] | None = None,
                   reference_periods: Sequence[str] | None = None) -> FutureLM:
    """Wrap ``lm`` as the future LM ``variant`` (a registry name) with its ``settings`` (its
    variant module's settings class; its defaults if ``None``); ``feature_dim``: the contextual
    embedding size (variants reading embeddings); ``target_vectors`` ``[|V|, E]``: the fixed
    targets of a variant with ``targets_from_baseline`` (required for it); ``static_periods``:
    a time-free control's pooling periods, its training periods (required for it, refused for
    any other variant); ``reference_periods``: a relative variant's reference periods, its
    training periods (required for it, refused for any other)."""
    entry = lookup(variant)
    if entry.static != (static_periods is not None):
        raise ValueError(f"the {variant} variant " + (
            "is a time-free control: pass its pooling periods (static_periods=, its training "
            "periods)" if entry.static else f"pools no history, got static_periods={static_periods}"))
    if entry.relative != (reference_periods is not None):
        raise ValueError(f"the {variant} variant " + (
            "reads its history relative to the training periods' pooled level: pass them "
            "(reference_periods=)" if entry.relative
            else f"reads no reference level, got reference_periods={reference_periods}"))
    spec = entry.spec
    if spec is not None and settings is None:
        settings = spec.default_settings()
    if (spec is None or spec.settings is None) and settings is not None:
        raise ValueError(f"the {variant} variant has no settings, got {type(settings).__name__}")
    if spec is not None and spec.settings is not None and not isinstance(settings, spec.settings):
        raise ValueError(f"the {variant} variant's settings are a {spec.settings.__name__}, "
                         f"got {type(settings).__name__}")
    needs_targets = entry.targets_from_baseline
    if needs_targets and target_vectors is None:
        raise ValueError(f"the {variant} model needs its target vectors (target_vectors=)")
    weight = lm.get_output_embeddings().weight
    config = BiasConfig(kind=entry.kind, window=window, dropout=dropout,
                        lm_dim=int(weight.shape[1]), vocab_size=int(weight.shape[0]),
                        feature_dim=feature_dim if "embeddings" in entry.reads else None,
                        target_dim=(int(target_vectors.shape[1])   # type: ignore[union-attr]
                                    if needs_targets else None),
                        settings=settings if spec is not None else None,
                        static_periods=(None if static_periods is None
                                        else tuple(in_time_order(static_periods))),
                        reference_periods=(None if reference_periods is None
                                           else tuple(in_time_order(reference_periods))))
    model = FutureLM(lm, config, variant, context_length=context_length, seed=seed)
    if needs_targets:
        model.bias.set_targets(target_vectors)   # type: ignore[union-attr, operator]
    return model


def build_module(config: BiasConfig) -> TemporalBias | None:
    """The module of ``config.kind``'s variant (its class named by the variant module);
    ``None`` for ``none`` (a baseline: the plain LM)."""
    variant = by_kind(config.kind)
    return variant.module_class()(config) if variant.has_module else None


def load_histories(periods: Iterable[str | int], window: int, kinds: Collection[str],
                   frequencies_dir: str | Path | None, embeddings_dir: str | Path | None, *,
                   tokenizer: str | Path | None = None,
                   static_periods: Sequence[str] | None = None,
                   reference_periods: Sequence[str] | None = None) -> dict[str, PeriodHistory]:
    """The history of each of ``periods`` (labels, :mod:`pipeline.corpus.periods`; an int is a
    year), keyed by label in time order, for a model reading ``kinds`` (``{}`` when it reads none).
    ``static_periods`` (a time-free control's, :attr:`FutureLM.static_periods`): every period
    gets the one history pooled over them, read once. ``reference_periods`` (a relative
    variant's, :attr:`FutureLM.reference_periods`): every history carries their pooled log
    frequency (:attr:`PeriodHistory.reference`), read once and shared.

    ``tokenizer``: the LM tokenizer folder in use; feature files computed with another one are
    refused (:func:`pipeline.features.history.load_history`). A missing feature folder or period is a
    :class:`UserError` naming it and the stage to run.
    """
    if not kinds:
        return {}
    if frequencies_dir is None or ("embeddings" in kinds and embeddings_dir is None):
        needed = "--frequencies and --embeddings" if "embeddings" in kinds else "--frequencies"
        raise UserError(f"a model reading {sorted(kinds)} needs the per-period feature folders",
                        fix=f"pass {needed}")
    ordered = in_time_order(periods)
    if not ordered:
        return {}
    first = load_history(ordered[0], window, frequencies_dir, embeddings_dir, kinds=kinds,
                         tokenizer=tokenizer, static_periods=static_periods,
                         reference_periods=reference_periods)
    if static_periods is not None:
        return {p: replace(first, period=p, periods=history_periods(p, window)) for p in ordered}
    histories = {ordered[0]: first}
    for period in ordered[1:]:
        history = load_history(period, window, frequencies_dir, embeddings_dir, kinds=kinds,
                               tokenizer=tokenizer)
        if reference_periods is not None:   # the same for every period: read once, shared
            history = replace(history, reference=first.reference,
                              reference_periods=first.reference_periods)
        histories[period] = history
    return histories


def scratch_gpt2(vocab_size: int, eos_token_id: int, *, n_layer: int, n_head: int, n_embd: int,
                 n_positions: int, dropout: float) -> GPT2LMHeadModel:
    """A small random-init GPT-2 for the offline default (``lm.base: scratch``).

    Initialisation draws from torch's global RNG: seed it first for reproducible weights.
    """
    config = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd,
                        n_layer=n_layer, n_head=n_head, resid_pdrop=dropout, embd_pdrop=dropout,
                        attn_pdrop=dropout, bos_token_id=eos_token_id, eos_token_id=eos_token_id,
                        pad_token_id=eos_token_id, attn_implementation="sdpa")
    return GPT2LMHeadModel(config)


def use_sdpa(lm: PreTrainedModel) -> PreTrainedModel:
    """Switch ``lm``'s attention to PyTorch's fused scaled-dot-product kernel where the
    architecture has that path (GPT-2, Llama, ...; transformers' default too): the same
    computation as eager attention, in one kernel (flash / memory-efficient on CUDA)."""
    if lm.config._attn_implementation not in ("sdpa", PORTABLE_ATTENTION):
        try:
            lm.set_attn_implementation("sdpa")
        except (ValueError, ImportError):
            pass   # an architecture without SDPA support keeps its own attention
    return lm


def write_future_lm(model: FutureLM, directory: str | Path) -> None:
    """Write ``config.json`` + ``model.safetensors`` into the existing folder ``directory``.

    Not atomic by itself: use :func:`save_future_lm`, or call this on a folder that is published
    atomically as a whole (the train stage adds its metrics and curves first). The base LM's full
    config is embedded, so :func:`load_future_lm` needs neither the hub nor the original files.
    """
    directory = Path(directory)
    config = {"format_version": FORMAT_VERSION, "variant": model.variant, "seed": model.seed,
              "context_length": model.context_length, "bias": model.bias_config.to_dict(),
              "lm_config": model.lm.config.to_dict()}
    write_json(config, directory / CONFIG_NAME)
    # Byte-identical files for identical weights: safetensors writes its metadata map in a
    # per-process random order, so it gets a single key; tied names need no record because
    # load_model re-derives them from the model (save_model's alias entries made headers vary).
    save_file(_dedupe_tied(model.state_dict()), str(directory / WEIGHTS_NAME),
              metadata={"format": "pt"})


def _dedupe_tied(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """One entry per shared storage (GPT-2's ``lm_head`` is ``wte``): the first name in sorted
    order is stored; ``load_model`` fills the tied twins from the model's own structure."""
    tensors: dict[str, Tensor] = {}
    owners: set[tuple[int, int, tuple[int, ...]]] = set()
    for name in sorted(state):
        t = state[name]
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
        if key not in owners:
            owners.add(key)
            tensors[name] = t.detach().contiguous()
    return tensors


def save_future_lm(model: FutureLM, directory: str | Path) -> None:
    """Save ``model`` as the folder ``directory`` atomically (an existing folder is replaced)."""
    with atomic_path(directory) as tmp:
        tmp.mkdir()
        write_future_lm(model, tmp)


def load_future_lm(directory: str | Path, device: str | torch.device = "cpu") -> FutureLM:
    """Rebuild a :class:`FutureLM` saved by :func:`save_future_lm` (offline, no hub access).

    A missing, corrupt or truncated ``config.json`` / ``model.safetensors`` is a
    :class:`UserError` naming the file and the stage that rewrites it.
    """
    directory = Path(directory)
    config_path, weights_path = directory / CONFIG_NAME, directory / WEIGHTS_NAME
    fix = _retrain_fix(directory)
    if not config_path.exists():
        raise UserError(f"{directory} is not a saved future LM (no {CONFIG_NAME})",
                        path=config_path, fix=fix)
    try:
        config = json.loads(config_path.read_text())
        version = config.get("format_version")
    except (ValueError, AttributeError, UnicodeDecodeError) as err:
        raise UserError(f"the model's {CONFIG_NAME} is corrupt ({err})", path=config_path,
                        fix=fix) from None
    if version != FORMAT_VERSION:
        raise UserError(f"the model was saved in format {version!r}; this futurelm reads "
                        f"format {FORMAT_VERSION} (which records the variant's own settings)",
                        path=config_path, fix=fix)
    try:
        lm_config = dict(config["lm_config"])
        lm = use_sdpa(AutoModelForCausalLM.from_config(
            CONFIG_MAPPING[lm_config["model_type"]].from_dict(lm_config)))
        bias = BiasConfig.from_dict(config["bias"], by_kind(config["bias"]["kind"]).settings)
        model = FutureLM(lm, bias, config["variant"],
                         context_length=config["context_length"], seed=config.get("seed"))
    except (KeyError, TypeError, ValueError) as err:
        raise UserError(f"the model's {CONFIG_NAME} is corrupt or incomplete "
                        f"({type(err).__name__}: {err})", path=config_path, fix=fix) from None
    if not weights_path.exists():
        raise UserError("the model's weights are missing", path=weights_path, fix=fix)
    try:
        load_model(model, str(weights_path), strict=True, device=str(device))
    except Exception as err:   # safetensors raises its own error types for truncated files
        raise UserError(f"the model's weights cannot be read: {type(err).__name__}: {err}",
                        path=weights_path, fix=fix) from None
    return model.to(device).eval()


def _retrain_fix(directory: Path) -> str:
    """The command that rewrites a model folder ``<variant>-s<seed>``."""
    run = re.fullmatch(r"(?P<variant>.+)-(?P<seed>s\d+)", directory.name)
    stage = f"train-{run['variant']}@{run['seed']}" if run else "train-<variant>@s<seed>"
    return f"retrain the model: `dvc repro -f {stage}` (the train stage that writes {directory})"
