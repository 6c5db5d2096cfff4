"""The structural params, validated, and the feature periods they imply.

Only the params that decide the graph's *shape* are read here (the split's period kind and
periods, window, variants, seeds, ``train.base``, ``train.cache``, ``score.periods``, the forecast
periods); every other value stays a ``${...}`` template in a stage's ``cmd``, so editing it needs
no regeneration. Periods are labels of ``split.period``'s kind (:mod:`pipeline.corpus.periods`),
checked here, so a wrong label stops ``make graph`` naming the key; the split's own rules (labels,
window, period order) are :class:`pipeline.corpus.splits.SplitPeriods`', the ones the split stage
applies, stated once there. Every list below is in time order. Feature periods are derived, never
listed by hand: every period in the history of a training period, the dev period, a scored
period, a forecast period, or a period a report reads, and a time-free control's pooling periods
(the training periods). A variant's own settings are checked against its settings class
(:func:`check_variant_settings`). ``train.base`` is a training regime
(:mod:`pipeline.graph.regimes`, ``plan.regime``), which checks its own rules here and tells the
stages what each run starts from and which caches it reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.corpus.periods import in_time_order, ordinal, param_label, shift, span
from pipeline.corpus.splits import SplitPeriods
from pipeline.features.kinds import KINDS
from pipeline.features.windows import bucket_periods, history_periods
from pipeline.graph.defaults import missing_key
from pipeline.graph.regimes import Regime, refused, regime_for
from pipeline.infra.schema.config import GenerationSettings
from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import VARIANT_SECTION
from pipeline.models.registry import BASELINE, common_seeds, lookup, seeds_by_variant
from pipeline.variants._spec import setting_fields

# GenerationSettings' checked fields and the score.* keys that set them (forecast.n_generate
# replaces n for the forecast's generations).
DECODING = {"n": "n_generate", "max_new_tokens": "max_new_tokens",
            "min_new_tokens": "min_new_tokens", "num_beams": "num_beams", "top_k": "top_k",
            "top_p": "top_p"}

# The params that decide the graph's shape, and those the plan cross-checks before any stage runs
# (lm.base with train.base; the decoding settings of score and forecast, and the generation
# length with the context length); the `graph` stage declares them.
STRUCTURE = ["split", "features.window", "experiment", "train.base", "train.cache",
             "score.periods", "score.generate_dev", "forecast.period",
             "forecast.backtest_periods", "forecast.seeds", "semantic_change.run",
             "semantic_change.first", "semantic_change.last", "semantic_change.targets",
             "semantic_benchmark.semeval",
             "lm.base", "train.max_length", *(f"score.{key}" for key in DECODING.values()),
             "forecast.n_generate"]


def get(params: Mapping[str, Any], dotted: str) -> Any:
    """``params["a"]["b"]`` for ``"a.b"``; a missing key is a user error naming it (the graph
    builds its plan from params completed with the schema defaults: :mod:`.defaults`)."""
    value: Any = params
    for key in dotted.split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise missing_key(dotted)
        value = value[key]
    return value


def check_variant_settings(params: Mapping[str, Any]) -> None:
    """``variants.<name>`` of ``params`` checked against each variant's settings class: a
    section for an unknown variant or one without settings, or a key its settings class does not
    define, is a :class:`UserError` naming it (a key left out takes its default)."""
    section = params.get(VARIANT_SECTION) or {}
    if not isinstance(section, Mapping):
        raise UserError(f"params.yaml `{VARIANT_SECTION}` must map variant names to their "
                        "settings", path=f"params.yaml: {VARIANT_SECTION}",
                        fix="e.g. variants: {context2: {alpha: learned}}")
    for name, values in section.items():
        where = f"params.yaml: {VARIANT_SECTION}.{name}"
        try:
            settings = lookup(str(name)).settings
        except UserError as err:
            raise UserError(err.what, path=where, fix=err.fix) from None
        if settings is None:
            raise UserError(f"the {name} variant has no settings", path=where,
                            fix=f"remove {VARIANT_SECTION}.{name}")
        known = {f.name for f in setting_fields(settings)}
        unknown = sorted(set(values or {}) - known)
        if unknown:
            raise UserError(f"{VARIANT_SECTION}.{name} has no setting {', '.join(unknown)}",
                            path=where, fix=f"its settings are {', '.join(sorted(known))} "
                                            f"({settings.__module__})")


def feature_kinds(variant: str) -> tuple[str, ...]:
    """Per-period feature files a variant's train/score stages read: none, frequencies, or both.

    ``load_history`` always reads the frequency files (they give the ``observed`` mask); the
    embeddings only when the bias reads them.
    """
    return lookup(variant).feature_files


class Plan:
    """The structural params, validated, and the feature periods they imply."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        # the split's rules (period kind, labels, window >= 1, train_first <= train_last < dev <
        # test) are the corpus layer's, stated once there for the split stage and for this graph
        self.split = SplitPeriods.from_params(
            str(get(params, "split.period")), get(params, "split.train_first"),
            get(params, "split.train_last"), get(params, "split.dev"), get(params, "split.test"),
            window=int(get(params, "features.window")))
        self.kind, self.window = self.split.kind, self.split.window
        self.dev, self.test = self.split.dev, self.split.test
        self.train_periods = self.split.train_periods
        first = self.split.train_first

        def labels(key: str) -> list[str]:
            return [param_label(v, self.kind, key) for v in get(params, key) or []]

        def one(key: str) -> str:
            return param_label(get(params, key), self.kind, key)

        self.score_periods = labels("score.periods")
        self.variants = [str(v) for v in get(params, "experiment.variants")]
        self.seeds = [int(s) for s in get(params, "experiment.seeds")]
        self.other_seeds = [int(s) for s in get(params, "experiment.other_seeds") or []]
        # each variant's seeds: the registry's rule (the sides of a temporal-gain claim and the
        # Baseline run every seed), so that the report stages derive the same runs
        self.variant_seeds = {v: list(s) for v, s in seeds_by_variant(
            self.variants, self.seeds, self.other_seeds).items()}
        # forecasts default to the seeds every variant runs
        self.common_seeds = common_seeds(self.variant_seeds)
        self.forecast_seeds = ([int(s) for s in get(params, "forecast.seeds") or []]
                               or self.common_seeds)
        self.regime: Regime = regime_for(str(get(params, "train.base")))
        self.cache = get(params, "train.cache")
        self.adapt_layers = int(get(params, "train.adapt_layers"))
        self.lm_base = str(get(params, "lm.base"))
        self.context_length = int(get(params, "train.max_length"))
        self.decoding = {field: get(params, f"score.{key}") for field, key in DECODING.items()}
        self.forecast_generate = get(params, "forecast.n_generate")
        forecast = get(params, "forecast.period")
        # null: the period after the latest one the run knows the text of (test, score.periods)
        self.forecast_period = (shift(in_time_order([self.test, *self.score_periods])[-1], 1)
                                if forecast is None else one("forecast.period"))
        self.backtest_periods = labels("forecast.backtest_periods")
        self.generate_dev = bool(get(params, "score.generate_dev"))
        self.semantic = bool(get(params, "semantic_change.run"))
        self.semantic_first = self._group(get(params, "semantic_change.first"), first,
                                          "semantic_change.first")
        # null: the first training period and the test period, the widest span of known text
        self.semantic_last = self._group(get(params, "semantic_change.last"), self.test,
                                         "semantic_change.last")
        targets = get(params, "semantic_change.targets")
        self.semantic_targets = None if targets is None else str(targets)
        semeval = get(params, "semantic_benchmark.semeval")
        self.semeval = None if semeval is None else str(semeval)
        # each variant's settings as params.yaml gives them (the forecast features read theirs)
        self.variant_params: Mapping[str, Any] = params.get(VARIANT_SECTION) or {}
        self._validate()
        check_variant_settings(params)

    def _group(self, value: Any, default: str, key: str) -> list[str]:
        """A group of periods: null (``default``), a label, or an inclusive range ``A..B``."""
        if value is None:
            return [default]
        ends = [param_label(v, self.kind, key) for v in str(value).split("..")]
        if len(ends) > 2 or ordinal(ends[0]) > ordinal(ends[-1]):
            raise UserError(f"{key} = {value!r} is not a period or a range FIRST..LAST",
                            path=f"params.yaml: {key}", fix="e.g. 2017 or 2015..2017")
        return span(ends[0], ends[-1])

    def _validate(self) -> None:
        bad = refused

        if len(set(self.score_periods)) != len(self.score_periods):
            raise bad(f"score.periods must list distinct periods, got {self.score_periods}",
                      "score.periods", f"e.g. [{self.dev}, {self.test}] (the dev and test period)")
        for variant in self.variants:
            try:
                lookup(variant)
            except UserError as err:
                raise bad(err.what, "experiment.variants", err.fix or "fix the variant name") from None
            except ValueError as err:
                raise bad(str(err), "experiment.variants", "fix the variant name") from None
            n = lookup(variant).latest_periods   # baseline-N, continued-N
            if n is not None and not 0 <= n <= len(self.train_periods):
                family = variant.rpartition("-")[0]
                raise bad(f"{variant} needs 1 .. {len(self.train_periods)} training periods",
                          "experiment.variants",
                          f"use {family}-N with N <= the number of training periods")
        if len(set(self.variants)) != len(self.variants) or len(set(self.seeds)) != len(self.seeds):
            raise bad("experiment.variants and experiment.seeds must not repeat", "experiment",
                      "list each variant and seed once")
        if len(set(self.other_seeds)) != len(self.other_seeds) or not set(
                self.other_seeds) <= set(self.seeds):
            raise bad(f"experiment.other_seeds {self.other_seeds} must be distinct seeds of "
                      f"experiment.seeds {self.seeds}", "experiment.other_seeds",
                      "list some of experiment.seeds once each, or none")
        if not set(self.forecast_seeds) <= set(self.common_seeds):
            raise bad(f"forecast.seeds {self.forecast_seeds} are not all seeds every variant "
                      f"runs ({self.common_seeds}: experiment.seeds and .other_seeds)",
                      "forecast.seeds", f"list some of {self.common_seeds}, or none")
        if not isinstance(self.cache, bool):
            raise bad(f"train.cache must be true or false, got {self.cache!r}", "train.cache",
                      "true: train the shared-base variants from the frozen Baseline's cached "
                      "hidden states; false: run the full LM every step")
        self.regime.check(self)   # train.base's own rules (pipeline/graph/regimes.py)
        for section, n in (("score", self.decoding["n"]), ("forecast", self.forecast_generate)):
            try:   # the score and forecast stages would refuse them only when they run
                GenerationSettings(**{**self.decoding, "n": n})
            except (TypeError, ValueError) as err:
                key = f"{section}.n_generate" if isinstance(n, int) and n < 1 else "score"
                raise bad(f"{section}'s decoding settings are refused: {err}", key,
                          "n_generate >= 1, 1 <= min_new_tokens <= max_new_tokens, num_beams "
                          ">= 1, top_k >= 1, 0 < top_p <= 1") from None
        max_new_tokens = self.decoding["max_new_tokens"]   # GenerationSettings accepted it above
        if max_new_tokens + 1 > self.context_length:   # the start token + the new ones
            raise bad(f"score.max_new_tokens {max_new_tokens} does not fit the models' "
                      f"context length train.max_length {self.context_length} (the start token "
                      "comes first)", "score.max_new_tokens",
                      f"set score.max_new_tokens <= {self.context_length - 1}, or raise "
                      "train.max_length")
        last, target = ordinal(self.train_periods[-1]), ordinal(self.forecast_period)
        if len(set(self.backtest_periods)) != len(self.backtest_periods) or any(
                not last < ordinal(p) < target for p in self.backtest_periods):
            raise bad(f"forecast.backtest_periods must be distinct periods after the training "
                      f"periods and before the forecast period {self.forecast_period}, got "
                      f"{self.backtest_periods}", "forecast.backtest_periods",
                      f"e.g. [{self.dev}, {self.test}]")
        if BASELINE not in self.variants:   # the report stage would fail after all training
            shared = (f" and train.base: {self.regime.name} builds every temporal variant on its "
                      "LM" if self.regime.on_baseline else "")
            raise bad(f"the report compares every variant with the Baseline{shared}, but "
                      "`baseline` is not among experiment.variants", "experiment.variants",
                      "add baseline to experiment.variants")
        needs_targets = [v for v in self.variants if lookup(v).targets_from_baseline]
        if needs_targets and BASELINE not in self.variants:
            raise bad(f"{', '.join(needs_targets)} read their target vectors from the Baseline "
                      "model, but `baseline` is not among experiment.variants",
                      "experiment.variants", "add baseline to experiment.variants")
        if self.semantic and ordinal(self.semantic_first[-1]) >= ordinal(self.semantic_last[0]):
            raise bad(f"semantic_change.first ({self.semantic_first[-1]}) must end before "
                      f"semantic_change.last ({self.semantic_last[0]}) begins", "semantic_change",
                      "choose an earlier first group or a later last group")

    @property
    def runs(self) -> list[tuple[str, int]]:
        """Every (variant, seed) pair, variants outermost: the order the stages are written in."""
        return [(v, s) for v in self.variants for s in self.variant_seeds[v]]

    @property
    def forecast_runs(self) -> list[tuple[str, int]]:
        """The runs that forecast (``forecast.seeds``), in :attr:`runs` order."""
        return [(v, s) for v, s in self.runs if s in self.forecast_seeds]

    def history(self, periods: Iterable[str]) -> list[str]:
        return in_time_order(h for p in periods for h in history_periods(p, self.window))

    @property
    def train_history(self) -> list[str]:
        """Feature periods training reads: the history of every training period and the dev one."""
        return self.history([*self.train_periods, self.dev])

    @property
    def scored_periods(self) -> list[str]:
        """The score stage always scores the dev and test period, and every one of score.periods."""
        return in_time_order([self.dev, self.test, *self.score_periods])

    @property
    def extra_periods(self) -> list[str]:
        """Scored periods outside the dev and test splits: read from the corpus table."""
        return [p for p in self.scored_periods if p not in (self.dev, self.test)]

    @property
    def score_history(self) -> list[str]:
        return self.history(self.scored_periods)

    def static_periods(self, variant: str) -> list[str]:
        """A time-free control's pooling periods, whose features its train, score and forecast
        stages read besides its variant's: the training periods; none for other variants."""
        return list(self.train_periods) if lookup(variant).static else []

    def reference_periods(self, variant: str) -> list[str]:
        """A relative variant's reference periods (:attr:`pipeline.variants._spec.VariantSpec.relative`),
        whose frequency files its train, score and forecast stages read besides its history's (its
        reference level, their pooled log frequency): the training periods; none for the others."""
        return list(self.train_periods) if lookup(variant).relative else []

    def score_feature_periods(self, variant: str) -> list[str]:
        """Feature periods ``variant``'s score stage reads (for the kinds it reads)."""
        return in_time_order([*self.score_history, *self.static_periods(variant)])

    @property
    def forecast_periods(self) -> list[str]:
        return in_time_order([self.forecast_period, *self.backtest_periods])

    @property
    def forecast_history(self) -> list[str]:
        """A forecast of P reads the history of P, and of P-1 for the predicted change."""
        return self.history(q for f in self.forecast_periods for q in (f, shift(f, -1)))

    @property
    def report_periods(self) -> list[str]:
        """Frequency periods the report reads: the buckets' periods for each scored period, and
        the training periods for the unigram reference perplexity."""
        buckets = [b for s in self.scored_periods for b in bucket_periods(s, self.window)]
        return in_time_order([*buckets, *self.train_periods])

    @property
    def forecast_report_periods(self) -> list[str]:
        """Observed frequencies the forecast report reads (as stages/forecast_report.py does):
        each backtest period and its history, the history of the forecast period, and the
        training periods (the mean-reverting forecaster's strength is fitted on them only)."""
        backtests = [q for b in self.backtest_periods
                     for q in (b, *history_periods(b, self.window))]
        return in_time_order([*backtests, *history_periods(self.forecast_period, self.window),
                              *self.train_periods])

    def periods(self, kind: str) -> list[str]:
        """Periods whose ``kind`` features some stage reads: frequencies for the reports and the
        plot too; embeddings for the semantic-change groups (when semantic_change.run, unless a
        targets file is given: that stage then encodes the targets' sentences itself), and for
        every history when a contextual variant is trained; forecasts:
        :attr:`forecast_feature_periods`."""
        if KINDS[kind].of_target:
            return self.forecast_feature_periods
        reads_embeddings = kind != "embeddings" or self.semantic_targets is None
        periods = [*self.semantic_periods] if self.semantic and reads_embeddings else []
        if any(kind in feature_kinds(v) for v in self.variants) or kind == "frequencies":
            periods += [*self.train_history, *self.score_history, *self.forecast_history]
        for v in self.variants:
            if kind in feature_kinds(v):
                periods += self.static_periods(v)
            if kind == "frequencies":
                periods += self.reference_periods(v)
        if kind == "frequencies":
            periods += [*self.report_periods, *self.forecast_report_periods]
        return in_time_order(periods)

    def forecast_targets(self, variant: str, stage: str) -> list[str]:
        """Periods whose ``forecasts`` feature (a forecast *of* the period, fitted on the periods
        before it: :meth:`forecast_fit_periods`) the ``stage`` (``train``, ``score`` or ``forecast``) of a run of ``variant``
        reads: the training and dev periods, the scored periods, or each forecast period and the
        one before; a time-free control's stages its pooling periods; none when the variant does
        not read forecasts."""
        if not any(KINDS[k].of_target for k in feature_kinds(variant)):
            return []
        targets = {"train": [*self.train_periods, self.dev], "score": self.scored_periods,
                   "forecast": [q for f in self.forecast_periods for q in (f, shift(f, -1))]}
        return self.static_periods(variant) or in_time_order(targets[stage])

    def forecast_fit_periods(self, target: str, limit: int | None = None) -> list[str]:
        """The periods the forecast of ``target`` is fitted on, oldest first (an expanding
        window): the contiguous run of frequency periods (:meth:`periods`) that ends at the one
        before ``target``, its latest ``limit`` when given. Only periods the graph already counts
        frequencies for, so the forecasts add no frequency stage; the run holds at least
        ``target``'s history window (every target's history is a frequency period)."""
        counted, fit = set(self.periods("frequencies")), []
        before = shift(target, -1)
        while before in counted and (limit is None or len(fit) < limit):
            fit.append(before)
            before = shift(before, -1)
        return fit[::-1]

    @property
    def forecast_feature_periods(self) -> list[str]:
        """Every period some stage reads the forecast of (the ``forecast_features`` stages)."""
        return in_time_order(p for v in self.variants for stage in ("train", "score", "forecast")
                             for p in self.forecast_targets(v, stage))

    @property
    def semantic_periods(self) -> list[str]:
        """Both groups of the semantic-change report (it reads their frequencies and embeddings)."""
        return in_time_order([*self.semantic_first, *self.semantic_last])

    @property
    def text_periods(self) -> list[str]:
        """Every period whose documents some stage reads: each feature period, the scored and
        backtest periods, the training periods and the period before each forecast (its
        reference contexts). The split stage stops, naming it, if one of them is empty."""
        return in_time_order([*self.periods("frequencies"), *self.scored_periods,
                              *self.backtest_periods, *self.train_periods,
                              *(shift(f, -1) for f in self.forecast_periods)])
