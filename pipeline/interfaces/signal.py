"""Stage `signal`: how much lower the test period's unigram perplexity is under recent counts
than under the pooled training counts (the yardstick of a model's temporal gain)."""

from __future__ import annotations

from pipeline.infra.interface import Output, Params, StageInterface, Value
from pipeline.infra.shared_options import ABSTRACTS, TOKENIZER
from pipeline.infra.schema.params import ReportConfig, SignalConfig, default

INTERFACE = StageInterface("signal", (
    ABSTRACTS,
    TOKENIZER,
    Value("--test", "the test period, a label (split.test)", param="split.test"),
    Value("--train-periods", "first and last training period (split.train_first, "
          "split.train_last): their counts summed are the pooled distribution; every period "
          "from the first to the one before the test period is read",
          many=2, metavar=("FIRST", "LAST"), param=("split.train_first", "split.train_last")),
    Value("--max-length", "the models' context length (train.max_length): the second scope "
          "scores each abstract's first max_length - 1 tokens, those such a model predicts",
          type=int, param="train.max_length"),
    Value("--cluster-by", "the corpus column that groups the test abstracts, resampled "
          "together by the claims (report.cluster_by; none: every abstract independent)",
          param="report.cluster_by", default=default(ReportConfig, "cluster_by")),
    Params(SignalConfig, "signal", "the permuted-dates check (params signal.*)"),
    Output("--json", "table and verdict records (reports/signal.json)", dvc={"cache": False}),
    Output("--out", "Markdown report (reports/signal.md)", dvc={"cache": False}),
))
