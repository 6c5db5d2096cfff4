"""What scripts/rejudge_profile.sh asks of a profile's dvc.yaml and params (run in its worktree):

    python scripts/rejudge_support.py params RUN_PARAMS params.yaml --stages report verdicts
    python scripts/rejudge_support.py outs report verdicts
    python scripts/rejudge_support.py lock KEPT/dvc.lock > dvc.lock

``params``: the params of the two files that differ, as Markdown list lines; exits with an error
naming them when a param that one of ``--stages`` reads (its ``params`` in ./dvc.yaml) differs
and the run had it (a key only HEAD has is new: the run's code could not have read it).
``outs``: every path the stages write (outs, metrics, plots), one per line.
``lock``: a kept run's dvc.lock with its per-seed stage entries under the names ./dvc.yaml gives
them now: a run made when each seed's stage was written out (``train-frequency-s0``) is checked
out under the folded graph's ``train-frequency@s0``; any other entry as it is.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.graph.fold import expand  # noqa: E402


def flat(tree: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    """``(dotted.key, value)`` of every leaf."""
    for key, value in tree.items():
        if isinstance(value, Mapping):
            yield from flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _stages() -> dict[str, dict]:
    return yaml.safe_load(Path("dvc.yaml").read_text(encoding="utf-8"))["stages"]


def params(run_path: Path, head_path: Path, names: list[str]) -> list[str]:
    run, head = (dict(flat(yaml.safe_load(path.read_text(encoding="utf-8"))))
                 for path in (run_path, head_path))
    stages = _stages()
    read = [key for name in names for key in stages[name].get("params", [])]
    differ = [k for k in sorted(set(run) | set(head))
              if run.get(k, "(absent)") != head.get(k, "(absent)")]
    bad = [k for k in differ if k in run and any(k == r or k.startswith(r + ".") for r in read)]
    if bad:
        sys.exit("error: the judging stages read params that differ from the run's: " + ", ".join(
            f"{k} (run {run[k]!r}, HEAD {head.get(k, '(absent)')!r})" for k in bad))
    return [f"- `{k}`: run {run.get(k, '(absent)')!r}, HEAD {head.get(k, '(absent)')!r}"
            for k in differ]


def outs(names: list[str]) -> list[str]:
    stages = _stages()
    paths = []
    for name in names:
        for kind in ("outs", "metrics", "plots"):
            for entry in stages[name].get(kind, []):
                paths.append(next(iter(entry)) if isinstance(entry, Mapping) else entry)
    return paths


def stage_names() -> set[str]:
    """The names DVC runs ./dvc.yaml's stages under (a ``foreach`` stage's ``<name>@<key>``)."""
    return set(expand(_stages()))


def lock(kept: Path) -> str:
    """``kept`` (a dvc.lock) with each ``<family>-s<seed>`` entry renamed ``<family>@s<seed>``
    where ./dvc.yaml has the new name and not the old."""
    names = stage_names()

    def rename(match: re.Match[str]) -> str:
        old, new = match.group(1), f"{match.group(2)}@s{match.group(3)}"
        return f"  {new}:" if new in names and old not in names else match.group(0)
    return re.sub(r"^  ((.+)-s(\d+)):$", rename, kept.read_text(encoding="utf-8"), flags=re.M)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    diff = sub.add_parser("params", help="params that differ between a run and HEAD")
    diff.add_argument("run", type=Path, help="the kept run's params.yaml")
    diff.add_argument("head", type=Path, help="HEAD's rendering of the same profile")
    diff.add_argument("--stages", nargs="+", default=[],
                      help="stages of ./dvc.yaml whose params must be the run's")
    out = sub.add_parser("outs", help="the paths the stages write")
    out.add_argument("stages", nargs="+")
    renamed = sub.add_parser("lock", help="a kept dvc.lock under ./dvc.yaml's stage names")
    renamed.add_argument("kept", type=Path, help="the kept run's dvc.lock")
    args = p.parse_args(argv)
    if args.command == "lock":
        sys.stdout.write(lock(args.kept))
        return 0
    lines = (params(args.run, args.head, args.stages) if args.command == "params"
             else outs(args.stages))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
