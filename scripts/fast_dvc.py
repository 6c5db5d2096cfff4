"""`python scripts/fast_dvc.py <dvc arguments>`: the DVC command line (`make repro` runs `repro`
through it), reading and writing `dvc.lock` one stage entry at a time, with each entry's text
parsed and dumped once per process.

After every stage DVC rewrites `dvc.lock`: it parses the whole file (with ruamel's pure-Python
round-trip loader, which keeps comments and formatting for a later dump), updates the stage's
entry and dumps the whole file again with ruamel's pure-Python dumper; its status checks parse it
again with the safe loader. `dvc.lock` is DVC's own output, with no comments to keep, and at the
default run's 42 stages it is ~370 KB: ~3 s of parsing and ~2 s of dumping per stage on a 2-core
Zen 3, nearly all of a do-nothing stage's cost (benchmarks/results/stage_overhead.md), growing
with the number of stages. Here:

* reading: the lock is cut into its stage entries (the lines from one two-space-indented key to
  the next); each entry's text is parsed by DVC's safe loader (the same YAML 1.2 data as the
  round-trip one) the first time it is seen, then copied from memory;
* writing: the file is the concatenation of the entries' texts, which is what DVC's dumper
  writes for the whole file (a block mapping's entries are dumped independently of each other);
  an entry read from the file is written back as it was read (DVC wrote it: its dump is that
  text), a new or changed one is dumped by DVC's own dumper.

tests/test_fast_dvc.py checks both on the committed dvc.lock and on a real `dvc repro` against plain
`dvc`. Any other file (dvc.yaml, .dvc files), or a lock of another shape, keeps DVC's own path.
Written against the pinned dvc (pyproject.toml); plain `dvc` works the same, slower.
"""

from __future__ import annotations

import io
import pickle
import re
import sys
from typing import Any, TextIO

from dvc.utils.serialize import _yaml

LOCK_FILE = "dvc.lock"
HEADER = "schema: '2.0'\nstages:\n"
# A stage's key: a line indented by exactly two spaces (its fields are indented by four, long
# values continue deeper still).
_STAGE_KEY = re.compile(r"^  (?=\S)", re.M)
_round_trip = _yaml.parse_yaml_for_update
_safe = _yaml.parse_yaml
_dump = _yaml._dump

_parsed: dict[str, bytes] = {}   # an entry's text -> its data, pickled (a fresh copy per read)
_dumped: dict[str, str] = {}     # repr((name, data)) of an entry -> its text


def _key(name: str, entry: Any) -> str:
    return repr((name, entry))   # tells 1, 1.0 and True apart, as the dump does


def _entries(text: str) -> list[str] | None:
    """The lock's stage entries as text, or None for a lock of another shape."""
    if not text.startswith(HEADER):
        return None
    body = text[len(HEADER):]
    starts = [m.start() for m in _STAGE_KEY.finditer(body)]
    if not starts or starts[0] != 0:
        return None
    return [body[a:b] for a, b in zip(starts, [*starts[1:], len(body)])]


def parse_lock(text: str, path: Any) -> Any:
    """``dvc.lock``'s data, as DVC's safe loader reads the whole file."""
    entries = _entries(text)
    if entries is None:
        return _safe(text, path, typ="safe")
    stages: dict[str, Any] = {}
    for entry in entries:
        if entry not in _parsed:
            data = _safe("stages:\n" + entry, path, typ="safe")
            if list(data) != ["stages"] or len(data["stages"]) != 1:
                return _safe(text, path, typ="safe")
            _parsed[entry] = pickle.dumps(data["stages"])
            (name, value), = data["stages"].items()
            _dumped[_key(name, value)] = entry
        stages.update(pickle.loads(_parsed[entry]))
    return {"schema": "2.0", "stages": stages}


def parse_for_update(text: str, path: Any) -> Any:
    """DVC's ``parse_yaml_for_update``: :func:`parse_lock` for ``dvc.lock``, else DVC's own."""
    if str(path).endswith(LOCK_FILE):
        return parse_lock(text, path)
    return _round_trip(text, path)


def parse(text: str, path: Any, typ: str = "safe") -> Any:
    """DVC's ``parse_yaml``: :func:`parse_lock` for a safe read of ``dvc.lock``, else DVC's own."""
    if typ == "safe" and str(path).endswith(LOCK_FILE):
        return parse_lock(text, path)
    return _safe(text, path, typ=typ)


def dump(data: Any, stream: TextIO) -> Any:
    """DVC's ``_dump``: a lock's entries dumped one by one, each once; anything else as DVC does."""
    if type(data) is not dict or list(data) != ["schema", "stages"] \
            or data["schema"] != "2.0" or type(data["stages"]) is not dict or not data["stages"]:
        return _dump(data, stream)
    parts = [HEADER]
    for name, entry in data["stages"].items():
        key = _key(name, entry)
        if key not in _dumped:
            buf = io.StringIO()
            _dump({"stages": {name: entry}}, buf)
            _dumped[key] = buf.getvalue().removeprefix("stages:\n")
        parts.append(_dumped[key])
    stream.write("".join(parts))
    return None


def install() -> None:
    """Route DVC's YAML reads and writes through this module (read by DVC at call time)."""
    from dvc.utils import strictyaml

    _yaml.parse_yaml_for_update = parse_for_update
    _yaml._dump = dump
    strictyaml.parse_yaml = parse
    strictyaml.parse_yaml_for_update = parse_for_update


def main(argv: list[str]) -> int:
    install()
    from dvc.cli import main as dvc_main

    return dvc_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
