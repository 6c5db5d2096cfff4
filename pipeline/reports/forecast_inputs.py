"""What the forecast report reads: every model's forecast folder, the observed counts per period,
and the periods' documents tokenized as the frequencies stage counts them."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from transformers import PreTrainedTokenizerBase

from pipeline.corpus.by_period import missing_feature_fix
from pipeline.corpus.by_period import read_period as corpus_period
from pipeline.corpus.periods import in_time_order
from pipeline.features.frequencies import PeriodFrequencies, read_period
from pipeline.forecast.documents import PeriodDocuments, tokenize_documents
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_json, read_parquet
from pipeline.infra.runs import run_name


@dataclass(frozen=True)
class ModelForecast:
    variant: str
    seed: int
    info: dict
    vocab: dict[str, pd.DataFrame]
    generations: pd.DataFrame

    def delta(self, period: str) -> np.ndarray:
        frame = self.vocab[period]
        return (frame["log_prob"] - frame["log_prob_prev"]).to_numpy()


def load_forecasts(folder: str | os.PathLike[str], variants: Sequence[str],
                   seeds: Sequence[int]) -> dict[tuple[str, int], ModelForecast]:
    out = {}
    for v in variants:
        for s in seeds:
            run = run_name(v, s)
            path = Path(folder) / run
            if not (path / "forecast.json").exists():
                raise UserError(f"the forecast of {v} seed {s} is missing", path=path,
                                fix=f"run `dvc repro forecast-{run}`")
            info = read_json(path / "forecast.json")
            if "periods" not in info:
                raise UserError("forecast.json predates periods (no `periods`)", path=path,
                                fix=f"re-run `dvc repro forecast-{run}`")
            periods = in_time_order(info["periods"])
            out[(v, s)] = ModelForecast(
                v, s, info, {p: read_parquet(path / f"vocab_{p}.parquet") for p in periods},
                read_parquet(path / f"generations_{info['forecast_period']}.parquet"))
    return out


def read_frequencies(folder: str | os.PathLike[str], periods: Sequence[str],
                     purpose: str) -> dict[str, PeriodFrequencies]:
    """The frequency files of ``periods`` (labels), in time order; a missing one is a UserError
    naming it and ``purpose``."""
    out = {}
    for p in in_time_order(periods):
        path = Path(folder) / f"{p}.parquet"
        if not path.exists():
            raise UserError(f"{purpose} needs the observed counts of {p}", path=path,
                            fix=missing_feature_fix(f"frequencies@{p}"))
        out[p] = read_period(path)
    return out


def read_documents(corpus: str | os.PathLike[str], tok: PreTrainedTokenizerBase,
                   periods: Sequence[str], freqs: Mapping[str, PeriodFrequencies]
                   ) -> dict[str, PeriodDocuments]:
    """Every abstract of ``periods``, tokenized as the frequencies stage counts them; a period
    whose tokens do not add up to its frequency file (another corpus or tokenizer) is refused."""
    out = {}
    for p in in_time_order(periods):
        frame = corpus_period(corpus, p, ["key", "abstract"], purpose="score the backtests")
        docs = tokenize_documents(tok, p, frame["key"].tolist(), frame["abstract"].tolist())
        if p in freqs and not np.array_equal(docs.counts(), freqs[p].counts):
            raise UserError(f"the abstracts of {p} do not add up to its frequency file",
                            path=corpus, fix=missing_feature_fix(f"frequencies@{p}"))
        out[p] = docs
    return out
