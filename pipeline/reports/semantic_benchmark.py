"""The synthetic semantic-change benchmark, scored (issue 19 §5): do our methods rank
pseudo-words of known graded change (:mod:`pipeline.corpus.pseudowords`) in the right order?

From the abstracts of the first and last group of periods, ``n_targets`` changed pseudo-words
(b-share shifts spread evenly over ``(0, max_shift]``) and ``n_controls`` stable ones are made;
each method scores them on the rewritten texts, and its scores are correlated with the truth
(Jensen-Shannon distance of the two groups' sense mixes):

* ``contextual`` — Algorithm 1 on the encoder of the embeddings stage
  (:mod:`pipeline.evaluation.word_vectors`): cosine distance of the two groups' mean vectors;
* ``temporal-attention`` — paper 003's method (:mod:`pipeline.evaluation.temporal_mlm`): a masked
  LM with temporal attention trained on the two groups' texts, then Algorithm 1 (up to n
  sentences per period, mean of the last h layers at the word's sub-tokens, cosine distance);
* ``time-token`` — the same masked LM without temporal attention, each text prefixed by a
  special token of its period (Rosin et al. 2022), then the same Algorithm 1;
* ``sgns`` — skip-gram with negative sampling trained on each group, the last group's vectors
  aligned to the first's by orthogonal Procrustes, cosine distance (Hamilton et al. 2016;
  :mod:`pipeline.evaluation.sgns`);
* ``frequency`` — |Δ log relative frequency| of the pseudo-word between the groups (add-one).

With ``semantic_benchmark.semeval`` set, the words and their truth come instead from a
SemEval-2020 Task 1 language folder (Schlechtweg et al. 2020; :func:`semeval_benchmark`): the
methods score its targets between its two corpora (``corpus1`` → ``corpus2``, one period each)
and are correlated with its graded truth (the task's subtask 2).

The truth moves a word's *mix of usages*; its frequency changes too (replaced b's add to it), so
the frequency baseline is not hopeless by construction — which is why it is reported beside.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pipeline.corpus.pseudowords import (WORD, choose_pairs, count_words, load_semeval,
                                         make_benchmark, word_pattern)
from pipeline.evaluation.semantic_change import cosine_distance
from pipeline.reports.semantic_change import truth_lines

METHODS = ("contextual", "temporal-attention", "time-token", "sgns", "frequency")


def build(texts: pd.DataFrame, first: Sequence[str], last: Sequence[str], n_targets: int,
          n_controls: int, min_count: int, max_shift: float, seed: int,
          stopwords: frozenset[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rewritten texts (columns ``period``, ``abstract``) and the truth table."""
    group = {g: texts[texts["period"].isin(periods)]["abstract"] for g, periods in
             (("first", first), ("last", last))}
    pairs = choose_pairs(count_words(group["first"]), count_words(group["last"]), n_targets,
                         n_controls, min_count, seed, stopwords)
    shifts = [max_shift * (i + 1) / n_targets for i in range(n_targets)]
    return make_benchmark(texts, first, last, pairs, shifts, seed)


def semeval_benchmark(folder: str) -> tuple[pd.DataFrame, pd.DataFrame, list[str], list[str]]:
    """A SemEval-2020 Task 1 folder as the benchmark: its texts (columns ``period``, ``abstract``),
    its targets with ``kind`` "target" and the graded ``truth``, and the two periods."""
    texts, truth = load_semeval(folder)
    return texts, truth.assign(kind="target"), ["corpus1"], ["corpus2"]


def frequency_change(first: Sequence[str], last: Sequence[str], words: Sequence[str]) -> np.ndarray:
    """|log f_last − log f_first| per word, f = (count + 1) / (running words in the group + 1);
    running words: ASCII words plus the pseudo-words themselves (which hold digits)."""
    pattern = word_pattern(words)

    def log_freq(texts: Sequence[str]) -> np.ndarray:
        counts = Counter(m.group(0).lower() for t in texts for m in pattern.finditer(t))
        total = sum(len(WORD.findall(t)) for t in texts) + sum(counts.values())
        return np.log((np.array([counts[w.lower()] for w in words]) + 1.0) / (total + 1.0))
    return np.abs(log_freq(last) - log_freq(first))


def contextual_change(first: tuple[np.ndarray, np.ndarray], last: tuple[np.ndarray, np.ndarray]
                      ) -> np.ndarray:
    """Cosine distance between each word's mean vector in the two groups, from ``(sums,
    counts)`` (a mean and its sum point the same way); NaN for a word unseen in a group."""
    (s1, c1), (s2, c2) = first, last
    return np.where((c1 > 0) & (c2 > 0), cosine_distance(s1, s2), np.nan)


def scores_frame(truth: pd.DataFrame, scores: dict[str, np.ndarray]) -> pd.DataFrame:
    """Long table: ``method``, ``word``, ``kind``, ``truth``, ``score`` (scored words only)."""
    frames = [truth[["word", "kind", "truth"]].assign(method=m, score=s) for m, s in scores.items()]
    frame = pd.concat(frames, ignore_index=True)
    return frame[np.isfinite(frame["score"])][["method", "word", "kind", "truth", "score"]]


def markdown(first: Sequence[str], last: Sequence[str], frame: pd.DataFrame, truth: pd.DataFrame,
             correlated: dict[str, dict], encoder: str, skipped: int,
             figure: str | None = None, semeval: str | None = None) -> str:
    """``reports/semantic_benchmark.md``: the correlations, then every word's row (pseudo-words,
    or the targets of the SemEval folder ``semeval``)."""
    span = lambda g: g[0] if len(g) == 1 else f"{g[0]}..{g[-1]}"     # noqa: E731
    changed = truth[truth["kind"] == "changed"]
    what = (f"{len(changed)} changed and {len(truth) - len(changed)} stable pseudo-words, each "
            "two real words merged into one token whose mix of the two usages shifts by a known "
            "amount (`pipeline/corpus/pseudowords.py`); truth = Jensen-Shannon distance of the "
            "two groups' mixes, from the counts actually replaced.") if semeval is None else (
            f"{len(truth)} targets of the SemEval-2020 Task 1 folder `{semeval}` "
            "(`pipeline/corpus/pseudowords.py: load_semeval`); truth = its graded change "
            "(`truth/graded.txt`, subtask 2).")
    title = (f"pseudo-words, {span(first)} → {span(last)}" if semeval is None
             else f"SemEval-2020 Task 1, {span(first)} → {span(last)}")
    merged = "a" in truth.columns
    lines = [f"# Semantic-change benchmark: {title}", "",
             f"{what} Methods: *contextual* = "
             f"Algorithm 1 with `{encoder}` (cosine distance of the mean occurrence vectors; "
             f"{skipped} occurrences past the encoder's window had no vector); "
             "*temporal-attention* = Algorithm 1 on a masked LM with paper 003's temporal attention trained on the two "
             "groups (`pipeline/evaluation/temporal_mlm.py`); *time-token* = the same MLM with a "
             "period token before each text instead (Rosin et al. 2022); *sgns* = skip-gram with negative "
             "sampling per group, Procrustes-aligned (`pipeline/evaluation/sgns.py`); *frequency* = "
             "|Δ log relative frequency|.", "", *truth_lines(correlated), "",
             *([f"![scores against the truth]({figure})", ""] if figure else []),
             ("| pseudo-word | kind | merged words | truth | " if merged else "| word | kind | truth | ")
             + " | ".join(METHODS) + " |",
             ("|---|---|---|---:|" if merged else "|---|---|---:|") + "---:|" * len(METHODS)]
    wide = frame.pivot(index="word", columns="method", values="score")
    for r in truth.sort_values(["truth", "word"], ascending=[False, True]).itertuples():
        cells = [f"{wide.at[r.word, m]:.4f}" if r.word in wide.index and m in wide.columns
                 and np.isfinite(wide.at[r.word, m]) else "–" for m in METHODS]
        lines.append(f"| {r.word} | {r.kind} | " + (f"{r.a} + {r.b} | " if merged else "")
                     + f"{r.truth:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
