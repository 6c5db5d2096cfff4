"""What a DVC stage costs before it does any work: startup to exit, DVC's bookkeeping
included, with and without `make repro`'s warm interpreter.

    .venv/bin/python -m benchmarks.stage_overhead [--stages 6] [--repeats 2]

In a temporary git + DVC copy of this project (its pipeline/, stages/, params.yaml and the
committed dvc.yaml and dvc.lock, so that DVC reads and rewrites a lock file of the real size), N
do-nothing stages are appended to dvc.yaml, each depending on the code a real stage depends on,
and `dvc repro --force --single-item` runs them. Kinds of do-nothing: ``true`` (DVC's own work
only), ``python -m stages.verdicts --help`` (a light stage's interpreter and imports) and
``python -m stages.score --help`` (a torch stage's), each under plain `dvc repro`,
and under ``python -m stages._lib.preload run --`` (the warm interpreter: what `make repro`
runs), side by side. A stage's cost is the slope
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


# column -> whether under the warm interpreter
RUNNERS: dict[str, bool] = {"plain `dvc repro`": False, "`make repro` (warm interpreter)": True}


def time_repro(proj: Path, cmd: str, n: int, preload: bool) -> float:
    graph = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    code = graph["stages"]["report"]["deps"][:9]   # some real code deps to hash
    for i in range(n):
        graph["stages"][f"noop{i}"] = {"cmd": cmd, "deps": code}
    (proj / "dvc.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    repro = [sys.executable, "-m", "dvc", "repro", "--force", "--single-item",
             *(f"noop{i}" for i in range(n))]
    if preload:
        repro = [sys.executable, "-m", "stages._lib.preload", "run", "--", *repro]
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
    args = p.parse_args(argv)
    runners = dict(RUNNERS)
    with tempfile.TemporaryDirectory() as tmp:
        proj = project(Path(tmp))
        print("| do-nothing stage | " + " | ".join(f"{r}: s per stage" for r in runners) + " |")
        print("|---|" + "---:|" * len(runners))
        for kind, cmd in KINDS.items():
            cells = []
            for preload in runners.values():
                slopes = [(time_repro(proj, cmd, args.stages, preload)
                           - time_repro(proj, cmd, 1, preload)) / (args.stages - 1)
                          for _ in range(args.repeats)]
                cells.append(f"{statistics.median(slopes):.2f}")
            print(f"| {kind} (`{cmd}`) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
