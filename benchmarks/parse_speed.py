"""Whole-process speed of the `parse` stage: this working tree against earlier versions, A/B.

The parser's reliability checks (stray text after entries, braces in quoted values, bytes that are
not UTF-8) slowed `python -m stages.parse` on the full export from ~12 s to ~20 s. This measures
the stage as DVC runs it (interpreter start, imports, read, parse, Parquet writes) for each
version, with the runs interleaved (old, new, old, new, ...) so that the load other jobs put on
the machine falls on every version alike; medians are compared. Each earlier version runs from a
`git archive` of its commit (its own `stages/parse.py` and `pipeline/`) with the same
interpreter, and its output files are compared byte for byte with the working tree's.

Run: .venv/bin/python -m benchmarks.parse_speed [--bib PATH] [--runs 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.parse_filter import FULL_EXPORT, REPO, machine
from benchmarks._results import publish

# 358b3c2: the last commit before the parser's reliability work (e898bab, b153aa4);
# 7c85d1d: the reliability work as it stood before this speed-up (after the layer move).
DEFAULT_VERSIONS = ["358b3c2", "7c85d1d"]
OUTPUTS = ("papers.parquet", "rejects.parquet")


@dataclass
class Version:
    label: str
    root: Path  # where `python -m stages.parse` runs
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    load: list[float] = field(default_factory=list)  # 1-minute load average before each run
    imports: list[float] = field(default_factory=list)  # `import stages.parse`, whole process


def export_commit(commit: str, into: Path) -> Path:
    """Check out ``commit``'s files (no .git) into ``into``/``commit`` with `git archive`."""
    target = into / commit
    target.mkdir()
    archive = into / f"{commit}.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), commit], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_parse(version: Version, bib: Path, out: Path) -> None:
    """One whole `python -m stages.parse` process; appends its wall and CPU seconds."""
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "stages.parse", "--raw", str(bib),
               "--papers", str(out / OUTPUTS[0]), "--rejects", str(out / OUTPUTS[1])]
    version.load.append(os.getloadavg()[0])
    cpu0, start = children_cpu(), time.perf_counter()
    subprocess.run(command, cwd=version.root, check=True, stdout=subprocess.DEVNULL)
    version.wall.append(time.perf_counter() - start)
    version.cpu.append(children_cpu() - cpu0)


def time_import(version: Version) -> None:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import stages.parse"], cwd=version.root, check=True)
    version.imports.append(time.perf_counter() - start)


def seconds(values: list[float]) -> str:
    return " / ".join(f"{v:.1f}" for v in values)


def report(versions: list[Version], bib: Path, runs: int, identical: dict[str, bool],
           load: tuple[float, float]) -> str:
    new = versions[-1]
    rows = []
    for version in versions:
        ratio = statistics.median(version.wall) / statistics.median(new.wall)
        rows.append(f"| {version.label} | {seconds(version.wall)} | "
                    f"**{statistics.median(version.wall):.1f}** | {seconds(version.cpu)} | "
                    f"{statistics.median(version.cpu):.1f} | "
                    f"{statistics.median(version.imports):.2f} | {ratio:.2f}x |")
    same = "; ".join(f"{label}: {'yes' if ok else '**no**'}" for label, ok in identical.items())
    return "\n".join([
        f"# parse stage, whole process, A/B ({datetime.date.today().isoformat()})",
        "",
        (f"Input: `{bib.name}` ({bib.stat().st_size / 2**20:.1f} MiB gzipped). Command per run: "
         "`python -m stages.parse --raw <bib> --papers ... --rejects ...` (default workers), "
         f"{runs} runs per version, interleaved in table order. "
         "Benchmark: `.venv/bin/python -m benchmarks.parse_speed`."),
        (f"Machine: {machine()}; 1-minute load average {load[0]:.1f} before, {load[1]:.1f} after "
         f"(before each run, by version in table order: "
         f"{'; '.join(', '.join(f'{x:.1f}' for x in v.load) for v in versions)})."),
        "",
        ("| version | wall s per run | median wall s | CPU s per run (user+sys) | median CPU s "
         "| `import stages.parse` s (median) | median wall vs this tree |"),
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Output files byte-identical to this tree's (papers.parquet, rejects.parquet): {same}.",
        "",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.parse_speed", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bib", default=str(FULL_EXPORT),
                        help="Anthology export to parse (default: the full export in ../shared)")
    parser.add_argument("--versions", nargs="*", default=DEFAULT_VERSIONS,
                        help="earlier commits to compare with the working tree")
    parser.add_argument("--runs", type=int, default=3, help="runs per version (interleaved)")
    parser.add_argument("--out", default=None, help="write the Markdown results here")
    args = parser.parse_args(argv)
    bib = Path(args.bib).resolve()
    if not bib.exists():
        raise SystemExit(f"{bib} not found: pass --bib with an anthology+abstracts.bib.gz export")

    with tempfile.TemporaryDirectory(prefix="parse_speed-") as tmp:
        tmp_path = Path(tmp)
        versions = [Version(f"`{c}`", export_commit(c, tmp_path)) for c in args.versions]
        versions.append(Version("this working tree", REPO))
        load_before = os.getloadavg()
        for _ in range(args.runs):
            for index, version in enumerate(versions):
                time_import(version)
                run_parse(version, bib, tmp_path / f"out{index}")
        load_after = os.getloadavg()
        new_out = tmp_path / f"out{len(versions) - 1}"
        identical = {version.label: all((tmp_path / f"out{index}" / name).read_bytes()
                                        == (new_out / name).read_bytes() for name in OUTPUTS)
                     for index, version in enumerate(versions[:-1])}
        text = report(versions, bib, args.runs, identical, (load_before[0], load_after[0]))
    publish(text, args.out)


if __name__ == "__main__":
    main()
