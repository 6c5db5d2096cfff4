"""The files stages hand to each other: one name per path, so a producer's ``outs`` and its
consumers' ``deps`` cannot drift apart (DVC would then silently drop the edge between them)."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.features.kinds import KINDS, kind
from pipeline.infra.runs import run_name
from pipeline.interfaces import gold_words
from pipeline.models.registry import BASELINE

# Written by the `graph` stage when dvc.yaml is current; every other stage is downstream of it.
STAMP = "data/graph-checked"

RAW = "data/raw/corpus"   # the copy of data.source, bytes unchanged (any accepted format)
PAPERS = "data/corpus/papers.parquet"
ABSTRACTS = "data/corpus/abstracts.parquet"
PERIOD_REJECTS = "data/corpus/period_rejects.parquet"   # documents without a period (split)
PERIOD_COUNTS = "plots/abstracts_per_period.csv"       # the paper's Figure 3
TRAIN = "data/splits/train.parquet"
DEV = "data/splits/dev.parquet"
TEST = "data/splits/test.parquet"
TOKENIZER = "data/tokenizer"
STOPWORDS = "data/reference/stopwords.txt"
# the dev and test abstracts' content words, for every score's CM (a stage that declares its paths)
GOLD_WORDS = gold_words.INTERFACE.paths["out"]
# DVC metrics are only the headline numbers (`dvc metrics show` fits a terminal); the rest of
# each stage's numbers is plain JSON in reports/ (DVC outputs, cache: false, not metrics).
CORPUS_METRICS = "metrics/corpus.json"         # papers, kept, dropped
CORPUS_COUNTS = "reports/corpus.json"          # by reason, language and year
DOWNLOAD_INFO = "reports/download.json"        # source, sha256, sizes
VARIANT_METRICS = "metrics/variants"           # <variant>.json: dev/test PPL, CPL, CM
RESULTS_DETAILS = "reports/results.json"       # means, stds, seeds, every period; verdicts
FORECAST_DETAILS = "reports/forecast.json"     # the backtests
LONGTAIL_METRICS = "metrics/longtail"          # <model>.json: test top-1/top-10 accuracy, types
LONGTAIL_DETAILS = "reports/longtail.json"     # every model, split and frequency bin
SEMANTIC_SCORES = "data/semantic_change/scores.parquet"  # word, method, score, rank, counts
SEMANTIC_METRICS = "metrics/semantic_change.json"       # the methods' agreement (+ truth rho)
SEMANTIC_BENCHMARK = "reports/semantic_benchmark.json"  # pseudo-words, scores, correlations
SIGNAL_DETAILS = "reports/signal.json"         # the unigram yardstick's table and verdicts
VERDICTS = "reports/verdicts.json"             # every report's verdict records (docs/verdicts.md)
# The report outputs that hold a "verdicts" list, collected into VERDICTS.
VERDICT_SOURCES = (RESULTS_DETAILS, FORECAST_DETAILS, SIGNAL_DETAILS, SEMANTIC_BENCHMARK)

# The frozen LMs' cached states (train.cache; pipeline/graph/regimes.py says which run reads which).
TRUNK_CACHE = "data/cache/trunk"      # the states entering the top blocks (train.base: adapted)
UNADAPTED_CACHE = "data/cache/base"   # the pretrained lm.base's final states, one for every seed

# One period's feature file of each kind (pipeline/features/kinds.py), ``{}`` its label.
FREQ, EMB, FORECAST = (KINDS[k].file("{}") for k in ("frequencies", "embeddings", "forecasts"))


def feature_files(kinds: Iterable[str], periods: Iterable[str]) -> list[str]:
    """The per-period feature files (named by label) of each kind (``frequencies``,
    ``embeddings``, ``forecasts``), kind outermost."""
    periods = list(periods)
    return [kind(k).file(p) for k in kinds for p in periods]


def model_dir(variant: str, seed: int) -> str:
    """The model folder of a run (its train stage's output)."""
    return f"data/models/{run_name(variant, seed)}"


def baseline_cache(seed: int) -> str:
    """The final states of a seed's trained (or adapted) Baseline, one cache per seed."""
    return f"data/cache/{run_name(BASELINE, seed)}"
