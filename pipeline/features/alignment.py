"""Which encoder sub-token vectors make up each LM token's contextual vector (paper eq. 7).

The encoder (e.g. WordPiece all-MiniLM) and the LM (byte-level BPE) split text differently, so
tokens are matched through character offsets: an LM token's vector is the mean of the encoder
sub-tokens whose character spans overlap its own. When both tokenizers split identically (RoBERTa
and GPT-2 share a BPE) every LM token overlaps exactly its own encoder token: the identity.

Long abstracts do not fit one encoder window, so the encoder sees overlapping windows
(:func:`plan_windows`); each encoder token is *owned* by exactly one window (the one where it sits
furthest from an edge), so no occurrence is counted twice and none is lost to truncation.

Everything here works on whole batches of documents at once with NumPy (``searchsorted`` on
offsets shifted per document): there is no Python loop per token. :func:`plan_period` puts it
together for one period: padded encoder batches plus, for each batch, which flat positions feed
which LM token id with which weight, so the device pools a batch with one ``index_add``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from pipeline.infra.errors import UserError
from pipeline.features.tokenizer import plain_backend


@dataclass(frozen=True)
class Spans:
    """Character spans of the tokens of many documents, concatenated in document order."""

    start: np.ndarray   # int64 [T] first character of each token
    end: np.ndarray     # int64 [T] one past its last character (end == start: no characters)
    doc: np.ndarray     # int64 [T] document index, non-decreasing

    @classmethod
    def from_offsets(cls, offsets: list[list[tuple[int, int]]]) -> "Spans":
        """Build from per-document ``(start, end)`` lists (a fast tokenizer's offsets)."""
        lengths = np.fromiter((len(o) for o in offsets), dtype=np.int64, count=len(offsets))
        flat = np.fromiter((c for doc in offsets for pair in doc for c in pair), dtype=np.int64,
                           count=2 * int(lengths.sum())).reshape(-1, 2)
        doc = np.repeat(np.arange(len(offsets), dtype=np.int64), lengths)
        return cls(start=flat[:, 0].copy(), end=flat[:, 1].copy(), doc=doc)


def align_spans(lm: Spans, enc: Spans) -> tuple[np.ndarray, np.ndarray]:
    """All (encoder token, LM token) pairs of the same document whose character spans overlap.

    Returns ``(enc_index, lm_index)``, int64 arrays of equal length, indices into the
    concatenated tokens of ``enc`` and ``lm``, sorted by encoder token. Tokens without characters
    (special tokens, whitespace trimmed away) pair with nothing. A document that both tokenizers
    split identically is paired token for token (the identity), even where byte-level pieces of
    one multi-byte character share a span.
    """
    same = _identical_documents(lm, enc)
    lm_chars, enc_chars = lm.end > lm.start, enc.end > enc.start
    identity_enc = np.flatnonzero(same[enc.doc] & enc_chars)
    identity_lm = np.flatnonzero(same[lm.doc] & lm_chars)
    overlap_enc, overlap_lm = _overlaps(lm, enc, np.flatnonzero(~same[lm.doc] & lm_chars),
                                        np.flatnonzero(~same[enc.doc] & enc_chars))
    enc_index = np.concatenate([identity_enc, overlap_enc])
    lm_index = np.concatenate([identity_lm, overlap_lm])
    order = np.argsort(enc_index, kind="stable")
    return enc_index[order].astype(np.int64), lm_index[order].astype(np.int64)


def _identical_documents(lm: Spans, enc: Spans) -> np.ndarray:
    """bool [D]: the document's LM and encoder tokens have exactly the same spans."""
    n_docs = int(max(lm.doc.max(initial=-1), enc.doc.max(initial=-1))) + 1
    lm_len = np.bincount(lm.doc, minlength=n_docs)
    enc_len = np.bincount(enc.doc, minlength=n_docs)
    same = lm_len == enc_len
    lm_in, enc_in = same[lm.doc], same[enc.doc]  # equal lengths: the tokens line up one to one
    differs = (lm.start[lm_in] != enc.start[enc_in]) | (lm.end[lm_in] != enc.end[enc_in])
    same &= np.bincount(lm.doc[lm_in][differs], minlength=n_docs) == 0
    return same


def _overlaps(lm: Spans, enc: Spans, lm_keep: np.ndarray,
              enc_keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping pairs among the kept tokens, via ``searchsorted`` on one shifted number line."""
    stride = int(max(lm.end.max(initial=0), enc.end.max(initial=0))) + 1
    # Document d occupies [d*stride, (d+1)*stride): all documents are searched at once.
    lm_start = lm.start[lm_keep] + lm.doc[lm_keep] * stride
    lm_end = lm.end[lm_keep] + lm.doc[lm_keep] * stride
    if (np.diff(lm_start) < 0).any() or (np.diff(lm_end) < 0).any():
        raise ValueError("LM token offsets are not in text order; the LM tokenizer must be a fast "
                         "tokenizer whose offsets follow the text (re-run the tokenizer stage)")
    enc_start = enc.start[enc_keep] + enc.doc[enc_keep] * stride
    enc_end = enc.end[enc_keep] + enc.doc[enc_keep] * stride
    # LM tokens overlapping [s, e) are those with end > s and start < e: a contiguous run.
    first = np.searchsorted(lm_end, enc_start, side="right")
    stop = np.searchsorted(lm_start, enc_end, side="left")
    n = np.maximum(stop - first, 0)
    enc_index = np.repeat(enc_keep, n)
    run_offset = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    return enc_index, lm_keep[np.repeat(first, n) + run_offset]


@dataclass(frozen=True)
class Windows:
    """Encoder windows over documents' token sequences (indices local to each document)."""

    doc: np.ndarray         # int64 [W]
    start: np.ndarray       # int64 [W] first token of the window
    end: np.ndarray         # int64 [W] one past its last token
    own_start: np.ndarray   # int64 [W] tokens [own_start, own_end) take their vector from here
    own_end: np.ndarray     # int64 [W]


def plan_windows(lengths: np.ndarray, size: int, stride: int) -> Windows:
    """Cover each document of ``lengths[d]`` tokens with windows of ``size`` tokens overlapping by
    ``stride``; ownership splits every overlap in the middle, so owned ranges partition each
    document in order. A document of at most ``size`` tokens is one window.
    """
    if size < 1 or not 0 <= stride < size:
        raise UserError(f"encoder windows of {size} tokens cannot overlap by {stride}: need "
                        f"0 <= stride < window", path="params.yaml embeddings.stride",
                        fix="make embeddings.stride smaller than embeddings.max_length minus the "
                            "encoder's special tokens (2 for BERT/RoBERTa)")
    lengths = np.asarray(lengths, dtype=np.int64)
    step = size - stride
    n_windows = np.maximum(1, -(-np.maximum(lengths - stride, 1) // step))
    doc = np.repeat(np.arange(lengths.shape[0], dtype=np.int64), n_windows)
    k = np.arange(doc.shape[0], dtype=np.int64) - np.repeat(np.cumsum(n_windows) - n_windows, n_windows)
    start = k * step
    end = np.minimum(start + size, lengths[doc])
    last = k == n_windows[doc] - 1
    own_start = np.where(k == 0, 0, start + stride // 2)
    own_end = np.where(last, lengths[doc], start + size - (stride - stride // 2))
    return Windows(doc=doc, start=start, end=end, own_start=own_start, own_end=own_end)


@dataclass(frozen=True)
class Batch:
    """Encoder input for a group of similar-length windows, and where its vectors go."""

    input_ids: torch.Tensor       # int64 [B, L]
    attention_mask: torch.Tensor  # int64 [B, L]
    positions: torch.Tensor       # int64 [P] flat index b*L+t of an owned encoder token
    token_ids: torch.Tensor       # int64 [P] the LM token id it contributes to
    weights: torch.Tensor         # float32 [P] 1 / (owned encoder tokens of that LM occurrence)


@dataclass(frozen=True)
class PeriodPlan:
    """Everything computed on the CPU before the encoder runs: batches and occurrence counts."""

    batches: list[Batch]
    counts: np.ndarray            # int64 [|V|] LM occurrences that receive a vector
    n_encoder_tokens: int


def plan_period(texts: list[str], lm_tok: PreTrainedTokenizerBase, enc_tok: PreTrainedTokenizerBase,
                max_length: int, stride: int, batch_size: int) -> PeriodPlan:
    """Tokenize one period's abstracts with both tokenizers, align them, window and batch them.

    Each (owned encoder token, LM token) pair becomes one row of a batch's ``positions`` /
    ``token_ids`` / ``weights``, with weight 1/(encoder tokens of that LM occurrence), so summing
    weighted vectors per token id and dividing by ``counts`` gives eq. 7's mean of means.
    Windows are sorted by length, so a batch holds similar lengths (little padding).
    """
    lm_enc = plain_backend(lm_tok).encode_batch(texts, add_special_tokens=False)
    en_enc = plain_backend(enc_tok).encode_batch(texts, add_special_tokens=False)
    lm_ids = np.fromiter((i for e in lm_enc for i in e.ids), dtype=np.int64)
    en_ids = np.fromiter((i for e in en_enc for i in e.ids), dtype=np.int64)
    en_spans = Spans.from_offsets([e.offsets for e in en_enc])
    enc_index, lm_index = align_spans(Spans.from_offsets([e.offsets for e in lm_enc]), en_spans)
    per_occurrence = np.bincount(lm_index, minlength=lm_ids.shape[0])
    weights = (1.0 / per_occurrence[lm_index]).astype(np.float32)
    counts = np.bincount(lm_ids[per_occurrence > 0], minlength=len(lm_tok)).astype(np.int64)

    prefix, suffix = _special_affixes(enc_tok)
    doc_len = np.bincount(en_spans.doc, minlength=len(texts)).astype(np.int64)
    doc_first = np.cumsum(doc_len) - doc_len
    win = plan_windows(doc_len, max_length - len(prefix) - len(suffix), stride)
    # Owned ranges partition every document in order, so repeating window ids over their owned
    # lengths gives each encoder token's owner window, in concatenated order.
    owner = np.repeat(np.arange(win.doc.shape[0]), win.own_end - win.own_start)
    pos_in_window = np.arange(en_ids.shape[0]) - doc_first[en_spans.doc] - win.start[owner] + len(prefix)

    lengths = win.end - win.start
    order = np.argsort(-lengths, kind="stable")
    groups = np.array_split(order[lengths[order] > 0], max(1, -(-int((lengths > 0).sum()) // batch_size)))
    batch_of = np.full(win.doc.shape[0], -1, dtype=np.int64)
    row_of = np.zeros(win.doc.shape[0], dtype=np.int64)
    for b, group in enumerate(groups):
        batch_of[group], row_of[group] = b, np.arange(group.shape[0])
    pair_batch = batch_of[owner[enc_index]]
    pair_order = np.argsort(pair_batch, kind="stable")
    bounds = np.searchsorted(pair_batch[pair_order], np.arange(len(groups) + 1))
    pad = enc_tok.pad_token_id if enc_tok.pad_token_id is not None else 0
    batches = []
    for b, group in enumerate(groups):
        if group.shape[0] == 0:
            continue
        width = int(lengths[group].max()) + len(prefix) + len(suffix)
        ids = torch.full((group.shape[0], width), pad, dtype=torch.int64)
        mask = torch.zeros((group.shape[0], width), dtype=torch.int64)
        for row, w in enumerate(group):  # one slice per window, not per token
            first = doc_first[win.doc[w]]
            seq = np.concatenate([prefix, en_ids[first + win.start[w]:first + win.end[w]], suffix])
            ids[row, :seq.shape[0]] = torch.from_numpy(seq.astype(np.int64))
            mask[row, :seq.shape[0]] = 1
        pairs = pair_order[bounds[b]:bounds[b + 1]]
        enc_tokens = enc_index[pairs]
        flat = row_of[owner[enc_tokens]] * width + pos_in_window[enc_tokens]
        batches.append(Batch(ids, mask, torch.from_numpy(flat),
                             torch.from_numpy(lm_ids[lm_index[pairs]]), torch.from_numpy(weights[pairs])))
    return PeriodPlan(batches=batches, counts=counts, n_encoder_tokens=int(en_ids.shape[0]))


def _special_affixes(enc_tok: PreTrainedTokenizerBase) -> tuple[list[int], list[int]]:
    """The ids the encoder's post-processor puts before/after one sequence ([CLS] ... [SEP])."""
    probe = plain_backend(enc_tok).encode("a", add_special_tokens=True)
    content = [i for i, special in enumerate(probe.special_tokens_mask) if not special]
    return probe.ids[:content[0]], probe.ids[content[-1] + 1:]
