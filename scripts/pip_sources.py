"""Print this machine's pip package sources as uv flags, one per line (for scripts/install_venv.sh).

uv does not read pip's configuration (pip.conf, PIP_* variables), but on our machines the CPU
torch wheel and the offline mirrors are configured there (find-links, extra indexes, a
constraints file). This reads them with `pip config list` and translates them, so that uv
installs from exactly the sources pip would. pip treats all indexes as equally trusted, so uv
is told to do the same (--index-strategy unsafe-best-match).
"""

from __future__ import annotations

import shlex
import subprocess
import sys

# pip option -> uv flag; values may list several entries separated by whitespace.
FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
         "find-links": "--find-links", "constraint": "--constraint"}


def pip_config() -> dict[str, list[str]]:
    """{option: [values]} from `pip config list`, later scopes (env) overriding earlier ones."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], check=True,
                         capture_output=True, text=True).stdout
    found: dict[str, list[str]] = {}
    for line in out.splitlines():
        name, _, value = line.partition("=")
        option = name.rsplit(".", 1)[-1]
        if option in FLAGS and value:
            found[option] = " ".join(shlex.split(value)).split()  # pip quotes the value
    return found


def main() -> None:
    print("--index-strategy")
    print("unsafe-best-match")
    for option, values in pip_config().items():
        for value in values:
            print(FLAGS[option])
            print(value)


if __name__ == "__main__":
    main()
