"""WordNet for METEOR's synonym stage, loaded in ~40 % of the time ``nltk.corpus.wordnet`` takes.

nltk's reader spends most of its start (~3 of ~4.8 s on the 2-core machine) building ``map30``, a
map from WordNet 3.0's synset offsets to the loaded version's, which only its multilingual (OMW)
lookups read. nltk builds it even when the loaded WordNet *is* 3.0 (``map_wn`` compares the
version, "3.0", with the corpus name "wordnet"), reading ``index.sense`` twice. METEOR asks only
for English synsets and their lemma names (``synsets(stem)``), which read the lemma index, the
exception lists and the data files exactly as nltk's own reader does, so :func:`english_wordnet`
builds the same reader without ``map30`` (``tests/test_wordnet.py`` compares the two).

Every score stage and ``make repro``'s warm server (which loads it once for all of them) read
WordNet through here. Where the corpus is not installed, nltk's ``LookupError`` (which says how
to install it) propagates, as from ``nltk.corpus.wordnet``.
"""

from __future__ import annotations

import functools
import gc
import warnings
from typing import Any


@functools.cache
def english_wordnet() -> Any:
    """nltk's WordNet reader over the installed ``corpora/wordnet`` (zipped or not), without
    the OMW version map (module doc); one per process."""
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            return None   # map30: OMW lookups only (module doc)

    try:   # where nltk's LazyCorpusLoader looks, in its order
        root = nltk.data.find("corpora/wordnet.zip/wordnet/")
    except LookupError:
        root = nltk.data.find("corpora/wordnet")
    # The index is ~150k small dicts and lists built in a loop: the cyclic collector would walk
    # every live object (all of torch's and transformers' in the warm server) again and again
    # meanwhile (~4 s there instead of ~2.4 s). Nothing built here is cyclic garbage.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            # "The multilingual functions are not available": no OMW reader, by design
            warnings.simplefilter("ignore", UserWarning)
            return EnglishWordNet(root, None)
    finally:
        if collecting:
            gc.enable()


def lemma_names(word: str) -> list[str]:
    """The lemma names of every synset of ``word`` (any part of speech), in nltk's order:
    ``[l.name() for s in wordnet.synsets(word) for l in s.lemmas()]``."""
    return [lemma.name() for synset in english_wordnet().synsets(word) for lemma in synset.lemmas()]
