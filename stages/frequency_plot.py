"""Stage `frequency_plot`: log frequency by period of chosen words (the paper's Figure 1b).

Reads exactly the per-period files data/features/frequencies/<label>.parquet it is given (or every
period file of a folder, by hand), refusing any computed with another tokenizer, and writes a long
CSV (period, word, log_freq, match), periods in time order, declared as a DVC plot, plus an
optional PNG. A word is read from
the LM tokens it is a single token as (any casing, with or without the leading space); a word
split into several tokens is read from its first token, and the `match` column says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from pipeline.infra.errors import UserError
from pipeline.corpus.periods import kind_of, ordinal
from pipeline.features.frequencies import match_word, read_period, word_log_freq
from pipeline.infra.identity import tokenizer_identity
from pipeline.infra.io import atomic_path
from pipeline.features.tokenizer import load_tokenizer
from pipeline.interfaces.frequency_plot import INTERFACE
from stages._args import parser_for
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    files = frequency_files([Path(p) for p in args.frequencies])
    tokenizer_id = tokenizer_identity(args.tokenizer)
    tok = load_tokenizer(args.tokenizer)
    matches = [match_word(tok, w) for w in args.plot_words]
    rows = []
    for path in files:
        freqs = read_period(path, tokenizer_id)
        rows += [{"period": freqs.period, "word": m.word,
                  "log_freq": round(word_log_freq(freqs, m), 6), "match": m.match}
                 for m in matches]
    table = pd.DataFrame(rows)
    time = table["period"].map(ordinal)  # in time, not alphabetically
    table = table.assign(_t=time).sort_values(["word", "_t"], kind="stable").drop(columns="_t")
    with atomic_path(args.out) as tmp:
        table.to_csv(tmp, index=False)
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for word, part in table.groupby("word", sort=False):
            ax.plot(part["period"].map(ordinal), part["log_freq"], marker="o", label=word)
        kind = kind_of(table["period"].iloc[0])
        if kind != "year":  # ordinals are years for years; other kinds get their labels
            ticks = sorted(set(table["period"]), key=ordinal)
            ax.set_xticks([ordinal(t) for t in ticks], ticks, rotation=45, ha="right")
        ax.set_xlabel(kind)
        ax.set_ylabel("log relative frequency")
        ax.legend()
        fig.tight_layout()
        with atomic_path(args.png) as tmp:
            fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
        plt.close(fig)
    for m in matches:
        print(f"{m.word}: {m.match}")


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


if __name__ == "__main__":
    main()
