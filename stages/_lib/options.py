"""Command-line options from the typed settings: one option per dataclass field, and back.

``add_options(parser, SomeConfig, title)`` adds one option per dataclass field — its name
(``--field-name``, or ``metadata["flag"]``), type, default and help all come from the field
(``pipeline/infra/schema/config.py`` documents the metadata). A field without a default is a
required option. ``build(SomeConfig, args)`` turns the parsed options back into the dataclass; a
value the dataclass rejects becomes a :class:`pipeline.infra.errors.UserError` (a message, not a
traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import Any, Literal, Union

from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import param_key


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


def build(cls: type, args: argparse.Namespace, **given: Any) -> Any:
    """The dataclass ``cls`` from parsed options (lists become tuples); ``given``: fields taken
    from elsewhere (the forecast's count, from its own option)."""
    values = {}
    for field in dataclasses.fields(cls):
        value = given[field.name] if field.name in given else getattr(args, field.name)
        values[field.name] = tuple(value) if isinstance(value, list) else value
    try:
        return cls(**values)
    except ValueError as err:
        raise UserError(f"invalid option: {err}",
                        fix="check the value in params.yaml (or on the command line; --help "
                            "explains each option)") from None
