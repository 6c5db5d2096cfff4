#!/usr/bin/env bash
# Install GPT-2's tokenizer (vocab.json, merges.txt, tokenizer.json) for offline use.
# GPT-2's files live on the Hugging Face hub, which these machines cannot reach; the same BPE
# ships as whisper/assets/gpt2.tiktoken in the openai-whisper sdist on PyPI (MIT). This fetches
# that sdist with pip (pinned version and sha256, see pipeline/features/gpt2_bpe.py), rebuilds the
# tokenizer byte for byte and writes it, with the licence, to the target folder. The library
# only reads that folder (pipeline.features.gpt2_bpe.installed_dir); nothing is downloaded at run time.
# Usage: scripts/setup_gpt2_tokenizer.sh <venv>   (the Makefile passes .venv; the folder is
# <venv>/share/futurelm/gpt2-tokenizer). Idempotent: an existing complete folder is kept.
set -euo pipefail
venv="${1:?usage: setup_gpt2_tokenizer.sh VENV_DIR}"
py="$venv/bin/python"
dest="$("$py" -c 'from pipeline.features.gpt2_bpe import installed_dir; print(installed_dir())')"
if "$py" -c 'import sys; from pipeline.features.gpt2_bpe import is_installed; sys.exit(not is_installed())'; then
  echo "GPT-2 tokenizer already in $dest"
  exit 0
fi
sdist_dir="$(mktemp -d)"
trap 'rm -rf "$sdist_dir"' EXIT
spec="$("$py" -c 'from pipeline.features.gpt2_bpe import WHISPER_SDIST; print(WHISPER_SDIST)')"
# --no-binary/--no-build-isolation: fetch the sdist only; it is never built or installed.
"$py" -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation "$spec" -d "$sdist_dir"
"$py" - "$sdist_dir" "$dest" <<'PY'
import sys
from pathlib import Path
from pipeline.features.gpt2_bpe import install_from_sdist
[sdist] = sorted(Path(sys.argv[1]).glob("openai_whisper-*.tar.gz"))
print(f"GPT-2 tokenizer ready in {install_from_sdist(sdist, sys.argv[2])}")
PY
