"""`python -m stages._lib.preload run -- dvc repro`: `make repro`'s warm interpreter (the server and
the hand-over are :mod:`pipeline.infra.preload`; read its docstring)."""

from __future__ import annotations

import argparse
import os
import signal

from pipeline.infra import preload
from pipeline.infra.preload import run, serve


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
        serve(args.socket, args.ready_fd)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("run needs a command, e.g. `run -- dvc repro`")
    raise SystemExit(run(command))


if __name__ == "__main__":
    main()
