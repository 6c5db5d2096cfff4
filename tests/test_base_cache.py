"""The frozen-base hidden-state cache (pipeline.features.base_cache) and training/scoring from it
(pipeline.training.cached) agree with the uncached model on a tiny random-init GPT-2 over real
(tiny) tokenised text; the cache invalidates when the base, tokenizer or context length change."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from pipeline.corpus.periods import shift
from pipeline.features.base_cache import (
    HiddenMemo,
    PeriodHidden,
    build_cache,
    cache_identity,
    lm_digest,
    lm_identity,
    load_cache,
    scoring_order,
)
from pipeline.features.history import PeriodHistory
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.errors import UserError
from pipeline.models.encoding import encode_for_model, longest_first
from pipeline.models.future_lm import FutureLM, make_future_lm, scratch_gpt2
from pipeline.models.scoring import score_abstracts
from pipeline.training.cached import evaluate_cached, score_cached, train_cached
from pipeline.training.checkpoints import Checkpoints
from pipeline.training.loop import evaluate, train
from tests.variant_settings import sized

CONTEXT = 24
TRAIN, DEV = ("2017", "2018", "2019"), "2020"
TOPICS = ("neural machine translation", "named entity recognition", "dependency parsing",
          "large language models", "word embeddings", "question answering", "summarization")


def texts_of(period: str, n: int = 7) -> list[str]:
    return [f"We study {TOPICS[(k + int(period)) % len(TOPICS)]} for low-resource languages in "
            f"{period}; our model improves {TOPICS[k % len(TOPICS)]} by {k + 2} points" +
            " on three benchmarks" * (k % 3) for k in range(n)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("base")
    tok = train_scratch_tokenizer([t for p in TRAIN for t in texts_of(p)], 300)
    tok.save_pretrained(root / "tokenizer")
    data = {p: encode_for_model(tok, texts_of(p), CONTEXT)[0] for p in (*TRAIN, DEV)}
    vocab = len(tok)
    torch.manual_seed(0)
    lm = scratch_gpt2(vocab, tok.eos_token_id, n_layer=2, n_head=2, n_embd=16, n_positions=32,
                      dropout=0.1)
    lm.save_pretrained(root / "lm")
    g = torch.Generator().manual_seed(1)
    histories = {p: PeriodHistory(p, (shift(p, -2), shift(p, -1)), -3 - 2 * torch.rand(vocab, 2, generator=g),
                                  torch.randn(vocab, 2, 4, generator=g),
                                  torch.rand(vocab, 2, generator=g) > 0.2)
                 for p in (*TRAIN, DEV)}
    identity = cache_identity([root / "lm"], root / "tokenizer", CONTEXT)
    return root, lm, data, histories, identity, tok.eos_token_id


def future(lm, variant: str = "frequency", seed: int = 0) -> FutureLM:
    torch.manual_seed(seed)
    return make_future_lm(copy.deepcopy(lm), variant, 2, settings=sized(variant, 8), feature_dim=4,
                          dropout=0.1, context_length=CONTEXT)


def test_lm_head_of_the_final_hidden_states_is_the_logits(setup) -> None:
    _, lm, data, *_ = setup
    lm.eval()
    ids = torch.tensor([data[DEV][0][:10], data[DEV][1][:10]])
    mask = torch.ones_like(ids)
    with torch.no_grad():
        hidden = lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
        assert torch.equal(lm.get_output_embeddings()(hidden), lm(ids, attention_mask=mask).logits)


def test_the_cache_holds_the_encoding_in_scoring_order(setup, tmp_path: Path) -> None:
    _, lm, data, _, identity, _ = setup
    build_cache(lm, data, tmp_path / "c", identity, batch_size=3)
    cache = load_cache(tmp_path / "c", identity)
    assert list(cache) == [*TRAIN, DEV]
    assert all(cache[p].sequences() == data[p] for p in cache)
    assert scoring_order(data["2018"]) == longest_first(data["2018"])


@pytest.mark.parametrize("variant", ["baseline", "frequency", "context2"])
def test_cached_scores_equal_uncached(setup, tmp_path: Path, variant: str) -> None:
    _, lm, data, histories, identity, pad = setup
    model = future(lm, variant)
    build_cache(lm, {DEV: data[DEV]}, tmp_path / "dev", identity, batch_size=3)
    cache = load_cache(tmp_path / "dev", identity)
    scored = score_abstracts(model, data[DEV], None, histories[DEV], 3, pad_id=pad).tokens
    sums = score_cached(model, cache[DEV], histories[DEV], 3)
    np.testing.assert_allclose(sums[:, 0], scored["nll_sum"], rtol=1e-6)
    assert sums[:, 1].tolist() == scored["n_tokens"].tolist()
    uncached = evaluate(model, {DEV: data[DEV]}, histories, 3, pad).ppl
    cached = evaluate_cached(model, cache, histories, 3).ppl
    assert cached == pytest.approx(uncached, rel=1e-6) and f"{cached:.2f}" == f"{uncached:.2f}"


@pytest.mark.parametrize("variant", ["baseline", "frequency", "context2"])
def test_scoring_through_the_memo_equals_running_the_lm(setup, tmp_path: Path,
                                                        variant: str) -> None:
    """The frozen-base score stage's path: the model's own scoring with its states read from a
    HiddenMemo gives the full model's per-abstract NLL; every batch is served by the memo."""
    _, lm, data, histories, identity, pad = setup
    model = future(lm, variant).eval()
    plain = score_abstracts(model, data[DEV], None, histories[DEV], 3, pad_id=pad).tokens
    build_cache(model.lm, {DEV: data[DEV]}, tmp_path / "dev", identity, batch_size=3)
    memo = HiddenMemo(load_cache(tmp_path / "dev", identity))
    model.use_hidden_memo(memo)
    cached = score_abstracts(model, data[DEV], None, histories[DEV], 3, pad_id=pad).tokens
    assert memo.hits == -(-len(data[DEV]) // 3) and memo.misses == 0
    np.testing.assert_allclose(cached["nll_sum"], plain["nll_sum"], rtol=1e-6)
    assert cached["n_tokens"].tolist() == plain["n_tokens"].tolist()


def test_the_memo_misses_what_it_does_not_hold(setup, tmp_path: Path) -> None:
    _, lm, data, _, identity, _ = setup
    a, b = data[DEV][0][:10], data[DEV][1]   # two lengths: one row is padded
    build_cache(lm, {DEV: [a, b]}, tmp_path / "dev", identity, batch_size=3)
    memo = HiddenMemo(load_cache(tmp_path / "dev", identity))
    assert len(memo) == 2 and len(a) < len(b)
    ids = torch.zeros((2, len(b)), dtype=torch.long)
    mask = torch.zeros((2, len(b)), dtype=torch.long)
    for row, seq in enumerate((a, b)):
        ids[row, :len(seq)], mask[row, :len(seq)] = torch.tensor(seq), 1
    hidden = memo.lookup(ids, mask)
    assert hidden is not None and hidden.shape == (2, len(b), 16)
    assert not hidden[0, len(a):].any() and hidden[0, :len(a)].any()   # zeros on padding
    assert memo.lookup(ids[:, :-1], mask[:, :-1]) is None      # a prefix (a decoding step)
    left_ids, left_mask = ids.clone(), mask.clone()            # left padding: not the layout
    left_ids[0] = torch.tensor([0] * (len(b) - len(a)) + a)
    left_mask[0] = torch.tensor([0] * (len(b) - len(a)) + [1] * len(a))
    assert memo.lookup(left_ids, left_mask) is None
    foreign = ids.clone()
    foreign[0, 1] = (foreign[0, 1] + 1) % 50
    assert memo.lookup(foreign, mask) is None
    assert (memo.hits, memo.misses) == (1, 3)


def test_the_identity_of_a_loaded_lm_is_its_weights(setup) -> None:
    """lm_identity hashes the loaded weights: a copy agrees, one changed weight does not."""
    root, lm, *_ = setup
    assert lm_digest(copy.deepcopy(lm)) == lm_digest(lm)
    other = copy.deepcopy(lm)
    with torch.no_grad():
        next(other.parameters())[0, 0] += 1e-3
    assert lm_digest(other) != lm_digest(lm)
    assert lm_identity(lm, root / "tokenizer", CONTEXT) != lm_identity(other, root / "tokenizer",
                                                                         CONTEXT)


@pytest.mark.slow
@pytest.mark.parametrize("variant,grad_accum", [("frequency", 1), ("frequency", 2), ("context2", 2)])
def test_cached_training_reaches_the_uncached_dev_perplexity(setup, tmp_path: Path, variant: str,
                                                             grad_accum: int) -> None:
    """Same steps, same dev perplexity (bit-identical on the machines tried for Frequency;
    Context²'s gate reads the states, which differ in the last bits between the cache's
    batches and the training batches)."""
    _, lm, data, histories, identity, pad = setup
    config = TrainConfig(epochs=3, batch_size=2, grad_accum=grad_accum, lr_new=1e-2,
                         warmup_steps=2, freeze_lm=True, patience=0, eval_batch_size=3, seed=3)
    build_cache(lm, {p: data[p] for p in TRAIN}, tmp_path / "train", identity, batch_size=3)
    build_cache(lm, {DEV: data[DEV]}, tmp_path / "dev", identity, batch_size=3)
    plain, fast = future(lm, variant), future(lm, variant)
    start = copy.deepcopy(fast.bias.state_dict())
    train_data = {p: data[p] for p in TRAIN}
    reference = train(plain, train_data, {DEV: data[DEV]}, histories, config, pad_id=pad,
                      device="cpu", checkpoints=Checkpoints(tmp_path / "ckpt", key="k"),
                      live_dir=tmp_path / "live")
    losses: list[float] = []
    state = train_cached(fast, load_cache(tmp_path / "train", identity),
                         load_cache(tmp_path / "dev", identity), histories, config,
                         on_step=lambda s, loss: losses.append(loss))
    assert state.step == reference.step == len(losses) and state.tokens == reference.tokens
    np.testing.assert_allclose(state.dev_ppl, reference.dev_ppl, rtol=1e-5)
    assert [f"{p:.2f}" for p in state.dev_ppl] == [f"{p:.2f}" for p in reference.dev_ppl]
    assert any(not torch.equal(v, start[k]) for k, v in fast.bias.state_dict().items())
    assert state.best_epoch == reference.best_epoch
    for name, value in fast.state_dict().items():
        torch.testing.assert_close(value, plain.state_dict()[name], rtol=1e-4, atol=1e-6)
    for name, value in fast.lm.state_dict().items():       # the LM stays frozen
        assert torch.equal(value, lm.state_dict()[name]), name


def test_bf16_storage_changes_perplexity_by_under_a_tenth_of_a_percent(setup, tmp_path: Path) -> None:
    _, lm, data, histories, identity, _ = setup
    model = future(lm)
    build_cache(lm, data, tmp_path / "fp32", identity, batch_size=3)
    build_cache(lm, data, tmp_path / "bf16", identity, batch_size=3, storage="bf16")
    full = evaluate_cached(model, load_cache(tmp_path / "fp32", identity), histories, 3).ppl
    half = evaluate_cached(model, load_cache(tmp_path / "bf16", identity), histories, 3).ppl
    assert abs(half / full - 1) < 1e-3
    assert (tmp_path / "bf16" / "2019.safetensors").stat().st_size < \
        (tmp_path / "fp32" / "2019.safetensors").stat().st_size


def test_a_changed_base_tokenizer_or_context_length_invalidates_the_cache(setup, tmp_path: Path) -> None:
    root, lm, data, _, identity, _ = setup
    build_cache(lm, {DEV: data[DEV]}, tmp_path / "c", identity, batch_size=3)
    assert isinstance(load_cache(tmp_path / "c", identity)[DEV], PeriodHidden)

    other_lm = copy.deepcopy(lm)
    with torch.no_grad():
        next(other_lm.parameters())[0, 0] += 1.0
    other_lm.save_pretrained(tmp_path / "lm2")
    tok2 = tmp_path / "tok2"
    tok2.mkdir()
    for f in (root / "tokenizer").iterdir():
        (tok2 / f.name).write_bytes(f.read_bytes())
    (tok2 / "tokenizer.json").write_bytes((tok2 / "tokenizer.json").read_bytes() + b" ")
    stale = {"lm": cache_identity([tmp_path / "lm2"], root / "tokenizer", CONTEXT),
             "tokenizer": cache_identity([root / "lm"], tok2, CONTEXT),
             "context_length": cache_identity([root / "lm"], root / "tokenizer", CONTEXT - 1),
             "revision": cache_identity([root / "lm"], root / "tokenizer", CONTEXT, revision="abc")}
    for field, expected in stale.items():
        with pytest.raises(UserError, match=f"stale: its {field}") as err:
            load_cache(tmp_path / "c", expected)
        assert err.value.fix and "rebuild" in err.value.fix
    with pytest.raises(UserError, match="no base-LM hidden-state cache"):
        load_cache(tmp_path / "missing", identity)
    with pytest.raises(UserError, match="no period 2021"):
        load_cache(tmp_path / "c", identity, ["2021"])
