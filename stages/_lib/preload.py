"""`python -m stages._lib.preload run -- dvc repro`: `make repro`'s warm interpreter (the server and
the hand-over are :mod:`pipeline.infra.preload`; read its docstring).

The server imports, besides torch, transformers and WordNet, every stage module of this checkout
(its ``main`` does not run), and with them the pipeline and the third-party modules they pull in
(dvclive, matplotlib, nltk, scipy, ...): a forked stage then only does its work, about a second
less per stage (benchmarks/results/test_suite.md). A server lives for one ``dvc repro``, so the
modules it imports are the ones on disk when the run starts."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal

import stages
from pipeline.infra import preload
from pipeline.infra.preload import run, serve


def import_stages() -> None:
    """The server's imports: :func:`pipeline.infra.preload.import_heavy`, then each
    ``stages.<name>``."""
    preload.import_heavy()
    for module in pkgutil.iter_modules(stages.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"stages.{module.name}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m stages._lib.preload", description=preload.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True)
    r = sub.add_parser("run", help="run a command (e.g. `dvc repro`) with a preload server")
    r.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    s = sub.add_parser("serve", help="the server itself (started by `run`)")
    s.add_argument("socket", help="Unix socket path to listen on")
    s.add_argument("--ready-fd", type=int, default=None, help="pipe fd told when listening")
    args = p.parse_args(argv)
    if args.action == "serve":
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        serve(args.socket, args.ready_fd, imports=import_stages)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("run needs a command, e.g. `run -- dvc repro`")
    raise SystemExit(run(command))


if __name__ == "__main__":
    main()
