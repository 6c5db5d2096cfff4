"""A write killed mid-way leaves pipeline.infra.io.atomic_path's `.<name>.<random>.tmp` behind; the
project's .dvcignore keeps it out of DVC's view, so no stage counts as modified.
Real DVC, in a throw-away repo with a directory output and a stage downstream of it."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.dvc_project import REPO, dvc_env, dvc_repo, git, run_dvc

pytestmark = pytest.mark.slow   # runs dvc repro

# A stage writing a folder (like a model) and one reading it (like scoring), both via atomic_path.
GRAPH = {"stages": {
    "model": {"cmd": "python write.py model", "deps": ["write.py"], "outs": ["data/models/m"]},
    "score": {"cmd": "python write.py score", "deps": ["write.py", "data/models/m"],
              "outs": ["data/scores/m"]},
}}
WRITER = """
    import sys
    from pathlib import Path
    from pipeline.infra.io import atomic_path
    out = Path("data/models/m" if sys.argv[1] == "model" else "data/scores/m")
    with atomic_path(out) as tmp:
        tmp.mkdir()
        (tmp / "config.json").write_text("{}")
"""
# Killed while writing a file inside the existing model folder and a sibling of that folder.
KILLED = """
    import os, signal
    from pipeline.infra.io import atomic_path
    for path in ("data/models/m/config.json", "data/models/m"):
        atomic_path(path).__enter__().write_text("partial")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copytree(REPO / "pipeline", proj / "pipeline",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (proj / "write.py").write_text(textwrap.dedent(WRITER))
    (proj / "dvc.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    git(proj, "init", "-q", "-b", "main")
    run_dvc(proj, "init", "-q")
    run_dvc(proj, "repro")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "built")
    return proj


def _kill_mid_write(proj: Path) -> list[Path]:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED)], cwd=proj, env=dvc_env())
    assert proc.returncode == -signal.SIGKILL
    leftovers = sorted((proj / "data").rglob(".*.tmp"))
    assert [p.relative_to(proj).as_posix().rsplit(".", 2)[0] for p in leftovers] == [
        "data/models/.m", "data/models/m/.config.json"]
    return leftovers


def test_leftover_temporary_files_do_not_mark_stages_modified(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    _kill_mid_write(proj)

    # without the pattern DVC sees the leftover inside the model folder: both stages rerun
    with dvc_repo(proj) as repo:
        assert {s.addressing for s in repo.reproduce(dry=True)} == {"model", "score"}

    shutil.copy(REPO / ".dvcignore", proj / ".dvcignore")
    with dvc_repo(proj) as repo:
        assert repo.status() == {}
        assert repo.reproduce(dry=True) == []
    assert "Data and pipelines are up to date" in run_dvc(proj, "status").stdout
