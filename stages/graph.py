"""The stage graph: write ``dvc.yaml`` from ``params.yaml`` (``make graph``), or check it is current.

DVC templating cannot turn a list into several deps, yet each stage must depend on exactly the
files it reads: a train or score stage on the per-period feature files of the periods whose history
it uses, and only on the kinds of features its variant reads; every stage on its own code (the
import closure of its module). So ``dvc.yaml`` is generated, deterministically, from the
*structural* params (split kind and periods, window, variants, seeds, ``train.base``,
``score.periods``, the forecast periods) and committed; values that do not change the graph's shape stay ``${...}``
templates in ``cmd``, so editing them needs no regeneration. The logic is ``pipeline.graph``.

    python -m stages.graph            # (re)write dvc.yaml for params.yaml; prune dvc.lock
    python -m stages.graph --check    # exit 2, naming the stages that differ, if dvc.yaml is stale
    python -m stages.graph --dag docs/dag.md   # dvc.yaml as a mermaid graph of stage families

A key params.yaml lacks is written into dvc.yaml as its schema default (one note per key on
stderr; a required key is an error naming it), and the ``graph`` stage then depends on
params.yaml itself, so that adding the key later makes the check report dvc.yaml stale.

Writing also drops from ``dvc.lock`` (beside ``--out``) the entries of stages the graph no longer
has, keeping every other entry byte for byte. The check is also the graph's first stage
(``graph``, upstream of ``download``): it reruns when a structural param or the code changes, and
stops ``dvc repro`` before any expensive stage if dvc.yaml no longer matches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from pipeline.graph.build import build
from pipeline.graph.dag import dag_markdown, mermaid
from pipeline.graph.defaults import SCHEMA, Defaulted
from pipeline.graph.files import STAMP
from pipeline.graph.lock import prune
from pipeline.graph.render import render, stale_message
from pipeline.infra.errors import UserError
from pipeline.interfaces.graph import INTERFACE
from pipeline.infra.io import atomic_path
from stages._lib.args import parser_for
from stages._lib.cli import stage_main

# Re-exported for the callers that build or render the graph through this module.
__all__ = ["SCHEMA", "STAMP", "build", "main", "render", "stale_message"]


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


def read_params(path: Path) -> dict[str, Any]:
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise UserError(f"params are not valid YAML: {err}", path=path,
                        fix="fix the file") from None


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    params_path, out = Path(args.params), Path(args.out)
    if args.dag:
        draw(out, args.dag)
        return
    defaulted: list[Defaulted] = []
    expected = render(read_params(params_path), out.resolve().parent, SCHEMA, defaulted)
    for key in defaulted:   # a key params.yaml lacks: its schema default is in dvc.yaml
        print(key.note, file=sys.stderr)
    current = out.read_text() if out.exists() else ""
    if not args.check:
        if current != expected:
            out.write_text(expected)
            print(f"wrote {out}", file=sys.stderr)
        lock = out.parent / "dvc.lock"
        if pruned := prune(lock, yaml.safe_load(expected)["stages"]):
            print(f"pruned from {lock} the stages {out} no longer has: {', '.join(pruned)}",
                  file=sys.stderr)
        return
    if current != expected:
        raise UserError(f"{out} is stale for {params_path}: {stale_message(current, expected)}",
                        path=out, fix="run `make graph` (python -m stages.graph), then `dvc repro`")
    if args.stamp:
        with atomic_path(args.stamp) as tmp:
            tmp.write_text(f"{out} matches {params_path}\n")


def draw(graph: Path, dest: str) -> None:
    if not graph.exists():
        raise UserError(f"{graph} does not exist", path=graph, fix="run `make graph` first")
    stages = (yaml.safe_load(graph.read_text()) or {}).get("stages", {})
    print(mermaid(stages), end="")
    if dest != "-":
        with atomic_path(dest) as tmp:
            tmp.write_text(dag_markdown(stages), encoding="utf-8")
        print(f"wrote {dest}", file=sys.stderr)


if __name__ == "__main__":
    main()
