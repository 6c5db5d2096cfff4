"""The command line of a declared stage, from its interface: one schema, one set of defaults.

``parser_for(interface, __doc__)`` is the whole command line of a stage declared in
:mod:`pipeline.interfaces` (the declaration the stage graph renders its ``dvc.yaml`` entry
from); its settings groups come from the typed settings' fields (:mod:`stages._lib.options`, which
also builds them back: ``build``). ``runtime_from`` reads a torch stage's ``--device`` (default
from ``runtime.yaml``, :func:`stages._lib.runtime.load_runtime`), ``--threads`` (default: the recorded
:data:`pipeline.infra.numerics.THREADS`; other values, for tests, give other bytes) and
``--processes`` (declared in :mod:`pipeline.infra.shared_options`); none is a DVC param.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from typing import Any

from pipeline.infra.interface import (REQUIRED, Input, Output, Params, Settings, StageInterface,
                                      Switch, Value)
from pipeline.infra.numerics import check_kernels
from stages._lib.cli import DEBUG_FLAG
from stages._lib.options import add_options
from stages._lib.runtime import Runtime, load_runtime


def new_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(DEBUG_FLAG, action="store_true",
                        help="show the traceback of an error (also FUTURELM_DEBUG=1)")
    return parser


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


def runtime_from(args: argparse.Namespace) -> Runtime:
    """``runtime.yaml`` + environment, overridden by ``--device``/``--threads``/``--processes``
    when given. Also checks that the CPU kernels are the pinned ones (a warning if not)."""
    check_kernels()
    runtime = load_runtime()
    overrides = {k: getattr(args, k) for k in ("device", "threads", "nproc")
                 if getattr(args, k, None) is not None}
    return dataclasses.replace(runtime, **overrides)
