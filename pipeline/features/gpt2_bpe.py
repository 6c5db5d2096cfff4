"""GPT-2's tokenizer (the ``r50k_base`` BPE), rebuilt byte for byte at install time.

GPT-2's own files are on the Hugging Face hub, which our machines cannot reach; the same BPE ships
as ``whisper/assets/gpt2.tiktoken`` inside the ``openai-whisper`` sdist on PyPI (MIT licence).
``make install`` runs ``scripts/setup_gpt2_tokenizer.sh``, which downloads that sdist with pip,
checks its sha256 and calls :func:`build_tokenizer_folder`; the folder lands in
:func:`installed_dir` (``<venv>/share/futurelm/gpt2-tokenizer``) with the licence beside it.
Library code only *reads* that folder: nothing is downloaded at run time.

Every GPT-2 size (``gpt2``, ``gpt2-medium``, ..., ``distilgpt2``) shares this tokenizer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import tarfile
from pathlib import Path

from pipeline.infra.io import atomic_path
from pipeline.features.tokenizer import END_OF_TEXT

# The one sdist the installer fetches, pinned by hash (scripts/setup_gpt2_tokenizer.sh reads these).
WHISPER_SDIST = "openai-whisper==20250625"
WHISPER_SDIST_SHA256 = "37a91a3921809d9f44748ffc73c0a55c9f366c85a3ef5c2ae0cc09540432eb96"
TIKTOKEN_ASSET = "whisper/assets/gpt2.tiktoken"
VOCAB_SIZE = 50257  # 50,256 BPE tokens + <|endoftext|>


def installed_dir() -> Path:
    """Where ``make install`` puts the tokenizer: ``$FUTURELM_GPT2_TOKENIZER`` or
    ``<sys.prefix>/share/futurelm/gpt2-tokenizer`` (inside the venv, so never in git)."""
    override = os.environ.get("FUTURELM_GPT2_TOKENIZER")
    return Path(override) if override else Path(sys.prefix) / "share" / "futurelm" / "gpt2-tokenizer"


def is_installed(folder: Path | None = None) -> bool:
    folder = installed_dir() if folder is None else folder
    return all((folder / name).is_file() for name in ("tokenizer.json", "vocab.json", "merges.txt"))


def read_tiktoken(data: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file: one ``base64(token) rank`` pair per line."""
    return {base64.b64decode(tok): int(rank)
            for tok, rank in (line.split() for line in data.splitlines() if line)}


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (vocab.json spells tokens with it)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def _bpe_parts(ranks: dict[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
    """Apply the merges ranked below ``max_rank`` to ``token``'s bytes (tiktoken's algorithm)."""
    parts = [bytes([b]) for b in token]
    while len(parts) > 1:
        best = min(range(len(parts) - 1), key=lambda i: ranks.get(parts[i] + parts[i + 1], max_rank))
        if ranks.get(parts[best] + parts[best + 1], max_rank) >= max_rank:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return parts


def tiktoken_to_vocab_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2 ``vocab.json`` and ``merges.txt`` content from tiktoken ranks (merge i makes token 256+i)."""
    enc = _bytes_to_unicode()

    def spell(token: bytes) -> str:
        return "".join(enc[x] for x in token)

    vocab = {spell(tok): rank for tok, rank in ranks.items()}
    merges: list[tuple[str, str]] = []
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(tok) == 1:
            continue
        parts = _bpe_parts(ranks, tok, rank)
        if len(parts) != 2:
            raise ValueError(f"tiktoken token {tok!r} (rank {rank}) is not a merge of two tokens")
        merges.append((spell(parts[0]), spell(parts[1])))
    vocab[END_OF_TEXT] = len(ranks)
    return vocab, merges


def build_tokenizer_folder(tiktoken: bytes, out: str | os.PathLike[str],
                           notices: dict[str, str] | None = None) -> Path:
    """Write a Hugging Face GPT-2 tokenizer folder (tokenizer.json, vocab.json, merges.txt, ...)
    rebuilt from the bytes of ``gpt2.tiktoken``, plus ``notices`` (file name -> text, e.g. the
    licence); atomically, so a killed install leaves nothing."""
    from transformers import GPT2Tokenizer

    vocab, merges = tiktoken_to_vocab_merges(read_tiktoken(tiktoken))
    # transformers 5: GPT2TokenizerFast(vocab_file=...) silently yields a 1-token tokenizer;
    # the in-memory vocab/merges constructor is the reliable one.
    tok = GPT2Tokenizer(vocab=vocab, merges=merges, unk_token=END_OF_TEXT, bos_token=END_OF_TEXT,
                        eos_token=END_OF_TEXT, add_prefix_space=False, model_max_length=1024)
    if len(tok) != VOCAB_SIZE:
        raise ValueError(f"rebuilt GPT-2 tokenizer has {len(tok)} tokens, expected {VOCAB_SIZE}")
    out = Path(out)
    with atomic_path(out) as tmp:
        tok.save_pretrained(tmp)
        (tmp / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
        (tmp / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
        for name, text in (notices or {}).items():
            (tmp / name).write_text(text)
    return out


def install_from_sdist(sdist: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Build the tokenizer folder ``out`` from the pinned openai-whisper sdist (install step).

    Checks the sdist's sha256 against :data:`WHISPER_SDIST_SHA256`, then writes the tokenizer
    with whisper's MIT licence (``LICENSE-openai-whisper``) and a ``PROVENANCE`` note beside it.
    """
    sdist = Path(sdist)
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != WHISPER_SDIST_SHA256:
        raise ValueError(f"{sdist} has sha256 {digest}, expected {WHISPER_SDIST_SHA256} "
                         f"({WHISPER_SDIST}); delete it and run the install step again")
    with tarfile.open(sdist) as tar:
        def member(suffix: str) -> bytes:
            found = next((m for m in tar.getmembers() if m.name.endswith(suffix)), None)
            if found is None or (handle := tar.extractfile(found)) is None:
                raise ValueError(f"{sdist} has no {suffix}")
            return handle.read()

        tiktoken, licence = member(TIKTOKEN_ASSET), member("/LICENSE").decode()
    provenance = (f"GPT-2 tokenizer (r50k_base) rebuilt by futurelm (pipeline/features/gpt2_bpe.py) from "
                  f"{TIKTOKEN_ASSET} in the PyPI sdist {sdist.name} ({WHISPER_SDIST}, sha256 "
                  f"{digest}). Licence of that file: LICENSE-openai-whisper (MIT).\n")
    return build_tokenizer_folder(tiktoken, out, {"LICENSE-openai-whisper": licence,
                                                  "PROVENANCE": provenance})
