"""The semantic-change report (issue 19 §4): which words moved in meaning between two groups of
periods, by each method, with an example sentence from each side.

Targets are words; every method scores LM tokens (:mod:`pipeline.evaluation.semantic_change`),
so a target is scored only when ``" word"`` is one word-starting token, and the others are listed
with their reason. Without a targets file the targets are the ``n`` most frequent such tokens
(alphabetic, ≥ 3 letters, no stopword) seen at least ``min_count`` times in *both* groups: a
vector pooled from a handful of occurrences measures sampling noise, not a change of use.

Methods (one row per target and method in :func:`scores_frame`):

* ``contextual`` — Martinc et al. (2020), paper 003's Algorithm 1 (lines 4-12) on the encoder
  vectors the embeddings stage pools per period (no temporal attention);
* ``temporal-attention`` — paper 003's method: a masked LM whose self-attention is eq. 2's
  temporal attention, trained on the two groups' abstracts, then Algorithm 1 with each sentence
  at its period's time point (:mod:`pipeline.evaluation.temporal_mlm`);
* ``time-token`` — the same masked LM without temporal attention, each text prefixed by a
  special token of its period (Rosin et al. 2022; :mod:`pipeline.evaluation.temporal_mlm`);
* ``sgns`` — skip-gram with negative sampling per group, Procrustes-aligned, cosine distance
  (Hamilton et al. 2016; :mod:`pipeline.evaluation.sgns`);
* ``frequency`` — |Δ mean log frequency|, the naive baseline: a method that agrees with it
  closely detects frequency shifts rather than new meanings. The report prints every pair of
  methods' Spearman ρ (:func:`agreement_matrix`) for exactly that reason.

With a graded ``truth`` column in the targets file, every method is correlated with it (Pearson
and Spearman, p-values, seeded bootstrap intervals; :func:`correlations`). The report ends with
the synthetic benchmark's table (:func:`benchmark_lines`, from ``reports/semantic_benchmark.json``):
the same methods on words of known change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.evaluation.semantic_change import split_sentences, word_token_ids_from_texts
from pipeline.evaluation.semantic_scores import ChangeScores, correlations
from pipeline.features.words import starts_word
from pipeline.infra.errors import UserError

METHODS = {"contextual": "averaged contextual embeddings (Martinc et al. 2020; paper 003 Alg. 1 "
                         "on the embeddings stage's vectors, no temporal attention)",
           "temporal-attention": "masked LM with temporal attention trained on the two groups, "
                                 "then Alg. 1 at each period's time point (paper 003 §4)",
           "time-token": "the same masked LM without temporal attention, each text prefixed by "
                         "its period's token, then Alg. 1 (Rosin et al. 2022)",
           "sgns": "skip-gram with negative sampling per group, Procrustes-aligned, cosine "
                   "distance (Hamilton et al. 2016)",
           "frequency": "|change of mean log frequency| (naive baseline)"}
SCORE_COLUMNS = ["method", "word", "token_id", "score", "rank", "first_count", "last_count"]


@dataclass(frozen=True)
class Targets:
    """Target words (file order, or most frequent first), their token ids, graded truth where
    given, and the words that cannot be scored with the reason."""

    words: list[str]
    ids: dict[str, int]
    truth: dict[str, float]
    rejected: dict[str, str]
    source: str


def read_targets(path: str | Path) -> tuple[list[str], dict[str, float]]:
    """A targets file: ``.csv`` with a ``word`` column and an optional graded ``truth`` column, or
    any other text file with one word per line (blank lines and ``#`` comments skipped)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"targets file {path} does not exist", path="semantic_change.targets",
                        fix="give a .csv (word[, truth]) or a text file with one word per line")
    if path.suffix.lower() != ".csv":
        lines = path.read_text(encoding="utf-8").splitlines()
        return [w.strip() for w in lines if w.strip() and not w.lstrip().startswith("#")], {}
    table = pd.read_csv(path, dtype={"word": str})
    if "word" not in table.columns:
        raise UserError(f"{path} has no `word` column (columns: {list(table.columns)})",
                        path=str(path), fix="name the column of target words `word`")
    words = table["word"].astype(str).str.strip().tolist()
    if len(set(words)) != len(words):
        raise UserError(f"{path} lists a word twice", path=str(path), fix="list each word once")
    if "truth" not in table.columns:
        return words, {}
    truth = pd.to_numeric(table["truth"], errors="coerce")
    if truth.isna().any():
        bad = table.loc[truth.isna(), "word"].tolist()[:5]
        raise UserError(f"{path}: `truth` is not a number for {bad}", path=str(path),
                        fix="give every target a numeric graded truth (or drop the column)")
    return words, dict(zip(words, truth.astype(float)))


def frequent_targets(texts: Sequence[str], first: np.ndarray, last: np.ndarray,
                     stopwords: frozenset[str], n: int, min_count: int) -> list[str]:
    """The ``n`` most frequent word tokens seen ≥ ``min_count`` times in both groups (summed
    counts ``first``, ``last`` per token id), alphabetic, ≥ 3 letters, no stopword; ties by id."""
    ok = [i for i, t in enumerate(texts[:first.size])
          if starts_word(t) and t[1:].isalpha() and len(t) > 3 and t[1:].lower() not in stopwords
          and first[i] >= min_count and last[i] >= min_count]
    ok.sort(key=lambda i: (-int(first[i] + last[i]), i))
    return [texts[i][1:] for i in ok[:n]]


def choose_targets(texts: Sequence[str], first: np.ndarray, last: np.ndarray,
                   stopwords: frozenset[str], n: int, min_count: int,
                   path: str | Path | None) -> Targets:
    """The targets of the run: the file's (``path``), else :func:`frequent_targets`."""
    if path is None:
        words, truth = frequent_targets(texts, first, last, stopwords, n, min_count), {}
        source = f"the {n} most frequent words seen ≥ {min_count} times in both groups"
    else:
        words, truth = read_targets(path)
        source = f"`{path}`"
    mapped = word_token_ids_from_texts(words, texts)
    return Targets(words, mapped.ids, truth, mapped.rejected, source)


def scores_frame(targets: Targets, methods: Mapping[str, ChangeScores]) -> pd.DataFrame:
    """One row per (method, scored target): the score and its rank (1 = most changed; ties by
    word), with the target's occurrences in each group. A target a method cannot score (for
    ``contextual``: not seen in both groups) has no row for that method."""
    rows = []
    for method, scores in methods.items():
        index = {int(t): k for k, t in enumerate(scores.token_ids)}
        part = []
        for word in targets.words:
            k = index.get(targets.ids.get(word, -1))
            if k is None or not math.isfinite(scores.scores[k]):
                continue
            counts = [int(c[k]) if c is not None and c.size else -1
                      for c in (scores.first_counts, scores.last_counts)]
            part.append([method, word, targets.ids[word], float(scores.scores[k]), 0, *counts])
        part.sort(key=lambda r: (-r[3], r[1]))
        for rank, row in enumerate(part, start=1):
            row[4] = rank
        rows += part
    return pd.DataFrame(rows, columns=SCORE_COLUMNS).astype({"token_id": "int64", "rank": "int64"})


def example_sentence(abstracts: Sequence[str], word: str, width: int = 200) -> str | None:
    """The first sentence (corpus order) where ``word`` starts a word (the token's own use: a
    hyphen may follow, as in *pre-trained*), cut to ``width`` characters around the word."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(word)}(?!\w)")
    for text in abstracts:
        if pattern.search(text):
            sentence = next(s for s in split_sentences(text) if pattern.search(s))
            if len(sentence) <= width:
                return sentence
            at = pattern.search(sentence).start()
            start = max(0, min(at - width // 2, len(sentence) - width))
            cut = sentence[start:start + width]
            return ("…" if start else "") + cut + ("…" if start + width < len(sentence) else "")
    return None


def word_scores(targets: Targets, words: Sequence[str], scores: np.ndarray,
                counts: ChangeScores) -> ChangeScores:
    """Scores of a word-level method (one per word of ``words``, NaN = not scored) as
    :class:`ChangeScores` over the words' token ids, with the group counts of ``counts`` (the
    frequency method's, per token id)."""
    ids = np.array([targets.ids[w] for w in words], dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    at = np.searchsorted(counts.token_ids, ids[order])
    return ChangeScores(ids[order], np.asarray(scores, dtype=np.float64)[order],
                        None if counts.first_counts is None else counts.first_counts[at],
                        None if counts.last_counts is None else counts.last_counts[at])


def agreement_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Spearman ρ between every two methods' scores over the targets both scored (NaN where
    fewer than 3 or a constant column); rows and columns in the frame's method order."""
    methods = list(dict.fromkeys(frame["method"]))
    wide = frame.pivot(index="word", columns="method", values="score")
    out = pd.DataFrame(np.nan, index=methods, columns=methods)
    for i, a in enumerate(methods):
        for b in methods[i:]:
            both = wide[[a, b]].dropna()
            if len(both) >= 3 and (both.nunique() > 1).all():
                rho = 1.0 if a == b else float(stats.spearmanr(both[a], both[b])[0])
                out.loc[a, b] = out.loc[b, a] = rho
    return out


def method_agreement(frame: pd.DataFrame) -> tuple[float, int] | None:
    """Spearman ρ between the contextual and the frequency method over the targets both scored,
    and their count: the DVC metric ``agreement`` (one number: ``dvc metrics show`` is near its
    200 columns; every pair is in the report's :func:`agreement_matrix`)."""
    if not {"contextual", "frequency"} <= set(frame["method"]):
        return None
    wide = frame.pivot(index="word", columns="method", values="score")[
        ["contextual", "frequency"]].dropna()
    if len(wide) < 3 or (wide.nunique() < 2).any():
        return None       # too few targets, or a constant column: no rank correlation
    return float(stats.spearmanr(wide["contextual"], wide["frequency"])[0]), len(wide)


def truth_correlations(frame: pd.DataFrame, truth: Mapping[str, float], seed: int,
                       methods: Sequence[str] = ()) -> dict[str, dict]:
    """Per method: Pearson and Spearman against graded ``truth`` with p-values and intervals;
    each of ``methods`` without a scored word gets an entry saying so (every method is shown)."""
    out: dict[str, dict] = {m: {"n": 0, "error": "no target scored"} for m in methods
                            if m not in set(frame["method"])}
    for method, part in frame.groupby("method", sort=False):
        part = part[part["word"].isin(truth)]
        try:
            c = correlations(part["score"], [truth[w] for w in part["word"]], seed=seed)
        except ValueError as err:
            out[method] = {"n": len(part), "error": str(err)}
            continue
        out[method] = {"n": c.n, "pearson": c.pearson, "pearson_p": c.pearson_p,
                       "pearson_ci": list(c.pearson_ci), "spearman": c.spearman,
                       "spearman_p": c.spearman_p, "spearman_ci": list(c.spearman_ci)}
    return {m: out[m] for m in [*methods, *(k for k in out if k not in methods)]}


def metrics(frame: pd.DataFrame, correlated: Mapping[str, dict]) -> dict:
    """The compact DVC metrics, one column wide by default so that `dvc metrics show` keeps to a
    200-column terminal: ``agreement`` (contextual vs frequency Spearman ρ; null if undefined)
    and, with graded truth, ``spearman`` {method: ρ against the truth}. Coverage, every other
    pair of methods and everything else is in the report and the scores table."""
    agreement = method_agreement(frame)
    out: dict = {"agreement": None if agreement is None else round(agreement[0], 4)}
    rho = {m: round(c["spearman"], 4) for m, c in correlated.items() if "error" not in c}
    if rho:
        out["spearman"] = rho
    return out


def _fmt_p(p: float) -> str:
    return "< 1e-300" if p < 1e-300 else f"{p:.2g}"


def truth_lines(correlated: Mapping[str, dict]) -> list[str]:
    """The table of each method's correlation with graded truth (:func:`truth_correlations`)."""
    lines = ["## Against the graded truth", "",
             "| method | n | Spearman ρ [95 % CI] | p | Pearson r [95 % CI] | p |",
             "|---|---:|---|---:|---|---:|"]
    for method, c in correlated.items():
        if "error" in c:
            lines.append(f"| {method} | {c['n']} | {c['error']} | | | |")
            continue
        lines.append(f"| {method} | {c['n']} | {c['spearman']:.3f} [{c['spearman_ci'][0]:.3f}, "
                     f"{c['spearman_ci'][1]:.3f}] | {_fmt_p(c['spearman_p'])} | "
                     f"{c['pearson']:.3f} [{c['pearson_ci'][0]:.3f}, {c['pearson_ci'][1]:.3f}]"
                     f" | {_fmt_p(c['pearson_p'])} |")
    return lines


def agreement_lines(frame: pd.DataFrame) -> list[str]:
    """The methods' agreement: :func:`agreement_matrix` as a table (empty if < 2 methods)."""
    matrix = agreement_matrix(frame)
    if len(matrix) < 2:
        return []
    counts = frame.groupby("method", sort=False).size()
    cell = lambda v: "–" if not np.isfinite(v) else f"{v:.3f}"    # noqa: E731
    return ["## How the methods agree", "",
            "Spearman ρ between two methods' scores over the targets both scored: the closer a "
            "method is to *frequency*, the more its change only restates a frequency change.", "",
            "| method | scored | " + " | ".join(matrix.columns) + " |",
            "|---|---:|" + "---:|" * len(matrix.columns),
            *[f"| {m} | {counts[m]} | " + " | ".join(cell(v) for v in row) + " |"
              for m, row in zip(matrix.index, matrix.to_numpy())], ""]


def benchmark_lines(details: Mapping | None, link: str) -> list[str]:
    """The synthetic benchmark's section: its correlation table from
    ``reports/semantic_benchmark.json`` (``details``), a link to its report, or why it is absent."""
    lines = ["## The methods on words of known change", ""]
    if details is None:
        return lines + ["No benchmark was given to this report.", ""]
    if "skipped" in details:
        return lines + [f"The benchmark was skipped ([its report]({link})): {details['skipped']}",
                        ""]
    what = (f"the SemEval-2020 Task 1 targets of `{details['semeval']}`" if details.get("semeval")
            else f"pseudo-words of known graded change, {' '.join(details.get('first', []))} → "
                 f"{' '.join(details.get('last', []))}")
    correlated = details.get("correlations", {})
    order = sorted(correlated, key=lambda m: (list(METHODS).index(m) if m in METHODS
                                              else len(METHODS), m))
    return lines + [f"The same methods scored on {what} ([the benchmark's report]({link})):", "",
                    *truth_lines({m: correlated[m] for m in order})[2:], ""]


def markdown(targets: Targets, frame: pd.DataFrame, first: Sequence[str], last: Sequence[str],
             examples: Mapping[str, tuple[str | None, str | None]], top: int,
             correlated: Mapping[str, dict], benchmark: list[str] | None = None) -> str:
    """``reports/semantic_change.md``: coverage, the methods' agreement, correlations with truth
    if given, each method's top ``top`` words with an example sentence from each group, and the
    benchmark's section (:func:`benchmark_lines`) if given."""
    span = lambda g: g[0] if len(g) == 1 else f"{g[0]}..{g[-1]}"     # noqa: E731
    lines = [f"# Semantic change {span(first)} → {span(last)}", "",
             f"Targets: {targets.source}; {len(targets.words)} words, {len(targets.ids)} are one "
             f"LM token and scored, {len(targets.rejected)} are not"
             + (f" (e.g. {', '.join(f'{w!r}: {r}' for w, r in list(targets.rejected.items())[:10])})"
                if targets.rejected else "") + ".", ""]
    if not targets.words:
        lines += ["No word qualified: lower `semantic_change.min_count` (a small corpus) or give "
                  "a targets file.", ""]
    lines += agreement_lines(frame)
    if correlated:
        lines += truth_lines(correlated) + [""]
    else:
        lines += ["No graded truth was given, so nothing here says which method is *right*: the "
                  "lists below are candidates to read, not findings.", ""]
    for method, title in METHODS.items():
        part = frame[frame["method"] == method].head(top)
        lines += [f"## {method}: {title}", "",
                  f"| rank | word | score | n {span(first)} | n {span(last)} |",
                  "|---:|---|---:|---:|---:|"]
        lines += [f"| {r.rank} | {r.word} | {r.score:.4f} | {r.first_count} | {r.last_count} |"
                  for r in part.itertuples()]
        lines.append("")
        for r in part.itertuples():
            before, after = examples.get(r.word, (None, None))
            lines += [f"- **{r.word}** — {span(first)}: {before or '(no sentence found)'}",
                      f"  — {span(last)}: {after or '(no sentence found)'}"]
        lines.append("")
    return "\n".join(lines + (benchmark or []))
