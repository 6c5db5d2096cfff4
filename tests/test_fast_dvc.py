"""scripts/fast_dvc.py: DVC reading and writing dvc.lock entry by entry writes the same bytes."""

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
    assert fast == slow == _yaml.parse_yaml(text, "dvc.lock") == fast_dvc.parse(text, "dvc.lock")
    assert _dumped(fast) == _dumped(slow) == text          # DVC's own dumper, whole file
    fast_dvc._dumped.clear()                                # every entry dumped by DVC's dumper
    assert _fast_dumped(fast) == text
    assert _fast_dumped(fast_dvc.parse_for_update(text, "dvc.lock")) == text   # as read


def _fast_dumped(data) -> str:
    buf = io.StringIO()
    fast_dvc.dump(data, buf)
    return buf.getvalue()


def test_an_entry_read_twice_is_a_fresh_copy_and_a_changed_one_is_dumped_anew():
    text = ("schema: '2.0'\nstages:\n  a:\n    cmd: echo a\n    outs:\n    - path: a.txt\n"
            "      md5: 0cc175b9c0f1b6a831c399e269772661\n      size: 1\n  b:\n    cmd: echo b\n")
    first = fast_dvc.parse_lock(text, "dvc.lock")
    assert first == _yaml.parse_yaml(text, "dvc.lock")
    first["stages"]["a"]["outs"][0]["size"] = 2
    second = fast_dvc.parse_lock(text, "dvc.lock")
    assert second["stages"]["a"]["outs"][0]["size"] == 1    # not the first read's change
    assert _fast_dumped(second) == _dumped(second) == text
    assert _fast_dumped(first) == _dumped(first) != text    # the changed entry, dumped anew
    second["stages"]["b"]["cmd"] = True                     # 'true' in YAML, not the string
    assert _fast_dumped(second) == _dumped(second)


def test_a_lock_of_another_shape_and_other_files_take_dvcs_own_path():
    other = "schema: '2.0'\nstages: {}\n"
    assert fast_dvc.parse_lock(other, "dvc.lock") == {"schema": "2.0", "stages": {}}
    assert _fast_dumped({"schema": "2.0", "stages": {}}) == other
    assert _fast_dumped({"cmd": "echo", "outs": []}) == _dumped({"cmd": "echo", "outs": []})


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
    """A first repro (a new lock), then one stage changed (its entry rewritten among kept ones)."""
    plain, fast = _repo(tmp_path / "plain"), _repo(tmp_path / "fast")

    def both(*args: str) -> str:
        subprocess.run([sys.executable, "-m", "dvc", *args], cwd=plain, env=dvc_env(),
                       check=True, capture_output=True)
        out = subprocess.run([sys.executable, str(REPO / "scripts" / "fast_dvc.py"), *args],
                             cwd=fast, env=dvc_env(), check=True, capture_output=True, text=True)
        lock = (fast / "dvc.lock").read_text()
        assert lock == (plain / "dvc.lock").read_text()
        return out.stdout + lock

    assert "second:" in both("repro") and (fast / "b.txt").read_text() == "a" * 300 + "b"
    for root in (plain, fast):
        yaml_file = root / "dvc.yaml"
        yaml_file.write_text(yaml_file.read_text().replace("'a' * 300", "'c' * 300"))
    assert "Running stage 'first'" in both("repro", "first")
    assert "up to date" not in both("status")
    assert "Running stage 'second'" in both("repro")
    assert (fast / "b.txt").read_text() == "c" * 300 + "b" and "up to date" in both("status")
    shutil.rmtree(plain)
