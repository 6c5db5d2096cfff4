"""Character-offset alignment between encoder and LM tokens, and encoder windows."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.features.alignment import Spans, align_spans, plan_windows
from pipeline.infra.errors import UserError
from pipeline.models.hub import MINILM, load_tokenizer_for
from pipeline.features.tokenizer import plain_backend, train_scratch_tokenizer

TRICKY = [
    "Café résumé: naïve Bayes beats BERT-based state-of-the-art models (93.5% F1)!",
    "We use GPT-2's 1,024-token context; e.g., \"zero-shot\" cross-lingual transfer.",
    "Ünïcödé — mixed-script 中文 text, 3.14159 and x^2 + y_i = 0.",
]


@pytest.fixture(scope="module")
def lm_tok():
    return train_scratch_tokenizer(TRICKY * 5 + ["state of the art models"] * 5, vocab_size=320)


@pytest.fixture(scope="module")
def enc_tok():
    return load_tokenizer_for(MINILM)


def spans_of(tok, texts):
    encodings = plain_backend(tok).encode_batch(texts, add_special_tokens=False)
    return encodings, Spans.from_offsets([e.offsets for e in encodings])


def naive_pairs(lm_enc, en_enc):
    """Brute force: every (encoder, LM) token pair of the same text sharing a character."""
    pairs, lm_base, en_base = [], 0, 0
    for le, ee in zip(lm_enc, en_enc):
        for k, (c, d) in enumerate(ee.offsets):
            for j, (a, b) in enumerate(le.offsets):
                if c < d and a < b and c < b and a < d:
                    pairs.append((en_base + k, lm_base + j))
        lm_base += len(le.ids)
        en_base += len(ee.ids)
    return sorted(pairs)


def test_alignment_equals_brute_force_on_tricky_text(lm_tok, enc_tok) -> None:
    lm_enc, lm = spans_of(lm_tok, TRICKY)
    en_enc, en = spans_of(enc_tok, TRICKY)
    enc_index, lm_index = align_spans(lm, en)
    assert sorted(zip(enc_index.tolist(), lm_index.tolist())) == naive_pairs(lm_enc, en_enc)
    # The two tokenizers really split differently here (otherwise this would prove little).
    assert [e.offsets for e in lm_enc] != [e.offsets for e in en_enc]
    # Every encoder sub-token with characters reaches some LM token.
    with_chars = np.flatnonzero(en.end > en.start)
    assert set(with_chars.tolist()) == set(enc_index.tolist())


def test_alignment_maps_accents_hyphens_numbers(lm_tok, enc_tok) -> None:
    text = TRICKY[0]
    lm_enc, lm = spans_of(lm_tok, [text])
    en_enc, en = spans_of(enc_tok, [text])
    enc_index, lm_index = align_spans(lm, en)
    lm_text = lambda j: text[slice(*lm_enc[0].offsets[j])]  # noqa: E731
    en_text = lambda k: text[slice(*en_enc[0].offsets[k])]  # noqa: E731
    covered = {}
    for k, j in zip(enc_index, lm_index):
        covered.setdefault(lm_text(j), set()).add(en_text(k))
    # uncased WordPiece lowercases and strips accents, yet offsets point at the original text
    assert any("é" in w for w in covered)
    cafe = [w for w in covered if "Caf" in w or "é" in w]
    assert cafe and all(covered[w] for w in cafe)
    # the hyphen and the number pieces are matched by characters, not by token strings
    assert "-" in {s for w in covered for s in covered[w]}
    assert any("93" in s for w in covered for s in covered[w])


def test_special_and_empty_tokens_pair_with_nothing() -> None:
    lm = Spans.from_offsets([[(0, 3), (3, 3), (4, 9)]])
    en = Spans.from_offsets([[(0, 0), (0, 2), (2, 6), (6, 9), (0, 0)]])
    enc_index, lm_index = align_spans(lm, en)
    assert list(zip(enc_index.tolist(), lm_index.tolist())) == [(1, 0), (2, 0), (2, 2), (3, 2)]


def test_documents_do_not_leak_into_each_other() -> None:
    lm = Spans.from_offsets([[(0, 5)], [(0, 5)]])
    en = Spans.from_offsets([[(0, 2), (2, 5)], [(0, 5)]])
    enc_index, lm_index = align_spans(lm, en)
    assert list(zip(enc_index.tolist(), lm_index.tolist())) == [(0, 0), (1, 0), (2, 1)]


def test_identity_when_tokenizations_match() -> None:
    # GPT-2 and RoBERTa share one BPE: aligning GPT-2 with itself must be the identity.
    gpt2 = load_tokenizer_for("gpt2")  # installed by `make install`: no skip
    _, spans = spans_of(gpt2, TRICKY)
    enc_index, lm_index = align_spans(spans, spans)
    with_chars = np.flatnonzero(spans.end > spans.start)
    np.testing.assert_array_equal(enc_index, with_chars)
    np.testing.assert_array_equal(lm_index, with_chars)


@pytest.mark.parametrize("size,stride", [(10, 4), (10, 0), (7, 5), (1, 0)])
def test_windows_cover_and_owned_ranges_partition(size, stride) -> None:
    lengths = np.array([0, 1, 5, 10, 11, 23, 64])
    w = plan_windows(lengths, size, stride)
    for d, n in enumerate(lengths):
        mine = np.flatnonzero(w.doc == d)
        assert mine.size >= 1
        assert (w.end[mine] - w.start[mine] <= size).all()
        # consecutive windows overlap by exactly `stride` tokens
        assert (w.start[mine][1:] == w.end[mine][:-1] - stride).all() or mine.size == 1
        owned = np.concatenate([np.arange(w.own_start[i], w.own_end[i]) for i in mine])
        np.testing.assert_array_equal(owned, np.arange(n))  # each token owned once, in order
        assert ((w.own_start[mine] >= w.start[mine]) & (w.own_end[mine] <= w.end[mine])).all()


def test_short_document_is_one_window() -> None:
    w = plan_windows(np.array([30]), 254, 32)
    assert (w.start.tolist(), w.end.tolist()) == ([0], [30])


def test_window_stride_must_be_smaller_than_size() -> None:
    with pytest.raises(UserError, match="cannot overlap by 10") as err:
        plan_windows(np.array([5]), 10, 10)
    assert err.value.path == "params.yaml embeddings.stride" and "embeddings.stride" in err.value.fix
