"""Cost of scoring 1,000 target words with each semantic-change method.

Groups of periods: ``--first`` and ``--last`` (inclusive year ranges) of ``--abstracts`` (the
filter stage's ``data/corpus/abstracts.parquet``); targets: the ``--targets`` most frequent words
(:func:`pipeline.semantic.sgns.tokenize`, ties alphabetical) of both groups together. Methods:

* ``sgns_change`` — :mod:`pipeline.semantic.sgns` with its defaults: two SGNS trainings (the
  whole vocabulary; the targets only pick rows), Procrustes, cosine distances;
* ``log_frequency_change`` — :func:`pipeline.semantic.methods.frequency.log_frequency_change`
  over per-period word-count arrays counted here from the texts (counting included in the time);
* ``averaged_embedding_change`` — :func:`pipeline.semantic.methods.contextual.embedding_change_from_files`
  over the embeddings stage's per-period files (``--embeddings``, one ``<year>.safetensors`` per
  year of both groups). Where they are absent, files of the same shape (4,096 token ids, 384-d
  fp16 vectors, the scratch LM and all-MiniLM-L6-v2) are written with random vectors and the
  time is read + pool + score only; computing real files is the embeddings stage's cost
  (``benchmarks/results/features.md``), which the report then states separately.

Each method runs ``--repeats`` times; wall and process CPU seconds (median) are reported. Goal:
<= 5 min for 1,000 targets on 2 cores.

    .venv/bin/python -m benchmarks.semantic_change_scale [--abstracts FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pipeline.infra.numerics import THREADS, configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from benchmarks._results import machine, publish  # noqa: E402
from pipeline.features.embeddings import write_period  # noqa: E402
from pipeline.semantic.methods.contextual import (  # noqa: E402
    embedding_change_from_files, period_paths)
from pipeline.semantic.methods.frequency import log_frequency_change  # noqa: E402
from pipeline.semantic.sgns import sgns_change, tokenize  # noqa: E402

SYNTHETIC_VOCAB, SYNTHETIC_DIM = 4096, 384


def years(span: str) -> list[int]:
    """``"2015-2018"`` -> [2015, ..., 2018]; ``"2017"`` -> [2017]."""
    lo, _, hi = span.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds of ``fn()`` over ``repeats`` runs, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def synthetic_periods(folder: Path, labels: list[str], counts: dict[str, int], seed: int) -> None:
    """Embeddings files of the real shape with random vectors (see the module docstring)."""
    rng = np.random.default_rng(seed)
    for label in labels:
        n_tokens = counts.get(label, 0) * 180      # ~180 LM tokens per abstract
        cnt = rng.multinomial(max(n_tokens, 1), np.full(SYNTHETIC_VOCAB, 1 / SYNTHETIC_VOCAB))
        ids = np.flatnonzero(cnt)
        write_period(folder / f"{label}.safetensors", label, ids, cnt[ids],
                     rng.normal(size=(ids.size, SYNTHETIC_DIM)).astype(np.float16),
                     encoder="synthetic", layer=-1, vocab_size=SYNTHETIC_VOCAB)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.semantic_change_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--abstracts", default="data/corpus/abstracts.parquet")
    p.add_argument("--embeddings", default="data/features/embeddings")
    p.add_argument("--first", default="2015-2018", help="first group: YEAR or YEAR-YEAR")
    p.add_argument("--last", default="2019-2021", help="last group: YEAR or YEAR-YEAR")
    p.add_argument("--targets", type=int, default=1000, help="number of target words")
    p.add_argument("--repeats", type=int, default=1, help="runs per method (median)")
    p.add_argument("--threads", type=int, default=THREADS, help="torch intra-op threads")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    configure_torch(args.threads)

    table = pd.read_parquet(args.abstracts, columns=["date", "abstract"])
    year = table["date"].astype(str).str[:4].astype(int)
    first_years, last_years = years(args.first), years(args.last)
    first = table["abstract"][year.isin(first_years)].tolist()
    last = table["abstract"][year.isin(last_years)].tolist()
    totals = Counter(w for text in first + last for w in tokenize(text))
    targets = [w for w, _ in sorted(totals.items(), key=lambda wc: (-wc[1], wc[0]))[:args.targets]]
    n_words = sum(len(tokenize(t)) for t in first), sum(len(tokenize(t)) for t in last)

    rows = []
    wall, cpu, scores = timed(lambda: sgns_change(first, last, targets), args.repeats)
    rows.append(("sgns_change (dim 50, window 4, 5 negatives, 5 epochs, min_count 5)", wall, cpu,
                 int(np.isfinite(scores).sum())))

    def frequency() -> np.ndarray:
        index = {w: i for i, w in enumerate(sorted(totals))}
        per_year = []
        for y in first_years + last_years:
            cnt = np.zeros(len(index), dtype=np.int64)
            for w, c in Counter(w for t in table["abstract"][year == y] for w in tokenize(t)).items():
                cnt[index[w]] += c
            per_year.append(cnt)
        change = log_frequency_change(per_year[:len(first_years)], per_year[len(first_years):])
        return change.scores[[index[w] for w in targets]]

    wall, cpu, scores = timed(frequency, args.repeats)
    rows.append(("log_frequency_change (word counts per year, counted here)", wall, cpu,
                 int(np.isfinite(scores).sum())))

    labels_first, labels_last = [str(y) for y in first_years], [str(y) for y in last_years]
    folder = Path(args.embeddings)
    real = all(path.exists() for path in period_paths(folder, labels_first + labels_last))
    with tempfile.TemporaryDirectory() as tmp:
        if not real:
            folder = Path(tmp)
            synthetic_periods(folder, labels_first + labels_last,
                              year.astype(str).value_counts().to_dict(), seed=0)

        def embedding() -> np.ndarray:
            change = embedding_change_from_files(period_paths(folder, labels_first),
                                                 period_paths(folder, labels_last))
            picked = change.token_ids[:args.targets]   # stands for 1,000 word -> token look-ups
            return change.scores[np.searchsorted(change.token_ids, picked)]

        wall, cpu, scores = timed(embedding, args.repeats)
    rows.append(("averaged_embedding_change (read + pool + score; "
                 + ("the stage's files" if real else "synthetic files of the real shape") + ")",
                 wall, cpu, int(np.isfinite(scores).sum())))

    text = "\n".join([
        "# Benchmark: cost of semantic-change scoring for 1,000 targets",
        "",
        f"Command: `.venv/bin/python -m benchmarks.semantic_change_scale {' '.join(given)}`: "
        f"first group {args.first} ({len(first):,} abstracts, {n_words[0]:,} words), last group "
        f"{args.last} ({len(last):,} abstracts, {n_words[1]:,} words), the {len(targets):,} most "
        f"frequent words as targets, {args.threads} torch thread(s), median of {args.repeats} run(s).",
        f"Machine: {machine()}, 1-minute load "
        f"average {os.getloadavg()[0]:.1f} at the end; torch {torch.__version__}.",
        "",
        "| method | wall s | CPU s | finite scores |",
        "|---|---:|---:|---:|",
        *[f"| {name} | {w:.2f} | {c:.2f} | {n:,} / {len(targets):,} |" for name, w, c, n in rows],
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
