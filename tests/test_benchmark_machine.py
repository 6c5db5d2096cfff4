"""benchmarks/_results.py's machine line: it tells apart cores that share a model name."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from benchmarks._results import cpu_model, machine


@pytest.mark.skipif(shutil.which("lscpu") is None or not Path("/proc/cpuinfo").exists(),
                    reason="needs lscpu and /proc/cpuinfo (Linux) to read the CPU's family and flags")
def test_the_cpu_line_names_family_model_and_avx512_as_proc_cpuinfo_has_them() -> None:
    """A Zen 3 and a Zen 5 are both "AMD EPYC" on these VMs, ~2.4x apart in speed: the line
    carries the family, the model and AVX-512, each as /proc/cpuinfo states it."""
    info = Path("/proc/cpuinfo").read_text()
    family = re.search(r"^cpu family\s*:\s*(\d+)", info, re.M).group(1)
    model = re.search(r"^model\s*:\s*(\d+)", info, re.M).group(1)
    flags = re.search(r"^flags\s*:(.*)$", info, re.M).group(1).split()
    line = cpu_model()
    assert f"family {family} model {model}" in line
    assert line.endswith(", AVX-512" if "avx512f" in flags else ", no AVX-512")
    assert line in machine()
