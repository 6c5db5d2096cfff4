"""The temporal-attention semantic-change method (paper 003 §4, Algorithm 1) with a real tiny
random-init BERT and the packaged MiniLM tokenizer: training lowers the MLM loss, time points
change the vectors, Algorithm 1's averaging against a direct computation, group means and NaNs,
a changed word against a stable one, determinism from the seed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from pipeline.corpus.pseudowords import word_pattern
from pipeline.infra.schema.params import ChangeMethodsConfig
from pipeline.models.hub import MINILM, load_tokenizer_for
from pipeline.semantic.benchmark import benchmark_inputs
from pipeline.semantic.methods.interface import EncoderSettings
from pipeline.semantic.temporal_mlm import (TEMPORAL_ATTENTION, TIME_MASK_PROB, TIME_TOKEN,
                                            TemporalMLMSettings, TimeTokens, _collate,
                                            build_model, group_vector, mask_tokens,
                                            mlm_loss, period_means, sample_sentences,
                                            score_targets, settings_from, temporal_change,
                                            texts_change, train, training_texts,
                                            training_windows, vectors_for)

TINY = TemporalMLMSettings(init="scratch", hidden=32, depth=2, usages=0, epochs=3, steps=0,
                           batch_size=4, max_length=32, lr=3e-3, lr_new=3e-3, sentences=50,
                           layers=2, seed=0)

ANIMALS = ["the cat chased the dog across the garden", "a small dog barked at the cat",
           "the cat and the dog slept in the sun", "my dog likes the garden cat"]
MONEY = ["the stock market fell after the bank report", "investors sold stock at the bank",
         "the market rallied and the bank profited", "a bank loan moved the stock market"]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer_for(MINILM)


def corpus(word: str, period: int) -> list[str]:
    """``word`` among animals in period 0 and among money in period 1 (a changed word)."""
    return [f"{s.replace('the', word, 1)}. the weather was mild." for s in
            (ANIMALS if period == 0 else MONEY)]


def held_out_loss(model, emb, tok, texts, periods) -> float:
    windows = training_windows(tok, texts, periods, TINY.max_length)
    width = max(len(w) for w, _ in windows)
    ids = torch.tensor([w + [tok.pad_token_id] * (width - len(w)) for w, _ in windows])
    attention = (ids != tok.pad_token_id).long()
    special = torch.isin(ids, torch.tensor(tok.all_special_ids))
    inputs, labels = mask_tokens(ids, special, tok, 0.3, torch.Generator().manual_seed(5))
    model.eval()
    with torch.no_grad():
        return float(mlm_loss(model, emb, tok, inputs, attention,
                              torch.tensor([p for _, p in windows]), labels))


def test_training_lowers_the_mlm_loss(tok):
    texts = corpus("zork", 0) * 3 + corpus("zork", 1) * 3
    periods = [0] * 12 + [1] * 12
    model, emb = build_model(tok, 2, TINY)
    before = held_out_loss(model, emb, tok, texts, periods)
    losses = train(model, emb, tok, texts, periods, TINY, progress=False)
    after = held_out_loss(model, emb, tok, texts, periods)
    assert len(losses) == 3 * 6                      # 24 windows, batches of 4, 3 epochs
    assert after < before - 1.0, (before, after)
    assert np.mean(losses[-6:]) < np.mean(losses[:6])
    assert not model.training


def test_time_points_change_the_vectors(tok):
    model, emb = build_model(tok, 3, TINY)
    sentence = ["the zork chased a dog."]
    vectors = {p: vectors_for(model, emb, tok, sentence, [["zork"]], p, 2, 32, 8)[0][0][0]
               for p in (0, 1, 2)}
    again = vectors_for(model, emb, tok, sentence, [["zork"]], 1, 2, 32, 8)[0][0][0]
    np.testing.assert_array_equal(vectors[1], again)
    assert not np.allclose(vectors[0], vectors[1], atol=1e-4)
    assert not np.allclose(vectors[1], vectors[2], atol=1e-4)
    with pytest.raises(ValueError, match="last_layers"):
        vectors_for(model, emb, tok, sentence, [["zork"]], 0, 4, 32, 8)   # 2 layers + embeddings


def test_algorithm1_averaging_against_a_direct_computation(tok):
    model, emb = build_model(tok, 2, TINY)
    texts = ["We train psw003 models. Nothing here.", "The PSW003 works and psw003 fails. Ok."]
    x, counts, skipped = period_means(model, emb, tok, texts, 1, ["psw003", "works", "absent"],
                                      n=10, last_layers=2, max_length=32,
                                      rng=np.random.default_rng(0), batch_size=1)
    assert counts.tolist() == [2, 1, 0] and skipped == 0
    assert not x[2].any()
    expected = {w: [] for w in ("psw003", "works")}
    for sentence, found in (("We train psw003 models.", ["psw003"]),
                            ("The PSW003 works and psw003 fails.", ["psw003", "works"])):
        enc = tok(sentence, return_offsets_mapping=True, return_tensors="pt")
        times = emb.ids(torch.tensor([1]), enc["attention_mask"])
        from pipeline.models.temporal_attention import temporal_times
        with torch.no_grad(), temporal_times(model, times):
            states = model.bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                output_hidden_states=True).hidden_states
        mean = ((states[-1] + states[-2]) / 2)[0].double().numpy()
        for word in found:
            spans = [(m.start(), m.end()) for m in word_pattern([word]).finditer(sentence)]
            tokens = [j for j, (a, b) in enumerate(enc["offset_mapping"][0].tolist())
                      if b > a and any(a < e and b > s for s, e in spans)]
            assert len(tokens) >= 2 if word == "psw003" else len(tokens) >= 1  # sub-tokens
            expected[word].append(mean[tokens].mean(0))
    np.testing.assert_allclose(x[0], np.mean(expected["psw003"], axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x[1], expected["works"][0], rtol=1e-5, atol=1e-6)
    # a window too short for the word: no vector, counted as skipped
    _, counts, skipped = period_means(model, emb, tok, ["a b c d e f g h psw003."], 0,
                                      ["psw003"], 10, 2, 6, np.random.default_rng(0))
    assert counts.tolist() == [0] and skipped == 1


def test_sentences_are_capped_at_n_with_the_seed():
    texts = [f"Sentence {i} has zork. Other {i} has blip." for i in range(10)]
    sentences, chosen = sample_sentences(texts, ["zork", "blip", "none"], 3,
                                         np.random.default_rng(0))
    assert len(sentences) == 20 and [len(c) for c in chosen] == [3, 3, 0]
    assert all("zork" in sentences[i] for i in chosen[0])
    again = sample_sentences(texts, ["zork", "blip", "none"], 3, np.random.default_rng(0))[1]
    assert again == chosen
    assert sample_sentences(texts, ["zork"], 50, np.random.default_rng(0))[1][0] == list(range(10))


def test_group_vectors_average_the_periods_they_see():
    means = [(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([2, 0])),
             (np.array([[3.0, 2.0], [0.0, 0.0]]), np.array([1, 0]))]
    vectors, seen = group_vector(means)
    np.testing.assert_allclose(vectors, [[2.0, 1.0], [0.0, 0.0]])   # per period, not per sentence
    assert seen.tolist() == [True, False]


@pytest.mark.slow
def test_changed_word_scores_higher_and_runs_are_deterministic(tok):
    # zork moves from animal to money contexts; blip stays in the same mixed contexts
    first = [corpus("zork", 0) * 4 + [s.replace("the", "blip", 1) for s in ANIMALS + MONEY] * 2]
    last = [corpus("zork", 1) * 4 + [s.replace("the", "blip", 1) for s in ANIMALS + MONEY] * 2]
    settings = dataclasses.replace(TINY, epochs=8)
    words = ["zork", "blip", "never"]
    scores, info = temporal_change(tok, first, last, words, settings, progress=False)
    again, info2 = temporal_change(tok, first, last, words, settings, progress=False)
    np.testing.assert_array_equal(scores, again)
    assert info["losses"] == info2["losses"]
    assert np.isnan(scores[2]) and np.isfinite(scores[:2]).all()
    assert scores[0] > scores[1], scores
    other = temporal_change(tok, first, last, words, dataclasses.replace(settings, seed=1),
                            progress=False)[0]
    assert not np.array_equal(other[:2], scores[:2])
    sized = temporal_change(tok, first, last, words, dataclasses.replace(settings, usages=8),
                            progress=False)[0]      # trained on the targets' sentences only
    assert sized[0] > sized[1], sized


def test_training_texts_are_the_targets_sentences_capped_per_target():
    texts = ["the zork ran. the sky was blue. a blip and a zork met.", "no target here.",
             "one blip. another blip. a third blip."]
    assert training_texts(texts, ["zork", "blip"], 0, seed=0) == texts       # every text whole
    every = training_texts(texts, ["zork", "blip"], 10, seed=0)
    assert sorted(every) == sorted(["the zork ran.", "a blip and a zork met.", "one blip.",
                                    "another blip.", "a third blip."])
    capped = training_texts(texts, ["zork", "blip"], 1, seed=0)
    pattern = word_pattern(["zork", "blip"])
    found = [m.group(0) for s in capped for m in pattern.finditer(s)]
    assert 1 <= found.count("zork") <= 2 and found.count("blip") <= 2   # one drawn per target
    assert len(capped) <= 2 and set(capped) <= set(every)
    assert training_texts(texts, ["zork", "blip"], 1, seed=0) == capped   # seeded


def test_usage_sized_training_takes_the_targets_sentences_only(tok):
    """With a usage cap the MLM's windows are the targets' sentences, not the texts: 2 zork
    sentences a period make 4 windows (1 batch of 4), where the 16 whole texts make 4."""
    first, last = [corpus("zork", 0) * 2], [corpus("zork", 1) * 2]
    whole = dataclasses.replace(TINY, epochs=1)
    sized = dataclasses.replace(whole, usages=2)
    assert len(temporal_change(tok, first, last, ["zork"], whole, progress=False)[1]["losses"]) == 4
    assert len(temporal_change(tok, first, last, ["zork"], sized, progress=False)[1]["losses"]) == 1


def test_targets_no_text_holds_train_nothing_and_score_nan(tok):
    first, last = [corpus("zork", 0)], [corpus("zork", 1)]
    sized = dataclasses.replace(TINY, usages=2)
    scores, info = temporal_change(tok, first, last, ["never", "absent"], sized, progress=False)
    assert info["losses"] == [] and np.isnan(scores).all()


def test_settings_from_the_params():
    config = ChangeMethodsConfig(temporal_epochs=7, temporal_sentences=5)
    settings = settings_from(config, seed=3)
    assert (settings.epochs, settings.sentences, settings.seed) == (7, 5, 3)
    assert settings.init == config.temporal_init and settings.depth == config.temporal_depth
    assert settings_from(ChangeMethodsConfig(), 0) == TemporalMLMSettings()   # one set of defaults


def test_both_stages_take_one_code_path(tok):
    """The semantic_change stage's per-period text lists (texts_change) and the benchmark's table
    (benchmark_inputs, then the method's score_targets with the params' settings) give the scores
    of temporal_change itself."""
    import pandas as pd

    first, last = [corpus("zork", 0), ANIMALS], [corpus("zork", 1)]
    settings = dataclasses.replace(TINY, epochs=1)
    words = ["zork", "weather"]
    direct = temporal_change(tok, first, last, words, settings, progress=False)[0]
    lists = texts_change(first, last, words, settings, MINILM, progress=False)[0]
    table = pd.DataFrame({"period": ["2015"] * 4 + ["2016"] * 4 + ["2019"] * 4,
                          "abstract": [t for part in (*first, *last) for t in part]})
    learned = ChangeMethodsConfig(**{f"temporal_{f}": getattr(settings, f) for f in (
        "init", "usages", "epochs", "steps", "lr", "lr_new", "batch_size", "max_length", "hidden",
        "depth", "sentences", "layers")})
    inputs = benchmark_inputs(table, ["2015", "2016"], ["2019"], MINILM,
                              EncoderSettings(-1, 32, 4), learned, settings.seed)
    assert settings_from(inputs.learned, inputs.seed) == settings
    result = score_targets(inputs, words, TEMPORAL_ATTENTION)
    assert np.isfinite(direct).all()
    np.testing.assert_array_equal(lists, direct)
    np.testing.assert_array_equal(result.scores, direct)
    assert set(result.details) == {"skipped_occurrences", "first_loss", "last_loss"}
    assert len(score_targets(inputs, [], TEMPORAL_ATTENTION).scores) == 0   # no target: no training


def test_time_tokens_prefix_every_window_and_sentence(tok):
    """Rosin et al. 2022: one new vocabulary entry per period after [CLS], never masked, and
    Algorithm 1's vectors against a direct computation with the period's token."""
    model, times = build_model(tok, 3, TINY, method=TIME_TOKEN)
    assert times == TimeTokens(len(tok), 3) and not hasattr(model, "time_embedding")
    assert model.config.vocab_size == len(tok) + 3
    windows = training_windows(tok, ["word " * 70], [2], 32, times)
    assert len(windows) == 3 and all(len(w) <= 32 for w, _ in windows)
    assert all(w[:2] == [tok.cls_token_id, len(tok) + 2] and w[-1] == tok.sep_token_id
               for w, _ in windows)
    sentence = "The PSW003 works and psw003 fails."
    got = {p: vectors_for(model, times, tok, [sentence], [["psw003"]], p, 2, 32, 8)[0][0][0]
           for p in (0, 1)}
    enc = tok(sentence, return_offsets_mapping=True)
    ids = [enc["input_ids"][0], len(tok) + 1, *enc["input_ids"][1:]]
    with torch.no_grad():
        states = model.bert(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
    mean = ((states[-1] + states[-2]) / 2)[0].double().numpy()
    spans = [(m.start(), m.end()) for m in word_pattern(["psw003"]).finditer(sentence)]
    tokens = [j + 1 for j, (a, b) in enumerate(enc["offset_mapping"])      # +1: the time token
              if b > a and any(a < e and b > s for s, e in spans)]
    np.testing.assert_allclose(got[1], mean[tokens].mean(0), rtol=1e-5, atol=1e-6)
    assert not np.allclose(got[0], got[1], atol=1e-4)                     # the period matters


@pytest.mark.slow
def test_time_token_method_finds_the_changed_word(tok):
    first = [corpus("zork", 0) * 4 + [s.replace("the", "blip", 1) for s in ANIMALS + MONEY] * 2]
    last = [corpus("zork", 1) * 4 + [s.replace("the", "blip", 1) for s in ANIMALS + MONEY] * 2]
    settings = dataclasses.replace(TINY, epochs=8)
    words = ["zork", "blip", "never"]
    scores, info = temporal_change(tok, first, last, words, settings, progress=False,
                                   method=TIME_TOKEN)
    again = temporal_change(tok, first, last, words, settings, progress=False,
                            method=TIME_TOKEN)[0]
    np.testing.assert_array_equal(scores, again)
    assert np.isnan(scores[2]) and np.isfinite(scores[:2]).all()
    assert scores[0] > scores[1], scores
    assert info["losses"][-1] < info["losses"][0]
    with pytest.raises(ValueError, match="unknown method"):
        build_model(tok, 2, TINY, method="time-tokens")


def test_time_masking_masks_the_time_tokens_at_their_own_rate(tok):
    """Rosin et al. 2022's time masking: with ``time_prob`` the time token of each window is a
    target at about that rate (seeded: the same masks again), 80 % of them [MASK], the rest a
    period's token, the label its own token; words keep their 15 %; off (0, or no time tokens)
    no time token is ever a target, with the same word masks as before time masking."""
    times = TimeTokens(len(tok), 3)
    windows = [w for p in range(3)
               for w in training_windows(tok, ["the cat chased the dog across the garden"] * 1000,
                                         [p] * 1000, 32, times)]
    ids, _, _ = _collate(windows, tok.pad_token_id)
    special = torch.isin(ids, torch.tensor([*tok.all_special_ids, *range(len(tok), len(tok) + 3)]))
    is_time = ids >= len(tok)
    assert is_time.sum() == len(windows) == 3000 and (is_time[:, 1]).all()

    def masked(time_prob: float, time_tokens: TimeTokens | None = times, seed: int = 0):
        return mask_tokens(ids, special, tok, 0.15, torch.Generator().manual_seed(seed),
                           time_tokens, time_prob)

    inputs, labels = masked(0.2)
    target = labels != -100
    rate = target[is_time].double().mean().item()
    assert abs(rate - 0.2) < 0.03, rate                        # ~600 of 3000, sd ~22
    assert (labels[target & is_time] == ids[target & is_time]).all()
    hidden = inputs[target & is_time]
    assert 0.7 < (hidden == tok.mask_token_id).double().mean() < 0.9
    assert ((hidden == tok.mask_token_id) | (hidden >= len(tok))).all()   # [MASK] or a period
    assert (inputs[is_time & ~target] == ids[is_time & ~target]).all()
    words = ~special
    assert abs(target[words].double().mean().item() - 0.15) < 0.01
    again = masked(0.2)
    assert torch.equal(inputs, again[0]) and torch.equal(labels, again[1])
    assert not torch.equal(labels, masked(0.2, seed=1)[1])
    assert abs((masked(0.6)[1][is_time] != -100).double().mean().item() - 0.6) < 0.04
    off = masked(0.0)
    assert (off[1][is_time] == -100).all() and torch.equal(off[0][is_time], ids[is_time])
    assert torch.equal(off[1], masked(0.2, None)[1])           # no time tokens: no time masking
    assert torch.equal(off[1], labels.masked_fill(is_time, -100))   # the words' draws unchanged
    with pytest.raises(ValueError, match="time_mask_prob"):
        TemporalMLMSettings(time_mask_prob=1.5)


def test_time_masking_in_training_is_seeded_and_changes_the_model(tok):
    """train() masks the time tokens with ``time_mask_prob``: deterministic from the seed, and
    a different model from the unmasked one (time_mask_prob 0)."""
    texts = [*ANIMALS, *MONEY] * 2
    periods = [0] * 8 + [1] * 8
    settings = dataclasses.replace(TINY, steps=6)
    assert TemporalMLMSettings().time_mask_prob == TIME_MASK_PROB > TINY.mask_prob

    def losses(time_mask_prob: float) -> list[float]:
        model, times = build_model(tok, 2, settings, method=TIME_TOKEN)
        return train(model, times, tok, texts, periods,
                     dataclasses.replace(settings, time_mask_prob=time_mask_prob), progress=False)

    masked = losses(TIME_MASK_PROB)
    assert masked == losses(TIME_MASK_PROB) and masked != losses(0.0)
