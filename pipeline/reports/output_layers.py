"""The results report's comparison of output layers (issue 18 §4): does contextual temperature
(paper 002) help, does history add anything over context alone (our temporal-temperature), and
where does a continuous-output model (paper 004) stand?

Each question is a pair of variants compared on the test period with the tests of Table 3
(:func:`pipeline.reports.results.compare`: exact sign test over abstracts for PPL/CPL, rank-sum
over generated abstracts for CM; items averaged over seeds first). A pair is only stated as one
helping the other when the test says so at p < 0.05 *and* at least :data:`MIN_SEEDS` seeds back
it; with fewer seeds the verdict is marked indicative (issue 20 §4). A continuous model's PPL/CPL
are not a softmax's (:func:`pipeline.reports.results.comparable`), so its row compares CM only and
points to the long-tail report for next-word accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.corpus.periods import NOUN, kind_of
from pipeline.models.registry import display_name, lookup
from pipeline.reports.results import HIGHER_IS_BETTER, METRICS, Run, comparable, compare

ALPHA = 0.05
MIN_SEEDS = 3
# (question, variant, reference): what each comparison asks.
QUESTIONS = (
    ("Does contextual temperature help?", "temperature", "baseline"),
    ("Does history add anything over context alone?", "temporal-temperature", "temperature"),
    ("Does temperature with history help over the plain LM?", "temporal-temperature", "baseline"),
)


def _verdict(delta: float, p: float, metric: str) -> str:
    if p >= ALPHA:
        return "no detectable difference"
    better = (delta > 0) == HIGHER_IS_BETTER[metric]
    return "better" if better else "worse"


def _row(runs: dict[tuple[str, int], Run], variant: str, reference: str, seeds: Sequence[int],
         period: str, metric: str) -> str:
    mean = {v: sum(float(runs[(v, s)].period_metrics(period)[metric]) for s in seeds) / len(seeds)
            for v in (variant, reference)}
    delta = mean[variant] - mean[reference]
    test = compare(runs, variant, reference, seeds, period, metric)
    digits = 4 if metric == "cm" else 2
    change = f"{delta / mean[reference]:+.1%}" if mean[reference] else "—"   # CM can be 0
    return (f"| {metric.upper()} | {mean[variant]:.{digits}f} | {mean[reference]:.{digits}f} | "
            f"{change} | {test.p_value:.3g} | {_verdict(delta, test.p_value, metric)} |")


def output_layer_section(runs: dict[tuple[str, int], Run], variants: Sequence[str],
                         seeds: Sequence[int]) -> list[str]:
    """Markdown lines of the section (empty when no output-layer variant was run)."""
    layered = [v for v in variants if lookup(v).output_layer]
    if not layered:
        return []
    period = runs[(variants[0], seeds[0])].split_period("test")
    noun = NOUN[kind_of(period)]
    strength = (f"{len(seeds)} seeds" if len(seeds) >= MIN_SEEDS else
                f"**{len(seeds)} seed{'s' if len(seeds) > 1 else ''}: every verdict below is "
                f"indicative only** (a claim needs >= {MIN_SEEDS} seeds)")
    parts = ["", "## Output layers: contextual temperature and continuous output (papers 002, 004)",
             "", f"Test {noun} {period}; {strength}. Verdict: the variant is better or worse than "
             f"the reference where the Table 3 test gives p < {ALPHA}, else no detectable "
             "difference."]
    for question, variant, reference in QUESTIONS:
        if variant in variants and reference in variants:
            parts += ["", f"**{question}** {display_name(variant)} vs {display_name(reference)}:",
                      "", "| Metric | " + f"{display_name(variant)} | {display_name(reference)} | "
                      "change | p | verdict |", "|---|---:|---:|---:|---:|---|"]
            parts += [_row(runs, variant, reference, seeds, period, m) for m in METRICS]
    for variant in (v for v in layered if not comparable(v, "ppl")):
        if "baseline" in variants:
            parts += ["", f"**Continuous output.** {display_name(variant)} vs Baseline: its PPL and "
                      "CPL are of another distribution (†, Table 3), so only CM is compared here; "
                      "its next-word top-1/top-10 accuracy and the distinct words it gets right "
                      "(types) are in `reports/longtail.md`, beside every other model's.", "",
                      "| Metric | " + f"{display_name(variant)} | Baseline-all | change | p | "
                      "verdict |", "|---|---:|---:|---:|---:|---|",
                      _row(runs, variant, "baseline", seeds, period, "cm")]
    return parts
