"""scripts/fast_dvc.py: DVC reading dvc.lock with its safe loader writes the same bytes."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dvc.utils.serialize import _yaml
from dvc_project import dvc_env

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import fast_dvc  # noqa: E402


def _dumped(data) -> str:
    buf = io.StringIO()
    _yaml._dump(data, buf)
    return buf.getvalue()


@pytest.mark.slow
def test_the_committed_lock_reads_to_the_same_data_and_dumps_to_the_same_bytes():
    text = (REPO / "dvc.lock").read_text()
    fast = fast_dvc.parse_for_update(text, "dvc.lock")
    slow = _yaml.parse_yaml_for_update(text, "dvc.lock")
    assert type(fast) is dict and type(slow) is not dict   # the fast path was taken
    assert fast == slow
    assert _dumped(fast) == _dumped(slow) == text


def test_other_files_keep_the_round_trip_loader():
    text = "# a comment DVC keeps\nstages:\n  a:\n    cmd: echo a\n"
    assert _dumped(fast_dvc.parse_for_update(text, "dvc.yaml")) == text


def _repo(root: Path) -> Path:
    root.mkdir()
    (root / "dvc.yaml").write_text(
        "stages:\n"
        "  first:\n    cmd: python -c \"open('a.txt', 'w').write('a' * 300)\"\n    outs: [a.txt]\n"
        "  second:\n    cmd: python -c \"open('b.txt', 'w').write(open('a.txt').read() + 'b')\"\n"
        "    deps: [a.txt]\n    outs: [b.txt]\n")
    for cmd in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=root, env=dvc_env(), check=True, capture_output=True)
    return root


@pytest.mark.slow
def test_a_real_repro_through_it_writes_the_lock_plain_dvc_writes(tmp_path):
    plain, fast = _repo(tmp_path / "plain"), _repo(tmp_path / "fast")
    subprocess.run([sys.executable, "-m", "dvc", "repro"], cwd=plain, env=dvc_env(), check=True,
                   capture_output=True)
    subprocess.run([sys.executable, str(REPO / "scripts" / "fast_dvc.py"), "repro"], cwd=fast,
                   env=dvc_env(), check=True, capture_output=True)
    lock = (fast / "dvc.lock").read_text()
    assert "second:" in lock and (fast / "b.txt").read_text() == "a" * 300 + "b"
    assert lock == (plain / "dvc.lock").read_text()
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "fast_dvc.py"), "status"],
                          cwd=fast, env=dvc_env(), check=True, capture_output=True, text=True)
    assert "up to date" in done.stdout
    shutil.rmtree(plain)
