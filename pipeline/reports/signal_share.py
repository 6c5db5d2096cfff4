"""The share of the signal each model takes: its test-PPL gain over the Baseline against the
unigram yardstick's (``reports/signal.json``, stage ``signal``: :mod:`pipeline.forecast.signal`).

The yardstick scores the test period's abstracts, cut to the tokens a model of the run's context
length predicts (scope ``<Y>/first-<n>``), under the pooled training counts and under a
same-period split-half oracle. The oracle's gain ``ln PPL_pooled − ln PPL_oracle`` is what
knowing the test period's own unigram distribution adds to the pooled level. The Baseline
trained on the training periods pooled holds that level, so a model's share of the signal is::

    share = (ln PPL_Baseline − ln PPL_model) / (ln PPL_pooled − ln PPL_oracle)

with each PPL the model's test-period PPL averaged over its seeds (Table 3's). 1 would be the
oracle's whole unigram gain added to the Baseline; 0 none of it; a negative share a loss. Where
the oracle is no better than the pooled counts (a small test period: each half's counts are
noisy) there is no yardstick and no share (NaN, shown as –). It is
a ratio of two measured gains, not a bound: a bias on a contextual LM's logits need not add what
it adds to a unigram model. Descriptive, like Table 3: which gains are real is said by the
records of the ``variant`` family (the model against the Baseline) and the ``signal`` family
(the oracle against the pooled counts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.infra.errors import UserError

POOLED, ORACLE = "pooled", "oracle"


@dataclass(frozen=True)
class Share:
    """One model's row: its mean test PPL, its change against the Baseline (%) and its share."""

    variant: str
    ppl: float
    change: float
    share: float


@dataclass(frozen=True)
class Yardstick:
    """The scope the models are read against and its pooled and oracle unigram PPL."""

    scope: str
    pooled: float
    oracle: float

    @property
    def gain(self) -> float:
        """``ln PPL_pooled − ln PPL_oracle``: the oracle's unigram gain, in nats per token."""
        return math.log(self.pooled) - math.log(self.oracle)


def yardstick(signal: Mapping[str, Any], test_period: str, max_length: int | None = None
              ) -> Yardstick:
    """The first-``n`` scope of ``signal`` (the signal stage's JSON) for ``test_period``; its
    ``max_length`` must be the models' (``n = max_length − 1`` tokens, the models' scored ones)."""
    if str(signal.get("test_period")) != str(test_period):
        raise UserError(f"the signal is of {signal.get('test_period')}, the models' test period is "
                        f"{test_period}", path="reports/signal.json",
                        fix="rerun the signal stage for this split: `dvc repro signal`")
    if max_length is not None and signal.get("max_length") != max_length:
        raise UserError(f"the signal cuts abstracts for a context of {signal.get('max_length')} "
                        f"tokens, the models read {max_length}", path="reports/signal.json",
                        fix="rerun the signal stage: `dvc repro signal`")
    scope = f"{test_period}/first-{int(signal['max_length']) - 1}"
    ppl = {row["distribution"]: float(row["ppl"]) for row in signal["table"]
           if row["scope"] == scope}
    if POOLED not in ppl or ORACLE not in ppl:
        raise UserError(f"the signal has no pooled and oracle rows for {scope}",
                        path="reports/signal.json", fix="rerun the signal stage: `dvc repro signal`")
    return Yardstick(scope, ppl[POOLED], ppl[ORACLE])


def shares(summary: Mapping[str, Mapping[str, Any]], variants: Sequence[str], baseline: str,
           stick: Yardstick) -> list[Share]:
    """Every variant's share of the signal (module doc), from the report's summary (means over
    seeds: :func:`pipeline.reports.scored_runs.summarize`), in ``variants``' order."""
    base = float(summary[baseline]["test"]["ppl"])
    rows = []
    for v in variants:
        ppl = float(summary[v]["test"]["ppl"])
        gain = math.log(base) - math.log(ppl)
        rows.append(Share(v, ppl, 100.0 * (ppl / base - 1.0),
                          gain / stick.gain if stick.gain > 0 else math.nan))
    return rows


def _share(x: float) -> str:
    return "–" if math.isnan(x) else f"{x + 0.0:+.2f}"   # + 0.0: no "-0.00"


def share_markdown(rows: Sequence[Share], stick: Yardstick, names: Mapping[str, str],
                   baseline: str) -> str:
    """The report's section: the yardstick and one row per model."""
    intro = (f"## Share of the signal\n\nThe unigram yardstick (`reports/signal.md`, scope "
             f"`{stick.scope}`: the tokens the models predict): the pooled training counts give "
             f"unigram PPL {stick.pooled:.2f}, a same-period split-half oracle {stick.oracle:.2f}, "
             f"a gain of {stick.gain:.4f} nats per token. A model's share is its test-PPL "
             f"gain over {names[baseline]} (which holds the pooled level) in log PPL, divided by "
             "the oracle's: 1 would add the oracle's whole unigram gain, 0 none "
             "(`pipeline/reports/signal_share.py`). Descriptive: whether a gain is real is said "
             "by the verdicts above and the `signal` records.\n\n")
    if stick.gain <= 0:
        intro += ("Here the oracle is no better than the pooled counts: there is no signal to "
                  "take a share of.\n\n")
    table = (f"| Model | Test PPL (mean over seeds) | change vs {names[baseline]} | share of the "
             "signal |\n|---|---:|---:|---:|\n")
    body = "".join(f"| {names[r.variant]} | {r.ppl:.2f} | {r.change + 0.0:+.2f} % | "
                   f"{_share(r.share)} |\n" for r in rows)
    return intro + table + body
