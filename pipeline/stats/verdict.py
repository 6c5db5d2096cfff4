"""The verdict engine: every claim a report makes, as one record with its test.

A report states a comparison as a :class:`Claim` — forecaster or model ``a`` against ``b`` on one
metric, the effect and its 95 % interval, the p-value of the test, what was resampled (``unit``)
and how many of it (``n``), and how many trained runs each side had (``seeds``). :func:`judge`
adjusts the p-values of each family (Holm, :mod:`pipeline.stats.multiple`) and turns every claim
into a :class:`Verdict`:

* ``better`` / ``worse``: the adjusted p-value is below :data:`ALPHA` and the effect says which;
* ``not distinguishable`` otherwise, with its **minimal detectable effect** (``mde``): the
  effect the test finds with 80 % power at the strictest level Holm may apply in the family
  (α / m), so a null says how large an effect it would have detected, not just "nothing";
* ``untested`` when the claim could not be tested: a side that is a trained model with fewer than
  :data:`MIN_SEEDS` runs (its run-to-run spread is unknown: one seed can flip the order), a
  zero-width interval (nothing varies to test against), too few units. The ``reason`` says which;
  an untested record is never shown as a result.

**Intervals that agree with the verdict.** ``ci`` is the test's unadjusted 95 % interval:
it excludes zero wherever Holm says ``better`` or ``worse`` (an adjusted p below α has a raw p
below α). ``ci_family`` is the family-wise interval, Bonferroni's at ``1 − α/m`` over the
family's ``m`` tested claims: it contains zero wherever Holm says ``not distinguishable`` (a raw
p at or below α/m is always rejected by Holm's first steps). A null is shown with both, labelled,
so that an unadjusted interval clear of zero beside a Holm null reads as what it is.

``seeds`` is read from the data by the test (:mod:`pipeline.stats.comparisons`): the runs of a
trained side, 0 for a side without training (a count-based forecaster, a sampler). The records
go to ``reports/verdicts.json`` (stage ``verdicts``), the reports render them with
:func:`sentence`; no verdict is written by hand. Schema: ``docs/verdicts.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Literal

from pipeline.stats.comparisons import TestResult, relative_percent, t_result
from pipeline.stats.multiple import holm
from pipeline.stats.power import POWER, mde_function

ALPHA = 0.05
MIN_SEEDS = 3
VERDICTS = ("better", "worse", "not distinguishable", "untested")
FAMILIES = ("variant", "domain-gain", "temporal-gain", "output-layer", "forecast-vocabulary",
            "forecast-trend", "semantic-change", "cm-anchor", "forecast-skill", "signal")
SIGNIFICANT_DIGITS = 6

Direction = Literal["lower", "higher"]


@dataclass(frozen=True)
class Claim:
    """One comparison before adjustment: is ``a`` better than ``b`` on ``metric``?

    ``effect`` is ``a``'s value minus ``b``'s in ``effect_unit`` (negative is better when
    ``better_when == "lower"``); ``ci`` its 95 % interval; ``p`` the two-sided p-value of ``test``
    (NaN: not tested, say why in ``note``). ``unit``: what was resampled ("documents",
    "documents and runs", ...), ``n`` how many. ``seeds``: runs of (a, b); 0 = a side with no
    run-to-run spread (no training, or a frozen model). ``scope`` splits a report's family
    (for example the backtest period); ``holm_scope``, where set, replaces it as the Holm family's
    split, so that claims of several scopes are corrected together (per-origin claims across
    every origin of a horizon) while each keeps its own record id."""

    report: str
    family: str
    a: str
    b: str
    metric: str
    effect: float
    ci: tuple[float, float]
    p: float
    test: str
    unit: str
    n: int
    seeds: tuple[int, int]
    better_when: Direction = "lower"
    effect_unit: str = ""
    scope: str = ""
    note: str = ""
    holm_scope: str | None = field(default=None, compare=False, repr=False)
    mde_of: Callable[[float], float] | None = field(default=None, compare=False, repr=False)
    ci_of: Callable[[float], tuple[float, float]] | None = field(default=None, compare=False,
                                                                 repr=False)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown verdict family {self.family!r}; expected one of {FAMILIES}")
        if self.better_when not in ("lower", "higher"):
            raise ValueError(f"better_when must be 'lower' or 'higher', got {self.better_when!r}")


@dataclass(frozen=True)
class Verdict(Claim):
    """A judged claim: ``p_adjusted`` (Holm within its family), ``verdict`` and its ``reason``."""

    p_adjusted: float = float("nan")
    verdict: str = "not distinguishable"
    reason: str = ""
    family_size: int = 0
    mde: float = float("nan")
    ci_family: tuple[float, float] = (float("nan"), float("nan"))

    def as_record(self) -> dict[str, object]:
        """The JSON record (floats to :data:`SIGNIFICANT_DIGITS` significant digits: a verdict
        is not a measurement store, and the last digits of a float depend on the CPU)."""
        record = {"id": self.id, **{f.name: getattr(self, f.name) for f in fields(self)
                                    if f.name not in ("holm_scope", "mde_of", "ci_of")}}
        for key in ("effect", "p", "p_adjusted", "mde"):
            record[key] = rounded(record[key])
        record["ci"] = [rounded(x) for x in self.ci]
        record["ci_family"] = [rounded(x) for x in self.ci_family]
        record["seeds"] = list(self.seeds)
        return record

    @property
    def id(self) -> str:
        """The record's name, unique in ``reports/verdicts.json``: what prose cites."""
        return "/".join(x for x in (self.report, self.family, self.scope, self.a, self.b,
                                    self.metric) if x)


def rounded(x: float) -> float | None:
    """``x`` to :data:`SIGNIFICANT_DIGITS` significant digits, None for NaN: a record's float."""
    if x is None or math.isnan(x):
        return None
    return float(f"{x:.{SIGNIFICANT_DIGITS}g}")


def _family(claim: Claim) -> tuple[str, str, str]:
    """The claims Holm corrects together: a report's family within one scope, or within the
    claim's ``holm_scope`` where it spans several."""
    return (claim.report, claim.family,
            claim.scope if claim.holm_scope is None else claim.holm_scope)


def judge(claims: Iterable[Claim], alpha: float = ALPHA, *,
          words_only: bool = False) -> list[Verdict]:
    """Every claim judged (module doc), in the input order; Holm within each family.

    ``words_only``: the verdicts without their ``mde`` and ``ci_family`` (NaN), for a simulation
    that reads only the words of thousands of verdicts: the MDE's root search over the
    noncentral t is most of the time of judging one claim."""
    claims = list(claims)
    families: dict[tuple[str, str, str], list[int]] = {}
    for i, c in enumerate(claims):
        families.setdefault(_family(c), []).append(i)
    adjusted = [float("nan")] * len(claims)
    sizes = [0] * len(claims)
    for members in families.values():
        # an untested claim (no p, or a trained side with too few runs) is not in Holm's m
        ps = [math.nan if _short(claims[i]) else claims[i].p for i in members]
        adj = holm(ps)
        tested = sum(not math.isnan(p) for p in ps)
        for i, a in zip(members, adj):
            adjusted[i], sizes[i] = a, tested
    return [_decide(c, adjusted[i], sizes[i], alpha, words_only) for i, c in enumerate(claims)]


def claim_of(result: TestResult, *, report: str, family: str, a: str, b: str, metric: str,
             scale: str = "identity", effect_unit: str = "", better_when: Direction = "lower",
             scope: str = "") -> Claim:
    """The claim of one test's result. ``scale="relative"``: the test's effect is a log ratio
    (log PPL), shown as a relative change in per cent (``effect_unit`` "% <metric>")."""
    convert = relative_percent if scale == "relative" else (lambda x: x)
    ci = tuple(math.nan if math.isnan(x) else convert(x) for x in result.ci)

    def ci_of(level: float) -> tuple[float, float]:
        lo, hi = t_result(result.effect, result.se, result.df, result.n, result.runs,
                          result.test, result.unit, 1 - level).ci
        return (math.nan, math.nan) if math.isnan(lo) else (convert(lo), convert(hi))

    return Claim(report, family, a, b, metric, convert(result.effect), ci, result.p,  # type: ignore[arg-type]
                 result.test, result.unit, result.n, result.runs, better_when=better_when,
                 effect_unit=effect_unit, scope=scope, note=result.note,
                 mde_of=mde_function(result.se, result.df, scale), ci_of=ci_of)


def _short(c: Claim) -> list[str]:
    """The trained sides of ``c`` with fewer than :data:`MIN_SEEDS` runs."""
    return [name for name, runs in zip((c.a, c.b), c.seeds) if 0 < runs < MIN_SEEDS]


def _decide(c: Claim, p_adj: float, family_size: int, alpha: float,
            words_only: bool = False) -> Verdict:
    base = {f: getattr(c, f) for f in Claim.__dataclass_fields__}
    short = _short(c)
    mde, ci_family = math.nan, (math.nan, math.nan)
    if short:
        verdict = "untested"
        reason = (f"{' and '.join(short)}: fewer than {MIN_SEEDS} trained runs, so the run-to-run "
                  "spread is unknown")
    elif math.isnan(c.p):
        verdict, reason = "untested", c.note or "no test applies"
    else:
        level = alpha / max(family_size, 1)
        if not words_only:
            mde = c.mde_of(level) if c.mde_of is not None else math.nan
            ci_family = c.ci_of(level) if c.ci_of is not None else (math.nan, math.nan)
        if p_adj < alpha:
            good = (c.effect < 0) == (c.better_when == "lower")
            verdict = "better" if good else "worse"
            reason = f"Holm-adjusted p = {p_adj:.3g} < {alpha} in a family of {family_size}"
        else:
            verdict = "not distinguishable"
            reason = f"Holm-adjusted p = {p_adj:.3g} ≥ {alpha} in a family of {family_size}"
            if not math.isnan(mde):
                reason += (f"; smallest effect detectable with {POWER:.0%} power: "
                           f"±{_magnitude(mde)}{_unit(c)}")
    return Verdict(**base, p_adjusted=p_adj, verdict=verdict, reason=reason,
                   family_size=family_size, mde=mde, ci_family=ci_family)


def _unit(c: Claim) -> str:
    return " %" if c.effect_unit.startswith("%") else (f" {c.effect_unit}" if c.effect_unit else "")


def _magnitude(x: float) -> str:
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}"


def _number(x: float) -> str:
    return f"{x:+.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:+.2e}"


def sentence(v: Verdict) -> str:
    """The verdict as one Markdown sentence that quotes its record."""
    where = f" ({v.scope})" if v.scope else ""
    lo, hi = v.ci
    if v.effect_unit.startswith("%"):        # a relative change: "PPL change -4.5 %"
        unit, what = " %", "change"
    else:
        unit, what = (f" {v.effect_unit}" if v.effect_unit else ""), "difference"
    ci = "" if math.isnan(lo) else f", 95 % CI [{_number(lo)}, {_number(hi)}]"
    if v.verdict == "not distinguishable" and not math.isnan(v.ci_family[0]):
        ci = (f", 95 % CI unadjusted [{_number(lo)}, {_number(hi)}], family-wise "
              f"{_confidence(v)} CI [{_number(v.ci_family[0])}, {_number(v.ci_family[1])}]")
    stats = (f"{v.metric} {what} {_number(v.effect)}{unit}{ci}; {v.test} over {v.n} "
             f"{v.unit}; {v.reason}; record `{v.id}`")
    if v.verdict == "better":
        head = f"**{v.a}** is better than {v.b}{where}"
    elif v.verdict == "worse":
        head = f"**{v.a}** is worse than {v.b}{where}"
    elif v.verdict == "untested":
        head = f"{v.a} against {v.b} is **untested**{where}"
    else:
        head = f"{v.a} and {v.b} are **not distinguishable**{where}"
    return f"{head} ({stats})."


def _confidence(v: Verdict) -> str:
    """The family-wise interval's confidence, ``1 − α/m`` in per cent."""
    return f"{100 * (1 - ALPHA / max(v.family_size, 1)):.4g} %"


def table(verdicts: Sequence[Verdict]) -> str:
    """A Markdown table of verdicts (one row each), for a report section: the unadjusted 95 %
    interval and the family-wise one (``1 − α/m``, Bonferroni), which contains zero wherever the
    verdict is a Holm null."""
    rows = ["| A | B | metric | effect [95 % CI] | family-wise CI | p | p (Holm) | MDE (80 %) "
            "| verdict |", "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for v in verdicts:
        lo, hi = v.ci
        ci = "" if math.isnan(lo) else f" [{_number(lo)}, {_number(hi)}]"
        flo, fhi = v.ci_family
        family = "—" if math.isnan(flo) else f"[{_number(flo)}, {_number(fhi)}]"
        p = "—" if math.isnan(v.p) else f"{v.p:.3g}"
        pa = "—" if math.isnan(v.p_adjusted) else f"{v.p_adjusted:.3g}"
        mde = "—" if math.isnan(v.mde) else f"±{_magnitude(v.mde)}"
        rows.append(f"| {v.a} | {v.b} | {v.metric} | {_number(v.effect)}{ci} | {family} | {p} | "
                    f"{pa} | {mde} | {v.verdict} |")
    return "\n".join(rows)


def to_records(verdicts: Iterable[Verdict]) -> list[dict[str, object]]:
    return [v.as_record() for v in verdicts]


def from_record(record: dict[str, object]) -> Verdict:
    """A verdict back from its JSON record (None floats become NaN)."""
    values = {k: v for k, v in record.items() if k != "id"}
    for key in ("effect", "p", "p_adjusted", "mde"):
        values[key] = float("nan") if values.get(key) is None else values[key]
    values["ci"] = tuple(float("nan") if x is None else x for x in values["ci"])  # type: ignore[union-attr]
    # records of format 2 (kept reports judged before the family-wise interval) have none
    values["ci_family"] = tuple(float("nan") if x is None else x  # type: ignore[union-attr]
                                for x in values.get("ci_family") or (None, None))
    values["seeds"] = tuple(values["seeds"])  # type: ignore[arg-type]
    return Verdict(**values)  # type: ignore[arg-type]

