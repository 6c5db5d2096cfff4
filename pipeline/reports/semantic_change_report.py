"""The semantic-change report, rendered: which words moved in meaning between two
groups of periods, by each method, with an example sentence from each side.

The numbers come from :mod:`pipeline.semantic.change` (targets, every registered
method's scores, correlations with a graded truth) and :mod:`pipeline.semantic.scores`
(the methods' agreement); the methods and their one-line descriptions, one section each, from
the method registry (:mod:`pipeline.semantic.methods.registry`). The report
prints every pair of methods' Spearman ρ (:func:`agreement_lines`): a method that agrees closely
with *frequency* detects frequency shifts rather than new meanings. It ends with the synthetic
benchmark's table (:func:`benchmark_lines`, from ``reports/semantic_benchmark.json``) when given
one, and otherwise with where that report is: the same methods on words of known change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.corpus.sentences import split_sentences
from pipeline.semantic.methods import registry
from pipeline.semantic.scores import agreement_matrix
from pipeline.semantic.targets import Targets


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


def examples(frame: pd.DataFrame, groups: Sequence[Sequence[str]], top: int
             ) -> dict[str, tuple[str | None, str | None]]:
    """An example sentence from each group's abstracts for every word the report lists (each
    method's ``top`` words)."""
    shown = set(frame.groupby("method").head(top)["word"])
    return {w: (example_sentence(groups[0], w), example_sentence(groups[1], w))
            for w in sorted(shown)}


def _fmt_p(p: float) -> str:
    return "< 1e-300" if p < 1e-300 else f"{p:.2g}"


def truth_lines(correlated: Mapping[str, dict]) -> list[str]:
    """The table of each method's correlation with graded truth
    (:func:`pipeline.semantic.scores.truth_correlations`)."""
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
    ``reports/semantic_benchmark.json`` (``details``, rows in the registry's order whatever the
    JSON's) and a link to its report; without ``details``, where that report is made. The
    benchmark trains its own MLMs, so scoring a user's targets does not wait for it."""
    lines = ["## The methods on words of known change", ""]
    if details is None:
        return lines + ["How each method ranks words of known change is measured by a separate "
                        "stage, so that scoring these targets does not wait for it: "
                        f"`dvc repro semantic_benchmark` writes [its report]({link}).", ""]
    if "skipped" in details:
        return lines + [f"The benchmark was skipped ([its report]({link})): {details['skipped']}",
                        ""]
    what = (f"the SemEval-2020 Task 1 targets of `{details['semeval']}`" if details.get("semeval")
            else f"pseudo-words of known graded change, {' '.join(details.get('first', []))} → "
                 f"{' '.join(details.get('last', []))}")
    correlated = details.get("correlations", {})
    known = registry.names()
    order = sorted(correlated, key=lambda m: (known.index(m) if m in known else len(known), m))
    return lines + [f"The same methods scored on {what} ([the benchmark's report]({link})):", "",
                    *truth_lines({m: correlated[m] for m in order})[2:], ""]


def markdown(targets: Targets, frame: pd.DataFrame, first: Sequence[str], last: Sequence[str],
             examples: Mapping[str, tuple[str | None, str | None]], top: int,
             correlated: Mapping[str, dict], benchmark: list[str] | None = None) -> str:
    """``reports/semantic_change.md``: coverage, the methods' agreement, correlations with truth
    if given, each registered method's top ``top`` words with an example sentence from each
    group, and the benchmark's section (:func:`benchmark_lines`) if given."""
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
    for method, title in registry.descriptions().items():
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
