"""Skip-gram with negative sampling per group of periods, aligned by Procrustes.

The static-embedding method of semantic change (Hamilton et al., 2016; the SemEval-2020 Task 1
winner's recipe): train one SGNS model (Mikolov et al., 2013) on the texts of the first group of
periods and one on the last group, rotate the first space onto the last by orthogonal Procrustes
on their shared vocabulary (:func:`pipeline.semantic.vectors.procrustes_align`, rows
unit-normalised first), and score a word by the cosine distance between its two vectors
(:func:`pipeline.semantic.vectors.aligned_cosine_change`). A word below ``min_count``
in either group has no vector there: its score is NaN, never a guess.

Training is word2vec's algorithm, vectorised in PyTorch (gensim is not a dependency): per epoch,
frequent words are subsampled (keep probability ``sqrt(t/f) + t/f``, word2vec's ``sample``), each
kept token draws a window size ``b`` in ``1..window`` and pairs with the kept tokens at distance
``<= b`` in the same text (word2vec's dynamic window: nearer contexts weigh more), the pairs are
shuffled and processed in batches; each positive pair gets ``negatives`` context words drawn from
the unigram distribution raised to 3/4. The loss per pair is
``-log σ(w·c) - Σ_k log σ(-w·n_k)``, averaged over a batch and minimised by sparse Adam (only the
rows a batch touches are updated) with word2vec's linearly decaying learning rate.

Why Adam and not word2vec's plain SGD: word2vec applies each pair's update at once, one after
another; a batch sums them, so a frequent word drawn as a negative ~100 times in one batch takes
~100 steps at once without the feedback in between. With word2vec's rate 0.025 the vectors of
the sample stayed near their common direction after 5 epochs (mean cosine of random word pairs
0.97: under-trained, every change score ~0.001); rates high enough to train in 5 epochs diverged
(0.15 and up: NaN). Adam's per-coordinate step is bounded by its rate whatever the number of
duplicates: at 0.02 the sample's vectors have mean random-pair cosine ~0.2 and neighbours such
as translation -> machine, smt, nmt; sentiment -> sarcasm, subjectivity, polarity.

Everything random comes from one ``torch.Generator`` seeded per group, so a run is deterministic
on one machine (see the numerics guide: other CPUs may differ in the last digits).

Words: lower-cased whole words by :data:`pipeline.corpus.pseudowords.WORD`'s rule (ASCII letters,
≥ 3, not inside a longer word nor a hyphenated compound), extended to a trailing run of digits
so that the benchmark's pseudo-words (``psw000``) are words too: :data:`WORD` itself stops at
letters and would skip them; and to a trailing ``_tag`` (letters), so that SemEval-2020 Task 1's
English targets, part-of-speech tagged in its corpora (``attack_nn``), are words as well.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from pipeline.corpus.pseudowords import _LEFT, _RIGHT
from pipeline.semantic.vectors import aligned_cosine_change

_TABLE = 1_000_000   # entries of the negative-sampling table (word2vec: 1e8)
TOKEN = re.compile(_LEFT + r"[A-Za-z]{3,}[0-9]*(?:_[A-Za-z]+)?" + _RIGHT)


def tokenize(text: str) -> list[str]:
    """Lower-cased words of ``text`` (:data:`TOKEN`), in order."""
    return [m.group(0).lower() for m in TOKEN.finditer(text)]


@dataclass(frozen=True)
class SGNSVectors:
    """One group's SGNS model: ``words`` (count desc, then alphabetical), their ``counts`` and
    input ``vectors`` ``[len(words), dim]``; ``losses``: mean loss per pair of each epoch."""

    words: tuple[str, ...]
    counts: np.ndarray
    vectors: np.ndarray
    losses: tuple[float, ...] = ()
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {w: i for i, w in enumerate(self.words)})


def build_vocabulary(docs: Iterable[Sequence[str]], min_count: int) -> tuple[tuple[str, ...], np.ndarray]:
    """Words seen ``>= min_count`` times, most frequent first (ties alphabetical), and counts."""
    counts: Counter[str] = Counter()
    for doc in docs:
        counts.update(doc)
    kept = sorted(((w, c) for w, c in counts.items() if c >= min_count), key=lambda wc: (-wc[1], wc[0]))
    return tuple(w for w, _ in kept), np.array([c for _, c in kept], dtype=np.int64)


def _encode(docs: Sequence[Sequence[str]], index: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """All in-vocabulary tokens as one id tensor plus each token's text number."""
    ids: list[int] = []
    doc_of: list[int] = []
    for d, doc in enumerate(docs):
        row = [index[w] for w in doc if w in index]
        ids.extend(row)
        doc_of.extend([d] * len(row))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(doc_of, dtype=torch.long)


def _epoch_pairs(ids: torch.Tensor, doc_of: torch.Tensor, keep_prob: torch.Tensor, window: int,
                 gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(center, context) id pairs of one epoch: subsampled tokens, dynamic window, shuffled."""
    kept = torch.rand(ids.numel(), generator=gen) < keep_prob[ids]
    ids, doc_of = ids[kept], doc_of[kept]
    reach = torch.randint(1, window + 1, (ids.numel(),), generator=gen)
    centers, contexts = [], []
    for offset in range(1, window + 1):
        same = doc_of[offset:] == doc_of[:-offset]
        left, right = ids[:-offset], ids[offset:]
        fwd = same & (reach[:-offset] >= offset)    # center left, context right
        bwd = same & (reach[offset:] >= offset)     # center right, context left
        centers += [left[fwd], right[bwd]]
        contexts += [right[fwd], left[bwd]]
    c, x = torch.cat(centers), torch.cat(contexts)
    order = torch.randperm(c.numel(), generator=gen)
    return c[order], x[order]


@contextlib.contextmanager
def _torch_threads(threads: int) -> Iterator[None]:
    """Run with ``threads`` intra-op threads, then restore the caller's setting."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def train_sgns(texts: Sequence[str], *, dim: int = 50, window: int = 4, negatives: int = 5,
               epochs: int = 5, min_count: int = 5, seed: int = 0, lr: float = 0.02,
               subsample: float = 1e-3, batch_size: int = 2048, progress: bool = True,
               desc: str = "sgns", threads: int = 1) -> SGNSVectors:
    """Train SGNS on ``texts`` (see the module docstring); deterministic for a given ``seed``.

    ``threads``: torch intra-op threads while training (restored afterwards). One by default:
    the batches are small ([2048, 50]), so extra threads mostly add synchronisation, and cost
    4-10x when another process keeps the other core busy (2-core EPYC under load, plain-SGD
    version: 2.5 s with one thread, 9-18 s with two, per group of ~800 abstracts); a fixed count
    also keeps the bytes independent of the caller's thread setting.
    """
    with _torch_threads(threads):
        return _train(texts, dim=dim, window=window, negatives=negatives, epochs=epochs,
                      min_count=min_count, seed=seed, lr=lr, subsample=subsample,
                      batch_size=batch_size, progress=progress, desc=desc)


def _train(texts: Sequence[str], *, dim: int, window: int, negatives: int, epochs: int,
           min_count: int, seed: int, lr: float, subsample: float, batch_size: int,
           progress: bool, desc: str) -> SGNSVectors:
    if min(dim, window, negatives, min_count, batch_size) < 1 or epochs < 0:
        raise ValueError("dim, window, negatives, min_count, batch_size must be >= 1; epochs >= 0")
    docs = [tokenize(t) for t in texts]
    words, counts = build_vocabulary(docs, min_count)
    gen = torch.Generator().manual_seed(seed)
    n = len(words)
    init = (torch.rand(n, dim, generator=gen) - 0.5) / dim     # word2vec's initialisation
    if n == 0:
        return SGNSVectors(words, counts, init.numpy().astype(np.float64))
    w_in = torch.nn.Embedding(n, dim, sparse=True, _weight=init)
    w_out = torch.nn.Embedding(n, dim, sparse=True, _weight=torch.zeros(n, dim))
    opt = torch.optim.SparseAdam([w_in.weight, w_out.weight], lr=lr)
    ids, doc_of = _encode(docs, {w: i for i, w in enumerate(words)})
    cnt = torch.from_numpy(counts).double()
    freq = cnt / cnt.sum()
    keep = ((subsample / freq).sqrt() + subsample / freq).clamp(max=1.0).float() if subsample > 0 \
        else torch.ones(n)
    cdf = cnt.pow(0.75).cumsum(0)
    # word2vec's unigram^0.75 table: a negative is a uniform draw from it (cheaper per batch
    # than sampling from the distribution; a word's share is its probability to within 1/size)
    table = torch.searchsorted(cdf / cdf[-1], (torch.arange(_TABLE, dtype=torch.float64) + 0.5)
                               / _TABLE).clamp_(max=n - 1)
    # the learning rate decays linearly over the expected number of pairs (word2vec: over words)
    expected = max(1.0, float((keep[ids].sum() * (window + 1)).item()) * epochs)
    seen, losses = 0, []
    bar = tqdm(total=epochs, desc=desc, unit="epoch", disable=not progress, leave=False)
    for _ in range(epochs):
        centers, contexts = _epoch_pairs(ids, doc_of, keep, window, gen)
        total, pairs = 0.0, centers.numel()
        for start in range(0, pairs, batch_size):
            c, x = centers[start:start + batch_size], contexts[start:start + batch_size]
            opt.param_groups[0]["lr"] = lr * max(1e-4, 1.0 - seen / expected)
            neg = table[torch.randint(_TABLE, (c.numel(), negatives), generator=gen)]
            v = w_in(c)                                                    # [B, d]
            pos = (v * w_out(x)).sum(-1)                                   # w·c
            ngs = (v[:, None, :] * w_out(neg)).sum(-1)                     # w·n_k, [B, k]
            loss = F.softplus(-pos).sum() + F.softplus(ngs).sum()          # -log σ(w·c) - Σ log σ(-w·n)
            opt.zero_grad(set_to_none=True)
            (loss / c.numel()).backward()
            opt.step()
            total += float(loss.item())
            seen += c.numel()
        losses.append(total / pairs if pairs else math.nan)
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.3f}", pairs=pairs)
    bar.close()
    vectors = w_in.weight.detach().numpy().astype(np.float64)
    return SGNSVectors(words, counts, vectors, tuple(losses))


def aligned_change(first: SGNSVectors, last: SGNSVectors, words: Sequence[str]) -> np.ndarray:
    """Cosine distance of each of ``words`` (lower-cased) between the two models after
    Procrustes on their shared vocabulary; NaN where a word is in only one (or neither)."""
    shared = [w for w in first.words if w in last.index]
    out = np.full(len(words), np.nan)
    if not shared:
        return out
    a = first.vectors[[first.index[w] for w in shared]]
    b = last.vectors[[last.index[w] for w in shared]]
    dist = aligned_cosine_change(a, b)
    row = {w: i for i, w in enumerate(shared)}
    for i, word in enumerate(words):
        j = row.get(word.strip().lower())
        if j is not None:
            out[i] = dist[j]
    return out


def sgns_change(first_texts: Sequence[str], last_texts: Sequence[str], words: Sequence[str], *,
                dim: int = 50, window: int = 4, negatives: int = 5, epochs: int = 5,
                min_count: int = 5, seed: int = 0) -> np.ndarray:
    """SGNS + Procrustes change score of each of ``words`` (float64, aligned with ``words``;
    NaN where a word is below ``min_count`` in either group).

    The groups train with seeds ``2·seed`` and ``2·seed + 1``: one seed for both would start a
    word of the same frequency rank from the same random vector in both spaces, and an
    under-trained word would then look stable because of its initialisation alone."""
    kw = dict(dim=dim, window=window, negatives=negatives, epochs=epochs, min_count=min_count, seed=seed)
    first = train_sgns(first_texts, desc="sgns first", **{**kw, "seed": 2 * seed})
    last = train_sgns(last_texts, desc="sgns last", **{**kw, "seed": 2 * seed + 1})
    return aligned_change(first, last, words)
