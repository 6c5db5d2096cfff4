"""FutureLM on tiny random-init GPT-2 and Llama models: bias in logits, gradients, α = 0, generation, save/load."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

from pipeline.infra.errors import UserError
from pipeline.models.future_lm import (
    FutureLM,
    load_future_lm,
    load_histories,
    make_future_lm,
    save_future_lm,
)
from pipeline.features.history import PeriodHistory
from pipeline.models.registry import lookup
from pipeline.variants._spec import setting_fields

V, D_ENC = 64, 6
VARIANTS = ["baseline", "frequency-nolstm", "frequency", "context", "context2"]


def tiny_lm(arch: str = "gpt2", extra_vocab: int = 0):
    torch.manual_seed(0)
    if arch == "gpt2":
        cfg = GPT2Config(vocab_size=V + extra_vocab, n_layer=2, n_head=2, n_embd=16, n_positions=64,
                         bos_token_id=0, eos_token_id=0)
    else:
        cfg = LlamaConfig(vocab_size=V + extra_vocab, hidden_size=16, intermediate_size=32,
                          num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                          max_position_embeddings=64, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return AutoModelForCausalLM.from_config(cfg)


def history(seed: int = 0) -> PeriodHistory:
    g = torch.Generator().manual_seed(seed)
    return PeriodHistory(period="2020", periods=("2018", "2019"), log_freq=-8 - 3 * torch.rand(V, 2, generator=g),
                       emb=torch.randn(V, 2, D_ENC, generator=g),
                       emb_seen=torch.rand(V, 2, generator=g) > 0.3)


def settings(variant: str, **kw):
    """``variant``'s settings (``lstm_hidden`` 4 where it has one), ``None`` for none."""
    cls = lookup(variant).settings
    if cls is None:
        assert not kw, f"{variant} has no settings"
        return None
    names = {f.name for f in setting_fields(cls)}
    return cls(**({"lstm_hidden": 4} if "lstm_hidden" in names else {}), **kw)


def future(variant: str, arch: str = "gpt2", **kw) -> FutureLM:
    """A tiny future LM; ``kw`` may name its variant's settings (e.g. context2's ``alpha``)."""
    extra = kw.pop("extra_vocab", 0)
    own = {k: kw.pop(k) for k in list(kw) if k in ("lstm_hidden", "alpha", "context_input")}
    model = make_future_lm(tiny_lm(arch, extra), variant, window=2,
                           settings=settings(variant, **own), feature_dim=D_ENC, **kw)
    return model.eval()


def ids(batch: int = 2, length: int = 9) -> torch.Tensor:
    return torch.randint(1, V, (batch, length), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_context2_with_alpha_zero_is_exactly_the_base_lm(arch: str) -> None:
    model = future("context2", arch, alpha=0.0)
    x = ids()
    base = model.lm(input_ids=x).logits
    assert torch.equal(model(x, history=history()).logits, base)
    # ... and a non-zero α really changes the logits (the check above can fail).
    model.bias.alpha.fill_(1.0)
    with torch.no_grad():
        model.bias.A.mul_(50)
    assert not torch.allclose(model(x, history=history()).logits, base)


@pytest.mark.parametrize("variant", VARIANTS[1:])
def test_logits_are_base_logits_plus_bias(variant: str) -> None:
    model = future(variant)
    x, h = ids(), history()
    with torch.no_grad():
        if variant == "frequency-nolstm":
            model.bias.a.fill_(0.7)
        base = model.lm(input_ids=x, output_hidden_states=True)
        E = model.lm.get_output_embeddings().weight
        expected = base.logits + model.bias(h, E, base.hidden_states[-1])
        torch.testing.assert_close(model(x, history=h).logits, expected)


@pytest.mark.parametrize("variant", VARIANTS)
def test_gradients_reach_new_modules_and_the_lm(variant: str) -> None:
    model = future(variant).train()
    if variant == "frequency-nolstm":
        with torch.no_grad():
            model.bias.a.fill_(0.5)
    x = ids()
    model(x, torch.ones_like(x), history(), labels=x).loss.backward()
    assert model.lm.get_input_embeddings().weight.grad.abs().sum() > 0
    if model.bias is None:
        return
    # b of Frequency-NoLSTM is softmax-invariant (gradient exactly 0 by construction).
    skip = {"b"} if variant == "frequency-nolstm" else set()
    for name, p in model.bias.named_parameters():
        if name not in skip:
            assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_loss_ignores_padding_and_minus_100() -> None:
    model = future("frequency")
    x = ids(1, 8)
    mask = torch.ones_like(x)
    mask[:, 5:] = 0
    labels = x.clone()
    labels[:, 5:] = -100
    padded = model(x, mask, history(), labels=x).loss
    truncated = model(x[:, :5], None, history(), labels=x[:, :5]).loss
    torch.testing.assert_close(padded, truncated)
    torch.testing.assert_close(model(x, None, history(), labels=labels).loss, truncated)


def test_bias_model_without_history_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs the history"):
        future("frequency")(ids())
    h = history()
    with pytest.raises(ValueError, match="embeddings"):
        future("context")(ids(), history=PeriodHistory(h.period, h.periods, h.log_freq))
    # The baseline needs none.
    assert future("baseline")(ids()).logits.shape == (2, 9, V)


def test_padded_output_vocabulary_gets_no_bias() -> None:
    model = future("frequency", "llama", extra_vocab=3)
    x = ids()
    base = model.lm(input_ids=x).logits
    out = model(x, history=history()).logits
    assert out.shape[-1] == V + 3
    assert torch.equal(out[..., V:], base[..., V:])
    assert not torch.equal(out[..., :V], base[..., :V])


def test_generation_applies_the_bias_at_every_step() -> None:
    """A strong previous-year frequency of one token makes greedy decoding pick it every step."""
    model = future("frequency-nolstm")
    h = history()
    h.log_freq[:, -1] = -20.0
    h.log_freq[42, -1] = 0.0
    with torch.no_grad():
        model.bias.a.fill_(5.0)
    out = model.generate(ids(1, 3), h, max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert out[0, 3:].tolist() == [42] * 6
    plain = model.lm.generate(input_ids=ids(1, 3), max_new_tokens=6, do_sample=False, pad_token_id=0)
    assert plain[0, 3:].tolist() != [42] * 6


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_context2_generation_matches_step_by_step_biased_argmax(arch: str) -> None:
    """With the KV cache, generate() sees H_k of each new position: same as a full recompute."""
    model = future("context2", arch)
    with torch.no_grad():
        model.bias.A.mul_(30)
    h, x = history(), ids(1, 3)
    out = model.generate(x, h, max_new_tokens=5, do_sample=False, pad_token_id=0)
    seq = x
    for _ in range(5):
        nxt = model(seq, history=h).logits[:, -1].argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], 1)
    assert torch.equal(out, seq)


@pytest.mark.parametrize("variant", VARIANTS)
def test_generation_with_beam_search_and_sampling(variant: str) -> None:
    model = future(variant)
    torch.manual_seed(0)
    out = model.generate(torch.zeros(2, 1, dtype=torch.long), history(), max_new_tokens=8,
                         num_beams=3, do_sample=True, top_k=10, top_p=0.92,
                         no_repeat_ngram_size=2, pad_token_id=0, eos_token_id=None)
    assert out.shape == (2, 9)
    assert ((out >= 0) & (out < V)).all()


@pytest.mark.parametrize(("variant", "arch"), [("context2", "gpt2"), ("frequency", "llama"),
                                               ("baseline", "gpt2")])
def test_save_and_load_round_trip(tmp_path, variant: str, arch: str) -> None:
    model = future(variant, arch, alpha=0.5) if variant == "context2" else future(variant, arch)
    save_future_lm(model, tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["config.json", "model.safetensors"]
    loaded = load_future_lm(tmp_path / "m")
    assert (loaded.variant, loaded.window, loaded.history_kinds) == (
        model.variant, model.window, model.history_kinds)
    assert loaded.bias_config == model.bias_config
    x = ids()
    assert torch.equal(loaded(x, history=history()).logits, model(x, history=history()).logits)


def test_config_json_records_the_module_and_the_variant_s_settings(tmp_path) -> None:
    """Format 3: ``bias`` holds the module's shape and the variant's own settings."""
    from pipeline.models.future_lm import FORMAT_VERSION
    from pipeline.variants.context2 import Context2Settings

    assert FORMAT_VERSION == 3
    model = future("context2", alpha=0.5, context_input="paper")
    save_future_lm(model, tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["format_version"] == 3 and config["variant"] == "context2"
    assert config["bias"] == {"kind": "context2", "window": 2, "dropout": 0.0, "lm_dim": 16,
                              "vocab_size": V, "feature_dim": D_ENC, "target_dim": None,
                              "settings": {"lstm_hidden": 4, "context_input": "paper",
                                           "alpha": 0.5}}
    loaded = load_future_lm(tmp_path / "m")
    assert loaded.bias_config.settings == Context2Settings(lstm_hidden=4, context_input="paper",
                                                           alpha=0.5)
    # a variant without settings records none; the baseline records kind none
    save_future_lm(future("frequency-nolstm"), tmp_path / "f")
    assert json.loads((tmp_path / "f" / "config.json").read_text())["bias"]["settings"] is None
    save_future_lm(future("baseline"), tmp_path / "b")
    bias = json.loads((tmp_path / "b" / "config.json").read_text())["bias"]
    assert bias["kind"] == "none" and bias["settings"] is None


@pytest.mark.parametrize(("variant", "settings_record"), [
    ("context2", {"lstm_hidden": 4, "rank": 3}),    # a setting the variant does not have
    ("frequency-nolstm", {"lstm_hidden": 4}),       # settings for a variant without any
])
def test_saved_settings_that_do_not_fit_the_variant_are_a_user_error(tmp_path, variant,
                                                                    settings_record) -> None:
    saved = tmp_path / f"{variant}-s0"
    save_future_lm(future(variant), saved)
    config = json.loads((saved / "config.json").read_text())
    config["bias"]["settings"] = settings_record
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match="corrupt or incomplete"):
        load_future_lm(saved)


def test_settings_of_another_variant_are_refused() -> None:
    with pytest.raises(ValueError, match="Context2Settings, got ContextSettings"):
        make_future_lm(tiny_lm(), "context2", window=2, settings=settings("context"),
                       feature_dim=D_ENC)


def test_settings_for_a_variant_without_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="no settings"):
        make_future_lm(tiny_lm(), "frequency-nolstm", window=2, settings=settings("frequency"))


def test_default_settings_are_the_variant_s() -> None:
    model = make_future_lm(tiny_lm(), "context2", window=2, feature_dim=D_ENC)
    assert model.bias_config.settings == lookup("context2").settings()
    assert model.bias_config.settings.lstm_hidden == 32   # the default run's (paper: 768)
    assert make_future_lm(tiny_lm(), "baseline", window=2).bias_config.settings is None


def test_context_length_and_seed_are_saved_with_the_model(tmp_path) -> None:
    model = make_future_lm(tiny_lm(), "frequency", window=2, settings=settings("frequency"),
                           context_length=40, seed=3)
    save_future_lm(model, tmp_path / "m")
    loaded = load_future_lm(tmp_path / "m")
    assert (loaded.context_length, loaded.seed) == (40, 3)
    # Without one, the context length is the LM's position limit; beyond it is an error.
    assert make_future_lm(tiny_lm(), "baseline", window=2).context_length == 64
    with pytest.raises(ValueError, match="context length 65"):
        make_future_lm(tiny_lm(), "baseline", window=2, context_length=65)


@pytest.mark.parametrize("variant", ["baseline", "context2"])
def test_device_is_where_the_weights_are(variant: str) -> None:
    model = future(variant)
    assert model.device == torch.device("cpu") == next(model.parameters()).device
    if torch.cuda.is_available():
        assert model.to("cuda").device == next(model.parameters()).device
        assert model.device.type == "cuda"
    else:   # a meta copy moves every parameter, LM and bias alike
        assert model.to("meta").device == torch.device("meta")


def test_loss_is_the_plain_mean_cross_entropy() -> None:
    model = future("context2").train()
    x = ids(3, 10)
    mask = torch.ones_like(x)
    mask[1, 6:] = 0
    out = model(x, mask, history(), labels=x)
    labels = x.masked_fill(mask == 0, -100)
    plain = torch.nn.functional.cross_entropy(out.logits[:, :-1].reshape(-1, V).float(),
                                              labels[:, 1:].reshape(-1), ignore_index=-100)
    torch.testing.assert_close(out.loss, plain, rtol=1e-6, atol=1e-6)


def corrupt(saved, name: str, how: str):
    path = saved / name
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"{not json" if name.endswith(".json") else b"\x00" * 64)
    elif how == "delete":
        path.unlink()
    return path


@pytest.mark.parametrize(("name", "how", "message"), [
    ("model.safetensors", "truncate", "weights cannot be read"),
    ("model.safetensors", "garbage", "weights cannot be read"),
    ("model.safetensors", "delete", "weights are missing"),
    ("config.json", "garbage", "config.json is corrupt"),
    ("config.json", "truncate", "config.json is corrupt"),
    ("config.json", "delete", "not a saved future LM"),
])
def test_damaged_model_files_are_user_errors_naming_the_file_and_fix(tmp_path, name, how,
                                                                     message) -> None:
    saved = tmp_path / "models" / "frequency-s1"
    save_future_lm(future("frequency"), saved)
    path = corrupt(saved, name, how)
    with pytest.raises(UserError, match=message) as err:
        load_future_lm(saved)
    assert err.value.path == str(path)
    assert "dvc repro -f train-frequency@s1" in err.value.fix


def test_config_of_an_older_format_or_missing_keys_is_a_user_error(tmp_path) -> None:
    saved = tmp_path / "baseline-s0"
    save_future_lm(future("baseline"), saved)
    config = json.loads((saved / "config.json").read_text())
    for old in (1, 2):   # 2: before the variant's settings were recorded
        (saved / "config.json").write_text(json.dumps({**config, "format_version": old}))
        with pytest.raises(UserError, match=f"format {old}"):
            load_future_lm(saved)
    del config["lm_config"]
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match="corrupt or incomplete"):
        load_future_lm(saved)


def test_missing_history_year_is_a_user_error(tmp_path) -> None:
    with pytest.raises(UserError, match="history of 2021") as err:
        load_histories([2021], 2, {"frequencies"}, tmp_path, None)
    assert "2019" in str(err.value)
    assert load_histories([2021], 2, set(), None, None) == {}   # the baseline reads none
    with pytest.raises(UserError, match="--frequencies and --embeddings"):
        load_histories([2021], 2, {"embeddings"}, tmp_path, None)


SAVE_SCRIPT = """
import sys, torch
sys.path.insert(0, {tests!r})
from test_future_lm import future
from pipeline.models.future_lm import save_future_lm
torch.manual_seed(0)
save_future_lm(future("context2", "gpt2", alpha=0.5), sys.argv[1])
"""


@pytest.mark.slow
def test_saved_weights_are_byte_identical_across_hash_seeds(tmp_path) -> None:
    """Saving the same weights in separate processes gives the same bytes (safetensors orders
    a multi-key metadata map randomly per process; the old writer failed this 1 - 1/4 of the time)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = SAVE_SCRIPT.format(tests=str(Path(__file__).parent))
    blobs = []
    for seed in ("1", "2", "3"):
        out = tmp_path / f"m{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", script, str(out)], check=True, env=env,
                       cwd=Path(__file__).parents[1])
        blobs.append((out / "model.safetensors").read_bytes())
    assert blobs[0] == blobs[1] == blobs[2]
