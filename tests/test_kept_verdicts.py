"""scripts/kept_verdicts.py: kept runs' records merged, each id prefixed with its run's folder."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from pipeline.infra.io import read_json

REPO = Path(__file__).resolve().parents[1]
KEPT = REPO / "reports" / "anthology" / "test-2021"


def _script():
    spec = importlib.util.spec_from_file_location("kept_verdicts", REPO / "scripts" / "kept_verdicts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _copy(run: Path) -> Path:
    run.mkdir(parents=True)
    shutil.copy(KEPT / "verdicts.json", run / "verdicts.json")
    return run


def test_two_runs_judging_the_same_claims_merge_under_their_folders(tmp_path):
    kv = _script()
    first, second = _copy(tmp_path / "test-2021"), _copy(tmp_path / "rerun-2021")
    out = tmp_path / "verdicts.json"
    assert kv.main([str(first), str(second), "--out", str(out)]) == 0
    merged = read_json(out)["verdicts"]
    own = read_json(KEPT / "verdicts.json")["verdicts"]
    assert len(merged) == 2 * len(own)
    ids = {r["id"] for r in merged}
    assert len(ids) == len(merged)
    record = own[0]
    for folder in ("test-2021", "rerun-2021"):
        assert f"{folder}/{record['id']}" in ids
        copy = next(r for r in merged if r["id"] == f"{folder}/{record['id']}")
        assert copy["report"] == f"{folder}/{record['report']}"
        # the kept run was judged before the family-wise interval: the merge marks it absent
        assert copy.pop("ci_family") == record.get("ci_family", [None, None])
        assert {k: v for k, v in copy.items() if k not in ("id", "report")} == \
            {k: v for k, v in record.items() if k not in ("id", "report", "ci_family")}


def test_the_same_claims_unlabelled_collide():
    # why the prefix: the verdicts stage's collector refuses one id twice
    from pipeline.stats.collect import collect
    document = read_json(KEPT / "verdicts.json")
    with pytest.raises(ValueError, match="also in"):
        collect({"a/verdicts.json": document, "b/verdicts.json": document})


def test_a_folder_without_reports_and_a_repeated_name_are_refused(tmp_path):
    kv = _script()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="verdicts.json not found"):
        kv.main([str(empty), "--out", str(tmp_path / "v.json")])
    one, other = _copy(tmp_path / "a" / "run"), _copy(tmp_path / "b" / "run")
    with pytest.raises(SystemExit, match="share a folder name"):
        kv.main([str(one), str(other), "--out", str(tmp_path / "v.json")])
    assert not (tmp_path / "v.json").exists()
