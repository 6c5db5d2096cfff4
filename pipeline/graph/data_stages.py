"""The stages before any model: the graph check, the corpus, the splits, the tokenizer and the
per-period features (``foreach`` over exactly the period labels :class:`pipeline.graph.plan.Plan`
derives from the structural params, so a stage is named ``frequencies@2020H2``).

Each stage's command, params and outputs come from its declaration
(:mod:`pipeline.interfaces`), which its command line is built from too; this module gives
the paths (:mod:`pipeline.graph.files`) and the values only the plan knows."""

from __future__ import annotations

from typing import Any

from pipeline.corpus.periods import shift, span
from pipeline.features.kinds import FORECASTS
from pipeline.graph.code_deps import FORECASTERS, Code
from pipeline.graph.files import (
    ABSTRACTS,
    CORPUS_COUNTS,
    CORPUS_METRICS,
    DEV,
    DOWNLOAD_INFO,
    EMB,
    FORECAST,
    FREQ,
    PAPERS,
    PERIOD_COUNTS,
    PERIOD_REJECTS,
    RAW,
    STAMP,
    TEST,
    TOKENIZER,
    TRAIN,
    feature_files,
)
from pipeline.graph.plan import STRUCTURE, Plan, feature_kinds
from pipeline.graph.regimes import refused
from pipeline.interfaces import (download, embeddings, forecast_features, frequencies,
                                       frequency_plot, graph, parse, split)
from pipeline.infra.schema.params import VARIANT_SECTION
from pipeline.models.registry import lookup, params_section
from pipeline.variants._spec import setting_fields

from pipeline.interfaces import filter as corpus_filter
from pipeline.interfaces import tokenizer


def data_stages(plan: Plan, code: Code) -> dict[str, Any]:
    return {
        # it reads every source file to compute the other stages' code deps, and the params
        # that shape the graph
        "graph": graph.INTERFACE.entry({"check": True, "stamp": STAMP},
                                       deps=["pipeline", "stages"], params=STRUCTURE),
        "download": download.INTERFACE.entry(
            {"out": RAW, "info": DOWNLOAD_INFO}, code=code("download"), deps=[STAMP]),
        "parse": parse.INTERFACE.entry(
            {"raw": RAW, "papers": PAPERS, "rejects": "data/corpus/parse_rejects.parquet"},
            code=code("parse")),
        "filter": corpus_filter.INTERFACE.entry(
            {"papers": PAPERS, "kept": ABSTRACTS, "dropped": "data/corpus/filtered_out.parquet",
             "metrics": CORPUS_METRICS, "counts": CORPUS_COUNTS}, code=code("filter")),
        "split": split.INTERFACE.entry(
            {"abstracts": ABSTRACTS, "out_dir": "data/splits", "needs": _needs(plan),
             "rejects": PERIOD_REJECTS, "counts_plot": PERIOD_COUNTS},
            files={"out_dir": [TRAIN, DEV, TEST]}, code=code("split")),
        "tokenizer": tokenizer.INTERFACE.entry(
            {"train": TRAIN, "out": TOKENIZER}, code=code("tokenizer")),
        # then the declared stages after them (gold_words; pipeline/graph/declared.py)
    }


def _needs(plan: Plan) -> list[str]:
    """The periods the split stage does not read itself but later stages read the documents of
    (scored, forecast and report periods and their histories)."""
    own = span(shift(plan.train_periods[0], -plan.window), plan.test)  # the split's own check
    return [p for p in plan.text_periods if p not in own]


def feature_stages(plan: Plan, code: Code) -> dict[str, Any]:
    """Frequencies of every period some stage reads, their plot, and the embeddings only when a
    variant reads them (no ``embeddings`` stage otherwise)."""
    freq_periods, emb_periods = plan.periods("frequencies"), plan.periods("embeddings")
    freq_files = feature_files(["frequencies"], freq_periods)
    per_period = {"period": "${item}", "abstracts": ABSTRACTS, "tokenizer": TOKENIZER}
    stages: dict[str, Any] = {
        "frequencies": {"foreach": freq_periods, "do": frequencies.INTERFACE.entry(
            {**per_period, "out": FREQ.format("${item}")}, code=code("frequencies"))},
        "frequency_plot": frequency_plot.INTERFACE.entry(
            {"frequencies": freq_files, "tokenizer": TOKENIZER,
             "out": "plots/word_frequencies.csv", "png": "plots/word_frequencies.png"},
            code=code("frequency_plot")),
    }
    if emb_periods:
        stages["embeddings"] = {"foreach": emb_periods, "do": embeddings.INTERFACE.entry(
            {**per_period, "out": EMB.format("${item}")}, code=code("embeddings"))}
    if plan.periods(FORECASTS.name):
        stages["forecast_features"] = forecast_features_stage(plan, code)
    return stages


def forecast_features_stage(plan: Plan, code: Code) -> dict[str, Any]:
    """Only when a variant reads ``forecasts``: the forecast of each period some stage reads
    (:attr:`Plan.forecast_feature_periods`), fitted on an expanding window, every frequency period
    the graph already has before it back to the first of their contiguous run, or the latest
    ``fit_periods`` of them (:meth:`Plan.forecast_fit_periods`; no frequency stage is added for
    it). The forecaster is the ``forecaster`` setting of the variants reading forecasts.

    ``foreach`` over a mapping from the period to the periods it is fitted on, ``${item.f0}``
    the oldest (its ``--fit-from``), so each stage depends on exactly the frequency files it
    reads. DVC interpolates no list, so every item names as many periods as the longest span,
    a shorter span repeating its latest period: the same files, one dep listed more than once."""
    readers = [v for v in plan.variants if FORECASTS.name in feature_kinds(v)]
    sections = sorted({params_section(v) for v in readers})
    fields = {f.name: f for f in setting_fields(lookup(readers[0]).settings)}
    if len(sections) > 1 or "forecaster" not in fields:
        raise refused(f"{', '.join(readers)} read one set of forecast features: they must be one "
                      "variant and its control, whose settings name the forecaster",
                      "experiment.variants", "keep one variant that reads forecasts")
    param = f"{VARIANT_SECTION}.{sections[0]}.forecaster"
    limit = _fit_periods(plan, sections[0], fields)
    spans = {p: plan.forecast_fit_periods(p, limit) for p in plan.periods(FORECASTS.name)}
    names = [f"f{j}" for j in range(max(map(len, spans.values())))]
    items = {p: {n: fit[min(j, len(fit) - 1)] for j, n in enumerate(names)}
             for p, fit in spans.items()}
    return {"foreach": items, "do": forecast_features.INTERFACE.entry(
        {"period": "${key}", "frequencies": "data/features/frequencies",
         "fit_from": "${item.f0}", "forecaster": f"${{{param}}}",
         "out": FORECAST.format("${key}")},
        files={"frequencies": [FREQ.format(f"${{item.{n}}}") for n in names]},
        params=[param], code=code("forecast_features", discovered=FORECASTERS))}


def _fit_periods(plan: Plan, section: str, fields: dict[str, Any]) -> int | None:
    """``variants.<section>.fit_periods``: None (every period; also where the settings have no
    such field) or an int >= 1, else a :class:`UserError` naming the key. Whether it is enough
    for the forecaster (its ``min_periods``) its stage checks: the graph never imports the
    forecasters, whose modules import torch."""
    field = fields.get("fit_periods")
    if field is None:
        return None
    values = plan.variant_params.get(section) or {}
    value = values.get("fit_periods", field.default)
    if value is None or value == field.metadata.get("none"):
        return None
    key = f"{VARIANT_SECTION}.{section}.fit_periods"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise refused(f"{key} must be {field.metadata.get('none')!r} or an int >= 1, got "
                      f"{value!r}", key, f"set {key}: {field.metadata.get('none')} (every "
                      "earlier period) or a number of periods")
    return value
