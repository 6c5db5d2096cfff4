"""Each declared stage's command line and its dvc.yaml entry come from one declaration
(pipeline/interfaces/), so the options the graph passes are exactly those the stage takes."""

import functools
import importlib
import pkgutil
import re
import shlex
from pathlib import Path

import pytest
import yaml

import pipeline.interfaces
from pipeline.graph.defaults import SCHEMA, TEMPLATE, command_text
from pipeline.infra.interface import (Input, Output, Params, Settings, StageInterface, Switch,
                                      Value)
from pipeline.infra.schema.params import FilterConfig, option_name

REPO = Path(__file__).resolve().parents[1]
DECLARED = {m.name: importlib.import_module(f"pipeline.interfaces.{m.name}").INTERFACE
            for m in pkgutil.iter_modules(pipeline.interfaces.__path__)
            if hasattr(importlib.import_module(f"pipeline.interfaces.{m.name}"), "INTERFACE")}
# Declared stages outside the default graph (reports/dvc.yaml, a Makefile target each): their
# commands are checked in test_report_stages_take_their_commands.
BY_HAND = {"forecast_skill"}
# Appended to every torch stage's command by the graph (pipeline.graph.build.with_numerics).
NUMERICS = "--kernels"


@functools.cache
def _graphs() -> list[tuple[dict, dict]]:
    """(stages, params) of dvc.yaml and of every profile's graph (the training regimes' cache
    stages are in the latter only)."""
    from pipeline.graph.build import ROOT, build
    from pipeline.graph.profiles import PROFILES, params as profile_params

    from pipeline.models.registry import all_variants
    committed = yaml.safe_load((REPO / "params.yaml").read_text())
    found = [(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"], committed)]
    # every variant of the registry, whose feature stages no profile may run (forecast_features)
    every = {**committed, "experiment": {"variants": list(all_variants()), "seeds": [0]}}
    found.append((build(every)["stages"], SCHEMA.complete(every)))
    for path in sorted((ROOT / PROFILES).glob("*.yaml")):
        params = profile_params(path.stem, ROOT)
        found.append((build(params)["stages"], SCHEMA.complete(params)))
    return found


def _entries(name: str) -> list[tuple[dict, str | None, dict]]:
    """Every entry of :func:`_graphs` that runs stage ``name``, with its first ``foreach`` item
    (of a mapping: its first key and value) and its params."""
    found = []
    for stages, params in _graphs():
        for stage in stages.values():
            spec, item = (stage["do"], _first(stage["foreach"])) if "do" in stage else (stage, None)
            if spec["cmd"].split()[2] == f"stages.{name}":
                found.append((spec, item, params))
    return found


def _first(foreach: list | dict) -> str | tuple[str, dict]:
    return next(iter(foreach.items())) if isinstance(foreach, dict) else foreach[0]


def _resolved(cmd: str, params: dict, item: str | tuple[str, dict] | None) -> list[str]:
    """The command as DVC runs it: each ``${key}`` read from params.yaml (``${item}``, and of a
    mapping's item ``${key}`` and ``${item.<field>}``, from ``item``)."""
    def fill(match) -> str:
        dotted = match["inner"].strip()
        if isinstance(item, tuple) and dotted in ("key", "item") or dotted.startswith("item."):
            key, value = item
            if dotted == "key" or dotted == "item":   # a seed's foreach: {s0: 0}
                return str(key if dotted == "key" else value)
            return str(value[dotted.removeprefix("item.")])
        if dotted == "item":
            return str(item)
        value = params
        for part in dotted.split("."):
            value = value[part]
        return command_text(value, SCHEMA.nones(dotted))
    return shlex.split(TEMPLATE.sub(fill, cmd))[3:]


def _flags(words: list[str]) -> set[str]:
    return {w for w in words if w.startswith("--")}


def test_every_data_stage_is_declared() -> None:
    assert {"download", "parse", "filter", "split", "tokenizer", "frequencies", "embeddings",
            "frequency_plot", "verdicts", "longtail", "forecast_report", "score", "forecast",
            "report", "semantic_change", "semantic_benchmark", "base_cache", "train", "graph",
            "gold_words", "signal"} <= set(DECLARED)


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_the_stage_command_line_is_its_declaration(name: str) -> None:
    """The stage's parser has one option per declared one (a settings group: one per field)."""
    interface = DECLARED[name]
    stage = importlib.import_module(interface.module)
    parser = stage.build_parser()
    declared = set()
    for option in interface.options:
        if isinstance(option, Params):
            declared |= {option_name(f) for f in option.fields()}
        elif isinstance(option, Settings):
            continue   # picked per run: the train stage's variant's own settings
        else:
            declared.add(option.flag)
    taken = {a.option_strings[0] for a in parser._actions if a.dest not in ("help", "debug")}
    assert taken == declared
    assert all(a.help for a in parser._actions)


@pytest.mark.parametrize("name", sorted(set(DECLARED) - BY_HAND))
def test_dvc_yaml_passes_exactly_what_the_stage_takes(name: str) -> None:
    """Every command of dvc.yaml and of every profile's graph parses with the stage's own
    parser, and passes every option the declaration says the graph passes (an optional one may
    be left out)."""
    interface = DECLARED[name]
    entries = _entries(name)
    assert entries, f"stage {name} is declared but in no graph"
    parser = importlib.import_module(interface.module).build_parser()
    local = {o.flag for o in interface.options if not isinstance(o, (Input, Output, Params))
             and not o.graph}
    for spec, item, params in entries:
        words = _resolved(spec["cmd"], params, item)
        if any(isinstance(o, Settings) for o in interface.options):   # the variant's settings
            parser = importlib.import_module(interface.module).build_parser(
                words[words.index("--variant") + 1])
        parser.parse_args(words)   # exits (a failed test) on an option the stage does not take
        flags = _flags(words)
        assert not flags & local, f"{name}: the graph passes a local option"
        for option in interface.passed():
            if isinstance(option, Params):
                if option.unpack or option.filled or option.optional:
                    continue   # DVC writes the section's keys / the graph's values: parsed above
                wanted = {option_name(f) for f in option.fields()}
                assert wanted <= flags, name
            elif isinstance(option, (Input, Output)) and option.required or \
                    isinstance(option, Value) and option.params() and not option.optional:
                assert option.flag in flags, f"{name}: {option.flag}"
        if NUMERICS in flags:
            assert any(isinstance(o, Params) and not o.graph for o in interface.options)


def test_an_entry_renders_deps_params_and_outputs_in_declaration_order() -> None:
    interface = StageInterface("demo", (
        Input("--data", "what it reads"),
        Params(FilterConfig, "filter", "filters", keys=("seed", "min_words")),
        Value("--base", "the base", param="lm.base"),
        Value("--needs", "periods", many=True, default=[]),
        Switch("--fast", "go fast"),
        Value("--workers", "processes", type=int, default=None, graph=False),
        Output("--out-dir", "folder"),
        Output("--metrics", "headline", kind="metrics", dvc={"cache": False}),
    ))
    entry = interface.entry({"data": "in.parquet", "needs": [], "fast": True, "out_dir": "out",
                             "metrics": "m.json"}, code=["stages/demo.py"], deps=["stamp"],
                            files={"out_dir": ["out/a", "out/b"]})
    assert entry == {
        "cmd": "python -m stages.demo --data in.parquet --seed ${filter.seed} "
               "--min-words ${filter.min_words} --base ${lm.base} --fast --out-dir out "
               "--metrics m.json",
        "deps": ["stages/demo.py", "in.parquet", "stamp"],
        "params": ["filter.seed", "filter.min_words", "lm.base"],
        "outs": ["out/a", "out/b"],
        "metrics": [{"m.json": {"cache": False}}],
    }
    with pytest.raises(ValueError, match="--data"):
        interface.entry({"out_dir": "out", "metrics": "m.json"})
    with pytest.raises(ValueError, match="workers"):
        interface.entry({"data": "d", "out_dir": "o", "metrics": "m", "workers": 2})


def test_filled_optional_and_chosen_settings_render_where_the_graph_says() -> None:
    """A ``filled`` settings field is the graph's value (a true bool: the flag alone), an
    ``optional`` record is passed only when the graph says so, a :class:`Settings` record is the
    graph's :class:`Params` at its place, and a path two options read is one dep."""
    from pipeline.infra.schema.config import ScoreConfig, TrainConfig

    interface = StageInterface("demo", (
        Params(ScoreConfig, "score", "periods", keys=("periods",), filled=True),
        Params(TrainConfig, "train", "frozen", keys=("freeze_lm",), filled=True),
        Params(FilterConfig, "filter", "seed", keys=("seed",), optional=True),
        Settings("settings"),
        Value("--k", "K", type=int, default=None, param="train.adapt_layers", optional=True),
        Input("--a", "first"),
        Input("--b", "second"),
    ))
    entry = interface.entry({"periods": ["2020", "2021"], "freeze_lm": True, "seed": True,
                             "settings": Params(FilterConfig, "filter", "words",
                                                keys=("min_words",)),
                             "a": "x", "b": "x"})
    assert entry["cmd"] == ("python -m stages.demo --periods 2020 2021 --freeze-lm --seed "
                            "${filter.seed} --min-words ${filter.min_words} --a x --b x")
    assert entry["params"] == ["filter.seed", "filter.min_words"] and entry["deps"] == ["x"]
    bare = interface.entry({"periods": [], "freeze_lm": False, "a": "x", "b": "y", "k": True})
    assert bare["cmd"] == "python -m stages.demo --k ${train.adapt_layers} --a x --b y"
    assert bare["params"] == ["train.adapt_layers"]


def test_report_stages_take_their_commands() -> None:
    """Each `python -m stages.<name> ...` of reports/dvc.yaml's stages (a cmd of several joined
    by `&&`) and of the Makefile parses with that stage's own parser (make variables filled in
    with placeholder paths)."""
    root = Path(__file__).resolve().parents[1]
    stages = yaml.safe_load((root / "reports" / "dvc.yaml").read_text())["stages"]
    commands = [part.strip() for stage in stages.values()
                for part in " ".join(stage["cmd"].split()).split("&&")]
    commands += [line.strip() for line in (root / "Makefile").read_text().splitlines()
                 if line.startswith("\tpython -m stages.")]
    seen = set()
    for command in commands:
        if not command.startswith("python -m stages."):
            continue
        words = [w for w in shlex.split(re.sub(r"\$\((\w+)\)", r"/tmp/\1", command))
                 if not re.match(r"\d?>", w)]   # a shell redirection, not an argument
        name = words[2].removeprefix("stages.")
        if name not in DECLARED:
            continue
        seen.add(name)
        importlib.import_module(DECLARED[name].module).build_parser().parse_args(words[3:])
    assert BY_HAND <= seen, f"no report stage runs {sorted(BY_HAND - seen)}"
