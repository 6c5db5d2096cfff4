"""How every benchmark publishes its Markdown result: printed, and written to ``--out`` if given."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path


def publish(text: str, out: str | os.PathLike[str] | None, end: str = "") -> None:
    """Print ``text``; with ``out``, also write ``text + end`` there (folders created)."""
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + end)


def interleaved_medians(runs: Mapping[str, tuple], step: Callable[..., None], warmup: int,
                        rounds: int) -> dict[str, float]:
    """Median ms of ``step(*run)`` per run: ``warmup`` untimed rounds, then ``rounds`` timed
    rounds, the runs interleaved within each round so that drifting machine load hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(warmup):
        for run in runs.values():
            step(*run)
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            step(*run)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) * 1000 for name, ts in times.items()}


def ratio_rows(medians: Mapping[str, float], base: str) -> list[str]:
    """Markdown rows ``| name | ms | ratio to base |``."""
    return [f"| {name} | {ms:.1f} | {ms / medians[base]:.2f}x |" for name, ms in medians.items()]


def cpu_model() -> str:
    """``lscpu``'s model name with its family, model and whether it has AVX-512 (``AMD EPYC,
    family 25 model 1, no AVX-512``): one model name covers cores of different generations and
    speeds (a Zen 3 and a Zen 5 are both ``AMD EPYC`` on these VMs); ``platform.processor()``
    where there is no lscpu."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or platform.machine()
    fields = {key.strip(): value.strip() for key, _, value in
              (line.partition(":") for line in out.splitlines())}
    name = fields.get("Model name") or platform.machine()
    if "CPU family" not in fields or "Model" not in fields:
        return name
    avx512 = "AVX-512" if "avx512f" in fields.get("Flags", "").split() else "no AVX-512"
    return f"{name}, family {fields['CPU family']} model {fields['Model']}, {avx512}"


def machine() -> str:
    """One line naming the machine: cores, architecture, :func:`cpu_model`, memory."""
    try:
        mem = f"{int(Path('/proc/meminfo').read_text().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        mem = "?"
    return f"{os.cpu_count()}-core {platform.machine()} CPU ({cpu_model()}), {mem}"
