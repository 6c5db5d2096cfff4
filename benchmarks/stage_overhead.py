"""What a DVC stage costs before it does any work: startup to exit, DVC's bookkeeping
included, with and without `make repro`'s warm interpreter.

    .venv/bin/python -m benchmarks.stage_overhead [--stages 6] [--repeats 2]

In a temporary git + DVC copy of this project (its pipeline/, stages/, params.yaml and the
committed dvc.yaml and dvc.lock, so that DVC reads and rewrites a lock file of the real size), N
do-nothing stages are appended to dvc.yaml, each depending on the code a real stage depends on,
and `dvc repro --force --single-item` runs them. Kinds of do-nothing: ``true`` (DVC's own work
only), ``python -m stages.verdicts --help`` (a light stage's interpreter and imports) and
``python -m stages.score --help`` (a torch stage's), each under plain `dvc repro`,
under ``python -m stages._preload run --`` (the warm interpreter) and under that with
``scripts/fast_dvc.py`` as the DVC (what `make repro` runs); ``--before-fast-dvc FILE`` adds a
column with another version of that script, side by side (e.g. ``git show REV:scripts/fast_dvc.py
> /tmp/before.py``). A stage's cost is the slope
(time of N stages − time of 1) / (N − 1), so the one-off costs (DVC's and the warm server's start)
drop out. Results: benchmarks/results/stage_overhead.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

os.environ["DVC_NO_ANALYTICS"] = "1"

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"true": "true", "light stage": "python -m stages.verdicts --help",
         "torch stage": "python -m stages.score --help"}


def project(where: Path) -> Path:
    proj = where / "proj"
    proj.mkdir()
    for name in ("pipeline", "stages"):
        shutil.copytree(ROOT / name, proj / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("params.yaml", "dvc.yaml", "dvc.lock", "runtime.yaml"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, proj / name)
    for cmd in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=proj, check=True)
    return proj


FAST_DVC = ROOT / "scripts" / "fast_dvc.py"
# column -> (under the warm interpreter, the DVC script or None for plain `python -m dvc`)
RUNNERS: dict[str, tuple[bool, Path | None]] = {
    "plain `dvc repro`": (False, None), "warm interpreter": (True, None),
    "`make repro` (warm interpreter + fast_dvc)": (True, FAST_DVC)}


def time_repro(proj: Path, cmd: str, n: int, preload: bool, fast: Path | None) -> float:
    graph = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    code = graph["stages"]["report"]["deps"][:6]   # some real code deps to hash
    for i in range(n):
        graph["stages"][f"noop{i}"] = {"cmd": cmd, "deps": code}
    (proj / "dvc.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    dvc = [str(fast)] if fast else ["-m", "dvc"]
    repro = [sys.executable, *dvc, "repro", "--force", "--single-item",
             *(f"noop{i}" for i in range(n))]
    if preload:
        repro = [sys.executable, "-m", "stages._preload", "run", "--", *repro]
    start = time.perf_counter()
    done = subprocess.run(repro, cwd=proj, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(repro)} failed in {proj}:\n{done.stdout}{done.stderr}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.stage_overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stages", type=int, default=6, help="N, the do-nothing stages of the long run")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--before-fast-dvc", type=Path, metavar="FILE",
                   help="another scripts/fast_dvc.py to time beside the current one")
    args = p.parse_args(argv)
    runners = dict(RUNNERS)
    if args.before_fast_dvc:
        runners["warm interpreter + the other fast_dvc"] = (True, args.before_fast_dvc.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        proj = project(Path(tmp))
        print("| do-nothing stage | " + " | ".join(f"{r}: s per stage" for r in runners) + " |")
        print("|---|" + "---:|" * len(runners))
        for kind, cmd in KINDS.items():
            cells = []
            for preload, fast in runners.values():
                slopes = [(time_repro(proj, cmd, args.stages, preload, fast)
                           - time_repro(proj, cmd, 1, preload, fast)) / (args.stages - 1)
                          for _ in range(args.repeats)]
                cells.append(f"{statistics.median(slopes):.2f}")
            print(f"| {kind} (`{cmd}`) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
