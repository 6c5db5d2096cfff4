"""The word-frequency figure (the paper's Figure 1b, stage ``frequency_plot``): log frequency by
period of chosen words, read from the per-period frequency files.

A word is read from the LM tokens it is a single token as (any casing, with or without the
leading space); a word split into several tokens is read from its first token, and the ``match``
column says so (:func:`pipeline.features.frequencies.match_word`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pipeline.corpus.periods import kind_of, ordinal
from pipeline.features.frequencies import WordMatch, match_word, read_period, word_log_freq
from pipeline.features.tokenizer import load_tokenizer
from pipeline.infra.errors import UserError
from pipeline.infra.identity import tokenizer_identity
from pipeline.infra.io import atomic_path
from pipeline.reports.figures import word_frequency_figure


def frequency_files(paths: list[Path]) -> list[Path]:
    """The period files to read: files as given (DVC lists exactly its deps); a folder's period
    files (named by a period label)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.glob("*.parquet") if _is_label(p.stem))
        else:
            files.append(path)  # a missing one is reported by read_period, with its stage
    if not files:
        raise UserError("no <period>.parquet frequency files", path=" ".join(map(str, paths)),
                        fix="run `dvc repro frequencies` first")
    return files


def _is_label(name: str) -> bool:
    try:
        kind_of(name)
    except ValueError:
        return False
    return True


def word_frequency_table(paths: list[Path], tokenizer: str, words: Sequence[str]
                         ) -> tuple[pd.DataFrame, list[WordMatch]]:
    """The long table (period, word, log_freq, match), by word then period in time order, of
    the frequency files of ``paths`` (:func:`frequency_files`), each checked against the
    tokenizer's identity; and how each word was matched."""
    files = frequency_files(paths)
    tokenizer_id = tokenizer_identity(tokenizer)
    tok = load_tokenizer(tokenizer)
    matches = [match_word(tok, w) for w in words]
    rows = []
    for path in files:
        freqs = read_period(path, tokenizer_id)
        rows += [{"period": freqs.period, "word": m.word,
                  "log_freq": round(word_log_freq(freqs, m), 6), "match": m.match}
                 for m in matches]
    table = pd.DataFrame(rows)
    time = table["period"].map(ordinal)  # in time, not alphabetically
    table = table.assign(_t=time).sort_values(["word", "_t"], kind="stable").drop(columns="_t")
    return table, matches


def write_word_frequencies(table: pd.DataFrame, out: str, png: str | None) -> None:
    """The CSV ``out`` (a DVC plot) and, when given, the PNG line chart ``png``."""
    with atomic_path(out) as tmp:
        table.to_csv(tmp, index=False)
    if png:
        word_frequency_figure(table, png)
