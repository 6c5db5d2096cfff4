"""Stage `frequencies@<period>`: one period's smoothed log frequency of every LM token."""

from __future__ import annotations

from pipeline.infra.interface import Output, StageInterface
from pipeline.infra.shared_options import ABSTRACTS, TOKENIZER, period

INTERFACE = StageInterface("frequencies", (
    period("count"),
    ABSTRACTS,
    TOKENIZER,
    Output("--out", "output Parquet for this period"),
))
