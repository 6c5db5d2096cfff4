"""The results report's claims about variants, through the verdict engine (issue 31 §1-4).

Three families, each on the test period, each compared by the two-level bootstrap of
:mod:`pipeline.evaluation.model_comparison` (abstracts paired, trained runs per side) and judged by
:func:`pipeline.stats.verdict.judge` (Holm within the family; a trained side with fewer than three
runs is never ordered):

* ``variant``: every variant against the Baseline (Table 3's question) on PPL, CPL and CM (a
  continuous-output model on CM only: its PPL is not a softmax's);
* ``domain-gain``: with ``train.base: adapted``, the Baseline (the pretrained LM adapted to the
  training periods) against ``baseline-0``, the same LM as it is: what adapting to the domain
  gains, apart from any variant's temporal gain;
* ``temporal-gain``: every variant that reads a history against its time-free control
  (``<variant>-static``: the same module and parameter count, a history pooled over the training
  periods), on PPL and CPL. This separates "history helps" from "more parameters" and "domain
  adaptation": the control has both;
* ``output-layer``: the output-layer questions of papers 002 and 004 (:data:`QUESTIONS`);
* ``history-sensitivity``: every variant that reads a history, scored with its real history
  against the same models scored with the history of the period before (the score stage's
  wrong-history pass, ``nll_sum_shifted``): a model whose PPL does not move does not use time.
  Paired by abstract *and* by run (the same trained models on both sides).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pipeline.evaluation.model_comparison import Comparison, compare_items, compare_nll
from pipeline.corpus.periods import NOUN, kind_of
from pipeline.models.registry import UNADAPTED, control_for, display_name, lookup
from pipeline.reports.cm_anchors_report import AnchorInputs, anchors_section
from pipeline.stats.verdict import Claim, Verdict, judge, sentence, table

REPORT = "results"
# (question, variant, reference): the output-layer comparisons of papers 002 and 004.
QUESTIONS = (
    ("Does contextual temperature help?", "temperature", "baseline"),
    ("Does the sigmoid temperature (starts as the Baseline) help?", "temperature-sigmoid",
     "baseline"),
    ("Does history add anything over context alone?", "temporal-temperature", "temperature"),
    ("Does continuous output help?", "continuous-vmf", "baseline"),
)
_COLUMNS = {"PPL": ("nll_sum", "n_tokens"), "CPL": ("content_nll_sum", "n_content")}
SHIFTED = "nll_sum_shifted"          # the score stage's wrong-history pass (PPL)


def _nll_matrix(runs: Mapping[tuple[str, int], object], variant: str, seeds: Sequence[int],
                period: str, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keys, nll [n, runs], tokens [n])`` of ``variant``'s runs on ``period``'s abstracts."""
    total, count = _COLUMNS[metric]
    frames = [runs[(variant, s)].tokens[period].sort_values("key") for s in seeds]  # type: ignore[attr-defined]
    keys = frames[0]["key"].to_numpy()
    for f in frames[1:]:
        if not np.array_equal(f["key"].to_numpy(), keys):
            raise ValueError(f"the seeds of {variant} scored different abstracts of {period}")
    nll = np.stack([f[total].to_numpy(dtype=np.float64) for f in frames], axis=1)
    return keys, nll, frames[0][count].to_numpy(dtype=np.int64)


def compare_runs(runs: Mapping[tuple[str, int], object], a: str, b: str, seeds: Sequence[int],
                 period: str, metric: str) -> Comparison:
    """``a`` vs ``b`` on ``period`` (``metric``: PPL, CPL or CM) by the two-level bootstrap."""
    if metric == "CM":
        items = {v: [runs[(v, s)].generations[period]["cm"].to_numpy() for s in seeds]  # type: ignore[attr-defined]
                 for v in (a, b)}
        return compare_items(items, a, b)
    keys_a, nll_a, tok_a = _nll_matrix(runs, a, seeds, period, metric)
    keys_b, nll_b, tok_b = _nll_matrix(runs, b, seeds, period, metric)
    if not np.array_equal(keys_a, keys_b) or not np.array_equal(tok_a, tok_b):
        raise ValueError(f"{a} and {b} scored different abstracts or tokens of {period}")
    keep = tok_a > 0                                   # CPL: abstracts with content tokens
    return compare_nll({a: nll_a[keep], b: nll_b[keep]}, tok_a[keep], a, b)


def _history_claim(runs: Mapping[tuple[str, int], object], variant: str, seeds: Sequence[int],
                   period: str) -> Claim:
    """``variant`` with its real history against itself with the previous period's: the same
    runs on both sides, so the runs are drawn once for both (paired) and only the abstracts and
    runs' common spread enter."""
    keys, real, tokens = _nll_matrix(runs, variant, seeds, period, "PPL")
    frames = [runs[(variant, s)].tokens[period].sort_values("key") for s in seeds]  # type: ignore[attr-defined]
    wrong = np.stack([f[SHIFTED].to_numpy(dtype=np.float64) for f in frames], axis=1)
    c = compare_nll({"real": real - wrong, "zero": np.zeros_like(real)}, tokens, "real", "zero")
    name = display_name(variant)
    return Claim(REPORT, "history-sensitivity", name, f"{name} (previous period's history)",
                 "PPL", c.effect, c.ci, c.p, c.test.replace("runs per side", "runs paired"),
                 c.unit, c.n, c.runs, effect_unit=c.effect_unit, scope=period)


def _metrics(variant: str, reference: str, wanted: Sequence[str]) -> list[str]:
    softmax = all(lookup(v).distribution == "softmax" for v in (variant, reference))
    return [m for m in wanted if m == "CM" or softmax]


def _claim(runs: Mapping[tuple[str, int], object], family: str, a: str, b: str,
           seeds: Sequence[int], period: str, metric: str) -> Claim:
    c = compare_runs(runs, a, b, seeds, period, metric)
    return Claim(REPORT, family, display_name(a), display_name(b), metric, c.effect, c.ci, c.p,
                 c.test, c.unit, c.n, c.runs, better_when="higher" if metric == "CM" else "lower",
                 effect_unit=f"% {metric}" if c.effect_unit == "% PPL" else c.effect_unit,
                 scope=period)


def model_claims(runs: Mapping[tuple[str, int], object], variants: Sequence[str],
                 seeds: Sequence[int], period: str, baseline: str = "baseline") -> list[Claim]:
    """Every claim of the three families (module doc) for the runs of ``variants`` x ``seeds``."""
    claims: list[Claim] = []
    if baseline in variants:
        if UNADAPTED in variants:
            claims += [_claim(runs, "domain-gain", baseline, UNADAPTED, seeds, period, m)
                       for m in ("PPL", "CPL", "CM")]
        for v in variants:
            if v not in (baseline, UNADAPTED):
                claims += [_claim(runs, "variant", v, baseline, seeds, period, m)
                           for m in _metrics(v, baseline, ("PPL", "CPL", "CM"))]
    for v in variants:
        control = control_for(v)
        if control in variants:
            claims += [_claim(runs, "temporal-gain", v, control, seeds, period, m)
                       for m in ("PPL", "CPL")]
    for v in variants:
        if SHIFTED in runs[(v, seeds[0])].tokens[period]:                  # type: ignore[attr-defined]
            claims.append(_history_claim(runs, v, seeds, period))
    for _, v, reference in QUESTIONS:
        if v in variants and reference in variants and reference != baseline:
            claims += [_claim(runs, "output-layer", v, reference, seeds, period, m)
                       for m in _metrics(v, reference, ("PPL", "CPL", "CM"))]
    return claims


FAMILY_TEXT = {
    "variant": ("Which variants differ from the Baseline",
                "Each variant against the Baseline on the test {noun}'s abstracts."),
    "domain-gain": ("Domain gain: the adapted Baseline against the pretrained LM as it is",
                    "The Baseline is the pretrained LM with its top blocks fine-tuned on the "
                    "training {noun}s (`train.base: adapted`); Baseline-unadapted is the same LM "
                    "untouched. Every other variant is built on the adapted Baseline, so its "
                    "gains below are on top of this one."),
    "temporal-gain": ("Temporal gain: each history-reading variant against its time-free control",
                      "The control (`<variant>-static`) is the same module with the same "
                      "parameters, reading each word's history pooled over the training {noun}s "
                      "(the same for every {noun}): it has the extra parameters and the domain "
                      "adaptation, not the time. A variant's temporal gain is its difference "
                      "to its control."),
    "history-sensitivity": ("Does each model use its history? Scored with the wrong one",
                            "Each history-reading variant's models scored on the test {noun} with "
                            "their real history against the same models scored with the history "
                            "of the {noun} before (every other input unchanged). A model that "
                            "uses time should be worse with the wrong history."),
    "output-layer": ("Output layers (papers 002, 004)",
                     "Output-layer variants against each other (against the Baseline: the first "
                     "family)."),
}


def verdict_sections(verdicts: Sequence[Verdict], seeds: Sequence[int], noun: str) -> list[str]:
    """Markdown lines: one subsection per family with its table and one sentence per verdict."""
    runs = len(seeds)
    parts = ["", "## Verdicts", "",
             "Every claim below is a record of `reports/verdicts.json` (schema: "
             "`docs/verdicts.md`). Test: a two-level bootstrap (2000 replicates) that resamples "
             f"the test {noun}'s abstracts (paired: every model scores the same draw) and each "
             "side's trained runs; PPL and CPL effects are relative changes of A against B, "
             "CM effects differences of the mean. p-values are Holm-adjusted within each family; "
             f"a variant with fewer than 3 trained runs is never ordered. Runs per variant here: "
             f"{runs} (seed{'s' if runs > 1 else ''} {', '.join(map(str, seeds))})."]
    for family, (title, text) in FAMILY_TEXT.items():
        members = [v for v in verdicts if v.family == family]
        if not members:
            continue
        parts += ["", f"### {title}", "", text.format(noun=noun), "", table(members), ""]
        parts += [f"- {sentence(v)}" for v in members]
    return parts


def report_verdicts(runs: Mapping[tuple[str, int], object], variants: Sequence[str],
                    seeds: Sequence[int], baseline: str, anchors: AnchorInputs | None = None
                    ) -> tuple[list[Verdict], list[str]]:
    """Every verdict of the results report and its Markdown sections: the three families on the
    test period and, with ``anchors``, the ``cm-anchor`` family (its section after them)."""
    test = runs[(variants[0], seeds[0])].split_period("test")   # type: ignore[attr-defined]
    verdicts = judge(model_claims(runs, variants, seeds, test, baseline))
    sections = verdict_sections(verdicts, seeds, NOUN[kind_of(test)])
    if anchors is not None:
        anchor_verdicts, section = anchors_section(runs, variants, seeds, anchors)
        verdicts, sections = verdicts + anchor_verdicts, [*sections, "", section]
    return verdicts, sections
