"""The files stages hand to each other: one name per path, so a producer's ``outs`` and its
consumers' ``deps`` cannot drift apart (DVC would then silently drop the edge between them)."""

from __future__ import annotations

from collections.abc import Iterable

# Written by the `graph` stage when dvc.yaml is current; every other stage is downstream of it.
STAMP = "data/graph-checked"

RAW = "data/raw/anthology+abstracts.bib.gz"
PAPERS = "data/corpus/papers.parquet"
ABSTRACTS = "data/corpus/abstracts.parquet"
TRAIN = "data/splits/train.parquet"
DEV = "data/splits/dev.parquet"
TEST = "data/splits/test.parquet"
TOKENIZER = "data/tokenizer"
STOPWORDS = "data/reference/stopwords.txt"
CORPUS_METRICS = "metrics/corpus.json"

FREQ = "data/features/frequencies/{}.parquet"
EMB = "data/features/embeddings/{}.safetensors"


def feature_files(kinds: Iterable[str], years: Iterable[int]) -> list[str]:
    """The per-year feature files of each kind (``frequencies``, ``embeddings``), kind outermost."""
    template = {"frequencies": FREQ, "embeddings": EMB}
    years = list(years)
    return [template[k].format(y) for k in kinds for y in years]
