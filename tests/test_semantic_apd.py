"""The apd methods and the layer setting: APD against a computation by hand, the shuffled-period
correction near 0 for usages drawn alike in both groups, a mean over layers against the
encoder's own hidden states, and both methods on a toy corpus encoded by the real packaged
MiniLM encoder, where one word's usages split into two senses over time."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from pipeline.features.alignment import Batch
from pipeline.features.embeddings import encoder_states
from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import ContextualConfig
from pipeline.models.hub import MINILM, load_encoder, load_tokenizer_for
from pipeline.semantic import usage_sets, word_vectors
from pipeline.semantic.methods import apd, apd_corrected, registry
from pipeline.semantic.methods.interface import ChangeInputs, EncoderSettings
from pipeline.semantic.shuffled import shuffle_corrected, shuffled_scores, word_rng
from pipeline.semantic.usages import pooled_group_usages
from pipeline.semantic.vectors import average_pairwise_distance
from pipeline.semantic.word_vectors import check_layers, layer_states

CPU = torch.device("cpu")


def test_apd_by_hand():
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    b = np.array([[3.0, 0.0], [1.0, 1.0], [0.0, -1.0]])
    # cosines: a1·b = 1, 1/√2, 0; a2·b = 0, 1/√2, -1
    by_hand = np.mean([1 - 1, 1 - 1 / math.sqrt(2), 1 - 0, 1 - 0, 1 - 1 / math.sqrt(2), 1 + 1])
    assert average_pairwise_distance(a, b) == pytest.approx(by_hand, abs=1e-12)
    assert average_pairwise_distance(b, a) == pytest.approx(by_hand, abs=1e-12)   # symmetric
    assert average_pairwise_distance(a, a) == pytest.approx(0.5)     # not 0: two usages apart
    assert math.isnan(average_pairwise_distance(a, np.zeros((0, 2))))
    assert math.isnan(average_pairwise_distance(a, np.array([[0.0, 0.0]])))
    with pytest.raises(ValueError, match="usage sets"):
        average_pairwise_distance(a, np.ones((2, 3)))


def test_the_correction_of_usages_drawn_alike_is_near_zero():
    rng = np.random.default_rng(0)
    centre = 3 * rng.standard_normal(16)
    same = [centre + rng.standard_normal((60, 16)) for _ in range(2)]
    apart = [centre + rng.standard_normal((60, 16)),
             centre + 4 * rng.standard_normal(16) + rng.standard_normal((60, 16))]
    raw = average_pairwise_distance(*same)
    stable = shuffle_corrected(average_pairwise_distance, *same, 20, word_rng(0, "w"))
    changed = shuffle_corrected(average_pairwise_distance, *apart, 20, word_rng(0, "w"))
    assert raw > 0.05 and abs(stable) < 0.1 * raw       # APD is the spread; the correction not
    assert changed > 0.1 > abs(stable) * 10
    # deterministic by seed and word, independent of other words
    again = shuffle_corrected(average_pairwise_distance, *same, 20, word_rng(0, "W"))
    assert again == stable
    assert shuffle_corrected(average_pairwise_distance, *same, 20, word_rng(1, "w")) != stable
    # the shuffles keep the groups' sizes and draw from the pooled usages
    shapes = []
    def record(x, y):
        shapes.append((len(x), len(y)))
        return float(np.sum(x[:, 0]))
    scores = shuffled_scores(record, np.ones((2, 1)), np.zeros((5, 1)), 50, word_rng(0, "w"))
    assert shapes == [(2, 5)] * 50 and set(scores) <= {0.0, 1.0, 2.0} and len(set(scores)) > 1
    assert math.isnan(shuffle_corrected(record, np.ones((2, 1)), np.zeros((0, 1)), 5,
                                        word_rng(0, "w")))
    with pytest.raises(ValueError, match="permutations"):
        shuffled_scores(record, np.ones((2, 1)), np.zeros((5, 1)), 0, word_rng(0, "w"))


@pytest.fixture(scope="module")
def minilm():
    return load_encoder(MINILM).eval(), load_tokenizer_for(MINILM)


def test_a_mean_over_layers_is_the_mean_of_the_hidden_states(minilm):
    encoder, tok = minilm
    enc = tok(["The bank of the river.", "A loan"], padding=True, return_tensors="pt")
    batch = Batch(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                  positions=torch.zeros(0, dtype=torch.long),
                  token_ids=torch.zeros(0, dtype=torch.long), weights=torch.zeros(0))
    with torch.inference_mode():
        hidden = encoder(**enc, output_hidden_states=True).hidden_states     # 7: embeddings + 6
        one = layer_states(encoder, batch, -1, 1, CPU)
        four = layer_states(encoder, batch, -1, 4, CPU)
        mid = layer_states(encoder, batch, 3, 2, CPU)
    assert torch.equal(one, encoder_states(encoder, batch, -1, CPU))    # 1: today's bytes
    torch.testing.assert_close(four, torch.stack(hidden[3:7]).mean(0))
    torch.testing.assert_close(mid, torch.stack(hidden[2:4]).mean(0))
    check_layers(encoder, -1, 7)                                          # all, embeddings too
    for layer, layers in ((-1, 8), (2, 4), (-1, 0)):
        with pytest.raises(UserError, match="contextual_layers"):
            check_layers(encoder, layer, layers)


RIVER = ["walked along the muddy {} of the river", "fished from the grassy {} at dawn",
         "sat on the steep {} watching the water", "moored the boat by the {} of the stream"]
MONEY = ["deposited her salary at the {} downtown", "the {} approved the mortgage loan",
         "withdrew cash from the {} account", "the {} raised its interest rates"]
TREES = ["the old {} grew tall in the forest", "birds nested in the {} by the path",
         "leaves fell from the {} in autumn", "we planted a young {} in the garden"]
FACTORY = ["the {} assembled cars for the company", "workers at the power {} went on strike",
           "the chemical {} hired new engineers", "the steel {} closed its production line"]
GREEN = ["watered the {} on the windowsill", "the {} needs sunlight to grow green leaves",
         "a small {} flowered in the pot", "the {} wilted without rain"]


def usages(templates: list[str], word: str, n: int, rng: random.Random) -> list[str]:
    """``n`` sentences of one sense of ``word``: its templates with varied openings."""
    who = ["Yesterday", "Later", "Then", "Often", "Once", "Today", "Again", "Still"]
    return [f"{rng.choice(who)} we saw that " + templates[i % len(templates)].format(word) + "."
            for i in range(n)]


def toy_groups(n: int = 16) -> tuple[list[str], list[str]]:
    """Each group's texts: ``bank`` only by a river first, then half by a river and half money
    (its usages split into two senses over time); ``tree`` of one sense throughout; ``plant``
    stable but of two senses (a factory, a green one) half and half in both groups."""
    rng = random.Random(0)
    first = (usages(RIVER, "bank", n, rng) + usages(TREES, "tree", n, rng)
             + usages(FACTORY, "plant", n // 2, rng) + usages(GREEN, "plant", n // 2, rng))
    last = (usages(RIVER, "bank", n // 2, rng) + usages(MONEY, "bank", n // 2, rng)
            + usages(TREES, "tree", n, rng)
            + usages(FACTORY, "plant", n // 2, rng) + usages(GREEN, "plant", n // 2, rng))
    rng.shuffle(first)
    rng.shuffle(last)
    return first, last


def toy_inputs(first, last, **settings) -> ChangeInputs:
    return ChangeInputs(("2017",), ("2018",), ([first], [last]), MINILM, seed=0,
                        encoding=EncoderSettings(-1, 64, 16, CPU),
                        contextual=ContextualConfig(**settings))


def test_apd_and_its_correction_rank_the_split_word_above_the_stable_ones(monkeypatch, minilm):
    encoded: list[int] = []
    real = word_vectors.layer_states

    def counting(encoder, batch, layer, layers, device):
        encoded.append(int(batch.input_ids.shape[0]))
        return real(encoder, batch, layer, layers, device)

    monkeypatch.setattr(word_vectors, "layer_states", counting)
    first, last = toy_groups()
    targets = ["bank", "tree", "plant"]
    inputs = toy_inputs(first, last, apd_usages=100, apd_permutations=20)
    raw = apd.score(inputs, targets)
    assert raw.first_counts.tolist() == [16, 16, 16] == raw.last_counts.tolist()
    assert sum(encoded) == 96                        # every usage once, each group
    corrected = apd_corrected.score(inputs, targets)
    assert sum(encoded) == 96                        # the same vectors: not encoded again
    bank, tree, plant = raw.scores
    assert bank > tree                               # the split word above the stable one
    # APD's bias: the stable word of two senses is the most distant of all
    assert plant > bank
    bank_c, tree_c, plant_c = corrected.scores
    # the correction removes the stable words' spread, not the changed word's
    assert bank_c > 0 and bank_c > tree_c and bank_c > plant_c
    assert abs(tree_c) < 0.5 * bank_c and abs(plant_c) < 0.8 * bank_c
    assert corrected.totals == {"apd_usages": 100, "apd_permutations": 20, "apd_skipped": 0}
    # deterministic: new inputs (encoded again), the abstracts in another order, the same bytes
    rng = random.Random(1)
    again = apd_corrected.score(toy_inputs(rng.sample(first, len(first)),
                                           rng.sample(last, len(last)), apd_usages=100,
                                           apd_permutations=20), targets)
    assert sum(encoded) == 192
    np.testing.assert_allclose(again.scores, corrected.scores, rtol=0, atol=1e-12)

    # the cap holds per group (a seeded sample); a word a group lacks is not scored
    capped = apd.score(toy_inputs(first, last, apd_usages=5), ["bank", "absent"])
    assert capped.first_counts.tolist() == [5, 0] and math.isnan(capped.scores[1])
    sentences, counts_for = pooled_group_usages([first[:40], first[40:]], ["bank"], 5, seed=0)
    assert len(sentences) == 5 and all("bank" in c for c in counts_for)
    # no target: nothing encoded
    assert apd.score(inputs, []).scores.size == 0


def test_the_methods_are_rows_of_the_table():
    names = registry.names()
    assert names.index("contextual") + 1 == names.index("apd") == names.index("apd-corrected") - 1
    for name in ("apd", "apd-corrected"):
        method = registry.lookup(name)
        assert "learned" not in method.reads       # nothing trains: the verdicts test them
        assert "contextual" in method.reads and "encoding" in method.reads
    assert "contextual" in registry.lookup("contextual").reads
    assert usage_sets.usage_sets.__doc__
