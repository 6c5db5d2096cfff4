"""Command-line options derived from the typed settings: one schema, one set of defaults.

``add_options(parser, SomeConfig, title)`` adds one option per dataclass field — its name
(``--field-name``, or ``metadata["flag"]``), type, default and help all come from the field
(``pipeline/infra/config.py`` documents the metadata). A field without a default is a required option.
``parser_for(interface, __doc__)`` is the whole command line of a stage declared in
:mod:`pipeline.infra.interfaces` (the declaration the stage graph renders its ``dvc.yaml`` entry
from). ``build(SomeConfig, args)`` turns the parsed options back into the dataclass; a value the
dataclass rejects becomes a :class:`pipeline.infra.errors.UserError` (a message, not a traceback).
``runtime_from`` reads a torch stage's ``--device`` (default from ``runtime.yaml``,
:func:`stages._runtime.load_runtime`), ``--threads`` (default: the recorded
:data:`pipeline.infra.numerics.THREADS`; other values, for tests, give other bytes) and
``--processes`` (declared in :mod:`pipeline.infra.interfaces.shared`); none is a DVC param.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union

from pipeline.infra.errors import UserError
from stages._cli import DEBUG_FLAG
from pipeline.infra.numerics import check_kernels
from pipeline.infra.interface import (REQUIRED, Input, Output, Params, Settings, StageInterface,
                                      Switch, Value)
from pipeline.infra.params import param_key
from stages._runtime import Runtime, load_runtime


def new_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(DEBUG_FLAG, action="store_true",
                        help="show the traceback of an error (also FUTURELM_DEBUG=1)")
    return parser


def _flag(field: dataclasses.Field) -> str:
    return field.metadata.get("flag", "--" + field.name.replace("_", "-"))


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return hint, False


def _converter(base: type, none_word: str | None) -> Any:
    def convert(text: str) -> Any:
        if none_word is not None and text == none_word:
            return None
        try:
            return base(text)
        except ValueError:
            expected = f"{base.__name__}" + (f" or '{none_word}'" if none_word else "")
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    convert.__name__ = base.__name__
    return convert


def _show(value: Any, none_word: str | None) -> str:
    if value is None:
        return none_word or "none"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "none"
    return str(value)


def add_options(parser: argparse.ArgumentParser, cls: type, title: str,
                fields: list[dataclasses.Field] | None = None, keys_as_flags: bool = False) -> None:
    """One option per field of the dataclass ``cls`` (``fields``, when given), in a group called
    ``title``; ``keys_as_flags``: each also under its params key (``--plot_words``), the
    spelling DVC's dict unpacking writes."""
    group = parser.add_argument_group(title)
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls) if fields is None else fields:
        hint, optional = _unwrap_optional(hints[field.name])
        none_word = field.metadata.get("none") if optional else None
        kwargs: dict[str, Any] = {"dest": field.name, "help": field.metadata.get("help", "")}
        origin = typing.get_origin(hint)
        if hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif origin is tuple:
            kwargs.update(nargs=field.metadata.get("nargs", "*"), type=typing.get_args(hint)[0])
        elif origin is Literal:
            kwargs["choices"] = typing.get_args(hint)
        else:
            kwargs["type"] = _converter(hint, none_word)
        if hint is not bool and origin is not Literal:
            kwargs["metavar"] = _flag(field)[2:].upper().replace("-", "_")
        if field.default is dataclasses.MISSING:
            kwargs["required"] = True
        else:
            kwargs["default"] = field.default
            shown = field.metadata.get("shown_default", _show(field.default, none_word))
            kwargs["help"] += f" (default: {shown})"
        flags = [_flag(field)]
        if keys_as_flags and "--" + param_key(field) != flags[0]:
            flags.append("--" + param_key(field))
        group.add_argument(*flags, **kwargs)


def parser_for(interface: StageInterface, description: str | None,
               chosen: Mapping[str, Params | None] | None = None) -> argparse.ArgumentParser:
    """The command line of a declared stage: one option per record of ``interface``, in its
    order (a settings group as :func:`add_options` makes it), help texts from the declaration;
    ``chosen``: the settings class of each :class:`Settings` record, by its dest (none: left
    out)."""
    parser = new_parser(f"python -m {interface.module}", description)
    # exactly one of interface.one_of (each optional on its own)
    one_of = parser.add_mutually_exclusive_group(required=True) if interface.one_of else None
    for option in interface.options:
        if isinstance(option, Settings):
            option = (chosen or {}).get(option.dest)
            if option is None:
                continue
        if isinstance(option, Params):
            add_options(parser, option.cls, option.title, option.fields(),
                        keys_as_flags=option.unpack)
            continue
        add = one_of.add_argument if option.flag in interface.one_of else parser.add_argument
        if isinstance(option, Switch):
            add(option.flag, action="store_true", help=option.help)
        elif isinstance(option, (Input, Output)):
            many = {"nargs": "+"} if getattr(option, "many", False) else {}
            add(option.flag, required=option.required, default=None, help=option.help, **many)
        else:
            add(option.flag, **_value_kwargs(option))
    return parser


def _value_kwargs(option: Value) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"type": option.type, "help": option.help, "dest": option.dest}
    if option.many is not False:
        kwargs["nargs"] = option.many if option.many is not True else \
            "+" if option.default is REQUIRED else "*"
    if option.default is REQUIRED:
        kwargs["required"] = True
    else:
        kwargs["default"] = option.default
    for key in ("choices", "metavar"):
        if getattr(option, key) is not None:
            kwargs[key] = getattr(option, key)
    return kwargs


def build(cls: type, args: argparse.Namespace) -> Any:
    """The dataclass ``cls`` from parsed options (lists become tuples)."""
    values = {}
    for field in dataclasses.fields(cls):
        value = getattr(args, field.name)
        values[field.name] = tuple(value) if isinstance(value, list) else value
    try:
        return cls(**values)
    except ValueError as err:
        raise UserError(f"invalid option: {err}",
                        fix="check the value in params.yaml (or on the command line; --help "
                            "explains each option)") from None


def runtime_from(args: argparse.Namespace) -> Runtime:
    """``runtime.yaml`` + environment, overridden by ``--device``/``--threads``/``--processes``
    when given. Also checks that the CPU kernels are the pinned ones (a warning if not)."""
    check_kernels()
    runtime = load_runtime()
    overrides = {k: getattr(args, k) for k in ("device", "threads", "nproc")
                 if getattr(args, k, None) is not None}
    return dataclasses.replace(runtime, **overrides)
