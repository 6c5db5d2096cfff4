"""The warm interpreter of `make repro` (stages/_lib/preload.py): same bytes, statuses and messages as
a stage run in its own process, and a plain run whenever no server (or another environment)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.infra.preload import CHILD_ENV, SOCKET_ENV
from test_stage_train import argv, project  # noqa: F401  (module fixture)
from tests.dvc_project import run_warm

pytestmark = pytest.mark.slow   # each test starts the warm server (torch + transformers) and stage processes

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def preloaded(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``command`` under ``python -m stages._lib.preload run --`` (a server of its own: `make
    repro`'s)."""
    return subprocess.run([sys.executable, "-m", "stages._lib.preload", "run", "--", *command],
                          cwd=REPO, capture_output=True, text=True, env=env)


def served(*command: str) -> subprocess.CompletedProcess:
    """``command`` forked from this test process's shared server (tests/dvc_project.run_warm, as
    the end-to-end repros run): what ``run`` does once its server is up, without another ~8 s of
    imports per call. The ``run`` wrapper itself (its server's start, exit status, clean-up,
    refusal of another environment) is tested below."""
    return run_warm(list(command), REPO, check=False)


def plain(*command: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (SOCKET_ENV, CHILD_ENV)}
    return subprocess.run(list(command), cwd=REPO, capture_output=True, text=True, env=env)


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_preloaded_training_writes_the_same_bytes(project, tmp_path):  # noqa: F811
    """A torch stage forked from a server trains the same model, to the byte, as a fresh one:
    from a server `run` starts, as `make repro`, and from the tests' shared one."""
    runs = {}
    for how, runner in (("plain", plain), ("make repro's", preloaded), ("the tests'", served)):
        out = tmp_path / how / "frequency-s0"
        proc = runner(sys.executable, "-m", "stages.train",
                      *argv(project, "frequency", out, threads=2))
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[how] = digest(out.parent)
    assert runs["plain"] == runs["make repro's"] == runs["the tests'"]
    assert any(name.endswith("model.safetensors") for name in runs["plain"])


def test_the_stage_runs_in_the_server_with_its_status_and_messages(tmp_path):
    """A failing stage: exit status 2 and the same message; with --debug the traceback shows
    that it ran in a forked server child (stages/_lib/preload.py), not in the command's process."""
    command = [sys.executable, "-m", "stages.parse", "--raw", str(tmp_path / "missing.bib"),
               "--papers", str(tmp_path / "p.parquet"), "--rejects", str(tmp_path / "r.parquet")]
    alone, forked = plain(*command), served(*command)
    assert alone.returncode == forked.returncode == 2
    assert "missing.bib" in alone.stderr and alone.stderr in forked.stderr
    debug = served(*command, "--debug")
    assert debug.returncode == 1 and "_become_stage" in debug.stderr
    assert "_become_stage" not in plain(*command, "--debug").stderr


def test_a_preloaded_parse_writes_the_same_table(tmp_path):
    """A stage with worker processes of its own (parse --workers 2) inside the forked child."""
    outputs = {}
    for how, runner in (("plain", plain), ("preloaded", served)):
        folder = tmp_path / how
        proc = runner(sys.executable, "-m", "stages.parse", "--raw",
                      str(FIXTURES / "real_entries.bib"), "--papers", str(folder / "papers.parquet"),
                      "--rejects", str(folder / "rejects.parquet"), "--workers", "2")
        assert proc.returncode == 0, proc.stderr[-2000:]
        outputs[how] = digest(folder)
    assert outputs["plain"] == outputs["preloaded"] and len(outputs["plain"]) == 2


def test_run_refuses_another_import_time_environment_returns_the_status_and_cleans_up(tmp_path):
    """One `run` (its server's imports are ~10 s, so one server for both): the server imported
    torch under one environment, and a stage whose MKL/HF/... variables differ is refused and runs
    in its own process (no server frame in its traceback); then `run` exits with its command's
    status and removes its socket and folder."""
    command = [sys.executable, "-m", "stages.parse", "--raw", str(tmp_path / "missing.bib"),
               "--papers", str(tmp_path / "p.parquet"), "--rejects", str(tmp_path / "r.parquet"),
               "--debug"]
    stage_err = tmp_path / "stage.err"
    # MKL_VERBOSE is set for the stage, not for the server
    inner = (f"MKL_VERBOSE=0 {' '.join(command)} 2> {stage_err}; echo \"stage $?\"; "
             f'test -S "${SOCKET_ENV}" && echo "$' + SOCKET_ENV + '" && exit 3')
    proc = preloaded("bash", "-c", inner)
    assert proc.returncode == 3
    stage, socket_line = proc.stdout.strip().splitlines()
    assert stage == "stage 1"
    assert "missing.bib" in stage_err.read_text()
    assert "_become_stage" not in stage_err.read_text()
    socket_path = Path(socket_line)
    assert socket_path.name == "socket" and not socket_path.exists()
    assert not socket_path.parent.exists()
