"""The whole stage graph as the dict ``dvc.yaml`` holds, in the order a reader follows it:
data, features, the training regime's caches for every seed, every run's training (each seed's
Baseline's cache right after it), scoring, the report and the long-tail report, every run's
forecast, its report, the signal (the unigram yardstick), the semantic-change report and its
benchmark, and the verdicts of every report in one file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.graph.analysis_stages import (semantic_benchmark_stage, semantic_change_stage,
                                            signal_stage, verdicts_stage)
from pipeline.graph.code_deps import Code
from pipeline.graph.data_stages import data_stages, feature_stages
from pipeline.graph.declared import torch_modules, with_declared
from pipeline.graph.defaults import SCHEMA, Defaulted, Schema, apply_defaults
from pipeline.graph.fold import fold_seeds
from pipeline.graph.model_stages import (
    cache_stage,
    forecast_report_stage,
    forecast_stage,
    longtail_stage,
    report_stage,
    score_stage,
    train_stage,
)
from pipeline.graph.plan import Plan
from pipeline.infra.runs import run_name as run
from pipeline.models.registry import BASELINE

# The project root (holding pipeline/ and stages/), whose sources give the stages' code deps.
ROOT = Path(__file__).resolve().parents[2]


# The file DVC reads the params from, beside dvc.yaml.
PARAMS_FILE = "params.yaml"
# The param of a torch stage (its declaration's ``torch``): the CPU kernels it computes with
# (portable or native, pipeline/infra/numerics.py), which change its bytes.
NUMERICS_KEY = "numerics.kernels"


def build(params: Mapping[str, Any], root: Path = ROOT, schema: Schema | None = None,
          defaulted: list[Defaulted] | None = None) -> dict[str, Any]:
    """The whole graph for ``params`` (a parsed params.yaml), code deps read under ``root``.

    A key params.yaml lacks is written in as its ``schema`` default (:mod:`pipeline.graph.defaults`;
    appended to ``defaulted`` when given, for the user's note), or is an error naming it (no
    default, or no ``schema``); then the graph stage also depends on params.yaml, so adding that
    key later reruns its check, which finds dvc.yaml stale."""
    schema = SCHEMA if schema is None else schema
    plan, code = Plan(schema.complete(params)), Code(root)
    stages = {**data_stages(plan, code), **feature_stages(plan, code)}
    caches = plan.regime.caches(plan)   # the training regime's (pipeline/graph/regimes.py)
    for cache in caches:
        if cache.seed is None:   # one for every seed
            stages[cache.name] = cache_stage(plan, cache, code)
    for variant, seed in plan.runs:
        stages[f"train-{run(variant, seed)}"] = train_stage(plan, variant, seed, code)
        for cache in caches:
            if variant == BASELINE and cache.seed == seed:   # right after what it reads
                stages[cache.name] = cache_stage(plan, cache, code)
    for variant, seed in plan.runs:
        stages[f"score-{run(variant, seed)}"] = score_stage(plan, variant, seed, code)
    stages["report"] = report_stage(plan, code)
    stages["longtail"] = longtail_stage(plan, code)
    for variant, seed in plan.forecast_runs:
        stages[f"forecast-{run(variant, seed)}"] = forecast_stage(plan, variant, seed, code)
    stages["forecast_report"] = forecast_report_stage(plan, code)
    stages["signal"] = signal_stage(plan, code)
    if plan.semantic:
        stages["semantic_change"] = semantic_change_stage(plan, code)
        stages["semantic_benchmark"] = semantic_benchmark_stage(plan, code)
    stages["verdicts"] = verdicts_stage(plan, code)
    stages = with_declared(stages, code, root)
    torch = torch_modules()
    stages = {name: with_numerics(stage, torch) for name, stage in stages.items()}
    stages, used = apply_defaults(stages, params, schema)
    if used:
        stages["graph"] = {**stages["graph"], "deps": [*stages["graph"]["deps"], PARAMS_FILE]}
    if defaulted is not None:
        defaulted.extend(used)
    return {"stages": fold_seeds(stages)}


def with_numerics(stage: dict[str, Any], torch: set[str]) -> dict[str, Any]:
    """A stage of a ``torch`` module (its declaration's flag; a ``foreach`` one's ``do``) with
    ``--kernels ${numerics.kernels}`` and that param; any other stage as it is."""
    if "do" in stage:
        return {**stage, "do": with_numerics(stage["do"], torch)}
    if stage["cmd"].split()[2] not in torch:
        return stage
    return {**stage, "cmd": f"{stage['cmd']} --kernels ${{{NUMERICS_KEY}}}",
            "params": [*stage.get("params", []), NUMERICS_KEY]}
