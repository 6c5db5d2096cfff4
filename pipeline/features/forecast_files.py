"""The ``forecasts`` history feature: one period's forecast log frequency of every LM token.

File ``<label>.parquet`` (``data/features/forecasts/``, beside the frequency folder:
:func:`pipeline.features.history.forecasts_dir`) in the frequency files' format
(:mod:`pipeline.features.frequencies`), so :func:`pipeline.features.frequencies.read_period`
and the history loader read it as they read a frequency file:

* ``log_freq``: the forecaster's log-probability of the token in period ``<label>``, made from
  the frequency files of the periods before it only (stage ``forecast_features``);
* ``count``: the token's count summed over those periods, ``n_tokens`` their sum (what the
  forecast was fitted on; a token counted in none has the same forecast as every such token);
* metadata ``period``, ``vocab_size``, ``tokenizer_sha256`` as in a frequency file, plus
  ``forecaster`` (its registry name), ``setting`` (JSON: the setting of its grid it used) and
  ``fitted_on`` (the periods, comma-separated).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.infra.identity import TOKENIZER_KEY
from pipeline.infra.io import write_parquet


def write_forecast(path: str | os.PathLike[str], period: str, log_prob: np.ndarray,
                   counts: np.ndarray, *, forecaster: str, setting: Mapping[str, Any],
                   fitted_on: Sequence[str], tokenizer_id: str | None = None) -> None:
    """Write ``period``'s forecast ``log_prob`` float ``[|V|]`` (module doc), atomically."""
    log_prob = np.asarray(log_prob, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    if log_prob.shape != counts.shape or log_prob.ndim != 1 or not np.isfinite(log_prob).all():
        raise ValueError(f"the forecast of {period} must be finite and one value per token, got "
                         f"{log_prob.shape} values for {counts.shape} counts")
    table = pd.DataFrame({"token_id": np.arange(counts.shape[0], dtype=np.int32),
                          "count": counts, "log_freq": log_prob})
    metadata = {"period": str(period), "n_tokens": str(int(counts.sum())),
                "vocab_size": str(int(counts.shape[0])), "forecaster": forecaster,
                "setting": json.dumps(dict(setting), sort_keys=True),
                "fitted_on": ",".join(map(str, fitted_on))}
    if tokenizer_id is not None:
        metadata[TOKENIZER_KEY] = tokenizer_id
    write_parquet(table, path, metadata=metadata)
