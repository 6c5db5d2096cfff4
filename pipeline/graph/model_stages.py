"""The stages of each run (a variant and a seed: train, score, forecast), the cache stages of the
training regime (``train.base``, ``train.cache``: :mod:`pipeline.graph.regimes`) and the two
reports over all runs. Each run's stages depend on exactly the per-period feature files its variant reads (the registry's ``feature_files``) and declare only
the params they read, so changing a bias's own param reruns only that variant. A time-free
control's stages read the features of the training periods too (its pooled history), and a
relative variant's their frequency files (its reference level); a score stage reads only its
scored periods' own histories besides. Of the variant modules, a run's stages depend
on its own variant's alone and the reports on those of the variants they report
(:class:`pipeline.graph.code_deps.Code`), so editing one variant reruns only its runs.

Each entry is rendered from its stage's declaration (:mod:`pipeline.interfaces`): the
builders here give only the paths and the values the graph resolves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipeline.corpus.periods import in_time_order
from pipeline.features.kinds import kind
from pipeline.graph.code_deps import FORECASTERS, Code
from pipeline.graph.files import (
    ABSTRACTS,
    CORPUS_COUNTS,
    DEV,
    FORECAST_DETAILS,
    GOLD_WORDS,
    LONGTAIL_DETAILS,
    LONGTAIL_METRICS,
    RESULTS_DETAILS,
    SIGNAL_DETAILS,
    STOPWORDS,
    TEST,
    TOKENIZER,
    TRAIN,
    TRUNK_CACHE,
    VARIANT_METRICS,
    feature_files,
    model_dir,
)
from pipeline.graph.plan import Plan, feature_kinds
from pipeline.graph.regimes import Cache
from pipeline.infra.runs import run_name as run
from pipeline.infra.interface import Params
from pipeline.interfaces import (base_cache, forecast, forecast_report, longtail, report,
                                       score, train)
from pipeline.infra.schema.params import VARIANT_SECTION
from pipeline.models.registry import BASELINE, lookup, params_section
from pipeline.variants._spec import setting_fields


def trunk_cache_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """train.base: adapted: the states entering the pretrained LM's top ``train.adapt_layers``
    blocks, of the train, dev and test abstracts, once for every seed."""
    return base_cache.INTERFACE.entry(
        {"base": True, "trunk_only": True, "adapt_layers": True, "train": TRAIN, "dev": DEV,
         "test": TEST, "tokenizer": TOKENIZER, "out": TRUNK_CACHE}, code=code("base_cache"))


def cache_stage(plan: Plan, cache: Cache, code: Code) -> dict[str, Any]:
    """The stage of a cache the training regime adds (``Regime.caches``)."""
    return trunk_cache_stage(plan, code) if cache.trunk else base_cache_stage(plan, cache, code)


def base_cache_stage(plan: Plan, cache: Cache, code: Code) -> dict[str, Any]:
    """The frozen LM's final hidden states (``train.cache``): of the train and dev abstracts
    under the trained Baseline of one seed (shared base), or of the train, dev and test
    abstracts under the pretrained ``lm.base`` (frozen base; ``cache.seed`` None), which the
    frozen-base score and forecast stages read too. Adapted base: of every abstract of the
    trunk cache, under the seed's adapted Baseline (or, ``cache.seed`` None, the unadapted LM)."""
    seed = cache.seed
    lm = {"base": True} if seed is None else {"model": model_dir(BASELINE, seed)}
    if plan.regime.caches_from_trunk:   # the abstracts, and their states entering the top blocks
        inputs: dict[str, Any] = {"trunk": TRUNK_CACHE, "adapt_layers": True}
    else:
        inputs = {"train": TRAIN, "dev": DEV, **({"test": TEST} if seed is None else {})}
    return base_cache.INTERFACE.entry(
        {**lm, **inputs, "tokenizer": TOKENIZER, "out": cache.out}, code=code("base_cache"))


def _features(kinds: Iterable[str], periods: Iterable[str], forecasts: Iterable[str] = (),
              reference: Iterable[str] = ()) -> tuple[dict, dict, list[str]]:
    """The ``--frequencies``/``--embeddings`` folders of a run's feature ``kinds`` (as values),
    their files of ``periods`` (as the DVC paths; the frequency files of the ``reference``
    periods too, :meth:`Plan.reference_periods`) and, for a variant reading ``forecasts`` (read
    from beside the frequency folder, no option of their own), the forecast files of the target
    periods ``forecasts`` (:meth:`Plan.forecast_targets`)."""
    periods, kinds = list(periods), list(kinds)
    folders = {k: kind(k).folder() for k in kinds if kind(k).own_folder_option}
    extra = {"frequencies": list(reference)}
    return (folders, {k: feature_files([k], in_time_order([*periods, *extra.get(k, [])]))
                      for k in folders},
            feature_files([k for k in kinds if kind(k).of_target], forecasts))


def variant_options(variant: str) -> Params | None:
    """A run's own settings, for its train stage: one ``--<field> ${variants.<name>.<field>}``
    per field of its variant's settings class (a key params.yaml leaves out gets the field's
    default: :mod:`pipeline.graph.defaults`), in the section the registry says it reads (a
    time-free control: its variant's); None for a variant without settings."""
    settings = lookup(variant).settings
    if settings is None or not setting_fields(settings):
        return None
    section = f"{VARIANT_SECTION}.{params_section(variant)}"
    return Params(settings, section, f"the {variant} variant's settings")


def train_stage(plan: Plan, variant: str, seed: int, code: Code) -> dict[str, Any]:
    kinds = feature_kinds(variant)
    entry = lookup(variant)
    start = plan.regime.train_from(plan, variant, seed)   # its LM and the states it trains from
    folders, files, forecasts = _features(
        kinds, in_time_order([*plan.train_history, *plan.static_periods(variant)]),
        plan.forecast_targets(variant, "train"), plan.reference_periods(variant))
    return train.INTERFACE.entry(
        {"variant": variant, "seed": seed, "train": TRAIN, "dev": DEV, "tokenizer": TOKENIZER,
         **folders, "window": bool(kinds), "lr_new": entry.has_module,
         # baseline-N reads train.latest_steps; continued-N always takes the Baseline's steps
         "latest_steps": bool(entry.latest_periods) and not entry.continued,
         "settings": variant_options(variant), **start.values,
         "targets_from": model_dir(BASELINE, seed) if entry.targets_from_baseline else None,
         "out": model_dir(variant, seed), "curves": f"data/curves/{run(variant, seed)}"},
        files=files, deps=forecasts, code=code("train", [variant], built=True))


def score_stage(plan: Plan, variant: str, seed: int, code: Code) -> dict[str, Any]:
    kinds = feature_kinds(variant)
    model = model_dir(variant, seed)
    extra = plan.extra_periods
    folders, files, forecasts = _features(
        kinds, plan.score_feature_periods(variant),
        plan.forecast_targets(variant, "score"), plan.reference_periods(variant))
    # PPL/CPL from the cached states when the regime's caches hold the test period
    return score.INTERFACE.entry(
        {"model": model, "dev": DEV, "test": TEST,
         "periods": plan.score_periods if extra else None, "abstracts": ABSTRACTS if extra else None,
         # the stage's default generates for dev and test; score.generate_dev: false, test only
         "generate_periods": None if plan.generate_dev else [plan.test],
         "tokenizer": TOKENIZER, **folders, "stopwords": STOPWORDS, "gold_words": GOLD_WORDS,
         "cache": plan.regime.scoring_cache(plan, variant, seed),
         "out": f"data/scores/{run(variant, seed)}"},
        files=files, deps=forecasts, code=code("score", [variant], built=True))


def forecast_stage(plan: Plan, variant: str, seed: int, code: Code) -> dict[str, Any]:
    """Not params: forecast.period / backtest_periods, whose resolved labels are in the cmd, so
    after `make graph` a new value changes the cmd, which reruns the stage (declared as well, an
    edit would rerun the stage before the graph is regenerated, with the old labels)."""
    kinds = feature_kinds(variant)
    folders, files, forecasts = _features(
        kinds, in_time_order([*plan.forecast_history, *plan.static_periods(variant)]),
        plan.forecast_targets(variant, "forecast"), plan.reference_periods(variant))
    return forecast.INTERFACE.entry(
        {"model": model_dir(variant, seed), "abstracts": ABSTRACTS, "tokenizer": TOKENIZER,
         **folders, "frequencies": "data/features/frequencies",
         # the resolved label: forecast.period may be null (the period after the last known)
         "period": plan.forecast_period, "backtest_periods": plan.backtest_periods,
         "cache": plan.regime.scoring_cache(plan, variant, seed),
         "out": f"data/forecast/{run(variant, seed)}"},
        # the frequency folder always, its files when the variant reads them
        files={"frequencies": [], **files}, deps=forecasts,
        code=code("forecast", [variant], built=True))


def report_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """The splits, corpus and stopwords: the CM anchors (pipeline/reports/cm_anchors_report.py)."""
    runs = [run(v, s) for v, s in plan.runs]
    return report.INTERFACE.entry(
        # keywords: `baseline` is ReportConfig's field, the registry's Baseline its value
        dict(scores="data/scores", baseline=BASELINE, frequencies="data/features/frequencies",
             corpus_counts=CORPUS_COUNTS, out="reports/results.md", metrics_dir=VARIANT_METRICS,
             details=RESULTS_DETAILS, plots="plots/results.csv",
             staleness="plots/staleness.csv", buckets="plots/buckets.csv", train_split=TRAIN,
             dev=DEV, test=TEST, abstracts=ABSTRACTS, stopwords=STOPWORDS,
             signal=SIGNAL_DETAILS),
        files={"scores": [f"data/scores/{r}" for r in runs],
               "frequencies": feature_files(["frequencies"], plan.report_periods)},
        code=code("report", plan.variants))


def longtail_stage(plan: Plan, code: Code) -> dict[str, Any]:
    runs = [run(v, s) for v, s in plan.runs]
    return longtail.INTERFACE.entry(
        {"scores": "data/scores", "tokenizer": TOKENIZER,
         "frequencies": "data/features/frequencies", "out": "reports/longtail.md",
         "metrics_dir": LONGTAIL_METRICS, "details": LONGTAIL_DETAILS,
         "plot": "plots/longtail.csv"},
        files={"scores": [f"data/scores/{r}" for r in runs],
               "frequencies": feature_files(["frequencies"], plan.train_periods)},
        code=code("longtail", plan.variants))


def forecast_report_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """The periods are resolved into the cmd, not params (forecast_stage says why)."""
    runs = [run(v, s) for v, s in plan.forecast_runs]
    return forecast_report.INTERFACE.entry(
        {"forecasts": "data/forecast", "forecast_seeds": plan.forecast_seeds,
         "period": plan.forecast_period,
         "backtest_periods": plan.backtest_periods, "train_periods": plan.train_periods,
         "dev_period": plan.dev, "frequencies": "data/features/frequencies",
         "tokenizer": TOKENIZER, "stopwords": STOPWORDS, "abstracts": ABSTRACTS,
         "out": "reports/forecast.md", "json": FORECAST_DETAILS,
         "plot": "plots/forecast_risers.png"},
        files={"forecasts": [f"data/forecast/{r}" for r in runs],
               "frequencies": feature_files(["frequencies"], plan.forecast_report_periods)},
        code=code("forecast_report", plan.variants, discovered=FORECASTERS))
