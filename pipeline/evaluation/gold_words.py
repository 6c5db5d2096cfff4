"""The gold abstracts' content words, computed once per scored period instead of in every score stage.

Content METEOR (§4.6, :func:`pipeline.evaluation.meteor.content_meteor`) compares each generated
abstract with every gold abstract of its period, both reduced to content words
(:func:`pipeline.evaluation.content.content_words`). Reducing the gold side is nltk's word
tokenizer over thousands of abstracts: on the whole export ~19 s a year, as long as the year's
PPL pass, and the same for every run scored on that year. The ``gold_words`` stage computes it
once per split file; each score stage reads it back.

File (one per split, ``<out>/<period>.parquet``): ``key`` (the split's keys, in its order) and
``words`` (a list of strings per abstract). A score stage uses it only when its keys are the
split's keys in the same order, so a stale file is an error, not a silent mismatch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from pipeline.evaluation.content import content_words
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet, write_parquet


def gold_words_file(folder: str | os.PathLike[str], period: str) -> Path:
    return Path(folder) / f"{period}.parquet"


def gold_content_words(abstracts: pd.DataFrame, stopwords: frozenset[str]) -> pd.DataFrame:
    """``key`` and ``words`` (content words) of each abstract, in the table's order."""
    return pd.DataFrame({"key": abstracts["key"].to_numpy(),
                         "words": [content_words(t, stopwords) for t in abstracts["abstract"]]})


def write_gold_words(words: pd.DataFrame, folder: str | os.PathLike[str], period: str) -> Path:
    path = gold_words_file(folder, period)
    write_parquet(words, path)
    return path


def read_gold_words(folder: str | os.PathLike[str], period: str,
                    keys: list[str]) -> list[list[str]] | None:
    """The content words of ``period``'s gold abstracts, in the order of ``keys`` (the abstracts
    the score stage read); None when ``folder`` has no file for the period (a period read from
    the corpus table, not a split: its words are computed where they are needed)."""
    path = gold_words_file(folder, period)
    if not path.exists():
        return None
    table = read_parquet(path, columns=["key", "words"])
    if table["key"].tolist() != list(keys):
        raise UserError(f"the content words in {path} are not those of the {len(keys)} abstracts "
                        f"of {period} being scored (a file of another split?)", path=path,
                        fix="rerun `dvc repro gold_words`")
    return [list(w) for w in table["words"]]
