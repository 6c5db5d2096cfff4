"""The install pins: requirements.lock holds every dependency of pyproject.toml at the version
pyproject pins, and scripts/pip_sources.py turns pip's configuration into uv flags."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[=<>!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-")


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"requirements.lock line is not name==version: {line!r}"
            pins[_name(name)] = version.strip()
    return pins


def test_lock_pins_every_dependency_at_pyprojects_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["dev"]
    lock = _lock()
    for requirement in requirements:
        name = _name(requirement)
        assert name in lock, f"{name} (pyproject.toml) is missing from requirements.lock: make lock"
        pinned = re.search(r"==\s*([^\s;,]+)", requirement)
        if pinned:
            assert lock[name] == pinned.group(1), (
                f"{name}: pyproject pins {pinned.group(1)}, requirements.lock {lock[name]}: make lock")


def test_lock_has_the_installed_versions_of_the_numerics():
    """The packages that decide the numbers are the ones this test session runs with."""
    import numpy
    import pyarrow
    import tokenizers
    import torch
    import transformers

    lock = _lock()
    for module in (numpy, pyarrow, tokenizers, transformers):
        assert lock[module.__name__] == module.__version__, module.__name__
    assert torch.__version__.split("+")[0] == lock["torch"]  # +cpu / +cu128: the same pin


def test_pip_sources_become_uv_flags(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nfind-links = /opt/wheels\n"
                      "extra-index-url = file:///a/simple file:///b/simple\n")
    env = {"PIP_CONFIG_FILE": str(config), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "pip_sources.py")], env=env,
                         check=True, capture_output=True, text=True).stdout.split("\n")
    flags = [line for line in out if line]
    assert flags[:2] == ["--index-strategy", "unsafe-best-match"]
    pairs = list(zip(flags[2::2], flags[3::2]))
    assert ("--find-links", "/opt/wheels") in pairs
    assert ("--extra-index-url", "file:///a/simple") in pairs
    assert ("--extra-index-url", "file:///b/simple") in pairs
