"""The adapted Baseline (train.base: adapted): a pretrained LM cut into its trunk and
its top k blocks (pipeline.models.blocks), the trunk cache and the final states computed from it
(pipeline.training.trunk), and the top blocks fine-tuned from it (pipeline.training.adapted), on
tiny random-init Llama and GPT-2 models over real (tiny) tokenised text."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from pipeline.features.base_cache import final_hidden, lm_identity, load_cache
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.errors import UserError
from pipeline.infra.io import write_parquet
from pipeline.models.blocks import (n_blocks, split_layer, top_modules, top_states,
                                    trunk_states, trunk_weights)
from pipeline.models.encoding import encode_for_model
from pipeline.models.future_lm import make_future_lm, use_sdpa
from pipeline.models.nll import collate
from pipeline.models.portable import make_portable
from pipeline.training.adapted import evaluate_trunk, train_adapted
from pipeline.training.loop import evaluate
from pipeline.training.trunk import open_trunk, write_cache_from_trunk, write_trunk_cache
from tests.test_base_cache import CONTEXT, DEV, TRAIN, texts_of


def llama(vocab: int, eos: int) -> LlamaForCausalLM:
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        tie_word_embeddings=True, bos_token_id=eos, eos_token_id=eos))


def gpt2(vocab: int, eos: int) -> GPT2LMHeadModel:
    return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_layer=3, n_head=2, n_embd=16,
                                      n_positions=64, bos_token_id=eos, eos_token_id=eos))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    """A tokenizer folder, the split files (period, abstract) and the encoded sequences."""
    root = tmp_path_factory.mktemp("adapted")
    tok = train_scratch_tokenizer([t for p in TRAIN for t in texts_of(p)], 300)
    tok.save_pretrained(root / "tokenizer")
    splits = {}
    for name, periods in (("train", TRAIN), ("dev", (DEV,))):
        rows = [(p, t) for p in periods for t in texts_of(p)]
        splits[name] = root / f"{name}.parquet"
        write_parquet(pd.DataFrame(rows, columns=["period", "abstract"]), splits[name])
    return root, tok, splits


def pretrained(kind, tok) -> torch.nn.Module:
    torch.manual_seed(0)
    return make_portable(use_sdpa(kind(len(tok), tok.eos_token_id))).eval()


@pytest.mark.parametrize("kind", [llama, gpt2])
def test_top_blocks_of_the_trunk_states_are_the_final_states(kind, corpus) -> None:
    """For every split point, the top blocks run on the trunk's states (re-padded with zeros, as
    the cache re-pads them) give the whole LM's final states bit for bit."""
    _, tok, _ = corpus
    lm = pretrained(kind, tok)
    encoded = encode_for_model(tok, texts_of("2018"), 64)[0]
    sequences = [s[:n] for s, n in zip(encoded, (40, 25, 12))]   # three lengths: padding
    batch = collate(sequences, tok.eos_token_id)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert not bool(mask.all())   # right padding is part of the case
    with torch.no_grad():
        full = lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
        for layer in range(n_blocks(lm) + 1):
            trunk = trunk_states(lm, ids, mask, layer) * mask[..., None]
            top = top_states(lm, trunk, mask, layer)
            assert torch.equal(top * mask[..., None], full * mask[..., None]), layer
    assert n_blocks(lm) == 3 and split_layer(lm, 1) == 2
    with pytest.raises(UserError, match="train.adapt_layers 4"):
        split_layer(lm, 4)


def test_a_trunk_identity_ignores_the_top_blocks_and_the_output_layer(corpus) -> None:
    root, tok, _ = corpus
    lm = pretrained(llama, tok)
    layer = split_layer(lm, 1)
    identity = lm_identity(lm, root / "tokenizer", CONTEXT, layer=layer,
                           weights=trunk_weights(lm, layer))
    adapted = copy.deepcopy(lm)
    with torch.no_grad():
        for module in top_modules(adapted, 1):
            for p in module.parameters():
                p.add_(0.5)
    assert lm_identity(adapted, root / "tokenizer", CONTEXT, layer=layer,
                       weights=trunk_weights(adapted, layer)) == identity
    assert lm_identity(adapted, root / "tokenizer", CONTEXT) != lm_identity(lm, root / "tokenizer",
                                                                            CONTEXT)
    with torch.no_grad():
        adapted.model.layers[0].mlp.up_proj.weight.add_(0.5)   # a trunk block: another trunk
    assert lm_identity(adapted, root / "tokenizer", CONTEXT, layer=layer,
                       weights=trunk_weights(adapted, layer)) != identity


def test_adapting_trains_only_the_top_blocks_and_its_caches_are_the_lm_s(corpus, tmp_path) -> None:
    """One epoch from the trunk cache changes the top block and the final norm only, lowers the
    dev perplexity, reports the perplexity the whole LM computes, and the final-state cache
    computed from the trunk equals the adapted LM's own states."""
    root, tok, splits = corpus
    tokenizer = root / "tokenizer"
    lm = pretrained(llama, tok)
    trunk_dir = tmp_path / "trunk"
    counts = write_trunk_cache(lm, tokenizer, [splits["train"], splits["dev"]], trunk_dir, CONTEXT,
                               1, batch_size=3, device="cpu", precision="fp32", storage="fp32")
    assert counts == {**{p: 7 for p in TRAIN}, DEV: 7}
    trunk = open_trunk(trunk_dir, lm, tokenizer, CONTEXT, 1)
    with pytest.raises(UserError, match="trunk_cache"):   # another split point: refused
        open_trunk(trunk_dir, lm, tokenizer, CONTEXT, 2)

    model = make_future_lm(copy.deepcopy(lm), "baseline", 2, dropout=0.0, context_length=CONTEXT)
    before = copy.deepcopy(model.lm.state_dict())
    dev = {DEV: trunk[DEV]}
    unadapted = evaluate_trunk(model, dev, split_layer(model.lm, 1), 3).ppl
    config = TrainConfig(epochs=2, batch_size=2, grad_accum=1, lr_lm=3e-2, patience=0,
                         max_length=CONTEXT, eval_batch_size=3, seed=0)
    state = train_adapted(model, {p: trunk[p] for p in TRAIN}, dev, 1, config)
    assert state.step > 0 and state.best_ppl < unadapted
    after = model.lm.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith(("model.layers.2.", "model.norm.")) for k in changed)
    assert not any(p.requires_grad for p in model.lm.parameters())

    sequences = {DEV: trunk[DEV].sequences()}   # the whole LM on the same abstracts agrees
    whole = evaluate(model, sequences, {}, 3, tok.eos_token_id).ppl
    assert whole == pytest.approx(state.best_ppl, rel=1e-5)

    final_dir = tmp_path / "final"
    write_cache_from_trunk(model.lm, tokenizer, trunk_dir, final_dir, CONTEXT, 1, batch_size=3,
                           device="cpu", precision="fp32", storage="fp32")
    cached = load_cache(final_dir, lm_identity(model.lm, tokenizer, CONTEXT))
    own = final_hidden(model.lm, trunk[DEV].sequences(), 3, "cpu", period=DEV)
    assert torch.equal(cached[DEV].hidden, own.hidden) and torch.equal(cached[DEV].ids, own.ids)
    with pytest.raises(UserError, match="stale"):   # the pretrained LM's identity differs
        load_cache(final_dir, lm_identity(lm, tokenizer, CONTEXT))


def test_only_the_baseline_is_adapted(corpus) -> None:
    _, tok, _ = corpus
    model = make_future_lm(pretrained(llama, tok), "baseline", 2, context_length=CONTEXT)
    with pytest.raises(ValueError, match="freeze_lm"):
        train_adapted(model, {}, {}, 1, TrainConfig(freeze_lm=True))
