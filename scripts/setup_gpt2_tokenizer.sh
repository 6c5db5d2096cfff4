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
# One Python process does it all: importing the library costs seconds, so do it once.
"$py" - <<'PY'
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.features.gpt2_bpe import WHISPER_SDIST, install_from_sdist, installed_dir, is_installed

dest = installed_dir()
if is_installed():
    print(f"GPT-2 tokenizer already in {dest}")
    sys.exit(0)
with tempfile.TemporaryDirectory() as sdist_dir:
    # --no-binary/--no-build-isolation: fetch the sdist only; it is never built or installed.
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                    ":all:", "--no-build-isolation", WHISPER_SDIST, "-d", sdist_dir], check=True)
    [sdist] = sorted(Path(sdist_dir).glob("openai_whisper-*.tar.gz"))
    print(f"GPT-2 tokenizer ready in {install_from_sdist(sdist, dest)}")
PY
