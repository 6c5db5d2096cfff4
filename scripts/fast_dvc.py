"""`python scripts/fast_dvc.py <dvc arguments>`: the DVC command line (`make repro` runs `repro`
through it), reading `dvc.lock` with DVC's own safe YAML loader where DVC uses its round-trip one.

After every stage DVC rewrites `dvc.lock`: it parses the whole file with ruamel's pure-Python
round-trip loader (which keeps comments and formatting for a later dump), updates the stage's
entry and dumps it. `dvc.lock` is DVC's own output, with no comments to keep, and at the default
run's 42 stages it is ~370 KB: that parse alone took ~3 s per stage on a 2-core Zen 3, the largest
part of a do-nothing stage's cost (benchmarks/results/stage_overhead.md), growing with the number of
stages. The safe loader (libyaml, YAML 1.2 like the round-trip one) gives the same data, and DVC's
unchanged dumper writes the same bytes from it (tests/test_fast_dvc.py checks both on the
committed dvc.lock and on a real `dvc repro`). Any other file (dvc.yaml, .dvc files) keeps the
round-trip loader. Written against the pinned dvc (pyproject.toml); plain `dvc` works the same,
slower.
"""

from __future__ import annotations

import sys
from typing import Any

from dvc.utils.serialize import _yaml

LOCK_FILE = "dvc.lock"
_round_trip = _yaml.parse_yaml_for_update


def parse_for_update(text: str, path: Any) -> Any:
    """DVC's ``parse_yaml_for_update``: the safe loader for ``dvc.lock``, else DVC's own."""
    if str(path).endswith(LOCK_FILE):
        return _yaml.parse_yaml(text, path, typ="safe")
    return _round_trip(text, path)


def main(argv: list[str]) -> int:
    _yaml.parse_yaml_for_update = parse_for_update   # read by modify_yaml at call time
    from dvc.cli import main as dvc_main

    return dvc_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
