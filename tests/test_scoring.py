"""PPL / CPL with real tiny future LMs (random-init GPT-2 from a config, real byte-level BPE)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from pipeline.models.future_lm import make_future_lm
from pipeline.features.history import PeriodHistory
from pipeline.models.encoding import encode_for_model, longest_first
from pipeline.models.perplexity import Perplexity, perplexities
from pipeline.models.scoring import score_abstracts
from pipeline.features.tokenizer import encode_abstracts, train_scratch_tokenizer

TEXTS = ["Neural machine translation with attention improves translation quality.",
         "We study multilingual summarization and evaluation of summaries.",
         "Transformers dominate language modeling benchmarks.",
         "A parser."]


@pytest.fixture(scope="module")
def tok():
    return train_scratch_tokenizer(TEXTS * 20, vocab_size=300)


def tiny_lm(vocab: int, zero: bool = False, seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_layer=1, n_head=2, n_embd=16,
                                    n_positions=64, bos_token_id=0, eos_token_id=0))
    if zero:   # every logit 0: the LM alone is uniform over the vocabulary
        for p in lm.parameters():
            torch.nn.init.zeros_(p)
    return lm.eval()


def test_uniform_lm_has_perplexity_vocab_size(tok):
    model = make_future_lm(tiny_lm(len(tok), zero=True), "baseline", window=2).eval()
    encoded = encode_abstracts(tok, TEXTS, 64)
    mask = np.zeros(len(tok), dtype=bool)
    mask[5:60] = True
    tokens = score_abstracts(model, encoded, mask, None, batch_size=3).tokens
    assert tokens["n_tokens"].tolist() == [len(e) - 1 for e in encoded]
    assert tokens["n_content"].tolist() == [int(mask[e[1:]].sum()) for e in encoded]
    np.testing.assert_allclose(tokens["nll_sum"], tokens["n_tokens"] * math.log(len(tok)))
    ppl, cpl = perplexities(tokens)
    assert ppl.ppl == pytest.approx(len(tok), rel=1e-6)   # float32 log-softmax
    assert cpl.ppl == pytest.approx(len(tok), rel=1e-6)


def test_ppl_is_exp_mean_token_nll_of_the_biased_distribution(tok):
    # Zero LM + Frequency-NoLSTM with a=1, b=0: p(w) = softmax(log f_{i-1})(w) = f(w) / sum f,
    # so every token's NLL can be written down by hand from the history.
    V = len(tok)
    model = make_future_lm(tiny_lm(V, zero=True), "frequency-nolstm", window=2).eval()
    with torch.no_grad():
        model.bias.a.fill_(1.0)
    counts = torch.arange(1, V + 1, dtype=torch.float64)
    log_f = torch.log(counts / counts.sum())
    history = PeriodHistory(period="2020", periods=("2018", "2019"),
                          log_freq=torch.stack([torch.zeros(V), log_f.float()], dim=1))
    encoded = encode_abstracts(tok, TEXTS[:2], 64)
    mask = np.ones(V, dtype=bool)
    tokens = score_abstracts(model, encoded, mask, history, batch_size=2).tokens
    p = torch.softmax(log_f.float(), 0).double()
    targets = [t for e in encoded for t in e[1:]]
    expected = math.exp(sum(-math.log(p[t]) for t in targets) / len(targets))
    assert perplexities(tokens)[0].ppl == pytest.approx(expected, rel=1e-5)
    # Without the history the biased model refuses to score (it would silently be the baseline).
    with pytest.raises(ValueError, match="needs the history"):
        score_abstracts(model, encoded, mask, None)


def test_batching_and_padding_do_not_change_scores(tok):
    model = make_future_lm(tiny_lm(len(tok), seed=3), "baseline", window=2).eval()
    encoded = encode_abstracts(tok, TEXTS, 64)
    mask = np.ones(len(tok), dtype=bool)
    one = score_abstracts(model, encoded, mask, None, batch_size=1, positions=True)
    four = score_abstracts(model, encoded, mask, None, batch_size=4, positions=True)
    pd.testing.assert_frame_equal(one.tokens, four.tokens, rtol=1e-5)
    pd.testing.assert_frame_equal(one.positions, four.positions, rtol=1e-5)
    assert (one.tokens["nll_sum"] > 0).all()


def test_bad_inputs(tok):
    model = make_future_lm(tiny_lm(len(tok)), "baseline", window=2).eval()
    mask = np.ones(len(tok), dtype=bool)
    with pytest.raises(ValueError, match="fewer than 2 tokens"):
        score_abstracts(model, [[0, 5, 0], [0]], mask, None)
    with pytest.raises(ValueError, match="batch_size"):
        score_abstracts(model, [[0, 5, 0]], mask, None, batch_size=0)
    empty = pd.DataFrame({"n_tokens": [0], "nll_sum": [0.0], "n_content": [0], "content_nll_sum": [0.0]})
    with pytest.raises(ValueError, match="split is empty"):
        perplexities(empty)
    no_content = empty.assign(n_tokens=3, nll_sum=2.0)
    with pytest.raises(ValueError, match="no content tokens"):
        perplexities(no_content)


def test_position_table_matches_the_sums_and_a_naive_top1_and_top10(tok):
    model = make_future_lm(tiny_lm(len(tok), seed=5), "frequency-nolstm", window=2).eval()
    with torch.no_grad():
        model.bias.a.fill_(0.8)
    V = len(tok)
    history = PeriodHistory("2020", ("2018", "2019"), -5 - torch.rand(V, 2, generator=torch.Generator().manual_seed(0)))
    encoded = encode_abstracts(tok, TEXTS, 64)
    mask = np.ones(V, dtype=bool)
    scores = score_abstracts(model, encoded, mask, history, batch_size=3, positions=True)
    pos = scores.positions
    assert list(pos.columns) == ["abstract", "position", "target_id", "nll", "top1", "top10"]
    assert [str(t) for t in pos.dtypes] == ["int32", "int32", "int32", "float64", "bool", "bool"]
    assert len(pos) == scores.tokens["n_tokens"].sum()
    np.testing.assert_allclose(pos.groupby("abstract")["nll"].sum(), scores.tokens["nll_sum"])
    for i, ids in enumerate(encoded):   # the naive way: one abstract at a time, torch.topk
        rows = pos[pos["abstract"] == i]
        assert rows["position"].tolist() == list(range(1, len(ids)))
        assert rows["target_id"].tolist() == ids[1:]
        logits = model(torch.tensor([ids]), history=history).logits[0, :-1]
        top = torch.topk(logits, 10).indices
        expected = [int(t in top[k]) for k, t in enumerate(ids[1:])]
        assert rows["top10"].astype(int).tolist() == expected
        argmax = logits.argmax(-1).tolist()
        assert rows["top1"].tolist() == [a == t for a, t in zip(argmax, ids[1:])]
        nll = -torch.log_softmax(logits.double(), -1)[torch.arange(len(ids) - 1), ids[1:]]
        np.testing.assert_allclose(rows["nll"], nll.detach().numpy(), rtol=1e-5)
    assert 0 < pos["top10"].mean() < 1
    assert (pos["top1"] <= pos["top10"]).all()        # a top-1 hit is a top-10 hit


def test_truncation_rule_keeps_the_start_and_counts_the_cut(tok):
    full = encode_abstracts(tok, TEXTS, 1000)
    length = 8
    cut, n = encode_for_model(tok, TEXTS, length)
    assert cut == [ids[:length] for ids in full]
    assert n == sum(len(ids) > length for ids in full) > 0
    assert cut == encode_abstracts(tok, TEXTS, length)   # the same rule as training's


def test_longest_first_is_a_stable_descending_length_order():
    seqs = [[1, 2], [1, 2, 3, 4], [5], [6, 7, 8, 9], [1, 2, 3]]
    assert longest_first(seqs) == [1, 3, 4, 0, 2]       # equal lengths keep input order
    assert longest_first(seqs) == sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    assert longest_first([]) == []


def test_perplexity_value_type():
    assert Perplexity(2 * math.log(3.0), 2).ppl == pytest.approx(3.0)
    assert Perplexity(1.0, 1) + Perplexity(2.0, 3) == Perplexity(3.0, 4)
    with pytest.raises(ValueError, match="no tokens"):
        _ = Perplexity(0.0, 0).ppl


def test_perplexity_arithmetic_is_torch_free_and_cross_entropy_is_a_mean_nll():
    import subprocess, sys
    code = ("import sys, pipeline.models.perplexity; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
    from pipeline.models.perplexity import cross_entropy, perplexity
    counts, log_p = np.array([2, 1, 1]), np.log([0.5, 0.25, 0.25])
    h = cross_entropy(counts, log_p)
    assert h == pytest.approx(1.5 * math.log(2))
    assert perplexity(h) == Perplexity(h * 4, 4).ppl == pytest.approx(2 ** 1.5)
