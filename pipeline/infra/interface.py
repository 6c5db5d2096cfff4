"""A stage's interface, declared once: the options it takes, from which both its command line
(argparse, built in ``stages/_lib/args.py``) and its ``dvc.yaml`` entry (:meth:`StageInterface.entry`,
called by the stage graph) are made, so the two cannot drift apart.

A declaration lists its options in the order the command takes them, each a record:

* :class:`Input`: a file or folder the stage reads; its path is a DVC dep;
* :class:`Output`: a file or folder it writes, listed under ``outs``, ``metrics`` or ``plots``
  with its DVC options (``cache: false``, a plot's axes);
* :class:`Params`: the fields of a typed settings dataclass (:mod:`pipeline.infra.schema.params`),
  one ``--flag ${section.key}`` each and the keys as the stage's ``params``, or the whole section in
  DVC's dict unpacking (``${data.columns}`` becomes ``--id X --date Y ...``). One settings class may
  be split over several records (its fields at several places of the command, as
  ``ForecastConfig``'s; or some fields ``filled``: values the graph resolves into the command, as
  ``score.periods``);
* :class:`Value`: one plain value: bound to a params key (``--base ${lm.base}``, a param; with
  ``optional``, only where the graph says so), or filled in by the graph (``--period ${item}``,
  ``--needs 2021 2022``);
* :class:`Switch`: an on/off flag the graph passes when true;
* :class:`Settings`: a settings class picked per run (the train stage's variant's own): the
  graph gives it as a :class:`Params` record, the command line as ``parser_for``'s ``chosen``.

An option with ``graph=False`` is never passed by the graph (a setting that cannot change the
outputs, such as a worker count, or one another part of the graph appends, such as the torch
stages' ``--kernels``): the command line has it, the ``dvc.yaml`` entry does not.

The graph fills in paths and values by the option's ``dest`` (``--out-dir`` -> ``out_dir``), and
the DVC paths of a folder option whose files are the deps or outputs, and adds the code deps; nothing here imports argparse or the graph, so a stage module may import its
declaration without making the planner one of its code deps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.infra.schema.params import option_name, param_key


class _Required:
    """The default of a value the command line must give."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class Input:
    """A file or folder the stage reads (several with ``many``): a DVC dep."""

    flag: str
    help: str
    many: bool = False
    required: bool = True

    @property
    def dest(self) -> str:
        return _dest(self.flag)


@dataclass(frozen=True)
class Output:
    """A file or folder the stage writes, under ``kind`` (outs, metrics or plots) with the DVC
    options ``dvc`` (``{"cache": False}`` ...); ``beside``: files the stage writes next to it,
    by suffix (a plot's PNG), each with its DVC options."""

    flag: str
    help: str
    kind: Literal["outs", "metrics", "plots"] = "outs"
    dvc: Mapping[str, Any] = field(default_factory=dict)
    required: bool = True
    beside: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return _dest(self.flag)

    def entries(self, path: str) -> list[str | dict[str, Any]]:
        main = {path: dict(self.dvc)} if self.dvc else path
        return [main, *({_with_suffix(path, s): dict(o)} if o else _with_suffix(path, s)
                        for s, o in self.beside.items())]


def _with_suffix(path: str, suffix: str) -> str:
    stem, dot, _ = path.rpartition(".")
    return (stem if dot else path) + suffix


@dataclass(frozen=True)
class Params:
    """The fields of the settings dataclass ``cls`` (only ``keys``, in that order, when given),
    the params section ``section`` (``filter``, ``data.columns``); ``unpack``: passed as DVC's
    dict unpacking of the whole section (its keys spelled as in params.yaml). The stage's params
    are the keys, or with ``whole`` the section as one param (any key of it, also one added
    later); ``filled``: none, the graph gives each field's value (by field name) as a
    :class:`Value`'s (a label it resolves, such as ``forecast.period``; a true bool: the flag
    alone); ``optional``: passed, with its params, only when the graph's value under its first
    field's name is true (``features.window``, for a variant with a history)."""

    cls: type
    section: str
    title: str
    keys: tuple[str, ...] | None = None
    unpack: bool = False
    whole: bool = False
    graph: bool = True
    filled: bool = False
    optional: bool = False

    def fields(self) -> list[dataclasses.Field]:
        by_name = {f.name: f for f in dataclasses.fields(self.cls)}
        return [by_name[k] for k in self.keys] if self.keys is not None else list(by_name.values())

    def params(self) -> list[str]:
        if self.filled:
            return []
        if self.whole:
            return [self.section]
        return [f"{self.section}.{param_key(f)}" for f in self.fields()]

    def command(self) -> str:
        if self.unpack:
            return f"${{{self.section}}}"
        return " ".join(f"{option_name(f)} ${{{self.section}.{param_key(f)}}}"
                        for f in self.fields())


@dataclass(frozen=True)
class Value:
    """One plain value: ``param`` (a dotted params key, or several for a value of several words)
    passes ``${param}`` and makes it a param; otherwise the graph gives the value (a list for
    ``many``: any number, or exactly that many; None or empty: left out). ``optional`` with a
    ``param``: passed, and a param, only when the graph's value for it is true (``--adapt-layers
    ${train.adapt_layers}`` of a stage reading a trunk cache)."""

    flag: str
    help: str
    type: Callable[[str], Any] = str
    many: bool | int = False
    default: Any = REQUIRED
    choices: tuple[Any, ...] | None = None
    param: str | tuple[str, ...] | None = None
    graph: bool = True
    metavar: str | tuple[str, ...] | None = None
    dest_name: str | None = None
    optional: bool = False

    @property
    def dest(self) -> str:
        return self.dest_name or _dest(self.flag)

    def params(self) -> list[str]:
        return [] if self.param is None else \
            [self.param] if isinstance(self.param, str) else list(self.param)


@dataclass(frozen=True)
class Switch:
    """An on/off flag (off by default), passed when the graph's value is true."""

    flag: str
    help: str
    graph: bool = True

    @property
    def dest(self) -> str:
        return _dest(self.flag)


@dataclass(frozen=True)
class Settings:
    """A settings class picked per run, at its place in the command: the graph gives it (by
    ``dest``) as a :class:`Params` record, or None for none."""

    dest: str
    graph: bool = True


Option = Input | Output | Params | Value | Switch | Settings


def _required(option: Option) -> bool:
    return getattr(option, "required", False) or getattr(option, "default", None) is REQUIRED


def _words(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


@dataclass(frozen=True)
class StageInterface:
    """Stage ``name`` (``stages/<name>.py``, run as ``python -m stages.<name>``): its options;
    ``one_of``: flags of which the command line takes exactly one (``--model`` or ``--base``);
    ``torch``: it computes with torch, so the graph passes it ``--kernels ${numerics.kernels}``
    (the CPU kernels, which change its bytes) and makes that its param.

    A stage whose paths the plan does not shape (no period, variant or seed in them) declares
    them here: ``paths``, its :meth:`entry` values (by ``dest``), and ``after``, the stage it
    follows in ``dvc.yaml``; the graph then adds it as it is (:mod:`pipeline.graph.declared`),
    so such a stage is its main and this declaration. Stages without ``after`` are built by the
    graph's builders (``pipeline/graph/*_stages.py``), which give the paths the plan derives."""

    name: str
    options: tuple[Option, ...]
    one_of: tuple[str, ...] = ()
    torch: bool = False
    paths: Mapping[str, Any] = field(default_factory=dict)
    after: str | None = None

    @property
    def module(self) -> str:
        return f"stages.{self.name}"

    def passed(self) -> list[Option]:
        """The options the graph passes, in command order."""
        return [o for o in self.options if getattr(o, "graph", True)]

    def entry(self, values: Mapping[str, Any] | None = None, *, code: Sequence[str] = (),
              deps: Sequence[str] = (), files: Mapping[str, Sequence[str]] | None = None,
              params: Sequence[str] = ()) -> dict[str, Any]:
        """The ``dvc.yaml`` entry: ``cmd`` from ``values`` (by ``dest``: every input's and
        output's path, every unbound value), ``deps`` = ``code`` + the inputs' paths + ``deps``,
        the options' params + ``params`` (read by the stage itself, not passed), and each output
        under its kind; ``files`` names the DVC paths of a folder option whose files, not the
        folder, are the deps or outputs."""
        values, files = dict(values or {}), dict(files or {})
        words = [f"python -m {self.module}"]
        entry: dict[str, Any] = {"cmd": "", "deps": list(code), "params": [],
                                 "outs": [], "metrics": [], "plots": []}
        for option in self.passed():
            if isinstance(option, Params) and option.filled:
                for f in option.fields():
                    value = values.pop(f.name, None)
                    if value is None or value is False or value == [] or value == ():
                        continue
                    words.append(option_name(f) if value is True
                                 else f"{option_name(f)} {_words(value)}")
                continue
            if isinstance(option, Params) and option.optional and \
                    not values.pop(option.fields()[0].name, False):
                continue
            if isinstance(option, Settings):
                option = values.pop(option.dest, None)
                if option is None:
                    continue
            if isinstance(option, Params):
                words.append(option.command())
                entry["params"] += option.params()
                continue
            if isinstance(option, Value) and option.param is not None:
                if option.optional and not values.pop(option.dest, False):
                    continue
                words.append(" ".join([option.flag, *(f"${{{p}}}" for p in option.params())]))
                entry["params"] += option.params()
                continue
            value = values.pop(option.dest, None)
            if isinstance(option, Switch):
                words += [option.flag] if value else []
                continue
            if value is None or value == [] or value == ():
                if _required(option):
                    raise ValueError(f"stage {self.name}: no value for {option.flag}")
                continue
            words.append(f"{option.flag} {_words(value)}")
            paths = list(value) if isinstance(value, (list, tuple)) else [value]
            paths = list(files.pop(option.dest, paths))
            if isinstance(option, Input):
                entry["deps"] += paths
            elif isinstance(option, Output):
                entry[option.kind] += [e for p in paths for e in option.entries(p)]
        if values or files:
            raise ValueError(f"stage {self.name}: no option for {sorted({*values, *files})}")
        entry["deps"] = list(dict.fromkeys([*entry["deps"], *deps]))   # one path read twice: one dep
        entry["params"] += list(params)
        entry["cmd"] = " ".join(words)
        return {k: v for k, v in entry.items() if v}
