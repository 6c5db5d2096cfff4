"""A target period's temporal history: the features of periods ``i-m .. i-1`` as dense tensors.

The future LM for period ``i`` reads, for every LM token ``w``, its log frequency (eq. 6) and/or
its pooled contextual embedding (eq. 7-8) in each of the ``m`` previous periods, oldest first.
Periods are labels (``"2020"``, ``"2020H2"``, :mod:`pipeline.corpus.periods`); the window counts
periods of the label's kind (:func:`pipeline.features.windows.history_periods`).
:func:`load_history` reads them from the feature stages' per-period files ``<label>.parquet`` /
``<label>.safetensors``; :func:`dense_history` turns the embeddings stage's compact per-period
tables (seen tokens only) into the dense ``[|V|, m, d]`` tensor the LSTMs consume, with the
documented rule for unseen tokens. With ``static_periods`` it gives a time-free control's
history instead (:mod:`pipeline.features.static_history`): the same for every target period.
With ``reference_periods`` the history also carries the *reference level* a relative variant
reads its window against: each word's log frequency pooled over the LM's training periods.

The ``forecasts`` kind is a forecaster's predicted log frequency of the target period itself,
made from earlier periods only (stage ``forecast_features``,
:mod:`pipeline.features.forecast_files`). Its files ``<label>.parquet`` sit beside the frequency
folder (``<frequencies_dir>/../forecasts``, :func:`forecasts_dir`) in the frequency files' format,
so no caller passes another folder.
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
from pipeline.features.kinds import FORECASTS, kind
from pipeline.features.static_history import (pooled_counts, pooled_embeddings, pooled_log_freq,
                                              repeated)
from pipeline.infra.errors import UserError
from pipeline.features.windows import history_periods
from pipeline.infra.identity import repro_stage, tokenizer_identity



@dataclass(frozen=True)
class PeriodHistory:
    """History of target period ``period`` (a label): ``periods`` = (period-m, …, period-1), their
    labels, oldest first.

    ``log_freq`` float32 ``[|V|, m]``; ``emb`` float32 ``[|V|, m, d]`` and ``emb_seen`` bool
    ``[|V|, m]`` (token observed in that very period) when embeddings were loaded, else ``None``.
    ``observed`` bool ``[|V|]`` (optional): the token occurs in at least one of the periods. All
    other tokens have identical features (the smoothed log frequency of a zero count, zero
    vectors), so the bias modules run their LSTM once for all of them — exact, and a large saving
    with a 50k-token vocabulary of which a period's abstracts use a fraction.

    ``forecast`` float32 ``[|V|]`` (when forecasts were loaded): the forecaster's predicted log
    frequency of ``period`` itself, fitted on earlier periods only; a time-free control's is the
    mean of its pooling periods' forecasts, the same for every period.

    ``pooled`` (a time-free control's history, :mod:`pipeline.features.static_history`): the
    periods whose features were pooled into every window position; then the features do not
    depend on ``period`` and ``periods`` only names the window. Empty for a windowed history.

    ``reference`` float32 ``[|V|]`` (when loaded with ``reference_periods``): each word's log
    frequency pooled over the LM's training periods (``reference_periods``, the same estimate as
    a time-free control's pooled history, :func:`pipeline.features.static_history.pooled_log_freq`):
    the level a base LM trained on those periods already holds, against which a relative variant
    (:attr:`pipeline.variants._spec.VariantSpec.relative`) reads the window. The same for every
    period. ``reference_periods``: those periods, empty without a reference.
    """

    period: str
    periods: tuple[str, ...]
    log_freq: Tensor
    emb: Tensor | None = field(default=None)
    emb_seen: Tensor | None = field(default=None)
    observed: Tensor | None = field(default=None)
    forecast: Tensor | None = field(default=None)
    pooled: tuple[str, ...] = ()
    reference: Tensor | None = field(default=None)
    reference_periods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.reference is not None and tuple(self.reference.shape) != (self.vocab_size,):
            raise ValueError(f"the reference level has shape {tuple(self.reference.shape)}, the "
                             f"history |V| = {self.vocab_size}: both must come from one tokenizer")

    @property
    def window(self) -> int:
        return len(self.periods)

    @property
    def vocab_size(self) -> int:
        return int(self.log_freq.shape[0])

    def to(self, device: torch.device | str) -> PeriodHistory:
        """A copy with every tensor on ``device``."""
        return replace(
            self,
            log_freq=self.log_freq.to(device),
            emb=None if self.emb is None else self.emb.to(device),
            emb_seen=None if self.emb_seen is None else self.emb_seen.to(device),
            observed=None if self.observed is None else self.observed.to(device),
            forecast=None if self.forecast is None else self.forecast.to(device),
            reference=None if self.reference is None else self.reference.to(device),
        )


def dense_history(periods: Sequence[embeddings_io.PeriodEmbeddings]) -> tuple[Tensor, Tensor]:
    """Dense contextual features ``X`` float32 ``[|V|, m, d]`` and ``seen`` bool ``[|V|, m]``.

    ``periods`` are consecutive periods, oldest first. ``seen[w, j]`` says token ``w`` occurred
    in period ``j``. Unseen-token rule (docs/formats.md): a token not seen in period ``j`` takes
    its vector from the latest earlier period of ``periods`` in which it was seen; if there is
    none, its vector is zeros. Never the encoder's static input embeddings — another space.
    """
    if not periods:
        raise ValueError("dense_history needs at least one period of embeddings")
    vocab, dim = periods[0].vocab_size, periods[0].dim
    for ye in periods:
        if (ye.vocab_size, ye.dim) != (vocab, dim):
            raise ValueError(f"embeddings of {ye.period} have vocab_size={ye.vocab_size}, "
                             f"dim={ye.dim} but {periods[0].period} has {vocab}, {dim}: "
                             "recompute the embeddings stage for all periods with one tokenizer")
    X = torch.zeros(vocab, len(periods), dim, dtype=torch.float32)
    seen = torch.zeros(vocab, len(periods), dtype=torch.bool)
    for j, ye in enumerate(periods):
        ids = torch.as_tensor(ye.token_ids, dtype=torch.long)
        X[ids, j] = torch.as_tensor(ye.vectors).to(torch.float32)
        seen[ids, j] = True
        if j > 0:  # carry forward: period j-1 already holds the latest vector up to j-1 (or zeros)
            missing = ~seen[:, j]
            X[missing, j] = X[missing, j - 1]
    return X, seen


def load_history(period: str | int, window: int, frequencies_dir: str | Path,
                 embeddings_dir: str | Path | None,
                 kinds: Collection[str] = ("frequencies",), *,
                 tokenizer: str | os.PathLike[str] | None = None,
                 static_periods: Sequence[str | int] | None = None,
                 reference_periods: Sequence[str | int] | None = None) -> PeriodHistory:
    """The history of ``period`` (a label; an int is a year) from the periods ``period-window ..
    period-1`` of its kind, oldest first (``2020Q1``, window 2: ``2019Q3``, ``2019Q4``).

    Log frequencies are always loaded (they are small); contextual embeddings only when
    ``"embeddings" in kinds``, the forecast of ``period`` only when ``"forecasts" in kinds``.
    Files: ``<frequencies_dir>/<label>.parquet``, ``<embeddings_dir>/<label>.safetensors``,
    ``<frequencies_dir>/../forecasts/<label>.parquet`` (:func:`forecasts_dir`).

    ``static_periods`` (a time-free control's pooling periods, its training periods): read those
    periods' files instead and put their pooled features in all ``window`` positions
    (:mod:`pipeline.features.static_history`), the same history for every ``period``; its
    forecast is the mean of those periods' forecasts.

    ``reference_periods`` (a relative variant's, its training periods): also read those periods'
    frequency files and give their pooled log frequency as ``reference``
    (:attr:`PeriodHistory.reference`); a control whose pooling periods they are reads them once.

    ``tokenizer`` is the LM tokenizer folder in use (``data/tokenizer``): every file must have been
    computed with it (:mod:`pipeline.infra.identity`), else it is refused with the ``dvc repro`` command
    that recomputes it. Without it, the files are still checked against each other: one tokenizer
    for every period and both kinds, and one corpus per period for both kinds. A missing period, a
    damaged file or a mismatch is a :class:`~pipeline.infra.errors.UserError`.
    """
    for name in kinds:
        kind(name)   # a ValueError naming the known kinds
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    period = str(period)
    periods = history_periods(period, window)
    pooled = () if static_periods is None else tuple(map(str, static_periods))
    if static_periods is not None and not pooled:
        raise ValueError("a static history needs at least one pooling period")
    freqs, per_period = _read_features(period, pooled or periods, frequencies_dir, embeddings_dir,
                                       kinds, tokenizer)
    emb = seen = None
    if pooled:
        log_freq = repeated(torch.as_tensor(pooled_log_freq(freqs), dtype=torch.float32), window)
        observed = torch.as_tensor(pooled_counts(freqs) > 0)
        if per_period:
            mean, seen_any = pooled_embeddings(per_period)
            emb, seen = repeated(mean, window), repeated(seen_any, window)
            observed |= seen_any
    else:
        log_freq = torch.as_tensor(np.stack([f.log_freq for f in freqs], axis=1),
                                   dtype=torch.float32)
        observed = torch.as_tensor(np.stack([f.counts for f in freqs], axis=1) > 0).any(dim=1)
        if per_period:
            emb, seen = dense_history(per_period)
            observed |= seen.any(dim=1)
    forecast = None
    if FORECASTS.name in kinds:
        forecast = _read_forecast(period, pooled or (period,), frequencies_dir, tokenizer,
                                  freqs[0])
    references = () if reference_periods is None else tuple(map(str, reference_periods))
    if reference_periods is not None and not references:
        raise ValueError("a reference level needs at least one training period")
    reference = None
    if references:
        reference = _reference_level(period, references, frequencies_dir, tokenizer,
                                     freqs if references == pooled else None, freqs[0])
    return PeriodHistory(period=period, periods=periods, log_freq=log_freq, emb=emb, emb_seen=seen,
                         observed=observed, forecast=forecast, pooled=pooled, reference=reference,
                         reference_periods=references)


def _reference_level(period: str, references: Sequence[str], frequencies_dir: str | Path,
                     tokenizer: str | os.PathLike[str] | None,
                     read: Sequence[frequencies_io.PeriodFrequencies] | None,
                     first: frequencies_io.PeriodFrequencies) -> Tensor:
    """float32 ``[|V|]``: the pooled log frequency of the ``references`` periods (``read``:
    their files, when the history read them already), checked against the history's first
    frequency file."""
    if read is None:
        read, _ = _read_features(period, references, frequencies_dir, None, ("frequencies",),
                                 tokenizer)
    other = read[0]
    if (other.vocab_size, other.tokenizer_id) != (first.vocab_size, first.tokenizer_id):
        paths = [Path(frequencies_dir) / f"{p}.parquet" for p in (first.period, other.period)]
        raise UserError(f"the frequencies of the training period {other.period} (the reference "
                        f"level) and of {first.period} (the history of {period}) disagree on the "
                        "tokenizer or |V|", path=paths[1],
                        fix="recompute them with one tokenizer: "
                            + _repro_all([(p, None) for p in paths]))
    return torch.as_tensor(pooled_log_freq(read), dtype=torch.float32)


def forecasts_dir(frequencies_dir: str | Path) -> Path:
    """The folder of the ``forecasts`` feature files: ``forecasts`` beside the frequency folder."""
    return Path(frequencies_dir).parent / FORECASTS.name


def _read_forecast(period: str, targets: Sequence[str], frequencies_dir: str | Path,
                   tokenizer: str | os.PathLike[str] | None,
                   first: frequencies_io.PeriodFrequencies) -> Tensor:
    """float32 ``[|V|]``: the mean over ``targets`` (``period``, or a control's pooling periods)
    of each one's forecast log frequency, checked against the history's first frequency file."""
    expected = None if tokenizer is None else tokenizer_identity(tokenizer)
    rows = []
    for target in targets:
        path = _require(forecasts_dir(frequencies_dir) / f"{target}.parquet", period,
                        "forecast_features")
        try:
            f = frequencies_io.read_period(path, expected)
        except UserError as err:   # it names the frequencies stage: this file is another's
            raise UserError(err.what, path=path,
                            fix=f"recompute it: `dvc repro forecast_features@{target}`") from None
        if f.period != target:
            raise UserError(f"the file holds the forecast of {f.period}, not {target}", path=path,
                            fix=f"recompute it: `dvc repro forecast_features@{target}`")
        if f.vocab_size != first.vocab_size or f.tokenizer_id != first.tokenizer_id:
            raise UserError(f"the forecast of {target} and the frequencies of {first.period} "
                            "disagree on the tokenizer or |V|", path=path,
                            fix=f"recompute it: `dvc repro forecast_features@{target}`")
        rows.append(f.log_freq)
    return torch.as_tensor(np.mean(rows, axis=0), dtype=torch.float32)



def _read_features(period: str, periods: Sequence[str], frequencies_dir: str | Path,
                   embeddings_dir: str | Path | None, kinds: Collection[str],
                   tokenizer: str | os.PathLike[str] | None
                   ) -> tuple[list[frequencies_io.PeriodFrequencies],
                              list[embeddings_io.PeriodEmbeddings]]:
    """The frequency (and, with ``"embeddings" in kinds``, embedding) files of ``periods`` that
    ``period``'s history is made of, each checked (:func:`load_history`)."""
    expected = None if tokenizer is None else tokenizer_identity(tokenizer)
    freq_paths = [Path(frequencies_dir) / f"{p}.parquet" for p in periods]
    freqs = [frequencies_io.read_period(_require(p, period, "frequencies"), expected)
             for p in freq_paths]
    for path, p, f in zip(freq_paths, periods, freqs):
        if f.period != p:
            raise UserError(f"the file holds the frequencies of {f.period}, not {p}", path=path,
                            fix=f"recompute it: `dvc repro frequencies@{p}`")
    files: list[tuple[Path, frequencies_io.PeriodFrequencies | embeddings_io.PeriodEmbeddings]]
    files = list(zip(freq_paths, freqs))
    per_period: list[embeddings_io.PeriodEmbeddings] = []
    if "embeddings" in kinds:
        if embeddings_dir is None:
            raise ValueError("embeddings history requested but no embeddings_dir given")
        emb_paths = [Path(embeddings_dir) / f"{p}.safetensors" for p in periods]
        per_period = [embeddings_io.read_period(_require(p, period, "embeddings"), expected)
                      for p in emb_paths]
        files += list(zip(emb_paths, per_period))
        _check_corpora(periods, freq_paths, freqs, emb_paths, per_period)
    _check_one_tokenizer(files)
    if len({f.vocab_size for _, f in files}) != 1:
        sizes = ", ".join(f"{p.name}: {f.vocab_size}" for p, f in files)
        raise UserError(f"the history files of {period} disagree on the vocabulary size |V| ({sizes})",
                        path=frequencies_dir,
                        fix="recompute them with one tokenizer: " + _repro_all(files))
    return freqs, per_period


def _require(path: Path, target: str, stage: str) -> Path:
    """A missing history period names the period, the target that needs it and the command."""
    if not path.exists():
        p = path.stem
        raise UserError(f"the {stage} of {p} are missing: the history of {target} needs them",
                        path=path, fix=f"run `dvc repro {stage}@{p}` (no such stage: the stage "
                                       f"graph is older than params.yaml, run `make graph` first)")
    return path


def _repro_all(files: Sequence[tuple[Path, object]]) -> str:
    return "`dvc repro " + " ".join(repro_stage(_stage_of(p), p) for p, _ in files) + "`"


def _stage_of(path: Path) -> str:
    return "frequencies" if path.suffix == ".parquet" else "embeddings"


def _check_one_tokenizer(files: Sequence[tuple[Path, frequencies_io.PeriodFrequencies
                                               | embeddings_io.PeriodEmbeddings]]) -> None:
    """Every history file must record the same tokenizer (or, for old files, none at all)."""
    first_path, first = files[0]
    for path, f in files:
        if f.tokenizer_id != first.tokenizer_id:
            raise UserError(f"history files were computed with different tokenizers: {first_path} "
                            f"(sha256 {first.tokenizer_id or 'not recorded'}) and {path} "
                            f"(sha256 {f.tokenizer_id or 'not recorded'})", path=path,
                            fix="recompute them with the current tokenizer: " + _repro_all(files))


def _check_corpora(periods: Sequence[str], freq_paths: Sequence[Path],
                   freqs: Sequence[frequencies_io.PeriodFrequencies], emb_paths: Sequence[Path],
                   embs: Sequence[embeddings_io.PeriodEmbeddings]) -> None:
    """A period's frequencies and embeddings must come from the same abstracts."""
    for y, fp, f, ep, e in zip(periods, freq_paths, freqs, emb_paths, embs):
        if f.corpus_id and e.corpus_id and f.corpus_id != e.corpus_id:
            raise UserError(f"the frequencies and embeddings of {y} were computed from different "
                            f"abstracts ({fp} and {ep})", path=ep,
                            fix=f"recompute both: `dvc repro frequencies@{y} embeddings@{y}`")
