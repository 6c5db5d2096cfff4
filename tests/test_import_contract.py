"""The import contract (pyproject.toml ``[tool.importlinter]``, run by ``make test``) holds for
the real tree, and provably fails: a copy of the tree with one wrong import is refused, naming the
contract it breaks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"
LAYERS = "pipeline layers (top to bottom; a | b: independent siblings)"
NO_STAGES = "pipeline never imports stages"
NO_TORCH = "pipeline.graph never imports torch or transformers"


def lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    # --no-cache: parallel test workers must not share (or write) a cache in the repo
    return subprocess.run([str(LINT), "--no-cache"], cwd=cwd, text=True, capture_output=True,
                          env={"PATH": str(LINT.parent), "PYTHONPATH": str(cwd)})


def test_the_real_tree_keeps_every_contract() -> None:
    proc = lint(REPO)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    for name in (LAYERS, NO_STAGES, NO_TORCH):
        assert f"{name} KEPT" in out


@pytest.mark.parametrize("module,wrong,broken", [
    ("pipeline/infra/device.py", "import pipeline.reports.results", LAYERS),  # upward
    ("pipeline/training/run.py", "import pipeline.evaluation.meteor", LAYERS),  # a sibling
    ("pipeline/semantic/scores.py", "import pipeline.evaluation.meteor", LAYERS),  # a sibling
    ("pipeline/graph/files.py", "import pipeline.reports.figures", LAYERS),    # graph | reports
    ("pipeline/infra/errors.py", "import stages._lib.cli", NO_STAGES),
    # indirect: future_lm imports torch
    ("pipeline/graph/plan.py", "import pipeline.models.future_lm", NO_TORCH),
])
def test_one_wrong_import_breaks_its_contract(tmp_path: Path, module: str, wrong: str,
                                              broken: str) -> None:
    for folder in ("pipeline", "stages"):
        shutil.copytree(REPO / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    path = tmp_path / module
    path.write_text(path.read_text() + f"\n{wrong}  # noqa: E402,F401  (deliberately wrong)\n")
    proc = lint(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"{broken} BROKEN" in out and "2 kept, 1 broken" in out, out
    assert module.removesuffix(".py").replace("/", ".") in out
