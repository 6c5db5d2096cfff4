"""Semantic change with a temporal-attention masked LM (paper 003, §4 and Algorithm 1).

A BERT masked LM whose self-attention is eq. 2's temporal attention
(:mod:`pipeline.models.temporal_attention`) is trained on the texts of the first and last group
of periods, each text with its period as time point (the index of its period among the groups'
periods, in time order; padding and ``[MASK]`` tokens get the layer's two special time points,
footnote 3). Then, per target word, Algorithm 1: up to ``n`` sentences per period that hold the
word (:func:`pipeline.corpus.sentences.split_sentences`, matched by
:func:`pipeline.corpus.pseudowords.word_pattern`, drawn at random with the seed when there are
more) are run through the model *with their period's time point*; a sentence's vector ``v`` is
the mean, over the word's sub-tokens (every occurrence in the sentence), of the mean of the last
``h`` hidden layers (lines 5-7); ``x_t`` is the mean of a period's ``v`` (line 10); a group's
vector is the mean of its periods' ``x_t`` (one period per group in the paper); the score is the
cosine distance of the two groups' vectors (line 12), NaN where a group never sees the word.

Initialisation: ``init`` is a BERT encoder (hub name, resolved offline by
:mod:`pipeline.models.hub`; its weights, a fresh MLM head and fresh temporal modules) or
``"scratch"`` (a small random BERT with ``embeddings.encoder``'s tokenizer). The default is
scratch, measured on the sample (2017 → 2021, 10 changed + 10 stable pseudo-words, seed 0, 2 CPU
cores shared with other jobs): all-MiniLM-L6-v2 with temporal attention costs ~13 s per training
step of 16×128 tokens (6 layers of 384 plus the 30k-word head), so 20 steps (a third of an
epoch) took 258 s and left the model far from trained (MLM loss 10.4 → 7.5, Spearman 0.04):
eq. 2 replaces every pretrained query by its projection on the time rows (rank 1 for one time
point per text), so the pretrained attention must be relearnt and a few steps are not enough.
A 2-layer, 128-wide BERT from scratch (one head per 64) trains whole epochs instead: 61 steps
per epoch on the sample (the 30k-word MLM head, run on the masked positions only, is most of a
step). Seed 0, n = 20, h = 2: 2 epochs (122 steps) Spearman 0.32, 4 epochs (MLM loss 10.3 → 6.4)
0.30; a first trial with n = 30 gave 0.45 at 2 epochs — noisy on 20 words, and 4 epochs cost
twice the time without a gain, so the default is 2 epochs. Contention on the shared 2 cores
made those timings vary 5x (0.6-5 s a step); in the default run on an otherwise idle machine the
method took 24 s in all (the target: 60 s).

**Training data and budget** (:func:`training_texts`, :func:`train`): the model trains on each
period's sentences holding a target, at most ``usages`` per target (the contextual method's
seeded draw), for ``epochs`` passes but at most ``steps`` batches, so its cost grows with the
targets' usages, not with the corpus (``usages`` 0, two epochs over every window of both groups,
took ~17 min per MLM for 40 targets on ~11,000 abstracts, 2 cores). The cap was chosen by
Spearman ρ against steps on 40 pseudo-words of the export (2019 → 2022,
``benchmarks/semantic_mlm_budget.py``, results in ``benchmarks/results/semantic_mlm_budget.md``):
ρ did not rise from 250 to 1,000 steps (it fell, and no budget ranked the words above chance),
so the default is the cheapest budget measured.

**Time tokens** (``method="time-token"``; Rosin, Guy & Radinsky 2022, "Time masking for
temporal language models", WSDM; TempoBERT): the same MLM *without* temporal attention, each
training window prefixed (after ``[CLS]``) by a special token of its period — ``n_periods`` new
vocabulary entries (:class:`TimeTokens`) — and Algorithm 1 the same, each sentence prefixed by
its period's (never masked) token. *Time masking*: in training the time token is left out of the
ordinary ``mask_prob`` draw and masked by its own, higher probability ``time_mask_prob``
(:data:`TIME_MASK_PROB`; like their reference collator: 80 % ``[MASK]``, 10 % another period's
token, 10 % kept, the label its own token), so the model must also predict the period from the
text. ``time_mask_prob=0`` never masks it (the ``time-token-unmasked`` method, and the training
of this module before time masking, draw for draw). The two methods share everything else
(training, sampling, averaging), so their difference is the way the period enters the model.

Deterministic on CPU from ``seed``: the model's initialisation, the batch order and the masks
come from seeded generators, dropout is the portable one (:func:`pipeline.models.portable.
make_portable`), and the sentence draws use ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor
from tqdm import tqdm
from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerBase

from pipeline.corpus.pseudowords import word_pattern
from pipeline.corpus.sentences import split_sentences
from pipeline.models.portable import make_portable
from pipeline.models.temporal_attention import TimeEmbedding, add_temporal_attention, temporal_times
from pipeline.semantic.methods.interface import ChangeInputs, MethodResult
from pipeline.semantic.vectors import cosine_distance

SCRATCH = "scratch"
TEMPORAL_ATTENTION, TIME_TOKEN = "temporal-attention", "time-token"
# The time token's own masking probability (Rosin et al. 2022's time masking; time-token method
# only): higher than the words' 15 %, so the model learns to tell the period from the text.
TIME_MASK_PROB = 0.2


@dataclass(frozen=True)
class TimeTokens:
    """The time-token method's periods: period ``p`` is vocabulary entry ``first + p`` (after the
    tokenizer's own ``first`` entries), prefixed to every text of that period."""

    first: int
    n_periods: int

    def id(self, period: int) -> int:
        return self.first + period


@dataclass(frozen=True)
class TemporalMLMSettings:
    """The temporal-attention method's knobs (params ``semantic_benchmark.temporal_*``)."""

    init: str = SCRATCH
    usages: int = 200       # >0: train on the sentences holding a target, this many per target
                            # and period (training_texts); 0: on every text whole
    epochs: int = 2         # passes over the training texts ...
    steps: int = 250        # ... but at most this many batches (>0; the schedule decays over
                            # the steps taken)
    lr: float = 1e-3        # the model's own weights (~5e-5 for a pretrained init)
    lr_new: float = 1e-3    # the new modules: time embedding, W_T, the MLM head's transform
    batch_size: int = 16
    max_length: int = 128   # tokens per training window and per encoded sentence
    mask_prob: float = 0.15
    time_mask_prob: float = TIME_MASK_PROB  # time-token method: its time token's masking prob.
    sentences: int = 20     # n: sentences per period and word
    layers: int = 2         # h: last hidden layers averaged
    hidden: int = 128       # scratch only: hidden size (heads of 64)
    depth: int = 2          # scratch only: layers
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("mask_prob", "time_mask_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


def build_model(tokenizer: PreTrainedTokenizerBase, n_periods: int, settings: TemporalMLMSettings,
                encoder: torch.nn.Module | None = None, method: str = TEMPORAL_ATTENTION
                ) -> tuple[BertForMaskedLM, TimeEmbedding | TimeTokens]:
    """A BERT MLM with temporal attention (``method`` "temporal-attention") or with one new
    vocabulary entry per period ("time-token"): from ``encoder``'s weights (a BertModel) with a
    fresh MLM head, or from scratch (``encoder=None``, size from ``settings``). Portable dropout."""
    if method not in (TEMPORAL_ATTENTION, TIME_TOKEN):
        raise ValueError(f"unknown method {method!r}: {TEMPORAL_ATTENTION} or {TIME_TOKEN}")
    extra = n_periods if method == TIME_TOKEN else 0
    torch.manual_seed(settings.seed)
    if encoder is not None:
        if getattr(encoder.config, "model_type", None) != "bert":
            raise ValueError(f"temporal attention needs a BERT encoder, got {encoder.config.model_type!r}")
        config = BertConfig.from_dict(encoder.config.to_dict())
        config._attn_implementation = "sdpa"
        model = BertForMaskedLM(config)
        missing, unexpected = model.bert.load_state_dict(encoder.state_dict(), strict=False)
        if missing or any(not k.startswith("pooler.") for k in unexpected):
            raise ValueError(f"encoder weights do not fit: missing {missing}, unexpected {unexpected}")
    else:
        config = BertConfig(vocab_size=len(tokenizer) + extra, hidden_size=settings.hidden,
                            num_hidden_layers=settings.depth,
                            num_attention_heads=max(1, settings.hidden // 64),
                            intermediate_size=4 * settings.hidden,
                            max_position_embeddings=max(512, settings.max_length),
                            pad_token_id=tokenizer.pad_token_id)
        config._attn_implementation = "sdpa"
        model = BertForMaskedLM(config)
    if method == TIME_TOKEN:
        first = len(tokenizer)
        if encoder is not None:
            model.resize_token_embeddings(first + n_periods)
        make_portable(model)
        return model, TimeTokens(first, n_periods)
    emb = add_temporal_attention(model, n_periods)
    make_portable(model)
    return model, emb


def _new_parameters(model: BertForMaskedLM) -> set[int]:
    time = getattr(model, "time_embedding", None)
    new = set() if time is None else set(map(id, time.parameters()))
    new |= {id(p) for n, p in model.named_parameters() if n.endswith(".time.weight")}
    new |= {id(p) for p in model.cls.predictions.transform.parameters()}
    new.add(id(model.cls.predictions.bias))
    return new


def training_windows(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str],
                     periods: Sequence[int], max_length: int,
                     time_tokens: TimeTokens | None = None) -> list[tuple[list[int], int]]:
    """Each text's tokens cut into windows of ``max_length`` (with [CLS] ... [SEP], and the
    period's time token after [CLS] when ``time_tokens`` is given), with its period."""
    body = max_length - 2 - (time_tokens is not None)
    out: list[tuple[list[int], int]] = []
    if not texts:
        return out
    for ids, period in zip(tokenizer(list(texts), add_special_tokens=False)["input_ids"], periods):
        head = [tokenizer.cls_token_id, *([time_tokens.id(period)] if time_tokens else [])]
        for at in range(0, len(ids), body):
            out.append(([*head, *ids[at:at + body], tokenizer.sep_token_id], period))
    return out


def training_texts(texts: Sequence[str], words: Sequence[str], usages: int,
                   seed: int) -> list[str]:
    """What the MLM trains on for one period: with ``usages`` > 0, the period's sentences holding
    a target, at most ``usages`` per target (the seeded hash draw of
    :func:`pipeline.semantic.usages.capped_usages`, also the contextual method's); with 0, every
    text whole.

    Why: the scores read the model only at the targets' occurrences, so the training that
    matters is on their sentences. Training on every window of both groups makes the cost grow
    with the corpus whatever the number of targets (two epochs of ~27,000 abstracts took ~17 min
    per MLM on 2 cores); the targets' sentences make it grow with the targets instead, and they
    are a fraction of the tokens of a window each."""
    if usages <= 0:
        return list(texts)
    from pipeline.semantic.usages import capped_usages

    return capped_usages(texts, words, usages, seed)[0]


def _collate(windows: Sequence[tuple[list[int], int]], pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    width = max(len(w) for w, _ in windows)
    ids = torch.full((len(windows), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, (w, _) in enumerate(windows):
        ids[row, :len(w)] = torch.tensor(w)
        mask[row, :len(w)] = 1
    return ids, mask, torch.tensor([p for _, p in windows])


def mask_tokens(ids: Tensor, special: Tensor, tokenizer: PreTrainedTokenizerBase, prob: float,
                generator: torch.Generator, time_tokens: TimeTokens | None = None,
                time_prob: float = 0.0) -> tuple[Tensor, Tensor]:
    """BERT's masking: ``prob`` of the non-special tokens are targets; 80 % become [MASK], 10 % a
    random token, 10 % stay. Time masking (Rosin et al. 2022), with ``time_tokens`` and
    ``time_prob`` > 0: each time token (special, so never an ordinary target) is a target with
    probability ``time_prob``; 80 % become [MASK], 10 % a random period's token, 10 % stay.
    Returns ``(inputs, labels)`` (labels -100 off target). ``time_prob`` 0 draws nothing more
    from ``generator`` (the same masks as without time tokens' masking)."""
    pick = (torch.rand(ids.shape, generator=generator) < prob) & ~special
    labels = ids.masked_fill(~pick, -100)
    roll = torch.rand(ids.shape, generator=generator)
    inputs = ids.clone()
    inputs[pick & (roll < 0.8)] = tokenizer.mask_token_id
    swap = pick & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = torch.randint(len(tokenizer), ids.shape, generator=generator)[swap]
    if time_tokens is not None and time_prob > 0:
        is_time = (ids >= time_tokens.first) & (ids < time_tokens.first + time_tokens.n_periods)
        timed = (torch.rand(ids.shape, generator=generator) < time_prob) & is_time
        labels = torch.where(timed, ids, labels)
        roll = torch.rand(ids.shape, generator=generator)
        inputs[timed & (roll < 0.8)] = tokenizer.mask_token_id
        swap = timed & (roll >= 0.8) & (roll < 0.9)
        other = time_tokens.first + torch.randint(time_tokens.n_periods, ids.shape,
                                                  generator=generator)
        inputs[swap] = other[swap]
    return inputs, labels


def mlm_loss(model: BertForMaskedLM, emb: TimeEmbedding | TimeTokens,
             tokenizer: PreTrainedTokenizerBase, ids: Tensor, attention: Tensor, periods: Tensor,
             labels: Tensor) -> Tensor:
    """The MLM loss of a batch with its per-text periods (special time points for pad / [MASK];
    with :class:`TimeTokens` the period is already in ``ids``). The head runs on the target
    positions only (its vocabulary projection is most of the cost)."""
    if isinstance(emb, TimeTokens):
        hidden = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state
    else:
        times = emb.ids(periods, attention, ids, tokenizer.mask_token_id)
        with temporal_times(model, times):
            hidden = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state
    target = labels != -100
    logits = model.cls(hidden[target])
    return torch.nn.functional.cross_entropy(logits.float(), labels[target])


def train(model: BertForMaskedLM, emb: TimeEmbedding | TimeTokens,
          tokenizer: PreTrainedTokenizerBase,
          texts: Sequence[str], periods: Sequence[int], settings: TemporalMLMSettings,
          progress: bool = True) -> list[float]:
    """AdamW (``lr`` for the encoder, ``lr_new`` for the new modules), linear decay, clip 1.0,
    ``epochs`` passes over the windows, each in a seeded order, but at most ``steps`` batches
    when ``steps`` > 0. Returns the loss of every step."""
    time_tokens = emb if isinstance(emb, TimeTokens) else None
    windows = training_windows(tokenizer, texts, periods, settings.max_length, time_tokens)
    if not windows:         # no target in any text: nothing to learn from (no step, no loss)
        model.eval()
        return []
    special = set(tokenizer.all_special_ids)
    if time_tokens:     # not ordinary targets: masked by their own probability (time masking)
        special |= {time_tokens.id(p) for p in range(time_tokens.n_periods)}
    special_ids = torch.tensor(sorted(special))
    generator = torch.Generator().manual_seed(settings.seed)
    new = _new_parameters(model)
    groups = [{"params": [p for p in model.parameters() if id(p) not in new], "lr": settings.lr},
              {"params": [p for p in model.parameters() if id(p) in new], "lr": settings.lr_new}]
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    per_epoch = math.ceil(len(windows) / settings.batch_size)
    total = max(1, per_epoch * settings.epochs)
    if settings.steps > 0:
        total = min(total, settings.steps)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / total)
    losses: list[float] = []
    model.train()
    with tqdm(total=total, desc="temporal MLM", unit="step", disable=not progress,
              mininterval=1.0) as bar:
        while len(losses) < total:
            order = torch.randperm(len(windows), generator=generator).tolist()
            for at in range(0, len(order), settings.batch_size):
                if len(losses) == total:
                    break
                ids, attention, batch_periods = _collate(
                    [windows[i] for i in order[at:at + settings.batch_size]], tokenizer.pad_token_id)
                special = torch.isin(ids, special_ids)
                inputs, labels = mask_tokens(ids, special, tokenizer, settings.mask_prob, generator,
                                             time_tokens, settings.time_mask_prob)
                loss = mlm_loss(model, emb, tokenizer, inputs, attention, batch_periods, labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                losses.append(loss.item())
                bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
                bar.update()
    model.eval()
    return losses


def sample_sentences(texts: Sequence[str], words: Sequence[str], n: int,
                     rng: np.random.Generator) -> tuple[list[str], list[list[int]]]:
    """The sentences of ``texts`` holding any of ``words`` and, per word, the indices of up to
    ``n`` of those holding it (all of them when there are at most ``n``; else drawn by ``rng``)."""
    pattern = word_pattern(words)
    sentences = [s for t in texts for s in split_sentences(t) if pattern.search(s)]
    found = [{m.group(0).lower() for m in pattern.finditer(s)} for s in sentences]
    chosen = []
    for w in words:
        holding = [i for i, f in enumerate(found) if w.lower() in f]
        if len(holding) > n:
            holding = sorted(rng.choice(holding, size=n, replace=False).tolist())
        chosen.append(holding)
    return sentences, chosen


@torch.inference_mode()
def vectors_for(model: BertForMaskedLM, emb: TimeEmbedding | TimeTokens,
                tokenizer: PreTrainedTokenizerBase,
                sentences: Sequence[str], wanted: Sequence[Sequence[str]], period: int,
                last_layers: int, max_length: int, batch_size: int
                ) -> tuple[list[list[np.ndarray | None]], int]:
    """Algorithm 1 lines 5-7, with every sentence at time point ``period``: for each sentence and
    each word in ``wanted[i]``, the mean over the word's sub-tokens (all its occurrences in the
    sentence) of the mean of the last ``last_layers`` hidden layers (float64), or None where
    truncation at ``max_length`` left none of them; and the number of such misses. With
    :class:`TimeTokens` the period's token follows [CLS] (one token less of the sentence)."""
    n_states = model.config.num_hidden_layers + 1
    if not 1 <= last_layers <= n_states:
        raise ValueError(f"last_layers must be in [1, {n_states}], got {last_layers}")
    model.eval()
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))   # less padding
    out: list[list[np.ndarray | None]] = [[] for _ in sentences]
    skipped = 0
    for at in range(0, len(order), batch_size):
        rows = order[at:at + batch_size]
        tokens = isinstance(emb, TimeTokens)
        enc = tokenizer([sentences[i] for i in rows], return_offsets_mapping=True, truncation=True,
                        max_length=max_length - tokens, padding=True, return_tensors="pt")
        ids, attention, offsets = enc["input_ids"], enc["attention_mask"], enc["offset_mapping"]
        if tokens:          # [CLS] <period> ...: the time token has no characters
            ids = torch.cat([ids[:, :1], torch.full_like(ids[:, :1], emb.id(period)), ids[:, 1:]], 1)
            attention = torch.cat([attention[:, :1], attention], 1)
            offsets = torch.cat([offsets[:, :1], torch.zeros_like(offsets[:, :1]), offsets[:, 1:]], 1)
            states = model.bert(input_ids=ids, attention_mask=attention,
                                output_hidden_states=True).hidden_states
        else:
            times = emb.ids(torch.full((len(rows),), period), attention)
            with temporal_times(model, times):
                states = model.bert(input_ids=ids, attention_mask=attention,
                                    output_hidden_states=True).hidden_states
        mean = torch.stack(states[-last_layers:]).mean(0).double().numpy()
        offsets = offsets.numpy()
        for r, i in enumerate(rows):
            start, end = offsets[r, :, 0], offsets[r, :, 1]
            real = end > start
            for w in wanted[i]:
                inside = np.zeros_like(real)
                for m in word_pattern([w]).finditer(sentences[i]):
                    inside |= real & (start < m.end()) & (end > m.start())
                if inside.any():
                    out[i].append(mean[r, inside].mean(axis=0))
                else:
                    out[i].append(None)
                    skipped += 1
    return out, skipped


def period_means(model: BertForMaskedLM, emb: TimeEmbedding | TimeTokens,
                 tokenizer: PreTrainedTokenizerBase,
                 texts: Sequence[str], period: int, words: Sequence[str], n: int, last_layers: int,
                 max_length: int, rng: np.random.Generator, batch_size: int = 32
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """Algorithm 1 lines 2-10 for one period: ``(x_t [W, d] float64, sentences used [W],
    skipped)``; a word without a sentence gets a zero row and count 0."""
    sentences, chosen = sample_sentences(texts, words, n, rng)
    used = sorted({i for c in chosen for i in c})
    slot = {i: k for k, i in enumerate(used)}
    wanted: list[list[str]] = [[] for _ in used]
    for w, c in zip(words, chosen):
        for i in c:
            wanted[slot[i]].append(w)
    vectors, skipped = vectors_for(model, emb, tokenizer, [sentences[i] for i in used], wanted,
                                   period, last_layers, max_length, batch_size)
    d = model.config.hidden_size
    sums, counts = np.zeros((len(words), d)), np.zeros(len(words), dtype=np.int64)
    index = {w: k for k, w in enumerate(words)}
    for ws, vs in zip(wanted, vectors):
        for w, v in zip(ws, vs):
            if v is not None:
                sums[index[w]] += v
                counts[index[w]] += 1
    return sums / np.maximum(counts, 1)[:, None], counts, skipped


def group_vector(means: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """A group's vector per word: the mean of its periods' ``x_t`` where seen; ``(vectors, seen)``."""
    stack = np.stack([m for m, _ in means])
    seen = np.stack([c > 0 for _, c in means]).astype(np.float64)
    n = seen.sum(0)
    return (stack * seen[..., None]).sum(0) / np.maximum(n, 1)[:, None], n > 0


def temporal_change(tokenizer: PreTrainedTokenizerBase, first: Sequence[Sequence[str]],
                    last: Sequence[Sequence[str]], words: Sequence[str],
                    settings: TemporalMLMSettings, encoder: torch.nn.Module | None = None,
                    progress: bool = True, method: str = TEMPORAL_ATTENTION
                    ) -> tuple[np.ndarray, dict]:
    """The whole method (``method``: "temporal-attention" or "time-token"): ``first`` / ``last``
    hold each group's periods' texts (time order). Trains the model, runs Algorithm 1 and returns
    ``(scores [W], info)``; a score is NaN where a group has no sentence of the word. ``info``:
    the training losses, skipped occurrences."""
    texts_by_period = [*first, *last]
    model, emb = build_model(tokenizer, len(texts_by_period), settings, encoder, method)
    training = [training_texts(part, words, settings.usages, settings.seed)
                for part in texts_by_period]
    texts = [t for part in training for t in part]
    periods = [p for p, part in enumerate(training) for _ in part]
    started = time.perf_counter()
    losses = train(model, emb, tokenizer, texts, periods, settings, progress)
    trained = time.perf_counter() - started
    rng = np.random.default_rng(settings.seed)
    means, skipped = [], 0
    for p, part in enumerate(texts_by_period):
        x, c, s = period_means(model, emb, tokenizer, part, p, words, settings.sentences,
                               settings.layers, settings.max_length, rng)
        means.append((x, c))
        skipped += s
    (v1, s1), (v2, s2) = group_vector(means[:len(first)]), group_vector(means[len(first):])
    scores = np.where(s1 & s2, cosine_distance(v1, v2), np.nan)
    return scores, {"losses": losses, "skipped": skipped, "train_s": trained,
                    "total_s": time.perf_counter() - started}


def settings_from(config: object, seed: int) -> TemporalMLMSettings:
    """The settings from an object with the params' ``temporal_*`` fields
    (:class:`pipeline.infra.schema.params.ChangeMethodsConfig`) and the stage's ``seed``; the rest
    (``mask_prob``, ``time_mask_prob``) keep their defaults."""
    names = [f for f in TemporalMLMSettings.__dataclass_fields__ if hasattr(config, f"temporal_{f}")]
    return TemporalMLMSettings(**{n: getattr(config, f"temporal_{n}") for n in names}, seed=seed)


def texts_change(first: Sequence[Sequence[str]], last: Sequence[Sequence[str]],
                 words: Sequence[str], settings: TemporalMLMSettings, encoder_name: str,
                 progress: bool = True, method: str = TEMPORAL_ATTENTION
                 ) -> tuple[np.ndarray, dict]:
    """:func:`temporal_change` on each group's periods' texts (time order), the one code path of
    both stages (the semantic_change stage's real abstracts, the benchmark's rewritten or SemEval
    texts; :func:`score_targets`). The model starts from ``settings.init`` or, from scratch,
    uses the tokenizer of ``encoder_name``; loads offline through :mod:`pipeline.models.hub`."""
    from pipeline.models.hub import load_encoder, load_tokenizer_for

    scratch = settings.init == SCRATCH
    tokenizer = load_tokenizer_for(encoder_name if scratch else settings.init)
    encoder = None if scratch else load_encoder(settings.init)
    return temporal_change(tokenizer, first, last, words, settings, encoder, progress, method)


def score_targets(inputs: ChangeInputs, targets: Sequence[str], method: str,
                  **overrides: float) -> MethodResult:
    """The temporal-attention or time-token method (``method``) as a semantic-change method
    (:mod:`pipeline.semantic.methods.interface`): :func:`texts_change` on
    ``inputs.texts`` with the learned methods' settings and the seed (:func:`settings_from`),
    with ``overrides`` of settings fields (``time_mask_prob=0.0``: the unmasked time tokens).
    Details: the occurrences truncation left without a vector and the first and last training
    loss; no target: no training."""
    if not targets:
        return MethodResult.empty()
    settings = replace(settings_from(inputs.learned, inputs.seed), **overrides)
    scores, info = texts_change(*inputs.texts, list(targets), settings, inputs.encoder,
                                method=method)
    losses = info["losses"] or [None]       # no target occurs: no training, no loss
    return MethodResult(scores, details={"skipped_occurrences": info["skipped"],
                                         "first_loss": losses[0], "last_loss": losses[-1]},
                        log=f"{info['train_s']:.0f} s training, {info['total_s']:.0f} s in all")
