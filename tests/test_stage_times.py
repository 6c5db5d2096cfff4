"""scripts/stage_times.py: per-stage wall time from a timestamped `dvc repro` log."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from stage_times import last_frame, stage_times, table  # noqa: E402


def test_each_stage_runs_until_the_next_one_starts() -> None:
    log = ["100.0 Running stage 'parse':", "101.5 > python -m stages.parse ...",
           "progress bar fragment without a time", "130.0 Running stage 'filter':",
           "190.0 Updating lock file 'dvc.lock'", "250.0 Use `dvc push` to send your updates"]
    assert stage_times(log) == [("parse", 30.0), ("filter", 120.0)]
    text = table([stage_times(log)])
    assert "| parse | 0.5 min |" in text and "| **total** (2 stages) | **2.5 min** |" in text


def test_a_log_without_stages_has_no_rows() -> None:
    assert stage_times(["5.0 Stage 'x' didn't change, skipping"]) == []


def test_a_progress_bar_keeps_its_last_frame() -> None:
    assert last_frame("embed:  10%|#  | 1/10\rembed: 100%|###| 10/10\n") == "embed: 100%|###| 10/10\n"
    assert last_frame("plain line\n") == "plain line\n"
    assert last_frame("done\r\n") == "done\n" and last_frame("\r\n") == "\n"


def test_a_resumed_run_counts_each_stage_once_in_the_last_part_that_ran_it() -> None:
    # part 1 is stopped while training b (its 2 s are lost work); part 2 restores a from the
    # run-cache (no "Running" line) and runs b and c
    part1 = ["0.0 Running stage 'a':", "60.0 Running stage 'b':", "62.0 killed"]
    part2 = ["100.0 Stage 'a' is cached - skipping run", "101.0 Running stage 'b':",
             "221.0 Running stage 'c':", "251.0 done"]
    text = table([stage_times(part1), stage_times(part2)])
    rows = [r for r in text.splitlines() if r.startswith("| ") and "---" not in r][1:]
    assert rows == ["| a | 1 | 1.0 min |", "| b | 2 | 2.0 min |", "| c | 2 | 0.5 min |",
                    "| **total** (3 stages, 2 parts) | | **3.5 min** |"]
