"""reports/dvc.yaml: the committed reports outside the default run are DVC stages, each with the
code deps of what it runs, and each has been run by DVC (its lock entry)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pipeline.graph.code_deps import Code, import_closure, package_units

REPO = Path(__file__).resolve().parents[1]
STAGES = yaml.safe_load((REPO / "reports" / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
CODE_ROOTS = ("pipeline/", "stages/", "scripts/")


def _runs(cmd: str) -> list[str]:
    """The project code a stage's cmd runs: ``python -m stages.X`` and ``python scripts/X.py``."""
    return re.findall(r"python (?:-m (stages\.\w+)|(scripts/\w+\.py))", cmd)


def _expected_code(cmd: str) -> set[str]:
    code, deps = Code(REPO), set()
    for module, script in _runs(cmd):
        if module:
            deps.update(code(module.removeprefix("stages.")))
        else:
            deps.update([script, *package_units(str(p) for p in
                                                import_closure(REPO, REPO / script))])
    return deps


@pytest.mark.parametrize("name", sorted(STAGES))
def test_code_deps_are_what_the_stage_runs(name: str) -> None:
    stage = STAGES[name]
    assert stage["wdir"] == "..", name                 # paths are the repository root's
    declared = {d for d in stage["deps"] if d.startswith(CODE_ROOTS)}
    assert _runs(stage["cmd"]), name
    assert declared == _expected_code(stage["cmd"]), name


def test_every_committed_report_outside_the_default_run_is_an_output() -> None:
    outs = {next(iter(o)) if isinstance(o, dict) else o
            for stage in STAGES.values() for o in stage["outs"]}
    assert {"reports/calibration.json", "docs/calibration.md", "reports/forecast-skill",
            "reports/anthology/verdicts.json"} <= outs
    for stage in STAGES.values():           # committed to git, not to the DVC cache
        assert all(isinstance(o, dict) and next(iter(o.values())) == {"cache": False}
                   for o in stage["outs"])


def test_every_kept_run_is_read_by_the_aggregated_verdicts() -> None:
    kept = sorted(str(p.parent.relative_to(REPO))
                  for p in (REPO / "reports" / "anthology").glob("*/verdicts.json"))
    stage = STAGES["anthology_verdicts"]
    named = re.findall(r"(reports/anthology/[\w.-]+)(?= )", stage["cmd"])
    assert named == kept
    assert {f"{k}/verdicts.json" for k in kept} <= set(stage["deps"])


def test_every_stage_was_run_by_dvc() -> None:
    lock = yaml.safe_load((REPO / "reports" / "dvc.lock").read_text(encoding="utf-8"))["stages"]
    assert set(lock) == set(STAGES)
    for name, entry in lock.items():
        assert " ".join(entry["cmd"].split()) == " ".join(STAGES[name]["cmd"].split()), name
