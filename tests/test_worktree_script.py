"""scripts/worktree.sh: a run stopped half-way still runs its caller's exit hook (which keeps the
run's log) before the throwaway worktree is removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CALLER = """set -euo pipefail
source {script}
on_worktree_exit() {{ echo "stopped in $(basename "$(pwd)")" > {marker}; }}
open_worktree probe
touch {started}
sleep 60 | cat
"""


def test_a_stopped_run_runs_the_exit_hook_and_removes_its_worktree(tmp_path):
    root = tmp_path / "checkout"
    root.mkdir()
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    venv = Path(sys.prefix)   # the virtual environment the tests run in (dvc, python)
    subprocess.run([str(venv / "bin" / "dvc"), "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", ".dvc"], check=True)
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
                   check=True)
    (root / ".venv").symlink_to(venv)
    marker, started = tmp_path / "hook.txt", tmp_path / "started"
    caller = tmp_path / "caller.sh"
    caller.write_text(CALLER.format(script=REPO / "scripts" / "worktree.sh", marker=marker,
                                    started=started))
    proc = subprocess.Popen(["bash", str(caller)], cwd=root, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started.exists(), "the worktree was not opened"
    work = tmp_path / ".futurelm-probe"
    assert work.is_dir()
    os.killpg(proc.pid, signal.SIGTERM)   # as `kill -- -PGID` stops a profile run
    assert proc.wait(timeout=30) == 143
    assert marker.read_text() == "stopped in .futurelm-probe\n"
    assert not work.exists()
