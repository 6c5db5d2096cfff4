"""A variant's code reruns only what runs it, through real ``dvc status``.

In a copy of the project whose every stage is recorded as done (each output a placeholder file,
``dvc commit``: nothing is run), editing one variant's module makes only that variant's stages,
its time-free control's and the reports over the runs stale, and adding a variant module (the
toy of ``tests/toy_variant.py``, not in ``experiment.variants``) makes no stage stale but the
``graph`` check (it reads the whole source tree; its stamp's fixed content leaves every other
stage as it is). Other code is a dep by package: editing a module of one makes the stages that
import from that package stale, no other.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.dvc_project import REPO, dvc_repo, git, make_project, run_dvc, write_graph

pytestmark = pytest.mark.slow

VARIANTS = ["baseline", "frequency", "frequency-static", "context2", "temperature"]
REPORTS = {"report", "longtail", "forecast_report"}


def _stale(proj: Path) -> set[str]:
    """The stages ``dvc status`` finds changed."""
    with dvc_repo(proj) as repo:
        return {name.rpartition(":")[2] for name in repo.status()}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proj = make_project(tmp_path_factory.mktemp("staleness"),
                        {"experiment": {"variants": VARIANTS, "seeds": [0]}})
    with dvc_repo(proj) as repo:
        paths = {Path(o.fs_path) for s in repo.index.stages for o in [*s.outs, *s.deps]
                 if getattr(o, "def_path", "") and not hasattr(o, "read_params")}
    for path in paths:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("placeholder\n")
    run_dvc(proj, "commit", "--force", "--quiet")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "every stage recorded as done")
    assert _stale(proj) == set()
    return proj


def _copy(project: Path, tmp_path: Path) -> Path:
    own = tmp_path / "proj"
    shutil.copytree(project, own, symlinks=True)
    return own


def test_editing_a_variant_module_makes_only_its_runs_and_the_reports_stale(
        project: Path, tmp_path: Path) -> None:
    proj = _copy(project, tmp_path)
    module = proj / "pipeline/variants/frequency.py"
    module.write_text(module.read_text() + "# an edit\n")
    runs = {f"{kind}-{v}@s0" for kind in ("train", "score", "forecast")
            for v in ("frequency", "frequency-static")}
    assert _stale(proj) == {*runs, *REPORTS, "graph"}


def test_adding_a_variant_module_makes_no_stage_stale(project: Path, tmp_path: Path) -> None:
    proj = _copy(project, tmp_path)
    graph = (proj / "dvc.yaml").read_text()
    (proj / "pipeline/variants/toy_shift.py").write_text(
        (REPO / "tests/toy_variant.py").read_text())
    write_graph(proj)   # `make graph` with the toy in the registry: the same graph
    assert (proj / "dvc.yaml").read_text() == graph
    assert _stale(proj) == {"graph"}


def test_editing_a_package_makes_only_the_stages_importing_it_stale(
        project: Path, tmp_path: Path) -> None:
    proj = _copy(project, tmp_path)
    module = proj / "pipeline/semantic/shuffled.py"
    module.write_text(module.read_text() + "# an edit\n")
    assert _stale(proj) == {"semantic_change", "semantic_benchmark", "graph"}
