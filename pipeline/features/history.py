"""A target year's temporal history: the features of years ``i-m .. i-1`` as dense tensors.

The future LM for year ``i`` reads, for every LM token ``w``, its log frequency (eq. 6) and/or its
pooled contextual embedding (eq. 7-8) in each of the ``m`` previous years, oldest first.
:func:`load_history` reads them from the feature stages' per-year files;
:func:`dense_history` turns the embeddings stage's compact per-year tables (seen tokens only) into
the dense ``[|V|, m, d]`` tensor the LSTMs consume, with the documented rule for unseen tokens.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from pipeline.features import embeddings as embeddings_io
from pipeline.features import frequencies as frequencies_io
from pipeline.infra.errors import UserError
from pipeline.features.windows import history_years
from pipeline.infra.identity import repro_stage, tokenizer_identity

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


def load_history(year: int, window: int, frequencies_dir: str | Path,
                 embeddings_dir: str | Path | None,
                 kinds: Collection[str] = ("frequencies",), *,
                 tokenizer: str | os.PathLike[str] | None = None) -> YearHistory:
    """The history of ``year`` from years ``year-window .. year-1`` (oldest first).

    Log frequencies are always loaded (they are small); contextual embeddings only when
    ``"embeddings" in kinds``. Files: ``<frequencies_dir>/<y>.parquet``,
    ``<embeddings_dir>/<y>.safetensors``.

    ``tokenizer`` is the LM tokenizer folder in use (``data/tokenizer``): every file must have been
    computed with it (:mod:`pipeline.infra.identity`), else it is refused with the ``dvc repro`` command
    that recomputes it. Without it, the files are still checked against each other: one tokenizer
    for every year and both kinds, and one corpus per year for both kinds. A missing year, a
    damaged file or a mismatch is a :class:`~pipeline.infra.errors.UserError`.
    """
    unknown = set(kinds) - HISTORY_KINDS
    if unknown:
        raise ValueError(f"unknown history kinds {sorted(unknown)}; expected {sorted(HISTORY_KINDS)}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    years = history_years(year, window)
    expected = None if tokenizer is None else tokenizer_identity(tokenizer)
    freq_paths = [Path(frequencies_dir) / f"{y}.parquet" for y in years]
    freqs = [frequencies_io.read_year(_require(p, year, "frequencies"), expected) for p in freq_paths]
    for path, y, f in zip(freq_paths, years, freqs):
        if f.year != y:
            raise UserError(f"the file holds the frequencies of {f.year}, not {y}", path=path,
                            fix=f"recompute it: `dvc repro frequencies@{y}`")
    files: list[tuple[Path, frequencies_io.YearFrequencies | embeddings_io.YearEmbeddings]]
    files = list(zip(freq_paths, freqs))
    per_year: list[embeddings_io.YearEmbeddings] = []
    if "embeddings" in kinds:
        if embeddings_dir is None:
            raise ValueError("embeddings history requested but no embeddings_dir given")
        emb_paths = [Path(embeddings_dir) / f"{y}.safetensors" for y in years]
        per_year = [embeddings_io.read_year(_require(p, year, "embeddings"), expected)
                    for p in emb_paths]
        files += list(zip(emb_paths, per_year))
        _check_corpora(years, freq_paths, freqs, emb_paths, per_year)
    _check_one_tokenizer(files)
    if len({f.vocab_size for _, f in files}) != 1:
        sizes = ", ".join(f"{p.name}: {f.vocab_size}" for p, f in files)
        raise UserError(f"the history files of {year} disagree on the vocabulary size |V| ({sizes})",
                        path=frequencies_dir,
                        fix="recompute them with one tokenizer: " + _repro_all(files))
    log_freq = torch.as_tensor(np.stack([f.log_freq for f in freqs], axis=1), dtype=torch.float32)
    observed = torch.as_tensor(np.stack([f.counts for f in freqs], axis=1) > 0).any(dim=1)
    emb = seen = None
    if per_year:
        emb, seen = dense_history(per_year)
        observed |= seen.any(dim=1)
    return YearHistory(year=year, years=years, log_freq=log_freq, emb=emb, emb_seen=seen,
                       observed=observed)


def _require(path: Path, target: int, stage: str) -> Path:
    """A missing history year names the year, the target that needs it and the command."""
    if not path.exists():
        y = path.stem
        raise UserError(f"the {stage} of year {y} are missing: the history of {target} needs them",
                        path=path, fix=f"run `dvc repro {stage}@{y}` (no such stage: the stage "
                                       f"graph is older than params.yaml, run `make graph` first)")
    return path


def _repro_all(files: Sequence[tuple[Path, object]]) -> str:
    return "`dvc repro " + " ".join(repro_stage(_stage_of(p), p) for p, _ in files) + "`"


def _stage_of(path: Path) -> str:
    return "frequencies" if path.suffix == ".parquet" else "embeddings"


def _check_one_tokenizer(files: Sequence[tuple[Path, frequencies_io.YearFrequencies
                                               | embeddings_io.YearEmbeddings]]) -> None:
    """Every history file must record the same tokenizer (or, for old files, none at all)."""
    first_path, first = files[0]
    for path, f in files:
        if f.tokenizer_id != first.tokenizer_id:
            raise UserError(f"history files were computed with different tokenizers: {first_path} "
                            f"(sha256 {first.tokenizer_id or 'not recorded'}) and {path} "
                            f"(sha256 {f.tokenizer_id or 'not recorded'})", path=path,
                            fix="recompute them with the current tokenizer: " + _repro_all(files))


def _check_corpora(years: Sequence[int], freq_paths: Sequence[Path],
                   freqs: Sequence[frequencies_io.YearFrequencies], emb_paths: Sequence[Path],
                   embs: Sequence[embeddings_io.YearEmbeddings]) -> None:
    """A year's frequencies and embeddings must come from the same abstracts."""
    for y, fp, f, ep, e in zip(years, freq_paths, freqs, emb_paths, embs):
        if f.corpus_id and e.corpus_id and f.corpus_id != e.corpus_id:
            raise UserError(f"the frequencies and embeddings of {y} were computed from different "
                            f"abstracts ({fp} and {ep})", path=ep,
                            fix=f"recompute both: `dvc repro frequencies@{y} embeddings@{y}`")
