"""pipeline/infra/wordnet.py: the reader METEOR uses gives nltk's synsets, without nltk's OMW map.

Every word and Porter stem of the embedded sample's text (~26,000 strings: what METEOR looks up),
plus inflected and unknown words that exercise the exception lists and morphy, must get the same
lemma names, in the same order, as ``nltk.corpus.wordnet``.
"""

from __future__ import annotations

import gzip
import re

import pytest
from nltk.stem.porter import PorterStemmer

from pipeline.infra.wordnet import english_wordnet, lemma_names
from tests.conftest import SAMPLE_BIB

pytestmark = pytest.mark.slow   # loads WordNet twice (~7 s)


def test_lemma_names_are_nltks_for_every_word_and_stem_of_the_sample() -> None:
    from nltk.corpus import wordnet

    words = set(re.findall(r"[a-z]+", gzip.decompress(SAMPLE_BIB.read_bytes()).decode().lower()))
    stems = {PorterStemmer().stem(w) for w in words}
    special = ["geese", "went", "analyses", "corpora", "better", "best", "ran", "xyzzy", "is"]
    lookups = sorted(words | stems) + special
    assert len(lookups) > 25_000
    differ = [w for w in lookups
              if lemma_names(w) != [lemma.name() for s in wordnet.synsets(w) for lemma in s.lemmas()]]
    assert differ == []
    assert lemma_names("geese")[0] == "goose"                  # an exception-list form
    assert english_wordnet().map30 is None                     # the OMW map was not built
    assert english_wordnet() is english_wordnet()              # loaded once per process
