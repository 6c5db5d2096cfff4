"""The stages of each run (a variant and a seed: train, score, forecast), the cache stages of the
training regime (``train.base``, ``train.cache``: :mod:`pipeline.graph.regimes`) and the two
reports over all runs. Each run's stages depend on exactly the per-period feature files its variant reads (the registry's ``feature_files``) and declare only
the params they read, so changing a bias's own param reruns only that variant. A time-free
control's stages read the features of the training periods too (its pooled history); a score
stage reads only its scored periods' own histories. Of the variant modules, a run's stages depend
on its own variant's alone and the reports on those of the variants they report
(:class:`pipeline.graph.code_deps.Code`), so editing one variant reruns only its runs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipeline.corpus.periods import in_time_order
from pipeline.graph.code_deps import Code
from pipeline.graph.files import (
    ABSTRACTS,
    CORPUS_COUNTS,
    DEV,
    FORECAST_DETAILS,
    LONGTAIL_DETAILS,
    LONGTAIL_METRICS,
    RESULTS_DETAILS,
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
from pipeline.infra.config import ModelConfig, TrainConfig
from pipeline.infra.interfaces import (base_cache, forecast, forecast_report, longtail, report,
                                       score)
from pipeline.infra.params import VARIANT_SECTION, section_params
from pipeline.models.registry import BASELINE, lookup, params_section
from pipeline.models.variant import setting_fields

# The options of a stage come from the params schema (pipeline/infra/params.py), less what the
# graph passes otherwise. train.*: the optimiser and dropout, every variant; train.lr_new only to
# variants with a module; train.base/.cache/.cache_storage shape the graph. A variant's own
# settings (variants.<name>.*, its settings class) go to its train stage alone (variant_options).
TRAIN_FLAGS = [k for k in section_params("train", TrainConfig, ModelConfig) if k != "lr_new"]
LM_FLAGS = section_params("lm")


def _flags(section: str, keys: Iterable[str]) -> str:
    return " ".join(f"--{k.replace('_', '-')} ${{{section}.{k}}}" for k in keys)


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


def variant_options(variant: str) -> tuple[list[str], list[str]]:
    """A run's own settings as train-stage options and declared params: one
    ``--<field> ${variants.<name>.<field>}`` per field of its variant's settings class (a key
    params.yaml leaves out gets the field's default: :mod:`pipeline.graph.defaults`), in the
    section the registry says it reads (a time-free control: its variant's)."""
    section = params_section(variant)
    keys = [f"{VARIANT_SECTION}.{section}.{f.name}" for f in setting_fields(lookup(variant).settings)]
    options = [f"--{key.rpartition('.')[2].replace('_', '-')} ${{{key}}}" for key in keys]
    return options, keys


def train_stage(plan: Plan, variant: str, seed: int, code: Code) -> dict[str, Any]:
    kinds = feature_kinds(variant)
    entry = lookup(variant)
    start = plan.regime.train_from(plan, variant, seed)   # its LM and the states it trains from
    targets = [model_dir(BASELINE, seed)] if entry.targets_from_baseline else []
    keys = [*([("features", "window")] if kinds else []),
            *(("lm", k) for k in LM_FLAGS), *(("train", k) for k in TRAIN_FLAGS),
            *([("train", "lr_new")] if entry.has_module else [])]
    own, own_params = variant_options(variant)
    cmd = [f"python -m stages.train --variant {variant} --seed {seed}",
           f"--train {TRAIN} --dev {DEV} --tokenizer {TOKENIZER}",
           *(f"--{k} data/features/{k}" for k in kinds),
           *(f"--{k.replace('_', '-')} ${{{section}.{k}}}" for section, k in keys), *own]
    cmd += start.lm_options
    cmd += [f"--targets-from {model}" for model in targets]
    cmd += start.state_options
    cmd.append(f"--out {model_dir(variant, seed)} --curves data/curves/{run(variant, seed)}")
    return {
        "cmd": " ".join(cmd),
        "deps": [*code("train", [variant], built=True), TRAIN, DEV, TOKENIZER,
                 *feature_files(kinds, in_time_order([*plan.train_history,
                                                      *plan.static_periods(variant)])),
                 *dict.fromkeys([*start.models, *targets]), *start.states],
        "params": [*(f"{section}.{k}" for section, k in keys), *own_params, *start.params],
        "outs": [model_dir(variant, seed)],
        "plots": [{f"data/curves/{run(variant, seed)}": {"x": "step"}}],
    }


def _features(kinds: Iterable[str], periods: Iterable[str]) -> tuple[dict, dict]:
    """The ``--frequencies``/``--embeddings`` folders of a run's feature ``kinds`` (as values)
    and their files of ``periods`` (as the DVC paths)."""
    periods = list(periods)
    return ({k: f"data/features/{k}" for k in kinds},
            {k: feature_files([k], periods) for k in kinds})


def score_stage(plan: Plan, variant: str, seed: int, code: Code) -> dict[str, Any]:
    kinds = feature_kinds(variant)
    model = model_dir(variant, seed)
    extra = plan.extra_periods
    folders, files = _features(kinds, plan.score_feature_periods(variant))
    # PPL/CPL from the cached states when the regime's caches hold the test period
    return score.INTERFACE.entry(
        {"model": model, "dev": DEV, "test": TEST,
         "periods": plan.score_periods if extra else None, "abstracts": ABSTRACTS if extra else None,
         "tokenizer": TOKENIZER, **folders, "stopwords": STOPWORDS,
         "cache": plan.regime.scoring_cache(plan, variant, seed),
         "out": f"data/scores/{run(variant, seed)}"},
        files=files, code=code("score", [variant], built=True))


def forecast_stage(plan: Plan, variant: str, seed: int, code: Code) -> dict[str, Any]:
    """Not params: forecast.period / backtest_periods, whose resolved labels are in the cmd, so
    after `make graph` a new value changes the cmd, which reruns the stage (declared as well, an
    edit would rerun the stage before the graph is regenerated, with the old labels)."""
    kinds = feature_kinds(variant)
    folders, files = _features(kinds, in_time_order([*plan.forecast_history,
                                                     *plan.static_periods(variant)]))
    return forecast.INTERFACE.entry(
        {"model": model_dir(variant, seed), "abstracts": ABSTRACTS, "tokenizer": TOKENIZER,
         **folders, "frequencies": "data/features/frequencies",
         # the resolved label: forecast.period may be null (the period after the last known)
         "period": plan.forecast_period, "backtest_periods": plan.backtest_periods,
         "cache": plan.regime.scoring_cache(plan, variant, seed),
         "out": f"data/forecast/{run(variant, seed)}"},
        # the frequency folder always, its files when the variant reads them
        files={"frequencies": [], **files}, code=code("forecast", [variant], built=True))


def report_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """The splits, corpus and stopwords: the CM anchors (pipeline/reports/cm_anchors_report.py)."""
    runs = [run(v, s) for v, s in plan.runs]
    return report.INTERFACE.entry(
        # keywords: `baseline` is ReportConfig's field, the registry's Baseline its value
        dict(scores="data/scores", baseline=BASELINE, frequencies="data/features/frequencies",
             corpus_counts=CORPUS_COUNTS, out="reports/results.md", metrics_dir=VARIANT_METRICS,
             details=RESULTS_DETAILS, plots="plots/results.csv",
             staleness="plots/staleness.csv", buckets="plots/buckets.csv", train_split=TRAIN,
             dev=DEV, test=TEST, abstracts=ABSTRACTS, stopwords=STOPWORDS),
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
    runs = [run(v, s) for v, s in plan.runs]
    return forecast_report.INTERFACE.entry(
        {"forecasts": "data/forecast", "period": plan.forecast_period,
         "backtest_periods": plan.backtest_periods, "train_periods": plan.train_periods,
         "dev_period": plan.dev, "frequencies": "data/features/frequencies",
         "tokenizer": TOKENIZER, "stopwords": STOPWORDS, "abstracts": ABSTRACTS,
         "out": "reports/forecast.md", "json": FORECAST_DETAILS,
         "plot": "plots/forecast_risers.png"},
        files={"forecasts": [f"data/forecast/{r}" for r in runs],
               "frequencies": feature_files(["frequencies"], plan.forecast_report_periods)},
        code=code("forecast_report", plan.variants))
