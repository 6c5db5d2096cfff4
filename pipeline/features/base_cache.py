"""A frozen base LM's final hidden states, computed once per abstract and reused.

When the LM is frozen — ``train.base: shared`` (each seed's trained Baseline, kept fixed under the
temporal variants) or ``train.base: frozen`` (a pretrained LM never trained) — its final hidden
states ``H`` (the input of ``lm_head``) are the same numbers in every run that uses it, so they are
computed here once per abstract and stored. Training (:mod:`pipeline.training.cached`) then only
runs ``lm_head(H)`` + the bias + the NLL; with a frozen base, scoring and the forecast's reference
passes read them too, through a :class:`HiddenMemo` (:meth:`pipeline.models.future_lm.FutureLM.use_hidden_memo`).
For a pretrained base that skips the whole transformer body, which is most of the cost.

Layout of a cache folder::

    identity.json            what the states were computed from (:class:`CacheIdentity`) + storage
    <period>.safetensors     hidden [Σ T_j, d] (fp32, or bf16 with storage="bf16"),
                             ids [Σ T_j] int32, offsets [n + 1] int64: abstract j is rows
                             offsets[j]:offsets[j+1]

The token ids are the training/scoring encoding (``eos + abstract + eos`` cut at the context
length, :func:`pipeline.models.encoding.encode_for_model`), stored with the states so targets
need nothing else. The states are computed in scoring's batches (longest first, the order of
:func:`pipeline.models.encoding.longest_first`, restated in :func:`longest_first_by_length` because
``features`` sits below ``models`` in the import layers), so cached scores equal uncached ones.
The identity (:func:`lm_identity`) hashes the loaded LM's weights (so a new base, revision or
fine-tune changes it, whatever file format they came from), the tokenizer folder's files and the
context length; :func:`load_cache` refuses a cache whose identity differs. The folder is
published atomically.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from pipeline.corpus.periods import in_time_order
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, read_json, write_json
from pipeline.infra.precision import compute_precision

FORMAT_VERSION = 1
IDENTITY_NAME = "identity.json"
Storage = Literal["fp32", "bf16"]
_DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class CacheIdentity:
    """What the cached states depend on: sha256 digests of the LM files and of the tokenizer
    folder's files, the LM revision (``None`` for a local/scratch LM) and the context length."""

    lm: str
    tokenizer: str
    context_length: int
    revision: str | None = None
    # A trunk cache (train.base: adapted) holds the states entering block ``layer`` (not the final
    # ones), and ``lm`` digests only the weights they depend on (the embeddings and the blocks
    # below): ``None`` for a cache of final states.
    layer: int | None = None

    def record(self) -> dict[str, object]:
        """The fields as stored; ``layer`` only when set (final-state caches keep their bytes)."""
        data = asdict(self)
        if self.layer is None:
            del data["layer"]
        return data


@dataclass(frozen=True)
class PeriodHidden:
    """One period's cached states: abstract ``j`` is rows ``offsets[j]:offsets[j+1]`` of
    ``hidden`` (fp32 in memory whatever the storage) and ``ids``."""

    period: str
    hidden: Tensor
    ids: Tensor
    offsets: Tensor

    def __len__(self) -> int:
        return int(self.offsets.numel()) - 1

    def lengths(self) -> list[int]:
        return (self.offsets[1:] - self.offsets[:-1]).tolist()

    def sequences(self) -> list[list[int]]:
        """The token ids of every abstract (the encoding the states were computed from)."""
        return [self.ids[a:b].tolist() for a, b in zip(self.offsets[:-1].tolist(),
                                                         self.offsets[1:].tolist())]

    def to(self, device: torch.device | str) -> PeriodHidden:
        """A copy on ``device`` (e.g. the whole cache on the GPU, when it fits)."""
        return PeriodHidden(self.period, self.hidden.to(device), self.ids.to(device),
                            self.offsets.to(device))

    def batch(self, index: Sequence[int], device: torch.device | str) -> tuple[Tensor, Tensor, Tensor]:
        """``hidden [B, T, d]`` (zeros on padding), ``input_ids [B, T]`` and ``attention_mask``
        of abstracts ``index``, right-padded as :func:`pipeline.models.nll.collate` pads."""
        starts, stops = self.offsets[:-1], self.offsets[1:]
        spans = [(int(starts[i]), int(stops[i])) for i in index]
        width = max(b - a for a, b in spans)
        hidden = self.hidden.new_zeros((len(spans), width, self.hidden.shape[1]))
        for row, (a, b) in enumerate(spans):
            hidden[row, :b - a] = self.hidden[a:b]
        ids, mask = _pad([self.ids[a:b] for a, b in spans])
        return hidden.to(device), ids.to(device), mask.to(device)


def longest_first_by_length(lengths: Sequence[int]) -> list[int]:
    """Indices of abstracts of these lengths, longest first, ties in input order (a stable sort):
    :func:`pipeline.models.encoding.longest_first`'s order, the one every cached batch follows."""
    return sorted(range(len(lengths)), key=lambda i: -lengths[i])


def scoring_order(sequences: Sequence[Sequence[int]]) -> list[int]:
    """Longest first, ties in input order: :func:`pipeline.models.encoding.longest_first`."""
    return longest_first_by_length([len(s) for s in sequences])


def _pad(seqs: Sequence[Sequence[int] | Tensor]) -> tuple[Tensor, Tensor]:
    """Right-padded ids (pad 0) and attention mask, as :func:`pipeline.models.nll.collate`."""
    width = max(len(s) for s in seqs)
    ids = torch.zeros((len(seqs), width), dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, :len(seq)] = torch.as_tensor(seq, dtype=torch.long)
        mask[row, :len(seq)] = 1
    return ids, mask


def digest_files(paths: Iterable[str | Path]) -> str:
    """sha256 over the names (relative to each given path) and bytes of ``paths``' files; a
    folder contributes every file under it, in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        if not path.exists():
            raise UserError("a file the base cache's identity depends on is missing", path=path,
                            fix="pass the base LM's weights/config files and the tokenizer folder")
        files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
        for f in files:
            digest.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\0")
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def lm_digest(lm: torch.nn.Module, weights: Mapping[str, Tensor] | None = None) -> str:
    """sha256 over the names, dtypes, shapes and bytes of ``lm``'s state (its weights as loaded,
    whatever file or format they came from: a model folder, a hub checkpoint, a GGUF), or of
    ``weights``, a part of it (a trunk's: :func:`pipeline.models.blocks.trunk_weights`)."""
    digest = hashlib.sha256()
    for name, tensor in sorted((lm.state_dict() if weights is None else weights).items()):
        t = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode() + b"\0")
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def lm_identity(lm: torch.nn.Module, tokenizer_dir: str | Path, context_length: int, *,
                layer: int | None = None,
                weights: Mapping[str, Tensor] | None = None) -> CacheIdentity:
    """The identity of states of the loaded LM ``lm`` (:func:`lm_digest`: a new base, revision
    or fine-tune changes it) over ``tokenizer_dir``'s encoding cut at ``context_length``; a
    trunk cache's: the states entering block ``layer``, which depend on ``weights`` only."""
    return CacheIdentity(lm_digest(lm, weights), digest_files([tokenizer_dir]),
                         int(context_length), layer=layer)


def cache_identity(lm_files: Iterable[str | Path], tokenizer_dir: str | Path, context_length: int,
                   revision: str | None = None) -> CacheIdentity:
    """The identity of states of the LM in ``lm_files`` (weights + config files, or its folder)
    over ``tokenizer_dir``'s encoding cut at ``context_length`` tokens."""
    return CacheIdentity(digest_files(lm_files), digest_files([tokenizer_dir]), int(context_length),
                         revision)


StatesFn = Callable[[Tensor, Tensor], Tensor]
"""``(input_ids, attention_mask) -> [B, T, d]``: the states a cache stores of one padded batch."""
FromStatesFn = Callable[[Tensor, Tensor], Tensor]
"""``(cached_states, attention_mask) -> [B, T, d]``: new states from a cache's (right-padded)."""


def _fill(lengths: Sequence[int], width: int, batch_size: int,
          compute: Callable[[list[int]], Tensor], desc: str) -> tuple[Tensor, Tensor]:
    """``hidden [Σ T_j, d]`` and ``offsets`` of ``compute(index)`` (``[B, T, d]`` states of the
    sequences ``index``) run in scoring's batches, longest first, padding dropped."""
    offsets = torch.tensor([0, *lengths]).cumsum(0)
    hidden = torch.empty((int(offsets[-1]), width))
    order = longest_first_by_length(lengths)
    for start in tqdm(range(0, len(order), batch_size), desc=desc, unit="batch", leave=False):
        idx = order[start:start + batch_size]
        out = compute(idx).float().cpu()
        for row, i in enumerate(idx):
            hidden[offsets[i]:offsets[i + 1]] = out[row, :lengths[i]]
    return hidden, offsets


@torch.no_grad()
def final_hidden(lm: PreTrainedModel, sequences: Sequence[Sequence[int]], batch_size: int,
                 device: torch.device | str, precision: str = "fp32", *,
                 period: str = "", states: StatesFn | None = None) -> PeriodHidden:
    """The final hidden states (``lm.base_model(...).last_hidden_state``, the input of
    ``lm_head``) of every sequence, in eval mode, batched longest first as scoring batches;
    ``states``: what to store instead (a trunk's, :func:`pipeline.models.blocks.trunk_states`)."""
    if not sequences:
        raise ValueError("no sequences to cache")
    was_training = lm.training
    lm.eval()

    def compute(idx: list[int]) -> Tensor:
        ids, mask = _pad([sequences[i] for i in idx])
        ids, mask = ids.to(device), mask.to(device)
        if states is not None:
            return states(ids, mask)
        return lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state

    try:
        with compute_precision(device, precision):
            hidden, offsets = _fill([len(s) for s in sequences],
                                    lm.get_output_embeddings().weight.shape[1], batch_size,
                                    compute, f"base cache {period}")
    finally:
        lm.train(was_training)
    ids = torch.tensor([t for s in sequences for t in s], dtype=torch.int32)
    return PeriodHidden(period, hidden, ids, offsets)


@torch.no_grad()
def hidden_from(part: PeriodHidden, states: FromStatesFn, batch_size: int,
                device: torch.device | str, precision: str = "fp32") -> PeriodHidden:
    """New states of a cached period's abstracts computed from its states (the final states of
    an adapted LM from the trunk cache: :func:`pipeline.models.blocks.top_states`), in the
    batches the cache was built in (longest first, ``batch_size``), so they equal the states the
    whole LM computes in those batches."""
    def compute(idx: list[int]) -> Tensor:
        hidden, _, mask = part.batch(idx, device)
        return states(hidden, mask)

    with compute_precision(device, precision):
        hidden, offsets = _fill(part.lengths(), part.hidden.shape[1], batch_size, compute,
                                f"states from cache {part.period}")
    return PeriodHidden(part.period, hidden, part.ids, offsets)


def build_cache(lm: PreTrainedModel, sequences: Mapping[str, Sequence[Sequence[int]]],
                directory: str | Path, identity: CacheIdentity, *, batch_size: int = 16,
                device: torch.device | str = "cpu", precision: str = "fp32",
                storage: Storage = "fp32", states: StatesFn | None = None) -> None:
    """Compute and write the cache of ``sequences`` (``{period: token ids}``) to ``directory``
    (replaced atomically). ``batch_size``: use the scoring/eval batch size, so cached scores
    match uncached ones bit for bit; ``storage="bf16"`` halves the files; ``states``: see
    :func:`final_hidden`."""
    too_long = [p for p, seqs in sequences.items() if any(len(s) > identity.context_length for s in seqs)]
    if too_long:
        raise ValueError(f"periods {too_long} hold sequences longer than the context length "
                         f"{identity.context_length}: encode with encode_for_model")
    write_cache((final_hidden(lm, sequences[p], batch_size, device, precision, period=p,
                              states=states) for p in in_time_order(sequences)),
                directory, identity, storage)


def write_cache(parts: Iterable[PeriodHidden], directory: str | Path, identity: CacheIdentity,
                storage: Storage = "fp32") -> list[str]:
    """Write the periods ``parts`` (computed as they are consumed, one in memory at a time) as
    the cache folder ``directory`` (replaced atomically); returns the periods written."""
    if storage not in _DTYPES:
        raise ValueError(f"storage must be one of {sorted(_DTYPES)}, got {storage!r}")
    meta = {"identity": json.dumps(identity.record(), sort_keys=True), "storage": storage,
            "format_version": str(FORMAT_VERSION)}
    periods: list[str] = []
    with atomic_path(directory) as tmp:
        tmp.mkdir()
        for part in parts:
            save_file({"hidden": part.hidden.to(_DTYPES[storage]).contiguous(), "ids": part.ids,
                       "offsets": part.offsets}, str(tmp / f"{part.period}.safetensors"),
                      metadata={**meta, "period": part.period})
            periods.append(part.period)
        write_json({"format_version": FORMAT_VERSION, "storage": storage, "periods": periods,
                    **identity.record()}, tmp / IDENTITY_NAME)
    return periods


def load_cache(directory: str | Path, expected: CacheIdentity,
               periods: Iterable[str] | None = None) -> dict[str, PeriodHidden]:
    """The cached states of ``periods`` (default: all), in time order, as fp32; a cache computed
    from another LM, revision, tokenizer or context length is a :class:`UserError`."""
    directory = Path(directory)
    fix = "rebuild the base cache (pipeline.features.base_cache.build_cache) for this base LM"
    path = directory / IDENTITY_NAME
    if not path.exists():
        raise UserError("no base-LM hidden-state cache here", path=directory, fix=fix)
    stored = read_json(path)
    if stored.get("format_version") != FORMAT_VERSION:
        raise UserError(f"the base cache has format {stored.get('format_version')!r}, this futurelm "
                        f"reads {FORMAT_VERSION}", path=path, fix=fix)
    changed = [k for k, v in asdict(expected).items() if stored.get(k) != v]
    if changed:
        raise UserError(f"the base cache is stale: its {', '.join(changed)} differ from the "
                        "current base LM / tokenizer / context length", path=path, fix=fix)
    out: dict[str, PeriodHidden] = {}
    for period in in_time_order(periods if periods is not None else stored["periods"]):
        shard = directory / f"{period}.safetensors"
        if not shard.exists():
            raise UserError(f"the base cache has no period {period}", path=shard, fix=fix)
        t = load_file(str(shard))
        out[period] = PeriodHidden(period, t["hidden"].float(), t["ids"], t["offsets"])
    return out


class HiddenMemo:
    """Cached final hidden states looked up by an abstract's token ids, for the passes that run
    the frozen LM over whole abstracts (PPL/CPL scoring, the forecast's reference passes): a
    :class:`pipeline.models.future_lm.FutureLM` with a memo (``FutureLM.hidden_memo``) takes a
    batch's states from it when every row is cached and runs only ``lm_head`` + the bias.

    A row is keyed by its ids up to its padding (right padding, as
    :func:`pipeline.models.nll.collate` pads); a batch with any uncached row, left padding or
    an incremental decoding step (generation) is a miss and runs the LM. ``hits``/``misses``
    count batches, so a stage can say how much it read from the cache.
    """

    def __init__(self, parts: Mapping[str, PeriodHidden]) -> None:
        self._rows: dict[tuple[int, ...], Tensor] = {}
        for part in parts.values():
            starts, stops = part.offsets[:-1].tolist(), part.offsets[1:].tolist()
            for a, b in zip(starts, stops):
                self._rows[tuple(part.ids[a:b].tolist())] = part.hidden[a:b]
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)

    def lookup(self, input_ids: Tensor, attention_mask: Tensor | None) -> Tensor | None:
        """``hidden [B, T, d]`` (zeros on padding) of a right-padded batch, or ``None``."""
        lengths = ([input_ids.shape[1]] * input_ids.shape[0] if attention_mask is None
                   else attention_mask.sum(1).tolist())
        rows = []
        for row, n in enumerate(lengths):
            if attention_mask is not None and not bool(attention_mask[row, :n].all()):
                rows = None   # left padding or holes: not a layout the cache was built in
                break
            found = self._rows.get(tuple(input_ids[row, :n].tolist()))
            if found is None:
                rows = None
                break
            rows.append(found)
        if rows is None:
            self.misses += 1
            return None
        self.hits += 1
        first = rows[0]
        hidden = first.new_zeros((len(rows), input_ids.shape[1], first.shape[1]))
        for row, states in enumerate(rows):
            hidden[row, :states.shape[0]] = states
        return hidden.to(input_ids.device)
