"""Wall time per DVC stage, from a `dvc repro` log whose lines carry a Unix-time prefix.

    dvc repro 2>&1 | python scripts/stage_times.py --stamp > repro.log   # timestamp while running
    python scripts/stage_times.py --table repro.log                      # Markdown table afterwards
    python scripts/stage_times.py --table part1.log part2.log            # a run resumed in parts

A stage's time runs from its "Running stage '<name>'" line to the next stage's (or to the last
line of the log, for the last stage), so it includes DVC's own hashing and lock-file writes. A run
stopped and resumed (its finished stages restored from the run-cache, not run again) is several
logs: each stage is counted once, in the last part that ran it, and the table says which part.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

RUNNING = re.compile(r"Running stage '([^']+)'")


def last_frame(line: str) -> str:
    """A line as a terminal would leave it: of the frames a progress bar redraws with ``\r``,
    the last non-empty one (a whole-export run's log is otherwise megabytes of bar frames)."""
    frames = [f for f in line.rstrip("\n").split("\r") if f.strip()]
    return (frames[-1] if frames else "") + "\n"


def stamp() -> None:
    """Copy stdin to stdout, each line prefixed with the Unix time it arrived."""
    for line in sys.stdin:
        sys.stdout.write(f"{time.time():.1f} {last_frame(line)}")
        sys.stdout.flush()


def stage_times(lines: list[str]) -> list[tuple[str, float]]:
    """(stage, seconds) in run order, from timestamped log lines."""
    starts: list[tuple[str, float]] = []
    last = None
    for line in lines:
        head, _, text = line.partition(" ")
        try:
            when = float(head)
        except ValueError:
            continue
        last = when
        match = RUNNING.search(text)
        if match:
            starts.append((match.group(1), when))
    if last is None:
        return []
    ends = [t for _, t in starts[1:]] + [last]
    return [(name, end - start) for (name, start), end in zip(starts, ends)]


def table(parts: list[list[tuple[str, float]]]) -> str:
    """One row per stage, its time in the last part that ran it (module doc); a ``part`` column
    only when the run was resumed in several parts."""
    last: dict[str, tuple[int, float]] = {}
    for number, times in enumerate(parts, start=1):
        for name, seconds in times:
            last.pop(name, None)          # keep run order: a stage re-run moves to its last part
            last[name] = (number, seconds)
    total = sum(s for _, s in last.values())
    if len(parts) == 1:
        rows = ["| stage | wall time |", "|---|---:|"]
        rows += [f"| {name} | {s / 60:.1f} min |" for name, (_, s) in last.items()]
        rows.append(f"| **total** ({len(last)} stages) | **{total / 60:.1f} min** |")
    else:
        rows = ["| stage | part | wall time |", "|---|---:|---:|"]
        rows += [f"| {name} | {n} | {s / 60:.1f} min |" for name, (n, s) in last.items()]
        rows.append(f"| **total** ({len(last)} stages, {len(parts)} parts) | | "
                    f"**{total / 60:.1f} min** |")
    return "\n".join(rows)


def _read(log: str) -> list[str]:
    return Path(log).read_text(errors="replace").replace("\r", "\n").splitlines()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stamp", action="store_true", help="prefix stdin lines with the time")
    mode.add_argument("--table", metavar="LOG", nargs="+",
                      help="Markdown table of a timestamped log (several: the parts of a resumed run)")
    args = p.parse_args()
    if args.stamp:
        stamp()
    else:
        print(table([stage_times(_read(log)) for log in args.table]))


if __name__ == "__main__":
    main()
