"""The semantic-change benchmark's report, rendered: ``reports/semantic_benchmark.md``.

The benchmark itself (pseudo-words or a SemEval-2020 Task 1 folder, every registered method's
scores and their correlations with the truth) is :mod:`pipeline.semantic.benchmark`;
this module writes it down: what the words are, one sentence per method (each method's own
``benchmark_note``, :mod:`pipeline.semantic.methods.interface`), the correlation table,
the figure and every word's row with each method's score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.reports.semantic_change_report import truth_lines
from pipeline.semantic.methods import registry
from pipeline.semantic.methods.interface import MethodResult
from pipeline.stats.power import POWER, mde_function, t_power
from pipeline.stats.ranks import FIELLER, SPEARMAN_TEST, fisher_interval
from pipeline.stats.verdict import ALPHA, Claim, Verdict, sentence

CHANCE = "chance (ρ = 0)"
# the true correlations at which the report states each method's power
POWER_AT = (0.3, 0.5)


def _runs(method: str) -> int:
    """1 for a method that trains (it reads the learned methods' settings: one run, its
    seed-to-seed spread unknown, so the engine leaves it untested), 0 for a method without
    training (a seed that only samples usages does not make one)."""
    known = method in registry.names()
    return int(known and "learned" in registry.lookup(method).reads)


def benchmark_claims(correlated: Mapping[str, dict]) -> list[Claim]:
    """Family ``semantic-change``: does each method rank the words' known change above chance?
    Spearman ρ against the graded truth, tested against 0 with the word as the unit
    (:func:`pipeline.stats.ranks.spearman_test`). The words' truth is planted independently of
    the methods, so 0 is the null."""
    claims = []
    for method, c in correlated.items():
        tested = "error" not in c
        claims.append(Claim(
            "semantic_benchmark", "semantic-change", method, CHANCE, "Spearman ρ with the truth",
            c["spearman"] if tested else float("nan"),
            tuple(c["spearman_ci"]) if tested else (float("nan"), float("nan")),
            c["spearman_p"] if tested else float("nan"), SPEARMAN_TEST, "words", int(c["n"]),
            (_runs(method), 0), better_when="higher", note="" if tested else str(c["error"]),
            mde_of=mde_function(c["spearman_se"], math.inf, "fisher-z") if tested else None,
            ci_of=(lambda level, c=c: fisher_interval(c["spearman"], c["spearman_se"], 1 - level))
            if tested else None))
    return claims


def spearman_power(rho: float, n: int, alpha: float = ALPHA) -> float:
    """The power of the two-sided test of ρ = 0 over ``n`` words at ``alpha`` when the true
    correlation is ``rho``: Fisher's z of ``rho`` over its standard error √(FIELLER / (n − 3)),
    against the normal (the scale of :func:`pipeline.stats.ranks.spearman_test`'s interval; NaN
    below 4 words)."""
    if n < 4:
        return math.nan
    return t_power(math.atanh(rho) / math.sqrt(FIELLER / (n - 3)), math.inf, alpha)


def detectable(correlated: Mapping[str, dict], family_size: int) -> dict[str, dict]:
    """What the benchmark could have seen, per method at its number of scored words (the
    ``power`` of ``reports/semantic_benchmark.json``): ``mde``, the smallest ρ found with 80 %
    power at α 0.05; ``mde_family``, the same at Holm's strictest level over the
    ``family_size`` tested methods (the verdicts' ``mde``); ``power_at``, the power at α 0.05 at
    each ρ of :data:`POWER_AT`. None where a method scored fewer than 4 words. A trained method's
    run-to-run spread is not in these (one run each)."""
    out: dict[str, dict] = {}
    for method, c in correlated.items():
        n = int(c["n"])
        if n < 4 or "error" in c:
            out[method] = {"words": n, "mde": None, "mde_family": None, "power_at": None}
            continue
        mde = mde_function(math.sqrt(FIELLER / (n - 3)), math.inf, "fisher-z")
        out[method] = {"words": n, "mde": mde(ALPHA),
                       "mde_family": mde(ALPHA / max(family_size, 1)),
                       "power_at": {str(r): spearman_power(r, n) for r in POWER_AT}}
    return out


def power_lines(power: Mapping[str, dict], family_size: int) -> list[str]:
    """:func:`detectable`'s table."""
    lines = ["## What the benchmark could see", "",
             f"Per method, at its number of words: the smallest true ρ found with "
             f"{POWER:.0%} power by the test of ρ = 0 (two-sided; Fisher z, standard error "
             f"√({FIELLER} / (n − 3))) at α {ALPHA} and at α {ALPHA}/{family_size} "
             "(Holm's strictest "
             "over the tested methods), and the power at α "
             f"{ALPHA} when the true ρ is " + " or ".join(f"{r}" for r in POWER_AT) + ". "
             "A trained method's run-to-run spread is not in them.", "",
             f"| method | words | smallest ρ, α {ALPHA} | smallest ρ, α {ALPHA}/{family_size} | "
             + " | ".join(f"power at ρ {r}" for r in POWER_AT) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(POWER_AT)]
    for method, p in power.items():
        if p["mde"] is None:
            lines.append(f"| {method} | {p['words']} | – | – |" + " – |" * len(POWER_AT))
            continue
        lines.append(f"| {method} | {p['words']} | {p['mde']:.3f} | {p['mde_family']:.3f} | "
                     + " | ".join(f"{p['power_at'][str(r)]:.2f}" for r in POWER_AT) + " |")
    return [*lines, ""]


def family_size(verdicts: Sequence[Verdict]) -> int:
    """How many methods Holm corrects over (the tested ones; 1 when none is)."""
    return max((v.family_size for v in verdicts), default=1) or 1


def verdict_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """One sentence per method (records of ``reports/verdicts.json``, Holm over the methods)."""
    return ["## Verdicts", "", "Records of `reports/verdicts.json` (family `semantic-change`, "
            "Holm-adjusted over the methods; `docs/verdicts.md`):", "",
            *[f"- {sentence(v)}" for v in verdicts], ""]


def skipped_markdown(message: str) -> str:
    """The report of a corpus too small for the benchmark: why, and what to change."""
    return f"# Semantic-change benchmark\n\n{message}\n"


def method_notes(results: Mapping[str, MethodResult], encoder: str) -> dict[str, str]:
    """Each method's sentence, filled in with its result (:meth:`ChangeMethod.note`)."""
    return {m: registry.lookup(m).note(encoder, r) for m, r in results.items()}


def markdown(first: Sequence[str], last: Sequence[str], frame: pd.DataFrame, truth: pd.DataFrame,
             correlated: dict[str, dict], notes: Mapping[str, str],
             figure: str | None = None, semeval: str | None = None,
             verdicts: Sequence[Verdict] = ()) -> str:
    """``reports/semantic_benchmark.md``: the correlations, then every word's row (pseudo-words,
    or the targets of the SemEval folder ``semeval``) with a column per method of ``notes``
    (:func:`method_notes`, in the registry's order)."""
    span = lambda g: g[0] if len(g) == 1 else f"{g[0]}..{g[-1]}"     # noqa: E731
    methods = list(notes)
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
    tested = family_size(verdicts)
    lines = [f"# Semantic-change benchmark: {title}", "",
             f"{what} Methods: " + "; ".join(f"*{m}* = {note}" for m, note in notes.items())
             + ".", "", *truth_lines(correlated), "", *verdict_lines(verdicts),
             *power_lines(detectable(correlated, tested), tested),
             *([f"![scores against the truth]({figure})", ""] if figure else []),
             ("| pseudo-word | kind | merged words | truth | " if merged else "| word | kind | truth | ")
             + " | ".join(methods) + " |",
             ("|---|---|---|---:|" if merged else "|---|---|---:|") + "---:|" * len(methods)]
    wide = frame.pivot(index="word", columns="method", values="score")
    for r in truth.sort_values(["truth", "word"], ascending=[False, True]).itertuples():
        cells = [f"{wide.at[r.word, m]:.4f}" if r.word in wide.index and m in wide.columns
                 and np.isfinite(wide.at[r.word, m]) else "–" for m in methods]
        lines.append(f"| {r.word} | {r.kind} | " + (f"{r.a} + {r.b} | " if merged else "")
                     + f"{r.truth:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
