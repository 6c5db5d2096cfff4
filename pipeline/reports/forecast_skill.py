"""The forecast-skill report: a rolling-origin backtest of every forecaster, judged and drawn.

:func:`run_skill` runs the backtest of :mod:`pipeline.forecast.rolling` on a
:class:`pipeline.forecast.skill_inputs.SkillInput`, makes the claims of
:mod:`pipeline.forecast.skill` and judges them (:func:`pipeline.stats.verdict.judge`: Holm over
every origin of a horizon for the per-origin and trend claims, over the forecasters for the
pooled ones); :func:`write_report` writes the folder:

* ``verdicts.json``: ``{"format_version", "verdicts", "origins", "skipped", "settings"}`` — the
  records (schema ``docs/verdicts.md``), per origin the reference, each forecaster's chosen setting
  and unigram PPL, the skipped origins with their reasons, the run's settings;
* ``skill.png``: each forecaster's PPL change against the origin's reference, by origin, one
  panel per horizon;
* ``words.json``: per forecaster the words it got most right and most wrong against the reference
  (horizon 1, summed log-likelihood gain);
* ``timing.json``: wall time of each part;
* ``README.md``: what was run, the verdicts quoted from their records, the per-origin effects, the
  words, the wall time (with ``timing.json``, what differs between two runs of the same input).
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.corpus.periods import ordinal
from pipeline.evaluation.content import is_content_token
from pipeline.forecast.forecasters.base import Forecaster
from pipeline.forecast.forecasters.registry import all_forecasters, lookup
from pipeline.forecast.rolling import Rolling, rolling_origins
from pipeline.forecast.skill import (FAMILY, origin_claims, pooled_claims, trend_origin_claims,
                                     word_gains)
from pipeline.forecast.skill_inputs import SkillInput, read_skill_input
from pipeline.forecast.words import MIN_COUNT
from pipeline.infra.errors import UserError
from pipeline.infra.io import write_json
from pipeline.reports.figures import line_panels
from pipeline.stats.diebold_mariano import TESTS
from pipeline.stats.verdict import Verdict, judge, sentence, table, to_records

FORMAT_VERSION = 1
TOP_WORDS = 10


@dataclass
class SkillRun:
    """A judged backtest: the input, the rolling origins, the verdicts, word gains, timings."""

    inp: SkillInput
    rolling: Rolling
    verdicts: list[Verdict]
    gains: dict[str, np.ndarray]
    settings: dict[str, object]
    seconds: dict[str, object] = field(default_factory=dict)


def _index(periods: Sequence[str], label: str, what: str) -> int:
    if label not in periods:
        raise UserError(f"{what} {label} is not a period of the corpus's series "
                        f"({periods[0]}..{periods[-1]})", fix=f"choose {what} in that range")
    return list(periods).index(label)


def forecast_skill(abstracts: str, period: str, first: str, last: str | None,
                   horizons: Sequence[int], forecaster_names: Sequence[str] | None,
                   min_count: int | None, stopwords: frozenset[str] | set[str],
                   drop_stopwords: bool, warmup: bool = True,
                   log: Callable[[str], None] = print) -> SkillRun:
    """The backtest of the forecast-skill stage from its options: reads the corpus table
    ``abstracts`` into words by ``period`` (:func:`read_skill_input`), then :func:`run_skill`
    with the named forecasters (default: every one of the registry that enters the skill
    backtest); the wall times of each
    part are in the run's ``seconds``."""
    if any(h < 1 for h in horizons):
        raise UserError(f"horizons must be at least 1, got {list(horizons)}", path="--horizons")
    min_count = MIN_COUNT if min_count is None else min_count
    if min_count < 1:
        raise UserError(f"--min-count must be at least 1, got {min_count}", path="--min-count")
    forecasters = (all_forecasters("forecast-skill") if forecaster_names is None
                   else [lookup(n) for n in forecaster_names])
    start = time.perf_counter()
    inp = read_skill_input(abstracts, period, min_count, stopwords, drop_stopwords)
    content = inp.corpus.mask(lambda w: is_content_token(w, stopwords))
    read = time.perf_counter() - start
    run = run_skill(inp, forecasters, first, last, horizons, content, warmup=warmup, log=log)
    run.seconds["read"] = read
    run.seconds["total"] = time.perf_counter() - start
    return run


def run_skill(inp: SkillInput, forecasters: Sequence[Forecaster], first: str,
              last: str | None = None, horizons: Sequence[int] = (1, 2),
              content: np.ndarray | None = None, warmup: bool = True,
              log: Callable[[str], None] = print) -> SkillRun:
    """The whole backtest (module doc): targets ``first..last`` (default: the last complete
    period), every earlier target with enough history a warm-up origin (``warmup``);
    ``content``: the words the trend claims may rank (default: every word)."""
    start = time.perf_counter()
    periods = inp.corpus.periods
    if last is None:
        last = periods[-1] if inp.last_complete else periods[-2]
    lo = 0 if ordinal(str(first)) < ordinal(periods[0]) else _index(periods, str(first),
                                                                      "--first")
    hi = _index(periods, str(last), "--last")
    data = inp.corpus.counts()
    documents = list(inp.corpus.documents)
    seconds = {"counts": time.perf_counter() - start}
    t0 = time.perf_counter()
    rolling = rolling_origins(data, documents, forecasters, lo, hi, horizons,
                              0 if warmup else None, log)
    seconds["forecasts"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    claims = [c for o in rolling.origins for c in origin_claims(o)]
    for h in horizons:
        claims += pooled_claims(rolling, h)
    mask = np.ones(inp.corpus.vocab_size, bool) if content is None else np.asarray(content, bool)
    seconds["per-forecaster forecasts"] = {f.name: round(sum(o.seconds[f.name]
                                                              for o in [*rolling.warmup, *rolling.origins]), 2)
                                           for f in forecasters}
    t1 = time.perf_counter()
    for o in rolling.of(1):
        claims += trend_origin_claims(rolling, o, data, documents, mask)[0]
    seconds["trend claims"] = time.perf_counter() - t1
    verdicts = judge(claims)
    gains = word_gains(rolling, documents)
    seconds["claims"] = time.perf_counter() - t0
    seconds["total"] = time.perf_counter() - start
    settings = dict(kind=inp.kind, first=str(first), last=str(last), horizons=list(horizons),
                    periods=[periods[0], periods[-1]], vocab=inp.corpus.vocab_size,
                    documents=int(data.n_docs.sum()), dropped_documents=inp.corpus.dropped,
                    undated=inp.undated, before_gap=inp.before_gap,
                    last_period=f"{periods[-1]}: {inp.last_note}",
                    warmup=[f"h{o.horizon}/{o.period}" for o in rolling.warmup],
                    forecasters=[f.name for f in forecasters])
    return SkillRun(inp, rolling, verdicts, gains, settings, seconds)


def origin_rows(run: SkillRun) -> list[dict[str, object]]:
    """Per origin: period, horizon, reference, documents, tokens, per forecaster its PPL and
    chosen setting."""
    return [{"period": o.period, "horizon": o.horizon, "reference": o.reference,
             "reference_note": o.reference_note, "documents": len(o.lengths),
             "tokens": o.n_tokens,
             "forecasters": {name: {"ppl": float(f"{math.exp(o.log_ppl(name)):.6g}"),
                                    "setting": dict(c.setting), "choice": c.note}
                             for name, c in o.chosen.items()}}
            for o in run.rolling.origins]


def word_table(run: SkillRun, top: int = TOP_WORDS) -> dict[str, dict[str, list]]:
    """Per forecaster the ``top`` words with the largest and smallest log-likelihood gain over
    the reference (nats, summed over the horizon-1 origins)."""
    vocab = run.inp.corpus.vocab
    out = {}
    for name, gain in run.gains.items():
        order = np.argsort(-gain, kind="stable")
        out[name] = {"right": [[vocab[i], round(float(gain[i]), 1)] for i in order[:top]],
                     "wrong": [[vocab[i], round(float(gain[i]), 1)] for i in order[::-1][:top]]}
    return out


def skill_frame(run: SkillRun) -> pd.DataFrame:
    """period, forecaster, and the per-cent PPL change against the reference per horizon."""
    rows: dict[tuple[str, str], dict[str, object]] = {}
    for o in run.rolling.origins:
        ref = o.log_ppl(o.reference)
        for f in run.rolling.forecasters:
            row = rows.setdefault((o.period, f.name), {"period": o.period, "forecaster": f.name})
            row[f"h{o.horizon}"] = 100 * math.expm1(o.log_ppl(f.name) - ref)
    frame = pd.DataFrame(list(rows.values()))
    return frame.sort_values("period", kind="stable").reset_index(drop=True)


def write_report(run: SkillRun, out_dir: str | os.PathLike[str], command: str) -> None:
    """Every file of the report folder (module doc)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json({"format_version": FORMAT_VERSION, "verdicts": to_records(run.verdicts),
                "origins": origin_rows(run),
                "skipped": [{"period": s.period, "horizon": s.horizon, "reason": s.reason}
                            for s in run.rolling.skipped],
                "settings": run.settings}, out / "verdicts.json")
    write_json(word_table(run), out / "words.json")
    write_json({k: (round(v, 2) if isinstance(v, float) else v) for k, v in run.seconds.items()},
               out / "timing.json")
    frame = skill_frame(run)
    horizons = [c for c in ("h1", "h2") if c in frame.columns]
    for h in horizons:
        frame[h] = frame[h].astype(float)
    line_panels(frame, "period", horizons, "forecaster", out / "skill.png",
                [f"PPL change vs the reference, horizon {h[1:]} (%)" for h in horizons])
    (out / "README.md").write_text(readme(run, command), encoding="utf-8")


def origin_table(run: SkillRun, per_origin: Sequence[Verdict], horizon: int) -> list[str]:
    """Markdown: the per-cent PPL change of each forecaster against the reference at each origin
    of ``horizon`` (**bold**: `better`, *italic*: `worse`; R: the reference)."""
    origins = run.rolling.of(horizon)
    by = {(v.scope, v.a): v for v in per_origin}
    lines = [f"Horizon {horizon}: PPL change against the origin's reference (%; **better**, "
             "*worse*, plain: not distinguishable or untested; R: the reference):", "",
             "| forecaster | " + " | ".join(o.period for o in origins) + " |",
             "|---|" + "---:|" * len(origins)]
    for f in run.rolling.forecasters:
        cells = []
        for o in origins:
            v = by.get((f"h{horizon}/{o.period}", f.name))
            if v is None:
                cells.append("R")
                continue
            text = f"{v.effect:+.1f}"
            cells.append(f"**{text}**" if v.verdict == "better" else
                         f"*{text}*" if v.verdict == "worse" else text)
        lines.append(f"| {f.name} | " + " | ".join(cells) + " |")
    return lines


def _count_line(verdicts: Sequence[Verdict], name: str) -> str:
    c = Counter(v.verdict for v in verdicts if v.a == name)
    return ", ".join(f"{n} {k}" for k, n in c.items()) or "—"


def readme(run: SkillRun, command: str) -> str:
    """The report's Markdown (module doc)."""
    s, sec = run.settings, run.seconds
    names = [f.name for f in run.rolling.forecasters]
    pooled = [v for v in run.verdicts if v.family == FAMILY and v.scope.endswith("/pooled")]
    per_origin = [v for v in run.verdicts if v.family == FAMILY and not v.scope.endswith("/pooled")]
    trend = [v for v in run.verdicts if v.family != FAMILY]
    horizons = s["horizons"]
    lines = [
        "# Forecast skill: rolling-origin backtests of next period's word distribution", "",
        f"Generated by `{command}`; do not edit by hand. Corpus: {s['documents']:,} abstracts "
        f"in the {s['kind']}s {s['periods'][0]}..{s['periods'][1]} (consecutive periods; "
        f"{s['before_gap']:,} earlier abstracts before the last gap and {s['undated']:,} without a "
        f"{s['kind']} left out; {s['dropped_documents']:,} without a word), {s['vocab']:,} word "
        f"ids (lower-cased letter runs, rare words pooled; `pipeline/forecast/words.py`). Last "
        f"period {s['last_period']}. Targets {s['first']}..{s['last']}, horizons "
        f"{', '.join(map(str, horizons))}.", "",
        "Every forecast of a target period reads only the periods up to h before it; each "
        "forecaster's setting and the reference (the best stationary forecaster) are chosen on "
        "earlier origins only (`pipeline/forecast/rolling.py`); "
        + (f"{len(s['warmup'])} warm-up origins before {s['first']} (" + ", ".join(s['warmup'])
           + ") are scored for those choices and make no claim. " if s["warmup"] else
           "there are no warm-up origins before the first target. ")
        + "Skill at one origin: the PPL "
        "change against the reference on the target's abstracts, paired t over abstracts; pooled: "
        f"the mean per-origin log-PPL ratio, {TESTS['cosine']} (`pipeline/stats/diebold_mariano.py`;"
        " its false-positive rate and power at 16 origins: `reports/calibration.json`, test "
        "`forecast-skill pooled`; per-origin and trend tests: the same file).", "",
        f"**Wall time** on this machine: {sec['total']:.0f} s in all — reading and counting the "
        f"words {sec.get('read', 0.0):.0f} s, forecasts "
        f"{sec['forecasts']:.0f} s (per forecaster, every setting of its grid at every origin: "
        + ", ".join(f"{n} {t:.0f} s" for n, t in sec["per-forecaster forecasts"].items())
        + f"), trend claims {sec['trend claims']:.0f} s, tests and tables "
        f"{sec['claims'] - sec['trend claims']:.0f} s.", "",
        "![skill by origin](skill.png)", "",
        "## Pooled skill over origins", "",
    ]
    for h in horizons:
        these = [v for v in pooled if v.scope == f"h{h}/pooled"]
        lines += [f"### Horizon {h} (scope `h{h}/pooled`)", "", table(these), "",
                  *[f"- {sentence(v)}" for v in these], ""]
    lines += [
        "## Skill per origin", "",
        "Verdicts against each origin's reference (family `forecast-skill`, scope `h<h>/<Y>`; "
        "Holm over every forecaster and origin of the horizon, so that the origins can be read "
        "together; the records are in `verdicts.json`):", "",
        "| forecaster | " + " | ".join(f"horizon {h}" for h in horizons) + " |",
        "|---|" + "---|" * len(horizons),
    ]
    for name in names:
        cells = [_count_line([v for v in per_origin if v.scope.startswith(f"h{h}/")], name)
                 for h in horizons]
        lines.append(f"| {name} | " + " | ".join(c if c != "—" else "the reference at every "
                                                  "origin" for c in cells) + " |")
    for h in horizons:
        lines += ["", *origin_table(run, per_origin, h)]
    refs = Counter(o.reference for o in run.rolling.origins)
    lines += ["", "The reference (chosen on earlier origins) was " + ", ".join(
        f"{n} at {c} origin(s)" for n, c in refs.most_common()) + ".", ""]
    if run.rolling.skipped:
        lines += ["Skipped origins: " + "; ".join(f"{s_.period} (h{s_.horizon}): {s_.reason}"
                                                  for s_ in run.rolling.skipped) + ".", ""]
    lines += ["## Trend rankings (split halves)", "",
              "The split-half trend claims (`forecast-trend`, scope `h1/<Y>`) of every horizon-1 "
              "origin: the forecaster's predicted change from half A of Y−1 (scaled to its "
              "sampling noise: times the square root of the token's half-A count) against the "
              "standardised change from half B to Y (Holm over every forecaster, test and "
              "origin):", "",
              "| forecaster | rank correlation | top-k movers |", "|---|---|---|"]
    for name in names:
        rho = [v for v in trend if v.a == name and v.metric == "rank correlation"]
        mov = [v for v in trend if v.a == name and v.metric.startswith("top-")]
        if rho or mov:
            lines.append(f"| {name} | {_count_line(rho, name)} | {_count_line(mov, name)} |")
    lines += ["", "## Words each forecaster got most right and most wrong", "",
              "Summed log-likelihood gain over the reference on the horizon-1 targets (nats; "
              "positive: the forecaster gave the word's occurrences more probability):", ""]
    for name, words in word_table(run).items():
        if not np.any(run.gains[name]):
            lines += [f"- **{name}**: the reference at every origin"]
            continue
        right = ", ".join(f"*{w}* {g:+.0f}" for w, g in words["right"])
        wrong = ", ".join(f"*{w}* {g:+.0f}" for w, g in words["wrong"])
        lines += [f"- **{name}** — right: {right}; wrong: {wrong}"]
    lines += [""]
    return "\n".join(lines)
