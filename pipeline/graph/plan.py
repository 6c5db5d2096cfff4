"""The structural params, validated, and the feature years they imply.

Only the params that decide the graph's *shape* are read here (split years, window, variants,
seeds, ``train.base``, ``score.years``, the forecast years); every other value stays a ``${...}``
template in a stage's ``cmd``, so editing it needs no regeneration. Feature years are derived,
never listed by hand: every year in the history of a training year, the dev year, a scored year,
a forecast year, or a year a report reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.features.windows import bucket_years, history_years
from pipeline.infra.errors import UserError
from pipeline.models.registry import lookup

# The params that decide the graph's shape; the `graph` stage declares them.
STRUCTURE = ["split", "features.window", "experiment", "train.base", "score.years", "forecast.year",
             "forecast.backtest_years"]


def get(params: Mapping[str, Any], dotted: str) -> Any:
    """``params["a"]["b"]`` for ``"a.b"``; a missing key is a user error naming it."""
    value: Any = params
    for key in dotted.split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise UserError(f"params.yaml has no `{dotted}`", path="params.yaml",
                            fix=f"add `{dotted}` (see the README's \"Parameters and profiles\")")
        value = value[key]
    return value


def feature_kinds(variant: str) -> tuple[str, ...]:
    """Per-year feature files a variant's train/score stages read: none, frequencies, or both.

    ``load_history`` always reads the frequency files (they give the ``observed`` mask); the
    embeddings only when the bias reads them.
    """
    return lookup(variant).feature_files


class Plan:
    """The structural params, validated, and the feature years they imply."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.window = int(get(params, "features.window"))
        first, last = int(get(params, "split.train_first")), int(get(params, "split.train_last"))
        self.dev, self.test = int(get(params, "split.dev_year")), int(get(params, "split.test_year"))
        self.train_years = list(range(first, last + 1))
        self.score_years = [int(y) for y in get(params, "score.years")]
        self.variants = [str(v) for v in get(params, "experiment.variants")]
        self.seeds = [int(s) for s in get(params, "experiment.seeds")]
        self.base = str(get(params, "train.base"))
        self.forecast_year = int(get(params, "forecast.year"))
        self.backtest_years = [int(y) for y in get(params, "forecast.backtest_years")]
        self._validate()

    def _validate(self) -> None:
        def bad(what: str, key: str, fix: str) -> UserError:
            return UserError(what, path=f"params.yaml: {key}", fix=fix)

        if self.window < 1:
            raise bad(f"features.window must be >= 1, got {self.window}", "features.window",
                      "use the number of history years m (paper: 2)")
        if not self.train_years or not self.train_years[-1] < self.dev < self.test:
            raise bad("split years must satisfy train_first <= train_last < dev_year < test_year",
                      "split", "fix the four years")
        if len(set(self.score_years)) != len(self.score_years):
            raise bad(f"score.years must list distinct years, got {self.score_years}", "score.years",
                      f"e.g. [{self.dev}, {self.test}] (the dev and test year)")
        for variant in self.variants:
            try:
                lookup(variant)
            except UserError as err:
                raise bad(err.what, "experiment.variants", err.fix or "fix the variant name") from None
            except ValueError as err:
                raise bad(str(err), "experiment.variants", "fix the variant name") from None
            n = re.fullmatch(r"baseline-(\d+)", variant)
            if n and not 1 <= int(n.group(1)) <= len(self.train_years):
                raise bad(f"{variant} needs 1 .. {len(self.train_years)} training years",
                          "experiment.variants", "use baseline-N with N <= the number of training years")
        if len(set(self.variants)) != len(self.variants) or len(set(self.seeds)) != len(self.seeds):
            raise bad("experiment.variants and experiment.seeds must not repeat", "experiment",
                      "list each variant and seed once")
        if self.base not in ("joint", "shared"):
            raise bad(f"train.base must be joint or shared, got {self.base!r}", "train.base",
                      "joint: every variant fine-tunes the LM; shared: temporal variants start "
                      "from the trained Baseline with the LM frozen")
        if len(set(self.backtest_years)) != len(self.backtest_years) or any(
                not self.train_years[-1] < y < self.forecast_year for y in self.backtest_years):
            raise bad(f"forecast.backtest_years must be distinct years after the training years "
                      f"and before forecast.year {self.forecast_year}, got {self.backtest_years}",
                      "forecast.backtest_years", f"e.g. [{self.dev}, {self.test}]")
        if self.base == "shared" and "baseline" not in self.variants:
            raise bad("train.base: shared starts every temporal variant from the Baseline model, "
                      "but `baseline` is not among experiment.variants", "train.base",
                      "add baseline to experiment.variants, or use train.base: joint")

    @property
    def runs(self) -> list[tuple[str, int]]:
        """Every (variant, seed) pair, variants outermost: the order the stages are written in."""
        return [(v, s) for v in self.variants for s in self.seeds]

    def history(self, years: Iterable[int]) -> list[int]:
        return sorted({h for y in years for h in history_years(y, self.window)})

    @property
    def train_history(self) -> list[int]:
        """Feature years training reads: the history of every training year and the dev year."""
        return self.history([*self.train_years, self.dev])

    @property
    def scored_years(self) -> list[int]:
        """The score stage always scores the dev and test year, and every year of score.years."""
        return sorted({self.dev, self.test, *self.score_years})

    @property
    def extra_years(self) -> list[int]:
        """Scored years outside the dev and test splits: read from the corpus table."""
        return [y for y in self.scored_years if y not in (self.dev, self.test)]

    @property
    def score_history(self) -> list[int]:
        return self.history(self.scored_years)

    @property
    def forecast_years(self) -> list[int]:
        return sorted({self.forecast_year, *self.backtest_years})

    @property
    def forecast_history(self) -> list[int]:
        """A forecast of Y reads the history of Y, and of Y-1 for the predicted change."""
        return self.history(y for f in self.forecast_years for y in (f, f - 1))

    @property
    def report_years(self) -> list[int]:
        """Frequency years the report reads: the buckets' years for each scored year, and the
        training years for the unigram reference perplexity."""
        buckets = {y for s in self.scored_years for y in bucket_years(s, self.window)}
        return sorted(buckets | set(self.train_years))

    @property
    def forecast_report_years(self) -> list[int]:
        """Observed frequencies the forecast report reads (as stages/forecast_report.py does):
        each backtest year and its history, and the history of the forecast year."""
        backtests = {y for b in self.backtest_years for y in (b, *history_years(b, self.window))}
        return sorted(backtests | set(history_years(self.forecast_year, self.window)))

    def years(self, kind: str) -> list[int]:
        """Years whose ``kind`` features some stage reads: frequencies for the reports and the
        plot too; embeddings only when a contextual variant is trained."""
        if not any(kind in feature_kinds(v) for v in self.variants) and kind != "frequencies":
            return []
        years = {*self.train_history, *self.score_history, *self.forecast_history}
        if kind == "frequencies":
            years |= {*self.report_years, *self.forecast_report_years}
        return sorted(years)
