"""A target year's temporal history: the features of years ``i-m .. i-1`` as dense tensors.

The future LM for year ``i`` reads, for every LM token ``w``, its log frequency (eq. 6) and/or its
pooled contextual embedding (eq. 7-8) in each of the ``m`` previous years, oldest first.
:func:`load_history` reads them from the feature stages' per-year files;
:func:`dense_history` turns the embeddings stage's compact per-year tables (seen tokens only) into
the dense ``[|V|, m, d]`` tensor the LSTMs consume, with the documented rule for unseen tokens.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from pipeline import embeddings as embeddings_io
from pipeline import frequencies as frequencies_io

HISTORY_KINDS = frozenset({"frequencies", "embeddings"})


@dataclass(frozen=True)
class YearHistory:
    """History of target year ``year``: ``years`` = (year-m, …, year-1), oldest first.

    ``log_freq`` float32 ``[|V|, m]``; ``emb`` float32 ``[|V|, m, d]`` and ``emb_seen`` bool
    ``[|V|, m]`` (token observed in that very year) when embeddings were loaded, else ``None``.
    ``observed`` bool ``[|V|]`` (optional): the token occurs in at least one of the years. All
    other tokens have identical features (the smoothed log frequency of a zero count, zero
    vectors), so the bias modules run their LSTM once for all of them — exact, and a large saving
    with a 50k-token vocabulary of which a year's abstracts use a fraction.
    """

    year: int
    years: tuple[int, ...]
    log_freq: Tensor
    emb: Tensor | None = field(default=None)
    emb_seen: Tensor | None = field(default=None)
    observed: Tensor | None = field(default=None)

    @property
    def window(self) -> int:
        return len(self.years)

    @property
    def vocab_size(self) -> int:
        return int(self.log_freq.shape[0])

    def to(self, device: torch.device | str) -> YearHistory:
        """A copy with every tensor on ``device``."""
        return replace(
            self,
            log_freq=self.log_freq.to(device),
            emb=None if self.emb is None else self.emb.to(device),
            emb_seen=None if self.emb_seen is None else self.emb_seen.to(device),
            observed=None if self.observed is None else self.observed.to(device),
        )


def dense_history(years: Sequence[embeddings_io.YearEmbeddings]) -> tuple[Tensor, Tensor]:
    """Dense contextual features ``X`` float32 ``[|V|, m, d]`` and ``seen`` bool ``[|V|, m]``.

    ``years`` are consecutive years, oldest first. ``seen[w, j]`` says token ``w`` occurred in
    year ``j``. Unseen-token rule (docs/design.md): a token not seen in year ``j`` takes its
    vector from the latest earlier year of ``years`` in which it was seen; if there is none, its
    vector is zeros. Never the encoder's static input embeddings — those live in another space.
    """
    if not years:
        raise ValueError("dense_history needs at least one year of embeddings")
    vocab, dim = years[0].vocab_size, years[0].dim
    for ye in years:
        if (ye.vocab_size, ye.dim) != (vocab, dim):
            raise ValueError(f"embeddings of year {ye.year} have vocab_size={ye.vocab_size}, "
                             f"dim={ye.dim} but year {years[0].year} has {vocab}, {dim}: "
                             "recompute the embeddings stage for all years with one tokenizer")
    X = torch.zeros(vocab, len(years), dim, dtype=torch.float32)
    seen = torch.zeros(vocab, len(years), dtype=torch.bool)
    for j, ye in enumerate(years):
        ids = torch.as_tensor(ye.token_ids, dtype=torch.long)
        X[ids, j] = torch.as_tensor(ye.vectors).to(torch.float32)
        seen[ids, j] = True
        if j > 0:  # carry forward: year j-1 already holds the latest vector up to j-1 (or zeros)
            missing = ~seen[:, j]
            X[missing, j] = X[missing, j - 1]
    return X, seen


def _require(path: Path, year: int, stage: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: the history of a year needs the {stage} of year {year}. "
            f"Make sure {year} is listed under `years:` in params.yaml and run "
            f"`dvc repro {stage}@{year}`")
    return path


def history_years(year: int, window: int) -> tuple[int, ...]:
    """The years whose features make the history of ``year``: ``year-window .. year-1``, oldest first.

    The one definition of the window: ``load_history`` reads these years, and the stage graph
    (``stages/graph.py``) makes each stage depend on exactly their feature files.
    """
    return tuple(range(year - window, year))


def load_history(year: int, window: int, frequencies_dir: str | Path,
                 embeddings_dir: str | Path | None,
                 kinds: Collection[str] = ("frequencies",)) -> YearHistory:
    """The history of ``year`` from years ``year-window .. year-1`` (oldest first).

    Log frequencies are always loaded (they are small); contextual embeddings only when
    ``"embeddings" in kinds``. Files: ``<frequencies_dir>/<y>.parquet``,
    ``<embeddings_dir>/<y>.safetensors``.
    """
    unknown = set(kinds) - HISTORY_KINDS
    if unknown:
        raise ValueError(f"unknown history kinds {sorted(unknown)}; expected {sorted(HISTORY_KINDS)}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    years = history_years(year, window)
    freqs = [frequencies_io.read_year(_require(Path(frequencies_dir) / f"{y}.parquet", y,
                                               "frequencies")) for y in years]
    for y, f in zip(years, freqs):
        if f.year != y:
            raise ValueError(f"{frequencies_dir}/{y}.parquet holds year {f.year}, not {y}: "
                             "re-run `dvc repro frequencies`")
    sizes = {len(f.log_freq) for f in freqs}
    if len(sizes) != 1:
        raise ValueError(f"frequency files of years {years} disagree on the vocabulary size "
                         f"({sorted(sizes)}): recompute them with one tokenizer")
    log_freq = torch.as_tensor(np.stack([f.log_freq for f in freqs], axis=1), dtype=torch.float32)
    observed = torch.as_tensor(np.stack([f.counts for f in freqs], axis=1) > 0).any(dim=1)
    emb = seen = None
    if "embeddings" in kinds:
        if embeddings_dir is None:
            raise ValueError("embeddings history requested but no embeddings_dir given")
        per_year = [embeddings_io.read_year(_require(Path(embeddings_dir) / f"{y}.safetensors", y,
                                                     "embeddings")) for y in years]
        emb, seen = dense_history(per_year)
        if emb.shape[0] != log_freq.shape[0]:
            raise ValueError(f"embeddings have |V|={emb.shape[0]} but frequencies |V|="
                             f"{log_freq.shape[0]}: both must come from data/tokenizer")
        observed |= seen.any(dim=1)
    return YearHistory(year=year, years=years, log_freq=log_freq, emb=emb, emb_seen=seen,
                       observed=observed)
