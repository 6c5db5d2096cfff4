"""Write ``params.yaml``: the schema's defaults, optionally overlaid by a profile (``make params``).

    python -m stages.params                    # the defaults (the offline default run)
    python -m stages.params --profile paper    # the defaults overlaid by profiles/paper.yaml
    python -m stages.params --check            # exit 2 unless params.yaml is the defaults' rendering

A profile (``profiles/<name>.yaml``) states only what differs from the defaults; writing replaces
any hand edit of params.yaml. The logic is ``pipeline.graph.profiles``. Not a DVC stage: run
``make graph`` after it (``make params`` and ``make repro PROFILE=<name>`` do).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.graph.profiles import render
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path
from stages._lib.cli import stage_main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m stages.params", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", default=None, metavar="NAME",
                   help="overlay profiles/NAME.yaml (of the current folder) on the defaults "
                        "(default: none)")
    p.add_argument("--out", default="params.yaml", help="the file to write or check")
    p.add_argument("--check", action="store_true",
                   help="do not write: exit 2 if --out differs from the rendering")
    return p.parse_args(argv)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    expected = render(args.profile, Path.cwd())   # the profiles of the project it runs in
    current = out.read_text() if out.exists() else ""
    if args.check:
        if current != expected:
            over = f" overlaid by profiles/{args.profile}.yaml" if args.profile else ""
            raise UserError(f"{out} is not the rendering of the schema's defaults{over}",
                            path=out, fix="run `make params` (python -m stages.params)")
        return
    if current != expected:
        with atomic_path(out) as tmp:
            tmp.write_text(expected)
        print(f"wrote {out}" + (f" (profile {args.profile})" if args.profile else ""),
              file=sys.stderr)


if __name__ == "__main__":
    main()
