"""Pooled contextual embeddings: file round trip, pooling vs a naive loop, windows, devices,
layers, MLM adaptation, and the unseen-token rule on real per-period files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline.features import embeddings as em
from pipeline.features.alignment import plan_period
from pipeline.infra.device import pick_device
from pipeline.infra.errors import UserError
from pipeline.features.history import dense_history
from pipeline.models.hub import MINILM, load_encoder, load_masked_lm, load_tokenizer_for
from pipeline.features.tokenizer import plain_backend, train_scratch_tokenizer

TEXTS = [
    "Café résumé: naïve BERT-based models reach 93.5% F1 (state-of-the-art)!",
    "We propose a neural machine translation system; it's fast, and pre-training helps.",
    "Short one.",
    " ".join(f"token{i % 7} word-{i}" for i in range(30)) + " end.",  # several windows
]
CPU = torch.device("cpu")




@pytest.fixture(scope="module")
def lm_tok():
    return train_scratch_tokenizer(TEXTS * 3, vocab_size=330)


@pytest.fixture(scope="module")
def enc_tok():
    return load_tokenizer_for(MINILM)


@pytest.fixture(scope="module")
def encoder():
    return load_encoder(MINILM).eval()


def naive_year(texts, lm_tok, enc_tok, model, size, stride):
    """Reference: one forward per window, Python loops over tokens, dicts for the means."""
    sums, counts = {}, {}
    cls, sep = enc_tok.cls_token_id, enc_tok.sep_token_id
    for text in texts:
        le = plain_backend(lm_tok).encode(text, add_special_tokens=False)
        ee = plain_backend(enc_tok).encode(text, add_special_tokens=False)
        n, step, starts = len(ee.ids), size - stride, [0]
        while starts[-1] + size < n:
            starts.append(starts[-1] + step)
        vecs = torch.zeros(n, model.config.hidden_size)
        for k, s in enumerate(starts):
            e = min(s + size, n)
            with torch.no_grad():
                h = model(input_ids=torch.tensor([[cls] + ee.ids[s:e] + [sep]])).last_hidden_state[0, 1:-1]
            own_s = 0 if k == 0 else s + stride // 2
            own_e = n if k == len(starts) - 1 else s + size - (stride - stride // 2)
            vecs[own_s:own_e] = h[own_s - s:own_e - s]
        for tid, (a, b) in zip(le.ids, le.offsets):
            hit = [j for j, (c, d) in enumerate(ee.offsets) if c < d and a < b and c < b and a < d]
            if hit:
                sums[tid] = sums.get(tid, 0) + vecs[hit].mean(0)
                counts[tid] = counts.get(tid, 0) + 1
    ids = sorted(sums)
    return np.array(ids), np.array([counts[i] for i in ids]), torch.stack([sums[i] / counts[i] for i in ids])


@pytest.mark.slow
def test_pooled_mean_equals_naive_loop(lm_tok, enc_tok, encoder) -> None:
    plan = plan_period(TEXTS, lm_tok, enc_tok, max_length=34, stride=8, batch_size=3)
    assert len(plan.batches) >= 2  # windows of the long text spread over batches
    ids, counts, vectors = em.extract_period(encoder, plan, -1, CPU, progress=False)
    ref_ids, ref_counts, ref_vectors = naive_year(TEXTS, lm_tok, enc_tok, encoder, size=32, stride=8)
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_array_equal(counts, ref_counts)
    assert vectors.dtype == torch.float16
    torch.testing.assert_close(vectors.float(), ref_vectors, atol=2e-3, rtol=2e-3)


def test_batching_does_not_change_results(lm_tok, enc_tok, encoder) -> None:
    a = em.extract_period(encoder, plan_period(TEXTS, lm_tok, enc_tok, 34, 8, 1), -1, CPU, False)
    b = em.extract_period(encoder, plan_period(TEXTS, lm_tok, enc_tok, 34, 8, 16), -1, CPU, False)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    torch.testing.assert_close(a[2].float(), b[2].float(), atol=2e-3, rtol=2e-3)


def test_long_abstract_is_windowed_not_truncated(lm_tok, enc_tok) -> None:
    plan = plan_period(TEXTS[3:], lm_tok, enc_tok, max_length=34, stride=8, batch_size=64)
    n_enc = len(plain_backend(enc_tok).encode(TEXTS[3], add_special_tokens=False).ids)
    owned = sum(int(b.positions.numel()) for b in plan.batches)
    assert n_enc > 32 and plan.n_encoder_tokens == n_enc
    assert owned >= n_enc  # every encoder token contributes (some to two LM tokens)
    assert plan.batches[0].input_ids.shape[0] == -(-(n_enc - 8) // 24)  # ceil((n - stride) / step)
    # every LM token occurrence with characters, up to the very end of the text, gets a vector
    # (a bare-space token's trimmed span is empty: it overlaps no encoder token, so no vector)
    lm = plain_backend(lm_tok).encode(TEXTS[3], add_special_tokens=False)
    with_chars = [i for i, (a, b) in zip(lm.ids, lm.offsets) if b > a]
    assert len(with_chars) < len(lm.ids)
    np.testing.assert_array_equal(plan.counts, np.bincount(with_chars, minlength=len(lm_tok)))


def test_layer_selection(lm_tok, enc_tok, encoder) -> None:
    plan = plan_period(TEXTS[:2], lm_tok, enc_tok, 64, 8, 8)
    last = em.extract_period(encoder, plan, -1, CPU, False)[2]
    six = em.extract_period(encoder, plan, 6, CPU, False)[2]
    first = em.extract_period(encoder, plan, 0, CPU, False)[2]
    torch.testing.assert_close(last, six)  # 6 layers: index 6 is the last
    assert not torch.allclose(last.float(), first.float(), atol=1e-2)
    with pytest.raises(UserError, match="embeddings.layer=7"):
        em.extract_period(encoder, plan, 7, CPU, False)


def test_write_read_round_trip_sorts_and_stores_fp16(tmp_path) -> None:
    path = tmp_path / "2018.safetensors"
    vectors = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    em.write_period(path, "2018", np.array([7, 2, 5]), np.array([1, 4, 2]), vectors,
                  encoder="enc", layer=-2, vocab_size=10)
    year = em.read_period(path)
    assert (year.period, year.dim, year.vocab_size, year.encoder, year.layer) == ("2018", 2, 10, "enc", -2)
    assert year.token_ids.tolist() == [2, 5, 7] and year.counts.tolist() == [4, 2, 1]
    assert year.vectors.dtype == torch.float16
    assert year.vectors.tolist() == [[3.0, 4.0], [5.0, 6.0], [1.0, 2.0]]
    first = path.read_bytes()
    em.write_period(path, "2018", np.array([7, 2, 5]), np.array([1, 4, 2]), vectors,
                  encoder="enc", layer=-2, vocab_size=10)
    assert path.read_bytes() == first


def test_write_rejects_mismatched_or_duplicate_rows(tmp_path) -> None:
    with pytest.raises(ValueError, match="do not line up"):
        em.write_period(tmp_path / "x.safetensors", "2018", [1, 2], [1], torch.zeros(2, 3), "e", -1)
    with pytest.raises(ValueError, match="duplicates"):
        em.write_period(tmp_path / "x.safetensors", "2018", [1, 1], [1, 1], torch.zeros(2, 3), "e", -1)
    with pytest.raises(UserError, match="does not exist") as err:
        em.read_period(tmp_path / "2017.safetensors")
    assert "dvc repro embeddings@2017" in err.value.fix


def test_unseen_token_falls_back_to_latest_earlier_year(tmp_path, lm_tok, enc_tok, encoder) -> None:
    """End to end through real files: a token absent from year 2 keeps its year-1 vector with
    seen=False; a token never seen is zeros; nothing comes from the encoder's input embeddings."""
    years = {2018: TEXTS[:1], 2019: TEXTS[1:2]}
    for year, texts in years.items():
        ids, counts, vectors = em.extract_period(encoder, plan_period(texts, lm_tok, enc_tok, 64, 8, 4),
                                               -1, CPU, False)
        em.write_period(tmp_path / f"{year}.safetensors", str(year), ids, counts, vectors, MINILM, -1,
                      vocab_size=len(lm_tok))
    y18, y19 = (em.read_period(tmp_path / f"{y}.safetensors") for y in years)
    X, seen = dense_history([y18, y19])
    only_2018 = sorted(set(y18.token_ids.tolist()) - set(y19.token_ids.tolist()))[0]
    row = y18.token_ids.tolist().index(only_2018)
    assert seen[only_2018].tolist() == [True, False]
    torch.testing.assert_close(X[only_2018, 1], y18.vectors[row].float())
    never = sorted(set(range(len(lm_tok))) - set(y18.token_ids.tolist()) - set(y19.token_ids.tolist()))[0]
    assert not seen[never].any() and X[never].abs().sum() == 0


def test_auto_device_and_dtype_on_cpu(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    device = pick_device("auto")
    assert device.type == "cpu" and em.pick_dtype("auto", device) == torch.float32
    assert em.pick_dtype("bf16", device) == torch.bfloat16
    with pytest.raises(UserError, match="int8") as err:
        em.pick_dtype("int8", device)
    assert err.value.path == "params.yaml embeddings.dtype"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine: the "
                    "GPU path is exercised when the test suite runs on a GPU host")
def test_cuda_path_is_chosen_when_available(lm_tok, enc_tok) -> None:
    device = pick_device("auto")
    dtype = em.pick_dtype("auto", device)
    assert device.type == "cuda" and dtype in (torch.bfloat16, torch.float16)
    model = load_encoder(MINILM).to(device=device, dtype=dtype)
    plan = plan_period(TEXTS, lm_tok, enc_tok, 34, 8, 4)
    ids, counts, vectors = em.extract_period(model, plan, -1, device, False)
    cpu = em.extract_period(load_encoder(MINILM), plan, -1, CPU, False)
    np.testing.assert_array_equal(ids, cpu[0])
    torch.testing.assert_close(vectors.float(), cpu[2].float(), atol=5e-2, rtol=5e-2)


def test_adaptation_refuses_encoder_without_mlm_head() -> None:
    with pytest.raises(ValueError, match="adapt_epochs: 0"):
        load_masked_lm(MINILM)


@pytest.mark.slow
def test_mlm_adaptation_updates_a_real_mlm_encoder(tmp_path, lm_tok, enc_tok) -> None:
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(vocab_size=enc_tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    BertForMaskedLM(config).save_pretrained(tmp_path / "tiny-mlm")
    enc_tok.save_pretrained(tmp_path / "tiny-mlm")
    mlm = load_masked_lm(str(tmp_path / "tiny-mlm"))
    before = mlm.bert.encoder.layer[0].attention.self.query.weight.detach().clone()
    encoder = em.adapt_encoder(mlm, enc_tok, TEXTS * 4, epochs=1, max_length=32, stride=8,
                               batch_size=4, device=CPU, progress=False)
    after = encoder.encoder.layer[0].attention.self.query.weight
    assert not torch.equal(before, after)
    ids, counts, vectors = em.extract_period(encoder, plan_period(TEXTS, lm_tok, enc_tok, 32, 8, 4),
                                           -1, CPU, False)
    assert vectors.shape == (len(ids), 32) and torch.isfinite(vectors.float()).all()


@pytest.mark.slow
def test_pooling_is_exact_whatever_the_order_or_split(lm_tok, enc_tok, encoder) -> None:
    """Fixed-point sums: any order of the batches, or any split of them into shards whose sums
    are added afterwards (what the all-reduce does), gives the same bits."""
    plan = plan_period(TEXTS, lm_tok, enc_tok, max_length=34, stride=8, batch_size=2)
    assert len(plan.batches) >= 3
    vocab = plan.counts.shape[0]
    whole, _ = em.pool_sums(encoder, plan.batches, vocab, -1, CPU, progress=False)
    backwards, _ = em.pool_sums(encoder, plan.batches[::-1], vocab, -1, CPU, progress=False)
    shards = [em.pool_sums(encoder, plan.batches[r::3], vocab, -1, CPU, progress=False)[0]
              for r in range(3)]
    assert whole.dtype == torch.int64 and whole.abs().sum() > 0
    assert torch.equal(whole, backwards) and torch.equal(whole, shards[2] + shards[0] + shards[1])
    ids, counts, vectors = em.extract_period(encoder, plan, -1, CPU, progress=False)
    assert torch.equal(vectors, em.mean_vectors(shards[0] + shards[1] + shards[2], plan.counts)[2])


def test_non_finite_encoder_output_is_refused() -> None:
    em.check_fixed_point(30.0, 100_000)
    for peak in (float("nan"), float("inf"), 1e9):
        with pytest.raises(ValueError, match="fixed point"):
            em.check_fixed_point(peak, 100_000)


def test_identities_are_recorded_and_the_tokenizer_is_checked(tmp_path) -> None:
    path = tmp_path / "2018.safetensors"
    em.write_period(path, "2018", np.array([1, 2]), np.array([1, 1]), torch.zeros(2, 3), "enc", -1,
                  vocab_size=5, tokenizer_id="a" * 64, corpus_id="c" * 64)
    year = em.read_period(path, tokenizer_id="a" * 64)
    assert (year.tokenizer_id, year.corpus_id) == ("a" * 64, "c" * 64)
    with pytest.raises(UserError, match="another tokenizer") as err:
        em.read_period(path, tokenizer_id="b" * 64)
    assert err.value.fix == "recompute it: `dvc repro embeddings@2018`"
    em.write_period(path, "2018", np.array([1, 2]), np.array([1, 1]), torch.zeros(2, 3), "enc", -1)
    with pytest.raises(UserError, match="does not record which tokenizer"):
        em.read_period(path, tokenizer_id="a" * 64)


def test_damaged_file_is_a_user_error_naming_it(tmp_path) -> None:
    path = tmp_path / "2018.safetensors"
    em.write_period(path, "2018", np.array([1, 2]), np.array([1, 1]), torch.zeros(2, 3), "enc", -1)
    path.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(UserError, match="damaged") as err:
        em.read_period(path)
    assert err.value.path == str(path) and "dvc repro embeddings@2018" in err.value.fix
