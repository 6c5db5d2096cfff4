"""The results report's claims about variants, through the verdict engine.

Four families, each on the test period, each tested by :mod:`pipeline.stats.comparisons` (PPL and
CPL: a t test over the trained runs, paired by seed where both sides ran at least three of the
same seeds and Welch's otherwise, with the abstracts' variance added, abstracts paired; CM:
Welch's t over per-run means of generated abstracts; where the corpus names each abstract's
venue, a venue's abstracts are resampled together, :mod:`pipeline.stats.clusters`) and judged by
:func:`pipeline.stats.verdict.judge` (Holm within the family; a trained side with fewer than three
runs is untested):

* ``variant``: every variant against the Baseline (Table 3's question) on PPL, CPL and CM (a
  continuous-output model on CM only: its PPL is not a softmax's);
* ``domain-gain``: with ``train.base: adapted``, the Baseline (the pretrained LM adapted to the
  training periods) against ``baseline-0``, the same LM as it is: what adapting to the domain
  gains, apart from any variant's temporal gain;
* ``temporal-gain``: every variant that reads a history against its time-free control
  (``<variant>-static``: the same module and parameter count, a history pooled over the training
  periods), on PPL and CPL. This separates "history helps" from "more parameters" and "domain
  adaptation": the control has both. A continued Baseline (``continued-N``) is set against the
  continued Baseline of the widest window in the run (:func:`window_control`): the same steps
  from the same Baseline, so the difference is the window's recency, not the extra training;
* ``output-layer``: the output-layer questions of papers 002 and 004 that set a variant against
  another variant than the Baseline, each named by the variant's module (``COMPARED_WITH``:
  temporal temperature against the temperature, does history add anything over context alone?).

Scoring a model with one other period's history is not a test of whether it uses time (one
wrong history is one unit: with enough abstracts any realised difference looks significant);
the time-free control is that test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pipeline.corpus.groups import group_labels
from pipeline.corpus.periods import NOUN, kind_of
from pipeline.models.registry import (BASELINE, UNADAPTED, common_seeds, control_for, display_name,
                                      lookup, window_control)
from pipeline.reports.cm_anchors_report import AnchorInputs, anchors_section
from pipeline.reports.results import seeds_text
from pipeline.reports.scored_runs import RunSeeds
from pipeline.stats.clusters import design_effect, effective_size, intra_cluster_correlation
from pipeline.stats.comparisons import Side, TestResult, compare_items, compare_rates
from pipeline.stats.fixed_point import fixed_sum
from pipeline.stats.verdict import Claim, Verdict, claim_of, judge, rounded, sentence, table

REPORT = "results"
_COLUMNS = {"PPL": ("nll_sum", "n_tokens"), "CPL": ("content_nll_sum", "n_content")}


def nll_matrix(runs: Mapping[tuple[str, int], object], variant: str, seeds: Sequence[int],
                period: str, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keys, nll [n, runs], tokens [n])`` of ``variant``'s runs on ``period``'s abstracts
    (``metric``: PPL or CPL), the seeds' rows aligned by abstract key."""
    total, count = _COLUMNS[metric]
    frames = [runs[(variant, s)].tokens[period].sort_values("key") for s in seeds]  # type: ignore[attr-defined]
    keys = frames[0]["key"].to_numpy()
    for f in frames[1:]:
        if not np.array_equal(f["key"].to_numpy(), keys):
            raise ValueError(f"the seeds of {variant} scored different abstracts of {period}")
    nll = np.stack([f[total].to_numpy(dtype=np.float64) for f in frames], axis=1)
    return keys, nll, frames[0][count].to_numpy(dtype=np.int64)


def _trained(variant: str) -> bool:
    """Whether ``variant``'s runs were trained (the unadapted pretrained LM was not: its seeds
    score the same model, so it has no run-to-run spread)."""
    return variant != UNADAPTED


def compare_runs(runs: Mapping[tuple[str, int], object], a: str, b: str, seeds: RunSeeds,
                 period: str, metric: str, groups: Mapping[str, str] | None = None) -> TestResult:
    """``a`` vs ``b`` on ``period`` (``metric``: PPL, CPL or CM; :mod:`pipeline.stats.comparisons`);
    ``groups``: each abstract's group (:mod:`pipeline.corpus.groups`), resampled together."""
    names = (display_name(a), display_name(b))
    if metric == "CM":
        sides = [Side([runs[(v, s)].generations[period]["cm"].to_numpy() for s in seeds[v]],  # type: ignore[attr-defined]
                      _trained(v)) for v in (a, b)]
        return compare_items(*sides, names=names)
    keys_a, nll_a, tok_a = nll_matrix(runs, a, seeds[a], period, metric)
    keys_b, nll_b, tok_b = nll_matrix(runs, b, seeds[b], period, metric)
    if not np.array_equal(keys_a, keys_b) or not np.array_equal(tok_a, tok_b):
        raise ValueError(f"{a} and {b} scored different abstracts or tokens of {period}")
    keep = tok_a > 0                                   # CPL: abstracts with content tokens
    return compare_rates(Side(nll_a[keep], _trained(a), tuple(seeds[a])),
                         Side(nll_b[keep], _trained(b), tuple(seeds[b])), tok_a[keep], names=names,
                         groups=group_labels(keys_a[keep], groups or {}))


def _metrics(variant: str, reference: str, wanted: Sequence[str]) -> list[str]:
    softmax = all(lookup(v).distribution == "softmax" for v in (variant, reference))
    return [m for m in wanted if m == "CM" or softmax]


def _claim(runs: Mapping[tuple[str, int], object], family: str, a: str, b: str,
           seeds: RunSeeds, period: str, metric: str, groups: Mapping[str, str]) -> Claim:
    result = compare_runs(runs, a, b, seeds, period, metric, groups)
    cm = metric == "CM"
    return claim_of(result, report=REPORT, family=family, a=display_name(a), b=display_name(b),
                    metric=metric, scale="identity" if cm else "relative",
                    effect_unit="CM" if cm else f"% {metric}",
                    better_when="higher" if cm else "lower", scope=period)


def comparisons(variants: Sequence[str], baseline: str = BASELINE
                ) -> list[tuple[str, str, str, list[str]]]:
    """``(family, a, b, metrics)`` of every comparison of the three families (module doc)."""
    found: list[tuple[str, str, str, list[str]]] = []
    if baseline in variants:
        if UNADAPTED in variants:
            found.append(("domain-gain", baseline, UNADAPTED, ["PPL", "CPL", "CM"]))
        found += [("variant", v, baseline, _metrics(v, baseline, ("PPL", "CPL", "CM")))
                  for v in variants if v not in (baseline, UNADAPTED)]
    for v in variants:
        control = control_for(v) or window_control(v, variants)
        if control in variants:
            found.append(("temporal-gain", v, control, ["PPL", "CPL"]))
    for v in variants:
        reference = lookup(v).compared_with
        if reference in variants and reference != baseline:
            found.append(("output-layer", v, reference,
                          _metrics(v, reference, ("PPL", "CPL", "CM"))))
    return found


def model_claims(runs: Mapping[tuple[str, int], object], variants: Sequence[str],
                 seeds: RunSeeds, period: str, baseline: str = BASELINE,
                 groups: Mapping[str, str] | None = None) -> list[Claim]:
    """Every claim of the three families (module doc) for the runs of ``variants`` (each with
    its ``seeds``); ``groups``: each abstract's group (none: abstracts independent)."""
    return [_claim(runs, family, a, b, seeds, period, m, groups or {})
            for family, a, b, metrics in comparisons(variants, baseline) for m in metrics]


def venue_clustering(runs: Mapping[tuple[str, int], object], variants: Sequence[str],
                     seeds: RunSeeds, period: str, baseline: str,
                     groups: Mapping[str, str]) -> list[dict[str, object]]:
    """For each PPL comparison: how much the abstracts of one group move together — the
    intra-cluster correlation of the per-abstract contributions of A − B (run-averaged) and the
    design effect (the grouped document variance over the independent one,
    :mod:`pipeline.stats.clusters`); empty without groups."""
    rows: list[dict[str, object]] = []
    for family, a, b, metrics in comparisons(variants, baseline):
        if "PPL" not in metrics:
            continue
        keys, nll_a, tokens = nll_matrix(runs, a, seeds[a], period, "PPL")
        _, nll_b, _ = nll_matrix(runs, b, seeds[b], period, "PPL")
        labels = group_labels(keys, groups)
        if labels is None:
            return []
        diff = nll_a.mean(axis=1) - nll_b.mean(axis=1)
        u = diff - float(fixed_sum(diff)) / float(tokens.sum()) * tokens
        rows.append({"family": family, "a": display_name(a), "b": display_name(b),
                     "icc": rounded(intra_cluster_correlation(u, labels)),
                     "design_effect": rounded(design_effect(u, labels)),
                     "groups": len(set(labels)),
                     "effective_size": rounded(effective_size(labels))})
    return rows


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
                      "to its control. A continued Baseline's control is the continued Baseline "
                      "of the widest window in the run: the same extra steps from the same "
                      "Baseline, on all its {noun}s rather than the latest."),
    "output-layer": ("Output layers (papers 002, 004)",
                     "Output-layer variants against each other (against the Baseline: the first "
                     "family)."),
}


def verdict_sections(verdicts: Sequence[Verdict], seeds: RunSeeds, noun: str,
                     grouped: bool = False) -> list[str]:
    """Markdown lines: one subsection per family with its table and one sentence per verdict;
    ``grouped``: the abstracts were resampled by group."""
    counts = sorted({len(mine) for mine in seeds.values()}, reverse=True)
    runs, many = " or ".join(map(str, counts)), counts != [1]
    parts = ["", "## Verdicts", "",
             "Every claim below is a record of `reports/verdicts.json` (schema: "
             "`docs/verdicts.md`). Test of PPL and CPL: a t test over the trained runs, paired "
             "by seed (the run part of the variance from the per-seed differences, over the "
             "seeds both sides ran) where they share at least 3 seeds and Welch's otherwise, "
             f"with the variance of the test {noun}'s abstracts added (abstracts paired: every "
             "model scores the same ones; "
             + ("the abstracts of one venue resampled together, as they share topics and style: "
                "the cluster-robust variance, `pipeline/stats/clusters.py`"
                if grouped else "abstracts taken as independent: the corpus names no venue")
             + "); of CM: Welch's t over per-run means. Their "
             "false-positive rates and coverage are simulated in `reports/calibration.json`. "
             "PPL and CPL effects are relative "
             "changes of A against B, CM effects differences of the mean. p-values are "
             "Holm-adjusted within each family; MDE is the smallest effect each test would find "
             "with 80 % power at the family's strictest Holm level; a variant with fewer than 3 "
             f"trained runs is untested. Runs per variant here: {runs} "
             f"(seed{'s' if many else ''} {seeds_text(seeds)})."]
    for family, (title, text) in FAMILY_TEXT.items():
        members = [v for v in verdicts if v.family == family]
        if not members:
            continue
        parts += ["", f"### {title}", "", text.format(noun=noun), "", table(members), ""]
        parts += [f"- {sentence(v)}" for v in members]
    return parts


def report_verdicts(runs: Mapping[tuple[str, int], object], variants: Sequence[str],
                    seeds: RunSeeds, baseline: str, anchors: AnchorInputs | None = None,
                    groups: Mapping[str, str] | None = None
                    ) -> tuple[list[Verdict], list[str], list[dict[str, object]]]:
    """Every verdict of the results report, its Markdown sections and the venue clustering of
    its PPL comparisons (:func:`venue_clustering`): the three families on the test period and,
    with ``anchors``, the ``cm-anchor`` family (its section after them); ``groups``: each
    abstract's group (none: abstracts independent)."""
    test = runs[(variants[0], common_seeds(seeds)[0])].split_period("test")   # type: ignore[attr-defined]
    verdicts = judge(model_claims(runs, variants, seeds, test, baseline, groups))
    clustering = venue_clustering(runs, variants, seeds, test, baseline, groups or {})
    sections = verdict_sections(verdicts, seeds, NOUN[kind_of(test)], bool(clustering))
    sections += clustering_section(clustering, NOUN[kind_of(test)])
    if anchors is not None:
        anchor_verdicts, section = anchors_section(runs, variants, seeds, anchors)
        verdicts, sections = verdicts + anchor_verdicts, [*sections, "", section]
    return verdicts, sections, clustering


def clustering_section(rows: Sequence[Mapping[str, object]], noun: str) -> list[str]:
    """Markdown lines: the venue clustering of each PPL comparison (none without groups)."""
    if not rows:
        return []
    first = rows[0]
    lines = ["", "### Venue clusters", "",
             f"The test {noun}'s abstracts fall in {first['groups']} venues, and an abstract sits "
             f"in a venue of {float(first['effective_size']):.0f} abstracts on average "
             "(Σ m²/n). How much a venue's abstracts move together in each PPL comparison: the "
             "intra-cluster correlation of the per-abstract contributions of A − B (run means) "
             "and the design effect, the venue-grouped document variance over the independent "
             "one. The verdicts above use the grouped variance.", "",
             "| A | B | ICC | design effect |", "|---|---|---:|---:|"]
    lines += [f"| {r['a']} | {r['b']} | {float(r['icc']):+.3f} | {float(r['design_effect']):.1f} |"
              for r in rows]
    return lines
