"""pipeline.evaluation.meteor must equal nltk's METEOR exactly, and its pruned max must equal the brute force."""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path

import numpy as np
import pytest
from nltk.translate.meteor_score import single_meteor_score

from pipeline.evaluation.content import content_words, load_stopwords
from pipeline.evaluation.meteor import GoldIndex, Lexicon, content_meteor, single_meteor

REPO = Path(__file__).resolve().parents[1]
SAMPLE_BIB = REPO / "data" / "sample" / "anthology-sample.bib.gz"
STOPWORDS = REPO / "data" / "reference" / "stopwords.txt"


def sample_abstracts() -> list[str]:
    """Real abstracts of the embedded sample, read with a plain regex (no parser needed)."""
    text = gzip.open(SAMPLE_BIB, "rt", encoding="utf-8").read()
    found = re.findall(r'^\s*abstract = [{"](.*?)["}],?$', text, flags=re.M)
    assert len(found) > 1500, "the embedded sample should hold ~1,900 abstracts"
    return found


@pytest.fixture(scope="module")
def abstracts() -> list[str]:
    return sample_abstracts()


@pytest.fixture(scope="module")
def stopwords() -> frozenset[str]:
    return load_stopwords(STOPWORDS)


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon()


@pytest.mark.slow
def test_equals_nltk_on_500_real_content_word_pairs(abstracts, stopwords, lexicon):
    words = [content_words(a, stopwords) for a in abstracts]
    rng = random.Random(0)
    pairs = [(rng.randrange(len(words)), rng.randrange(len(words))) for _ in range(520)]
    ours = np.array([single_meteor(words[r], words[h], lexicon) for h, r in pairs])
    theirs = np.array([single_meteor_score(words[r], words[h]) for h, r in pairs])
    assert (theirs > 0).sum() > 400          # real overlap, not a sea of zeros
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_equals_nltk_on_raw_mixed_case_tokens(abstracts, lexicon):
    # Whole abstracts, original case and punctuation: exercises lowercasing and every stage.
    tokens = [a.split() for a in abstracts[:121]]
    ours = [single_meteor(tokens[i + 1], tokens[i], lexicon) for i in range(120)]
    theirs = [single_meteor_score(tokens[i + 1], tokens[i]) for i in range(120)]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)


def test_equals_nltk_on_repetitive_synonym_heavy_sentences(lexicon):
    # Small vocabulary with stems and WordNet synonyms and many repeats: the greedy alignment's
    # order and tie-breaking (highest free reference position, last hypothesis word first)
    # decide the chunk count here, so any deviation from nltk shows.
    vocab = ["car", "automobile", "auto", "cars", "machine", "running", "runs", "run", "fast",
             "quick", "speedy", "model", "models", "modeling", "framework", "simulation"]
    rng = random.Random(1)
    for _ in range(300):
        hyp = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
        ref = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
        assert single_meteor(ref, hyp, lexicon) == pytest.approx(single_meteor_score(ref, hyp),
                                                                abs=1e-12), (hyp, ref)


def test_known_value_and_empty_sides(lexicon):
    hyp = ("It is a guide to action which ensures that the military always obeys the commands "
           "of the party").split()
    ref = ("It is a guide to action that ensures that the military will forever heed Party "
           "commands").split()
    assert round(single_meteor(ref, hyp, lexicon), 4) == 0.6944   # nltk's doctest value
    assert single_meteor([], hyp, lexicon) == 0.0
    assert single_meteor(ref, [], lexicon) == 0.0
    assert single_meteor(["alpha"], ["omega"], lexicon) == 0.0
    with pytest.raises(TypeError, match="pre-tokenized"):
        single_meteor("a string", hyp, lexicon)


@pytest.mark.slow
def test_pruned_max_equals_brute_force(abstracts, stopwords):
    words = [content_words(a, stopwords) for a in abstracts]
    gold, hyps = words[300:460], words[:6] + [words[310]]   # the last one is in the gold set
    index = GoldIndex(gold)
    for hyp in hyps:
        brute = [single_meteor_score(g, hyp) for g in gold]
        best = index.best(hyp)
        assert best.score == pytest.approx(max(brute), abs=1e-12)
        assert best.index == int(np.argmax(brute))               # first arg-max, like max()
        assert best.n_exact < len(gold)                           # the bound pruned something
    assert index.best(words[310]).score == pytest.approx(single_meteor_score(words[310], words[310]))


@pytest.mark.slow
def test_upper_bounds_are_valid(abstracts, stopwords):
    words = [content_words(a, stopwords) for a in abstracts]
    gold = words[600:700]
    index = GoldIndex(gold)
    for hyp in words[:5]:
        bounds = index.upper_bounds(index.lexicon.encode(hyp))
        exact = np.array([index.lexicon.score(index.lexicon.encode(hyp), g) for g in index.refs])
        assert (bounds >= exact).all()
        assert (bounds < 1.0 + 1e-6).all()


def test_content_meteor_bad_inputs(stopwords):
    gold = ["Neural machine translation with attention improves translation quality."]
    with pytest.raises(ValueError, match="generated abstracts \\[1\\] are empty"):
        content_meteor(["Neural translation models", "   "], gold, stopwords)
    with pytest.raises(ValueError, match="no gold abstracts"):
        content_meteor(["Neural translation models"], [], stopwords)
    with pytest.raises(ValueError, match="no gold abstracts"):
        GoldIndex([])
    scores = content_meteor(["Neural translation quality", "the of and"], gold, stopwords)
    assert scores[0].score > 0 and scores[1].score == 0.0    # no content words -> 0, as nltk
