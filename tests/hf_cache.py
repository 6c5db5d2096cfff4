"""Build a real Hugging Face hub cache on disk (the layout huggingface_hub reads), for tests.

Tests never reach the hub; a model "in the cache" is a tiny random-init model saved with
save_pretrained and laid out as ``models--org--name/{refs/main, snapshots/<commit>/}``, exactly
what ``snapshot_download(..., local_files_only=True)`` resolves.
"""

from __future__ import annotations

import shutil
from pathlib import Path

COMMIT = "0" * 40


def put_in_hf_cache(cache: Path, repo_id: str, folder: Path) -> Path:
    """Copy the files of ``folder`` into ``cache`` as the snapshot of ``repo_id``; return it."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    shutil.copytree(folder, snapshot, dirs_exist_ok=True)
    return snapshot


def tiny_gpt2(folder: Path, vocab_size: int = 50257) -> Path:
    """A 1-layer, 8-wide random GPT-2 with GPT-2's vocabulary size (~1.6 MB of weights)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=vocab_size, n_layer=1, n_head=2, n_embd=8, n_positions=32)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def tiny_gpt2_in_hf_cache(cache: Path, repo_id: str = "gpt2") -> Path:
    """``cache`` holding a tiny GPT-2 (config + weights, no tokenizer) under ``repo_id``."""
    put_in_hf_cache(cache, repo_id, tiny_gpt2(cache.parent / f"{repo_id.replace('/', '--')}-src"))
    return cache
