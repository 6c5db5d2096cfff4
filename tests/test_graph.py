"""The generated stage graph (pipeline/graph, written by stages/graph.py): dvc.yaml is what
`make graph` makes of params.yaml, each stage depends on exactly its code (import closure) and on
exactly the per-period feature files its variant reads (named by label, at any period kind),
settings that cannot change results are neither params nor flags, and building the graph never
imports torch."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.infra.errors import UserError
from pipeline.graph.build import build
from pipeline.graph.code_deps import (CHANGE_METHODS, FORECASTERS, import_closure, module_path,
                                      package_units, runs_code)
from pipeline.graph.fold import expand, fold_seeds
from pipeline.graph.render import render, stale_message
from pipeline.models.registry import all_variants, lookup
from tests.dvc_project import (deep_merge, expand_runs, make_project, run_dvc, write_graph,
                               write_params)

REPO = Path(__file__).resolve().parents[1]
COMMITTED = yaml.safe_load((REPO / "params.yaml").read_text())
# The graph tests exercise every kind of variant (baseline-N, the contextual ones, the output
# layers) with one seed: the committed params with the wide experiment of the runs before the
# default run became Baseline / Frequency / its control with 3 seeds.
PARAMS = {**COMMITTED, "experiment": {"variants": [
    "baseline", "baseline-2", "frequency-nolstm", "frequency", "context", "context2", "temperature",
    "temporal-temperature", "continuous-vmf", "temporal-attention"], "seeds": [0]}}
# the output-layer heads with their own objective: they read only the final hidden states, so a
# frozen LM's cache serves them (registry Variant.cacheable)
HEADS = [name for name, v in all_variants().items() if v.output_layer]
ALL_VARIANTS = ["baseline", "baseline-2", "frequency-nolstm", "frequency", "context", "context2"]


def stages_of(params: dict[str, Any]) -> dict[str, Any]:
    """The stages DVC runs for ``params`` (a per-seed family's ``foreach`` expanded)."""
    return expand_runs(build(params, REPO)["stages"])


def body(stage: dict[str, Any]) -> dict[str, Any]:
    """A stage's definition (the ``do`` of a foreach stage)."""
    return stage.get("do", stage)


def feature_deps(stage: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"frequencies": [], "embeddings": []}
    for dep in body(stage)["deps"]:
        m = re.fullmatch(r"data/features/(frequencies|embeddings)/(\d{4}(?:H\d|Q\d|-\d\d)?)\.\w+",
                         dep)
        if m:
            found[m.group(1)].append(m.group(2))
        assert not re.fullmatch(r"data/features(/\w+)?", dep), f"a whole feature folder: {dep}"
    return found


def years(first: int, last: int) -> list[str]:
    """Year labels ``first .. last``: the years' strings."""
    return [str(y) for y in range(first, last + 1)]


# --- the committed graph ----------------------------------------------------------------------------

def test_committed_dvc_yaml_is_generated_from_committed_params() -> None:
    expected = render(COMMITTED, REPO)
    assert (REPO / "dvc.yaml").read_text() == expected, \
        "dvc.yaml is stale for params.yaml or the code: run `make graph`"


def test_committed_dvc_yaml_is_short_enough_to_review() -> None:
    """Code deps by package and one foreach per run family keep the default run's dvc.yaml
    within a reviewer's reading (it was 3,482 lines with a line per source file and per run)."""
    text = (REPO / "dvc.yaml").read_text()
    assert len(text.splitlines()) <= 800
    families = yaml.safe_load(text)["stages"]
    assert not any(re.fullmatch(r"(train|score|forecast)-.+-s\d+", name) for name in families)


def _committed_stages() -> list[tuple[str, dict[str, Any]]]:
    return list(expand(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]).items())


def _variants_read(name: str) -> tuple[list[str], bool]:
    """The variants whose modules stage ``name`` imports through the registry, and whether it
    builds their models: a run's stages their own variant's, the reports the experiment's."""
    if run := re.fullmatch(r"(?:train|score|forecast)-(.+)@s\d+", name):
        return [run.group(1)], True
    if name in ("report", "longtail", "forecast_report"):
        return COMMITTED["experiment"]["variants"], False
    return [], False


def _discovered(name: str) -> str | None:
    """The package whose registry stage ``name`` reads, which imports every module of it at run
    time (no import statement names them): the forecasters' or the semantic-change methods'."""
    if name == "forecast_report" or name.startswith("forecast_features"):
        return FORECASTERS
    return CHANGE_METHODS if name.startswith("semantic_") else None


@pytest.mark.parametrize("name", [name for name, _ in _committed_stages()])
def test_code_deps_are_exactly_the_stages_import_closure(name: str) -> None:
    """The stage module's closure, plus the modules of the variants it runs or reports (a
    control's: its variant's) with theirs, and every forecaster module with its closure for a
    stage reading the forecaster registry; no other variant's module. Listed by package: each
    package folder it imports from (at most 15 code deps in all), a variant module as a file."""
    spec = body(dict(_committed_stages())[name])
    module = re.match(r"python -m stages\.(\w+)", spec["cmd"]).group(1)
    code = {d for d in spec["deps"] if d.startswith(("pipeline", "stages"))}
    if name == "graph":  # it reads every source file to compute the others' closures
        assert code == {"pipeline", "stages"}
        return
    entry = Path("stages") / f"{module}.py"
    expected = {str(entry), *map(str, import_closure(REPO, entry))}
    variants, built = _variants_read(name)
    own = {module_path(REPO, m).relative_to(REPO)
           for m in {lookup(v).module for v in variants} if m is not None}
    for path in own:
        expected |= {str(path), *map(str, import_closure(REPO, path, classes=built))}
    if (package := _discovered(name)) is not None:
        for path in sorted((REPO / package).glob("*.py")):
            if runs_code(path):
                path = path.relative_to(REPO)
                expected |= {str(path), *map(str, import_closure(REPO, path))}
    assert code == set(package_units(expected))
    assert len(code) <= 15, sorted(code)
    in_package = {d for d in code if d.startswith("pipeline/variants/")}
    assert in_package - {"pipeline/variants/__init__.py", "pipeline/variants/_spec.py"} == \
        set(map(str, own))


def test_import_closure_on_a_hand_made_package(tmp_path: Path) -> None:
    files = {
        "pipeline/__init__.py": '"""docstring only: runs no code, so no dep."""\n',
        "pipeline/a.py": "def f():\n    from pipeline import b  # lazy import inside a function\n",
        "pipeline/b.py": "from . import c\nimport numpy\n",
        "pipeline/c.py": "import os\n",
        "pipeline/unused.py": "import pipeline.c\n",
        "stages/__init__.py": "VERSION = 1  # runs code: a dep of every stage module\n",
        "stages/_helper.py": "import pipeline.c as c\n",
        "stages/x.py": "from pipeline.a import f\nfrom stages._helper import c\nimport yaml\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert [str(p) for p in import_closure(tmp_path, Path("stages/x.py"))] == [
        "pipeline/a.py", "pipeline/b.py", "pipeline/c.py", "stages/__init__.py", "stages/_helper.py"]


# Run in a fresh interpreter: records, for every module, what its executed import statements
# asked for (absolute names, `from a import b` giving a and a.b), then imports every stage module.
_TRACE = """
import builtins, importlib, importlib.util, json, sys
edges, real = {}, builtins.__import__
def traced(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__", "")
    base = importlib.util.resolve_name("." * level + name, (globals or {}).get("__package__")) \\
        if level else name
    edges.setdefault(importer, set()).update({base, *(base + "." + f for f in fromlist or ())})
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = traced
for module in sys.argv[1:]:
    importlib.import_module("stages." + module)
print(json.dumps({k: sorted(v) for k, v in edges.items()}))
"""


@pytest.mark.slow
def test_import_closure_covers_what_python_actually_imports() -> None:
    """Cross-check with the interpreter: every project module a stage's import runs is in its
    closure (the ast closure also sees imports inside functions, which importing does not run)."""
    modules = sorted({re.match(r"python -m stages\.(\w+)", body(s)["cmd"]).group(1)
                      for _, s in _committed_stages()})
    proc = subprocess.run([sys.executable, "-c", _TRACE, *modules], cwd=REPO, text=True,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    edges = json.loads(proc.stdout.splitlines()[-1])

    def project_file(name: str) -> str | None:
        path = module_path(REPO, name)
        return str(path.relative_to(REPO)) if path else None

    for module in modules:
        entry = Path("stages") / f"{module}.py"
        closure = {str(entry), *map(str, import_closure(REPO, entry))}
        seen, todo = set(), [f"stages.{module}"]
        while todo:
            for target in edges.get(todo.pop(), ()):
                if project_file(target) and target not in seen:
                    seen.add(target)
                    todo.append(target)
        loaded = {f for f in map(project_file, seen) if f and runs_code(REPO / f)}
        assert loaded, module
        assert loaded - closure == set(), module


@pytest.mark.slow
def test_building_the_graph_imports_no_torch() -> None:
    """The graph is built on every `make graph` and by the first stage of `dvc repro`: it must not
    pay for (or need) the ML stack, not even through a module it imports."""
    code = ("import sys, yaml; from pathlib import Path; import pipeline.graph; "
            "from pipeline.graph.render import render; import stages.graph; "
            "text = render(yaml.safe_load(Path('params.yaml').read_text()), Path('.')); "
            "assert 'train-frequency-static:' in text; "
            "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules); "
            "assert not heavy, f'imported {heavy}'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


# --- exactly the features each variant reads --------------------------------------------------------

def test_each_variant_depends_on_exactly_the_feature_years_it_reads() -> None:
    params = deep_merge(PARAMS, {
        "split": {"train_first": 2010, "train_last": 2012, "dev": 2013, "test": 2014},
        "features": {"window": 3}, "score": {"periods": [2016]},
        "forecast": {"period": 2015, "backtest_periods": [2014]},
        "experiment": {"variants": ALL_VARIANTS, "seeds": [0, 1]}})
    stages = stages_of(params)
    train_history = years(2007, 2012)   # train 2010-2012 and dev 2013, m = 3
    # the history of dev 2013, test 2014 and 2016, and nothing before it: no score stage reads
    # the history of the year before a scored year
    score_history = years(2010, 2015)
    forecast_history = years(2010, 2014)   # 2015 and 2014, each also against the year before
    none: dict[str, list[str]] = {"frequencies": [], "embeddings": []}
    for seed in (0, 1):
        for variant in ("baseline", "baseline-2"):
            assert feature_deps(stages[f"train-{variant}@s{seed}"]) == none
            assert feature_deps(stages[f"score-{variant}@s{seed}"]) == none
            assert feature_deps(stages[f"forecast-{variant}@s{seed}"]) == none
            assert "--frequencies" not in stages[f"train-{variant}@s{seed}"]["cmd"]
        for variant in ("frequency-nolstm", "frequency"):
            assert feature_deps(stages[f"train-{variant}@s{seed}"]) == {
                "frequencies": train_history, "embeddings": []}
            assert feature_deps(stages[f"score-{variant}@s{seed}"]) == {
                "frequencies": score_history, "embeddings": []}
            assert feature_deps(stages[f"forecast-{variant}@s{seed}"]) == {
                "frequencies": forecast_history, "embeddings": []}
        for variant in ("context", "context2"):
            # load_history reads the frequency files too (its `observed` mask)
            assert feature_deps(stages[f"train-{variant}@s{seed}"]) == {
                "frequencies": train_history, "embeddings": train_history}
            assert feature_deps(stages[f"score-{variant}@s{seed}"]) == {
                "frequencies": score_history, "embeddings": score_history}
            assert feature_deps(stages[f"forecast-{variant}@s{seed}"]) == {
                "frequencies": forecast_history, "embeddings": forecast_history}
    # the report's bucket metrics: each scored year's history and the year before it
    assert feature_deps(stages["report"]) == {"frequencies": years(2009, 2015), "embeddings": []}
    # the forecast report: the backtest year 2014 and its history, the history of 2015, and
    # the training years 2010-2012 (the mean-reverting forecaster's strength is fitted on them)
    assert feature_deps(stages["forecast_report"]) == {"frequencies": years(2010, 2014),
                                                       "embeddings": []}
    assert stages["frequencies"]["foreach"] == years(2007, 2015)
    assert stages["embeddings"]["foreach"] == years(2007, 2015)
    plot = stages["frequency_plot"]
    assert feature_deps(plot)["frequencies"] == years(2007, 2015)
    # the later year is read from the corpus table
    score = stages["score-frequency@s0"]
    assert "--periods 2016 --abstracts data/corpus/abstracts.parquet" in score["cmd"]
    assert "data/corpus/abstracts.parquet" in score["deps"]
    assert "--abstracts" not in stages_of(PARAMS)["score-frequency@s0"]["cmd"]


def test_generate_dev_off_generates_for_the_test_period_only() -> None:
    assert "--generate-periods" not in stages_of(PARAMS)["score-frequency@s0"]["cmd"]
    params = copy.deepcopy(PARAMS)
    params["score"]["generate_dev"] = False
    stages = stages_of(params)
    test = str(params["split"]["test"])
    for name in ("score-baseline@s0", "score-frequency@s0"):
        assert f"--generate-periods {test} " in stages[name]["cmd"]
    assert "--generate-periods" not in stages["forecast-frequency@s0"]["cmd"]
    assert "score.generate_dev" in stages["graph"]["params"]


def test_every_score_stage_reads_the_gold_words_computed_once() -> None:
    stages = stages_of(PARAMS)
    assert stages["gold_words"]["outs"] == ["data/gold_words"]
    assert {"data/splits/dev.parquet", "data/splits/test.parquet",
            "data/reference/stopwords.txt"} <= set(stages["gold_words"]["deps"])
    scores = [name for name in stages if name.startswith("score-")]
    assert scores
    for name in scores:
        assert "--gold-words data/gold_words" in stages[name]["cmd"]
        assert "data/gold_words" in stages[name]["deps"]


def test_no_contextual_variant_means_embeddings_only_for_semantic_change() -> None:
    params = copy.deepcopy(PARAMS)
    params["experiment"]["variants"] = ["baseline", "frequency"]
    stages = stages_of(params)
    # only the two groups the semantic-change report compares (null: the first and last
    # training period); no model reads embeddings
    assert stages["embeddings"]["foreach"] == ["2017", "2021"]
    assert feature_deps(stages["semantic_change"]) == {"frequencies": ["2017", "2021"],
                                                       "embeddings": ["2017", "2021"]}
    assert sorted(stages) == sorted(["graph", "download", "parse", "filter", "split", "tokenizer",
                                     "gold_words",
                                     "frequencies", "frequency_plot", "embeddings",
                                     "train-baseline@s0", "train-frequency@s0",
                                     "score-baseline@s0", "score-frequency@s0", "report",
                                     "longtail", "forecast-baseline@s0", "forecast-frequency@s0",
                                     "forecast_report", "signal", "semantic_change",
                                     "semantic_benchmark", "verdicts"])


def test_semantic_change_groups_and_targets() -> None:
    params = copy.deepcopy(PARAMS)
    params["semantic_change"].update(first="2015..2016", last=2019, targets="targets.csv")
    stage = stages_of(params)["semantic_change"]
    assert "--first 2015 2016 --last 2019 --targets targets.csv" in stage["cmd"]
    assert "targets.csv" in stage["deps"]
    # the targets' sentences are encoded by the stage: no embeddings read, none computed for it
    assert feature_deps(stage) == {"frequencies": ["2015", "2016", "2019"], "embeddings": []}
    assert "--embeddings" not in stage["cmd"] and "--max-usages" in stage["cmd"]
    params["experiment"]["variants"] = ["baseline", "frequency"]
    assert "embeddings" not in stages_of(params)
    for first, last, message in (("2019", "2017", "must end before"),
                                 ("2018..2016", None, "not a period or a range")):
        params["semantic_change"].update(first=first, last=last)
        with pytest.raises(UserError, match=message):
            stages_of(params)


def test_semantic_change_off_drops_its_stages_embeddings_and_verdicts_input() -> None:
    params = copy.deepcopy(PARAMS)
    params["experiment"]["variants"] = ["baseline", "frequency"]
    params["semantic_change"].update(run=False, first="2019", last="2017")   # groups unchecked
    stages = stages_of(params)
    assert not {"semantic_change", "semantic_benchmark", "embeddings"} & set(stages)
    verdicts = stages["verdicts"]
    assert "reports/semantic_benchmark.json" not in verdicts["cmd"]
    assert "reports/semantic_benchmark.json" not in verdicts["deps"]
    assert "reports/results.json" in verdicts["deps"]
    # a contextual variant still reads its histories' embeddings
    params["experiment"]["variants"] = ["baseline", "context"]
    assert "embeddings" in stages_of(params)


def test_semantic_change_reads_the_learned_settings_not_the_benchmark() -> None:
    stages = stages_of(PARAMS)
    change, bench = stages["semantic_change"], stages["semantic_benchmark"]
    # one source of the learned methods' settings: the benchmark's params, in both commands
    for key in ("temporal_epochs", "temporal_hidden", "sgns_dim", "sgns_epochs"):
        option = f"--{key.replace('_', '-')} ${{semantic_benchmark.{key}}}"
        assert option in change["cmd"] and option in bench["cmd"]
        assert f"semantic_benchmark.{key}" in change["params"]
    # scoring targets does not wait for the benchmark: its report is only linked
    assert "--benchmark" not in change["cmd"]
    assert not [d for d in change["deps"] if d.startswith("reports/")]
    assert "semantic_benchmark.n_targets" not in change["params"]
    assert "--semeval" not in bench["cmd"]


def test_a_semeval_folder_is_a_benchmark_dep() -> None:
    params = copy.deepcopy(PARAMS)
    params["semantic_benchmark"]["semeval"] = "data/semeval/english"
    bench = stages_of(params)["semantic_benchmark"]
    assert "--semeval data/semeval/english --abstracts" in bench["cmd"]
    assert "data/semeval/english" in bench["deps"]
    assert not any("semeval" in p for p in bench["params"])     # resolved into the cmd


@pytest.mark.parametrize("base", ["joint", "shared"])
def test_continued_n_trains_from_its_seeds_baseline_model(base: str) -> None:
    """continued-N's train stage reads the Baseline model of its own seed (a dep, passed as
    --init-from), trains the whole LM (no --freeze-lm, no cache) with the Baseline's training
    params, and reads neither train.latest_steps (it always takes the Baseline's steps) nor a
    module's params; baseline-N reads train.latest_steps, the Baseline does not."""
    params = deep_merge(PARAMS, {"train": {"base": base}, "experiment": {
        "variants": ["baseline", "baseline-1", "continued-1", "frequency"], "seeds": [0, 1]}})
    stages = stages_of(params)
    baseline = set(stages["train-baseline@s0"]["params"])
    for seed in (0, 1):
        stage = stages[f"train-continued-1@s{seed}"]
        model = f"data/models/baseline-s{seed}"
        assert model in stage["deps"] and f"--init-from {model} " in stage["cmd"]
        assert not any(d.startswith("data/models/") and d != model for d in stage["deps"])
        assert "--freeze-lm" not in stage["cmd"] and "--cache" not in stage["cmd"]
        assert stage["outs"][0] == f"data/models/continued-1-s{seed}"
        assert set(stage["params"]) == baseline
        assert f"data/models/continued-1-s{seed}" in stages[f"score-continued-1@s{seed}"]["deps"]
    assert "train.latest_steps" not in baseline
    assert set(stages["train-baseline-1@s0"]["params"]) == baseline | {"train.latest_steps"}
    assert "--latest-steps ${train.latest_steps}" in stages["train-baseline-1@s0"]["cmd"]


def test_params_of_a_bias_do_not_retrain_baselines() -> None:
    stages = stages_of(PARAMS)
    bias_only = {"train.lr_new", "features.window"}
    for variant in ("baseline", "baseline-2"):
        params = set(stages[f"train-{variant}@s0"]["params"])
        assert not bias_only & params
        assert not any(p.startswith("variants.") for p in params)
        assert "${variants." not in stages[f"train-{variant}@s0"]["cmd"]
        for flag in ("--alpha", "--lstm-hidden", "--context-input", "--rank"):
            assert flag not in stages[f"train-{variant}@s0"]["cmd"]
    frequency = set(stages["train-frequency@s0"]["params"])
    assert "variants.frequency.lstm_hidden" in frequency
    assert not any("context_input" in p or "alpha" in p for p in frequency)
    assert {"variants.context2.context_input", "variants.context2.alpha",
            "variants.context2.lstm_hidden"} <= set(stages["train-context2@s0"]["params"])
    assert "--context-input ${variants.context.context_input}" in stages["train-context@s0"]["cmd"]
    assert "--alpha ${variants.context2.alpha}" in stages["train-context2@s0"]["cmd"]


def test_a_variant_s_settings_are_declared_by_its_own_train_stage_only() -> None:
    """Changing ``variants.<name>.<key>`` reruns only that variant's train stage (and what
    reads its model); each of its settings becomes one option of exactly that stage."""
    from pipeline.models.registry import params_section
    from pipeline.variants._spec import setting_fields

    stages = {**stages_of(PARAMS), **stages_of(COMMITTED)}     # the latter: a control too
    assert "train-frequency-static@s0" in stages
    for name, stage in stages.items():
        declared = [p for p in body(stage).get("params", []) if p.startswith("variants.")]
        if name.startswith("train-"):
            variant = name[len("train-"):].rsplit("@s", 1)[0]
            section = params_section(variant)       # a control reads its variant's
            assert all(p.startswith(f"variants.{section}.") for p in declared), (name, declared)
            for f in setting_fields(lookup(variant).settings):
                flag = "--" + f.name.replace("_", "-")
                assert body(stage)["cmd"].count(f"{flag} ") == 1, (name, flag)
        elif name != "graph":
            assert not declared, (name, declared)
    # the temperature's alpha and context2's are two settings in two sections
    assert "--alpha ${variants.temperature.alpha}" in stages["train-temperature@s0"]["cmd"]
    assert "variants.context2.alpha" not in stages["train-temperature@s0"]["params"]
    assert "--form ${variants.temporal-attention.form}" in \
        stages["train-temporal-attention@s0"]["cmd"]


def test_a_setting_missing_from_params_is_written_out_as_its_default() -> None:
    params = copy.deepcopy(PARAMS)
    del params["variants"]["context2"]["alpha"]
    del params["variants"]["temperature"]
    stages = stages_of(params)
    context2 = stages["train-context2@s0"]
    assert "--alpha learned" in context2["cmd"] and "variants.context2.alpha" not in context2["params"]
    assert "--lstm-hidden ${variants.context2.lstm_hidden}" in context2["cmd"]
    temperature = stages["train-temperature@s0"]
    assert "--rank 32 --alpha 1.0 --beta 0.5 --norm softmax --loss-scale mean" in temperature["cmd"]
    assert not any(p.startswith("variants.") for p in temperature["params"])
    # without the section every variant takes its defaults; a defaulted key makes the graph
    # stage depend on params.yaml (adding the key later makes dvc.yaml stale)
    assert "params.yaml" in stages["graph"]["deps"]
    del params["variants"]
    stages = stages_of(params)
    assert "--lstm-hidden 32" in stages["train-frequency@s0"]["cmd"]   # the default run's
    assert "--time-dim 16 --form residual" in stages["train-temporal-attention@s0"]["cmd"]
    assert not any(p.startswith("variants.") for s in stages.values()
                   for p in body(s).get("params", []))
    assert "params.yaml" in stages["graph"]["deps"]
    assert "params.yaml" not in stages_of(PARAMS)["graph"]["deps"]


@pytest.mark.parametrize(("section", "message"), [
    ({"frequencies": {"lstm_hidden": 8}}, "unknown variant 'frequencies'"),
    ({"frequency-nolstm": {"lstm_hidden": 8}}, "the frequency-nolstm variant has no settings"),
    ({"baseline": {}}, "the baseline variant has no settings"),
    ({"context2": {"lstm_hiden": 8}}, "variants.context2 has no setting lstm_hiden"),
    ({"frequency": {"alpha": 0.5}}, "variants.frequency has no setting alpha"),
])
def test_an_unknown_variant_section_or_setting_is_a_user_error(section, message) -> None:
    params = deep_merge(PARAMS, {"variants": section})
    with pytest.raises(UserError, match=message) as err:
        stages_of(params)
    assert err.value.path.startswith("params.yaml: variants.")


def test_variant_settings_are_checked_for_variants_the_experiment_does_not_train() -> None:
    """A section for a known variant outside ``experiment.variants`` is checked, not used."""
    from pipeline.graph.plan import check_variant_settings

    check_variant_settings(PARAMS)
    check_variant_settings({})
    few = deep_merge(PARAMS, {"experiment": {"variants": ["baseline", "frequency"]}})
    assert not any(name.startswith("train-context2") for name in stages_of(few))
    with pytest.raises(UserError, match="variants.context2 has no setting rnak"):
        stages_of(deep_merge(few, {"variants": {"context2": {"rnak": 3}}}))
    with pytest.raises(UserError, match="must map variant names"):
        check_variant_settings({"variants": ["context"]})


def test_shared_base_trains_temporal_variants_on_the_baseline_model() -> None:
    params = deep_merge(PARAMS, {"train": {"base": "shared"}, "experiment": {"seeds": [0, 1]}})
    stages = stages_of(params)
    for seed in (0, 1):
        for variant in ("frequency-nolstm", "frequency", "context", "context2"):
            stage = stages[f"train-{variant}@s{seed}"]
            assert f"--init-from data/models/baseline-s{seed} --freeze-lm" in stage["cmd"]
            assert f"data/models/baseline-s{seed}" in stage["deps"]
        for variant in ("baseline", "baseline-2"):
            assert "--init-from" not in stages[f"train-{variant}@s{seed}"]["cmd"]
    assert not any("--init-from" in s.get("cmd", "") for s in stages_of(PARAMS).values())


def test_the_frozen_base_cache_stage_is_emitted_by_its_param() -> None:
    """train.cache (with train.base: shared) adds one base_cache stage per seed, reading the
    seed's Baseline; the variants whose module allows it read the cache (the biases on the
    logits and the output-layer heads), the others (temporal attention, the baselines) keep the
    normal path. Off (the default): no stage."""
    variants = ["baseline", "baseline-2", "frequency", "context2", *HEADS, "temporal-attention"]
    off = deep_merge(PARAMS, {"train": {"base": "shared"},
                              "experiment": {"variants": variants, "seeds": [0, 1]}})
    on = deep_merge(off, {"train": {"cache": True}})
    assert not any("base_cache" in name or "--cache " in body(s)["cmd"]
                   for name, s in {**stages_of(off), **stages_of(PARAMS)}.items())
    stages, stages_off = stages_of(on), stages_of(off)
    assert [n for n in stages if n.startswith("base_cache")] == ["base_cache@s0", "base_cache@s1"]
    names = list(stages)
    for seed in (0, 1):
        cache = stages[f"base_cache@s{seed}"]
        assert names.index(f"base_cache@s{seed}") > names.index(f"train-baseline@s{seed}")
        assert f"--model data/models/baseline-s{seed}" in cache["cmd"]
        assert cache["outs"] == [f"data/cache/baseline-s{seed}"]
        assert cache["deps"][0] == "stages/base_cache.py"
        assert {f"data/models/baseline-s{seed}", "data/splits/train.parquet",
                "data/splits/dev.parquet", "data/tokenizer"} <= set(cache["deps"])
        assert cache["params"] == ["train.max_length", "train.precision", "train.cache_storage",
                                   "numerics.kernels"]
        assert all(f"${{{p}}}" in cache["cmd"] for p in cache["params"])
        for variant in variants:
            stage = stages[f"train-{variant}@s{seed}"]
            reads = variant in ("frequency", "context2", *HEADS)
            assert (f"--cache data/cache/baseline-s{seed}" in stage["cmd"]) == reads, variant
            assert (f"data/cache/baseline-s{seed}" in stage["deps"]) == reads, variant
            assert body(stage) == body(stages_off[f"train-{variant}@s{seed}"]) or reads
    for name, stage in stages.items():   # scoring keeps the full model
        if name.startswith("score-"):
            assert "cache" not in stage["cmd"]
    no_reader = deep_merge(on, {"experiment": {"variants": ["baseline", "temporal-attention"]}})
    assert not any(n.startswith("base_cache") for n in stages_of(no_reader))
    heads_only = deep_merge(on, {"experiment": {"variants": ["baseline", "temperature"]}})
    assert [n for n in stages_of(heads_only) if n.startswith("base_cache")] == [
        "base_cache@s0", "base_cache@s1"]


def test_frozen_base_has_one_cache_read_by_training_scoring_and_forecasts() -> None:
    params = deep_merge(PARAMS, {"lm": {"base": "HuggingFaceTB/SmolLM2-135M-Instruct"},
                                 "train": {"base": "frozen", "cache": True},
                                 "experiment": {"variants": ["baseline", "frequency",
                                                             *HEADS, "temporal-attention"],
                                                "seeds": [0, 1]}})
    stages = stages_of(params)
    assert [n for n in stages if n.startswith("base_cache")] == ["base_cache"]
    cache = stages["base_cache"]
    assert cache["cmd"].startswith("python -m stages.base_cache --base ${lm.base} ")
    assert "--test data/splits/test.parquet" in cache["cmd"]
    assert cache["outs"] == ["data/cache/base"]
    assert cache["params"] == ["lm.base", "train.max_length", "train.precision",
                               "train.cache_storage", "numerics.kernels"]
    assert not any(d.startswith("data/models") for d in cache["deps"])
    for seed in (0, 1):
        for variant in ("baseline", "frequency", *HEADS, "temporal-attention"):
            reads = variant != "temporal-attention"   # it changes the hidden states
            for kind in ("train", "score", "forecast"):
                stage = stages[f"{kind}-{variant}@s{seed}"]
                assert ("--cache data/cache/base" in stage["cmd"]) == reads, (kind, variant)
                assert ("data/cache/base" in stage["deps"]) == reads, (kind, variant)
            train = stages[f"train-{variant}@s{seed}"]["cmd"]
            assert "--freeze-lm" in train and "--init-from" not in train


def test_adapted_base_has_a_trunk_cache_and_one_final_cache_per_seed() -> None:
    """train.base: adapted: one trunk_cache; each seed's Baseline adapts its top blocks
    from it, and its base_cache-s<seed> computes the adapted final states from it (train, dev and
    test: score and forecast read them); baseline-0 (the LM as it is) reads base_cache, computed
    from the trunk too; a variant whose module changes the hidden states trains through the LM."""
    variants = ["baseline", "baseline-0", "frequency", "temporal-attention"]
    params = deep_merge(PARAMS, {"lm": {"base": "HuggingFaceTB/SmolLM2-135M-Instruct"},
                                 "train": {"base": "adapted", "cache": True, "adapt_layers": 3},
                                 "experiment": {"variants": variants, "seeds": [0, 1]}})
    stages = stages_of(params)
    names = list(stages)
    assert [n for n in names if "cache" in n] == ["trunk_cache", "base_cache", "base_cache-s0",
                                                   "base_cache-s1"]
    trunk = stages["trunk_cache"]
    assert trunk["cmd"].startswith("python -m stages.base_cache --base ${lm.base} --trunk-only "
                                   "--adapt-layers ${train.adapt_layers} ")
    assert trunk["outs"] == ["data/cache/trunk"] and "data/splits/test.parquet" in trunk["deps"]
    assert "train.adapt_layers" in trunk["params"]
    unadapted = stages["base_cache"]
    assert "--base ${lm.base} --trunk data/cache/trunk" in unadapted["cmd"]
    assert unadapted["outs"] == ["data/cache/base"] and "data/cache/trunk" in unadapted["deps"]
    for seed in (0, 1):
        cache = stages[f"base_cache-s{seed}"]
        assert names.index(f"base_cache-s{seed}") > names.index(f"train-baseline@s{seed}")
        assert f"--model data/models/baseline-s{seed} --trunk data/cache/trunk" in cache["cmd"]
        assert {f"data/models/baseline-s{seed}", "data/cache/trunk"} <= set(cache["deps"])
        assert not any(d.startswith("data/splits") for d in cache["deps"])   # the trunk's
        own = f"data/cache/baseline-s{seed}"
        baseline = stages[f"train-baseline@s{seed}"]
        assert "--trunk data/cache/trunk --adapt-layers ${train.adapt_layers}" in baseline["cmd"]
        assert "--freeze-lm" not in baseline["cmd"] and "--cache" not in baseline["cmd"]
        assert "train.adapt_layers" in baseline["params"]
        reference = stages[f"train-baseline-0@s{seed}"]["cmd"]
        assert "--freeze-lm --cache data/cache/base" in reference and "--init-from" not in reference
        frequency = stages[f"train-frequency@s{seed}"]["cmd"]
        assert (f"--init-from data/models/baseline-s{seed} --freeze-lm --cache {own}"
                in frequency)
        attention = stages[f"train-temporal-attention@s{seed}"]["cmd"]
        assert "--freeze-lm" in attention and "--cache" not in attention
        for kind in ("score", "forecast"):
            for variant, cache_dir in (("baseline", own), ("frequency", own),
                                       ("baseline-0", "data/cache/base")):
                stage = stages[f"{kind}-{variant}@s{seed}"]
                assert f"--cache {cache_dir} " in stage["cmd"], (kind, variant)
                assert cache_dir in stage["deps"], (kind, variant)
            assert "--cache" not in stages[f"{kind}-temporal-attention@s{seed}"]["cmd"]
    without = deep_merge(params, {"experiment": {"variants": ["baseline", "frequency"]}})
    assert "base_cache" not in stages_of(without) and "trunk_cache" in stages_of(without)


@pytest.mark.parametrize("change,message", [
    ({"train": {"cache": True}}, "train.cache: true caches a frozen LM .* but train.base is joint"),
    ({"train": {"base": "frozen", "cache": True}}, "lm.base is scratch"),
    ({"train": {"max_length": 96}, "score": {"max_new_tokens": 96}},
     "score.max_new_tokens 96 does not fit the models' context length train.max_length 96"),
    ({"score": {"n_generate": 0}}, r"score's decoding settings are refused: n \(abstracts to "
                                   r"generate\) must be >= 1, got 0"),
    ({"forecast": {"n_generate": 0}}, "forecast's decoding settings are refused"),
    ({"score": {"min_new_tokens": 9, "max_new_tokens": 8}}, "min_new_tokens"),
    ({"score": {"top_p": 0}}, "decoding settings are refused"),
    ({"train": {"base": "frozen"}, "lm": {"base": "gpt2"}}, "needs train.cache: true"),
    ({"train": {"base": "frozen", "cache": True}, "lm": {"base": "gpt2"},
      "experiment": {"variants": ["baseline", "baseline-2"]}}, "baseline-2 fine-tune the LM"),
    ({"train": {"base": "shared", "cache": "yes"}}, "train.cache must be true or false"),
    ({"train": {"base": "shared"}, "experiment": {"variants": ["frequency"]}}, "baseline"),
    ({"experiment": {"variants": ["frequency", "frequency-static"]}},   # the report needs it
     "report compares every variant with the Baseline, but `baseline` is not among"),
    ({"train": {"base": "sometimes"}}, "joint, shared, frozen or adapted"),
    ({"train": {"base": "adapted", "cache": True}}, "train.base: adapted starts from a pretrained"),
    ({"train": {"base": "adapted"}, "lm": {"base": "gpt2"}}, "adapted needs train.cache: true"),
    ({"train": {"base": "adapted", "cache": True, "adapt_layers": 0}, "lm": {"base": "gpt2"},
      "experiment": {"variants": ["baseline"]}}, "train.adapt_layers must be >= 1"),
    ({"train": {"base": "adapted", "cache": True}, "lm": {"base": "gpt2"},
      "experiment": {"variants": ["baseline", "baseline-2"]}}, "baseline-2 fine-tune the LM"),
    ({"experiment": {"variants": ["baseline", "baseline-0"]}}, "baseline-0 is a pretrained LM"),
    ({"experiment": {"variants": ["baseline-4"]}}, "baseline-4 needs 1 .. 3"),
    ({"experiment": {"variants": ["frequencies"]}}, "unknown variant"),
    ({"features": {"window": 0}}, "window"),
    ({"split": {"dev": 2019}}, "train_first <= train_last < dev < test"),
    ({"split": {"train_first": 2020}}, "train_first 2020 is after split.train_last 2019"),
    ({"score": {"periods": [2021, 2021]}}, "distinct"),
    ({"forecast": {"period": 2021, "backtest_periods": [2020, 2021]}},
     "before the forecast period 2021"),
    ({"forecast": {"backtest_periods": [2019]}}, "after the training periods"),
    ({"split": {"period": "week"}}, "unknown period kind 'week'"),
    ({"split": {"dev": "2020H2"}}, r"split.dev = '2020H2': '2020H2' is a half label"),
    ({"score": {"periods": ["2021Q1"]}}, "score.periods = '2021Q1'"),
    ({"forecast": {"seeds": [7]}}, r"forecast.seeds \[7\] are not all seeds every variant runs"),
    ({"forecast": {"period": "2022-01"}}, "forecast.period = '2022-01'"),
    ({"split": {"period": "half"}}, r"split.train_first = 2017: '2017' is a year label, expected "
                                    r"a half label such as 2020H2"),
])
def test_bad_structural_params_are_refused_naming_the_param(change, message) -> None:
    with pytest.raises(UserError, match=message) as err:
        build(deep_merge(PARAMS, change), REPO)
    assert "params.yaml" in str(err.value)


def test_settings_that_cannot_change_results_are_not_params() -> None:
    for section in ("filter", "train", "score"):
        assert not {"device", "threads", "workers"} & set(PARAMS[section]), section
    for name, stage in stages_of(PARAMS).items():
        spec = body(stage)
        assert "--threads" not in spec["cmd"] and "--workers" not in spec["cmd"], name
        if name != "embeddings":   # its device picks the encoder's dtype, which changes results
            assert "--device" not in spec["cmd"], name


def test_paper_profile_graph() -> None:
    paper = yaml.safe_load((REPO / "profiles" / "paper.yaml").read_text())
    stages = stages_of(paper)
    # up to 2021: the forecast of 2022 reads the history 2020-2021 (and 2019-2020 before it)
    assert stages["frequencies"]["foreach"] == years(2001, 2021)
    assert stages["embeddings"]["foreach"] == years(2001, 2021)
    assert feature_deps(stages["train-context2@s2"])["embeddings"] == years(2001, 2019)
    # scoring 2020-2021 reads their own histories, 2018-2020, and not 2017 (the period before's)
    assert feature_deps(stages["score-context2@s2"])["embeddings"] == years(2018, 2020)


def half_year_params() -> dict[str, Any]:
    """A half-year setting: train 2018H1-2020H1, dev 2020H2, test 2021H1, window 2."""
    return deep_merge(PARAMS, {
        "split": {"period": "half", "train_first": "2018H1", "train_last": "2020H1",
                  "dev": "2020H2", "test": "2021H1"},
        "score": {"periods": ["2020H2", "2021H1"]},
        "forecast": {"period": None, "backtest_periods": ["2021H1"]},
        "experiment": {"variants": ["baseline", "frequency", "context"]}})


def halves(first: str, last: str) -> list[str]:
    from pipeline.corpus.periods import span
    return span(first, last)


def test_half_year_graph_names_stages_and_files_by_label() -> None:
    stages = stages_of(half_year_params())
    assert stages["frequencies"]["foreach"] == halves("2017H1", "2021H1")
    assert stages["embeddings"]["foreach"] == halves("2017H1", "2021H1")
    assert "--period ${item}" in body(stages["frequencies"])["cmd"]
    assert body(stages["frequencies"])["outs"] == ["data/features/frequencies/${item}.parquet"]
    # history of 2018H1..2020H1 and of the dev 2020H2, m = 2, across the year boundaries
    assert feature_deps(stages["train-frequency@s0"])["frequencies"] == halves("2017H1", "2020H1")
    # scoring 2020H2 and 2021H1 reads their own histories only, not 2019H1
    assert feature_deps(stages["score-context@s0"])["embeddings"] == halves("2019H2", "2020H2")
    # forecast.period null: the period after the latest of split.test and score.periods
    forecast = stages["forecast-frequency@s0"]["cmd"]
    assert "--period 2021H2 --backtest-periods 2021H1" in forecast
    assert feature_deps(stages["forecast-frequency@s0"])["frequencies"] == \
        halves("2019H2", "2021H1")
    split = stages["split"]
    assert "--period ${split.period}" in split["cmd"] and "--dev ${split.dev}" in split["cmd"]
    assert "--needs" not in split["cmd"]  # every period read is within the split's own range
    assert "--rejects data/corpus/period_rejects.parquet" in split["cmd"]
    assert "data/corpus/period_rejects.parquet" in split["outs"]
    assert {"split", "features.window"} <= set(split["params"])
    # the rendered YAML says the labels as strings, so DVC names the stages frequencies@2020H2
    text = render(half_year_params(), REPO)
    assert ", 2020H2, " in text and "python -m stages.frequencies --period ${item}" in text


def test_split_needs_the_periods_later_stages_read() -> None:
    params = deep_merge(PARAMS, {"score": {"periods": [2020, 2021, 2023]},
                                 "forecast": {"period": None, "backtest_periods": [2020]}})
    stages = stages_of(params)
    # 2023 is scored (so its history 2021-2022 is read); the forecast of 2024 reads 2022-2023
    assert "--needs 2022 2023 " in stages["split"]["cmd"]
    assert "--period 2024 " in stages["forecast-frequency@s0"]["cmd"]


SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"


# --- per-seed stages written once -------------------------------------------------------------------

@pytest.mark.parametrize("regime", [{}, {"train": {"base": "shared"}},
                                    {"train": {"base": "shared", "cache": True}},
                                    {"lm": {"base": SMOL}, "train": {"base": "frozen", "cache": True}},
                                    {"lm": {"base": SMOL}, "train": {"base": "adapted", "cache": True}}])
def test_folded_seeds_expand_to_the_stages_of_every_run(regime: dict[str, Any]) -> None:
    """Each per-seed family is one foreach stage, and DVC's expansion of it is exactly the
    stage of every run written out (the same cmd, deps, params and outs, with the seed's paths);
    a family whose name another stage holds (base_cache beside base_cache-s0) stays apart."""
    variants = ["baseline", "frequency", "frequency-static", "temperature"]
    params = deep_merge(PARAMS, {**regime, "experiment": {"variants": variants, "seeds": [0, 1, 2]}})
    folded = build(params, REPO)["stages"]
    runs = expand(folded)
    for name, stage in runs.items():
        if (m := re.fullmatch(r"(train|score|forecast)-(.+)@s(\d)", name)):
            variant, seed = m.group(2), int(m.group(3))
            assert f"data/models/{variant}-s{seed}" in str(stage), name
            if m.group(1) == "train":
                assert f"--seed {seed} " in stage["cmd"]
    assert {f"train-{v}@s{s}" for v in variants for s in (0, 1, 2)} <= set(runs)
    seeds = [n for n, s in folded.items() if isinstance(s.get("foreach"), dict)]
    assert {f"{kind}-{v}" for kind in ("train", "score", "forecast") for v in variants} \
        <= set(seeds)


def test_a_family_that_differs_by_more_than_its_seed_stays_written_out() -> None:
    stages = {"a-s0": {"cmd": "x --seed 0 --out o/a-s0", "deps": ["shared"]},
              "a-s1": {"cmd": "x --seed 1 --out o/a-s1", "deps": ["other"]},
              "b-s0": {"cmd": "y --seed 0 --out o/b-s0"},
              "b-s1": {"cmd": "y --seed 1 --out o/b-s1"}}
    folded = fold_seeds(stages)
    assert list(folded) == ["a-s0", "a-s1", "b"]
    assert folded["b"] == {"foreach": {"s0": 0, "s1": 1},
                           "do": {"cmd": "y --seed ${item} --out o/b-${key}"}}
    assert expand(folded) == {"a-s0": stages["a-s0"], "a-s1": stages["a-s1"],
                              "b@s0": stages["b-s0"], "b@s1": stages["b-s1"]}


# --- stale graphs are caught --------------------------------------------------------------------------

def test_stale_message_names_the_stages() -> None:
    current = render(PARAMS, REPO)
    fewer = deep_merge(PARAMS, {"experiment": {"variants": ALL_VARIANTS[:-1], "seeds": [0, 1]}})
    message = stale_message(current, render(fewer, REPO))
    assert "missing stages: train-baseline@s1" in message
    assert "stages no longer in params.yaml: train-context2@s0" in message
    assert "changed stages:" in message and "report" in message


@pytest.mark.slow
def test_stale_graph_stops_dvc_repro_before_any_stage(tmp_path: Path) -> None:
    proj = make_project(tmp_path)
    # a structural param changed, dvc.yaml not regenerated
    write_params(proj, {"experiment": {"seeds": [0, 1, 2, 3]}})
    proc = run_dvc(proj, "repro", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "dvc.yaml is stale for params.yaml" in out and "make graph" in out
    assert "missing stages: train-baseline@s3" in out
    assert "Running stage 'download'" not in out and not (proj / "data" / "raw").exists()

    # a new import in a stage's code: its code deps are stale too
    split = proj / "stages" / "split.py"
    split.write_text(split.read_text() + "\nimport pipeline.evaluation.meteor  # noqa: E402,F401\n")
    write_graph(proj)
    assert "pipeline/evaluation" in yaml.safe_load((proj / "dvc.yaml").read_text())[
        "stages"]["split"]["deps"]
    # (split imports nothing from pipeline.stats before: a new package among its code deps)
    split.write_text(split.read_text() + "\nimport pipeline.stats.multiple  # noqa: E402,F401\n")
    proc = run_dvc(proj, "repro", "split", check=False)
    assert proc.returncode != 0 and "changed stages: split" in proc.stdout + proc.stderr


def test_forecast_seeds_choose_the_runs_that_forecast() -> None:
    params = deep_merge(PARAMS, {"experiment": {"variants": ["baseline", "frequency"],
                                                "seeds": [0, 1, 2]},
                                 "forecast": {"seeds": [1]}})
    stages = stages_of(params)
    assert sorted(n for n in stages if n.startswith("forecast-")) == [
        "forecast-baseline@s1", "forecast-frequency@s1"]
    assert {"score-baseline@s0", "score-frequency@s2"} <= set(stages)
    deps = body(stages["forecast_report"])["deps"]
    assert "data/forecast/frequency-s1" in deps and "data/forecast/frequency-s0" not in deps
    assert "--forecast-seeds 1 --period" in body(stages["forecast_report"])["cmd"]


def test_other_seeds_train_fewer_runs_outside_the_temporal_gain_claims() -> None:
    """experiment.other_seeds: Frequency, its control and the Baseline (the base of every seed's
    shared-base run) run every seed; Context only the other seeds; forecasts default to the seeds
    every variant runs; a seed outside experiment.seeds is refused, naming the key."""
    params = deep_merge(PARAMS, {
        "experiment": {"variants": ["baseline", "frequency", "frequency-static", "context"],
                       "seeds": [0, 1, 2, 3, 4], "other_seeds": [0, 1, 2]},
        "train": {"base": "shared"}})
    stages = stages_of(params)
    trained = {n.removeprefix("train-") for n in stages if n.startswith("train-")}
    assert {f"{v}@s{s}" for v in ("baseline", "frequency", "frequency-static")
            for s in range(5)} <= trained
    assert {n for n in trained if n.startswith("context@")} == {"context@s0", "context@s1",
                                                                 "context@s2"}
    assert "score-context@s3" not in stages and "score-frequency-static@s4" in stages
    assert sorted(n for n in stages if n.startswith("forecast-context")) == [
        "forecast-context@s0", "forecast-context@s1", "forecast-context@s2"]
    assert "--forecast-seeds 0 1 2 --period" in body(stages["forecast_report"])["cmd"]
    report_deps = body(stages["report"])["deps"]
    assert "data/scores/context-s2" in report_deps and "data/scores/context-s3" not in report_deps
    with pytest.raises(UserError, match="experiment.other_seeds"):
        stages_of(deep_merge(params, {"experiment": {"other_seeds": [7]}}))
    with pytest.raises(UserError, match="forecast.seeds"):
        stages_of(deep_merge(params, {"forecast": {"seeds": [4]}}))
