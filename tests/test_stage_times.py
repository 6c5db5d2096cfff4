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
    text = table(stage_times(log))
    assert "| parse | 0.5 min |" in text and "| **total** (2 stages) | **2.5 min** |" in text


def test_a_log_without_stages_has_no_rows() -> None:
    assert stage_times(["5.0 Stage 'x' didn't change, skipping"]) == []


def test_a_progress_bar_keeps_its_last_frame() -> None:
    assert last_frame("embed:  10%|#  | 1/10\rembed: 100%|###| 10/10\n") == "embed: 100%|###| 10/10\n"
    assert last_frame("plain line\n") == "plain line\n"
    assert last_frame("done\r\n") == "done\n" and last_frame("\r\n") == "\n"
